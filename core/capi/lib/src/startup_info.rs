//! What OpenSHMEM's environment variables `SHMEM_VERSION` and `SHMEM_INFO` print at start-up:
//! the library's version, and a description of every environment variable the library reads
//! with its value in this job. PE 0 prints, once, on standard output.

use std::fmt::Write as _;

/// The environment variables the library reads: name, meaning, default.
const VARIABLES: &[(&str, &str, &str)] = &[
    (
        "SHMEM_VERSION",
        "print the library version at start-up",
        "unset",
    ),
    (
        "SHMEM_INFO",
        "print this description of the environment variables at start-up",
        "unset",
    ),
    (
        "SHMEM_SYMMETRIC_SIZE",
        "symmetric heap per PE in bytes (K, M, G suffixes; rounded up to 2 MiB; backed lazily)",
        "256M",
    ),
    (
        "SHMEM_DEBUG",
        "any value but 0: debugging messages (SHMEM_LOG_LEVEL=DEBUG)",
        "unset",
    ),
    (
        "SHMEM_LOG_LEVEL",
        "DEBUG, INFO, WARN, ERROR or FATAL: what the library logs on standard error",
        "WARN",
    ),
    (
        "SHMEM_TIMEOUT",
        "seconds a blocking wait may last before it fails; 0 or inf: no limit",
        "no limit",
    ),
    (
        "SHMEM_HANG_REPORT",
        "seconds after which a wait that goes on is reported as a suspected hang; 0: never",
        "30",
    ),
    (
        "SHMEM_PROFILE",
        "full, cann or openshmem: the API profile (capabilities and limits)",
        "openshmem for C programs",
    ),
    ("SHMEM_BACKEND", "sim (the simulator) or hw (Ascend)", "sim"),
    (
        "SHMEM_WAIT_POLICY",
        "adaptive, spin, yield or sleep: how a waiting PE spends its time",
        "adaptive",
    ),
    (
        "SHMEM_SIM_STRICT",
        "1: hold non-blocking operations until completion is required, to expose missing quiets",
        "off",
    ),
    (
        "SHMEM_SIM_STRICT_SEED",
        "the strict mode's random seed, to replay a run",
        "random",
    ),
];

/// The version line.
fn version() -> String {
    let (major, minor) = shmem_core::info_get_version();
    format!(
        "{}; specification version {major}.{minor}\n",
        shmem_core::info_get_name()
    )
}

/// The text `SHMEM_INFO` prints, with each variable's value taken from `value`.
fn info(value: impl Fn(&str) -> Option<String>) -> String {
    let mut s = version();
    s.push_str("Environment variables (value in this job, default):\n");
    for (name, meaning, default) in VARIABLES {
        let v = value(name).map_or_else(|| "unset".to_string(), |v| format!("{v:?}"));
        let _ = writeln!(s, "  {name:<22} {v} (default {default})\n      {meaning}");
    }
    s
}

/// What PE `pe` prints at start-up, given the environment `value`.
fn startup_text(pe: u32, value: impl Fn(&str) -> Option<String>) -> Option<String> {
    if pe != 0 {
        return None;
    }
    if value("SHMEM_INFO").is_some() {
        Some(info(value))
    } else if value("SHMEM_VERSION").is_some() {
        Some(version())
    } else {
        None
    }
}

/// Prints what `SHMEM_VERSION` and `SHMEM_INFO` ask for, if PE `pe` is the one to print.
pub(crate) fn print(pe: u32) {
    if let Some(text) = startup_text(pe, |name| std::env::var(name).ok()) {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn only_pe_0_prints_and_only_when_asked() {
        assert_eq!(startup_text(0, env(&[])), None);
        assert_eq!(startup_text(1, env(&[("SHMEM_INFO", "1")])), None);
        let v = startup_text(0, env(&[("SHMEM_VERSION", "")])).unwrap();
        assert!(v.starts_with(shmem_core::info_get_name()), "{v}");
        assert_eq!(v.lines().count(), 1, "{v}");
    }

    #[test]
    fn info_lists_every_variable_with_its_value() {
        let text = startup_text(
            0,
            env(&[("SHMEM_INFO", "y"), ("SHMEM_SYMMETRIC_SIZE", "64M")]),
        )
        .unwrap();
        for (name, _, _) in VARIABLES {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
        assert!(
            text.contains("SHMEM_SYMMETRIC_SIZE   \"64M\" (default 256M)"),
            "{text}"
        );
        assert!(text.contains("SHMEM_TIMEOUT          unset"), "{text}");
    }
}
