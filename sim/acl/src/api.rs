//! The C entry points of `libascendcl.so`, as `acl/acl.h` declares them (the table in
//! `src/table.rs`). Each runs its body in [`call`]: a failure is reported in one line and
//! returned as ACL's code; a panic (an internal error) ends the process with its message rather
//! than unwinding into C.

use std::ffi::{CStr, c_char, c_void};

use crate::aclError;
use crate::state::{self, AclResult, FEATURE_UNSUPPORTED, INVALID_PARAM};
use crate::{copy, memory, streams};

/// Runs entry `name`: 0, or the failure's code after reporting it.
fn call(name: &str, f: impl FnOnce() -> AclResult<()>) -> aclError {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            state::report(name, &e);
            e.code
        }
        Err(_) => {
            eprintln!(
                "[ACL stand-in] {name}: an internal error (a panic) occurred; ending the process"
            );
            std::process::exit(1);
        }
    }
}

/// Writes `v` through the out-pointer `p` (100000 when it is null).
///
/// # Safety
///
/// `p` is null or valid for a write.
unsafe fn out<T>(p: *mut T, what: &str, v: T) -> AclResult<()> {
    if p.is_null() {
        return state::null(what);
    }
    // SAFETY: non-null, valid per the contract.
    unsafe { p.write(v) };
    Ok(())
}

/// `aclInit`.
///
/// # Safety
///
/// `config_path` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclInit(config_path: *const c_char) -> aclError {
    call("aclInit", || {
        let path = if config_path.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated per the contract.
            Some(
                unsafe { CStr::from_ptr(config_path) }
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        state::init(path.as_deref())
    })
}

/// `aclFinalize`.
#[unsafe(no_mangle)]
pub extern "C" fn aclFinalize() -> aclError {
    call("aclFinalize", state::finalize)
}

/// `aclGetRecentErrMsg`: the last failed call's message on this thread (then none), or NULL.
#[unsafe(no_mangle)]
pub extern "C" fn aclGetRecentErrMsg() -> *const c_char {
    state::take_last_error()
}

/// `aclrtSetDevice`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetDevice(device_id: i32) -> aclError {
    call("aclrtSetDevice", || state::set_device(device_id))
}

/// `aclrtResetDevice`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtResetDevice(device_id: i32) -> aclError {
    call("aclrtResetDevice", || state::reset_device(device_id))
}

/// `aclrtGetDevice`.
///
/// # Safety
///
/// `device_id` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetDevice(device_id: *mut i32) -> aclError {
    // SAFETY: forwarded.
    call("aclrtGetDevice", || unsafe {
        if device_id.is_null() {
            return state::null("deviceId");
        }
        out(device_id, "deviceId", state::current_device()?)
    })
}

/// `aclrtGetDeviceCount`.
///
/// # Safety
///
/// `count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetDeviceCount(count: *mut u32) -> aclError {
    // SAFETY: forwarded.
    call("aclrtGetDeviceCount", || unsafe {
        out(count, "count", state::device_count())
    })
}

/// `aclrtGetRunMode`: `ACL_HOST`, as for a program on the host of an NPU.
///
/// # Safety
///
/// `run_mode` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetRunMode(run_mode: *mut i32) -> aclError {
    // SAFETY: forwarded.
    call("aclrtGetRunMode", || unsafe { out(run_mode, "runMode", 1) })
}

/// `aclrtCreateContext`.
///
/// # Safety
///
/// `context` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateContext(context: *mut *mut c_void, device_id: i32) -> aclError {
    call("aclrtCreateContext", || {
        if context.is_null() {
            return state::null("context");
        }
        let c = state::create_context(device_id)?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(context, "context", c as *mut c_void) }
    })
}

/// `aclrtDestroyContext`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyContext(context: *mut c_void) -> aclError {
    call("aclrtDestroyContext", || {
        if context.is_null() {
            return state::null("context");
        }
        state::destroy_context(context as usize)
    })
}

/// `aclrtSetCurrentContext`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSetCurrentContext(context: *mut c_void) -> aclError {
    call("aclrtSetCurrentContext", || {
        if context.is_null() {
            return state::null("context");
        }
        state::set_current_context(context as usize)
    })
}

/// `aclrtGetCurrentContext`.
///
/// # Safety
///
/// `context` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetCurrentContext(context: *mut *mut c_void) -> aclError {
    call("aclrtGetCurrentContext", || {
        if context.is_null() {
            return state::null("context");
        }
        let c = state::current_context()?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(context, "context", c as *mut c_void) }
    })
}

/// `aclrtCreateStream`.
///
/// # Safety
///
/// `stream` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateStream(stream: *mut *mut c_void) -> aclError {
    call("aclrtCreateStream", || {
        if stream.is_null() {
            return state::null("stream");
        }
        let s = streams::create()?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(stream, "stream", s) }
    })
}

/// `aclrtCreateStreamWithConfig`: priority 0–7; the flags change nothing on the simulator
/// (unknown bits are dropped, as ACL does).
///
/// # Safety
///
/// `stream` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateStreamWithConfig(
    stream: *mut *mut c_void,
    priority: u32,
    flag: u32,
) -> aclError {
    let _ = flag;
    call("aclrtCreateStreamWithConfig", || {
        if priority > 7 {
            return state::fail(
                state::RT_PARAM_INVALID,
                format!("priority {priority} is not 0-7"),
            );
        }
        if stream.is_null() {
            return state::null("stream");
        }
        let s = streams::create()?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(stream, "stream", s) }
    })
}

/// `aclrtDestroyStream`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyStream(stream: *mut c_void) -> aclError {
    call("aclrtDestroyStream", || streams::destroy(stream))
}

/// `aclrtSynchronizeStream`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStream(stream: *mut c_void) -> aclError {
    call("aclrtSynchronizeStream", || {
        streams::synchronize(stream, -1)
    })
}

/// `aclrtSynchronizeStreamWithTimeout`: `timeout` in ms, -1 for none.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeStreamWithTimeout(stream: *mut c_void, timeout: i32) -> aclError {
    call("aclrtSynchronizeStreamWithTimeout", || {
        streams::synchronize(stream, timeout)
    })
}

/// `aclrtStreamWaitEvent`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtStreamWaitEvent(stream: *mut c_void, event: *mut c_void) -> aclError {
    call("aclrtStreamWaitEvent", || {
        streams::wait_event(stream, event)
    })
}

/// `aclrtCreateEvent`.
///
/// # Safety
///
/// `event` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateEvent(event: *mut *mut c_void) -> aclError {
    // SAFETY: forwarded.
    unsafe { create_event("aclrtCreateEvent", event) }
}

/// An event into `*event`, for the function `name` (whose failure it reports).
///
/// # Safety
///
/// `event` is null or valid for a write.
unsafe fn create_event(name: &str, event: *mut *mut c_void) -> aclError {
    call(name, || {
        if event.is_null() {
            return state::null("event");
        }
        // SAFETY: non-null, valid per the contract.
        unsafe { out(event, "event", streams::create_event()) }
    })
}

/// `aclrtCreateEventWithFlag`: the flags change nothing on the simulator.
///
/// # Safety
///
/// `event` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtCreateEventWithFlag(event: *mut *mut c_void, flag: u32) -> aclError {
    let _ = flag;
    // SAFETY: forwarded.
    unsafe { create_event("aclrtCreateEventWithFlag", event) }
}

/// `aclrtDestroyEvent`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDestroyEvent(event: *mut c_void) -> aclError {
    call("aclrtDestroyEvent", || streams::destroy_event(event))
}

/// `aclrtRecordEvent`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtRecordEvent(event: *mut c_void, stream: *mut c_void) -> aclError {
    call("aclrtRecordEvent", || streams::record(event, stream))
}

/// `aclrtSynchronizeEvent`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEvent(event: *mut c_void) -> aclError {
    call("aclrtSynchronizeEvent", || {
        streams::synchronize_event(event, -1)
    })
}

/// `aclrtSynchronizeEventWithTimeout`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtSynchronizeEventWithTimeout(event: *mut c_void, timeout: i32) -> aclError {
    call("aclrtSynchronizeEventWithTimeout", || {
        streams::synchronize_event(event, timeout)
    })
}

/// `aclrtMalloc`: device memory (any policy; an unknown one falls back to the default, as in
/// ACL).
///
/// # Safety
///
/// `dev_ptr` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtMalloc(
    dev_ptr: *mut *mut c_void,
    size: usize,
    policy: i32,
) -> aclError {
    call("aclrtMalloc", || {
        if dev_ptr.is_null() {
            return state::null("devPtr");
        }
        // Every policy places memory alike here; one outside the enumeration is refused.
        if !crate::table::is_member("aclrtMemMallocPolicy", policy) {
            return state::fail(
                INVALID_PARAM,
                format!("{policy} is not an aclrtMemMallocPolicy"),
            );
        }
        let p = memory::malloc(size)?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(dev_ptr, "devPtr", p.cast()) }
    })
}

/// `aclrtFree`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtFree(dev_ptr: *mut c_void) -> aclError {
    call("aclrtFree", || {
        if dev_ptr.is_null() {
            return state::null("devPtr");
        }
        memory::free(dev_ptr.cast())
    })
}

/// `aclrtMallocHost`.
///
/// # Safety
///
/// `host_ptr` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtMallocHost(host_ptr: *mut *mut c_void, size: usize) -> aclError {
    call("aclrtMallocHost", || {
        if host_ptr.is_null() {
            return state::null("hostPtr");
        }
        let p = memory::malloc_host(size)?;
        // SAFETY: non-null, valid per the contract.
        unsafe { out(host_ptr, "hostPtr", p.cast()) }
    })
}

/// `aclrtFreeHost`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtFreeHost(host_ptr: *mut c_void) -> aclError {
    call("aclrtFreeHost", || {
        if host_ptr.is_null() {
            return state::null("hostPtr");
        }
        memory::free_host(host_ptr.cast())
    })
}

/// `aclrtMemcpy`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemcpy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> aclError {
    call("aclrtMemcpy", || {
        copy::memcpy(dst, dest_max, src, count, kind)
    })
}

/// `aclrtMemcpyAsync`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemcpyAsync(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
    stream: *mut c_void,
) -> aclError {
    call("aclrtMemcpyAsync", || {
        copy::memcpy_async(dst, dest_max, src, count, kind, stream)
    })
}

/// `aclrtMemset`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemset(
    dev_ptr: *mut c_void,
    max_count: usize,
    value: i32,
    count: usize,
) -> aclError {
    call("aclrtMemset", || {
        copy::memset(dev_ptr, max_count, value, count)
    })
}

/// `aclrtMemsetAsync`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtMemsetAsync(
    dev_ptr: *mut c_void,
    max_count: usize,
    value: i32,
    count: usize,
    stream: *mut c_void,
) -> aclError {
    call("aclrtMemsetAsync", || {
        copy::memset_async(dev_ptr, max_count, value, count, stream)
    })
}

/// `aclrtDeviceCanAccessPeer`: every simulated NPU of the node reaches every other.
///
/// # Safety
///
/// `can_access_peer` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtDeviceCanAccessPeer(
    can_access_peer: *mut i32,
    device_id: i32,
    peer_device_id: i32,
) -> aclError {
    call("aclrtDeviceCanAccessPeer", || {
        state::check_device(device_id)?;
        state::check_device(peer_device_id)?;
        if device_id == peer_device_id {
            return state::fail(INVALID_PARAM, "a device and itself are not peers");
        }
        // SAFETY: forwarded.
        unsafe { out(can_access_peer, "canAccessPeer", 1) }
    })
}

/// `aclrtDeviceEnablePeerAccess`: flags must be 0 (200006); the peer must not be the current
/// device (100000).
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDeviceEnablePeerAccess(peer_device_id: i32, flags: u32) -> aclError {
    call("aclrtDeviceEnablePeerAccess", || {
        if flags != 0 {
            return state::fail(FEATURE_UNSUPPORTED, format!("flags {flags:#x} must be 0"));
        }
        state::check_device(peer_device_id)?;
        if state::current_device()? == peer_device_id {
            return state::fail(INVALID_PARAM, "the peer is the current device");
        }
        Ok(())
    })
}

/// `aclrtDeviceDisablePeerAccess`.
#[unsafe(no_mangle)]
pub extern "C" fn aclrtDeviceDisablePeerAccess(peer_device_id: i32) -> aclError {
    call("aclrtDeviceDisablePeerAccess", || {
        state::check_device(peer_device_id)
    })
}

/// `aclrtGetMemInfo`: a simulated NPU has 64 GiB of HBM; free is what `aclrtMalloc` has not
/// taken.
///
/// # Safety
///
/// `free` and `total` are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetMemInfo(
    attr: i32,
    free: *mut usize,
    total: *mut usize,
) -> aclError {
    call("aclrtGetMemInfo", || {
        if !(0..=17).contains(&attr) {
            return state::fail(INVALID_PARAM, format!("memory attribute {attr}"));
        }
        const TOTAL: usize = 64 << 30;
        // SAFETY: forwarded.
        unsafe {
            out(total, "total", TOTAL)?;
            out(free, "free", TOTAL.saturating_sub(memory::allocated()))
        }
    })
}

/// `aclrtGetVersion`: ACL 1.16.0 (what `ACL_*_VERSION` say; CANN SHMEM needs at least 1.15).
///
/// # Safety
///
/// The pointers are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclrtGetVersion(
    major: *mut i32,
    minor: *mut i32,
    patch: *mut i32,
) -> aclError {
    call("aclrtGetVersion", || {
        // SAFETY: forwarded.
        unsafe {
            out(major, "majorVersion", 1)?;
            out(minor, "minorVersion", 16)?;
            out(patch, "patchVersion", 0)
        }
    })
}

/// `aclrtGetSocName`: a SoC CANN SHMEM supports (it matches "Ascend910B").
#[unsafe(no_mangle)]
pub extern "C" fn aclrtGetSocName() -> *const c_char {
    c"Ascend910B4".as_ptr()
}

/// `aclsimDeviceAlias` (`acl/acl_sim.h`, this project's): where the runtime reaches `size`
/// bytes of device memory at `dev_ptr`; 107000 when they do not lie in one allocation. A query:
/// it logs nothing, since callers ask it about addresses that may be host memory.
///
/// # Safety
///
/// `host_alias` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimDeviceAlias(
    dev_ptr: *const c_void,
    size: usize,
    host_alias: *mut *mut c_void,
) -> aclError {
    let Some(a) = memory::alias(dev_ptr.cast(), size) else {
        return state::RT_PARAM_INVALID;
    };
    if host_alias.is_null() {
        return state::INVALID_PARAM;
    }
    // SAFETY: non-null, valid for a write per the contract.
    unsafe { host_alias.write(a.cast()) };
    0
}

/// `aclsimRegisterDeviceMemory` (`acl/acl_sim.h`, this project's): `size` bytes at `dev_ptr`,
/// which the caller owns and the runtime reaches at `host_alias`, become device memory: the
/// copies accept them as such and reach them through the alias. `libshmem.so` registers the
/// symmetric heaps of CANN instances so. 107000 for an overlap with device memory already known.
///
/// # Safety
///
/// Until it is unregistered, `host_alias..host_alias + size` stays mapped, readable and writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimRegisterDeviceMemory(
    dev_ptr: *mut c_void,
    size: usize,
    host_alias: *mut c_void,
) -> aclError {
    call("aclsimRegisterDeviceMemory", || {
        memory::register(dev_ptr.cast(), size, host_alias.cast())
    })
}

/// `aclsimUnregisterDeviceMemory` (`acl/acl_sim.h`, this project's): forgets memory registered
/// at `dev_ptr`.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimUnregisterDeviceMemory(dev_ptr: *mut c_void) -> aclError {
    call("aclsimUnregisterDeviceMemory", || {
        memory::unregister(dev_ptr.cast())
    })
}
