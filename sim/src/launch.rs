//! Kernel launches on simulated AI vector cores.
//!
//! A launch runs a kernel on `block_dim` simulated vector cores of this PE's NPU, as one item of
//! work on a [`Stream`]: it starts after the work enqueued before it and the work enqueued after
//! it starts once every block has returned. Launches on different streams run at the same time.
//! Each block runs on a thread of the PE's process (threads are kept across launches,
//! `core_pool`) with its block index, the block count and a private unified buffer (UB) of [`UB_SIZE`] bytes, 32-byte aligned and zeroed at the start of
//! the launch.
//!
//! The simulated SoC has [`MAX_AIV_PER_NPU`] vector cores (CANN's `ACLSHMEM_MAX_AIV_PER_NPU`), so
//! a launch of more blocks runs them in waves of that many, as hardware does. A block that
//! waits for all the others ([`Core::sync_all`], and the SHMEM barrier built on it) could then
//! never be released; such a call is refused, naming the kernel and the figures.
//!
//! Simulated cores may far outnumber real ones (8 PEs × 48 blocks on 2 cores). Every call of
//! the device API is a scheduling point ([`Core::yield_point`]: the thread yields when more
//! cores run than the machine has CPUs), and every wait of a block sleeps rather than spins. A
//! kernel that spins on raw memory without calling the device API cannot be scheduled fairly:
//! that is a documented limit.
//!
//! A block that returns an error, or panics, ends the launch: the other blocks of its wave are
//! released from [`Core::sync_all`] with an error, later waves do not start, and the stream
//! reports the first failure ([`TransportError::Kernel`], naming the kernel and the block) at
//! its next synchronisation. The stream, the process and the simulator go on.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use shmem_sim::{Kernel, Stream};
//!
//! let stream = Stream::new(false);
//! let sum = Arc::new(AtomicU64::new(0));
//! let s = sum.clone();
//! stream.launch(Kernel::new("sum_of_blocks", move |core| {
//!     core.ub()[0] = core.block_idx() as u8; // each block has a UB of its own
//!     core.sync_all()?;                       // every block of the launch arrives here
//!     s.fetch_add(u64::from(core.ub()[0]), Ordering::Relaxed);
//!     Ok(())
//! }), 8);
//! stream.synchronize()?;
//! assert_eq!(sum.load(Ordering::Relaxed), (0..8).sum());
//! # Ok::<(), shmem_backend::TransportError>(())
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use shmem_backend::TransportError;

use crate::stream::Stream;

/// The vector cores of the simulated NPU (CANN's `ACLSHMEM_MAX_AIV_PER_NPU`).
pub const MAX_AIV_PER_NPU: u32 = 48;

/// The unified buffer of a vector core, in bytes.
pub const UB_SIZE: usize = 192 * 1024;

/// The alignment of the UB, and of UB transfers.
pub const UB_ALIGN: usize = 32;

/// What a kernel body returns: a failure is the block's, and ends the launch.
pub type KernelResult = Result<(), KernelError>;

/// Why a block failed: the call and what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError {
    /// The device call that failed (or `"kernel"` for the body's own failure).
    pub call: String,
    /// What was wrong.
    pub detail: String,
}

impl KernelError {
    /// A failure of `call`.
    pub fn new(call: impl Into<String>, detail: impl Into<String>) -> KernelError {
        KernelError {
            call: call.into(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.call, self.detail)
    }
}

impl std::error::Error for KernelError {}

/// A kernel: a name (for errors) and a body that every block runs.
#[derive(Clone)]
pub struct Kernel {
    name: Arc<str>,
    body: Arc<dyn Fn(&mut Core) -> KernelResult + Send + Sync>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).finish()
    }
}

impl Kernel {
    /// The kernel `name` with `body`, which runs once per block.
    pub fn new(
        name: impl Into<String>,
        body: impl Fn(&mut Core) -> KernelResult + Send + Sync + 'static,
    ) -> Kernel {
        Kernel {
            name: name.into().into(),
            body: Arc::new(body),
        }
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One 32-byte unit of a UB (its alignment).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct UbUnit([u8; UB_ALIGN]);

/// The simulated cores running in the process, to decide whether a scheduling point yields.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// The CPUs the process may use (at least 1).
fn cpus() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The state all blocks of a wave share: the `sync_all` rendezvous and the failure flag.
struct Wave {
    /// Blocks of the wave that have arrived at the current `sync_all`, and its generation.
    sync: Mutex<(u32, u64)>,
    released: Condvar,
    /// Set when a block failed: waits end with an error.
    failed: AtomicBool,
}

/// One simulated vector core running one block of a launch.
pub struct Core {
    kernel: Arc<str>,
    block_idx: u32,
    block_num: u32,
    /// The blocks running together (one wave).
    wave_len: u32,
    ub: Box<[UbUnit]>,
    wave: Arc<Wave>,
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("kernel", &self.kernel)
            .field("block_idx", &self.block_idx)
            .field("block_num", &self.block_num)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// This block's index, `0..block_num()` (AscendC's `GetBlockIdx`).
    pub fn block_idx(&self) -> u32 {
        self.block_idx
    }

    /// The blocks of the launch (`GetBlockNum`).
    pub fn block_num(&self) -> u32 {
        self.block_num
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// This core's unified buffer: [`UB_SIZE`] bytes, 32-byte aligned, private to the block.
    pub fn ub(&mut self) -> &mut [u8] {
        let len = self.ub.len() * UB_ALIGN;
        // SAFETY: the units are plain bytes laid out contiguously (`repr(C)`, size == align),
        // so the allocation is `len` initialised bytes, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ub.as_mut_ptr().cast::<u8>(), len) }
    }

    /// A scheduling point: every call of the device API passes one, so that simulated cores
    /// that outnumber the CPUs take turns.
    #[inline]
    pub fn yield_point(&self) {
        if RUNNING.load(Ordering::Relaxed) > cpus() {
            std::thread::yield_now();
        }
    }

    /// Marks the launch failed for the other blocks of the wave: their waits in
    /// [`Core::sync_all`] end with an error. A block that records a failure and goes on running
    /// (a kernel written in C, which cannot return early from a device call) calls this at once,
    /// so that the blocks waiting for it are not left waiting.
    pub fn fail_launch(&self) {
        let w = &*self.wave;
        w.failed.store(true, Ordering::Release);
        let _g = w.sync.lock().unwrap_or_else(|p| p.into_inner());
        w.released.notify_all();
    }

    /// Whether a block of this wave failed.
    pub fn launch_failed(&self) -> bool {
        self.wave.failed.load(Ordering::Acquire)
    }

    /// Waits until every block of the launch has arrived (AscendC's `SyncAll`). Refused when
    /// the launch runs in waves (more blocks than the NPU has cores), since the blocks of later
    /// waves could never arrive; fails when another block of the launch failed.
    pub fn sync_all(&self) -> KernelResult {
        if self.wave_len < self.block_num {
            return Err(KernelError::new(
                "SyncAll",
                format!(
                    "the launch has {} blocks but the NPU {MAX_AIV_PER_NPU} vector cores, so its blocks run in waves and cannot all meet; launch at most {MAX_AIV_PER_NPU} blocks",
                    self.block_num
                ),
            ));
        }
        self.yield_point();
        let w = &*self.wave;
        let mut s = w.sync.lock().unwrap_or_else(|p| p.into_inner());
        let generation = s.1;
        s.0 += 1;
        if s.0 == self.wave_len {
            s.0 = 0;
            s.1 += 1;
            w.released.notify_all();
            return Ok(());
        }
        while s.1 == generation {
            if w.failed.load(Ordering::Acquire) {
                return Err(KernelError::new(
                    "SyncAll",
                    "another block of the launch failed",
                ));
            }
            s = w.released.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        Ok(())
    }
}

/// Counts a running core for as long as it lives.
struct Running;

impl Running {
    fn start() -> Running {
        RUNNING.fetch_add(1, Ordering::Relaxed);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs `kernel` on `block_dim` blocks, in waves of at most [`MAX_AIV_PER_NPU`], and returns the
/// first failure (the lowest failing block of the first failing wave).
fn run(kernel: &Kernel, block_dim: u32) -> Result<(), TransportError> {
    let wave_len = block_dim.min(MAX_AIV_PER_NPU);
    let mut first = 0;
    while first < block_dim {
        let this_wave = wave_len.min(block_dim - first);
        let wave = Arc::new(Wave {
            sync: Mutex::new((0, 0)),
            released: Condvar::new(),
            failed: AtomicBool::new(false),
        });
        let (done, results) = std::sync::mpsc::channel();
        for block_idx in first..first + this_wave {
            let mut core = Core {
                kernel: kernel.name.clone(),
                block_idx,
                block_num: block_dim,
                wave_len: if block_dim > MAX_AIV_PER_NPU {
                    this_wave
                } else {
                    block_dim
                },
                ub: vec![UbUnit([0; UB_ALIGN]); UB_SIZE / UB_ALIGN].into_boxed_slice(),
                wave: wave.clone(),
            };
            let body = kernel.body.clone();
            let done = done.clone();
            crate::core_pool::POOL.run(Box::new(move || {
                let _running = Running::start();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut core)))
                    .unwrap_or_else(|p| {
                        let msg = p
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_string())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic".into());
                        Err(KernelError::new("kernel", format!("panicked: {msg}")))
                    });
                if r.is_err() {
                    // Release the blocks waiting for this one.
                    core.fail_launch();
                }
                let _ = done.send((block_idx, r));
            }));
        }
        drop(done);
        let mut reported = 0;
        let mut failures: Vec<(u32, KernelError)> = Vec::new();
        for (b, r) in results.iter().take(this_wave as usize) {
            reported += 1;
            if let Err(e) = r {
                failures.push((b, e));
            }
        }
        if reported < this_wave {
            failures.push((
                u32::MAX,
                KernelError::new("kernel", "a block's thread ended abnormally"),
            ));
        }
        // The block that failed first in spirit: a block's own failure before the blocks it
        // released with "another block failed".
        failures.sort_by_key(|(b, e)| (e.detail == "another block of the launch failed", *b));
        if let Some((block, e)) = failures.into_iter().next() {
            return Err(TransportError::Kernel {
                kernel: kernel.name.to_string(),
                block,
                detail: e.to_string(),
            });
        }
        first += this_wave;
    }
    Ok(())
}

impl Stream {
    /// Enqueues a launch of `kernel` on `block_dim` blocks (at least 1); returns its position
    /// in the stream. A failure is reported by the stream's next synchronisation.
    ///
    /// # Panics
    ///
    /// If `block_dim` is 0 (a programmer error: CANN refuses such a launch before it starts).
    pub fn launch(&self, kernel: Kernel, block_dim: u32) -> u64 {
        assert!(block_dim > 0, "a kernel launch needs at least one block");
        self.enqueue(move || run(&kernel, block_dim))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, AtomicU64};
    use std::time::{Duration, Instant};

    #[test]
    fn every_block_runs_once_with_its_index_and_a_private_aligned_ub() {
        let stream = Stream::new(false);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        stream.launch(
            Kernel::new("indices", move |core| {
                let idx = core.block_idx();
                let n = core.block_num();
                let ub = core.ub();
                assert_eq!(ub.len(), UB_SIZE);
                assert_eq!(ub.as_ptr() as usize % UB_ALIGN, 0);
                assert!(ub.iter().all(|&b| b == 0), "a zeroed UB");
                ub.fill(idx as u8);
                core.sync_all()?;
                // Nobody else wrote this block's UB while it waited.
                assert!(core.ub().iter().all(|&b| b == idx as u8));
                s.lock().unwrap().push((idx, n));
                Ok(())
            }),
            48,
        );
        stream.synchronize().expect("the launch succeeds");
        let mut seen = seen.lock().unwrap().clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..48).map(|i| (i, 48)).collect::<Vec<_>>());
    }

    #[test]
    fn sync_all_separates_rounds_of_every_block() {
        // Each round every block adds 1, meets the others, and must then see all 48 additions
        // of the round and none of the next.
        let stream = Stream::new(false);
        let count = Arc::new(AtomicU64::new(0));
        let c = count.clone();
        stream.launch(
            Kernel::new("rounds", move |core| {
                for round in 1..=50u64 {
                    c.fetch_add(1, Ordering::SeqCst);
                    core.sync_all()?;
                    let n = c.load(Ordering::SeqCst);
                    if n != 48 * round {
                        return Err(KernelError::new("check", format!("round {round}: {n}")));
                    }
                    core.sync_all()?;
                }
                Ok(())
            }),
            48,
        );
        stream.synchronize().expect("every round holds");
        assert_eq!(count.load(Ordering::SeqCst), 48 * 50);
    }

    #[test]
    fn eight_npus_of_48_cores_on_a_small_machine() {
        // 384 simulated cores at once (8 streams × 48 blocks), each meeting its launch's blocks
        // 20 times: the waits sleep, so oversubscription costs turns, not progress.
        let streams: Vec<Stream> = (0..8).map(|_| Stream::new(false)).collect();
        let done = Arc::new(AtomicU64::new(0));
        for s in &streams {
            let d = done.clone();
            s.launch(
                Kernel::new("crowd", move |core| {
                    for _ in 0..20 {
                        core.yield_point();
                        core.sync_all()?;
                    }
                    d.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
                48,
            );
        }
        for s in &streams {
            s.synchronize().unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), 384);
    }

    #[test]
    fn launches_run_in_stream_order_with_other_work() {
        let stream = Stream::new(false);
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = log.clone();
        stream.enqueue(move || {
            l.lock().unwrap().push("before");
            Ok(())
        });
        let l = log.clone();
        stream.launch(
            Kernel::new("middle", move |core| {
                if core.block_idx() == 0 {
                    l.lock().unwrap().push("kernel");
                }
                Ok(())
            }),
            4,
        );
        let l = log.clone();
        stream.enqueue(move || {
            l.lock().unwrap().push("after");
            Ok(())
        });
        stream.synchronize().unwrap();
        assert_eq!(*log.lock().unwrap(), ["before", "kernel", "after"]);
    }

    #[test]
    fn more_blocks_than_cores_run_in_waves_and_cannot_sync_all() {
        let stream = Stream::new(false);
        let (now, most) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let ran = Arc::new(AtomicU32::new(0));
        let (n, m, r) = (now.clone(), most.clone(), ran.clone());
        stream.launch(
            Kernel::new("waves", move |core| {
                let c = n.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(c, Ordering::SeqCst);
                core.yield_point();
                n.fetch_sub(1, Ordering::SeqCst);
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
            100,
        );
        stream.synchronize().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 100);
        assert!(most.load(Ordering::SeqCst) <= MAX_AIV_PER_NPU);

        stream.launch(Kernel::new("sync_in_waves", |core| core.sync_all()), 49);
        let e = stream.synchronize().unwrap_err().to_string();
        assert!(
            e.contains("kernel sync_in_waves, block 0: SyncAll: the launch has 49 blocks but the NPU 48 vector cores"),
            "{e}"
        );
    }

    #[test]
    fn a_failing_block_ends_the_launch_not_the_stream() {
        let stream = Stream::new(false);
        stream.launch(
            Kernel::new("fails", |core| {
                if core.block_idx() == 5 {
                    return Err(KernelError::new("aclshmem_putmem", "a bad address"));
                }
                core.sync_all() // released with an error, not left waiting
            }),
            8,
        );
        let e = stream.synchronize().unwrap_err().to_string();
        assert_eq!(e, "kernel fails, block 5: aclshmem_putmem: a bad address");
        stream.launch(
            Kernel::new("panics", |core| {
                assert!(core.block_idx() != 2, "block 2 is wrong");
                Ok(())
            }),
            3,
        );
        let e = stream.synchronize().unwrap_err().to_string();
        assert!(
            e.starts_with("kernel panics, block 2: kernel: panicked: block 2 is wrong"),
            "{e}"
        );
        // The stream goes on.
        let ok = Arc::new(AtomicU64::new(0));
        let o = ok.clone();
        stream.launch(
            Kernel::new("fine", move |_| {
                o.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }),
            2,
        );
        stream.synchronize().unwrap();
        assert_eq!(ok.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn launches_on_different_streams_run_at_the_same_time() {
        // The kernel on `a` waits for one on `b` to run: only concurrent streams finish (the
        // bound only catches a hang; it does not time anything).
        let (a, b) = (Stream::new(false), Stream::new(false));
        let flag = Arc::new((Mutex::new(false), Condvar::new()));
        let f = flag.clone();
        a.launch(
            Kernel::new("waits", move |_| {
                let (m, c) = &*f;
                let deadline = Instant::now() + Duration::from_secs(60);
                let mut set = m.lock().unwrap();
                while !*set {
                    if Instant::now() > deadline {
                        return Err(KernelError::new("wait", "the other stream never ran"));
                    }
                    set = c.wait_timeout(set, Duration::from_secs(1)).unwrap().0;
                }
                Ok(())
            }),
            1,
        );
        let f = flag.clone();
        b.launch(
            Kernel::new("sets", move |_| {
                *f.0.lock().unwrap() = true;
                f.1.notify_all();
                Ok(())
            }),
            1,
        );
        b.synchronize().unwrap();
        a.synchronize().unwrap();
    }

    #[test]
    #[should_panic(expected = "at least one block")]
    fn a_launch_of_no_blocks_is_a_programmer_error() {
        Stream::new(false).launch(Kernel::new("none", |_| Ok(())), 0);
    }
}
