//! Library information and the profiling control: `shmem_info_get_version`,
//! `shmem_info_get_name` and `shmem_pcontrol`.
//!
//! ```
//! assert_eq!(shmem::info_get_version(), (1, 6));
//! assert!(shmem::info_get_name().len() < shmem::MAX_NAME_LEN);
//! shmem::pcontrol(0); // profiling off: there is no profiling library, so nothing changes
//! ```

use std::sync::atomic::{AtomicI32, Ordering};

/// `SHMEM_MAJOR_VERSION`: the OpenSHMEM specification this library implements.
pub const MAJOR_VERSION: i32 = 1;
/// `SHMEM_MINOR_VERSION`.
pub const MINOR_VERSION: i32 = 6;
/// `SHMEM_MAX_NAME_LEN`: the longest vendor name, with its terminating NUL.
pub const MAX_NAME_LEN: usize = 256;
/// `SHMEM_VENDOR_STRING`.
pub const VENDOR_STRING: &str = concat!(
    "shmem-rs ",
    env!("CARGO_PKG_VERSION"),
    " (CANN SHMEM semantics, OpenSHMEM 1.6)"
);

/// The OpenSHMEM version implemented (`shmem_info_get_version`).
pub fn info_get_version() -> (i32, i32) {
    (MAJOR_VERSION, MINOR_VERSION)
}

/// The vendor name (`shmem_info_get_name`), shorter than [`MAX_NAME_LEN`].
pub fn info_get_name() -> &'static str {
    VENDOR_STRING
}

static PCONTROL_LEVEL: AtomicI32 = AtomicI32::new(1);

/// Sets the profiling level (`shmem_pcontrol`): 0 disables profiling, 1 enables it at the
/// default detail, 2 at the profiling library's full detail, other values are the library's
/// own. No profiling library is attached to this implementation, so the level is recorded (see
/// [`pcontrol_level`]) and changes nothing else, which is what the specification asks of an
/// implementation without one.
pub fn pcontrol(level: i32) {
    PCONTROL_LEVEL.store(level, Ordering::Relaxed);
    tracing::debug!("shmem_pcontrol({level}): no profiling library is attached");
}

/// The level last set by [`pcontrol`] (1, profiling enabled, before any call).
pub fn pcontrol_level() -> i32 {
    PCONTROL_LEVEL.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_fits_the_c_buffer() {
        assert!(info_get_name().len() < MAX_NAME_LEN);
        assert!(info_get_name().is_ascii());
    }

    #[test]
    fn pcontrol_records_the_level() {
        pcontrol(2);
        assert_eq!(pcontrol_level(), 2);
        pcontrol(1);
    }
}
