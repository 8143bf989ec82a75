//! Library setup, exit, query and ordering routines.

use std::ffi::{c_char, c_int, c_void};

use shmem_core::{ApiProfile, Attributes, Error, Instance, ThreadLevel};

use crate::boundary::{call, fatal};
use crate::world::{close, offset, open, pe, world};

/// The default instance from the launcher's environment, under the OpenSHMEM profile unless
/// `SHMEM_PROFILE` names another.
fn init_world(requested: ThreadLevel) -> shmem_core::Result<ThreadLevel> {
    open(|| {
        shmem_capi::log::init();
        let mut attrs = Attributes::from_env()?;
        if std::env::var_os("SHMEM_PROFILE").is_none() {
            attrs.profile = Some(ApiProfile::OpenShmem);
        }
        let _ = requested; // every level is provided
        let inst = match crate::static_data::range() {
            Some(statics) => {
                // SAFETY: the executable's writable data, page-aligned and mapped; it holds
                // no Rust object (this library's statics live in its own segment), and
                // OpenSHMEM programs call `shmem_init` before their threads use it. Every
                // PE runs the same executable.
                let inst = unsafe { Instance::init_with_static_data(&attrs, statics) }?;
                crate::static_data::shared(statics);
                inst
            }
            None => Instance::init(&attrs)?,
        };
        crate::startup_info::print(inst.my_pe());
        Ok((inst, ThreadLevel::Multiple))
    })
}

/// `shmem_init`: a failure to start is unrecoverable.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_init() {
    crate::boundary::hook_panics();
    if let Err(e) = init_world(ThreadLevel::Single) {
        fatal("shmem_init", &e.to_string(), 1);
    }
}

fn level(l: c_int) -> Option<ThreadLevel> {
    Some(match l {
        0 => ThreadLevel::Single,
        1 => ThreadLevel::Funneled,
        2 => ThreadLevel::Serialized,
        3 => ThreadLevel::Multiple,
        _ => return None,
    })
}

/// `shmem_init_thread`: 0 on success, non-zero (CANN's code) otherwise.
///
/// # Safety
///
/// `provided` is null or valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    call("shmem_init_thread", -1, || {
        let want = level(requested).ok_or_else(|| {
            Error::InvalidParam(format!("{requested} is not a SHMEM_THREAD_* level"))
        })?;
        let got = init_world(want)?;
        if !provided.is_null() {
            // SAFETY: non-null, valid per the contract.
            unsafe { provided.write(got as c_int) };
        }
        Ok(0)
    })
}

/// `shmem_query_thread`.
///
/// # Safety
///
/// `provided` is valid for a write of an `int`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    call("shmem_query_thread", (), || {
        let level = world()?.query_thread() as c_int;
        if provided.is_null() {
            return Err(Error::InvalidParam("provided is NULL".into()));
        }
        // SAFETY: non-null, valid per the contract.
        unsafe { provided.write(level) };
        Ok(())
    })
}

/// `shmem_finalize`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_finalize() {
    call("shmem_finalize", (), close);
}

/// `shmem_global_exit`: ends every PE of the job with `status`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_global_exit(status: c_int) {
    match world() {
        Ok(inst) => inst.global_exit(status),
        Err(_) => std::process::exit(status),
    }
}

/// `shmem_my_pe`: -1 before `shmem_init`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_my_pe() -> c_int {
    world().map_or(-1, |w| w.my_pe() as c_int)
}

/// `shmem_n_pes`: -1 before `shmem_init`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_n_pes() -> c_int {
    world().map_or(-1, |w| w.n_pes() as c_int)
}

/// `shmem_pe_accessible`: 1 when PE `pe` can be reached.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_pe_accessible(pe_: c_int) -> c_int {
    match (world(), pe(pe_)) {
        (Ok(w), Ok(p)) => c_int::from(w.pe_accessible(p)),
        _ => 0,
    }
}

/// `shmem_addr_accessible`: 1 when `addr` is symmetric and PE `pe` can be reached.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe_: c_int) -> c_int {
    match (world(), pe(pe_)) {
        (Ok(w), Ok(p)) => c_int::from(w.addr_accessible(addr.cast(), 1, p)),
        _ => 0,
    }
}

/// `shmem_ptr`: where this process can load and store PE `pe`'s copy of `dest`, or NULL.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe_: c_int) -> *mut c_void {
    let (Ok(w), Ok(p)) = (world(), pe(pe_)) else {
        return std::ptr::null_mut();
    };
    if offset(w, dest, 0).is_err() {
        return std::ptr::null_mut();
    }
    w.ptr(dest.cast(), p)
        .map_or(std::ptr::null_mut(), |q| q.as_ptr().cast())
}

/// `shmem_info_get_version`.
///
/// # Safety
///
/// `major` and `minor` are valid for a write of an `int` (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    let (ma, mi) = shmem_core::info_get_version();
    // SAFETY: valid per the contract when non-null.
    unsafe {
        if !major.is_null() {
            major.write(ma as c_int);
        }
        if !minor.is_null() {
            minor.write(mi as c_int);
        }
    }
}

/// `shmem_info_get_name`: at most `SHMEM_MAX_NAME_LEN` (256) bytes, NUL included.
///
/// # Safety
///
/// `name` is null or valid for writes of 256 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        return;
    }
    let s = shmem_core::info_get_name();
    let n = s.len().min(255);
    // SAFETY: `name` holds 256 bytes per the contract; `n + 1 <= 256`.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), name.cast::<u8>(), n);
        name.add(n).write(0);
    }
}

/// `shmem_barrier_all`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_barrier_all() {
    call("shmem_barrier_all", (), || world()?.barrier_all());
}

/// `shmem_sync_all`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_sync_all() {
    call("shmem_sync_all", (), || world()?.sync_all());
}

/// `shmem_quiet`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_quiet() {
    // The common case inline: `shmem_init` has run (and installed the panic hook).
    if let Some(w) = crate::world::world_if_open() {
        return crate::boundary::finish("shmem_quiet", (), w.quiet());
    }
    call("shmem_quiet", (), || world()?.quiet());
}

/// `shmem_fence`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_fence() {
    call("shmem_fence", (), || world()?.fence());
}

/// `shmem_pcontrol(level, ...)`: records the profiling level; no profiling library is
/// attached. The C declaration is variadic; the level is the only argument read, and both
/// x86-64 and AArch64 Linux pass it as they pass a named argument of a non-variadic call.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_pcontrol(level: c_int) {
    shmem_core::pcontrol(level);
}

/// `start_pes` (deprecated): `shmem_init`; the argument is ignored, as OpenSHMEM says.
#[unsafe(no_mangle)]
pub extern "C" fn start_pes(npes: c_int) {
    let _ = npes;
    if world().is_err() {
        shmem_init();
    }
}

/// `_my_pe` (deprecated): `shmem_my_pe`.
#[unsafe(no_mangle)]
pub extern "C" fn _my_pe() -> c_int {
    shmem_my_pe()
}

/// `_num_pes` (deprecated): `shmem_n_pes`.
#[unsafe(no_mangle)]
pub extern "C" fn _num_pes() -> c_int {
    shmem_n_pes()
}

/// `shmem_query_initialized` (OpenSHMEM 1.6): 1 between `shmem_init` and `shmem_finalize`.
///
/// # Safety
///
/// `initialized` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_query_initialized(initialized: *mut c_int) {
    if !initialized.is_null() {
        let live = world().is_ok_and(Instance::is_initialized);
        // SAFETY: valid per the contract.
        unsafe { initialized.write(c_int::from(live)) };
    }
}
