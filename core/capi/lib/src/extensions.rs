//! The library's extensions to OpenSHMEM (`shmemx.h`).

use std::sync::OnceLock;
use std::time::Instant;

/// `shmemx_wtime`: seconds on a monotonic clock since a fixed point of this process (the
/// first call), usable before `shmem_init`.
#[unsafe(no_mangle)]
pub extern "C" fn shmemx_wtime() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}
