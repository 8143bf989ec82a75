//! What the benchmark programs and their tests share beyond measuring: free loopback ports for
//! the jobs they start, the release build the tests measure, and this process's own figures
//! from `/proc`.

use std::path::PathBuf;
use std::process::Command;

/// The first of `count` consecutive loopback ports that are free now.
pub fn free_ports(count: u16) -> u16 {
    loop {
        let first = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_or(0, |a| a.port());
        let all = (0..count).all(|i| {
            first
                .checked_add(i)
                .is_some_and(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        });
        if first > 1024 && all {
            return first;
        }
    }
}

/// Builds `packages` (cargo's `-p`/`--bin` arguments) with `cargo build --release` in this
/// workspace and returns `target/release` beside the running test (cargo does not hold the
/// build directory while tests run). Panics, naming cargo's message, if the build fails.
pub fn release_build(packages: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("tests run from target/<profile>/deps")
        .to_path_buf();
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release"])
        .args(packages)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the release build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("release")
}

/// The sum of the `name` fields (in KiB) of `/proc/self/<file>`: every line that starts with
/// `name` counts, so `proc_kib("smaps_rollup", "Private_")` adds the clean and dirty private
/// memory. 0 when the file cannot be read.
pub fn proc_kib(file: &str, name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/self/{file}"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}
