//! The cases, by area. Each module's `cases()` lists its own; [`all`] joins them.

use crate::Case;

pub mod amo;
pub mod coll;
pub mod ctx;
pub mod heap;
pub mod init;
pub mod isolation;
pub mod kernel;
pub mod lock;
pub mod model;
pub mod multi_instance;
pub mod order;
pub mod p2p;
pub mod ptr;
pub mod rma;
pub mod signal;
pub mod stream;
pub mod sync;
pub mod team;
pub mod threads;

/// Every case of the suite.
pub fn all() -> Vec<Case> {
    [
        init::cases(),
        heap::cases(),
        ptr::cases(),
        rma::cases(),
        sync::cases(),
        stream::cases(),
        order::cases(),
        ctx::cases(),
        amo::cases(),
        signal::cases(),
        p2p::cases(),
        lock::cases(),
        team::cases(),
        threads::cases(),
        coll::cases(),
        kernel::cases(),
        multi_instance::cases(),
        multi_instance::uid_cases(),
        isolation::cases(),
        model::cases(),
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

/// Runs `f` on instance 0 and then on instance 1 (all PEs, its own port from the trial's
/// range), so a case checks the default instance and a non-zero one.
pub(crate) fn on_both_instances(
    ctx: &crate::Ctx,
    f: impl Fn(&shmem::Instance) -> crate::Outcome,
) -> crate::Outcome {
    let world = ctx.world()?;
    f(&world).map_err(|e| crate::Failure(format!("on instance 0: {e}")))?;
    let members: Vec<u32> = (0..ctx.n_pes).collect();
    let one = shmem::Instance::init(
        &multi_instance::attrs_for(ctx, 1, &members).expect("every PE is a member"),
    )?;
    f(&one).map_err(|e| crate::Failure(format!("on instance 1: {e}")))?;
    one.finalize()?;
    world.finalize()?;
    Ok(())
}

/// What the PE's `tracing` subscriber received since the last [`logged`].
static LOGGED: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct Captured;

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOGGED.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs a `tracing` subscriber that keeps every event of this PE, for [`logged`]: how a
/// case checks what the library reported (and what it did not).
pub(crate) fn capture_log() -> crate::Outcome {
    tracing_subscriber::fmt()
        .with_writer(|| Captured)
        .with_ansi(false)
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .try_init()
        .map_err(|e| crate::Failure(format!("installing the capturing subscriber: {e}")))
}

/// The log lines captured since the last call.
pub(crate) fn logged() -> String {
    String::from_utf8_lossy(&std::mem::take(&mut *LOGGED.lock().unwrap())).into_owned()
}
