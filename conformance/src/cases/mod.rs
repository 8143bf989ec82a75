//! The cases, by area. Each module's `cases()` lists its own; [`all`] joins them.

use crate::{Case, Need};

pub mod amo;
pub mod bad_input;
pub mod coll;
pub mod ctx;
pub mod heap;
pub mod init;
pub mod isolation;
pub mod kernel;
pub mod lock;
pub mod model;
mod model_c_abi;
pub use model_c_abi::C_LIBRARY_VAR;
mod model_collectives;
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
        needing(amo::cases(), &[Need::HostAtomics]),
        signal::cases(),
        p2p::cases(),
        needing(lock::cases(), &[Need::HostAtomics]),
        team::cases(),
        threads::cases(),
        coll::cases(),
        needing(kernel::cases(), &[Need::SimulatedCores]),
        multi_instance::cases(),
        multi_instance::uid_cases(),
        isolation::cases(),
        // The model uses remote atomics and locks issued by the host.
        needing(model::cases(), &[Need::HostAtomics]),
        needing(model_c_abi::cases(), &[Need::HostAtomics, Need::CLibrary]),
        bad_input::cases(),
    ]
    .concat()
    .into_iter()
    .map(|c| match NEEDS.iter().find(|(name, _)| *name == c.name) {
        Some((_, needs)) => c.needs(needs),
        None => c,
    })
    .collect()
}

/// What single cases of areas that otherwise run everywhere need (whole areas are marked in
/// [`all`]); a test checks that every name here is a case.
const NEEDS: &[(&str, &[Need])] = &[
    (
        "ctx::cann_profile_keeps_contexts_and_streams",
        &[Need::ProgramStreams],
    ),
    (
        "ctx::nostore_context_keeps_every_operation",
        &[Need::HostAtomics],
    ),
    (
        "ctx::quiet_completes_only_its_own_context",
        &[Need::StrictReordering],
    ),
    (
        "ctx::team_context_numbers_pes_in_the_team",
        &[Need::HostAtomics],
    ),
    (
        "init::descriptor_limit_raised_only_as_needed",
        &[Need::SimulatorSegments],
    ),
    ("init::peer_death_ends_a_lock_wait", &[Need::HostAtomics]),
    (
        "order::missing_fence_before_a_p_flag",
        &[Need::StrictReordering],
    ),
    (
        "order::missing_fence_before_a_put_flag",
        &[Need::StrictReordering],
    ),
    (
        "order::missing_fence_before_a_signal_flag",
        &[Need::StrictReordering],
    ),
    (
        "order::missing_fence_before_an_amo_flag",
        &[Need::StrictReordering],
    ),
    (
        "order::strict_mode_catches_a_missing_quiet",
        &[Need::StrictReordering],
    ),
    ("p2p::released_by_atomics_and_signals", &[Need::HostAtomics]),
    (
        "p2p::released_by_atomics_and_signals_on_instance1",
        &[Need::HostAtomics],
    ),
    ("ptr::arithmetic_and_bounds", &[Need::HostMapping]),
    ("ptr::load_store_through_ptr", &[Need::HostMapping]),
    (
        "stream::put_shows_after_synchronise",
        &[Need::ProgramStreams],
    ),
    (
        "stream::waits_and_barriers_in_stream_order",
        &[Need::ProgramStreams],
    ),
    (
        "stream::local_side_segment_or_device",
        &[Need::ProgramStreams],
    ),
    (
        "stream::nbi_scope_returns_its_closing_quiet_failure",
        &[Need::ProgramStreams],
    ),
    ("team::shared_team_is_the_world", &[Need::HostMapping]),
    (
        "threads::splits_of_two_parents_in_opposite_orders",
        &[Need::HostMapping],
    ),
    (
        "isolation::amo_on_a_context_of_another_instance",
        &[Need::HostAtomics],
    ),
    (
        "isolation::amo_nbi_in_a_scope_of_another_instance",
        &[Need::HostAtomics],
    ),
    (
        "isolation::lock_on_a_context_of_another_instance",
        &[Need::HostAtomics],
    ),
    (
        "model::random_epochs_against_a_sequential_model",
        &[Need::HostAtomics],
    ),
    (
        "multi_instance::two_hundred_fifty_five_live_instances",
        &[Need::SimulatorSegments],
    ),
    (
        "multi_instance::unique_id_from_the_environment",
        &[Need::OwnSessionAddress],
    ),
];

/// `cases`, each needing `needs`.
fn needing(cases: Vec<Case>, needs: &'static [Need]) -> Vec<Case> {
    cases.into_iter().map(|c| c.needs(needs)).collect()
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

#[cfg(test)]
mod tests {
    #[test]
    fn every_case_named_in_the_needs_table_exists() {
        let all = super::all();
        for (name, _) in super::NEEDS {
            assert!(all.iter().any(|c| c.name == *name), "{name} is not a case");
        }
    }
}
