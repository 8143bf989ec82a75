//! Remote memory access from C: every typed, sized and byte routine (generated from the type
//! table) lands in [`put`], [`get`], [`iput`] or [`iget`], which translate symmetric addresses
//! to heap offsets and call the Rust core on the default context.

use std::ffi::{c_int, c_void};

use shmem_capi::raw;
use shmem_core::{Error, Result};

use crate::boundary::{call, enter, finish};
use crate::ctx::{ctx_ref, plain_ctx, shmem_ctx_t};
use crate::world::{offset, pe, view};

/// The bytes of `nelems` elements of `size` bytes.
#[inline]
fn bytes(nelems: usize, size: usize) -> Result<usize> {
    nelems
        .checked_mul(size)
        .ok_or_else(|| Error::InvalidParam(format!("{nelems} elements of {size} bytes overflow")))
}

/// The bytes of `nelems` elements of `size` bytes when there are some and they do not
/// overflow: one compare (for a constant `size`) on the hot routines' inline path.
#[inline(always)]
fn some_bytes(nelems: usize, size: usize) -> Option<usize> {
    (size != 0 && nelems.wrapping_sub(1) < usize::MAX / size.max(1)).then(|| nelems * size)
}

/// A put of `nelems` elements of `size` bytes from local `source` to symmetric `dest` on `pe`.
///
/// # Safety
///
/// `source` is readable for the bytes named (until the next quiet, for `nbi`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn put(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) {
    // The common case inline: a blocking put of some bytes on the default context to a PE.
    if !nbi
        && let Some(c) = plain_ctx(ctx)
        && let Ok(pe) = u32::try_from(pe_)
        && let Some(len) = some_bytes(nelems, size)
    {
        // SAFETY: readable for `len` bytes per the C contract.
        let src = unsafe { std::slice::from_raw_parts(source.cast::<u8>(), len) };
        if c.put_to_at_once(dest.cast(), src, pe) {
            return;
        }
    }
    // SAFETY: forwarded.
    unsafe { put_checked(name, ctx, dest, source, nelems, size, pe_, nbi) }
}

/// [`put`], every argument checked in turn.
///
/// # Safety
///
/// As for [`put`].
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
unsafe fn put_checked(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) {
    enter();
    // SAFETY: forwarded.
    let r = unsafe { put_body(ctx, dest, source, nelems, size, pe_, nbi) };
    finish(name, (), r);
}

/// The body of [`put`], a function rather than a closure so that it is always inlined.
///
/// # Safety
///
/// As for [`put`].
#[inline(always)]
unsafe fn put_body(
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) -> Result<()> {
    let len = bytes(nelems, size)?;
    if len == 0 {
        return Ok(());
    }
    let (c, pe) = (ctx_ref(ctx)?, pe(pe_)?);
    if nbi {
        let dst = c.view_at(dest.cast::<u8>(), len)?.offset();
        // SAFETY: the C contract keeps `source` valid until the next quiet.
        unsafe { raw::putmem_nbi(c, dst, source.cast(), len, pe) }
    } else {
        // SAFETY: readable for `len` bytes per the C contract.
        let src = unsafe { std::slice::from_raw_parts(source.cast::<u8>(), len) };
        c.put_to(dest.cast(), src, pe)
    }
}

/// A get of `nelems` elements of `size` bytes from symmetric `source` on `pe` into `dest`.
///
/// # Safety
///
/// `dest` is writable for the bytes named (and untouched until the next quiet, for `nbi`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn get(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) {
    // The common case inline, as for `put`.
    if !nbi
        && let Some(c) = plain_ctx(ctx)
        && let Ok(pe) = u32::try_from(pe_)
        && let Some(len) = some_bytes(nelems, size)
    {
        // SAFETY: writable for `len` bytes per the C contract.
        let dst = unsafe { std::slice::from_raw_parts_mut(dest.cast::<u8>(), len) };
        return finish(name, (), c.get_from(source.cast(), dst, pe));
    }
    // SAFETY: forwarded.
    unsafe { get_checked(name, ctx, dest, source, nelems, size, pe_, nbi) }
}

/// [`get`], every argument checked in turn.
///
/// # Safety
///
/// As for [`get`].
#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
unsafe fn get_checked(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) {
    enter();
    // SAFETY: forwarded.
    let r = unsafe { get_body(ctx, dest, source, nelems, size, pe_, nbi) };
    finish(name, (), r);
}

/// The body of [`get`], a function rather than a closure so that it is always inlined.
///
/// # Safety
///
/// As for [`get`].
#[inline(always)]
unsafe fn get_body(
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    size: usize,
    pe_: c_int,
    nbi: bool,
) -> Result<()> {
    let len = bytes(nelems, size)?;
    if len == 0 {
        return Ok(());
    }
    let (c, pe) = (ctx_ref(ctx)?, pe(pe_)?);
    if nbi {
        let src = c.view_at(source.cast::<u8>(), len)?.offset();
        // SAFETY: the C contract keeps `dest` valid and untouched until the next quiet.
        unsafe { raw::getmem_nbi(c, src, dest.cast(), len, pe) }
    } else {
        // SAFETY: writable for `len` bytes per the C contract.
        let dst = unsafe { std::slice::from_raw_parts_mut(dest.cast::<u8>(), len) };
        c.get_from(source.cast(), dst, pe)
    }
}

/// Runs `$body` with `$t` the unsigned type of `$size` bytes (`[u8; 16]` for 16), or
/// `$other` with `$s` the size when no type has it.
macro_rules! by_size {
    ($size:expr, |$t:ident| $body:expr, |$s:ident| $other:expr) => {
        match $size {
            1 => {
                type $t = u8;
                $body
            }
            2 => {
                type $t = u16;
                $body
            }
            4 => {
                type $t = u32;
                $body
            }
            8 => {
                type $t = u64;
                $body
            }
            16 => {
                type $t = [u8; 16];
                $body
            }
            $s => $other,
        }
    };
}
pub(crate) use by_size;

/// The error for an element size no strided routine moves.
fn unstrided(size: usize) -> Error {
    Error::InvalidParam(format!("no strided routine moves {size}-byte elements"))
}

/// The local span, in elements, of `nelems` elements at stride `stride`.
fn local_len(nelems: usize, stride: isize) -> Result<usize> {
    match nelems {
        0 => Ok(0),
        n => (n - 1)
            .checked_mul(stride.unsigned_abs())
            .and_then(|s| s.checked_add(1))
            .ok_or_else(|| {
                Error::InvalidParam(format!("{n} elements at a stride of {stride} overflow"))
            }),
    }
}

/// A strided put: element `i` of local `source` (at `i * sst`) goes to symmetric `dest` at
/// `i * dst`, strides in elements of `size` bytes.
///
/// # Safety
///
/// `source` is readable for the elements named.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iput(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe_: c_int,
) {
    call(name, (), || {
        if nelems == 0 {
            return Ok(());
        }
        if sst < 0 {
            return Err(Error::InvalidParam(format!(
                "a negative source stride ({sst})"
            )));
        }
        let c = ctx_ref(ctx)?;
        let w = c.instance();
        let (first, pe) = (offset(w, dest, size)?, pe(pe_)?);
        let n = local_len(nelems, sst)?;
        by_size!(
            size,
            |T| {
                // SAFETY: readable for `n` elements per the C contract.
                let src = unsafe { std::slice::from_raw_parts(source.cast::<T>(), n) };
                raw::iput::<T>(c, first, dst, src, sst, nelems, pe)
            },
            |s| Err(unstrided(s))
        )
    });
}

/// A strided get: element `i * sst` of symmetric `source` goes to local `dest` at `i * dst`.
///
/// # Safety
///
/// `dest` is writable for the elements named.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iget(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe_: c_int,
) {
    call(name, (), || {
        if nelems == 0 {
            return Ok(());
        }
        if dst < 0 {
            return Err(Error::InvalidParam(format!(
                "a negative destination stride ({dst})"
            )));
        }
        let c = ctx_ref(ctx)?;
        let w = c.instance();
        let (first, pe) = (offset(w, source, size)?, pe(pe_)?);
        let n = local_len(nelems, dst)?;
        by_size!(
            size,
            |T| {
                // SAFETY: writable for `n` elements per the C contract.
                let out = unsafe { std::slice::from_raw_parts_mut(dest.cast::<T>(), n) };
                raw::iget::<T>(c, first, sst, out, dst, nelems, pe)
            },
            |s| Err(unstrided(s))
        )
    });
}

/// An interleaved block transfer (OpenSHMEM 1.6 `ibput`/`ibget`): block `b` of `bsize`
/// elements of `size` bytes starts at element `b * sst` of the source and lands at element
/// `b * dst` of the destination; `remote_dest` says which side is symmetric. The Rust API's
/// `SymSlice::ibput`/`ibget` check every block before any moves.
///
/// # Safety
///
/// The local side is readable (`ibput`) or writable (`ibget`) for every block.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iblock(
    name: &str,
    ctx: shmem_ctx_t,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    size: usize,
    pe_: c_int,
    remote_dest: bool,
) {
    call(name, (), || {
        if bsize == 0 || nblocks == 0 {
            return Ok(());
        }
        // The elements a side spans: up to the end of its last block.
        let span = |stride: isize| {
            usize::try_from(stride)
                .ok()
                .and_then(|s| (nblocks - 1).checked_mul(s)?.checked_add(bsize))
                .ok_or_else(|| {
                    Error::InvalidParam(format!(
                        "{nblocks} blocks of {bsize} at a stride of {stride} overflow or run backwards"
                    ))
                })
        };
        let (dlen, slen) = (span(dst)?, span(sst)?);
        let c = ctx_ref(ctx)?;
        let w = c.instance();
        let pe = pe(pe_)?;
        by_size!(
            size,
            |T| {
                if remote_dest {
                    let remote = view(w, dest.cast::<T>().cast_const(), dlen)?.in_ctx(c);
                    // SAFETY: readable for every block per the C contract.
                    let src = unsafe { std::slice::from_raw_parts(source.cast::<T>(), slen) };
                    remote.ibput(dst, src, sst, bsize, nblocks, pe)
                } else {
                    let remote = view(w, source.cast::<T>(), slen)?.in_ctx(c);
                    // SAFETY: writable for every block per the C contract.
                    let out = unsafe { std::slice::from_raw_parts_mut(dest.cast::<T>(), dlen) };
                    remote.ibget(sst, out, dst, bsize, nblocks, pe)
                }
            },
            |s| Err(unstrided(s))
        )
    });
}
