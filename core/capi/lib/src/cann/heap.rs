//! CANN's queries and symmetric heap (`host/team/shmem_host_team.h`'s PE queries,
//! `host/mem/shmem_host_heap.h`, and `aclshmem_ptr`), on the active instance.
//!
//! The heap calls are collective, as in CANN: a refused size or alignment still takes part in
//! the barrier on every PE (the core's allocator agrees on failures), and returns NULL.

use std::ffi::{c_int, c_void};

use shmem_capi::{cann, raw};
use shmem_core::{Error, Instance, Result};

use super::failed;

/// `aclshmem_mem_type_t`'s `HOST_SIDE`.
const HOST_SIDE: c_int = 0;

/// `aclshmem_my_pe`: -1 before init.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_my_pe() -> c_int {
    if super::kernel::on_core() {
        return super::device::my_pe();
    }
    cann::my_pe()
}

/// `aclshmem_n_pes`: -1 before init.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_n_pes() -> c_int {
    if super::kernel::on_core() {
        return super::device::n_pes();
    }
    cann::n_pes()
}

/// Runs a heap call that returns an address (NULL on a failure, logged).
fn address(name: &str, f: impl FnOnce(&Instance) -> Result<Option<usize>>) -> *mut c_void {
    crate::boundary::enter();
    match cann::active().and_then(|inst| {
        let base = inst.heap_base();
        f(&inst).map(|off| off.map(|o| base.wrapping_add(o).cast::<c_void>()))
    }) {
        Ok(p) => p.unwrap_or(std::ptr::null_mut()),
        Err(e) => {
            failed(name, &e);
            std::ptr::null_mut()
        }
    }
}

/// The device heap only: `HOST_SIDE` needs a CANN built with memory-fabric handles, which the
/// simulator models as absent (CANN: "please update CANN version").
fn device_side(mem_type: c_int) -> Result<()> {
    if mem_type == HOST_SIDE {
        return Err(Error::NotSupported(
            "the host-side heap (HOST_SIDE) needs a CANN with memory-fabric handles; please update CANN version".into(),
        ));
    }
    Ok(())
}

/// `aclshmem_malloc`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_malloc(size: usize) -> *mut c_void {
    address("aclshmem_malloc", |i| raw::malloc(i, size).map(Some))
}

/// `aclshmem_calloc`: zeroed.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_calloc(nmemb: usize, size: usize) -> *mut c_void {
    address("aclshmem_calloc", |i| raw::calloc(i, nmemb, size).map(Some))
}

/// `aclshmem_align`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_align(alignment: usize, size: usize) -> *mut c_void {
    address("aclshmem_align", |i| {
        raw::align(i, alignment, size).map(Some)
    })
}

/// `aclshmem_free`: NULL is a no-op; an address not allocated is logged and changes nothing.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    address("aclshmem_free", |i| {
        let off = i
            .offset_of(ptr.cast(), 0)
            .ok_or_else(|| Error::InvalidParam(format!("{ptr:p} is not in the symmetric heap")))?;
        raw::free(i, off).map(|()| None)
    });
}

/// `aclshmemx_malloc`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_malloc(size: usize, mem_type: c_int) -> *mut c_void {
    address("aclshmemx_malloc", |i| {
        device_side(mem_type)?;
        raw::malloc(i, size).map(Some)
    })
}

/// `aclshmemx_calloc`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_calloc(count: usize, size: usize, mem_type: c_int) -> *mut c_void {
    address("aclshmemx_calloc", |i| {
        device_side(mem_type)?;
        raw::calloc(i, count, size).map(Some)
    })
}

/// `aclshmemx_align`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_align(alignment: usize, size: usize, mem_type: c_int) -> *mut c_void {
    address("aclshmemx_align", |i| {
        device_side(mem_type)?;
        raw::align(i, alignment, size).map(Some)
    })
}

/// `aclshmemx_free`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_free(ptr: *mut c_void, mem_type: c_int) {
    if mem_type == HOST_SIDE {
        failed("aclshmemx_free", &device_side(mem_type).unwrap_err());
        return;
    }
    aclshmem_free(ptr);
}

/// `aclshmemx_get_heap_base`: the active instance's heap (NULL, logged, before init).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_get_heap_base(mem_type: c_int) -> *mut c_void {
    address("aclshmemx_get_heap_base", |_| {
        device_side(mem_type)?;
        Ok(Some(0))
    })
}

/// `aclshmem_ptr`: PE `pe`'s symmetric address of `ptr` (itself for this PE), or NULL for a PE
/// out of range or an address outside the heap.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_ptr(ptr: *mut c_void, pe: c_int) -> *mut c_void {
    let (Ok(inst), Ok(pe)) = (cann::active(), u32::try_from(pe)) else {
        return std::ptr::null_mut();
    };
    inst.peer_addr(ptr.cast(), pe)
        .map_or(std::ptr::null_mut(), |p| p.as_ptr().cast())
}
