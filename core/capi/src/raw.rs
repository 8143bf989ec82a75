//! The byte-level calls of the C ABIs on heap offsets: the symmetric heap by address
//! (`aclshmem_malloc` returns `heap_base + offset`, `aclshmem_free` takes it back) and RMA on
//! symmetric addresses (`aclshmem_putmem`, `shmem_iput64`, …). Each call maps onto the typed
//! core: allocations are [`SymBuf`]s given up with [`SymBuf::into_raw`] and taken back with
//! [`SymBuf::from_raw`], accesses are views ([`Instance::view`]).
//!
//! Every call is checked by the core as its typed counterpart is; a bad offset or PE returns
//! the core's error and writes nothing.

use bytemuck::Pod;
use shmem::{CtxRef, Error, Instance, Pe, Result, SymBuf};

/// Allocates `size` bytes (`aclshmem_malloc`); returns the heap offset. Collective.
#[inline]
pub fn malloc(inst: &Instance, size: usize) -> Result<usize> {
    SymBuf::<u8>::malloc_raw(inst, size)
}

/// Allocates `count * size` zeroed bytes (`aclshmem_calloc`); returns the heap offset. An
/// overflowing product fails on every PE with `INVALID_VALUE` (CANN returns before its barrier
/// there, which can desynchronise the PEs; this call stays collective). Collective.
pub fn calloc(inst: &Instance, count: usize, size: usize) -> Result<usize> {
    match count.checked_mul(size) {
        Some(total) => inst.calloc::<u8>(total).map(SymBuf::into_raw),
        None => {
            // Still collective: a request every PE refuses the same way.
            let _ = inst.malloc::<u8>(0);
            Err(Error::InvalidValue(format!(
                "calloc of {count} x {size} bytes overflows"
            )))
        }
    }
}

/// Allocates `size` bytes at a multiple of `alignment`, a power of two (`aclshmem_align`);
/// returns the heap offset. Collective.
pub fn align(inst: &Instance, alignment: usize, size: usize) -> Result<usize> {
    inst.align::<u8>(alignment, size).map(SymBuf::into_raw)
}

/// Releases the block that starts at heap offset `offset` (`aclshmem_free`). Offsets that do
/// not start an allocated block (a double free, an interior pointer) are reported and leave the
/// heap unchanged. Collective.
#[inline]
pub fn free(inst: &Instance, offset: usize) -> Result<()> {
    SymBuf::<u8>::free_raw(inst, offset)
}

/// Resizes the block at heap offset `offset` to `size` bytes (`shmem_realloc`): `None`
/// allocates, a size of 0 frees (returning `None`). The contents are kept up to the smaller
/// of the two sizes; on failure the block is unchanged. Collective.
pub fn realloc(inst: &Instance, offset: Option<usize>, size: usize) -> Result<Option<usize>> {
    match (offset, size) {
        (None, 0) => Ok(None),
        (None, n) => malloc(inst, n).map(Some),
        (Some(off), 0) => free(inst, off).map(|()| None),
        (Some(off), n) => {
            let mut buf = SymBuf::<u8>::from_raw(inst, off);
            match buf.realloc(n) {
                Ok(()) => Ok(Some(buf.into_raw())),
                Err(e) => {
                    // The block is unchanged: give the handle up without freeing it.
                    let _ = buf.into_raw();
                    Err(e)
                }
            }
        }
    }
}

/// Copies `src` to heap offset `dst` on `pe` (`aclshmem_putmem`), on `ctx`.
pub fn putmem(ctx: CtxRef<'_>, dst: usize, src: &[u8], pe: Pe) -> Result<()> {
    ctx.instance()
        .view::<u8>(dst, src.len())?
        .in_ctx(ctx)
        .put(src, pe)
}

/// Copies `dst.len()` bytes from heap offset `src` on `pe` into `dst` (`aclshmem_getmem`).
pub fn getmem(ctx: CtxRef<'_>, src: usize, dst: &mut [u8], pe: Pe) -> Result<()> {
    ctx.instance()
        .view::<u8>(src, dst.len())?
        .in_ctx(ctx)
        .get(dst, pe)
}

/// Non-blocking [`putmem`] (`aclshmem_putmem_nbi`), completed by the next quiet of `ctx`.
///
/// # Safety
///
/// `src..src+len` stays readable (and unchanged, if its current contents are to be
/// delivered) until the next quiet of `ctx` returns.
pub unsafe fn putmem_nbi(
    ctx: CtxRef<'_>,
    dst: usize,
    src: *const u8,
    len: usize,
    pe: Pe,
) -> Result<()> {
    let view = ctx.instance().view::<u8>(dst, len)?.in_ctx(ctx);
    // SAFETY: forwarded from this function's contract.
    unsafe { view.put_nbi_raw(src, pe) }
}

/// Non-blocking [`getmem`] (`aclshmem_getmem_nbi`), completed by the next quiet of `ctx`.
///
/// # Safety
///
/// `dst..dst+len` stays writable, and is not accessed, until the next quiet of `ctx` returns.
pub unsafe fn getmem_nbi(
    ctx: CtxRef<'_>,
    src: usize,
    dst: *mut u8,
    len: usize,
    pe: Pe,
) -> Result<()> {
    let view = ctx.instance().view::<u8>(src, len)?.in_ctx(ctx);
    // SAFETY: forwarded from this function's contract.
    unsafe { view.get_nbi_raw(dst, pe) }
}

/// The view that holds the `nelems` elements of `T` at heap offset `first`, `stride` elements
/// apart (backwards for a negative stride), and the index of element 0 in it.
fn strided_view<'c, T: Pod>(
    ctx: CtxRef<'c>,
    first: usize,
    stride: isize,
    nelems: usize,
) -> Result<(shmem::SymSlice<'c, T>, usize)> {
    let sz = std::mem::size_of::<T>();
    let bad = || {
        Error::OutOfBounds(format!(
            "{nelems} elements of {sz} bytes with a stride of {stride} elements from heap offset {first:#x} do not lie inside the symmetric heap"
        ))
    };
    // The index of the last element relative to element 0, and the span of indices.
    let last = match nelems {
        0 => 0,
        n => isize::try_from(n - 1)
            .ok()
            .and_then(|n| stride.checked_mul(n))
            .ok_or_else(bad)?,
    };
    let below = last.min(0).unsigned_abs();
    let len = if nelems == 0 {
        0
    } else {
        last.unsigned_abs() + 1
    };
    if len.checked_mul(sz).is_none() {
        return Err(Error::InvalidParam(format!(
            "{nelems} elements with a stride of {stride} elements of {sz} bytes overflow"
        )));
    }
    let start = below
        .checked_mul(sz)
        .and_then(|b| first.checked_sub(b))
        .ok_or_else(bad)?;
    let view = ctx.instance().view::<T>(start, len)?.in_ctx(ctx);
    Ok((view, below))
}

/// Strided put of `nelems` elements of `T` (`shmem_iput64`, `aclshmem_iput32`, …): element `i`
/// goes to heap offset `dst + i * dst_stride * size_of::<T>()` on `pe` and comes from
/// `src[i * src_stride]` (strides in elements; the remote one may be negative).
#[allow(clippy::too_many_arguments)] // the shape of the C routines it serves
pub fn iput<T: Pod>(
    ctx: CtxRef<'_>,
    dst: usize,
    dst_stride: isize,
    src: &[T],
    src_stride: isize,
    nelems: usize,
    pe: Pe,
) -> Result<()> {
    let (view, start) = strided_view::<T>(ctx, dst, dst_stride, nelems)?;
    view.iput_at(start, dst_stride, src, src_stride, nelems, pe)
}

/// Strided get (`shmem_iget64`, …): element `i` comes from heap offset
/// `src + i * src_stride * size_of::<T>()` on `pe` and goes to `dst[i * dst_stride]`.
#[allow(clippy::too_many_arguments)] // the shape of the C routines it serves
pub fn iget<T: Pod>(
    ctx: CtxRef<'_>,
    src: usize,
    src_stride: isize,
    dst: &mut [T],
    dst_stride: isize,
    nelems: usize,
    pe: Pe,
) -> Result<()> {
    let (view, start) = strided_view::<T>(ctx, src, src_stride, nelems)?;
    view.iget_at(start, src_stride, dst, dst_stride, nelems, pe)
}
