//! The simulator's per-PE control block: an event count that lets a waiting PE sleep on a futex
//! and be woken by a peer that writes into the part of its segment it waits on.
//!
//! The protocol (a classic event count, checked by the tests below):
//! - A sleeper announces what it watches: it claims one of [`SLOTS`] slots and stores the range
//!   of 64-byte lines its condition reads (or, with no slot free or a range too large to
//!   encode, counts itself as watching everything), then increments `sleepers`, fences, reads
//!   `seq`, re-checks its condition, and sleeps on `seq` only if the value is unchanged.
//! - A writer stores its data, fences, and reads `sleepers`. Only if someone sleeps does it look
//!   at the slots, and only if its write touches a watched line does it bump `seq` and wake the
//!   futex. So a stream of puts to a PE that sleeps in a barrier costs one fence and a few
//!   loads of a cache line that stays shared; nobody is woken for data it does not wait on.
//!
//! Either the writer sees the sleeper and its range (and wakes it when they overlap), or the
//! sleeper sees the data. Stores made without the transport (through `shmem_ptr` addresses)
//! wake nobody; sleepers re-check at least every sleep chunk, so they notice them late but
//! surely.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::time::Duration;

/// Bytes reserved for the control block at the end of every segment.
pub(crate) const CONTROL_SIZE: usize = 4096;
/// Watch slots: the most sleepers of one PE whose watched ranges are tracked exactly.
pub(crate) const SLOTS: usize = 6;
const LINE: usize = 64;

/// The control block at the start of a segment's control page.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// Bumped by writers that wake someone.
    seq: AtomicU32,
    /// Threads of the owning PE that are (about to be) asleep on `seq`.
    sleepers: AtomicU32,
    /// Sleepers that watch the whole segment.
    everything: AtomicU32,
    _pad: u32,
    /// Watched line ranges, `first << 32 | end` (`0` = free slot).
    slots: [AtomicU64; SLOTS],
}

const _: () = assert!(std::mem::size_of::<Control>() <= CONTROL_SIZE);
const _: () = assert!(std::mem::size_of::<Control>() == LINE);

/// The packed line range of `len` bytes at `offset`, if it can be encoded.
fn lines(offset: usize, len: usize) -> Option<u64> {
    if len == 0 || len == usize::MAX {
        return None;
    }
    let first = offset / LINE;
    let end = offset.checked_add(len)?.div_ceil(LINE);
    let (first, end) = (u32::try_from(first).ok()?, u32::try_from(end).ok()?);
    Some(u64::from(first) << 32 | u64::from(end))
}

fn overlaps(slot: u64, write: u64) -> bool {
    let (a0, a1) = (slot >> 32, slot & 0xffff_ffff);
    let (b0, b1) = (write >> 32, write & 0xffff_ffff);
    a0 < b1 && b0 < a1
}

impl Control {
    /// Called by a writer after it stored `len` bytes at `offset` of this PE's segment with
    /// plain stores (or a release store).
    #[inline]
    pub(crate) fn notify(&self, offset: usize, len: usize) {
        fence(Ordering::SeqCst);
        self.wake(offset, len);
    }

    /// Called by a writer after a sequentially consistent read-modify-write of the word at
    /// `offset`: the write and the sleepers' announcement are both in the single total order of
    /// sequentially consistent operations, so no fence is needed between them (see the tests).
    #[inline]
    pub(crate) fn notify_rmw(&self, offset: usize, len: usize) {
        self.wake(offset, len);
    }

    #[inline]
    fn wake(&self, offset: usize, len: usize) {
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        let wake = self.everything.load(Ordering::Relaxed) > 0 || {
            let written = lines(offset, len.max(1)).unwrap_or(u64::from(u32::MAX));
            self.slots.iter().any(|s| {
                let v = s.load(Ordering::Relaxed);
                v != 0 && overlaps(v, written)
            })
        };
        if wake {
            self.seq.fetch_add(1, Ordering::Release);
            // `i32::MAX`, not `u32::MAX`: the kernel reads the count as a signed int.
            let _ = rustix::thread::futex::wake(
                &self.seq,
                rustix::thread::futex::Flags::empty(),
                i32::MAX as u32,
            );
        }
    }

    /// Sleeps until a writer to the `len` bytes at `offset` notifies, `timeout` passes, or
    /// `still_waiting` (re-checked after announcing the sleep) returns false. Spurious returns
    /// are allowed.
    pub(crate) fn sleep(
        &self,
        offset: usize,
        len: usize,
        timeout: Duration,
        still_waiting: &mut dyn FnMut() -> bool,
    ) {
        let slot = lines(offset, len).and_then(|packed| {
            self.slots.iter().find(|s| {
                s.compare_exchange(0, packed, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            })
        });
        if slot.is_none() {
            self.everything.fetch_add(1, Ordering::Relaxed);
        }
        // The release half of this RMW publishes the slot (or the count) to writers that read
        // `sleepers` with acquire ordering.
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
        match slot {
            Some(s) => s.store(0, Ordering::Release),
            None => {
                self.everything.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn line_ranges() {
        assert_eq!(lines(0, 8), Some(1));
        assert_eq!(lines(64, 64), Some(1 << 32 | 2));
        assert_eq!(lines(60, 8), Some(2));
        assert!(overlaps(lines(64, 8).unwrap(), lines(100, 4).unwrap()));
        assert!(!overlaps(lines(64, 8).unwrap(), lines(128, 4).unwrap()));
        assert_eq!(lines(0, usize::MAX), None);
    }

    /// Ping-pong: the writer publishes value i only after the waiter acknowledged i - 1, so
    /// nearly every round has the waiter asleep when the value arrives. A lost wake-up shows as
    /// a sleep lasting the whole 5 s timeout.
    fn ping_pong(watch: (usize, usize)) {
        const N: u64 = 2000;
        let ctl = Arc::new(Control::default());
        let data = Arc::new(AtomicU64::new(0));
        let ack = Arc::new(AtomicU64::new(0));
        let (c2, d2, a2) = (ctl.clone(), data.clone(), ack.clone());
        let writer = std::thread::spawn(move || {
            for i in 1..=N {
                while a2.load(Ordering::Acquire) != i - 1 {
                    std::thread::yield_now();
                }
                d2.store(i, Ordering::Release);
                c2.notify(128, 8);
            }
        });
        let mut longest = Duration::ZERO;
        for i in 1..=N {
            while data.load(Ordering::Acquire) < i {
                let t = Instant::now();
                ctl.sleep(watch.0, watch.1, Duration::from_secs(5), &mut || {
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

    #[test]
    fn eventcount_never_loses_a_wake_up_with_a_watched_range() {
        ping_pong((128, 8));
    }

    #[test]
    fn eventcount_never_loses_a_wake_up_watching_everything() {
        ping_pong((0, usize::MAX));
    }

    #[test]
    fn writes_elsewhere_do_not_wake() {
        let ctl = Arc::new(Control::default());
        let c2 = ctl.clone();
        let sleeper = std::thread::spawn(move || {
            let t = Instant::now();
            c2.sleep(4096, 8, Duration::from_millis(300), &mut || true);
            t.elapsed()
        });
        // Keep writing to other lines while it sleeps.
        let end = Instant::now() + Duration::from_millis(150);
        while Instant::now() < end {
            ctl.notify(0, 64);
            ctl.notify(8192, 1024);
        }
        let slept = sleeper.join().unwrap();
        assert!(
            slept >= Duration::from_millis(250),
            "an unrelated write woke the sleeper after {slept:?}"
        );
    }
}
