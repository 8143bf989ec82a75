//! Point-to-point synchronisation, signals and locks from C: the waited words are views of
//! the default instance's heap at the addresses given, and every routine maps onto the Rust
//! core's waits and tests, signals and MCS locks.

use std::ffi::{c_int, c_long};

use bytemuck::Pod;
use shmem_core::{Cmp, Error, Result, Scalar, SignalOp, SymSlice};

use crate::boundary::call;
use crate::ctx::{ctx_ref, shmem_ctx_t};
use crate::world::{pe, view as view_at, world};

/// The `nelems` words of `T` at symmetric address `ivars`, on the default context.
pub(crate) fn view<T: Scalar + Pod>(
    ivars: *const T,
    nelems: usize,
) -> Result<SymSlice<'static, T>> {
    view_at(world()?, ivars, nelems)
}

/// `SHMEM_CMP_*`.
pub(crate) fn cmp(c: c_int) -> Result<Cmp> {
    Cmp::from_raw(c).ok_or_else(|| Error::InvalidParam(format!("{c} is not a SHMEM_CMP_* value")))
}

/// The `status` array of a set routine (NULL: every element takes part).
///
/// # Safety
///
/// `status` is null or valid for `nelems` reads.
pub(crate) unsafe fn status<'a>(status: *const c_int, nelems: usize) -> Option<&'a [i32]> {
    // SAFETY: per the contract.
    (!status.is_null()).then(|| unsafe { std::slice::from_raw_parts(status, nelems) })
}

/// `nelems` values at `p` (the `cmp_values` of a vector routine, or `indices`).
///
/// # Safety
///
/// `p` is valid for `nelems` reads.
pub(crate) unsafe fn values<'a, T>(p: *const T, nelems: usize) -> Result<&'a [T]> {
    if p.is_null() {
        return Err(Error::InvalidParam("the array is NULL".into()));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts(p, nelems) })
}

/// The `indices` array of a `some` routine.
///
/// # Safety
///
/// `p` is valid for `nelems` writes.
pub(crate) unsafe fn indices<'a>(p: *mut usize, nelems: usize) -> Result<&'a mut [usize]> {
    if p.is_null() {
        return Err(Error::InvalidParam("indices is NULL".into()));
    }
    // SAFETY: per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, nelems) })
}

/// Runs a wait or test routine: `empty` is its result on an empty set (no address is looked
/// at then), `fallback` its result on a failure.
pub(crate) fn run<R>(
    name: &str,
    nelems: usize,
    empty: R,
    fallback: R,
    f: impl FnOnce() -> Result<R>,
) -> R {
    if nelems == 0 {
        return empty;
    }
    call(name, fallback, f)
}

/// The 64-bit signal word at `sig_addr`, on context `ctx`.
fn signal_word(
    ctx: shmem_ctx_t,
    sig_addr: *const u64,
) -> Result<shmem_core::SymElem<'static, u64>> {
    let c = ctx_ref(ctx)?;
    let w = c.instance();
    Ok(view_at(w, sig_addr, 1)?.in_ctx(c).elem(0))
}

/// A signal operation: `SET` is 0 and `ADD` 1 in both OpenSHMEM (`SHMEM_SIGNAL_*`) and CANN
/// (`ACLSHMEM_SIGNAL_*`).
pub(crate) fn signal_op(op: c_int) -> Result<SignalOp> {
    match op {
        0 => Ok(SignalOp::Set),
        1 => Ok(SignalOp::Add),
        o => Err(Error::InvalidParam(format!(
            "{o} is not a signal operation (SET is 0, ADD 1)"
        ))),
    }
}

/// A put of `nelems` elements of `size` bytes with a signal (blocking, or non-blocking and
/// completed at once, as the specification allows).
///
/// # Safety
///
/// `source` is readable for the bytes named.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn put_signal(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut std::ffi::c_void,
    source: *const std::ffi::c_void,
    nelems: usize,
    size: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe_: c_int,
) {
    call(name, (), || {
        let len = nelems.checked_mul(size).ok_or_else(|| {
            Error::InvalidParam(format!("{nelems} elements of {size} bytes overflow"))
        })?;
        let c = ctx_ref(ctx)?;
        let sig = signal_word(ctx, sig_addr)?;
        let view = view_at(c.instance(), dest.cast::<u8>().cast_const(), len)?.in_ctx(c);
        let src: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: readable for `len` bytes per the contract.
            unsafe { std::slice::from_raw_parts(source.cast(), len) }
        };
        view.put_signal(src, sig, signal, signal_op(sig_op)?, pe(pe_)?)
    });
}

/// `shmem_signal_fetch`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    call("shmem_signal_fetch", 0, || {
        signal_word(crate::ctx::default(), sig_addr)?.signal_fetch()
    })
}

/// `shmem_signal_wait_until`: the value that satisfied the comparison.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_wait_until(sig_addr: *mut u64, cmp_: c_int, cmp_value: u64) -> u64 {
    call("shmem_signal_wait_until", 0, || {
        signal_word(crate::ctx::default(), sig_addr)?.signal_wait_until(cmp(cmp_)?, cmp_value)
    })
}

fn signal_update(
    name: &str,
    ctx: shmem_ctx_t,
    sig_addr: *mut u64,
    signal: u64,
    op: SignalOp,
    pe_: c_int,
) {
    call(name, (), || {
        signal_word(ctx, sig_addr)?.signal_op(signal, op, pe(pe_)?)
    });
}

/// `shmem_signal_add` (OpenSHMEM 1.6).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_add(sig_addr: *mut u64, signal: u64, pe: c_int) {
    signal_update(
        "shmem_signal_add",
        crate::ctx::default(),
        sig_addr,
        signal,
        SignalOp::Add,
        pe,
    );
}

/// `shmem_signal_set` (OpenSHMEM 1.6).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_signal_set(sig_addr: *mut u64, signal: u64, pe: c_int) {
    signal_update(
        "shmem_signal_set",
        crate::ctx::default(),
        sig_addr,
        signal,
        SignalOp::Set,
        pe,
    );
}

/// `shmem_ctx_signal_add` (OpenSHMEM 1.6).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_signal_add(
    ctx: shmem_ctx_t,
    sig_addr: *mut u64,
    signal: u64,
    pe: c_int,
) {
    signal_update(
        "shmem_ctx_signal_add",
        ctx,
        sig_addr,
        signal,
        SignalOp::Add,
        pe,
    );
}

/// `shmem_ctx_signal_set` (OpenSHMEM 1.6).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_signal_set(
    ctx: shmem_ctx_t,
    sig_addr: *mut u64,
    signal: u64,
    pe: c_int,
) {
    signal_update(
        "shmem_ctx_signal_set",
        ctx,
        sig_addr,
        signal,
        SignalOp::Set,
        pe,
    );
}

fn lock_word(lock: *const c_long) -> Result<shmem_core::SymElem<'static, i64>> {
    Ok(view::<i64>(lock.cast(), 1)?.elem(0))
}

/// `shmem_set_lock`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_set_lock(lock: *mut c_long) {
    call("shmem_set_lock", (), || lock_word(lock)?.set_lock());
}

/// `shmem_clear_lock`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    call("shmem_clear_lock", (), || lock_word(lock)?.clear_lock());
}

/// `shmem_test_lock`: 0 when this call acquired the lock, 1 when it is held.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    call("shmem_test_lock", 1, || {
        Ok(c_int::from(!lock_word(lock)?.test_lock()?))
    })
}
