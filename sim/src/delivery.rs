//! Strict mode's delivery thread: it delivers the blocking operations that strict queues hold
//! back, when [`StrictQueue::deliver_due`] says they are due, so that they arrive eventually
//! without a quiet whatever the program does meanwhile (computes, polls a word with loads or
//! `g`, or waits). One thread per process, started by the first queue that holds blocking
//! operations; it sleeps until the next operation is due or a queue is given new ones.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crate::strict::StrictQueue;
use crate::transport::SimTransport;

/// A strict completion queue and the transport that performs its operations.
#[derive(Debug)]
pub(crate) struct Strict {
    pub queue: Mutex<StrictQueue>,
    /// Whether blocking operations are held too (the transport allows relaxed completion and
    /// the queue serves the program, not the core's own protocols).
    pub hold_blocking: bool,
    pub transport: SimTransport,
}

impl Strict {
    pub(crate) fn lock(&self) -> MutexGuard<'_, StrictQueue> {
        // A panic while holding the queue cannot leave it inconsistent enough to matter.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Registry {
    queues: Vec<Weak<Strict>>,
    /// New blocking operations were held since the thread last looked.
    kicked: bool,
    started: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    queues: Vec::new(),
    kicked: false,
    started: false,
});
static WAKE: Condvar = Condvar::new();

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lets the delivery thread see `queue`, starting the thread if needed.
pub(crate) fn enlist(queue: &Arc<Strict>) {
    let mut r = registry();
    r.queues.push(Arc::downgrade(queue));
    if !r.started {
        r.started = true;
        let spawned = std::thread::Builder::new()
            .name("shmem-strict-delivery".into())
            .spawn(run);
        if let Err(e) = spawned {
            // Held blocking operations then complete at quiet only; say why.
            r.started = false;
            tracing::warn!("strict mode cannot start its delivery thread: {e}");
        }
    }
}

/// Tells the delivery thread that a queue holds new blocking operations.
pub(crate) fn kick() {
    registry().kicked = true;
    WAKE.notify_one();
}

fn run() {
    let mut next_due: Option<Instant> = None;
    loop {
        let queues = {
            let mut r = registry();
            let now = Instant::now();
            let wait = next_due.map_or(Duration::from_secs(3600), |t| {
                t.saturating_duration_since(now)
            });
            if !r.kicked && !wait.is_zero() {
                r = WAKE
                    .wait_timeout(r, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            r.kicked = false;
            r.queues.retain(|w| w.strong_count() > 0);
            r.queues.clone()
        };
        let now = Instant::now();
        next_due = None;
        for strict in queues.iter().filter_map(Weak::upgrade) {
            let t = &strict.transport;
            let due = strict.lock().deliver_due(now, &mut |d| t.execute_held(d));
            if let Some(due) = due {
                next_due = Some(next_due.map_or(due, |n| n.min(due)));
            }
        }
    }
}
