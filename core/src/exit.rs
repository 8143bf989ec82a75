//! What becomes of this process's live instances when it exits or forks.
//!
//! - **Exit.** When the process that created an instance exits with status 0 (`exit(0)`, or
//!   returning 0 from a C `main`) while the instance is still live, the instance is finalized
//!   first: legacy programs (`start_pes`) never call finalize, and a PE that leaves early must
//!   keep its memory reachable until every PE has arrived. The finalize is the ordinary
//!   collective one, so it is bounded by the instance's operation timeout, and the live
//!   instances are finalized in ascending id order (the same on every PE). A failure is
//!   reported on standard error in one line; the process still exits with its own status.
//! - **Exit with a non-zero status** is a failing PE (a check that failed, a Rust panic in
//!   `main`): it leaves without finalize, so that its peers see it gone at once rather than
//!   wait for it in a finalize it would never match.
//! - **Fork.** A forked child inherits the parent's instances as memory, not as PEs: its
//!   `exit()` and its dropping of handles never finalize them, say goodbye on the parent's
//!   bootstrap connection or shut down the parent's sockets.
//! - **`global_exit`** and [`exit_without_finalize`] (the C ABI's end of a PE after an
//!   unrecoverable failure) leave without finalizing.
//!
//! Dropping the last handle of a live instance (the Rust API's `Instance`) is not a finalize:
//! the PE leaves, and its peers see it as gone.

use std::ffi::{c_int, c_void};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::instance::Instance;

/// The `on_exit` registration, once per process image (a forked child inherits it).
static ARMED: Once = Once::new();

/// Set by [`exit_without_finalize`]: the process leaves without finalizing.
static LEAVING: AtomicBool = AtomicBool::new(false);

/// This process's id (not cached: a forked child must see its own).
pub(crate) fn pid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// Makes sure live instances are finalized when this process exits.
pub(crate) fn arm() {
    ARMED.call_once(|| {
        // SAFETY: `finalize_at_exit` has the handler signature `on_exit` expects, never unwinds
        // (it catches panics) and stays valid for the life of the process: this library is not
        // unloaded while it has live instances (the C ABI never frees its default instance),
        // and glibc runs or drops a library's exit handlers when it is unloaded.
        let rc = unsafe { on_exit(finalize_at_exit, std::ptr::null_mut()) };
        if rc != 0 {
            tracing::warn!("on_exit failed: live instances will not be finalized at exit");
        }
    });
}

/// Ends the process with `status` (flushing standard output, running the exit handlers) without
/// finalizing its live instances at exit: for a process that gives up after an unrecoverable
/// failure (a lost peer, a timeout), whose finalize could only fail or wait for peers. Its
/// peers see it as gone.
pub fn exit_without_finalize(status: i32) -> ! {
    LEAVING.store(true, Ordering::Release);
    std::process::exit(status)
}

#[cfg(target_env = "gnu")]
unsafe extern "C" {
    /// glibc's `on_exit`: like `atexit`, and the handler receives the exit status.
    fn on_exit(f: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// Without glibc there is no exit status to read: every exit finalizes (as with status 0).
///
/// # Safety
///
/// As for `atexit`: `f` stays callable for the life of the process.
#[cfg(not(target_env = "gnu"))]
unsafe fn on_exit(f: extern "C" fn(c_int, *mut c_void), _arg: *mut c_void) -> c_int {
    static HANDLER: std::sync::OnceLock<extern "C" fn(c_int, *mut c_void)> =
        std::sync::OnceLock::new();
    extern "C" fn call() {
        if let Some(f) = HANDLER.get() {
            f(0, std::ptr::null_mut());
        }
    }
    let _ = HANDLER.set(f);
    // SAFETY: `call` is a plain `extern "C" fn()` that stays valid for the process's life.
    unsafe { libc::atexit(call) }
}

extern "C" fn finalize_at_exit(status: c_int, _: *mut c_void) {
    if status != 0 || LEAVING.load(Ordering::Acquire) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let me = pid();
        for id in Instance::live_ids() {
            let Some(inst) = Instance::by_id(id) else {
                continue;
            };
            if inst.owner_pid() != me || !inst.is_initialized() {
                continue;
            }
            if let Err(e) = inst.finalize() {
                // Nobody receives this error: it is reported here.
                shmem_sim::launcher::stderr_line(format_args!(
                    "shmem: PE {} could not finalize instance {id} at exit: {e}",
                    inst.my_pe()
                ));
            }
        }
    });
}
