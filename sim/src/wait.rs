//! Waiting for a condition on this PE's own segment: spin, then yield, then sleep on the
//! segment's futex, as the resolved [`WaitPhases`] say.

use std::fmt;
use std::time::Instant;

use shmem_backend::{TransportError, Watch, Watchdog};

use crate::control::Control;
use crate::settings::WaitPhases;

/// Blocks until `pred` holds or fails, or the watchdog ends the wait.
pub(crate) fn wait_until(
    control: &Control,
    watch: Watch,
    phases: WaitPhases,
    watchdog: &dyn Watchdog,
    what: &dyn fmt::Display,
    pred: &mut dyn FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    if pred()? {
        return Ok(());
    }
    // From here on this thread may be waiting for held stream work.
    crate::stream::release_held();
    let start = Instant::now();
    if !phases.spin.is_zero() {
        let end = start + phases.spin;
        loop {
            for _ in 0..64 {
                std::hint::spin_loop();
                if pred()? {
                    return Ok(());
                }
            }
            if Instant::now() >= end {
                break;
            }
        }
    }
    if !phases.yield_for.is_zero() {
        let end = Instant::now() + phases.yield_for;
        loop {
            std::thread::yield_now();
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
        control.sleep(
            watch.offset,
            watch.len,
            watch.at_least,
            phases.sleep_chunk,
            &mut || match pred() {
                Ok(done) => !done,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            },
        );
        if let Some(e) = failed {
            return Err(e);
        }
        if pred()? {
            return Ok(());
        }
    }
}
