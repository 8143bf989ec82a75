//! Signal names, and catching SIGINT/SIGTERM while a job runs so they can be forwarded.
//!
//! The handler does only async-signal-safe work: it stores the signal number in an atomic and
//! writes one byte to a non-blocking self-pipe, which wakes the supervision loop's `poll`.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use rustix::pipe::PipeFlags;

/// The conventional name of a Linux signal number.
pub(super) fn name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return None,
    })
}

/// The last signal caught (0: none since the last [`Forwarding::take`]).
static PENDING: AtomicI32 = AtomicI32::new(0);
/// The write end of the self-pipe, or -1.
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
/// Whether some job in this process holds the handlers.
static CLAIMED: AtomicBool = AtomicBool::new(false);

const CAUGHT: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

extern "C" fn on_signal(sig: libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `__errno_location` returns this thread's errno slot, always valid. `write` is
        // async-signal-safe; the pipe is non-blocking, so a full pipe only makes it fail (the
        // pending byte already wakes the loop). errno is saved and restored so the interrupted
        // code does not see it change.
        unsafe {
            let errno = libc::__errno_location();
            let saved = *errno;
            let byte = 1u8;
            let _ = libc::write(fd, (&raw const byte).cast(), 1);
            *errno = saved;
        }
    }
}

/// SIGINT/SIGTERM handlers installed for the duration of one job.
#[derive(Debug)]
pub(super) struct Forwarding {
    wake_r: OwnedFd,
    /// Kept open while the handler may write to it.
    _wake_w: OwnedFd,
    /// The dispositions replaced, to restore on drop (an ignored signal is left alone).
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl Forwarding {
    /// Installs the handlers. Returns `Ok(None)` if another job of this process holds them.
    pub(super) fn install() -> io::Result<Option<Self>> {
        if CLAIMED.swap(true, Ordering::SeqCst) {
            tracing::warn!("signals are already forwarded by another job of this process");
            return Ok(None);
        }
        let (wake_r, wake_w) =
            match rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK) {
                Ok(pair) => pair,
                Err(e) => {
                    CLAIMED.store(false, Ordering::SeqCst);
                    return Err(e.into());
                }
            };
        PENDING.store(0, Ordering::SeqCst);
        WAKE_FD.store(wake_w.as_raw_fd(), Ordering::SeqCst);
        let mut forwarding = Forwarding {
            wake_r,
            _wake_w: wake_w,
            previous: Vec::new(),
        };
        for sig in CAUGHT {
            // Dropping `forwarding` on error restores whatever was already replaced.
            if let Some(old) = replace_handler(sig)? {
                forwarding.previous.push((sig, old));
            }
        }
        Ok(Some(forwarding))
    }

    /// The descriptor that becomes readable when a signal arrives.
    pub(super) fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake_r.as_fd()
    }

    /// Empties the self-pipe and returns the signal caught since the last call, if any.
    pub(super) fn take(&self) -> Option<i32> {
        let mut buf = [0u8; 64];
        while let Ok(n) = rustix::io::read(&self.wake_r, &mut buf) {
            if n == 0 {
                break;
            }
        }
        match PENDING.swap(0, Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }
}

impl Drop for Forwarding {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: `old` is the disposition `sigaction` reported for `sig` when it was
            // replaced, so reinstalling it is valid.
            unsafe {
                libc::sigaction(sig, &old, std::ptr::null_mut());
            }
        }
        // The pipe itself is closed after this, when the fields are dropped.
        WAKE_FD.store(-1, Ordering::SeqCst);
        CLAIMED.store(false, Ordering::SeqCst);
    }
}

/// Installs [`on_signal`] for `sig` unless the signal is ignored. Returns the old disposition if
/// it was replaced.
fn replace_handler(sig: libc::c_int) -> io::Result<Option<libc::sigaction>> {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, `sigaction` only writes the current disposition into
    // `old`, which is valid for writes.
    if unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `sigaction` succeeded and filled `old`; all-zero is valid for the rest anyway.
    let old = unsafe { old.assume_init() };
    if old.sa_sigaction == libc::SIG_IGN {
        return Ok(None);
    }
    // SAFETY: an all-zero `sigaction` is a valid value of the C struct (no handler, no flags,
    // empty mask); the fields are then set below.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    new.sa_flags = libc::SA_RESTART;
    // SAFETY: `new.sa_mask` is a valid `sigset_t` to initialise.
    unsafe {
        libc::sigemptyset(&mut new.sa_mask);
    }
    let mut previous = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: `new` is fully initialised and names a handler that only does async-signal-safe
    // work; `previous` receives the previous disposition.
    if unsafe { libc::sigaction(sig, &new, previous.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded and filled `previous`.
    Ok(Some(unsafe { previous.assume_init() }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::name(9), Some("SIGKILL"));
        assert_eq!(super::name(15), Some("SIGTERM"));
        assert_eq!(super::name(0), None);
    }
}
