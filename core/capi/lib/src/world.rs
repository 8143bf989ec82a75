//! The default instance of a C program, and symmetric addresses as the Rust core sees them.

use std::ffi::c_void;
use std::sync::OnceLock;

use shmem_core::{Error, Instance, Result};

static WORLD: OnceLock<Instance> = OnceLock::new();

/// The default instance, once `shmem_init` has created it.
#[inline]
pub(crate) fn world() -> Result<&'static Instance> {
    WORLD.get().ok_or(Error::NotInitialized { instance_id: 0 })
}

/// Keeps `inst` as the default instance; false if there already is one.
pub(crate) fn set_world(inst: Instance) -> bool {
    WORLD.set(inst).is_ok()
}

/// The heap offset of the `len` bytes at symmetric address `addr`.
#[inline]
pub(crate) fn offset(inst: &Instance, addr: *const c_void, len: usize) -> Result<usize> {
    inst.offset_of(addr.cast(), len)
        .ok_or_else(|| outside(addr, len))
}

#[cold]
fn outside(addr: *const c_void, len: usize) -> Error {
    Error::InvalidParam(format!(
        "{len} bytes at {addr:p} do not lie in the symmetric heap"
    ))
}

/// A PE number from C.
#[inline]
pub(crate) fn pe(pe: std::ffi::c_int) -> Result<u32> {
    u32::try_from(pe).map_err(|_| Error::InvalidPe {
        pe: i64::from(pe),
        n_pes: world().map_or(0, Instance::n_pes),
    })
}
