//! What CANN's C ABI asks of the ACL runtime stand-in, through its private interface
//! (`acl/acl_sim.h`): where the runtime itself reaches device memory from `aclrtMalloc`, so that
//! such memory can be the local side of a host RMA call, as on an NPU. `libshmem.so` depends on
//! the runtime (`DT_NEEDED`), so it is loaded; the symbol is resolved once, lazily, from the
//! loaded library (`RTLD_NOLOAD`), and its absence (a Rust program without the runtime) only
//! means that no address is device memory.

use std::ffi::c_void;
use std::sync::OnceLock;

/// `aclsimDeviceAlias(devPtr, size, hostAlias)`.
type DeviceAlias = unsafe extern "C" fn(*const c_void, usize, *mut *mut c_void) -> i32;

/// The loaded runtime's `aclsimDeviceAlias`, if any.
fn device_alias_fn() -> Option<DeviceAlias> {
    static FN: OnceLock<Option<(libloading::os::unix::Library, DeviceAlias)>> = OnceLock::new();
    FN.get_or_init(|| {
        let flags = libc::RTLD_NOLOAD | libc::RTLD_LAZY;
        // SAFETY: RTLD_NOLOAD loads nothing, so no initialiser runs.
        let lib =
            unsafe { libloading::os::unix::Library::open(Some("libascendcl.so"), flags) }.ok()?;
        // SAFETY: in the stand-in the symbol has this type (`acl/acl_sim.h`).
        let f = unsafe { *lib.get::<DeviceAlias>(b"aclsimDeviceAlias\0").ok()? };
        Some((lib, f))
    })
    .as_ref()
    .map(|(_, f)| *f)
}

/// Where the runtime reaches `len` bytes at `p`, if they lie in one allocation of device
/// memory from `aclrtMalloc` (or a registered heap).
pub(crate) fn device_alias(p: *const c_void, len: usize) -> Option<*mut u8> {
    let f = device_alias_fn()?;
    let mut alias = std::ptr::null_mut();
    // SAFETY: the stand-in's query; `alias` is valid for a write.
    let rc = unsafe { f(p, len, &mut alias) };
    (rc == 0 && !alias.is_null()).then_some(alias.cast())
}

/// Whether the loaded runtime can tell device memory from host memory (the stand-in's
/// `aclsimDeviceAlias`; ACL itself has no such query).
pub(crate) fn tells_device_memory() -> bool {
    device_alias_fn().is_some()
}
