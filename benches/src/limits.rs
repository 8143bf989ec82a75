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

/// The CPUs this thread may run on, lowest first (none when the set cannot be read).
fn allowed_cpus() -> Vec<usize> {
    use rustix::thread::{CpuSet, sched_getaffinity};
    sched_getaffinity(None)
        .map(|set| (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect())
        .unwrap_or_default()
}

/// Pins the calling thread to `cpu`; whether that worked.
fn pin_to(cpu: usize) -> bool {
    use rustix::thread::{CpuSet, sched_setaffinity};
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).is_ok()
}

/// Seconds per `bytes` copied by `threads` threads at once, each `memcpy`ing its share between
/// hot private buffers of its own: the aggregate bandwidth of that many cores. Each thread is
/// pinned to a CPU of its own where the process may use that many (left to the scheduler, two
/// threads of a 2-CPU VM shared one CPU in some batches and not in others).
pub fn memcpy_parallel(bytes: usize, threads: usize) -> f64 {
    let cpus = allowed_cpus();
    let share = bytes.div_ceil(threads.max(1));
    let reps = (64usize << 20)
        .checked_div(bytes)
        .unwrap_or(1)
        .clamp(8, 200_000);
    let mut buffers: Vec<(Vec<u8>, Vec<u8>)> = (0..threads)
        .map(|_| (vec![1u8; share], vec![0u8; share]))
        .collect();
    median_per_op(9, reps, || {
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|s| {
            for (k, (src, dst)) in buffers.iter_mut().enumerate() {
                let start = &start;
                let cpu = (cpus.len() >= threads).then(|| cpus[k]);
                s.spawn(move || {
                    // Unpinned, the figure is the scheduler's placement's.
                    if let Some(cpu) = cpu {
                        pin_to(cpu);
                    }
                    start.wait();
                    for _ in 0..reps {
                        dst.copy_from_slice(black_box(src));
                        black_box(&mut *dst);
                    }
                });
            }
        });
    })
}

/// Seconds per hand-off between two threads pinned to the same CPU that pass a turn back and
/// forth with `sched_yield`: the least a switch from one waiting thread (or block, or PE) to
/// another costs when they outnumber the cores. `None` when the threads cannot be pinned.
pub fn same_core_yield_handoff() -> Option<f64> {
    const TURNS: u64 = 20_000;
    let cpu = *allowed_cpus().first()?;
    let turn = AtomicU64::new(0);
    let unpinned = std::sync::atomic::AtomicBool::new(false);
    let pinned = std::sync::Barrier::new(2);
    // Each thread waits for its parity and passes the turn on; `TURNS` hand-offs in all.
    let play = |parity: u64| -> Option<f64> {
        if !pin_to(cpu) {
            unpinned.store(true, Ordering::Relaxed);
        }
        pinned.wait();
        if unpinned.load(Ordering::Relaxed) {
            return None;
        }
        let t = std::time::Instant::now();
        loop {
            let now = turn.load(Ordering::Acquire);
            if now >= TURNS {
                return Some(t.elapsed().as_secs_f64());
            }
            if now % 2 == parity {
                turn.store(now + 1, Ordering::Release);
            }
            rustix::thread::sched_yield();
        }
    };
    // Both on threads of their own: a thread keeps its affinity, and the caller's must stay.
    let (a, b) = std::thread::scope(|s| {
        let (one, other) = (s.spawn(|| play(0)), s.spawn(|| play(1)));
        (one.join().ok().flatten(), other.join().ok().flatten())
    });
    Some(a?.max(b?) / TURNS as f64)
}
