//! CANN's init, finalize, information and multi-instance calls (`host/init/shmem_host_init.h`).

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;
use std::time::Duration;

use shmem_capi::cann;
use shmem_core::{Attributes, Error, InitMode, Listener, Result, UniqueId};

use super::types::{aclshmem_instance_ctx, aclshmemx_init_attr_t, aclshmemx_uniqueid_t};
use super::{code, failed};

/// `aclshmemx_init_status`: 0 not initialized, 1 created, 2 initialized (the active instance).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_init_status() -> c_int {
    cann::init_status() as c_int
}

/// `aclshmemx_get_uniqueid`: PE 0 makes the id the program broadcasts.
///
/// # Safety
///
/// `uid` is null or valid for a write of 136 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_get_uniqueid(uid: *mut aclshmemx_uniqueid_t) -> c_int {
    code("aclshmemx_get_uniqueid", || {
        if uid.is_null() {
            return Err(Error::InvalidParam("uid is NULL".into()));
        }
        let bytes = UniqueId::new()?.to_bytes();
        // SAFETY: valid for 136 bytes per the contract; the layouts have the same size.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), uid.cast::<u8>(), bytes.len()) };
        Ok(())
    })
}

/// The unique id `comm_args` points to, when it carries CANN's unique-id version.
///
/// # Safety
///
/// `p` is null or valid for reads of 136 bytes.
unsafe fn uid_at(p: *const c_void) -> Option<UniqueId> {
    if p.is_null() {
        return None;
    }
    // SAFETY: valid for 136 bytes per the contract.
    let bytes =
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size_of::<aclshmemx_uniqueid_t>()) };
    UniqueId::from_bytes(bytes).ok()
}

/// `aclshmemx_set_attr_uniqueid_args`: CANN's checks (each failure `INVALID_VALUE`), then the
/// PEs, the size and `comm_args = uid` (the id must outlive init, as in CANN).
///
/// # Safety
///
/// `uid` is valid for reads of 136 bytes, `attr` for a write of the struct.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_set_attr_uniqueid_args(
    my_pe: c_int,
    n_pes: c_int,
    local_mem_size: i64,
    uid: *mut aclshmemx_uniqueid_t,
    attr: *mut aclshmemx_init_attr_t,
) -> c_int {
    code("aclshmemx_set_attr_uniqueid_args", || {
        if uid.is_null() || attr.is_null() {
            return Err(Error::InvalidParam("uid or attr is NULL".into()));
        }
        // SAFETY: per the contract.
        let id = unsafe { uid_at(uid.cast()) }.ok_or_else(|| {
            Error::InvalidParam("uid is not a unique id from aclshmemx_get_uniqueid".into())
        })?;
        let mut scratch = Attributes::new(0, 1, "", 0);
        cann::set_attr_uniqueid_args(my_pe, n_pes, local_mem_size, &id, &mut scratch)?;
        // SAFETY: valid for a write per the contract.
        let a = unsafe { &mut *attr };
        a.my_pe = my_pe;
        a.n_pes = n_pes;
        a.local_mem_size = local_mem_size as u64;
        a.comm_args = uid.cast();
        Ok(())
    })
}

/// The Rust attributes of a C `aclshmemx_init_attr_t`, with CANN's first checks (the values the
/// Rust attributes cannot hold).
///
/// # Safety
///
/// `a.comm_args` is null, a unique id, or an `MPI_Comm *`, as `flags` say.
unsafe fn rust_attributes(flags: u32, a: &aclshmemx_init_attr_t) -> Result<Attributes> {
    if a.my_pe < 0 || a.n_pes <= 0 {
        return Err(Error::InvalidValue(format!(
            "my_pe {} and n_pes {} must be >= 0 and > 0",
            a.my_pe, a.n_pes
        )));
    }
    // SAFETY: a fixed array, read up to its first NUL (or its end).
    let ip =
        unsafe { std::slice::from_raw_parts(a.ip_port.as_ptr().cast::<u8>(), a.ip_port.len()) };
    let ip = CStr::from_bytes_until_nul(ip)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(ip).into_owned());
    let mut attrs = Attributes::new(a.my_pe as u32, a.n_pes as u32, &ip, a.local_mem_size);
    let o = &a.option_attr;
    attrs.engines = o.data_op_engine_type as u32;
    attrs.init_timeout = Duration::from_secs(u64::from(o.shm_init_timeout));
    attrs.op_timeout = Duration::from_secs(u64::from(o.control_operation_timeout));
    attrs.instance_id = a.instance_id;
    if o.sock_fd > 0 {
        // SAFETY: the program hands a socket it keeps open for the call; it is duplicated.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(o.sock_fd) };
        attrs.listener = Some(Listener::from_fd(fd)?);
    }
    if flags & cann::INIT_WITH_MPI != 0 && flags & cann::INIT_WITH_UNIQUEID == 0 {
        attrs.mode = InitMode::Mpi(if a.comm_args.is_null() {
            None
        } else {
            // SAFETY: an `MPI_Comm *` per the flags; Open MPI's handle is a pointer.
            Some(unsafe { shmem_core::mpi::Comm::from_raw(*a.comm_args.cast::<usize>()) })
        });
    // SAFETY: a unique id per the flags (or a DEFAULT init's fallback to one).
    } else if let Some(id) = unsafe { uid_at(a.comm_args) } {
        let with = Attributes::with_unique_id(attrs.my_pe, attrs.n_pes, attrs.local_mem_size, &id);
        (attrs.secret, attrs.mode) = (with.secret, with.mode);
    }
    Ok(attrs)
}

/// `aclshmemx_init_attr`: creates instance `attributes->instance_id` and makes it active, with
/// CANN's checks and codes and its active-instance contract.
///
/// # Safety
///
/// `attributes` is null or valid for reads; its `comm_args` as its flags say.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_init_attr(
    bootstrap_flags: u32,
    attributes: *mut aclshmemx_init_attr_t,
) -> c_int {
    code("aclshmemx_init_attr", || {
        if attributes.is_null() {
            return Err(Error::InvalidParam("attributes is NULL".into()));
        }
        // SAFETY: valid for reads per the contract.
        let attrs = unsafe { rust_attributes(bootstrap_flags, &*attributes) }?;
        cann::init_attr(bootstrap_flags, &attrs).map(|inst| super::device_state::publish(&inst))
    })
}

/// `aclshmem_finalize`: releases the active instance.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_finalize() -> c_int {
    super::rma::forget(cann::instance_ctx_get());
    super::device_state::withdraw(cann::instance_ctx_get());
    code("aclshmem_finalize", cann::finalize)
}

/// `aclshmemx_finalize`: releases instance `instance_id`, switching to it first if needed; an
/// unknown id is `INNER_ERROR` and leaves the active instance as it was.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_finalize(instance_id: u64) -> c_int {
    code("aclshmemx_finalize", || {
        cann::finalize_instance(instance_id)?;
        super::device_state::withdraw(instance_id);
        Ok(())
    })
}

/// `aclshmem_info_get_version`: 1.1, CANN SHMEM's API version.
///
/// # Safety
///
/// The pointers are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    let (ma, mi) = cann::info_get_version();
    if major.is_null() || minor.is_null() {
        failed(
            "aclshmem_info_get_version",
            &Error::InvalidParam("NULL argument".into()),
        );
        return;
    }
    // SAFETY: non-null, valid per the contract.
    unsafe {
        major.write(ma);
        minor.write(mi);
    }
}

/// `aclshmem_info_get_name`: `"ACLSHMEM v1.1.1"`.
///
/// # Safety
///
/// `name` is null or valid for 256 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        failed(
            "aclshmem_info_get_name",
            &Error::InvalidParam("name is NULL".into()),
        );
        return;
    }
    let s = cann::info_get_name().as_bytes();
    let n = s.len().min(255);
    // SAFETY: valid for 256 bytes per the contract.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), name.cast::<u8>(), n);
        name.add(n).write(0);
    }
}

/// `aclshmemx_set_config_store_tls_key`: accepted. CANN's config store then turns TLS off
/// unconditionally (`SetTlsInfo(false, …)` at init), and so does the simulator: nothing changes.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_config_store_tls_key(
    tls_pk: *const c_char,
    tls_pk_len: u32,
    tls_pk_pw: *const c_char,
    tls_pk_pw_len: u32,
    decrypt_handler: *const c_void,
) -> i32 {
    let _ = (
        tls_pk,
        tls_pk_len,
        tls_pk_pw,
        tls_pk_pw_len,
        decrypt_handler,
    );
    0
}

/// `aclshmemx_set_conf_store_tls`: accepted, with no effect, as in CANN (see
/// [`aclshmemx_set_config_store_tls_key`]).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_conf_store_tls(
    enable: bool,
    tls_info: *const c_char,
    tls_info_len: u32,
) -> i32 {
    let _ = (enable, tls_info, tls_info_len);
    0
}

/// `aclshmem_global_exit`: as CANN's config-store bootstrap does, it records the request and
/// returns; the process does not exit (CANN sets a key nobody watches), and it logs CANN's
/// warning.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_global_exit(status: c_int) {
    shmem_capi::log::init();
    tracing::warn!(
        "aclshmem_global_exit({status}): recorded; as in CANN's config-store bootstrap the job does not end"
    );
}

/// The `aclshmem_instance_ctx` of each id, never freed (at most 256), so that the pointer
/// `aclshmemx_instance_ctx_get` returns stays readable.
static CTX_RECORDS: Mutex<BTreeMap<u64, usize>> = Mutex::new(BTreeMap::new());

/// `aclshmemx_instance_ctx_get`: the active instance's context (only `id` is meaningful).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_instance_ctx_get() -> *mut aclshmem_instance_ctx {
    let id = cann::instance_ctx_get();
    let mut all = CTX_RECORDS.lock().unwrap_or_else(|p| p.into_inner());
    *all.entry(id).or_insert_with(|| {
        Box::into_raw(Box::new(aclshmem_instance_ctx {
            id,
            instance: std::ptr::null_mut(),
        })) as usize
    }) as *mut aclshmem_instance_ctx
}

/// `aclshmemx_instance_ctx_set`: makes instance `instance_id` active; an unknown id is
/// `INNER_ERROR`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_instance_ctx_set(instance_id: u64) -> c_int {
    // Without `code`'s check for the panic hook: the switch cannot panic (a lock whose
    // poisoning is ignored and a set lookup), and it runs between kernel launches.
    match cann::instance_ctx_set(instance_id) {
        Ok(()) => 0,
        Err(e) => code("aclshmemx_instance_ctx_set", || Err(e)),
    }
}
