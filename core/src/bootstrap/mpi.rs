//! The MPI bootstrap: the PEs of an instance meet through an MPI communicator (CANN's
//! `aclshmem_bootstrap_mpi.so` plugin, `ACLSHMEMX_INIT_WITH_MPI`).
//!
//! [`MpiBootstrap::new`] takes a communicator (`None`: `MPI_COMM_WORLD`). As in CANN:
//! - if MPI is not initialised, the bootstrap initialises it (asking for
//!   `MPI_THREAD_MULTIPLE`), and then only `MPI_COMM_WORLD` or `MPI_COMM_SELF` may be given
//!   (no other communicator can exist yet); if MPI was finalised, it fails;
//! - it duplicates the communicator (`MPI_Comm_dup`), so every instance has its own
//!   communication context and never shares one with another instance or with the
//!   application;
//! - the communicator's rank and size must equal the PE and PE count the instance was given.
//!   Unlike CANN, this is checked collectively (one allgather of every rank's PE, PE count and
//!   instance id, as [`allgather_records`]), so that every rank fails with the same message
//!   naming the rank that disagreed, instead of the others waiting forever;
//! - barrier is `MPI_Barrier`; allgather allgathers the payload lengths, then does one
//!   `MPI_Allgather` of `MPI_BYTE`s with every payload padded to the longest; `global_exit` is
//!   `MPI_Abort` on the duplicate (on `MPI_COMM_WORLD` if another thread of the instance is in
//!   a collective on it, or it was freed); `check_alive` is always `Ok` (MPI has no liveness:
//!   `mpirun` ends the job when a rank dies);
//! - finalize is collective: a barrier, then `MPI_Comm_free` of the duplicate, then
//!   `MPI_Finalize`, but only if a bootstrap initialised MPI and this was the last live MPI
//!   bootstrap of the process. If the application initialised MPI (in C, or with
//!   [`Mpi::init`]), finalising MPI is left to it. Once MPI is finalised, no MPI bootstrap can be
//!   created again in this process (MPI cannot be re-initialised). A bootstrap dropped without
//!   finalize leaves its duplicate allocated (freeing is collective) until MPI is finalised.
//!
//! The duplicate's error handler is `MPI_ERRORS_RETURN`, so MPI failures on it are returned
//! as [`BootstrapError`]s (with the [`MpiError`] as their source) instead of ending the job.
//!
//! **Threads.** Calls on one bootstrap are serialised by a per-instance lock: MPI forbids
//! concurrent collectives on one communicator, and an allgather is two MPI collectives that
//! must stay paired. Different instances run concurrently when MPI provides
//! `MPI_THREAD_MULTIPLE`; when it provides less, [`crate::mpi`] serialises all of the
//! process's MPI calls with one process-wide lock, so a thread blocked in one instance's
//! collective holds up every other instance's MPI calls in this process until it completes
//! (see the [`crate::mpi`] documentation).
//!
//! **Testing.** The tests that need several ranks are `#[ignore]`d: they only make sense under
//! `mpirun`, one test per run (MPI can be initialised only once per process):
//!
//! ```text
//! cargo test -p shmem --lib --no-run          # prints target/debug/deps/shmem-<hash>
//! mpirun --allow-run-as-root --oversubscribe -np 4 target/debug/deps/shmem-<hash> \
//!     --ignored --exact bootstrap::mpi::tests::under_mpirun_collectives --test-threads 1
//! # the same for under_mpirun_serialized and under_mpirun_funneled (MPI initialised below
//! # MPI_THREAD_MULTIPLE by the "application"); and, expected to abort the job with exit
//! # status 7:
//! mpirun --allow-run-as-root --oversubscribe -np 2 target/debug/deps/shmem-<hash> \
//!     --ignored --exact bootstrap::mpi::tests::under_mpirun_global_exit --test-threads 1
//! ```

use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};

use super::error::{BootstrapError, BootstrapErrorKind};
use super::{Bootstrap, allgather_records, lock};
use crate::mpi::{Comm, Mpi, MpiError, MpiErrorKind, OwnedComm, ThreadLevel};

/// Process-wide: how many MPI bootstraps are live, and whether one of them initialised MPI.
#[derive(Debug)]
struct Live {
    count: usize,
    bootstrap_initialised_mpi: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    count: 0,
    bootstrap_initialised_mpi: false,
});

/// An [`MpiError`] as a bootstrap error, with `what` saying what was being done.
fn mpi_err(what: impl Into<String>) -> impl FnOnce(MpiError) -> BootstrapError {
    let what = what.into();
    move |e| {
        let kind = match e.kind() {
            MpiErrorKind::Usage => BootstrapErrorKind::Invalid,
            _ => BootstrapErrorKind::Io,
        };
        BootstrapError::new(kind, format!("{what}: {e}")).with_source(e)
    }
}

/// One bootstrap's place in [`LIVE`]'s count, given back when it is dropped.
#[derive(Debug)]
struct LiveSlot;

impl LiveSlot {
    /// Counts a new bootstrap; initialises MPI first if it is not (then only WORLD and SELF
    /// are accepted). Everything happens under the [`LIVE`] lock, so that a concurrent last
    /// finalize cannot finalise MPI between the check and the count.
    fn take(mpi: &'static Mpi, parent: Comm<'_>) -> Result<LiveSlot, BootstrapError> {
        let mut l = lock(&LIVE);
        let finalized = mpi.is_finalized().map_err(mpi_err("MPI_Finalized"))?;
        if finalized {
            return Err(BootstrapError::invalid(
                "MPI was finalised in this process, so no MPI bootstrap can be created (MPI \
                 cannot be initialised twice)",
            ));
        }
        let initialized = mpi.is_initialized().map_err(mpi_err("MPI_Initialized"))?;
        if !initialized {
            if parent != mpi.world() && parent != mpi.self_comm() {
                return Err(BootstrapError::invalid(format!(
                    "MPI is not initialised, so the MPI bootstrap can only use MPI_COMM_WORLD or \
                     MPI_COMM_SELF, but was given communicator {:#x}",
                    parent.as_raw()
                )));
            }
            let init = mpi.init_thread(ThreadLevel::Multiple);
            l.bootstrap_initialised_mpi |= init.map_err(mpi_err("initialising MPI"))?;
        }
        l.count += 1;
        Ok(LiveSlot)
    }

    /// Gives the slot back; then, if no bootstrap is left and one initialised MPI, finalises
    /// MPI (under the [`LIVE`] lock, so that no bootstrap is created meanwhile).
    fn finalize(self, mpi: &Mpi) -> Result<(), BootstrapError> {
        drop(self);
        let mut l = lock(&LIVE);
        if l.count == 0 && l.bootstrap_initialised_mpi {
            l.bootstrap_initialised_mpi = false;
            let what = "finalising MPI, which a bootstrap initialised, after the last one";
            mpi.finalize().map_err(mpi_err(what))?;
        }
        Ok(())
    }
}

impl Drop for LiveSlot {
    fn drop(&mut self) {
        let mut l = lock(&LIVE);
        l.count = l.count.saturating_sub(1);
    }
}

/// One rank's membership record: what it was told its PE, PE count and instance are.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
struct Member {
    pe: u32,
    n_pes: u32,
    instance_id: u64,
}

/// A PE's membership in one instance's MPI communicator (a private duplicate).
#[derive(Debug)]
pub(crate) struct MpiBootstrap {
    mpi: &'static Mpi,
    me: Member,
    /// The communicator's size (equal to `n_pes` once the membership is checked).
    size: usize,
    /// Until finalize: our duplicate of the communicator we were given, and our place in
    /// [`LIVE`]'s count. The lock serialises this instance's collectives (one communicator,
    /// one collective at a time).
    live: Mutex<Option<(OwnedComm, LiveSlot)>>,
}

/// The padded width of every rank's slot: the longest payload. Fails (identically on every
/// rank, since all see the same lengths) when it exceeds MPI's `int` count or the total does
/// not fit in memory.
fn padded_width(lens: &[usize]) -> Result<usize, BootstrapError> {
    let width = lens.iter().copied().max().unwrap_or(0);
    let pe = lens.iter().position(|&l| l == width).unwrap_or(0);
    let total = width
        .checked_mul(lens.len())
        .filter(|&t| isize::try_from(t).is_ok());
    let m = match (i32::try_from(width), total) {
        (Ok(_), Some(_)) => return Ok(width),
        (Err(_), _) => {
            format!("allgather: PE {pe} sends {width} bytes, more than MPI's count limit")
        }
        _ => format!(
            "allgather: {} PEs x {width} bytes do not fit in memory",
            lens.len()
        ),
    };
    Err(BootstrapError::invalid(m))
}

impl MpiBootstrap {
    /// Joins the instance's PEs through `comm` (`None`: `MPI_COMM_WORLD`), initialising MPI
    /// if it is not (then only WORLD or SELF are accepted). Collective over `comm`: every
    /// rank must call it, in the same order relative to other collectives on `comm`. This
    /// rank's rank and size in `comm` must be `my_pe` and `n_pes`, and every rank must pass
    /// the same `instance_id`; otherwise every rank fails naming the rank that disagrees.
    pub(crate) fn new(
        comm: Option<Comm<'_>>,
        my_pe: u32,
        n_pes: u32,
        instance_id: u64,
    ) -> Result<MpiBootstrap, BootstrapError> {
        if my_pe >= n_pes {
            return Err(BootstrapError::invalid(format!(
                "PE {my_pe} is out of range for {n_pes} PEs"
            )));
        }
        let mpi = Mpi::get().map_err(mpi_err("loading MPI for the MPI bootstrap"))?;
        let parent = comm.unwrap_or_else(|| mpi.world());
        let slot = LiveSlot::take(mpi, parent)?;
        let what = format!("MPI bootstrap of instance {instance_id}, PE {my_pe}");
        let dup_failed = mpi_err(format!("{what}: MPI_Comm_dup"));
        let dup = parent.dup().map_err(dup_failed)?;
        let comm = dup.comm();
        let size = comm.set_errors_return().and_then(|()| comm.size());
        let me = MpiBootstrap {
            mpi,
            me: Member {
                pe: my_pe,
                n_pes,
                instance_id,
            },
            size: size.as_ref().map_or(0, |&s| s.max(0) as usize),
            live: Mutex::new(Some((dup, slot))),
        };
        let setup = size.map_err(mpi_err(format!("{what}: setting MPI_ERRORS_RETURN")));
        if let Err(e) = setup.and_then(|_| me.verify_membership()) {
            // Every rank fails alike, so every rank frees its duplicate (the slot is dropped).
            if let Some((dup, _slot)) = lock(&me.live).take() {
                let _ = dup.free();
            }
            return Err(e);
        }
        tracing::debug!("{what}: joined");
        Ok(me)
    }

    /// Checks collectively that every rank's (PE, PE count, instance id) agrees with its rank
    /// and the communicator's size.
    fn verify_membership(&self) -> Result<(), BootstrapError> {
        let all = allgather_records(self, &self.me)?;
        let (size, first) = (all.len(), all.first().map_or(0, |m| m.instance_id));
        let bad: Vec<String> = (0..size)
            .zip(&all)
            .filter_map(|(r, m)| match (m.pe, m.n_pes, m.instance_id) {
                (pe, n, _) if pe as usize != r || n as usize != size => Some(format!(
                    "MPI rank {r} of {size} was given PE {pe} of {n} (the MPI bootstrap requires the \
                     PE and PE count to equal the rank and size in the communicator)"
                )),
                (.., id) if id != first => {
                    Some(format!("MPI rank {r} was given instance id {id}, but rank 0 instance id {first}"))
                }
                _ => None,
            })
            .collect();
        if bad.is_empty() {
            return Ok(());
        }
        let (pe, n, id) = (self.me.pe, self.me.n_pes, self.me.instance_id);
        let rank = self.collective(|c| Ok(c.rank().unwrap_or(-1)))?;
        let more = match bad.len().saturating_sub(4) {
            0 => String::new(),
            more => format!("; and {more} more"),
        };
        let bad = bad[..bad.len().min(4)].join("; ");
        Err(BootstrapError::invalid(format!(
            "MPI bootstrap of instance {id}: the ranks disagree: {bad}{more} (this process is rank \
             {rank} of {size}, given PE {pe} of {n})"
        )))
    }

    fn err(&self, op: &str) -> impl FnOnce(MpiError) -> BootstrapError {
        let (id, pe) = (self.me.instance_id, self.me.pe);
        mpi_err(format!("MPI bootstrap of instance {id}, PE {pe}: {op}"))
    }

    /// Runs `f` on our duplicate under the per-instance lock, unless the bootstrap was
    /// finalized.
    fn collective<T>(
        &self,
        f: impl FnOnce(Comm<'_>) -> Result<T, BootstrapError>,
    ) -> Result<T, BootstrapError> {
        match &*lock(&self.live) {
            Some((dup, _)) => f(dup.comm()),
            None => Err(BootstrapError::finalized(self.me.pe)),
        }
    }
}

impl Bootstrap for MpiBootstrap {
    fn barrier(&self) -> Result<(), BootstrapError> {
        self.collective(|c| c.barrier().map_err(self.err("barrier")))
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError> {
        self.collective(|c| {
            let mut raw = vec![0u8; 8 * self.size];
            let len = (mine.len() as u64).to_le_bytes();
            let lengths = c.allgather_bytes(&len, &mut raw);
            lengths.map_err(self.err("allgather of the payload lengths"))?;
            let len = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
            let lens: Vec<usize> = raw
                .chunks_exact(8)
                .map(|c| usize::try_from(len(c)).unwrap_or(usize::MAX))
                .collect();
            let width = padded_width(&lens)?;
            if width == 0 {
                return Ok(vec![Vec::new(); self.size]);
            }
            let mut send = mine.to_vec();
            send.resize(width, 0);
            let mut recv = vec![0u8; width * self.size];
            let payloads = c.allgather_bytes(&send, &mut recv);
            payloads.map_err(self.err("allgather of the payloads"))?;
            Ok(recv
                .chunks_exact(width)
                .zip(lens)
                .map(|(c, l)| c[..l].to_vec())
                .collect())
        })
    }

    fn check_alive(&self) -> Result<(), BootstrapError> {
        // MPI reports no liveness; mpirun ends the whole job when a rank dies.
        Ok(())
    }

    fn alarm(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        std::sync::Arc::default()
    }

    fn global_exit(&self, status: i32) {
        // Our duplicate, or MPI_COMM_WORLD if it was freed or another thread of this instance
        // is in a collective on it (and holds the lock).
        let world = self.mpi.world();
        let live = self.live.try_lock().ok();
        let dup = live.as_deref().and_then(Option::as_ref);
        let aborted = dup.map_or(world, |(c, _)| c.comm()).abort(status);
        if let Err(e) = aborted.or_else(|_| world.abort(status)) {
            tracing::debug!("mpi bootstrap: {e}; the caller exits, and mpirun then ends the job");
        }
    }

    fn finalize(&self) -> Result<(), BootstrapError> {
        let Some((dup, slot)) = lock(&self.live).take() else {
            return Ok(());
        };
        let comm = dup.comm();
        let barrier = comm.barrier().map_err(self.err("the finalize barrier"));
        let free = dup.free().map_err(self.err("freeing the communicator"));
        barrier.and(free).and(slot.finalize(self.mpi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_round_trips_variable_lengths() {
        let payloads: Vec<Vec<u8>> = vec![vec![], vec![1], (0..=255).collect(), vec![7; 3], vec![]];
        let lens: Vec<usize> = payloads.iter().map(Vec::len).collect();
        let width = padded_width(&lens).unwrap();
        assert_eq!(width, 256);
        let mut recv = Vec::new();
        for p in &payloads {
            recv.extend_from_slice(p);
            recv.resize(recv.len() + width - p.len(), 0);
        }
        assert_eq!(padded_width(&[0, 0, 0]).unwrap(), 0);
        assert_eq!(padded_width(&[]).unwrap(), 0);
        let e = padded_width(&[1, i32::MAX as usize + 1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("PE 1") && e.contains("count limit"), "{e}");
        assert!(padded_width(&[usize::MAX]).is_err());
    }

    #[test]
    fn bad_arguments_are_refused_before_touching_mpi() {
        let e = MpiBootstrap::new(None, 2, 2, 1).unwrap_err();
        assert_eq!(e.kind(), &BootstrapErrorKind::Invalid);
        assert!(
            e.to_string().contains("PE 2 is out of range for 2 PEs"),
            "{e}"
        );
        assert!(MpiBootstrap::new(None, 0, 0, 1).is_err());
        // A communicator other than WORLD/SELF while MPI is not initialised: refused, and
        // MPI stays uninitialised.
        let mpi = Mpi::get().expect("Open MPI is installed on this machine");
        // SAFETY: the handle is never passed to MPI: the bootstrap refuses it first.
        let bogus = unsafe { Comm::from_raw(0x1000) };
        let e = MpiBootstrap::new(Some(bogus), 0, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MPI_COMM_WORLD or MPI_COMM_SELF"), "{e}");
        assert!(!mpi.is_initialized().unwrap());
    }

    /// Under mpirun, rank and size come from Open MPI's launcher environment, so that the
    /// bootstrap itself initialises MPI (as CANN's plugin does).
    fn launcher_rank_size() -> (u32, u32) {
        let var = |name: &str| -> u32 {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} is not set: run this test under mpirun"))
        };
        (var("OMPI_COMM_WORLD_RANK"), var("OMPI_COMM_WORLD_SIZE"))
    }

    /// The raw handle of a bootstrap's duplicate (0 once finalized).
    fn dup_of(b: &MpiBootstrap) -> usize {
        lock(&b.live).as_ref().map_or(0, |(dup, _)| dup.as_raw())
    }

    /// A payload whose length and content depend on the PE, the round and a tag.
    fn payload(pe: u32, round: u32, tag: u8) -> Vec<u8> {
        let len = ((pe * 37 + round * 11 + u32::from(tag)) % 300) as usize;
        let len = if (pe + round).is_multiple_of(5) {
            0
        } else {
            len
        };
        (0..len)
            .map(|i| (i as u32 ^ pe.wrapping_mul(131) ^ round ^ u32::from(tag)) as u8)
            .collect()
    }

    fn check_allgather(b: &MpiBootstrap, round: u32, tag: u8) {
        let got = b
            .allgather(&payload(b.me.pe, round, tag))
            .unwrap_or_else(|e| panic!("allgather {tag} round {round}: {e}"));
        assert_eq!(got.len(), b.me.n_pes as usize);
        for (pe, bytes) in got.iter().enumerate() {
            assert_eq!(
                bytes,
                &payload(pe as u32, round, tag),
                "instance {} round {round}: PE {pe}'s bytes",
                b.me.instance_id
            );
        }
    }

    #[test]
    #[ignore = "run under mpirun: see module docs"]
    fn under_mpirun_collectives() {
        let (rank, size) = launcher_rank_size();
        let mpi = Mpi::get().expect("load MPI");
        assert!(!mpi.is_initialized().unwrap());

        // The bootstrap initialises MPI, and two instances over WORLD get separate duplicates.
        let a = MpiBootstrap::new(None, rank, size, 1).expect("bootstrap a");
        assert!(mpi.is_initialized().unwrap());
        let b = MpiBootstrap::new(None, rank, size, 2).expect("bootstrap b");
        assert_ne!(dup_of(&a), dup_of(&b));
        assert_ne!(dup_of(&a), mpi.world().as_raw());

        // An instance over the even ranks of a split; odd ranks are not part of it.
        let world = mpi.world();
        let evens = world
            .split((rank % 2 == 0).then_some(0), rank as i32)
            .expect("split");
        assert_eq!(evens.is_some(), rank % 2 == 0);
        let c = evens.as_ref().map(|comm| {
            MpiBootstrap::new(Some(comm.comm()), rank / 2, size.div_ceil(2), 3)
                .expect("bootstrap c")
        });

        // Interleaved collectives on both instances over WORLD and on the split one.
        for round in 0..200 {
            check_allgather(&a, round, b'a');
            b.barrier().expect("b barrier");
            check_allgather(&b, round, b'b');
            if let Some(c) = &c {
                check_allgather(c, round, b'c');
                c.barrier().expect("c barrier");
            }
            a.barrier().expect("a barrier");
            assert!(a.check_alive().is_ok());
        }

        // With MPI_THREAD_MULTIPLE, the two instances run concurrently in two threads.
        if mpi.thread_multiple().unwrap() {
            std::thread::scope(|s| {
                let ta = s.spawn(|| {
                    for round in 0..100 {
                        check_allgather(&a, 1000 + round, b'A');
                        a.barrier().expect("a barrier");
                    }
                });
                let tb = s.spawn(|| {
                    for round in 0..100 {
                        b.barrier().expect("b barrier");
                        check_allgather(&b, 1000 + round, b'B');
                    }
                });
                ta.join().expect("thread a");
                tb.join().expect("thread b");
            });
        }

        // Disagreements fail on every rank (no rank is left waiting), naming the rank.
        if size > 1 {
            let e = MpiBootstrap::new(None, (rank + 1) % size, size, 4)
                .unwrap_err()
                .to_string();
            assert!(e.contains("MPI rank 0 of"), "{e}");
            let id = if rank == 0 { 5 } else { 6 };
            let e = MpiBootstrap::new(None, rank, size, id)
                .unwrap_err()
                .to_string();
            assert!(e.contains("instance id"), "{e}");
        }
        let e = MpiBootstrap::new(None, rank, size + 1, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("of {}", size + 1)), "{e}");

        // Finalize: the split instance and its communicator, then b (MPI stays up), then a,
        // the last one, which finalises MPI since a bootstrap initialised it.
        if let Some(c) = c {
            c.finalize().expect("finalize c");
            assert!(matches!(c.barrier(), Err(e) if e.kind() == &BootstrapErrorKind::Finalized));
            evens.expect("evens").free().expect("free evens");
        }
        b.finalize().expect("finalize b");
        assert!(b.finalize().is_ok(), "finalize twice is a no-op");
        assert!(mpi.is_initialized().unwrap());
        a.finalize().expect("finalize a");
        assert!(
            !mpi.is_initialized().unwrap(),
            "the last bootstrap finalises MPI"
        );
        let e = MpiBootstrap::new(None, rank, size, 9)
            .unwrap_err()
            .to_string();
        assert!(e.contains("finalised"), "{e}");
    }

    /// MPI initialised by the "application" with less than `MPI_THREAD_MULTIPLE`: the
    /// bootstrap works through the process-wide lock and leaves finalising MPI to its owner.
    fn below_thread_multiple(level: ThreadLevel) {
        let (rank, size) = launcher_rank_size();
        let mpi = Mpi::get().expect("load MPI");
        assert!(mpi.init_thread(level).expect("init"));
        assert!(!mpi.thread_multiple().unwrap());
        let a = MpiBootstrap::new(None, rank, size, 1).expect("bootstrap a");
        let b = MpiBootstrap::new(None, rank, size, 2).expect("bootstrap b");
        for round in 0..100 {
            check_allgather(&a, round, b'a');
            b.barrier().expect("b barrier");
            check_allgather(&b, round, b'b');
            a.barrier().expect("a barrier");
        }
        // One other thread at a time (never two collectives at once: with the process-wide
        // lock that could deadlock across ranks, as documented).
        let other = std::thread::scope(|s| {
            s.spawn(|| {
                a.barrier()?;
                a.allgather(b"from another thread").map(|_| ())
            })
            .join()
            .expect("thread")
        });
        match level {
            ThreadLevel::Serialized => other.expect("serialised call from a thread"),
            _ => {
                let e = other.unwrap_err().to_string();
                assert!(e.contains("MPI_THREAD_FUNNELED"), "{e}");
            }
        }
        a.finalize().expect("finalize a");
        b.finalize().expect("finalize b");
        assert!(
            mpi.is_initialized().unwrap(),
            "the application initialised MPI: the bootstraps leave it up"
        );
        mpi.finalize().expect("finalize MPI");
        assert!(!mpi.is_initialized().unwrap());
    }

    #[test]
    #[ignore = "run under mpirun: see module docs"]
    fn under_mpirun_serialized() {
        below_thread_multiple(ThreadLevel::Serialized);
    }

    #[test]
    #[ignore = "run under mpirun: see module docs"]
    fn under_mpirun_funneled() {
        below_thread_multiple(ThreadLevel::Funneled);
    }

    #[test]
    #[ignore = "run under mpirun (expected to end the job with status 7): see module docs"]
    fn under_mpirun_global_exit() {
        let (rank, size) = launcher_rank_size();
        let a = MpiBootstrap::new(None, rank, size, 1).expect("bootstrap");
        a.barrier().expect("barrier");
        if rank == 0 {
            a.global_exit(7);
            // MPI_Abort does not return when it works.
            panic!("MPI_Abort returned");
        }
        // The others wait in a barrier that rank 0 never enters, until the job is aborted.
        let _ = a.barrier();
        panic!("the job was not aborted");
    }
}
