//! Waiting for a condition on this PE's own segment: spin, then yield, then sleep on the
//! segment's futex, as the resolved [`WaitPhases`] say.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use shmem_backend::{TransportError, Watch, Watchdog};

use crate::control::Control;
use crate::settings::WaitPhases;

/// Where a waiter sleeps once it has spun and yielded.
pub(crate) enum Sleep<'a> {
    /// On a segment's control block, watching part of the segment: writers there wake it.
    Control(&'a Control, Watch),
    /// On a 32-bit word that changes whenever the condition may have changed; the writer that
    /// makes the condition hold wakes every sleeper (a `futex` wake) if `sleepers`, which each
    /// sleeper counts itself in with a sequentially consistent add before it reads the word,
    /// is not zero after its own sequentially consistent update.
    Futex {
        word: &'a AtomicU32,
        sleepers: &'a AtomicU64,
    },
}

/// Blocks until `pred` holds or fails, or the watchdog ends the wait.
///
/// The first try is inlined into the caller and the rest ([`wait_longer`]) is not: with more
/// PEs than CPUs every turn of a waiting PE starts with cold caches and TLBs, and a barrier
/// turn that runs through fewer code pages costs fewer page walks (at 1,024 PEs on 2 CPUs a
/// turn is a few microseconds, most of it such misses).
#[inline]
pub(crate) fn wait_until(
    sleep: Sleep<'_>,
    phases: WaitPhases,
    watchdog: &dyn Watchdog,
    what: &dyn fmt::Display,
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    if pred()? {
        return Ok(());
    }
    // The first try of the first phase comes before anything else (the clock, held stream
    // work): it usually ends the wait. Spinning, the other PE's write often lands during the
    // first few iterations, and a clock read first delayed the 2-PE barrier by a tenth;
    // yielding with more PEs than CPUs, the others have had their turn when this one runs
    // again (at 1,024 PEs on 2 CPUs each turn starts with cold caches, and two clock reads
    // were 8% of a barrier's time).
    if !phases.spin.is_zero() {
        if spin_a_while(pred)? {
            return Ok(());
        }
    } else if !phases.yield_for.is_zero() {
        yield_cpu();
        if pred()? {
            return Ok(());
        }
    }
    wait_longer(sleep, phases, watchdog, what, pred)
}

/// Whether `pred` holds within 64 spins.
#[inline]
fn spin_a_while(
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<bool, TransportError> {
    for _ in 0..64 {
        std::hint::spin_loop();
        if pred()? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Gives the CPU to another runnable thread: the system call itself, with no library call
/// (and no page of the C library's code) on the way.
#[inline]
fn yield_cpu() {
    rustix::thread::sched_yield();
}

/// [`wait_until`] after its first try: spin, yield and sleep for as long as the phases say.
#[inline(never)]
fn wait_longer(
    sleep: Sleep<'_>,
    phases: WaitPhases,
    watchdog: &dyn Watchdog,
    what: &dyn fmt::Display,
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    // From here on this thread may be waiting for held stream work.
    crate::stream::release_held();
    let start = Instant::now();
    if !phases.spin.is_zero() {
        let end = start + phases.spin;
        loop {
            if spin_a_while(pred)? {
                return Ok(());
            }
            if Instant::now() >= end {
                break;
            }
        }
    }
    if !phases.yield_for.is_zero() {
        let end = Instant::now() + phases.yield_for;
        loop {
            yield_cpu();
            if pred()? {
                return Ok(());
            }
            if Instant::now() >= end {
                break;
            }
        }
    }
    loop {
        if let Err(e) = watchdog.check(start.elapsed(), what) {
            return shmem_backend::sync::settle(e, pred);
        }
        let mut failed = None;
        let mut still_waiting = || match pred() {
            Ok(done) => !done,
            Err(e) => {
                failed = Some(e);
                false
            }
        };
        match sleep {
            Sleep::Control(control, watch) => control.sleep(
                watch.offset,
                watch.len,
                watch.at_least,
                phases.sleep_chunk,
                &mut still_waiting,
            ),
            Sleep::Futex { word, sleepers } => {
                // Either the writer sees this sleeper counted, or this sleeper sees the write.
                // The word is read before the condition: a change in between fails the wait
                // at once (EAGAIN), and a wake after it finds this thread queued.
                sleepers.fetch_add(1, Ordering::SeqCst);
                let seen = word.load(Ordering::SeqCst);
                if still_waiting() {
                    let chunk = phases.sleep_chunk;
                    let ts = rustix::time::Timespec {
                        tv_sec: chunk.as_secs() as i64,
                        tv_nsec: i64::from(chunk.subsec_nanos()),
                    };
                    // A shared futex: the word lies in memory shared between processes.
                    let _ = rustix::thread::futex::wait(
                        word,
                        rustix::thread::futex::Flags::empty(),
                        seen,
                        Some(&ts),
                    );
                }
                sleepers.fetch_sub(1, Ordering::SeqCst);
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if pred()? {
            return Ok(());
        }
    }
}
