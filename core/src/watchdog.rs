//! What every wait of an instance's transport consults between its sleeps: the bootstrap's news
//! of dead peers and of the job ending, the instance being finalised by another thread,
//! `SHMEM_TIMEOUT`, and the hang reports of `SHMEM_HANG_REPORT`.
//!
//! A wait goes on as long as every peer is alive (OpenSHMEM's and CANN's waits have no
//! timeout). One that lasts reports a suspected hang instead, once after `SHMEM_HANG_REPORT`
//! (30 s) and then at doubling intervals, in one line a person and a script can read:
//!
//! ```text
//! shmem: WARN hang? PE 0 has waited 30 s in barrier_all (instance 0, team world) for PE 1, PE 3 (stopped)
//! ```
//!
//! A PE waited for is followed by its process state when that explains the wait (`stopped`,
//! `stopped by a debugger`, `exited`, `in an uninterruptible wait`), where the transport knows
//! the PEs' processes (the simulator's PEs share one host).

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use shmem_backend::{TransportError, Watchdog};

use crate::bootstrap::Bootstrap;
use crate::instance::LIVE;

/// The watchdog of one instance's waits.
pub(crate) struct InstanceWatchdog {
    pub boot: Arc<dyn Bootstrap>,
    /// `SHMEM_TIMEOUT`.
    pub timeout: Option<Duration>,
    /// `SHMEM_HANG_REPORT`: when a wait first reports.
    pub hang_report: Option<Duration>,
    /// The instance's state, which finalize changes.
    pub state: Arc<AtomicU8>,
    pub instance: u64,
    pub my_pe: u32,
}

thread_local! {
    /// This thread's current wait, as the checks see it: how long it had waited at the last
    /// check (a smaller figure means a new wait), and when it reports next.
    static REPORT: Cell<(Duration, Option<Duration>)> = const { Cell::new((Duration::ZERO, None)) };
}

impl Watchdog for InstanceWatchdog {
    fn check(&self, waited: Duration, what: &dyn fmt::Display) -> Result<(), TransportError> {
        if self.state.load(Ordering::Acquire) != LIVE {
            return Err(TransportError::Finalized {
                instance: self.instance,
            });
        }
        self.boot.check_alive().map_err(TransportError::from)?;
        if let Some(t) = self.timeout
            && waited >= t
        {
            return Err(TransportError::Timeout {
                what: what.to_string(),
                seconds: waited.as_secs_f64(),
            });
        }
        if let Some(first) = self.hang_report {
            self.report(first, waited, what);
        }
        Ok(())
    }
}

impl InstanceWatchdog {
    /// Reports a suspected hang when `waited` has passed the wait's next report time.
    fn report(&self, first: Duration, waited: Duration, what: &dyn fmt::Display) {
        REPORT.with(|r| {
            let (last, next) = r.get();
            let mut next = match next {
                Some(n) if waited >= last => n,
                _ => first,
            };
            if waited >= next {
                crate::diag::warn(format_args!(
                    "hang? PE {} has waited {} s in {what}",
                    self.my_pe,
                    waited.as_secs()
                ));
                while next <= waited {
                    next *= 2;
                }
            }
            r.set((waited, Some(next)));
        });
    }
}
