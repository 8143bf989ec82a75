//! The machine's physical limits, measured in the same run as the library: single-thread
//! memcpy of a given size, and the round trip of one cache line between two cores.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::stats::median_per_op;

/// Seconds per single-thread `memcpy` of `bytes` between two hot private buffers.
pub fn memcpy(bytes: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let reps = (64usize << 20)
        .checked_div(bytes)
        .unwrap_or(1)
        .clamp(8, 200_000);
    median_per_op(9, reps, || {
        for _ in 0..reps {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        }
    })
}

#[repr(align(128))]
struct Line(AtomicU64);

/// Seconds per round trip of one cache line between two threads (which the scheduler places
/// on the two cores when they are free): the floor of any PE-to-PE notification.
pub fn cache_line_round_trip() -> f64 {
    const ROUNDS: u64 = 20_000;
    let line = Arc::new(Line(AtomicU64::new(0)));
    let peer = line.clone();
    let stop = u64::MAX;
    let t = std::thread::spawn(move || {
        loop {
            let v = peer.0.load(Ordering::Acquire);
            if v == stop {
                break;
            }
            if v % 2 == 1 {
                peer.0.store(v + 1, Ordering::Release);
            }
            std::hint::spin_loop();
        }
    });
    let mut next = 1u64;
    let per = median_per_op(9, ROUNDS as usize, || {
        for _ in 0..ROUNDS {
            line.0.store(next, Ordering::Release);
            while line.0.load(Ordering::Acquire) != next + 1 {
                std::hint::spin_loop();
            }
            next += 2;
        }
    });
    line.0.store(stop, Ordering::Release);
    let _ = t.join();
    per
}
