//! The simulator's per-PE control block: an event count that lets a waiting PE sleep on a futex
//! and be woken by a peer that writes into the part of its segment it waits on.
//!
//! The protocol (a classic event count, checked by the tests below):
//! - A sleeper announces what it watches: it claims one of [`SLOTS`] slots and stores the range
//!   of 64-byte lines its condition reads (or, with no slot free or a range too large to
//!   encode, counts itself as watching everything), then increments `sleepers`, fences, reads
//!   `seq`, re-checks its condition, and sleeps on `seq` only if the value is unchanged. A
//!   sleeper that waits for a 64-bit count to reach a value (the barriers' and collectives'
//!   counters) stores the word and the value instead, in the same slot word.
//! - A writer stores its data, fences, and reads `sleepers`. Only if someone sleeps does it look
//!   at the slots, and only if its write touches a watched line does it bump `seq` and wake the
//!   futex; an update of a watched count wakes only once the count reaches the value watched
//!   for. So a stream of puts to a PE that sleeps in a barrier costs one fence and a few loads
//!   of a cache line that stays shared, and `n` signals that count towards `n` wake the sleeper
//!   once; nobody is woken for data it does not wait on.
//!
//! Either the writer sees the sleeper and its range (and wakes it when they overlap), or the
//! sleeper sees the data. Stores made without the transport (through `shmem_ptr` addresses)
//! wake nobody; sleepers re-check at least every sleep chunk, so they notice them late but
//! surely.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::time::Duration;

/// Bytes of one PE's control block in the instance's table of them.
pub(crate) const CONTROL_SIZE: usize = 64;
/// Watch slots: the most sleepers of one PE whose watched ranges are tracked exactly.
pub(crate) const SLOTS: usize = 6;
const LINE: usize = 64;

/// A PE's control block.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub(crate) struct Control {
    /// Bumped by writers that wake someone.
    seq: AtomicU32,
    /// Threads of the owning PE that are (about to be) asleep on `seq`.
    sleepers: AtomicU32,
    /// Sleepers that watch the whole segment.
    everything: AtomicU32,
    /// The owning PE's process id, for hang reports (0 until it has mapped the segments).
    pid: AtomicU32,
    /// Watched line ranges, `first << 32 | end` (`0` = free slot).
    slots: [AtomicU64; SLOTS],
}

const _: () = assert!(std::mem::size_of::<Control>() <= CONTROL_SIZE);
const _: () = assert!(std::mem::size_of::<Control>() == LINE);

/// A slot that holds a count watched for a value: bit 63, the word's index (its offset / 8) in
/// bits 62..31, the low 31 bits of the value in bits 30..0. Other slots hold line ranges, whose
/// first line is below 2^31.
const COUNT: u64 = 1 << 63;
const LOW31: u64 = (1 << 31) - 1;

/// The packed line range of `len` bytes at `offset`, if it can be encoded.
fn lines(offset: usize, len: usize) -> Option<u64> {
    if len == 0 || len == usize::MAX {
        return None;
    }
    let first = offset / LINE;
    let end = offset.checked_add(len)?.div_ceil(LINE);
    let first = u32::try_from(first)
        .ok()
        .filter(|&f| u64::from(f) < COUNT >> 32)?;
    let end = u32::try_from(end).ok()?;
    Some(u64::from(first) << 32 | u64::from(end))
}

/// The packed slot of a wait for the 64-bit word at `offset` to reach `value`, if it can be
/// encoded.
fn count(offset: usize, value: u64) -> Option<u64> {
    let index = u32::try_from(offset / 8)
        .ok()
        .filter(|_| offset.is_multiple_of(8))?;
    Some(COUNT | u64::from(index) << 31 | value & LOW31)
}

/// Whether a count now at `now` has reached the low 31 bits `want` of the value watched for
/// (counts grow by small steps, so the distance is judged modulo 2^31; a misjudged wait still
/// wakes at the end of its sleep chunk).
fn reached(now: u64, want: u64) -> bool {
    (now.wrapping_sub(want) & LOW31) < 1 << 30
}

/// Whether a write of `data` (a packed line range) and of `word` (offset, bytes, new value)
/// concerns the sleeper of `slot`.
fn concerns(slot: u64, data: Option<u64>, word: Option<(usize, usize, u64)>) -> bool {
    if slot & COUNT == 0 {
        let hit = |w: u64| overlaps(slot, w);
        return data.is_some_and(hit) || word.and_then(|(o, n, _)| lines(o, n)).is_some_and(hit);
    }
    let at = ((slot & !COUNT) >> 31) as usize * 8;
    let watched = lines(at, 8).expect("a count slot's word is encodable");
    if data.is_some_and(|d| overlaps(watched, d)) {
        return true;
    }
    match word {
        Some((o, 8, now)) if o == at => reached(now, slot & LOW31),
        Some((o, n, _)) => o < at + 8 && at < o + n,
        None => false,
    }
}

fn overlaps(slot: u64, write: u64) -> bool {
    let (a0, a1) = (slot >> 32, slot & 0xffff_ffff);
    let (b0, b1) = (write >> 32, write & 0xffff_ffff);
    a0 < b1 && b0 < a1
}

impl Control {
    /// Records the owning PE's process id (before the barrier that ends attaching, which
    /// orders it for every reader).
    pub(crate) fn set_pid(&self, pid: u32) {
        self.pid.store(pid, Ordering::Release);
    }

    /// The owning PE's process id, once recorded.
    pub(crate) fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Acquire)).filter(|&p| p != 0)
    }

    /// Called by a writer after it stored `len` bytes at `offset` of this PE's segment with
    /// plain stores (or a release store).
    #[inline]
    pub(crate) fn notify(&self, offset: usize, len: usize) {
        fence(Ordering::SeqCst);
        self.notify_rmw(offset, len);
    }

    /// Called by a writer after a sequentially consistent read-modify-write of the word at
    /// `offset`: the write and the sleepers' announcement are both in the single total order of
    /// sequentially consistent operations, so no fence is needed between them (see the tests).
    #[inline]
    pub(crate) fn notify_rmw(&self, offset: usize, len: usize) {
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            self.wake_for_data(offset, len);
        }
    }

    /// [`Control::wake_sleepers`] for a data write, its arguments in registers: the inline
    /// caller (every put) then needs no stack frame for them, and its copy no stack lines of
    /// its own beside the source's and destination's.
    #[cold]
    #[inline(never)]
    fn wake_for_data(&self, offset: usize, len: usize) {
        self.wake_sleepers(Some((offset, len)), None);
    }

    /// Called by a writer after it stored the `len` bytes at `data` (if any) and then updated
    /// the `width`-byte word at `word` to `now`, with a sequentially consistent read-modify-write
    /// (`rmw`) or a release store.
    #[inline]
    pub(crate) fn notify_word(
        &self,
        data: Option<(usize, usize)>,
        word: usize,
        width: usize,
        now: u64,
        rmw: bool,
    ) {
        if !rmw {
            fence(Ordering::SeqCst);
        }
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            self.wake_sleepers(data, Some((word, width, now)));
        }
    }

    /// Wakes the sleepers, if the write concerns one of them.
    #[cold]
    #[inline(never)]
    fn wake_sleepers(&self, data: Option<(usize, usize)>, word: Option<(usize, usize, u64)>) {
        let wake = self.everything.load(Ordering::Relaxed) > 0 || {
            let data = data.map(|(o, len)| lines(o, len.max(1)).unwrap_or(u64::from(u32::MAX)));
            self.slots.iter().any(|s| {
                let v = s.load(Ordering::Relaxed);
                v != 0 && concerns(v, data, word)
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

    /// Sleeps until a writer to the `len` bytes at `offset` notifies (with `at_least`, a
    /// writer that brings the 64-bit count there to that value or beyond), `timeout` passes, or
    /// `still_waiting` (re-checked after announcing the sleep) returns false. Spurious returns
    /// are allowed.
    pub(crate) fn sleep(
        &self,
        offset: usize,
        len: usize,
        at_least: Option<u64>,
        timeout: Duration,
        still_waiting: &mut dyn FnMut() -> bool,
    ) {
        let packed = match at_least {
            Some(v) if len == 8 => count(offset, v),
            _ => lines(offset, len),
        };
        let slot = packed.and_then(|packed| {
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
    fn ping_pong(watch: (usize, usize, Option<u64>)) {
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
                ctl.sleep(
                    watch.0,
                    watch.1,
                    watch.2,
                    Duration::from_secs(5),
                    &mut || data.load(Ordering::Acquire) < i,
                );
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
        ping_pong((128, 8, None));
    }

    #[test]
    fn eventcount_never_loses_a_wake_up_watching_everything() {
        ping_pong((0, usize::MAX, None));
    }

    #[test]
    fn count_slots_wake_when_the_count_reaches_the_value() {
        let slot = count(4096, 40).unwrap();
        assert_ne!(slot & COUNT, 0);
        let word = |now| Some((4096, 8, now));
        assert!(!concerns(slot, None, word(39)));
        assert!(concerns(slot, None, word(40)));
        assert!(concerns(slot, None, word(41)));
        // Counts beyond 2^31 compare by their low bits.
        let slot = count(4096, (5 << 31) + 7).unwrap();
        assert!(!concerns(slot, None, word((5 << 31) + 6)));
        assert!(concerns(slot, None, word((5 << 31) + 7)));
        // Another word, or a 32-bit write of the word, or data over it.
        assert!(!concerns(slot, None, Some((4104, 8, 1 << 40))));
        assert!(concerns(slot, None, Some((4100, 4, 0))));
        assert!(concerns(slot, lines(4096 - 64, 128), None));
        assert!(!concerns(slot, lines(8192, 64), None));
        // A range slot and a signal word inside it.
        let range = lines(4096, 8).unwrap();
        assert!(concerns(range, None, Some((4096, 8, 0))));
        assert!(!concerns(range, lines(0, 64), Some((8192, 8, 0))));
    }

    /// Many writers each add one to a count watched for their total: the sleeper wakes once
    /// the last add lands (and never sleeps through it).
    #[test]
    fn a_count_watched_for_its_total_is_not_lost() {
        const WRITERS: u64 = 4;
        const ROUNDS: u64 = 500;
        let ctl = Arc::new(Control::default());
        let word = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..WRITERS)
            .map(|_| {
                let (c, w) = (ctl.clone(), word.clone());
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let now = w.fetch_add(1, Ordering::SeqCst) + 1;
                        c.notify_word(None, 64, 8, now, true);
                        // Wait for the round to end before adding again.
                        while w.load(Ordering::Acquire) < now.div_ceil(WRITERS) * WRITERS {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut longest = Duration::ZERO;
        for round in 1..=ROUNDS {
            let want = round * WRITERS;
            while word.load(Ordering::Acquire) < want {
                let t = Instant::now();
                ctl.sleep(64, 8, Some(want), Duration::from_secs(5), &mut || {
                    word.load(Ordering::Acquire) < want
                });
                longest = longest.max(t.elapsed());
            }
        }
        for t in threads {
            t.join().unwrap();
        }
        assert!(
            longest < Duration::from_secs(4),
            "a sleep lasted {longest:?}: a wake-up was lost"
        );
    }

    #[test]
    fn writes_elsewhere_do_not_wake() {
        let ctl = Arc::new(Control::default());
        let c2 = ctl.clone();
        let sleeper = std::thread::spawn(move || {
            let t = Instant::now();
            c2.sleep(4096, 8, None, Duration::from_millis(300), &mut || true);
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
