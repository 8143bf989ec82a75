//! Simulated device memory and pinned host memory.
//!
//! Each `aclrtMalloc` is an anonymous memory object (a `memfd`) mapped twice: at the *device*
//! address the program gets, with no access (host loads and stores fault, as on an NPU; with
//! `SHMEM_SIM_DEVICE_HOST_ACCESS=1`, readable and writable), and at an *alias* the runtime
//! itself copies through. Like ACL, the size is rounded up to 32 bytes plus 32, and the start is
//! page-aligned.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::sync::{Mutex, Once};

use rustix::mm::{MapFlags, ProtFlags};

use crate::state::{AclResult, INVALID_PARAM, RT_MEMORY_ALLOCATION, RT_PARAM_INVALID, fail, lock};

/// One device allocation: the runtime's own (`aclrtMalloc`, with its memory object), or memory
/// another library owns and registered (a symmetric heap of `libshmem.so`).
struct Allocation {
    len: usize,
    alias: usize,
    object: Option<OwnedFd>,
}

/// The device allocations, by device address.
static DEVICE: Mutex<BTreeMap<usize, Allocation>> = Mutex::new(BTreeMap::new());

/// Whether host code may touch device memory (`SHMEM_SIM_DEVICE_HOST_ACCESS`).
fn host_access() -> bool {
    static WARN: Once = Once::new();
    let on = shmem_sim::SimSettings::from_env().is_ok_and(|s| s.device_host_access);
    if on {
        WARN.call_once(|| {
            eprintln!(
                "[ACL stand-in] SHMEM_SIM_DEVICE_HOST_ACCESS is on: host code can read and write device memory, which faults on an NPU"
            );
        });
    }
    on
}

/// `aclrtMalloc`.
pub(crate) fn malloc(size: usize) -> AclResult<*mut u8> {
    if size == 0 {
        return fail(INVALID_PARAM, "size is 0");
    }
    let page = shmem_sim::page_size();
    let len = size
        .checked_next_multiple_of(32)
        .and_then(|s| s.checked_add(32))
        .and_then(|s| s.checked_next_multiple_of(page))
        .ok_or(())
        .or_else(|()| fail(RT_MEMORY_ALLOCATION, format!("{size} bytes do not fit")))?;
    let oom = |what: &str, e: rustix::io::Errno| {
        fail::<()>(
            RT_MEMORY_ALLOCATION,
            format!("{what} for {size} bytes: {e}"),
        )
        .unwrap_err()
    };
    let object = rustix::fs::memfd_create("aclrt-device-memory", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| oom("memfd_create", e))?;
    rustix::fs::ftruncate(&object, len as u64).map_err(|e| oom("ftruncate", e))?;
    let map = |prot: ProtFlags| {
        // SAFETY: a new shared mapping of our own memory object at an address the kernel picks
        // never aliases existing Rust objects.
        unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                MapFlags::SHARED,
                &object,
                0,
            )
        }
    };
    let alias = map(ProtFlags::READ | ProtFlags::WRITE).map_err(|e| oom("mmap", e))?;
    let device_prot = if host_access() {
        ProtFlags::READ | ProtFlags::WRITE
    } else {
        ProtFlags::empty()
    };
    let device = match map(device_prot) {
        Ok(d) => d,
        Err(e) => {
            // SAFETY: `alias` was mapped above with this length and is referenced nowhere.
            let _ = unsafe { rustix::mm::munmap(alias, len) };
            return Err(oom("mmap", e));
        }
    };
    lock(&DEVICE).insert(
        device as usize,
        Allocation {
            len,
            alias: alias as usize,
            object: Some(object),
        },
    );
    Ok(device.cast())
}

/// `aclrtFree`.
pub(crate) fn free(p: *mut u8) -> AclResult<()> {
    let mut all = lock(&DEVICE);
    if all.get(&(p as usize)).is_none_or(|a| a.object.is_none()) {
        return fail(
            RT_PARAM_INVALID,
            format!("{p:p} is not the start of device memory from aclrtMalloc"),
        );
    }
    let a = all.remove(&(p as usize)).expect("present: checked above");
    drop(all);
    // SAFETY: both mappings were made by `malloc` with this length; the program gave the device
    // address back, and the runtime's alias is referenced by no task it still runs (freeing
    // memory a stream still uses is the program's error, as on an NPU).
    unsafe {
        let _ = rustix::mm::munmap(p.cast(), a.len);
        let _ = rustix::mm::munmap(a.alias as *mut _, a.len);
    }
    Ok(())
}

/// `aclsimRegisterDeviceMemory`: `len` bytes at `p`, owned by the caller and reached by the
/// runtime at `alias`, become device memory. They may not overlap device memory already known.
pub(crate) fn register(p: *mut u8, len: usize, alias: *mut u8) -> AclResult<()> {
    if p.is_null() || alias.is_null() || len == 0 {
        return fail(INVALID_PARAM, "a null address or an empty range");
    }
    let (addr, mut all) = (p as usize, lock(&DEVICE));
    let end = addr
        .checked_add(len)
        .ok_or(())
        .or_else(|()| fail(INVALID_PARAM, format!("{len} bytes at {p:p} wrap around")))?;
    let before = all
        .range(..end)
        .next_back()
        .is_some_and(|(&b, a)| b + a.len > addr);
    if before {
        return fail(
            RT_PARAM_INVALID,
            format!("{len} bytes at {p:p} overlap device memory already known"),
        );
    }
    all.insert(
        addr,
        Allocation {
            len,
            alias: alias as usize,
            object: None,
        },
    );
    Ok(())
}

/// `aclsimUnregisterDeviceMemory`: forgets memory registered at `p`.
pub(crate) fn unregister(p: *mut u8) -> AclResult<()> {
    let mut all = lock(&DEVICE);
    if all.get(&(p as usize)).is_none_or(|a| a.object.is_some()) {
        return fail(
            RT_PARAM_INVALID,
            format!("{p:p} is not the start of registered device memory"),
        );
    }
    all.remove(&(p as usize));
    Ok(())
}

/// Where the runtime reaches `len` bytes of device memory at `p`, if they lie in one allocation.
pub(crate) fn alias(p: *const u8, len: usize) -> Option<*mut u8> {
    let addr = p as usize;
    let all = lock(&DEVICE);
    let (&base, a) = all.range(..=addr).next_back()?;
    let off = addr - base;
    (off.checked_add(len)? <= a.len).then(|| (a.alias + off) as *mut u8)
}

/// Whether `p` is in device memory.
pub(crate) fn is_device(p: *const u8) -> bool {
    alias(p, 0).is_some()
}

/// Bytes of device memory allocated by `aclrtMalloc`.
pub(crate) fn allocated() -> usize {
    lock(&DEVICE)
        .values()
        .filter(|a| a.object.is_some())
        .map(|a| a.len)
        .sum()
}

/// Pinned host memory from `aclrtMallocHost`, by address and length.
static HOST: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

/// `aclrtMallocHost`: page-aligned host memory.
pub(crate) fn malloc_host(size: usize) -> AclResult<*mut u8> {
    if size == 0 {
        return fail(INVALID_PARAM, "size is 0");
    }
    // SAFETY: a new private anonymous mapping never aliases existing memory.
    let p = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            size,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }
    .or_else(|e| {
        fail(
            RT_MEMORY_ALLOCATION,
            format!("{size} bytes of host memory: {e}"),
        )
    })?;
    lock(&HOST).insert(p as usize, size);
    Ok(p.cast())
}

/// `aclrtFreeHost`.
pub(crate) fn free_host(p: *mut u8) -> AclResult<()> {
    let Some(len) = lock(&HOST).remove(&(p as usize)) else {
        return fail(
            RT_PARAM_INVALID,
            format!("{p:p} is not host memory from aclrtMallocHost"),
        );
    };
    // SAFETY: mapped by `malloc_host` with this length and given back by the program.
    let _ = unsafe { rustix::mm::munmap(p.cast(), len) };
    Ok(())
}
