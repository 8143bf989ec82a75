//! The simulator's per-PE control block: an event count that lets a waiting PE sleep on a futex
//! and be woken by any peer that writes into its segment.
//!
//! The protocol (a classic event count, checked by the `eventcount` tests):
//! - A writer stores its data, issues a sequentially consistent fence, and reads `sleepers`.
//!   Only if it is non-zero does it bump `seq` and wake the futex, so writes cost one fence and
//!   one read of a line that stays shared while nobody sleeps.
//! - A waiter that wants to sleep increments `sleepers`, fences, reads `seq`, re-checks its
//!   condition, and sleeps on `seq` only if the value is unchanged.
//!
//! Either the writer sees the sleeper (and wakes it), or the waiter sees the data.

use std::sync::atomic::{AtomicU32, Ordering, fence};
use std::time::Duration;

/// Bytes reserved for the control block at the end of every segment.
pub(crate) const CONTROL_SIZE: usize = 4096;

/// The control block at the start of a segment's control page.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Control {
    /// Bumped by writers when someone sleeps.
    seq: AtomicU32,
    /// Threads of the owning PE that are (about to be) asleep on `seq`.
    sleepers: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<Control>() <= CONTROL_SIZE);

impl Control {
    /// Called by a writer after its data is stored into this PE's segment.
    #[inline]
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            self.seq.fetch_add(1, Ordering::Release);
            // `i32::MAX`, not `u32::MAX`: the kernel reads the count as a signed int.
            let _ = rustix::thread::futex::wake(
                &self.seq,
                rustix::thread::futex::Flags::empty(),
                i32::MAX as u32,
            );
        }
    }

    /// Sleeps until a writer notifies, `timeout` passes, or `still_waiting` (re-checked after
    /// announcing the sleep) returns false. Spurious returns are allowed.
    pub(crate) fn sleep(&self, timeout: Duration, still_waiting: &mut dyn FnMut() -> bool) {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let seen = self.seq.load(Ordering::Acquire);
        if still_waiting() {
            let ts = rustix::time::Timespec {
                tv_sec: timeout.as_secs() as i64,
                tv_nsec: i64::from(timeout.subsec_nanos()),
            };
            // A shared (non-private) futex: the word lives in memory shared between processes.
            // EAGAIN (value changed), EINTR and ETIMEDOUT all just end this sleep.
            let _ = rustix::thread::futex::wait(
                &self.seq,
                rustix::thread::futex::Flags::empty(),
                seen,
                Some(&ts),
            );
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::time::Instant;

    #[test]
    fn eventcount_never_loses_a_wake_up() {
        // Ping-pong: the writer publishes value i only after the waiter acknowledged i - 1, so
        // nearly every round has the waiter asleep when the value arrives. A lost wake-up would
        // show as a sleep lasting the whole 5 s timeout.
        const N: u64 = 2000;
        let ctl = Arc::new(Control {
            seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
        });
        let data = Arc::new(AtomicU64::new(0));
        let ack = Arc::new(AtomicU64::new(0));
        let (c2, d2, a2) = (ctl.clone(), data.clone(), ack.clone());
        let writer = std::thread::spawn(move || {
            for i in 1..=N {
                while a2.load(Ordering::Acquire) != i - 1 {
                    std::thread::yield_now();
                }
                d2.store(i, Ordering::Release);
                c2.notify();
            }
        });
        let mut longest = Duration::ZERO;
        for i in 1..=N {
            while data.load(Ordering::Acquire) < i {
                let t = Instant::now();
                ctl.sleep(Duration::from_secs(5), &mut || {
                    data.load(Ordering::Acquire) < i
                });
                longest = longest.max(t.elapsed());
            }
            ack.store(i, Ordering::Release);
        }
        writer.join().unwrap();
        assert!(
            longest < Duration::from_secs(4),
            "a sleep lasted {longest:?}: a wake-up was lost"
        );
    }
}
