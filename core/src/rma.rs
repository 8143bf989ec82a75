//! Remote memory access: put, get, their strided and scalar forms, and the non-blocking forms
//! inside a scope that completes them.
//!
//! Every operation is issued on a context ([`CtxRef`]): views carry theirs. The local side of
//! an operation is host memory (`&[T]`), this PE's own copy of a symmetric view (CANN's
//! symmetric source and destination addresses: [`SymSlice::put_from`], [`SymSlice::get_into`]),
//! or registered device memory ([`SymSlice::put_from_device`]). Every access is checked here,
//! once: the PE must belong to the instance (or the context's team), the remote bytes must lie
//! inside the symmetric heap, and a local view or device range inside the heap or a
//! registration; otherwise the call fails and nothing is written.

use std::marker::PhantomData;

use bytemuck::Pod;
use shmem_backend::{Local, LocalMut, Pe, Strided};

use crate::ctx::{Context, CtxRef};
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::sym::SymSlice;

#[inline]
fn same_len(what: &str, local: usize, sym: usize) -> Result<()> {
    if local == sym {
        Ok(())
    } else {
        Err(length_mismatch(what, local, sym))
    }
}

#[cold]
fn length_mismatch(what: &str, local: usize, sym: usize) -> Error {
    Error::InvalidParam(format!(
        "{what}: the local buffer has {local} elements, the symmetric view {sym}"
    ))
}

/// A range of device memory registered with an instance ([`Instance::register_device`]): the
/// local side of a put or get from or to device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRange {
    /// The device address of the first byte.
    pub addr: u64,
    /// The number of bytes.
    pub len: usize,
}

const RESERVED: u64 = crate::instance::RESERVED as u64;

impl Instance {
    /// Checks that `len` bytes at heap offset `offset` lie inside the symmetric heap (the
    /// library's reserved blocks included: its own views reach them).
    #[inline]
    pub(crate) fn check_heap_range(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.heap_size() => Ok(()),
            Some(end) if self.in_statics(offset as u64, end as u64) => Ok(()),
            _ => Err(self.outside_heap(offset, len)),
        }
    }

    /// Whether `len` bytes at heap offset `offset` of `home`'s memory lie in this instance's
    /// heap: the common case of [`Instance::check_view`], tested inline by the data path. (The
    /// sum form, not [`Instance::heap_offset_of`]'s: with a constant `len` it is two instructions
    /// shorter, and `heap_offset_of`'s is the shorter one for an address of unknown range.)
    #[inline(always)]
    pub(crate) fn holds(&self, home: &Instance, offset: usize, len: usize) -> bool {
        self.same(home)
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= self.heap_size())
    }

    /// Checks that memory of instance `home` (a view's or an element's) is accessed through
    /// this instance: a handle belongs to the instance that allocated it, and the same offset
    /// in another instance's heap is other data (or that instance's collective scratch).
    #[inline]
    pub(crate) fn owns(&self, home: &Instance) -> Result<()> {
        if self.same(home) {
            Ok(())
        } else {
            Err(self.foreign(home))
        }
    }

    #[cold]
    fn foreign(&self, home: &Instance) -> Error {
        // A finalized instance says so first, whatever memory it was handed.
        if let Err(e) = self.check_live() {
            return e;
        }
        Error::InvalidParam(format!(
            "symmetric memory of instance {} used through a context, scope or team of instance {}: a handle belongs to the instance that allocated it",
            home.id(),
            self.id()
        ))
    }

    /// Checks that `len` bytes at heap offset `offset` of instance `home`'s memory may be
    /// accessed through this instance: [`Instance::owns`], then [`Instance::check_heap_range`].
    #[inline]
    pub(crate) fn check_view(&self, home: &Instance, offset: usize, len: usize) -> Result<()> {
        self.owns(home)?;
        self.check_heap_range(offset, len)
    }

    #[cold]
    pub(crate) fn outside_heap(&self, offset: usize, len: usize) -> Error {
        Error::OutOfBounds(format!(
            "{len} bytes at heap offset {offset:#x} do not lie inside the symmetric heap's part for the program (offsets {RESERVED:#x}..{:#x}; the ones below are the library's own)",
            self.heap_size()
        ))
    }

    fn check_strided(
        &self,
        first: usize,
        stride: isize,
        elem: usize,
        nelems: usize,
    ) -> Result<Strided> {
        let s = Strided { first, stride };
        // A program's strided access stays in its part of the heap: a negative stride must not
        // reach the library's reserved blocks below it.
        match s.span(elem, nelems) {
            Some((lo, hi)) if lo >= RESERVED && hi <= self.heap_size() as u64 => Ok(s),
            Some((lo, hi)) if self.in_statics(lo, hi) => Ok(s),
            _ => Err(Error::OutOfBounds(format!(
                "{nelems} elements of {elem} bytes with a stride of {stride} bytes from heap offset {first:#x} do not lie inside the symmetric heap's part for the program (offsets {RESERVED:#x}..{:#x})",
                self.heap_size()
            ))),
        }
    }

    /// Checks the local side of an access: a range of this PE's heap, or of registered device
    /// memory (host memory needs no check).
    #[inline]
    fn check_local(
        &self,
        offset_len: Option<(usize, usize)>,
        device: Option<DeviceRange>,
    ) -> Result<()> {
        if let Some((offset, len)) = offset_len {
            self.check_heap_range(offset, len)?;
        }
        if let Some(d) = device {
            self.check_device(d)?;
        }
        Ok(())
    }

    /// Checks that `d` lies inside device memory registered with this instance.
    fn check_device(&self, d: DeviceRange) -> Result<()> {
        self.require(|c| c.device_memory, "device memory")?;
        let devices = self.inner.devices.lock().unwrap_or_else(|p| p.into_inner());
        let inside = devices
            .range(..=d.addr)
            .next_back()
            .is_some_and(|(&start, &len)| {
                d.addr
                    .checked_add(d.len as u64)
                    .is_some_and(|end| end <= start + len as u64)
            });
        if inside {
            Ok(())
        } else {
            Err(Error::OutOfBounds(format!(
                "{} bytes of device memory at {:#x} are not inside a range registered with instance {}",
                d.len,
                d.addr,
                self.id()
            )))
        }
    }

    /// Registers `len` bytes of device memory at device address `addr` with the instance, so
    /// that puts and gets may use them as their local side ([`SymSlice::put_from_device`]).
    ///
    /// # Safety
    ///
    /// Until [`Instance::deregister_device`] (or the instance's end), the range stays valid
    /// device memory (on the simulator: memory of this process) that the library may read and
    /// write whenever an operation uses it.
    pub unsafe fn register_device(&self, addr: u64, len: usize) -> Result<DeviceRange> {
        self.check_live()?;
        self.require(|c| c.device_memory, "device memory")?;
        if len == 0 || addr.checked_add(len as u64).is_none() {
            return Err(Error::InvalidParam(format!(
                "device range of {len} bytes at {addr:#x} is empty or wraps around"
            )));
        }
        let mut devices = self.inner.devices.lock().unwrap_or_else(|p| p.into_inner());
        let end = addr + len as u64;
        let overlaps = devices
            .range(..end)
            .next_back()
            .is_some_and(|(&s, &l)| s + l as u64 > addr);
        if overlaps {
            return Err(Error::InvalidParam(format!(
                "device range of {len} bytes at {addr:#x} overlaps one already registered"
            )));
        }
        self.fabric().register_device(addr, len)?;
        devices.insert(addr, len);
        Ok(DeviceRange { addr, len })
    }

    /// Forgets the device range registered at `addr`.
    pub fn deregister_device(&self, addr: u64) -> Result<()> {
        self.check_live()?;
        let mut devices = self.inner.devices.lock().unwrap_or_else(|p| p.into_inner());
        let len = devices.remove(&addr).ok_or_else(|| {
            Error::InvalidParam(format!("no device range is registered at {addr:#x}"))
        })?;
        self.fabric().deregister_device(addr, len)
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
    /// Puts `src` at heap offset `dst` of instance `home`'s memory on `pe` (in the context's
    /// numbering).
    ///
    /// # Safety
    ///
    /// For `nbi`, a host source stays readable, and unchanged if its contents are to be
    /// delivered, until the next quiet of this context.
    #[inline(always)]
    unsafe fn put_at(
        &self,
        home: &Instance,
        dst: usize,
        src: Local<'_>,
        pe: Pe,
        nbi: bool,
    ) -> Result<()> {
        if let Local::Host(bytes) = src
            && self.is_plain_target(pe)
            && self.inst.holds(home, dst, bytes.len())
        {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            // SAFETY: the PE and the remote range were checked; a host source is readable.
            if unsafe { f.put_at_once(q, pe, dst, bytes) } {
                return Ok(());
            }
        }
        // SAFETY: forwarded.
        unsafe { self.put_at_checked(home, dst, src, pe, nbi) }
    }

    /// [`Ctx::put_at`] checked step by step, on any queue.
    ///
    /// # Safety
    ///
    /// [`Ctx::put_at`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn put_at_checked(
        &self,
        home: &Instance,
        dst: usize,
        src: Local<'_>,
        pe: Pe,
        nbi: bool,
    ) -> Result<()> {
        let pe = self.target(pe)?;
        self.inst.check_view(home, dst, src.len())?;
        match src {
            Local::Host(_) => {}
            Local::Segment { offset, len } => self.inst.check_local(Some((offset, len)), None)?,
            Local::Device { addr, len } => self
                .inst
                .check_local(None, Some(DeviceRange { addr, len }))?,
        }
        let f = self.inst.fabric();
        // SAFETY: the PE, the remote range and the local side were checked above; the queue is
        // this instance's; a host source's lifetime for `nbi` is the caller's contract.
        unsafe {
            if nbi {
                f.put_nbi(self.queue(), pe, dst, src)
            } else {
                f.put(self.queue(), pe, dst, src)
            }
        }
    }

    /// Gets `dst.len()` bytes from heap offset `src` of instance `home`'s memory on `pe` into
    /// `dst`.
    ///
    /// # Safety
    ///
    /// For `nbi`, a host destination stays writable, and is not accessed, until the next quiet
    /// of this context.
    #[inline(always)]
    unsafe fn get_at(
        &self,
        home: &Instance,
        src: usize,
        dst: LocalMut<'_>,
        pe: Pe,
        nbi: bool,
    ) -> Result<()> {
        if let LocalMut::Host(bytes) = &dst
            && self.is_plain_target(pe)
            && self.inst.holds(home, src, bytes.len())
        {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            let (at, len) = (bytes.as_ptr().cast_mut(), bytes.len());
            // SAFETY: the PE and the remote range were checked; a host destination is
            // writable, and not otherwise accessed during the call.
            if unsafe { f.get_at_once(q, pe, src, at, len) } {
                return Ok(());
            }
        }
        // SAFETY: forwarded.
        unsafe { self.get_at_checked(home, src, dst, pe, nbi) }
    }

    /// [`Ctx::get_at`] checked step by step, on any queue.
    ///
    /// # Safety
    ///
    /// [`Ctx::get_at`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn get_at_checked(
        &self,
        home: &Instance,
        src: usize,
        dst: LocalMut<'_>,
        pe: Pe,
        nbi: bool,
    ) -> Result<()> {
        let pe = self.target(pe)?;
        self.inst.check_view(home, src, dst.len())?;
        match dst {
            LocalMut::Host(_) => {}
            LocalMut::Segment { offset, len } => {
                self.inst.check_local(Some((offset, len)), None)?
            }
            LocalMut::Device { addr, len } => self
                .inst
                .check_local(None, Some(DeviceRange { addr, len }))?,
        }
        let f = self.inst.fabric();
        // SAFETY: as in `put_at`.
        unsafe {
            if nbi {
                f.get_nbi(self.queue(), pe, src, dst)
            } else {
                f.get(self.queue(), pe, src, dst)
            }
        }
    }

    /// Runs `f` with a scope in which non-blocking operations may be issued on this context
    /// with buffers that live at least as long as the call; when `f` returns (or unwinds), the
    /// scope completes them all with a quiet of this context, whose error it returns.
    pub fn nbi<'env, R>(&self, f: impl FnOnce(&NbiScope<'env>) -> R) -> Result<R>
    where
        'a: 'env,
    {
        self.usable()?;
        /// Quiets on unwinding: no held operation may outlive the borrowed buffers.
        struct QuietOnUnwind<'c>(Option<CtxRef<'c>>);
        impl Drop for QuietOnUnwind<'_> {
            fn drop(&mut self) {
                if let Some(c) = self.0 {
                    let _ = c.inst.fabric().quiet(c.queue());
                }
            }
        }
        let mut guard = QuietOnUnwind(Some(*self));
        let r = f(&NbiScope {
            ctx: *self,
            _invariant: PhantomData,
        });
        guard.0 = None;
        self.inst.fabric().quiet(self.queue())?;
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
        // SAFETY: `src` is borrowed for 'env, which outlives the scope, and the scope quiets
        // before it ends, so the buffer stays readable and unchanged while the put may run.
        unsafe {
            self.ctx.put_at(
                dst.home,
                dst.offset,
                Local::Host(bytemuck::cast_slice(src)),
                pe,
                true,
            )
        }
    }

    /// Non-blocking get (`aclshmem_<T>_get_nbi`): `dst` holds the data once the scope ends.
    pub fn get_nbi<T: Pod>(&self, src: SymSlice<'_, T>, dst: &'env mut [T], pe: Pe) -> Result<()> {
        same_len("get_nbi", dst.len(), src.len())?;
        // SAFETY: `dst` is mutably borrowed for 'env, so the caller cannot touch it before the
        // scope's quiet, which completes the get.
        unsafe {
            self.ctx.get_at(
                src.home,
                src.offset,
                LocalMut::Host(bytemuck::cast_slice_mut(dst)),
                pe,
                true,
            )
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

impl CtxRef<'_> {
    /// Copies `src` to the symmetric address `dest` (in the heap, or in the static data init
    /// made symmetric) on PE `pe`: the C ABI's blocking put, which names symmetric memory by
    /// address, with the address and the PE checked once.
    #[inline(always)]
    pub fn put_to(&self, dest: *const u8, src: &[u8], pe: Pe) -> Result<()> {
        if self.put_to_at_once(dest, src, pe) {
            return Ok(());
        }
        self.put_to_checked(dest, src, pe)
    }

    /// [`CtxRef::put_to`] in its common case, inline: the default context of a live instance,
    /// a PE of it, a destination in the heap, and a transport that completes the put at once
    /// (the simulator outside strict mode). Returns `false`, having done nothing, in any other
    /// case; [`CtxRef::put_to`] then checks the call and names what is wrong. For a caller
    /// (the C ABI) whose own fallback is one outlined call.
    #[inline(always)]
    pub fn put_to_at_once(&self, dest: *const u8, src: &[u8], pe: Pe) -> bool {
        if self.is_plain_target(pe)
            && let Some(off) = self.inst.heap_offset_of(dest, src.len())
        {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            // SAFETY: the PE and the remote range were checked; the source is borrowed for the
            // call.
            return unsafe { f.put_at_once(q, pe, off, src) };
        }
        false
    }

    /// [`CtxRef::put_to`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn put_to_checked(self, dest: *const u8, src: &[u8], pe: Pe) -> Result<()> {
        let pe = self.target(pe)?;
        let off = self
            .inst
            .offset_of(dest, src.len())
            .ok_or_else(|| crate::sym::not_symmetric(dest, src.len()))?;
        // SAFETY: the PE and the remote range were checked above; the source is borrowed for
        // the blocking call.
        unsafe {
            self.inst
                .fabric()
                .put(self.queue(), pe, off, Local::Host(src))
        }
    }

    /// Copies the bytes at the symmetric address `src` on PE `pe` into `dst`: the C ABI's
    /// blocking get (see [`CtxRef::put_to`]).
    #[inline(always)]
    pub fn get_from(&self, src: *const u8, dst: &mut [u8], pe: Pe) -> Result<()> {
        if self.is_plain_target(pe)
            && let Some(off) = self.inst.heap_offset_of(src, dst.len())
        {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            // SAFETY: the PE and the remote range were checked; the destination is borrowed
            // for the blocking call.
            if unsafe { f.get_at_once(q, pe, off, dst.as_mut_ptr(), dst.len()) } {
                return Ok(());
            }
        }
        self.get_from_checked(src, dst, pe)
    }

    /// [`CtxRef::get_from`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn get_from_checked(self, src: *const u8, dst: &mut [u8], pe: Pe) -> Result<()> {
        let pe = self.target(pe)?;
        let off = self
            .inst
            .offset_of(src, dst.len())
            .ok_or_else(|| crate::sym::not_symmetric(src, dst.len()))?;
        // SAFETY: the PE and the remote range were checked above; the destination is borrowed
        // for the blocking call.
        unsafe {
            self.inst
                .fabric()
                .get(self.queue(), pe, off, LocalMut::Host(dst))
        }
    }
}

impl<T: Pod> SymSlice<'_, T> {
    /// Copies `src` into PE `pe`'s copy of this view (`aclshmem_<T>_put`); `src` must have the
    /// view's length.
    #[inline]
    pub fn put(&self, src: &[T], pe: Pe) -> Result<()> {
        same_len("put", src.len(), self.len)?;
        // SAFETY: blocking: the source is only borrowed for the call.
        unsafe {
            self.ctx.put_at(
                self.home,
                self.offset,
                Local::Host(bytemuck::cast_slice(src)),
                pe,
                false,
            )
        }
    }

    /// Copies PE `pe`'s copy of this view into `dst` (`aclshmem_<T>_get`).
    #[inline]
    pub fn get(&self, dst: &mut [T], pe: Pe) -> Result<()> {
        same_len("get", dst.len(), self.len)?;
        // SAFETY: blocking: the destination is only borrowed for the call.
        unsafe {
            self.ctx.get_at(
                self.home,
                self.offset,
                LocalMut::Host(bytemuck::cast_slice_mut(dst)),
                pe,
                false,
            )
        }
    }

    /// Copies this PE's copy of `src` into PE `pe`'s copy of this view, without going through
    /// host memory (`aclshmem_putmem` with a symmetric source, as CANN programs call it).
    pub fn put_from(&self, src: SymSlice<'_, T>, pe: Pe) -> Result<()> {
        same_len("put_from", src.len, self.len)?;
        self.ctx.inst.owns(src.home)?;
        let local = Local::Segment {
            offset: src.offset,
            len: src.byte_len(),
        };
        // SAFETY: a segment source needs no lifetime beyond the instance's.
        unsafe { self.ctx.put_at(self.home, self.offset, local, pe, false) }
    }

    /// Copies PE `pe`'s copy of this view into this PE's copy of `dst` (`aclshmem_getmem` with a
    /// symmetric destination).
    pub fn get_into(&self, dst: SymSlice<'_, T>, pe: Pe) -> Result<()> {
        same_len("get_into", dst.len, self.len)?;
        self.ctx.inst.owns(dst.home)?;
        let local = LocalMut::Segment {
            offset: dst.offset,
            len: dst.byte_len(),
        };
        // SAFETY: a segment destination needs no lifetime beyond the instance's.
        unsafe { self.ctx.get_at(self.home, self.offset, local, pe, false) }
    }

    /// Copies the first `self.byte_len()` bytes of registered device memory `src` into PE
    /// `pe`'s copy of this view (`aclshmem_putmem` with a device source).
    pub fn put_from_device(&self, src: DeviceRange, pe: Pe) -> Result<()> {
        let len = self.device_fits("put_from_device", src)?;
        let local = Local::Device {
            addr: src.addr,
            len,
        };
        // SAFETY: registered device memory stays valid while registered (its contract).
        unsafe { self.ctx.put_at(self.home, self.offset, local, pe, false) }
    }

    /// Copies PE `pe`'s copy of this view into the start of registered device memory `dst`
    /// (`aclshmem_getmem` with a device destination).
    pub fn get_into_device(&self, dst: DeviceRange, pe: Pe) -> Result<()> {
        let len = self.device_fits("get_into_device", dst)?;
        let local = LocalMut::Device {
            addr: dst.addr,
            len,
        };
        // SAFETY: as above.
        unsafe { self.ctx.get_at(self.home, self.offset, local, pe, false) }
    }

    /// The view's byte length, if device range `r` holds at least that much.
    fn device_fits(&self, what: &str, r: DeviceRange) -> Result<usize> {
        let len = self.byte_len();
        if r.len < len {
            return Err(Error::InvalidParam(format!(
                "{what}: the device range has {} bytes, the view {len}",
                r.len
            )));
        }
        Ok(len)
    }

    /// Non-blocking put from raw memory, completed by the next quiet of the view's context: the
    /// form the C ABI needs (`shmem_putmem_nbi`). Rust code uses [`Instance::nbi`].
    ///
    /// # Safety
    ///
    /// `src` points to `self.len()` readable elements that stay readable, and unchanged if
    /// their contents are to be delivered, until the next quiet of the view's context returns.
    pub unsafe fn put_nbi_raw(&self, src: *const T, pe: Pe) -> Result<()> {
        // SAFETY: the caller guarantees `src` is readable for the view's length.
        let bytes = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), self.byte_len()) };
        // SAFETY: the caller keeps the source valid until the quiet.
        unsafe {
            self.ctx
                .put_at(self.home, self.offset, Local::Host(bytes), pe, true)
        }
    }

    /// Non-blocking get into raw memory, completed by the next quiet of the view's context
    /// (`shmem_getmem_nbi`). Rust code uses [`Instance::nbi`].
    ///
    /// # Safety
    ///
    /// `dst` points to `self.len()` writable elements that stay writable, and are not accessed,
    /// until the next quiet of the view's context returns.
    pub unsafe fn get_nbi_raw(&self, dst: *mut T, pe: Pe) -> Result<()> {
        // SAFETY: the caller guarantees `dst` is writable for the view's length and untouched.
        let bytes = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), self.byte_len()) };
        // SAFETY: the caller keeps the destination valid and untouched until the quiet.
        unsafe {
            self.ctx
                .get_at(self.home, self.offset, LocalMut::Host(bytes), pe, true)
        }
    }

    /// PE `pe`'s copy of this view, as a vector.
    pub fn to_vec(&self, pe: Pe) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.get(&mut v, pe)?;
        Ok(v)
    }

    /// Stores `value` into element `index` of PE `pe`'s copy (`aclshmem_<T>_p`).
    #[inline]
    pub fn p(&self, index: usize, value: T, pe: Pe) -> Result<()> {
        self.element(index)?;
        let at = self.offset + index * std::mem::size_of::<T>();
        // SAFETY: blocking: the value is only borrowed for the call.
        unsafe {
            self.ctx.put_at(
                self.home,
                at,
                Local::Host(bytemuck::bytes_of(&value)),
                pe,
                false,
            )
        }
    }

    /// Loads element `index` of PE `pe`'s copy (`aclshmem_<T>_g`).
    #[inline]
    pub fn g(&self, index: usize, pe: Pe) -> Result<T> {
        self.element(index)?;
        let mut v = T::zeroed();
        let at = self.offset + index * std::mem::size_of::<T>();
        // SAFETY: blocking: the destination is only borrowed for the call.
        unsafe {
            self.ctx.get_at(
                self.home,
                at,
                LocalMut::Host(bytemuck::bytes_of_mut(&mut v)),
                pe,
                false,
            )
        }?;
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
        self.iput_at(0, dst_stride, src, src_stride, nelems, pe)
    }

    /// [`SymSlice::iput`] from element `start` of the view: element `i` of `src` at index
    /// `i * src_stride` goes to index `start + i * dst_stride`, which may run backwards
    /// (a negative stride) as long as every index lies in the view.
    pub fn iput_at(
        &self,
        start: usize,
        dst_stride: isize,
        src: &[T],
        src_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let src_layout = local_layout(src.len(), src_stride, size_of::<T>(), nelems)?;
        // SAFETY: blocking: the source is only borrowed for the call.
        unsafe {
            self.iput_local(
                start,
                dst_stride,
                Local::Host(bytemuck::cast_slice(src)),
                src_layout,
                nelems,
                pe,
            )
        }
    }

    /// Strided put from symmetric memory (`aclshmem_<T>_iput` as CANN programs call it, whose
    /// kernels read global memory): element `i * src_stride` of this PE's copy of `src` goes to
    /// element `i * dst_stride` of PE `pe`'s copy of this view. The source is read when the
    /// operation runs, so on a stream context it is read in stream order.
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let a = inst.calloc::<u32>(8)?;
    /// let b = inst.calloc::<u32>(8)?;
    /// // Every 2nd element of `a` to the first 4 of `b` on the next PE.
    /// b.as_slice().iput_from(1, a.as_slice(), 2, 4, (inst.my_pe() + 1) % inst.n_pes())?;
    /// # Ok(()) }
    /// ```
    pub fn iput_from(
        &self,
        dst_stride: isize,
        src: SymSlice<'_, T>,
        src_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        self.ctx.inst.owns(src.home)?;
        let src_layout = local_layout(src.len, src_stride, size_of::<T>(), nelems)?;
        let local = Local::Segment {
            offset: src.offset,
            len: src.byte_len(),
        };
        // SAFETY: a segment source needs no lifetime beyond the instance's.
        unsafe { self.iput_local(0, dst_stride, local, src_layout, nelems, pe) }
    }

    /// The strided put of `nelems` elements laid out as `src_layout` in `src` to element `start`
    /// of this view on `pe`, every `dst_stride` elements.
    ///
    /// # Safety
    ///
    /// `src_layout` was checked against `src`'s length, and a host source stays valid for the
    /// call (it is blocking).
    unsafe fn iput_local(
        &self,
        start: usize,
        dst_stride: isize,
        src: Local<'_>,
        src_layout: Strided,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let sz = size_of::<T>();
        let stride = stride_bytes(dst_stride, sz)?;
        self.check_view_span(start, dst_stride, nelems)?;
        let pe = self.ctx.target(pe)?;
        self.ctx.inst.owns(self.home)?;
        let dst = self
            .ctx
            .inst
            .check_strided(self.offset + start * sz, stride, sz, nelems)?;
        if let Local::Segment { offset, len } = src {
            self.ctx.inst.check_local(Some((offset, len)), None)?;
        }
        // SAFETY: the PE, the remote span and the local layout were checked (above, and by the
        // caller).
        unsafe {
            self.ctx
                .inst
                .fabric()
                .iput(self.ctx.queue(), pe, dst, src, src_layout, sz, nelems)
        }
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
        self.iget_at(0, src_stride, dst, dst_stride, nelems, pe)
    }

    /// [`SymSlice::iget`] from element `start` of the view (see [`SymSlice::iput_at`]).
    pub fn iget_at(
        &self,
        start: usize,
        src_stride: isize,
        dst: &mut [T],
        dst_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let dst_layout = local_layout(dst.len(), dst_stride, size_of::<T>(), nelems)?;
        // SAFETY: blocking: the destination is only borrowed for the call.
        unsafe {
            self.iget_local(
                start,
                src_stride,
                LocalMut::Host(bytemuck::cast_slice_mut(dst)),
                dst_layout,
                nelems,
                pe,
            )
        }
    }

    /// Strided get into symmetric memory (`aclshmem_<T>_iget` as CANN programs call it): element
    /// `i * src_stride` of PE `pe`'s copy of this view goes to element `i * dst_stride` of this
    /// PE's copy of `dst`, written when the operation runs (in stream order on a stream context).
    pub fn iget_into(
        &self,
        src_stride: isize,
        dst: SymSlice<'_, T>,
        dst_stride: isize,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        self.ctx.inst.owns(dst.home)?;
        let dst_layout = local_layout(dst.len, dst_stride, size_of::<T>(), nelems)?;
        let local = LocalMut::Segment {
            offset: dst.offset,
            len: dst.byte_len(),
        };
        // SAFETY: a segment destination needs no lifetime beyond the instance's.
        unsafe { self.iget_local(0, src_stride, local, dst_layout, nelems, pe) }
    }

    /// The strided get of `nelems` elements from element `start` of this view on `pe`, every
    /// `src_stride` elements, into `dst` laid out as `dst_layout`.
    ///
    /// # Safety
    ///
    /// `dst_layout` was checked against `dst`'s length, and a host destination stays valid for
    /// the call (it is blocking).
    unsafe fn iget_local(
        &self,
        start: usize,
        src_stride: isize,
        dst: LocalMut<'_>,
        dst_layout: Strided,
        nelems: usize,
        pe: Pe,
    ) -> Result<()> {
        let sz = size_of::<T>();
        let stride = stride_bytes(src_stride, sz)?;
        self.check_view_span(start, src_stride, nelems)?;
        let pe = self.ctx.target(pe)?;
        self.ctx.inst.owns(self.home)?;
        let src = self
            .ctx
            .inst
            .check_strided(self.offset + start * sz, stride, sz, nelems)?;
        if let LocalMut::Segment { offset, len } = dst {
            self.ctx.inst.check_local(Some((offset, len)), None)?;
        }
        // SAFETY: the PE, the remote span and the local layout were checked (above, and by the
        // caller).
        unsafe {
            self.ctx
                .inst
                .fabric()
                .iget(self.ctx.queue(), pe, src, dst, dst_layout, sz, nelems)
        }
    }

    /// Interleaved block put (OpenSHMEM 1.6 `shmem_ibput`): block `b` of `bsize` elements,
    /// starting at element `b * src_stride` of `src`, goes to element `b * dst_stride` of this
    /// view on `pe`, for `b` in `0..nblocks`. Strides are in elements and positive; blocks may
    /// overlap neither side's bounds. Every block is checked before any moves.
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let v = inst.calloc::<u32>(8)?;
    /// let src = [1, 2, 3, 4, 5, 6];
    /// // Blocks of 2 from every 3rd element of src, to every 4th element of the view.
    /// v.as_slice().ibput(4, &src, 3, 2, 2, inst.my_pe())?;
    /// assert_eq!(v.as_slice().to_vec(inst.my_pe())?, [1, 2, 0, 0, 4, 5, 0, 0]);
    /// # Ok(()) }
    /// ```
    pub fn ibput(
        &self,
        dst_stride: isize,
        src: &[T],
        src_stride: isize,
        bsize: usize,
        nblocks: usize,
        pe: Pe,
    ) -> Result<()> {
        let (remote, local) =
            self.check_blocks(dst_stride, src.len(), src_stride, bsize, nblocks)?;
        let sz = std::mem::size_of::<T>();
        for b in 0..nblocks {
            let block = &src[b * local..b * local + bsize];
            // SAFETY: blocking: the source is only borrowed for the call.
            unsafe {
                self.ctx.put_at(
                    self.home,
                    self.offset + b * remote * sz,
                    Local::Host(bytemuck::cast_slice(block)),
                    pe,
                    false,
                )
            }?;
        }
        Ok(())
    }

    /// Interleaved block get (OpenSHMEM 1.6 `shmem_ibget`): block `b` of `bsize` elements,
    /// starting at element `b * src_stride` of this view on `pe`, goes to element
    /// `b * dst_stride` of `dst` (see [`SymSlice::ibput`]).
    pub fn ibget(
        &self,
        src_stride: isize,
        dst: &mut [T],
        dst_stride: isize,
        bsize: usize,
        nblocks: usize,
        pe: Pe,
    ) -> Result<()> {
        let (remote, local) =
            self.check_blocks(src_stride, dst.len(), dst_stride, bsize, nblocks)?;
        let sz = std::mem::size_of::<T>();
        for b in 0..nblocks {
            let block = &mut dst[b * local..b * local + bsize];
            // SAFETY: blocking: the destination is only borrowed for the call.
            unsafe {
                self.ctx.get_at(
                    self.home,
                    self.offset + b * remote * sz,
                    LocalMut::Host(bytemuck::cast_slice_mut(block)),
                    pe,
                    false,
                )
            }?;
        }
        Ok(())
    }

    /// Checks an interleaved block transfer against this view and a local buffer of
    /// `local_len` elements; returns the (remote, local) strides in elements.
    fn check_blocks(
        &self,
        remote_stride: isize,
        local_len: usize,
        local_stride: isize,
        bsize: usize,
        nblocks: usize,
    ) -> Result<(usize, usize)> {
        let positive = |s: isize| usize::try_from(s).ok().filter(|&s| s > 0);
        let (Some(remote), Some(local)) = (positive(remote_stride), positive(local_stride)) else {
            return Err(Error::InvalidParam(format!(
                "block strides {remote_stride} and {local_stride} must be positive"
            )));
        };
        if bsize == 0 || nblocks == 0 {
            return Ok((remote, local));
        }
        let end = |stride: usize| {
            (nblocks - 1)
                .checked_mul(stride)
                .and_then(|e| e.checked_add(bsize))
        };
        match end(remote) {
            Some(e) if e <= self.len => {}
            _ => {
                return Err(Error::OutOfBounds(format!(
                    "{nblocks} blocks of {bsize} at a stride of {remote} do not fit in a symmetric view of {} elements",
                    self.len
                )));
            }
        }
        match end(local) {
            Some(e) if e <= local_len => Ok((remote, local)),
            _ => Err(Error::OutOfBounds(format!(
                "{nblocks} blocks of {bsize} at a stride of {local} do not fit in a local buffer of {local_len} elements"
            ))),
        }
    }

    fn check_view_span(&self, start: usize, stride: isize, nelems: usize) -> Result<()> {
        match (Strided {
            first: start,
            stride,
        })
        .span(1, nelems)
        {
            Some((_, hi)) if hi <= self.len as u64 && start <= self.len => Ok(()),
            _ => Err(Error::OutOfBounds(format!(
                "{nelems} elements with a stride of {stride} from element {start} do not fit in a symmetric view of {} elements",
                self.len
            ))),
        }
    }
}

/// A stride of `stride` elements of `size` bytes, in bytes.
fn stride_bytes(stride: isize, size: usize) -> Result<isize> {
    isize::try_from(size)
        .ok()
        .and_then(|s| stride.checked_mul(s))
        .ok_or_else(|| {
            Error::InvalidParam(format!(
                "a stride of {stride} elements of {size} bytes overflows"
            ))
        })
}

/// The layout of a strided local buffer of `len` elements, checked to hold `nelems` of them at
/// `stride`.
fn local_layout(len: usize, stride: isize, size: usize, nelems: usize) -> Result<Strided> {
    let layout = Strided {
        first: 0,
        stride: stride_bytes(stride, size)?,
    };
    match layout.span(size, nelems) {
        Some((_, hi)) if hi <= (len * size) as u64 => Ok(layout),
        _ => Err(Error::OutOfBounds(format!(
            "the local buffer of {len} elements is too small for {nelems} elements with a stride of {stride}"
        ))),
    }
}
