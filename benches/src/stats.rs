//! Medians over batches: this machine is noisy (host stalls of up to 143 ms were measured), so
//! every figure is the median of several batch means, never a single run or a maximum.

use std::time::Instant;

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The environment variable of `shmem-bench --smoke`, which the PEs it launches inherit.
pub const SMOKE: &str = "SHMEM_BENCH_SMOKE";

/// Whether this is a smoke run (`shmem-bench --smoke`): every measurement runs once, to show it
/// works, not to measure.
pub fn smoke() -> bool {
    static SMOKE_RUN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SMOKE_RUN.get_or_init(|| std::env::var_os(SMOKE).is_some())
}

/// Runs `batch` (which performs `per_batch` operations) `batches` times after one warm-up, and
/// returns the median time per operation in seconds. A smoke run makes one batch and no
/// warm-up.
pub fn median_per_op(batches: usize, per_batch: usize, mut batch: impl FnMut()) -> f64 {
    let batches = if smoke() { 1 } else { batches };
    if !smoke() {
        batch();
    }
    let mut times: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            batch();
            t.elapsed().as_secs_f64() / per_batch as f64
        })
        .collect();
    median(&mut times)
}

/// Formats seconds as microseconds with sensible precision.
pub fn us(seconds: f64) -> String {
    let u = seconds * 1e6;
    if u < 1.0 {
        format!("{u:.3} us")
    } else if u < 100.0 {
        format!("{u:.2} us")
    } else {
        format!("{u:.0} us")
    }
}

/// Formats bytes per second as GB/s (10^9).
pub fn gbps(bytes: usize, seconds: f64) -> String {
    format!("{:.1} GB/s", bytes as f64 / seconds / 1e9)
}

/// Formats a time per operation as millions of operations per second.
pub fn mops(seconds: f64) -> String {
    format!("{:.1} Mops/s", 1e-6 / seconds)
}

/// Formats a byte count as `8 B`, `4 KiB`, `1 MiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(size(4096), "4 KiB");
        assert_eq!(size(8), "8 B");
        assert_eq!(mops(1e-7), "10.0 Mops/s");
    }
}
