//! PEs played by threads of one process, for the transport tests: the segments, the
//! descriptor exchange and every data path are the real ones; only the bootstrap is an
//! in-process stand-in.

#![allow(dead_code, unreachable_pub)]

use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use shmem_backend::{
    Capabilities, Deadline, Exchange, Pe, SegmentSpec, Transport, TransportError, Watchdog, Width,
};
use shmem_sim::{SimSettings, SimTransport};

/// A barrier between the PE threads that fails (panics) for everyone once one of them
/// panicked, so that a failed assertion ends the test instead of hanging it.
pub struct PeBarrier {
    state: Mutex<(usize, u64, bool)>,
    cv: Condvar,
    n: usize,
}

impl fmt::Debug for PeBarrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PeBarrier")
    }
}

impl PeBarrier {
    fn new(n: usize) -> PeBarrier {
        PeBarrier {
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
            n,
        }
    }

    /// Waits until every PE thread has called it.
    pub fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        assert!(!s.2, "another PE thread failed");
        let generation = s.1;
        s.0 += 1;
        if s.0 == self.n {
            s.0 = 0;
            s.1 += 1;
            self.cv.notify_all();
            return;
        }
        while s.1 == generation && !s.2 {
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        assert!(!s.2, "another PE thread failed");
    }

    fn poison(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).2 = true;
        self.cv.notify_all();
    }
}

/// An allgather/barrier between threads.
struct ThreadExchange {
    pe: usize,
    slots: Arc<Mutex<Vec<Vec<u8>>>>,
    barrier: Arc<PeBarrier>,
}

impl Exchange for ThreadExchange {
    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> {
        self.slots.lock().unwrap()[self.pe] = mine.to_vec();
        self.barrier.wait();
        let all = self.slots.lock().unwrap().clone();
        self.barrier.wait();
        Ok(all)
    }
    fn barrier(&mut self) -> Result<(), TransportError> {
        self.barrier.wait();
        Ok(())
    }
}

/// Runs `body(pe, transport, barrier)` on `n` threads, each with its own transport of 1 MiB
/// whose waits give up after 20 s.
pub fn run<F>(n: u32, settings: SimSettings, body: F)
where
    F: Fn(Pe, &SimTransport, &PeBarrier) + Send + Sync + 'static,
{
    run_with(
        n,
        settings,
        Capabilities::ALL,
        Arc::new(Deadline(Duration::from_secs(20))),
        body,
    )
}

/// [`run`] with explicit capabilities and watchdog.
pub fn run_with<F>(
    n: u32,
    settings: SimSettings,
    caps: Capabilities,
    watchdog: Arc<dyn Watchdog>,
    body: F,
) where
    F: Fn(Pe, &SimTransport, &PeBarrier) + Send + Sync + 'static,
{
    let slots = Arc::new(Mutex::new(vec![Vec::new(); n as usize]));
    let barrier = Arc::new(PeBarrier::new(n as usize));
    let body = Arc::new(body);
    let threads: Vec<_> = (0..n)
        .map(|pe| {
            let (slots, barrier, body, settings, watchdog) = (
                slots.clone(),
                barrier.clone(),
                body.clone(),
                settings.clone(),
                watchdog.clone(),
            );
            std::thread::spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let spec = SegmentSpec {
                        instance: 0,
                        my_pe: pe,
                        n_pes: n,
                        size: 1 << 20,
                        label: "test".into(),
                        attach_timeout: Duration::from_secs(10),
                        caps,
                        watchdog,
                        device_memory: false,
                    };
                    let mut ex = ThreadExchange {
                        pe: pe as usize,
                        slots,
                        barrier: barrier.clone(),
                    };
                    let t = SimTransport::open_with(spec, &mut ex, settings).expect("open");
                    body(pe, &t, &barrier);
                    barrier.wait();
                }));
                if let Err(p) = r {
                    barrier.poison();
                    std::panic::resume_unwind(p);
                }
            })
        })
        .collect();
    let mut failed = None;
    for t in threads {
        if let Err(p) = t.join() {
            failed.get_or_insert(p);
        }
    }
    if let Some(p) = failed {
        std::panic::resume_unwind(p);
    }
}

/// Loads the 64-bit word at `offset` of this PE's segment.
pub fn load64(t: &SimTransport, offset: usize) -> u64 {
    // SAFETY: callers pass aligned offsets inside the 1 MiB segment.
    unsafe { t.load(offset, Width::W64) }.unwrap()
}

/// Strict completion with a fixed seed and no early completions.
pub fn strict() -> SimSettings {
    SimSettings {
        strict: true,
        strict_seed: Some(7),
        strict_early: 0.0,
        ..SimSettings::default()
    }
}
