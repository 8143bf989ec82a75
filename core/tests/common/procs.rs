//! Processes by their environment, for tests that check that a job left none behind (shared by
//! the core's, the reliability and the C ABI's tests, which include this file).

/// Processes (not zombies, whose environment cannot be read) whose environment holds
/// `needle` (`KEY=VALUE`).
pub(crate) fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}
