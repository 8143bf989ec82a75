//! Typed handles to symmetric memory: [`SymBuf`] owns an allocation, [`SymSlice`] views part of
//! one. Neither gives out `&T` or `&mut T`: peers may write the memory at any time, so data
//! moves by value, through copies (`put`, `get`, `to_vec`), and elements must be
//! [`bytemuck::Pod`].

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::ptr::NonNull;

use bytemuck::Pod;
use shmem_backend::Pe;

use crate::ctx::{Context, CtxRef};
use crate::error::{Error, Result};
use crate::heap::HeapCall;
use crate::instance::Instance;

/// A symmetric allocation of `len` elements of `T`: the same offset in every PE's heap.
///
/// Allocate it collectively with [`Instance::malloc`], [`Instance::calloc`] or
/// [`Instance::align`] and release it collectively with [`SymBuf::free`]. Dropping a `SymBuf`
/// without freeing it keeps the block allocated until the instance is finalised (a collective
/// operation cannot run from a destructor, whose order differs between PEs).
pub struct SymBuf<T> {
    inst: Instance,
    offset: usize,
    len: usize,
    freed: bool,
    _t: PhantomData<T>,
}

impl<T> std::fmt::Debug for SymBuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymBuf")
            .field("instance", &self.inst.id())
            .field("offset", &format_args!("{:#x}", self.offset))
            .field("len", &self.len)
            .finish()
    }
}

/// A view of `len` consecutive elements of a symmetric allocation, and the context its
/// operations are issued on (the default context unless [`SymSlice::on`] chose another).
///
/// A view belongs to the instance that allocated its memory: used through a context, scope or
/// team of another instance, every operation fails with `INVALID_PARAM` and writes nothing
/// (the same heap offset in another instance is other data).
pub struct SymSlice<'a, T> {
    /// The instance whose heap holds the elements.
    pub(crate) home: &'a Instance,
    pub(crate) ctx: CtxRef<'a>,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    _t: PhantomData<&'a T>,
}

/// One element of a symmetric allocation: the target of atomics, signals and waits. Like a
/// [`SymSlice`], it belongs to the instance that allocated it.
pub struct SymElem<'a, T> {
    /// The instance whose heap holds the element.
    pub(crate) home: &'a Instance,
    pub(crate) ctx: CtxRef<'a>,
    pub(crate) offset: usize,
    _t: PhantomData<&'a T>,
}

impl<T> Clone for SymElem<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SymElem<'_, T> {}

impl<T> std::fmt::Debug for SymElem<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymElem")
            .field("offset", &format_args!("{:#x}", self.offset))
            .finish()
    }
}

impl<'a, T: Pod> SymElem<'a, T> {
    /// The byte offset of the element in the symmetric heap.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The instance it belongs to.
    pub fn instance(&self) -> &'a Instance {
        self.home
    }

    /// The same element, with operations issued on `ctx` (a context of the element's
    /// instance; another instance's makes every operation fail).
    pub fn on<'c>(&self, ctx: &'c Context) -> SymElem<'c, T>
    where
        'a: 'c,
    {
        SymElem {
            home: self.home,
            ctx: ctx.as_ref(),
            offset: self.offset,
            _t: PhantomData,
        }
    }

    /// The local address of the element.
    pub fn as_ptr(&self) -> *mut T {
        self.home.heap_base().wrapping_add(self.offset).cast()
    }
}

impl<T> Clone for SymSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SymSlice<'_, T> {}

impl<T> std::fmt::Debug for SymSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymSlice")
            .field("offset", &format_args!("{:#x}", self.offset))
            .field("len", &self.len)
            .finish()
    }
}

fn resolve(range: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

impl<T: Pod> SymBuf<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The byte offset of the allocation in the symmetric heap (the same on every PE).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The instance it belongs to.
    pub fn instance(&self) -> &Instance {
        &self.inst
    }

    /// The local address of element 0 (for `ptr`, or to hand to C code).
    pub fn as_ptr(&self) -> *mut T {
        self.inst.heap_base().wrapping_add(self.offset).cast()
    }

    /// A view of all elements.
    pub fn as_slice(&self) -> SymSlice<'_, T> {
        SymSlice {
            home: &self.inst,
            ctx: CtxRef::default_of(&self.inst),
            offset: self.offset,
            len: self.len,
            _t: PhantomData,
        }
    }

    /// A view of the elements in `range`.
    ///
    /// # Panics
    ///
    /// If the range does not lie inside the allocation (as slice indexing does).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> SymSlice<'_, T> {
        self.as_slice().slice(range)
    }

    /// A view of element `index` alone.
    ///
    /// # Panics
    ///
    /// If `index >= len`.
    pub fn at(&self, index: usize) -> SymSlice<'_, T> {
        self.slice(index..=index)
    }

    /// Element `index`, for atomics, signals and waits.
    ///
    /// # Panics
    ///
    /// If `index >= len`.
    pub fn elem(&self, index: usize) -> SymElem<'_, T> {
        self.as_slice().elem(index)
    }

    /// Resizes the allocation to `new_len` elements (`shmem_realloc`). Collective. The
    /// contents are kept up to the smaller of the two sizes (each PE keeps its own copy's); on
    /// failure the allocation is unchanged.
    pub fn realloc(&mut self, new_len: usize) -> Result<()> {
        let sz = std::mem::size_of::<T>();
        let call = |size: u64| HeapCall::Realloc {
            offset: self.offset as u64,
            size,
        };
        let Some(bytes) = new_len.checked_mul(sz) else {
            // Still collective, so that the PEs stay in step.
            let _ = self.inst.alloc_collective(call(u64::MAX), 0, None, false);
            return Err(Error::InvalidValue(format!(
                "{new_len} elements of {sz} bytes overflow"
            )));
        };
        let Some(old) = self.inst.inner.heap.block_size(self.offset as u64) else {
            let _ = self
                .inst
                .alloc_collective(call(bytes as u64), 0, None, false);
            return Err(Error::InvalidParam(format!(
                "realloc: offset {:#x} is not the start of an allocated block",
                self.offset
            )));
        };
        let off = self.inst.realloc_collective(
            self.offset as u64,
            old.min((self.len * sz) as u64),
            bytes as u64,
            std::mem::align_of::<T>(),
        )?;
        self.offset = off as usize;
        self.len = new_len;
        Ok(())
    }

    /// Releases the allocation. Collective: every PE frees the same allocation in the same
    /// order.
    pub fn free(mut self) -> Result<()> {
        self.freed = true;
        self.inst.free_collective(self.offset as u64)
    }

    /// Gives up the handle without freeing the allocation, and returns its heap offset: for
    /// code that keeps symmetric memory by address (the C ABI's `aclshmem_malloc` returns
    /// `heap_base + offset`). [`SymBuf::from_raw`] takes it back.
    pub fn into_raw(mut self) -> usize {
        self.freed = true;
        self.offset
    }

    /// Allocates `len` elements as [`Instance::malloc`] does and returns the heap offset
    /// without building the handle: `inst.malloc(len)?.into_raw()` at less cost (the C ABI's
    /// `shmem_malloc`). [`SymBuf::free_raw`] releases it. Collective.
    pub fn malloc_raw(inst: &Instance, len: usize) -> Result<usize> {
        inst.alloc_offset::<T>(len, None, false)
    }

    /// Releases the allocation that starts at heap offset `offset` (from
    /// [`SymBuf::into_raw`]): `SymBuf::from_raw(inst, offset).free()` without building the
    /// handle (the C ABI's `shmem_free`). An offset that starts no allocated block fails with
    /// `INVALID_PARAM` on every PE, after the collective. Collective.
    pub fn free_raw(inst: &Instance, offset: usize) -> Result<()> {
        inst.free_collective(offset as u64)
    }

    /// The allocation that starts at heap offset `offset` (from [`SymBuf::into_raw`]), as a
    /// handle of as many whole `T`s as the block holds. An offset that starts no allocated
    /// block gives an empty handle whose collective operations still run on every PE, so that
    /// the PEs stay in step, and then fail: [`SymBuf::free`] and [`SymBuf::realloc`] with
    /// `INVALID_PARAM`.
    pub fn from_raw(inst: &Instance, offset: usize) -> SymBuf<T> {
        let bytes = inst.inner.heap.block_size(offset as u64).unwrap_or(0) as usize;
        SymBuf {
            inst: inst.clone(),
            offset,
            len: bytes / std::mem::size_of::<T>().max(1),
            freed: false,
            _t: PhantomData,
        }
    }
}

impl<T> Drop for SymBuf<T> {
    fn drop(&mut self) {
        if !self.freed {
            tracing::debug!(
                "a SymBuf at offset {:#x} was dropped without free; it stays allocated until finalize",
                self.offset
            );
        }
    }
}

impl<'a, T: Pod> SymSlice<'a, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The byte offset of element 0 in the symmetric heap.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The instance it belongs to.
    pub fn instance(&self) -> &'a Instance {
        self.home
    }

    /// The context the view's operations are issued on.
    pub fn ctx(&self) -> CtxRef<'a> {
        self.ctx
    }

    /// The same view, with operations issued on `ctx` (a context of the view's instance;
    /// another instance's makes every operation fail).
    pub fn on<'c>(&self, ctx: &'c Context) -> SymSlice<'c, T>
    where
        'a: 'c,
    {
        SymSlice {
            home: self.home,
            ctx: ctx.as_ref(),
            offset: self.offset,
            len: self.len,
            _t: PhantomData,
        }
    }

    /// The same view, with operations issued on `ctx` (a context of the same instance).
    pub fn in_ctx<'c>(&self, ctx: CtxRef<'c>) -> SymSlice<'c, T>
    where
        'a: 'c,
    {
        SymSlice {
            home: self.home,
            ctx,
            offset: self.offset,
            len: self.len,
            _t: PhantomData,
        }
    }

    /// Element `index`, for atomics, signals and waits.
    ///
    /// # Panics
    ///
    /// If `index >= len` (as slice indexing does).
    pub fn elem(&self, index: usize) -> SymElem<'a, T> {
        assert!(
            index < self.len,
            "element {index} of a symmetric view of {} elements",
            self.len
        );
        SymElem {
            home: self.home,
            ctx: self.ctx,
            offset: self.offset + index * std::mem::size_of::<T>(),
            _t: PhantomData,
        }
    }

    /// The size of the view in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// A sub-view.
    ///
    /// # Panics
    ///
    /// If the range does not lie inside this view.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> SymSlice<'a, T> {
        let (s, e) = resolve(range, self.len).unwrap_or_else(|| {
            panic!(
                "range out of bounds of a symmetric slice of {} elements",
                self.len
            )
        });
        SymSlice {
            home: self.home,
            ctx: self.ctx,
            offset: self.offset + s * std::mem::size_of::<T>(),
            len: e - s,
            _t: PhantomData,
        }
    }

    /// The local address of element 0.
    pub fn as_ptr(&self) -> *mut T {
        self.home.heap_base().wrapping_add(self.offset).cast()
    }

    /// Where PE `pe`'s copy of element 0 can be loaded and stored directly (`aclshmem_ptr`;
    /// `shmem_team_ptr` on a team context's view, which numbers PEs in the team), if the
    /// transport maps peers; `None` for a PE outside the instance or team, or when the view's
    /// context belongs to another instance.
    pub fn ptr(&self, pe: Pe) -> Option<NonNull<T>> {
        self.ctx.inst.owns(self.home).ok()?;
        let pe = self.ctx.target(pe).ok()?;
        self.home.ptr(self.as_ptr().cast(), pe).map(NonNull::cast)
    }
}

impl Instance {
    fn alloc<T: Pod>(&self, len: usize, align: Option<usize>, zero: bool) -> Result<SymBuf<T>> {
        let offset = self.alloc_offset::<T>(len, align, zero)?;
        Ok(SymBuf {
            inst: self.clone(),
            offset,
            len,
            freed: false,
            _t: PhantomData,
        })
    }

    /// [`Instance::alloc`]'s allocation, as a heap offset without a handle.
    fn alloc_offset<T: Pod>(&self, len: usize, align: Option<usize>, zero: bool) -> Result<usize> {
        let call = |size: u64| match (align, zero) {
            (Some(a), _) => HeapCall::Align {
                align: a as u64,
                size,
            },
            (None, true) => HeapCall::Calloc { size },
            (None, false) => HeapCall::Malloc { size },
        };
        let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
            // Still collective, so that the PEs stay in step.
            let _ = self.alloc_collective(call(u64::MAX), 0, None, false);
            return Err(Error::InvalidValue(format!(
                "{len} elements of {} bytes overflow",
                std::mem::size_of::<T>()
            )));
        };
        let natural = std::mem::align_of::<T>();
        let align = match align {
            Some(a) => Some(a.max(natural)),
            None if natural > 16 => Some(natural),
            None => None,
        };
        let offset = self.alloc_collective(
            call(bytes as u64),
            bytes as u64,
            align.map(|a| a as u64),
            zero,
        )?;
        Ok(offset as usize)
    }

    /// Allocates `len` elements of `T` from the symmetric heap (`aclshmem_malloc`). Collective:
    /// every PE asks for the same size in the same order. The contents are undefined (fresh
    /// pages are zero, reused blocks keep what they held).
    ///
    /// Fails with `INVALID_VALUE` for zero bytes and `MALLOC_FAILED` when the heap cannot hold
    /// it on some PE; either way the heap is unchanged on every PE.
    pub fn malloc<T: Pod>(&self, len: usize) -> Result<SymBuf<T>> {
        self.alloc(len, None, false)
    }

    /// Allocates `len` zeroed elements (`aclshmem_calloc`).
    pub fn calloc<T: Pod>(&self, len: usize) -> Result<SymBuf<T>> {
        self.alloc(len, None, true)
    }

    /// Allocates `len` elements at an address that is a multiple of `alignment`, which must be
    /// a power of two (`aclshmem_align`).
    pub fn align<T: Pod>(&self, alignment: usize, len: usize) -> Result<SymBuf<T>> {
        if alignment == 0 || !alignment.is_power_of_two() {
            // Still collective: every PE takes part so the PEs stay in step.
            let call = HeapCall::Align {
                align: alignment as u64,
                size: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
            };
            let _ = self.alloc_collective(call, 0, Some(alignment as u64), false);
            return Err(Error::InvalidValue(format!(
                "alignment {alignment} is not a power of two"
            )));
        }
        self.alloc(len, Some(alignment), false)
    }
}

impl Instance {
    /// Allocates like [`Instance::malloc`], with usage hints (`shmem_malloc_with_hints`). The
    /// simulator places every block the same way, so the hints (and unknown hint bits, which
    /// OpenSHMEM requires to be ignored) do not change the result.
    pub fn malloc_with_hints<T: Pod>(&self, len: usize, hints: i64) -> Result<SymBuf<T>> {
        let _ = hints;
        self.malloc(len)
    }

    /// Whether `len` bytes at local address `addr` lie in the symmetric heap and can be
    /// accessed on PE `pe` (`shmem_addr_accessible`).
    pub fn addr_accessible(&self, addr: *const u8, len: usize, pe: Pe) -> bool {
        self.is_initialized() && pe < self.n_pes() && self.offset_of(addr, len).is_some()
    }

    /// Whether PE `pe` can be reached (`shmem_pe_accessible`).
    pub fn pe_accessible(&self, pe: Pe) -> bool {
        self.is_initialized() && pe < self.n_pes()
    }

    /// Bytes of the heap free for allocation on this PE, and the largest free block.
    pub fn heap_free(&self) -> (usize, usize) {
        let (free, largest) = self.inner.heap.free();
        (free as usize, largest as usize)
    }

    /// A view of `len` elements of `T` at heap offset `offset`, for memory allocated through the
    /// byte-level calls. Refused (`NotInitialized`) once the instance is finalized, and
    /// (`OutOfBounds`) below the heap's part for the program: the first offsets are the
    /// library's reserved blocks, whose words barriers and collectives wait on.
    pub fn view<T: Pod>(&self, offset: usize, len: usize) -> Result<SymSlice<'_, T>> {
        self.check_live()?;
        if offset < crate::instance::RESERVED {
            return Err(self.outside_heap(offset, len.saturating_mul(std::mem::size_of::<T>())));
        }
        self.view_of_heap(offset, len)
    }

    /// [`Instance::view`] anywhere in the heap, the library's reserved blocks included: for
    /// the library's own words there.
    pub(crate) fn view_of_heap<T: Pod>(
        &self,
        offset: usize,
        len: usize,
    ) -> Result<SymSlice<'_, T>> {
        self.check_live()?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::InvalidValue("view length overflows".into()))?;
        self.check_heap_range(offset, bytes)?;
        if !offset.is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Error::Misaligned(format!(
                "heap offset {offset:#x} is not aligned for {}",
                std::any::type_name::<T>()
            )));
        }
        Ok(SymSlice {
            home: self,
            ctx: CtxRef::default_of(self),
            offset,
            len,
            _t: PhantomData,
        })
    }
}

impl<'a> CtxRef<'a> {
    /// The `len` elements of `T` at the symmetric address `addr` (in the heap, or in the static
    /// data init made symmetric) of this context's instance, as a view on this context: how the
    /// C ABI, which names symmetric memory by address, reaches it, with one check. A view is a
    /// description: on a destroyed context it is still made, and every operation on it refuses.
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let buf = inst.calloc::<u64>(4)?;
    /// let same = inst.default_ctx().view_at(buf.as_ptr().cast_const(), 4)?;
    /// assert_eq!(same.offset(), buf.offset());
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn view_at<T: Pod>(self, addr: *const T, len: usize) -> Result<SymSlice<'a, T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::InvalidValue("view length overflows".into()))?;
        let offset = self
            .inst
            .offset_of(addr.cast(), bytes)
            .ok_or_else(|| self.not_symmetric(addr.cast(), bytes))?;
        if !offset.is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Error::Misaligned(format!(
                "{addr:p} is not aligned for {}",
                std::any::type_name::<T>()
            )));
        }
        Ok(SymSlice {
            home: self.inst,
            ctx: self,
            offset,
            len,
            _t: PhantomData,
        })
    }
}

impl<'a> CtxRef<'a> {
    /// The element of `T` at the symmetric address `addr`, on this context (the target of a
    /// C atomic, wait or signal): [`CtxRef::view_at`] of one element.
    #[inline(always)]
    pub fn elem_at<T: Pod>(self, addr: *const T) -> Result<SymElem<'a, T>> {
        let offset = self
            .inst
            .offset_of(addr.cast(), std::mem::size_of::<T>())
            .ok_or_else(|| self.not_symmetric(addr.cast(), std::mem::size_of::<T>()))?;
        if !offset.is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Error::Misaligned(format!(
                "{addr:p} is not aligned for {}",
                std::any::type_name::<T>()
            )));
        }
        Ok(SymElem {
            home: self.inst,
            ctx: self,
            offset,
            _t: PhantomData,
        })
    }
}

impl CtxRef<'_> {
    /// Why `len` bytes at `addr` make no view on this context: a finalized instance or a
    /// destroyed context says so first, whatever the address.
    #[cold]
    fn not_symmetric(&self, addr: *const u8, len: usize) -> Error {
        match self.usable() {
            Err(e) => e,
            Ok(()) => not_symmetric(addr, len),
        }
    }
}

#[cold]
pub(crate) fn not_symmetric(addr: *const u8, len: usize) -> Error {
    Error::InvalidParam(format!(
        "{len} bytes at {addr:p} do not lie in symmetric memory (the symmetric heap or static data)"
    ))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn ranges_resolve() {
        assert_eq!(resolve(.., 5), Some((0, 5)));
        assert_eq!(resolve(1..3, 5), Some((1, 3)));
        assert_eq!(resolve(2..=4, 5), Some((2, 5)));
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 3..2;
        assert_eq!(resolve(backwards, 5), None);
        assert_eq!(resolve(0..6, 5), None);
    }
}
