//! CANN's host point-to-point synchronisation (`host/data_plane/shmem_host_p2p_sync.h`): the
//! `wait_until`/`wait`/`test` families for CANN's 10 types (its RMA types but `double`), with
//! their `_all`/`_any`/`_some` and `_vector` forms, `aclshmem_signal_wait_until`,
//! `aclshmemx_signal_wait_until_on_stream`, `aclshmemx_handle_wait` and
//! `util_get_ffts_config`.
//!
//! As in CANN, a host wait or test runs after the work queued on the active instance's default
//! stream (CANN launches it there and synchronises the stream), so the default stream is
//! synchronised first. The routines return nothing and write their result through `res_out`;
//! a bad comparison is logged and writes CANN's sentinel (`SIZE_MAX` for the `_any` forms, 0
//! for the `_some` forms and `test`). There is no host `test_all` (only `test_all_vector`), as in
//! CANN.

use std::ffi::{c_int, c_void};

use bytemuck::Pod;
use shmem_capi::cann;
use shmem_core::{Cmp, Error, Instance, Result, Scalar, SymSlice};

use super::failed;
use crate::p2p::cmp;

/// Where host code reaches `n` elements at `p`: CANN's routines read `status`, `indices` and
/// `cmp_values` and write `res_out` on the device, so they are device memory (a heap, or memory
/// from `aclrtMalloc`), which this library reaches through the ACL runtime's alias; host memory,
/// which CANN does not accept, is used as it is.
fn host_side<T>(p: *const T, n: usize) -> *const T {
    if p.is_null() {
        return p;
    }
    let bytes = n.saturating_mul(size_of::<T>()).max(1);
    super::acl::device_alias(p.cast(), bytes).map_or(p, |a| a.cast_const().cast())
}

/// The `status` array, if any (see [`host_side`]).
///
/// # Safety
///
/// `st` is null or valid for `nelems` reads.
unsafe fn status<'a>(st: *const c_int, nelems: usize) -> Option<&'a [i32]> {
    // SAFETY: forwarded; the alias reaches the same bytes.
    unsafe { crate::p2p::status(host_side(st, nelems), nelems) }
}

/// The `cmp_values` array (see [`host_side`]).
///
/// # Safety
///
/// `p` is valid for `nelems` reads.
unsafe fn values<'a, T>(p: *const T, nelems: usize) -> Result<&'a [T]> {
    // SAFETY: forwarded; the alias reaches the same bytes.
    unsafe { crate::p2p::values(host_side(p, nelems), nelems) }
}

/// The `indices` array (see [`host_side`]).
///
/// # Safety
///
/// `p` is valid for `nelems` writes.
unsafe fn indices<'a>(p: *mut usize, nelems: usize) -> Result<&'a mut [usize]> {
    // SAFETY: forwarded; the alias reaches the same bytes, writable.
    unsafe { crate::p2p::indices(host_side(p.cast_const(), nelems).cast_mut(), nelems) }
}

/// The `n` words at symmetric address `p` of the active instance, after its default stream's
/// queued work.
fn words<T: Scalar + Pod>(inst: &Instance, p: *const T, n: usize) -> Result<SymSlice<'_, T>> {
    super::rma::synchronize_default()?;
    inst.default_ctx().view_at(p, n)
}

/// Writes `v` through `res_out`, if it is not null.
///
/// # Safety
///
/// `res_out` is null or valid for a write.
unsafe fn write<R>(res_out: *mut R, v: R) {
    if !res_out.is_null() {
        // SAFETY: per the contract; the alias of device memory is writable.
        unsafe { host_side(res_out.cast_const(), 1).cast_mut().write(v) };
    }
}

/// Runs a host wait or test: on a failure, logs it and writes `sentinel` through `res_out`.
///
/// # Safety
///
/// `res_out` is null or valid for a write.
unsafe fn run<R: Copy>(
    name: &str,
    res_out: *mut R,
    sentinel: R,
    f: impl FnOnce(&Instance) -> Result<R>,
) {
    crate::boundary::enter();
    match cann::active().and_then(|inst| f(&inst)) {
        // SAFETY: forwarded.
        Ok(v) => unsafe { write(res_out, v) },
        Err(e) => {
            failed(name, &e);
            // SAFETY: forwarded.
            unsafe { write(res_out, sentinel) };
        }
    }
}

/// The comparison, checked before anything waits.
fn comparison(c: c_int) -> Result<Cmp> {
    cmp(c).map_err(|_| Error::InvalidParam(format!("{c} is not an ACLSHMEM_CMP_* value")))
}

macro_rules! p2p_typed {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("CANN's point-to-point routines on `", stringify!($t), "` (`aclshmem_", stringify!($name), "_*`).")]
        pub mod $name {
            use super::*;
            type T = $t;

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until`.")]
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until"))]
            pub extern "C" fn wait_until(ivar: *mut T, cmp: c_int, cmp_value: T) {
                // SAFETY: no result pointer.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until"), std::ptr::null_mut::<()>(), (), |i| {
                    let c = comparison(cmp)?;
                    words(i, ivar.cast_const(), 1)?.elem(0).wait_until(c, cmp_value).map(drop)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait`: `wait_until` with `ACLSHMEM_CMP_NE`.")]
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait"))]
            pub extern "C" fn wait(ivar: *mut T, cmp_value: T) {
                // SAFETY: no result pointer.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait"), std::ptr::null_mut::<()>(), (), |i| {
                    words(i, ivar.cast_const(), 1)?.elem(0).wait(cmp_value).map(drop)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_all`.")]
            ///
            /// # Safety
            ///
            /// `status` is null or valid for `nelems` reads.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_all"))]
            pub unsafe extern "C" fn wait_until_all(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_value: T) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_all"), std::ptr::null_mut::<()>(), (), |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(()); }
                    words(i, ivars.cast_const(), nelems)?.wait_until_all(status(st, nelems), c, cmp_value)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_any`: the index through `res_out` (`SIZE_MAX` for none).")]
            ///
            /// # Safety
            ///
            /// `status` is null or valid for `nelems` reads; `res_out` null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_any"))]
            pub unsafe extern "C" fn wait_until_any(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_value: T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_any"), res_out, usize::MAX, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(usize::MAX); }
                    Ok(words(i, ivars.cast_const(), nelems)?.wait_until_any(status(st, nelems), c, cmp_value)?.unwrap_or(usize::MAX))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_some`: the count through `res_out`.")]
            ///
            /// # Safety
            ///
            /// `indices` is valid for `nelems` writes; `status` null or valid for `nelems` reads;
            /// `res_out` null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_some"))]
            pub unsafe extern "C" fn wait_until_some(ivars: *mut T, nelems: usize, idx: *mut usize, st: *const c_int, cmp: c_int, cmp_value: T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_some"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(0); }
                    words(i, ivars.cast_const(), nelems)?.wait_until_some(indices(idx, nelems)?, status(st, nelems), c, cmp_value)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_all_vector`.")]
            ///
            /// # Safety
            ///
            /// `cmp_values` is valid for `nelems` reads; `status` null or valid for them.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_all_vector"))]
            pub unsafe extern "C" fn wait_until_all_vector(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_values: *mut T) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_all_vector"), std::ptr::null_mut::<()>(), (), |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(()); }
                    words(i, ivars.cast_const(), nelems)?.wait_until_all_vector(status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_any_vector`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_all_vector`; `res_out` null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_any_vector"))]
            pub unsafe extern "C" fn wait_until_any_vector(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_values: *mut T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_any_vector"), res_out, usize::MAX, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(usize::MAX); }
                    Ok(words(i, ivars.cast_const(), nelems)?.wait_until_any_vector(status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)?.unwrap_or(usize::MAX))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_wait_until_some_vector`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_some`, with `cmp_values` valid for `nelems` reads.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_wait_until_some_vector"))]
            pub unsafe extern "C" fn wait_until_some_vector(ivars: *mut T, nelems: usize, idx: *mut usize, st: *const c_int, cmp: c_int, cmp_values: *mut T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_wait_until_some_vector"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(0); }
                    words(i, ivars.cast_const(), nelems)?.wait_until_some_vector(indices(idx, nelems)?, status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test`: 1 or 0 through `res_out`.")]
            ///
            /// # Safety
            ///
            /// `res_out` is null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test"))]
            pub unsafe extern "C" fn test(ivars: *mut T, cmp: c_int, cmp_value: T, res_out: *mut c_int) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    Ok(c_int::from(words(i, ivars.cast_const(), 1)?.elem(0).test(c, cmp_value)?))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test_any`.")]
            ///
            /// # Safety
            ///
            /// `status` is null or valid for `nelems` reads; `res_out` null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test_any"))]
            pub unsafe extern "C" fn test_any(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_value: T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test_any"), res_out, usize::MAX, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(usize::MAX); }
                    Ok(words(i, ivars.cast_const(), nelems)?.test_any(status(st, nelems), c, cmp_value)?.unwrap_or(usize::MAX))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test_some`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_some`.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test_some"))]
            pub unsafe extern "C" fn test_some(ivars: *mut T, nelems: usize, idx: *mut usize, st: *const c_int, cmp: c_int, cmp_value: T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test_some"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(0); }
                    words(i, ivars.cast_const(), nelems)?.test_some(indices(idx, nelems)?, status(st, nelems), c, cmp_value)
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test_all_vector`: 1 or 0 through `res_out`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_all_vector`; `res_out` null or valid for a write.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test_all_vector"))]
            pub unsafe extern "C" fn test_all_vector(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_values: *mut T, res_out: *mut c_int) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test_all_vector"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(1); }
                    Ok(c_int::from(words(i, ivars.cast_const(), nelems)?.test_all_vector(status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)?))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test_any_vector`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_any_vector`.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test_any_vector"))]
            pub unsafe extern "C" fn test_any_vector(ivars: *mut T, nelems: usize, st: *const c_int, cmp: c_int, cmp_values: *mut T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test_any_vector"), res_out, usize::MAX, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(usize::MAX); }
                    Ok(words(i, ivars.cast_const(), nelems)?.test_any_vector(status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)?.unwrap_or(usize::MAX))
                }) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_test_some_vector`.")]
            ///
            /// # Safety
            ///
            /// As for `wait_until_some_vector`.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_test_some_vector"))]
            pub unsafe extern "C" fn test_some_vector(ivars: *mut T, nelems: usize, idx: *mut usize, st: *const c_int, cmp: c_int, cmp_values: *mut T, res_out: *mut usize) {
                // SAFETY: per the contract.
                unsafe { run(concat!("aclshmem_", stringify!($name), "_test_some_vector"), res_out, 0, |i| {
                    let c = comparison(cmp)?;
                    if nelems == 0 { return Ok(0); }
                    words(i, ivars.cast_const(), nelems)?.test_some_vector(indices(idx, nelems)?, status(st, nelems), c, values(cmp_values.cast_const(), nelems)?)
                }) }
            }
        }
    )*};
}

p2p_types!(p2p_typed);

/// `aclshmem_signal_wait_until`: waits until the int32 signal word at `sig_addr` compares to
/// `cmp_val` with `cmp`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_signal_wait_until(sig_addr: *mut i32, cmp: c_int, cmp_val: i32) {
    int32::wait_until(sig_addr, cmp, cmp_val);
}

/// `util_get_ffts_config`: 0, as on CANN builds without the FFTS configuration (the simulated
/// cores need none).
#[unsafe(no_mangle)]
pub extern "C" fn util_get_ffts_config() -> u64 {
    0
}

/// `aclshmemx_handle_wait`: a wait for a team handle's outstanding work, in `stream`'s order;
/// the simulator's work on a stream is complete when it has run, so nothing is added.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_handle_wait(handle: c_int, stream: *mut c_void) {
    let _ = (handle, stream);
}
