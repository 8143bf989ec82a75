//! Logging at the C boundary. A C caller gets only a code, so every failed call logs one line
//! here, at ERROR; warnings CANN's contract requires (a duplicate instance id) reach a person
//! even when no subscriber is installed.
//!
//! [`init`] installs a subscriber for programs that have none (C programs), at the level of
//! `SHMEM_LOG_LEVEL` (`DEBUG`, `INFO`, `WARN`, `ERROR`, `FATAL`, as in CANN; default `WARN`, or
//! `DEBUG` when OpenSHMEM's `SHMEM_DEBUG` is set to anything but `0`). A
//! program that installed its own `tracing` subscriber keeps it.

use std::fmt;
use std::sync::Once;

use tracing_subscriber::EnvFilter;

static INIT: Once = Once::new();

/// Installs the C ABI's subscriber unless the program already has one.
pub fn init() {
    INIT.call_once(|| {
        // OpenSHMEM's SHMEM_DEBUG (any value but 0) asks for debugging messages, unless
        // SHMEM_LOG_LEVEL says otherwise.
        let debug = std::env::var("SHMEM_DEBUG").is_ok_and(|v| v.trim() != "0");
        let level = match std::env::var("SHMEM_LOG_LEVEL")
            .ok()
            .or_else(|| debug.then(|| "DEBUG".to_string()))
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
            "shmem={level},shmem_capi={level},shmem_sim={level},shmem_backend={level}"
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

/// A warning that must reach a person: through the subscriber when one is installed, to
/// standard error otherwise.
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{args}");
    } else {
        eprintln!("shmem: WARN {args}");
    }
}
