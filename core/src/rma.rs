//! Remote memory access: put, get, their strided and scalar forms, and the non-blocking forms
//! inside a scope that completes them.
//!
//! Every operation is issued on a context ([`CtxRef`]): views carry theirs, and the byte-level
//! calls of [`Instance`] use the default context. Every access is checked: the PE must belong
//! to the instance (or the context's team) and the bytes must lie inside the symmetric heap;
//! otherwise the call fails and nothing is written.

use std::marker::PhantomData;

use bytemuck::Pod;
use shmem_backend::{Pe, Strided};

use crate::ctx::{Context, CtxRef};
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::sym::SymSlice;

fn same_len(what: &str, local: usize, sym: usize) -> Result<()> {
    if local == sym {
        Ok(())
    } else {
        Err(Error::InvalidParam(format!(
            "{what}: the local buffer has {local} elements, the symmetric view {sym}"
        )))
    }
}

pub(crate) fn logged<T>(what: &str, r: Result<T>) -> Result<T> {
    r.inspect_err(|e| tracing::error!("{what}: {e}"))
}

impl Instance {
    /// Checks that `len` bytes at heap offset `offset` lie inside the symmetric heap.
    pub(crate) fn check_heap_range(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.heap_size() => Ok(()),
            _ => Err(Error::OutOfBounds(format!(
                "{len} bytes at heap offset {offset:#x} do not lie inside the symmetric heap of {:#x} bytes",
                self.heap_size()
            ))),
        }
    }

    fn check_strided(
        &self,
        first: usize,
        stride: isize,
        elem: usize,
        nelems: usize,
    ) -> Result<Strided> {
        let s = Strided { first, stride };
        match s.span(elem, nelems) {
            Some((_, hi)) if hi <= self.heap_size() as u64 => Ok(s),
            _ => Err(Error::OutOfBounds(format!(
                "{nelems} elements of {elem} bytes with a stride of {stride} bytes from heap offset {first:#x} do not lie inside the symmetric heap"
            ))),
        }
    }

    /// Copies `src` to heap offset `dst` on `pe` (`aclshmem_putmem`), on the default context.
    pub fn put_bytes(&self, dst: usize, src: &[u8], pe: Pe) -> Result<()> {
        self.default_ctx().put_bytes(dst, src, pe)
    }

    /// Copies `dst.len()` bytes from heap offset `src` on `pe` into `dst` (`aclshmem_getmem`).
    pub fn get_bytes(&self, src: usize, dst: &mut [u8], pe: Pe) -> Result<()> {
        self.default_ctx().get_bytes(src, dst, pe)
    }

    /// Non-blocking [`Instance::put_bytes`] on the default context.
    ///
    /// # Safety
    ///
    /// `src..src+len` must stay readable (and unchanged, if its current contents are to be
    /// delivered) until the next [`Instance::quiet`] (or barrier) returns.
    pub unsafe fn put_bytes_nbi(
        &self,
        dst: usize,
        src: *const u8,
        len: usize,
        pe: Pe,
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.default_ctx().put_bytes_nbi(dst, src, len, pe) }
    }

    /// Non-blocking [`Instance::get_bytes`] on the default context.
    ///
    /// # Safety
    ///
    /// `dst..dst+len` must stay writable, and not be accessed, until the next
    /// [`Instance::quiet`] (or barrier) returns.
    pub unsafe fn get_bytes_nbi(&self, src: usize, dst: *mut u8, len: usize, pe: Pe) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.default_ctx().get_bytes_nbi(src, dst, len, pe) }
    }

    /// Strided put on the default context; see [`CtxRef::iput_bytes`].
    #[allow(clippy::too_many_arguments)] // the shape of the C routine it serves
    pub fn iput_bytes(
        &self,
        dst: usize,
        dst_stride: isize,
        src: &[u8],
        src_stride: isize,
        elem: usize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        self.default_ctx()
            .iput_bytes(dst, dst_stride, src, src_stride, elem, nelems, pe)
    }

    /// Strided get on the default context; see [`CtxRef::iget_bytes`].
    #[allow(clippy::too_many_arguments)] // the shape of the C routine it serves
    pub fn iget_bytes(
        &self,
        src: usize,
        src_stride: isize,
        dst: &mut [u8],
        dst_stride: isize,
        elem: usize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        self.default_ctx()
            .iget_bytes(src, src_stride, dst, dst_stride, elem, nelems, pe)
    }

    /// Runs `f` with a scope for non-blocking operations on the default context; see
    /// [`CtxRef::nbi`].
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let buf = inst.malloc::<u64>(4)?;
    /// let src = [1u64, 2, 3, 4];
    /// let mut back = [0u64; 4];
    /// inst.nbi(|s| -> shmem::Result<()> {
    ///     s.put_nbi(buf.as_slice(), &src, (inst.my_pe() + 1) % inst.n_pes())?;
    ///     s.get_nbi(buf.as_slice(), &mut back, inst.my_pe())?;
    ///     Ok(())
    /// })??;
    /// # Ok(()) }
    /// ```
    pub fn nbi<'env, R>(&'env self, f: impl FnOnce(&NbiScope<'env>) -> R) -> Result<R> {
        self.default_ctx().nbi(f)
    }
}

impl<'a> CtxRef<'a> {
    /// Copies `src` to heap offset `dst` on `pe`.
    pub fn put_bytes(&self, dst: usize, src: &[u8], pe: Pe) -> Result<()> {
        logged(
            "putmem",
            (|| {
                let pe = self.target(pe)?;
                self.inst.check_heap_range(dst, src.len())?;
                Ok(self.inst.transport().put(self.queue(), pe, dst, src)?)
            })(),
        )
    }

    /// Copies `dst.len()` bytes from heap offset `src` on `pe` into `dst`.
    pub fn get_bytes(&self, src: usize, dst: &mut [u8], pe: Pe) -> Result<()> {
        logged(
            "getmem",
            (|| {
                let pe = self.target(pe)?;
                self.inst.check_heap_range(src, dst.len())?;
                Ok(self.inst.transport().get(self.queue(), pe, src, dst)?)
            })(),
        )
    }

    /// Non-blocking [`CtxRef::put_bytes`].
    ///
    /// # Safety
    ///
    /// `src..src+len` must stay readable (and unchanged, if its current contents are to be
    /// delivered) until the next quiet of this context returns.
    pub unsafe fn put_bytes_nbi(
        &self,
        dst: usize,
        src: *const u8,
        len: usize,
        pe: Pe,
    ) -> Result<()> {
        logged(
            "putmem_nbi",
            (|| {
                let pe = self.target(pe)?;
                self.inst.check_heap_range(dst, len)?;
                // SAFETY: forwarded from this function's contract.
                Ok(unsafe {
                    self.inst
                        .transport()
                        .put_nbi(self.queue(), pe, dst, src, len)
                }?)
            })(),
        )
    }

    /// Non-blocking [`CtxRef::get_bytes`].
    ///
    /// # Safety
    ///
    /// `dst..dst+len` must stay writable, and not be accessed, until the next quiet of this
    /// context returns.
    pub unsafe fn get_bytes_nbi(&self, src: usize, dst: *mut u8, len: usize, pe: Pe) -> Result<()> {
        logged(
            "getmem_nbi",
            (|| {
                let pe = self.target(pe)?;
                self.inst.check_heap_range(src, len)?;
                // SAFETY: forwarded from this function's contract.
                Ok(unsafe {
                    self.inst
                        .transport()
                        .get_nbi(self.queue(), pe, src, dst, len)
                }?)
            })(),
        )
    }

    /// Strided put of `nelems` elements of `elem` bytes: element `i` goes to heap offset
    /// `dst + i * dst_stride` on `pe` and comes from `src[i * src_stride ..]` (strides in
    /// bytes).
    #[allow(clippy::too_many_arguments)] // the shape of the C routine it serves
    pub fn iput_bytes(
        &self,
        dst: usize,
        dst_stride: isize,
        src: &[u8],
        src_stride: isize,
        elem: usize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        logged(
            "iput",
            (|| {
                let pe = self.target(pe)?;
                let d = self.inst.check_strided(dst, dst_stride, elem, nelems)?;
                Ok(self.inst.transport().iput(
                    self.queue(),
                    pe,
                    d,
                    src,
                    Strided {
                        first: 0,
                        stride: src_stride,
                    },
                    elem,
                    nelems,
                )?)
            })(),
        )
    }

    /// Strided get: element `i` comes from heap offset `src + i * src_stride` on `pe` and goes
    /// to `dst[i * dst_stride ..]` (strides in bytes).
    #[allow(clippy::too_many_arguments)] // the shape of the C routine it serves
    pub fn iget_bytes(
        &self,
        src: usize,
        src_stride: isize,
        dst: &mut [u8],
        dst_stride: isize,
        elem: usize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        logged(
            "iget",
            (|| {
                let pe = self.target(pe)?;
                let s = self.inst.check_strided(src, src_stride, elem, nelems)?;
                Ok(self.inst.transport().iget(
                    self.queue(),
                    pe,
                    s,
                    dst,
                    Strided {
                        first: 0,
                        stride: dst_stride,
                    },
                    elem,
                    nelems,
                )?)
            })(),
        )
    }

    /// Runs `f` with a scope in which non-blocking operations may be issued on this context
    /// with buffers that live at least as long as the call; when `f` returns (or unwinds), the
    /// scope completes them all with a quiet of this context.
    pub fn nbi<'env, R>(&self, f: impl FnOnce(&NbiScope<'env>) -> R) -> Result<R>
    where
        'a: 'env,
    {
        self.usable()?;
        struct QuietOnDrop<'c>(CtxRef<'c>);
        impl Drop for QuietOnDrop<'_> {
            fn drop(&mut self) {
                // Runs on unwinding too: no held operation may outlive the borrowed buffers.
                let _ = self.0.inst.transport().quiet(self.0.queue());
            }
        }
        let guard = QuietOnDrop(*self);
        let r = f(&NbiScope {
            ctx: *self,
            _invariant: PhantomData,
        });
        drop(guard);
        Ok(r)
    }
}

impl Context {
    /// Runs `f` with a scope for non-blocking operations on this context; see [`CtxRef::nbi`].
    pub fn nbi<'env, R>(&'env self, f: impl FnOnce(&NbiScope<'env>) -> R) -> Result<R> {
        self.as_ref().nbi(f)
    }
}

/// A scope for non-blocking operations whose buffers are borrowed until the scope ends; see
/// [`CtxRef::nbi`]. Operations are issued on the scope's context, whatever context the views
/// passed to them carry.
pub struct NbiScope<'env> {
    pub(crate) ctx: CtxRef<'env>,
    // Invariant in 'env, so a scope cannot be shortened to accept buffers that die before it ends.
    _invariant: PhantomData<fn(&'env ()) -> &'env ()>,
}

impl std::fmt::Debug for NbiScope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NbiScope").field("ctx", &self.ctx).finish()
    }
}

impl<'env> NbiScope<'env> {
    /// Non-blocking put (`aclshmem_<T>_put_nbi`): `src` may be read until the scope ends.
    pub fn put_nbi<T: Pod>(&self, dst: SymSlice<'_, T>, src: &'env [T], pe: Pe) -> Result<()> {
        same_len("put_nbi", src.len(), dst.len())?;
        let bytes: &'env [u8] = bytemuck::cast_slice(src);
        // SAFETY: `src` is borrowed for 'env, which outlives the scope, and the scope quiets
        // before it ends, so the buffer stays readable and unchanged while the put may run.
        unsafe {
            self.ctx
                .put_bytes_nbi(dst.offset, bytes.as_ptr(), bytes.len(), pe)
        }
    }

    /// Non-blocking get (`aclshmem_<T>_get_nbi`): `dst` holds the data once the scope ends.
    pub fn get_nbi<T: Pod>(&self, src: SymSlice<'_, T>, dst: &'env mut [T], pe: Pe) -> Result<()> {
        same_len("get_nbi", dst.len(), src.len())?;
        let bytes: &'env mut [u8] = bytemuck::cast_slice_mut(dst);
        // SAFETY: `dst` is mutably borrowed for 'env, so the caller cannot touch it before the
        // scope's quiet, which completes the get.
        unsafe {
            self.ctx
                .get_bytes_nbi(src.offset, bytes.as_mut_ptr(), bytes.len(), pe)
        }
    }

    /// The context of the scope.
    pub fn ctx(&self) -> CtxRef<'env> {
        self.ctx
    }

    /// The instance of the scope.
    pub fn instance(&self) -> &'env Instance {
        self.ctx.inst
    }
}

impl<T: Pod> SymSlice<'_, T> {
    /// Copies `src` into PE `pe`'s copy of this view (`aclshmem_<T>_put`); `src` must have the
    /// view's length.
    pub fn put(&self, src: &[T], pe: Pe) -> Result<()> {
        same_len("put", src.len(), self.len).inspect_err(|e| tracing::error!("{e}"))?;
        self.ctx
            .put_bytes(self.offset, bytemuck::cast_slice(src), pe)
    }

    /// Copies PE `pe`'s copy of this view into `dst` (`aclshmem_<T>_get`).
    pub fn get(&self, dst: &mut [T], pe: Pe) -> Result<()> {
        same_len("get", dst.len(), self.len).inspect_err(|e| tracing::error!("{e}"))?;
        self.ctx
            .get_bytes(self.offset, bytemuck::cast_slice_mut(dst), pe)
    }

    /// PE `pe`'s copy of this view, as a vector.
    pub fn to_vec(&self, pe: Pe) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.get(&mut v, pe)?;
        Ok(v)
    }

    /// Stores `value` into element `index` of PE `pe`'s copy (`aclshmem_<T>_p`).
    pub fn p(&self, index: usize, value: T, pe: Pe) -> Result<()> {
        self.element(index)?;
        self.ctx.put_bytes(
            self.offset + index * std::mem::size_of::<T>(),
            bytemuck::bytes_of(&value),
            pe,
        )
    }

    /// Loads element `index` of PE `pe`'s copy (`aclshmem_<T>_g`).
    pub fn g(&self, index: usize, pe: Pe) -> Result<T> {
        self.element(index)?;
        let mut v = T::zeroed();
        self.ctx.get_bytes(
            self.offset + index * std::mem::size_of::<T>(),
            bytemuck::bytes_of_mut(&mut v),
            pe,
        )?;
        Ok(v)
    }

    fn element(&self, index: usize) -> Result<()> {
        if index < self.len {
            Ok(())
        } else {
            Err(Error::OutOfBounds(format!(
                "element {index} of a symmetric view of {} elements",
                self.len
            )))
            .inspect_err(|e| tracing::error!("{e}"))
        }
    }

    /// Strided put (`aclshmem_<T>_iput`): element `i` of `src` at index `i * src_stride` goes to
    /// index `i * dst_stride` of this view on `pe` (strides in elements, as in OpenSHMEM).
    pub fn iput(
        &self,
        dst_stride: isize,
        src: &[T],
        src_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let sz = std::mem::size_of::<T>() as isize;
        self.check_view_span(dst_stride, nelems)?;
        self.ctx.iput_bytes(
            self.offset,
            dst_stride * sz,
            bytemuck::cast_slice(src),
            src_stride * sz,
            sz as usize,
            nelems,
            pe,
        )
    }

    /// Strided get (`aclshmem_<T>_iget`): index `i * src_stride` of this view on `pe` goes to
    /// index `i * dst_stride` of `dst` (strides in elements).
    pub fn iget(
        &self,
        src_stride: isize,
        dst: &mut [T],
        dst_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let sz = std::mem::size_of::<T>() as isize;
        self.check_view_span(src_stride, nelems)?;
        self.ctx.iget_bytes(
            self.offset,
            src_stride * sz,
            bytemuck::cast_slice_mut(dst),
            dst_stride * sz,
            sz as usize,
            nelems,
            pe,
        )
    }

    fn check_view_span(&self, stride: isize, nelems: usize) -> Result<()> {
        match (Strided { first: 0, stride }).span(1, nelems) {
            Some((_, hi)) if hi <= self.len as u64 => Ok(()),
            _ => Err(Error::OutOfBounds(format!(
                "{nelems} elements with a stride of {stride} do not fit in a symmetric view of {} elements",
                self.len
            )))
            .inspect_err(|e| tracing::error!("{e}")),
        }
    }
}
