//! Logging: every error the library reports is logged once, on one line, to standard error.
//!
//! The level comes from `SHMEM_LOG_LEVEL` (`DEBUG`, `INFO`, `WARN`, `ERROR`, `FATAL`, as in
//! CANN; default `WARN`, so warnings such as a duplicate instance creation are seen). A program
//! that installs its own `tracing` subscriber first keeps it; the library then logs through it.

use std::sync::Once;

use tracing_subscriber::EnvFilter;

static INIT: Once = Once::new();

/// Installs the library's subscriber unless the program already has one.
pub(crate) fn init() {
    INIT.call_once(|| {
        let level = match std::env::var("SHMEM_LOG_LEVEL")
            .unwrap_or_default()
            .trim()
            .to_ascii_uppercase()
            .as_str()
        {
            "DEBUG" => "debug",
            "INFO" => "info",
            "ERROR" | "FATAL" => "error",
            _ => "warn",
        };
        let filter = EnvFilter::new(format!(
            "shmem={level},shmem_sim={level},shmem_backend={level}"
        ));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_target(false)
            .without_time()
            .with_ansi(false)
            .try_init();
    });
}
