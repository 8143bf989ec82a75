//! The synchronisation algorithms every transport has by default: a polling wait, a wait on a
//! typed word, and the core's barrier. A transport may replace any of them (the simulator
//! sleeps on futexes; CANN has a barrier of its own).

use std::fmt;
use std::time::{Duration, Instant};

use crate::{
    BarrierSpec, Signal, SignalOp, Transport, TransportError, WaitWord, Watch, Watchdog, Width,
};

/// The radix of the barrier tree: rank `r`'s children are `r * RADIX + 1 ..= r * RADIX + RADIX`.
pub const RADIX: u32 = 8;

/// How often a polling wait consults its watchdog.
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// What a wait does when its watchdog ends it with `e`: a condition that holds, or comes to
/// hold within a short grace after a peer's death, wins, so that a satisfied wait never fails
/// because a peer died just after doing its part (a PE released from a barrier that then
/// crashes, while the release of the others is still on its way).
pub fn settle(
    e: TransportError,
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    const GRACE: Duration = Duration::from_millis(200);
    let grace = matches!(e, TransportError::PeerLost { .. }).then(|| Instant::now() + GRACE);
    loop {
        if pred()? {
            return Ok(());
        }
        match grace {
            Some(end) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
            _ => return Err(e),
        }
    }
}

/// Polls `pred` until it holds: a few spins, then yields, then sleeps of growing length (up to
/// 1 ms), consulting `watchdog` at least every 10 ms.
///
/// ```
/// use shmem_backend::{Patient, sync};
/// let mut n = 0;
/// sync::poll(&Patient, &"a counter", &mut || { n += 1; Ok(n == 100) }).unwrap();
/// assert_eq!(n, 100);
/// ```
pub fn poll(
    watchdog: &dyn Watchdog,
    what: &dyn fmt::Display,
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    if pred()? {
        return Ok(());
    }
    let start = Instant::now();
    let mut last_check = start;
    let mut pause = Duration::from_micros(1);
    for round in 0u32.. {
        if round < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        if pred()? {
            return Ok(());
        }
        let now = Instant::now();
        if now - last_check >= CHECK_EVERY {
            last_check = now;
            if let Err(e) = watchdog.check(now - start, what) {
                return settle(e, pred);
            }
        }
    }
    unreachable!("the loop only ends by returning")
}

/// Waits on the host until the word `w` of `t`'s own segment compares true, and returns the
/// value that did.
///
/// # Safety
///
/// The word is aligned to its width and lies inside the segment.
pub unsafe fn wait_word<T: Transport>(
    t: &T,
    w: WaitWord,
    what: &dyn fmt::Display,
) -> Result<u64, TransportError> {
    let width = w.kind.width();
    let mut seen = 0;
    let watch = Watch {
        at_least: w.count.then_some(w.value),
        ..Watch::word(w.offset, width)
    };
    t.wait_local(watch, what, &mut || {
        // SAFETY: the caller guarantees the word is aligned and inside the segment.
        seen = unsafe { t.load(w.offset, width) }?;
        Ok(w.kind.compare(w.cmp, seen, w.value))
    })?;
    Ok(seen)
}

/// The core's barrier: a tree of radix [`RADIX`] over the members. Every PE waits until its
/// children have signal-added one to its arrival word for this epoch, signals its parent,
/// waits until the parent has signal-set its release word to the epoch, and releases its own
/// children. Counts and epochs only grow, so no word is reset between barriers. With up to
/// `RADIX + 1` members the tree is a single root: two phases, which matters when PEs outnumber
/// cores (every phase costs each waiting PE one trip through the scheduler). It uses only
/// [`Transport::signal`] and waits, so it runs on any transport.
///
/// # Safety
///
/// Every member is below `t.n_pes()`, and the arrival and release words are aligned 64-bit
/// words inside the segment.
pub unsafe fn tree_barrier<T: Transport>(
    t: &T,
    q: &T::Queue,
    b: &BarrierSpec,
    what: &dyn fmt::Display,
) -> Result<(), TransportError> {
    let n = b.size;
    if n <= 1 {
        return Ok(());
    }
    let (r, e) = (b.rank, b.epoch);
    let first_child = r * RADIX + 1;
    let children = if first_child < n {
        (n - first_child).min(RADIX)
    } else {
        0
    };
    let at_least = WaitWord::count;
    if children > 0 {
        // SAFETY: the arrival word is aligned and in the segment (this function's contract).
        unsafe { wait_word(t, at_least(b.arrive, e * u64::from(children)), what) }?;
    }
    if r != 0 {
        let arrive = Signal {
            offset: b.arrive,
            width: Width::W64,
            op: SignalOp::Add,
            value: 1,
        };
        // SAFETY: the parent is a member, so a PE of the instance; the word is in bounds.
        unsafe { t.signal(q, b.pe((r - 1) / RADIX), arrive) }?;
        // SAFETY: as above.
        unsafe { wait_word(t, at_least(b.release, e), what) }?;
    }
    let release = Signal {
        offset: b.release,
        width: Width::W64,
        op: SignalOp::Set,
        value: e,
    };
    for c in first_child..first_child + children {
        // SAFETY: every child is a member (c < n), so a PE of the instance.
        unsafe { t.signal(q, b.pe(c), release) }?;
    }
    Ok(())
}
