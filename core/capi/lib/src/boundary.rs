//! The boundary between C and Rust: every routine runs inside [`call`], so no panic unwinds
//! into C, a failure is logged once, and an unrecoverable one ends the process.

use std::panic::{AssertUnwindSafe, catch_unwind};

use shmem_core::{Error, Result};

/// Runs routine `name`'s body `f`. On an error it logs one line naming the call and the cause
/// and returns `fallback` (the routine's error value); an unrecoverable error (a dead peer, a
/// timeout, the job ending, a panic) ends the process with a non-zero status.
#[inline]
pub(crate) fn call<T>(name: &str, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => failed(name, fallback, e),
        Err(_) => fatal(name, "an internal error (a panic) occurred", 1),
    }
}

#[cold]
fn failed<T>(name: &str, fallback: T, e: Error) -> T {
    match e {
        Error::JobEnding { status, .. } => fatal(name, &e.to_string(), status),
        Error::PeerLost { .. } | Error::Timeout { .. } => fatal(name, &e.to_string(), 1),
        _ => {
            shmem_capi::log::init();
            tracing::error!("{name}: {e} (code {})", e.code() as i32);
            fallback
        }
    }
}

/// Ends the process: what OpenSHMEM programs expect of an unrecoverable failure.
#[cold]
pub(crate) fn fatal(name: &str, why: &str, status: i32) -> ! {
    eprintln!("shmem: {name}: {why}; ending this PE");
    std::process::exit(if status == 0 { 1 } else { status })
}
