//! Waiting for a condition on this PE's own segment: spin, then yield, then sleep on the
//! segment's futex, as the resolved [`WaitPhases`] say.

use std::time::{Duration, Instant};

use shmem_backend::{TransportError, WaitCtl, Watch};

use crate::control::Control;
use crate::settings::WaitPhases;

/// Blocks until `pred` holds, the deadline passes, or the liveness check fails.
pub(crate) fn wait_until(
    control: &Control,
    watch: Watch,
    phases: WaitPhases,
    pred: &mut dyn FnMut() -> bool,
    ctl: &WaitCtl<'_>,
) -> Result<(), TransportError> {
    if pred() {
        return Ok(());
    }
    let start = Instant::now();
    if !phases.spin.is_zero() {
        let end = start + phases.spin;
        loop {
            for _ in 0..64 {
                std::hint::spin_loop();
                if pred() {
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
            if pred() {
                return Ok(());
            }
            if Instant::now() >= end {
                break;
            }
        }
    }
    loop {
        let now = Instant::now();
        let mut chunk = phases.sleep_chunk;
        if let Some(deadline) = ctl.deadline {
            if now >= deadline {
                return Err(TransportError::Timeout {
                    what: ctl.what.to_string(),
                    seconds: (now - start).as_secs_f64(),
                });
            }
            chunk = chunk.min(deadline - now);
        }
        (ctl.liveness)()?;
        control.sleep(
            watch.offset,
            watch.len,
            chunk.max(Duration::from_micros(1)),
            &mut || !pred(),
        );
        if pred() {
            return Ok(());
        }
    }
}
