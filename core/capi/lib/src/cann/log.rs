//! CANN's logging and profiling calls (`host/utils/shmem_log.h`): the level and the program's own
//! log function, which the C boundary's log lines follow (`shmem_capi::log`), and the device
//! cycle profiles, which the simulator does not record: `aclshmemx_get_prof` hands back no
//! profile, as CANN does when profiling is off.

use std::ffi::c_int;

use shmem_capi::log::ExternLogger;
use shmem_core::Error;

use super::code;

/// `aclshmemx_set_extern_logger`: the lines go to `func` (with CANN's level, 0 DEBUG … 4 FATAL)
/// instead of standard error; NULL sends them to standard error again. Always 0, as in CANN.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_extern_logger(func: Option<ExternLogger>) -> i32 {
    crate::boundary::enter();
    shmem_capi::log::set_extern_logger(func);
    0
}

/// `aclshmemx_set_log_level`: 0 DEBUG, 1 INFO, 2 WARN, 3 ERROR, 4 FATAL; `SHMEM_LOG_LEVEL`
/// wins when it names a level, as in CANN. Another level is `INVALID_VALUE`, as CANN's logger
/// answers.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_log_level(level: c_int) -> i32 {
    code("aclshmemx_set_log_level", || {
        shmem_capi::log::set_level(level).map_err(Error::InvalidValue)
    })
}

/// Says once, when profiling is asked for with `SHMEM_CYCLE_PROF_PE`, that the simulator has no
/// device cycle counters to report.
fn no_profiles() {
    static SAID: std::sync::Once = std::sync::Once::new();
    if std::env::var_os("SHMEM_CYCLE_PROF_PE").is_some() {
        SAID.call_once(|| {
            shmem_capi::log::init();
            tracing::warn!(
                "SHMEM_CYCLE_PROF_PE: the simulator records no device cycle profiles; none to show"
            );
        });
    }
}

/// `aclshmemx_show_prof` (deprecated in CANN): prints the profiles, of which there are none.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_show_prof() {
    crate::boundary::enter();
    no_profiles();
}

/// The profile of one PE (CANN's `aclshmem_prof_pe_t`), never handed out by the simulator.
#[derive(Debug)]
#[repr(C)]
pub struct aclshmem_prof_pe_t {
    _opaque: [u8; 0],
}

/// `aclshmemx_get_prof`: `*out_profs` (when not NULL) becomes NULL, no profile; with `verbose`
/// the (empty) profiles are printed.
///
/// # Safety
///
/// `out_profs` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_get_prof(
    out_profs: *mut *mut aclshmem_prof_pe_t,
    verbose: bool,
) {
    crate::boundary::enter();
    if !out_profs.is_null() {
        // SAFETY: per the contract.
        unsafe { out_profs.write(std::ptr::null_mut()) };
    }
    if verbose {
        no_profiles();
    }
}
