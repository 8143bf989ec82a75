//! The cases, by area. Each module's `cases()` lists its own; [`all`] joins them.

use crate::Case;

pub mod heap;
pub mod init;
pub mod multi_instance;
pub mod order;
pub mod ptr;
pub mod rma;
pub mod sync;

/// Every case of the suite.
pub fn all() -> Vec<Case> {
    [
        init::cases(),
        heap::cases(),
        ptr::cases(),
        rma::cases(),
        sync::cases(),
        order::cases(),
        multi_instance::cases(),
        multi_instance::uid_cases(),
    ]
    .concat()
}

/// Polls `probe` until it returns `Some`, yielding between polls, for at most `patience`.
pub(crate) fn poll<T>(
    patience: std::time::Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let end = std::time::Instant::now() + patience;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if std::time::Instant::now() >= end {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// Ends this process with SIGKILL, as a crash or the OOM killer would.
pub(crate) fn kill_self() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
