//! The symmetric heap: `shmem_malloc`, `shmem_calloc`, `shmem_align`, `shmem_realloc`,
//! `shmem_free`. Each is collective over the default instance; a failure gives NULL (and is
//! logged), with the heap unchanged on every PE.

use std::ffi::c_void;

use shmem_capi::raw;
use shmem_core::{Instance, Result};

use crate::boundary::call;
use crate::world::{offset, world};

/// Heap offset `off` of `w`, as an address.
#[inline(always)]
fn address(w: &Instance, off: usize) -> *mut c_void {
    w.heap_base().wrapping_add(off).cast()
}

/// The block that `alloc` makes on the default instance, by address.
#[inline(always)]
fn allocate(alloc: impl FnOnce(&Instance) -> Result<usize>) -> Result<*mut c_void> {
    let w = world()?;
    Ok(address(w, alloc(w)?))
}

/// `shmem_malloc`: NULL for a size of 0 (after taking part in the collective).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    call("shmem_malloc", std::ptr::null_mut(), || {
        allocate(|w| raw::malloc(w, size))
    })
}

/// `shmem_calloc`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    call("shmem_calloc", std::ptr::null_mut(), || {
        allocate(|w| raw::calloc(w, count, size))
    })
}

/// `shmem_align`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    call("shmem_align", std::ptr::null_mut(), || {
        allocate(|w| raw::align(w, alignment, size))
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
            Some(off) => Ok(address(w, off)),
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
        // The allocator knows every block: an address that starts none (outside the heap, in
        // the library's reserved blocks, inside a block) is refused by the collective free,
        // which every PE still runs in step.
        raw::free(w, (ptr as usize).wrapping_sub(w.heap_base() as usize))
    })
}

/// `shmem_malloc_with_hints`: as `shmem_malloc`; every block is placed the same way on the
/// simulator, so the hints (and unknown hint bits, which OpenSHMEM requires to be ignored)
/// change nothing.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: std::ffi::c_long) -> *mut c_void {
    let _ = hints;
    call("shmem_malloc_with_hints", std::ptr::null_mut(), || {
        allocate(|w| raw::malloc(w, size))
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
