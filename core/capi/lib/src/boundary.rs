//! The boundary between C and Rust: every routine runs inside [`call`], so a failure is
//! logged once and an unrecoverable one ends the process, and no panic unwinds into C.
//!
//! **Panics.** A panic in this library is an internal error, which no C caller can handle: the
//! panic hook that [`call`] installs (for this library's copy of the Rust runtime only) prints
//! it and ends the PE with status 1 before any unwinding starts, so no panic ever reaches a C
//! frame. A hook rather than `catch_unwind` around each call keeps the success path of every
//! routine free of the unwinding machinery (a third of a one-element put's instructions).

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use shmem_core::{Error, Result};

/// Whether the panic hook is installed.
static HOOKED: AtomicBool = AtomicBool::new(false);

/// Runs routine `name`'s body `f`. On an error it logs one line naming the call and the cause
/// and returns `fallback` (the routine's error value); an unrecoverable error (a dead peer, a
/// timeout, the job ending) ends the process with a non-zero status, and so does a panic.
#[inline(always)]
pub(crate) fn call<T>(name: &str, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    enter();
    finish(name, fallback, f())
}

/// What [`call`] does before a routine's body (for hot routines whose body is written out,
/// not passed as a closure the compiler might not inline): makes sure the panic hook is in.
#[inline(always)]
pub(crate) fn enter() {
    if !HOOKED.load(Ordering::Relaxed) {
        hook_panics();
    }
}

/// What [`call`] does with a routine's result: the value, or `fallback` after logging the
/// failure (or ending the PE on an unrecoverable one).
#[inline(always)]
pub(crate) fn finish<T>(name: &str, fallback: T, r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => failed(name, fallback, e),
    }
}

/// Installs the hook that ends the PE on a panic, before unwinding begins.
#[cold]
#[inline(never)]
pub(crate) fn hook_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            shmem_sim::launcher::stderr_line(format_args!(
                "shmem: an internal error (a panic) occurred: {info}; ending this PE"
            ));
            // SAFETY: `_exit` ends the process at once; it runs no atexit handler that might
            // need a lock the panicking code holds.
            unsafe { libc::_exit(1) }
        }));
        HOOKED.store(true, Ordering::Relaxed);
    });
}

#[cold]
#[inline(never)]
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
    shmem_sim::launcher::stderr_line(format_args!("shmem: {name}: {why}; ending this PE"));
    // No finalize at exit: it could only fail on the lost peer or wait for the others.
    shmem_core::exit_without_finalize(if status == 0 { 1 } else { status })
}
