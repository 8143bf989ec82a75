//! The runtime's process state: the `aclInit` count, the simulated devices and the current
//! device and context of each thread, and the last error message of each thread.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{CString, c_char};
use std::sync::{Mutex, MutexGuard};

use crate::aclError;

/// A failed call: ACL's code and the reason.
#[derive(Debug)]
pub(crate) struct Fail {
    pub code: aclError,
    pub msg: String,
}

pub(crate) type AclResult<T> = Result<T, Fail>;

/// `ACL_ERROR_INVALID_PARAM`: a null pointer, a bad enum (the ACL layer's checks).
pub(crate) const INVALID_PARAM: aclError = 100000;
/// `ACL_ERROR_INVALID_FILE`.
pub(crate) const INVALID_FILE: aclError = 100003;
/// `ACL_ERROR_REPEAT_INITIALIZE`.
pub(crate) const REPEAT_INITIALIZE: aclError = 100002;
/// `ACL_ERROR_REPEAT_FINALIZE`.
pub(crate) const REPEAT_FINALIZE: aclError = 100037;
/// `ACL_ERROR_FEATURE_UNSUPPORTED`.
pub(crate) const FEATURE_UNSUPPORTED: aclError = 200006;
/// `ACL_ERROR_RT_PARAM_INVALID`: a bad value (the rt layer's checks).
pub(crate) const RT_PARAM_INVALID: aclError = 107000;
/// `ACL_ERROR_RT_INVALID_DEVICEID`.
pub(crate) const RT_INVALID_DEVICEID: aclError = 107001;
/// `ACL_ERROR_RT_CONTEXT_NULL`.
pub(crate) const RT_CONTEXT_NULL: aclError = 107002;
/// `ACL_ERROR_RT_INVALID_HANDLE`.
pub(crate) const RT_INVALID_HANDLE: aclError = 107017;
/// `ACL_ERROR_RT_MEMORY_ALLOCATION`.
pub(crate) const RT_MEMORY_ALLOCATION: aclError = 207001;
/// `ACL_ERROR_RT_STREAM_SYNC_TIMEOUT`.
pub(crate) const RT_STREAM_SYNC_TIMEOUT: aclError = 507046;
/// `ACL_ERROR_RT_EVENT_SYNC_TIMEOUT`.
pub(crate) const RT_EVENT_SYNC_TIMEOUT: aclError = 507047;
/// `ACL_ERROR_RT_INTERNAL_ERROR`.
pub(crate) const RT_INTERNAL_ERROR: aclError = 507000;

pub(crate) fn fail<T>(code: aclError, msg: impl Into<String>) -> AclResult<T> {
    Err(Fail {
        code,
        msg: msg.into(),
    })
}

/// A null pointer argument.
pub(crate) fn null<T>(what: &str) -> AclResult<T> {
    fail(INVALID_PARAM, format!("{what} is NULL"))
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    static CURRENT_DEVICE: Cell<Option<i32>> = const { Cell::new(None) };
    static CURRENT_CONTEXT: Cell<usize> = const { Cell::new(0) };
}

/// Records a failed call's message for `aclGetRecentErrMsg` and writes it as one line; a
/// timed wait that timed out (`…WithTimeout`) and a repeated `aclInit` are answers callers
/// expect (a library initialises ACL whether or not its program did), recorded but not
/// written.
pub(crate) fn report(name: &str, f: &Fail) {
    let line = format!("{name}: {} (error {})", f.msg, f.code);
    if !matches!(
        f.code,
        RT_STREAM_SYNC_TIMEOUT | RT_EVENT_SYNC_TIMEOUT | REPEAT_INITIALIZE
    ) {
        eprintln!("[ACL stand-in] ERROR {line}");
    }
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::new(line).ok());
}

/// The last failed call's message on this thread, then none (`aclGetRecentErrMsg`).
pub(crate) fn take_last_error() -> *const c_char {
    thread_local! {
        static GIVEN: RefCell<Option<CString>> = const { RefCell::new(None) };
    }
    let msg = LAST_ERROR.with(|e| e.borrow_mut().take());
    GIVEN.with(|g| {
        let mut g = g.borrow_mut();
        *g = msg;
        g.as_ref().map_or(std::ptr::null(), |m| m.as_ptr())
    })
}

/// The `aclInit` count.
static INIT: Mutex<u32> = Mutex::new(0);

/// `aclInit`: a config path that cannot be read is 100003; a repeated init counts and answers
/// 100002, which callers may ignore.
pub(crate) fn init(config: Option<&str>) -> AclResult<()> {
    if let Some(path) = config.filter(|p| !p.is_empty())
        && let Err(e) = std::fs::read(path)
    {
        return fail(
            INVALID_FILE,
            format!("cannot read the config file {path}: {e}"),
        );
    }
    let mut n = lock(&INIT);
    *n += 1;
    if *n > 1 {
        return fail(REPEAT_INITIALIZE, "aclInit was already called");
    }
    Ok(())
}

/// `aclFinalize`: clears the count; a second call is 100037.
pub(crate) fn finalize() -> AclResult<()> {
    let mut n = lock(&INIT);
    if *n == 0 {
        return fail(REPEAT_FINALIZE, "aclFinalize without aclInit, or twice");
    }
    *n = 0;
    Ok(())
}

/// The simulated NPUs of this node: `SHMEM_SIM_DEVICE_COUNT`, else the launcher's PEs on the
/// node, else 1.
pub(crate) fn device_count() -> u32 {
    [
        "SHMEM_SIM_DEVICE_COUNT",
        "SHMEMRUN_NPES",
        "OMPI_COMM_WORLD_LOCAL_SIZE",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse::<u32>().ok())
    .filter(|&n| n > 0)
    .unwrap_or(1)
}

/// Checks a device id.
pub(crate) fn check_device(id: i32) -> AclResult<()> {
    if id < 0 || id as u32 >= device_count() {
        return fail(
            RT_INVALID_DEVICEID,
            format!("device {id} does not exist ({} simulated)", device_count()),
        );
    }
    Ok(())
}

/// How many times each device was set and not yet reset.
static DEVICE_REFS: Mutex<Option<HashMap<i32, u32>>> = Mutex::new(None);

/// `aclrtSetDevice`: counts, and makes the device (its default context) current on this thread.
pub(crate) fn set_device(id: i32) -> AclResult<()> {
    check_device(id)?;
    *lock(&DEVICE_REFS)
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_insert(0) += 1;
    CURRENT_DEVICE.with(|c| c.set(Some(id)));
    CURRENT_CONTEXT.with(|c| c.set(0));
    Ok(())
}

/// `aclrtResetDevice`: one count less; the device stops being current when none is left.
pub(crate) fn reset_device(id: i32) -> AclResult<()> {
    check_device(id)?;
    let mut refs = lock(&DEVICE_REFS);
    let n = refs.get_or_insert_with(HashMap::new).entry(id).or_insert(0);
    *n = n.saturating_sub(1);
    if *n == 0 && CURRENT_DEVICE.with(Cell::get) == Some(id) {
        CURRENT_DEVICE.with(|c| c.set(None));
        CURRENT_CONTEXT.with(|c| c.set(0));
    }
    Ok(())
}

/// The current device of this thread, or 107002.
pub(crate) fn current_device() -> AclResult<i32> {
    CURRENT_DEVICE.with(Cell::get).map_or_else(
        || fail(RT_CONTEXT_NULL, "no device is set on this thread"),
        Ok,
    )
}

/// A context made with `aclrtCreateContext`: a device.
#[derive(Debug)]
pub(crate) struct Context {
    pub device: i32,
}

static CONTEXTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// `aclrtCreateContext`: a context on `device`, made current.
pub(crate) fn create_context(device: i32) -> AclResult<usize> {
    check_device(device)?;
    let p = Box::into_raw(Box::new(Context { device })) as usize;
    lock(&CONTEXTS).push(p);
    CURRENT_DEVICE.with(|c| c.set(Some(device)));
    CURRENT_CONTEXT.with(|c| c.set(p));
    Ok(p)
}

/// The device of a live context.
pub(crate) fn context_device(p: usize) -> AclResult<i32> {
    if (1..=device_count() as usize).contains(&p) {
        return Ok(p as i32 - 1); // a device's default context
    }
    if !lock(&CONTEXTS).contains(&p) {
        return fail(RT_INVALID_HANDLE, format!("{p:#x} is not a live context"));
    }
    // SAFETY: a listed context is a leaked `Box<Context>` until `destroy_context`.
    Ok(unsafe { &*(p as *const Context) }.device)
}

/// `aclrtSetCurrentContext`.
pub(crate) fn set_current_context(p: usize) -> AclResult<()> {
    let device = context_device(p)?;
    CURRENT_DEVICE.with(|c| c.set(Some(device)));
    CURRENT_CONTEXT.with(|c| c.set(p));
    Ok(())
}

/// `aclrtGetCurrentContext`: the context made current, or the current device's default one
/// (named by the device's number plus one, which no heap address can be).
pub(crate) fn current_context() -> AclResult<usize> {
    let device = current_device()?;
    Ok(match CURRENT_CONTEXT.with(Cell::get) {
        0 => device as usize + 1,
        p => p,
    })
}

/// `aclrtDestroyContext`.
pub(crate) fn destroy_context(p: usize) -> AclResult<()> {
    let mut all = lock(&CONTEXTS);
    let Some(i) = all.iter().position(|&c| c == p) else {
        return fail(RT_INVALID_HANDLE, format!("{p:#x} is not a live context"));
    };
    all.swap_remove(i);
    if CURRENT_CONTEXT.with(Cell::get) == p {
        CURRENT_CONTEXT.with(|c| c.set(0));
    }
    // SAFETY: it was listed, so it is a leaked `Box<Context>`, and no longer listed.
    drop(unsafe { Box::from_raw(p as *mut Context) });
    Ok(())
}
