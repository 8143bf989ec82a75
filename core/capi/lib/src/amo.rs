//! Atomics from C: every typed atomic (generated from the AMO type tables) is one
//! [`AmoOp`] on the element at the symmetric address it names, run by [`run`] or
//! [`run_void`] through the Rust core's [`shmem_core::CtxRef::atomic_at`].

use std::ffi::c_int;

use shmem_core::{AmoOp, AmoType, Result};

use crate::boundary::{enter, finish};
use crate::ctx::{ctx_ref, plain_ctx, shmem_ctx_t};
use crate::world::pe;

/// A fetching atomic: `op` on the element of type `T` at symmetric address `dest` on `pe`, in
/// `ctx`; its previous value, or `T`'s zero on a failure (logged).
///
/// # Safety
///
/// None beyond the C contract: `dest` is only translated to a heap offset, never dereferenced.
#[inline(always)]
pub(crate) unsafe fn run<T: AmoType + Default>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: AmoOp,
) -> T {
    // The common case inline: the default context and a PE number that is not negative.
    if let Some(c) = plain_ctx(ctx)
        && let Ok(pe) = u32::try_from(pe_)
    {
        return finish(name, T::default(), c.atomic_at(dest.cast_const(), op, pe));
    }
    // The operation passes through `black_box` so that the inline path keeps it a constant
    // (handed by reference to an outlined call, it would live in memory on both paths).
    // SAFETY: forwarded.
    unsafe { run_checked(name, ctx, dest, pe_, std::hint::black_box(op)) }
}

/// [`run`], every argument checked in turn.
///
/// # Safety
///
/// As for [`run`].
#[cold]
#[inline(never)]
unsafe fn run_checked<T: AmoType + Default>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: AmoOp,
) -> T {
    enter();
    finish(name, T::default(), atomic(ctx, dest, pe_, op))
}

/// The body of [`run`], a function rather than a closure so that it is always inlined.
#[inline(always)]
fn atomic<T: AmoType>(ctx: shmem_ctx_t, dest: *mut T, pe_: c_int, op: AmoOp) -> Result<T> {
    let (c, pe) = (ctx_ref(ctx)?, pe(pe_)?);
    c.atomic_at(dest.cast_const(), op, pe)
}

/// The body of [`run_void`].
#[inline(always)]
fn atomic_post<T: AmoType>(ctx: shmem_ctx_t, dest: *mut T, pe_: c_int, op: AmoOp) -> Result<()> {
    let (c, pe) = (ctx_ref(ctx)?, pe(pe_)?);
    c.atomic_post_at(dest.cast_const(), op, pe)
}

/// An atomic that returns nothing (it may complete after it returns, until the next quiet).
///
/// # Safety
///
/// As for [`run`].
#[inline(always)]
pub(crate) unsafe fn run_void<T: AmoType>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: AmoOp,
) {
    if let Some(c) = plain_ctx(ctx)
        && let Ok(pe) = u32::try_from(pe_)
    {
        return finish(name, (), c.atomic_post_at(dest.cast_const(), op, pe));
    }
    // SAFETY: forwarded (and `black_box` as in `run`).
    unsafe { run_void_checked(name, ctx, dest, pe_, std::hint::black_box(op)) }
}

/// [`run_void`], every argument checked in turn.
///
/// # Safety
///
/// As for [`run`].
#[cold]
#[inline(never)]
unsafe fn run_void_checked<T: AmoType>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: AmoOp,
) {
    enter();
    finish(name, (), atomic_post(ctx, dest, pe_, op));
}

/// A non-blocking fetching atomic: performed at once (a completion before the next quiet is
/// allowed), its value written to `*fetch`. A failed call (logged) writes nothing.
///
/// # Safety
///
/// `fetch` is valid for a write of a `T` (or null, then nothing is written); `dest` as for
/// [`run`].
#[inline(always)]
pub(crate) unsafe fn run_nbi<T: AmoType>(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut T,
    pe_: c_int,
    op: AmoOp,
    fetch: *mut T,
) {
    enter();
    let fetched = match plain_ctx(ctx).zip(u32::try_from(pe_).ok()) {
        Some((c, pe)) => c.atomic_at(dest.cast_const(), op, pe),
        None => atomic(ctx, dest, pe_, op),
    };
    if let Some(v) = finish(name, None, fetched.map(Some))
        && !fetch.is_null()
    {
        // SAFETY: valid per the contract.
        unsafe { fetch.write(v) };
    }
}
