//! The symmetric heap: `shmem_malloc`, `shmem_calloc`, `shmem_align`, `shmem_realloc`,
//! `shmem_free`. Each is collective over the default instance; a failure gives NULL (and is
//! logged), with the heap unchanged on every PE.

use std::ffi::c_void;

use shmem_capi::raw;

use crate::boundary::call;
use crate::world::{offset, world};

fn address(off: usize) -> shmem_core::Result<*mut c_void> {
    Ok(world()?.heap_base().wrapping_add(off).cast())
}

/// `size` bytes of the default instance's heap, by address.
#[inline(always)]
fn malloc(size: usize) -> shmem_core::Result<*mut c_void> {
    let w = world()?;
    Ok(w.heap_base().wrapping_add(raw::malloc(w, size)?).cast())
}

/// `shmem_malloc`: NULL for a size of 0 (after taking part in the collective).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    call("shmem_malloc", std::ptr::null_mut(), || malloc(size))
}

/// `shmem_calloc`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    call("shmem_calloc", std::ptr::null_mut(), || {
        address(raw::calloc(world()?, count, size)?)
    })
}

/// `shmem_align`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    call("shmem_align", std::ptr::null_mut(), || {
        address(raw::align(world()?, alignment, size)?)
    })
}

/// `shmem_realloc`: NULL `ptr` allocates; a size of 0 frees and gives NULL.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    call("shmem_realloc", std::ptr::null_mut(), || {
        let w = world()?;
        let old = if ptr.is_null() {
            None
        } else {
            Some(offset(w, ptr, 0)?)
        };
        match raw::realloc(w, old, size)? {
            Some(off) => address(off),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// `shmem_free`: NULL does nothing (still collective, as every PE calls it).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    call("shmem_free", (), || {
        let w = world()?;
        if ptr.is_null() {
            return w.barrier_all();
        }
        raw::free(w, offset(w, ptr, 0)?)
    })
}

/// `shmem_malloc_with_hints`: as `shmem_malloc`; every block is placed the same way on the
/// simulator, so the hints (and unknown hint bits, which OpenSHMEM requires to be ignored)
/// change nothing.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: std::ffi::c_long) -> *mut c_void {
    let _ = hints;
    call("shmem_malloc_with_hints", std::ptr::null_mut(), || {
        malloc(size)
    })
}

/// `shmalloc` (deprecated): `shmem_malloc`.
#[unsafe(no_mangle)]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    shmem_malloc(size)
}

/// `shfree` (deprecated): `shmem_free`.
#[unsafe(no_mangle)]
pub extern "C" fn shfree(ptr: *mut c_void) {
    shmem_free(ptr)
}

/// `shrealloc` (deprecated): `shmem_realloc`.
#[unsafe(no_mangle)]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    shmem_realloc(ptr, size)
}

/// `shmemalign` (deprecated): `shmem_align`.
#[unsafe(no_mangle)]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    shmem_align(alignment, size)
}
