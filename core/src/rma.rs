//! Remote memory access: put, get, their strided and scalar forms, and the non-blocking forms
//! inside a scope that completes them.
//!
//! Every access is checked: the PE must belong to the instance and the bytes must lie inside
//! the symmetric heap; otherwise the call fails and nothing is written.

use std::marker::PhantomData;

use bytemuck::Pod;
use shmem_backend::{Pe, Strided};

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

fn logged<T>(what: &str, r: Result<T>) -> Result<T> {
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

    fn rma_prologue(&self, pe: Pe) -> Result<()> {
        self.check_live()?;
        self.check_pe(pe)
    }

    /// Copies `src` to heap offset `dst` on `pe` (`aclshmem_putmem`).
    pub fn put_bytes(&self, dst: usize, src: &[u8], pe: Pe) -> Result<()> {
        logged(
            "putmem",
            (|| {
                self.rma_prologue(pe)?;
                self.check_heap_range(dst, src.len())?;
                Ok(self.transport().put(&*self.inner.queue, pe, dst, src)?)
            })(),
        )
    }

    /// Copies `dst.len()` bytes from heap offset `src` on `pe` into `dst` (`aclshmem_getmem`).
    pub fn get_bytes(&self, src: usize, dst: &mut [u8], pe: Pe) -> Result<()> {
        logged(
            "getmem",
            (|| {
                self.rma_prologue(pe)?;
                self.check_heap_range(src, dst.len())?;
                Ok(self.transport().get(&*self.inner.queue, pe, src, dst)?)
            })(),
        )
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
        logged(
            "putmem_nbi",
            (|| {
                self.rma_prologue(pe)?;
                self.check_heap_range(dst, len)?;
                // SAFETY: forwarded from this function's contract.
                Ok(unsafe {
                    self.transport()
                        .put_nbi(&*self.inner.queue, pe, dst, src, len)
                }?)
            })(),
        )
    }

    /// Non-blocking [`Instance::get_bytes`] on the default context.
    ///
    /// # Safety
    ///
    /// `dst..dst+len` must stay writable, and not be accessed, until the next
    /// [`Instance::quiet`] (or barrier) returns.
    pub unsafe fn get_bytes_nbi(&self, src: usize, dst: *mut u8, len: usize, pe: Pe) -> Result<()> {
        logged(
            "getmem_nbi",
            (|| {
                self.rma_prologue(pe)?;
                self.check_heap_range(src, len)?;
                // SAFETY: forwarded from this function's contract.
                Ok(unsafe {
                    self.transport()
                        .get_nbi(&*self.inner.queue, pe, src, dst, len)
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
                self.rma_prologue(pe)?;
                let d = self.check_strided(dst, dst_stride, elem, nelems)?;
                Ok(self.transport().iput(
                    &*self.inner.queue,
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
                self.rma_prologue(pe)?;
                let s = self.check_strided(src, src_stride, elem, nelems)?;
                Ok(self.transport().iget(
                    &*self.inner.queue,
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

    /// Runs `f` with a scope in which non-blocking puts and gets may be issued on buffers that
    /// live at least as long as the call; when `f` returns (or unwinds), the scope completes
    /// them all with a quiet.
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
        self.check_live()?;
        struct QuietOnDrop<'a>(&'a Instance);
        impl Drop for QuietOnDrop<'_> {
            fn drop(&mut self) {
                // Runs on unwinding too: no held operation may outlive the borrowed buffers.
                let _ = self.0.transport().quiet(&*self.0.inner.queue);
            }
        }
        let guard = QuietOnDrop(self);
        let r = f(&NbiScope {
            inst: self,
            _invariant: PhantomData,
        });
        drop(guard);
        Ok(r)
    }
}

/// A scope for non-blocking operations whose buffers are borrowed until the scope ends; see
/// [`Instance::nbi`].
pub struct NbiScope<'env> {
    inst: &'env Instance,
    // Invariant in 'env, so a scope cannot be shortened to accept buffers that die before it ends.
    _invariant: PhantomData<fn(&'env ()) -> &'env ()>,
}

impl std::fmt::Debug for NbiScope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NbiScope")
            .field("instance", &self.inst.id())
            .finish()
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
            self.inst
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
            self.inst
                .get_bytes_nbi(src.offset, bytes.as_mut_ptr(), bytes.len(), pe)
        }
    }

    /// The instance of the scope.
    pub fn instance(&self) -> &'env Instance {
        self.inst
    }
}

impl<T: Pod> SymSlice<'_, T> {
    /// Copies `src` into PE `pe`'s copy of this view (`aclshmem_<T>_put`); `src` must have the
    /// view's length.
    pub fn put(&self, src: &[T], pe: Pe) -> Result<()> {
        same_len("put", src.len(), self.len).inspect_err(|e| tracing::error!("{e}"))?;
        self.inst
            .put_bytes(self.offset, bytemuck::cast_slice(src), pe)
    }

    /// Copies PE `pe`'s copy of this view into `dst` (`aclshmem_<T>_get`).
    pub fn get(&self, dst: &mut [T], pe: Pe) -> Result<()> {
        same_len("get", dst.len(), self.len).inspect_err(|e| tracing::error!("{e}"))?;
        self.inst
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
        self.inst.put_bytes(
            self.offset + index * std::mem::size_of::<T>(),
            bytemuck::bytes_of(&value),
            pe,
        )
    }

    /// Loads element `index` of PE `pe`'s copy (`aclshmem_<T>_g`).
    pub fn g(&self, index: usize, pe: Pe) -> Result<T> {
        self.element(index)?;
        let mut v = T::zeroed();
        self.inst.get_bytes(
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
        self.inst.iput_bytes(
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
        self.inst.iget_bytes(
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
