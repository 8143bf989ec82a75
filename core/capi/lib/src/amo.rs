//! Atomics from C: every typed atomic (generated from the AMO type tables) runs [`run`] on the
//! element at the symmetric address it names, through the Rust core's typed atomics.

use std::ffi::c_int;

use shmem_core::{AmoType, Result, SymElem};

use crate::boundary::call;
use crate::ctx::{ctx_ref, shmem_ctx_t};
use crate::world::{offset, pe};

/// Runs `op` on the element of type `T` at symmetric address `dest` on `pe`, in `ctx`; on a
/// failure (logged) the result is `fallback`.
fn with_elem<T: AmoType, R>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    fallback: R,
    op: impl FnOnce(SymElem<'_, T>, u32) -> Result<R>,
) -> R {
    call(name, fallback, || {
        let c = ctx_ref(ctx)?;
        let w = c.instance();
        let off = offset(w, dest.cast(), size_of::<T>())?;
        let elem = w.view::<T>(off, 1)?.in_ctx(c).elem(0);
        op(elem, pe(pe_)?)
    })
}

/// A fetching atomic: its result, or `T`'s zero on a failure (logged).
///
/// # Safety
///
/// None beyond the C contract: `dest` is only translated to a heap offset, never dereferenced.
#[inline]
pub(crate) unsafe fn run<T: AmoType + Default>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: impl FnOnce(SymElem<'_, T>, u32) -> Result<T>,
) -> T {
    with_elem(name, ctx, dest, pe_, T::default(), op)
}

/// An atomic that returns nothing.
///
/// # Safety
///
/// As for [`run`].
#[inline]
pub(crate) unsafe fn run_void<T: AmoType>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: impl FnOnce(SymElem<'_, T>, u32) -> Result<()>,
) {
    with_elem(name, ctx, dest, pe_, (), op)
}

/// A non-blocking fetching atomic: performed at once (a completion before the next quiet is
/// allowed), its value written to `*fetch`.
///
/// # Safety
///
/// `fetch` is valid for a write of a `T` (or null, then nothing is written).
#[inline]
pub(crate) unsafe fn deliver<T>(fetch: *mut T, value: T) {
    if !fetch.is_null() {
        // SAFETY: valid per the contract.
        unsafe { fetch.write(value) };
    }
}
