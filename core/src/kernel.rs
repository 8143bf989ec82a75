//! The device API on simulated AI cores, in Rust: a kernel is a closure that every block of a
//! launch runs with a [`Device`], the block's view of one instance (CANN's device calls without
//! `MULTI_INSTANCE`, which act on one instance).
//!
//! [`Instance::launch`] enqueues the kernel on a stream (the simulator's launch machinery,
//! `shmem_sim::launch`: blocks as threads with their own 192 KiB UB, waves of 48, `SyncAll`).
//! A block reaches the symmetric heap only through these calls, which take symmetric addresses
//! as CANN's device calls take `__gm__` pointers:
//!
//! - [`Device::putmem`]/[`Device::getmem`] stage the data through the block's UB in chunks of the
//!   MTE configuration's `ub_size` (16 KiB unless [`Device::set_mte_config`] says otherwise), as
//!   CANN's MTE engine does: GM → UB, then UB → the peer's GM;
//! - [`Device::p`]/[`Device::g`] store and load one element of a peer;
//! - [`Device::signal_op`] (SET or ADD on an `i32` word) and [`Device::signal_wait_until`];
//! - [`Device::quiet`] and [`Device::fence`], which are the same, as on CANN;
//! - [`Device::barrier_all`]: every block of every PE of the instance.
//!
//! Each call is a scheduling point of the simulated core. A failure ends the launch with an
//! error naming the kernel, the block and the call (see `shmem_sim::launch`).

use bytemuck::Pod;
use half::{bf16, f16};
use shmem_backend::{AmoOp, Cmp, SignalOp, Width};
use shmem_sim::{Core, Kernel, KernelError, KernelResult, UB_ALIGN, UB_SIZE};

use crate::amo::AmoType;
use crate::error::{Error, Result};
use crate::fabric::Stream;
use crate::instance::Instance;
use crate::sym::SymSlice;

/// The default staging of the MTE engine: a 16 KiB UB buffer at offset 0 (CANN's
/// `g_state.mte_config`).
const DEFAULT_MTE_UB: (usize, usize) = (0, 16 * 1024);

/// One block's view of an instance inside a kernel.
#[derive(Debug)]
pub struct Device<'a> {
    core: &'a mut Core,
    /// The instance the block acts on: always set in a launch of one instance; in a
    /// multi-instance launch, what `aclshmemx_instance_ctx_set` selected last.
    inst: Option<Instance>,
    /// The MTE staging buffer: offset into the UB and size.
    mte: (usize, usize),
}

/// CANN's `non_contiguous_copy_param`: `repeat` rows of `length` elements, rows `src_ld` and
/// `dst_ld` elements apart (the leading dimensions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct NonContiguousCopyParam {
    /// The rows.
    pub repeat: u32,
    /// Elements per row.
    pub length: u32,
    /// The source's leading dimension, in elements.
    pub src_ld: u32,
    /// The destination's leading dimension, in elements.
    pub dst_ld: u32,
}

/// The bytes of `nelems` elements of `T`.
fn bytes<T>(call: &str, nelems: usize) -> Result<usize, KernelError> {
    nelems
        .checked_mul(size_of::<T>())
        .ok_or_else(|| fail(call, format!("{nelems} elements overflow")))
}

/// A caller's UB buffer (`ub_size` bytes at offset `buf`) and its event, checked: 32-byte
/// aligned, inside the UB, not empty, and `sync_id` one of the 8 MTE events.
fn ub_range(
    call: &str,
    buf: usize,
    ub_size: usize,
    sync_id: u32,
) -> Result<(usize, usize), KernelError> {
    if sync_id > 7 {
        return Err(fail(
            call,
            format!("sync_id {sync_id} is not an event id (0 to 7)"),
        ));
    }
    if ub_size == 0 || !buf.is_multiple_of(UB_ALIGN) || !ub_size.is_multiple_of(UB_ALIGN) {
        return Err(fail(
            call,
            format!(
                "the UB buffer ({ub_size} bytes at {buf}) must be 32-byte aligned and not empty"
            ),
        ));
    }
    if buf.checked_add(ub_size).is_none_or(|end| end > UB_SIZE) {
        return Err(fail(
            call,
            format!("{ub_size} bytes at UB offset {buf} do not fit in the {UB_SIZE}-byte UB"),
        ));
    }
    Ok((buf, ub_size))
}

/// The floating-point types the AI cores add atomically: `f32`, and CANN's `half` and
/// `bfloat16` (as [`f16`](struct@crate::f16) and [`bf16`](struct@crate::bf16)).
pub trait DeviceFloat: Copy + sealed::Sealed {
    /// The width of the element.
    const WIDTH: Width;
    /// The element from its bits.
    fn from_bits(bits: u64) -> Self;
    /// Its bits.
    fn to_bits(self) -> u64;
    /// The sum, rounded to the type.
    fn add(self, other: Self) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

impl DeviceFloat for f32 {
    const WIDTH: Width = Width::W32;
    fn from_bits(bits: u64) -> f32 {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    fn add(self, other: f32) -> f32 {
        self + other
    }
}

impl DeviceFloat for f16 {
    const WIDTH: Width = Width::W16;
    fn from_bits(bits: u64) -> f16 {
        f16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        u64::from(f16::to_bits(self))
    }
    fn add(self, other: f16) -> f16 {
        f16::from_f32(self.to_f32() + other.to_f32())
    }
}

impl DeviceFloat for bf16 {
    const WIDTH: Width = Width::W16;
    fn from_bits(bits: u64) -> bf16 {
        bf16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        u64::from(bf16::to_bits(self))
    }
    fn add(self, other: bf16) -> bf16 {
        bf16::from_f32(self.to_f32() + other.to_f32())
    }
}

/// A failure of `call` as the block's.
fn fail(call: &str, e: impl std::fmt::Display) -> KernelError {
    KernelError::new(call, e.to_string())
}

/// What a multi-instance kernel that has not selected an instance is told.
const NO_INSTANCE: &str = "no instance is selected: a MULTI_INSTANCE kernel must call aclshmemx_instance_ctx_set(id) in every block before any SHMEM call";

impl Device<'_> {
    /// The instance the block acts on, for `call`.
    fn on(&self, call: &str) -> Result<&Instance, KernelError> {
        self.inst.as_ref().ok_or_else(|| fail(call, NO_INSTANCE))
    }

    /// The instance for a call that has no error to return: without one the block fails (a
    /// panic the launch reports, naming the call).
    fn selected(&self, call: &str) -> &Instance {
        self.inst
            .as_ref()
            .unwrap_or_else(|| panic!("{call}: {NO_INSTANCE}"))
    }

    /// This block's index (`GetBlockIdx`).
    pub fn block_idx(&self) -> u32 {
        self.core.block_idx()
    }

    /// The blocks of the launch (`GetBlockNum`).
    pub fn block_num(&self) -> u32 {
        self.core.block_num()
    }

    /// This block's UB.
    pub fn ub(&mut self) -> &mut [u8] {
        self.core.ub()
    }

    /// The instance the block acts on (`None` in a multi-instance kernel before
    /// `instance_ctx_set`).
    pub fn instance(&self) -> Option<&Instance> {
        self.inst.as_ref()
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        self.core.kernel()
    }

    /// A scheduling point (see [`Core::yield_point`]).
    pub fn yield_point(&self) {
        self.core.yield_point();
    }

    /// Ends the launch for the other blocks: their `sync_all` and barriers fail (see
    /// [`Core::fail_launch`]); for a block that records its failure and runs on.
    pub fn fail_launch(&self) {
        self.core.fail_launch();
    }

    /// Whether a block of the launch failed.
    pub fn launch_failed(&self) -> bool {
        self.core.launch_failed()
    }

    /// The MTE staging buffer (offset into the UB, size), as `aclshmemx_set_mte_config` left it.
    pub fn mte_config(&self) -> (usize, usize) {
        self.mte
    }

    /// Waits for every block of the launch on this PE (`SyncAll`).
    pub fn sync_all(&self) -> KernelResult {
        self.core.sync_all()
    }

    /// This PE's number in the instance (`aclshmem_my_pe`).
    ///
    /// # Panics
    ///
    /// In a multi-instance kernel before `instance_ctx_set`: the launch fails, naming the call.
    pub fn my_pe(&self) -> u32 {
        self.core.yield_point();
        self.selected("aclshmem_my_pe").my_pe()
    }

    /// The PEs of the instance (`aclshmem_n_pes`).
    ///
    /// # Panics
    ///
    /// As [`Device::my_pe`].
    pub fn n_pes(&self) -> u32 {
        self.core.yield_point();
        self.selected("aclshmem_n_pes").n_pes()
    }

    /// PE `pe`'s symmetric address of the object at `addr` (`aclshmem_ptr`), or `None`.
    ///
    /// # Panics
    ///
    /// As [`Device::my_pe`].
    pub fn ptr<T>(&self, addr: *const T, pe: u32) -> Option<*mut T> {
        self.core.yield_point();
        self.selected("aclshmem_ptr")
            .peer_addr(addr.cast(), pe)
            .map(|p| p.as_ptr().cast())
    }

    /// Sets the MTE staging buffer: `ub_size` bytes at `offset` of the UB
    /// (`aclshmemx_set_mte_config` on the device). Both 32-byte aligned, inside the UB, and not
    /// empty.
    pub fn set_mte_config(&mut self, offset: usize, ub_size: usize) -> KernelResult {
        self.mte = ub_range("aclshmemx_set_mte_config", offset, ub_size, 0)?;
        Ok(())
    }

    /// Copies `len` bytes from this PE's symmetric `src` to PE `pe`'s copy of symmetric `dst`,
    /// through the UB in chunks of the MTE buffer's size (`aclshmem_putmem`: blocking, complete
    /// on return).
    pub fn putmem(&mut self, dst: *mut u8, src: *const u8, len: usize, pe: u32) -> KernelResult {
        let buf = self.mte;
        let me = self.on("aclshmem_putmem")?.my_pe();
        self.stage("aclshmem_putmem", src, me, dst, pe, len, buf)
    }

    /// Copies `len` bytes from PE `pe`'s copy of symmetric `src` to this PE's symmetric `dst`,
    /// through the UB (`aclshmem_getmem`).
    pub fn getmem(&mut self, dst: *mut u8, src: *const u8, len: usize, pe: u32) -> KernelResult {
        let buf = self.mte;
        let me = self.on("aclshmem_getmem")?.my_pe();
        self.stage("aclshmem_getmem", src, pe, dst, me, len, buf)
    }

    /// `nelems` elements from this PE's symmetric `src` to PE `pe`'s copy of `dst`
    /// (`aclshmem_<T>_put`; through UB as [`Device::putmem`]).
    pub fn put<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        let buf = self.mte;
        let len = bytes::<T>("aclshmem_put", nelems)?;
        let me = self.on("aclshmem_put")?.my_pe();
        self.stage("aclshmem_put", src.cast(), me, dst.cast(), pe, len, buf)
    }

    /// `nelems` elements from PE `pe`'s copy of symmetric `src` to this PE's `dst`
    /// (`aclshmem_<T>_get`).
    pub fn get<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        let buf = self.mte;
        let len = bytes::<T>("aclshmem_get", nelems)?;
        let me = self.on("aclshmem_get")?.my_pe();
        self.stage("aclshmem_get", src.cast(), pe, dst.cast(), me, len, buf)
    }

    /// The non-blocking [`Device::put`] (`aclshmem_<T>_put_nbi`): complete by the next
    /// [`Device::quiet`]. (The simulator completes it before it returns, which the contract
    /// allows.)
    pub fn put_nbi<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        self.put(dst, src, nelems, pe)
    }

    /// The non-blocking [`Device::get`] (`aclshmem_<T>_get_nbi`).
    pub fn get_nbi<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        self.get(dst, src, nelems, pe)
    }

    /// A strided put (`aclshmem_<T>_put_nbi` with a `non_contiguous_copy_param`): `repeat`
    /// rows of `length` elements, row `r` from element `r * src_ld` of `src` to element
    /// `r * dst_ld` of PE `pe`'s `dst`, each row through UB.
    pub fn put_strided<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        param: NonContiguousCopyParam,
        pe: u32,
    ) -> KernelResult {
        let me = self.on("aclshmem_put_nbi")?.my_pe();
        self.rows("aclshmem_put_nbi", dst, src, param, me, pe)
    }

    /// A strided get: rows of PE `pe`'s `src` to this PE's `dst` (see [`Device::put_strided`]).
    pub fn get_strided<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        param: NonContiguousCopyParam,
        pe: u32,
    ) -> KernelResult {
        let me = self.on("aclshmem_get_nbi")?.my_pe();
        self.rows("aclshmem_get_nbi", dst, src, param, pe, me)
    }

    fn rows<T: Pod>(
        &mut self,
        call: &str,
        dst: *mut T,
        src: *const T,
        p: NonContiguousCopyParam,
        from_pe: u32,
        to_pe: u32,
    ) -> KernelResult {
        let buf = self.mte;
        let row = bytes::<T>(call, p.length as usize)?;
        for r in 0..p.repeat as usize {
            let from = src.wrapping_add(r * p.src_ld as usize).cast::<u8>();
            let to = dst.wrapping_add(r * p.dst_ld as usize).cast::<u8>();
            self.stage(call, from, from_pe, to, to_pe, row, buf)?;
        }
        Ok(())
    }

    /// The MTE engine's own put (`aclshmemx_mte_put_nbi`): `nelems` elements through the
    /// caller's UB buffer of `ub_size` bytes at UB offset `buf`, with event `sync_id` (0 to 7).
    #[allow(clippy::too_many_arguments)]
    pub fn mte_put_nbi<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        buf: usize,
        ub_size: usize,
        nelems: usize,
        pe: u32,
        sync_id: u32,
    ) -> KernelResult {
        let call = "aclshmemx_mte_put_nbi";
        let b = ub_range(call, buf, ub_size, sync_id)?;
        let len = bytes::<T>(call, nelems)?;
        let me = self.on(call)?.my_pe();
        self.stage(call, src.cast(), me, dst.cast(), pe, len, b)
    }

    /// The MTE engine's own get (`aclshmemx_mte_get_nbi`; see [`Device::mte_put_nbi`]).
    #[allow(clippy::too_many_arguments)]
    pub fn mte_get_nbi<T: Pod>(
        &mut self,
        dst: *mut T,
        src: *const T,
        buf: usize,
        ub_size: usize,
        nelems: usize,
        pe: u32,
        sync_id: u32,
    ) -> KernelResult {
        let call = "aclshmemx_mte_get_nbi";
        let b = ub_range(call, buf, ub_size, sync_id)?;
        let len = bytes::<T>(call, nelems)?;
        let me = self.on(call)?.my_pe();
        self.stage(call, src.cast(), pe, dst.cast(), me, len, b)
    }

    /// ub2gm put (`aclshmem_<T>_put_nbi` from `__ubuf__`): `nelems` elements at UB offset
    /// `ub` (32-byte aligned) to PE `pe`'s copy of symmetric `dst`, with no staging.
    pub fn put_from_ub<T: Pod>(
        &mut self,
        dst: *mut T,
        ub: usize,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        let call = "aclshmem_put_nbi (ub2gm)";
        let len = bytes::<T>(call, nelems)?;
        let (ub, _) = ub_range(call, ub, len.max(UB_ALIGN).next_multiple_of(UB_ALIGN), 0)?;
        self.core.yield_point();
        let inst = self.on(call)?.clone();
        let view = inst
            .default_ctx()
            .view_at(dst.cast::<u8>().cast_const(), len);
        let data = &self.core.ub()[ub..ub + len];
        view.and_then(|v| v.put(data, pe))
            .map_err(|e| fail(call, e))
    }

    /// ub2gm get (`aclshmem_<T>_get_nbi` into `__ubuf__`): `nelems` elements of PE `pe`'s copy
    /// of symmetric `src` to UB offset `ub` (32-byte aligned).
    pub fn get_to_ub<T: Pod>(
        &mut self,
        ub: usize,
        src: *const T,
        nelems: usize,
        pe: u32,
    ) -> KernelResult {
        let call = "aclshmem_get_nbi (ub2gm)";
        let len = bytes::<T>(call, nelems)?;
        let (ub, _) = ub_range(call, ub, len.max(UB_ALIGN).next_multiple_of(UB_ALIGN), 0)?;
        self.core.yield_point();
        let inst = self.on(call)?.clone();
        let view = inst.default_ctx().view_at(src.cast::<u8>(), len);
        let view = view.map_err(|e| fail(call, e))?;
        let data = &mut self.core.ub()[ub..ub + len];
        view.get(data, pe).map_err(|e| fail(call, e))
    }

    /// Put with signal (`aclshmem_putmem_signal`): the data through UB, a quiet, then the
    /// update of PE `pe`'s `i32` signal word at `sig`, as CANN's device call does.
    #[allow(clippy::too_many_arguments)]
    pub fn putmem_signal(
        &mut self,
        dst: *mut u8,
        src: *const u8,
        len: usize,
        sig: *mut i32,
        value: i32,
        op: SignalOp,
        pe: u32,
    ) -> KernelResult {
        self.putmem(dst, src, len, pe)?;
        self.quiet()?;
        self.signal_op(sig, value, op, pe)
    }

    /// `len` elements of symmetric memory at `addr` as a view of the instance, for the rest of
    /// the device API on words: the whole wait/test family (`wait_until`, `test`, their
    /// `_all`/`_any`/`_some` and `_vector` forms), and element access.
    pub fn view<T: Pod>(&self, addr: *const T, len: usize) -> Result<SymSlice<'_, T>, KernelError> {
        self.core.yield_point();
        self.on("view")?
            .default_ctx()
            .view_at(addr, len)
            .map_err(|e| fail("view", e))
    }

    /// The MTE path: GM (`from` on `from_pe`) → UB buffer `buf` (offset, size) → GM (`to` on
    /// `to_pe`), chunk by chunk.
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &mut self,
        call: &str,
        from: *const u8,
        from_pe: u32,
        to: *mut u8,
        to_pe: u32,
        len: usize,
        buf: (usize, usize),
    ) -> KernelResult {
        let inst = self.on(call)?.clone();
        let ctx = inst.default_ctx();
        let src = ctx.view_at(from, len).map_err(|e| fail(call, e))?;
        let dst = ctx
            .view_at(to.cast_const(), len)
            .map_err(|e| fail(call, e))?;
        let (offset, chunk) = buf;
        let mut done = 0;
        while done < len {
            self.core.yield_point();
            let n = chunk.min(len - done);
            let ub = &mut self.core.ub()[offset..offset + n];
            src.slice(done..done + n)
                .get(ub, from_pe)
                .map_err(|e| fail(call, e))?;
            dst.slice(done..done + n)
                .put(ub, to_pe)
                .map_err(|e| fail(call, e))?;
            done += n;
        }
        Ok(())
    }

    /// Stores `value` into PE `pe`'s copy of the element at symmetric `dst` (`aclshmem_<T>_p`).
    pub fn p<T: Pod>(&self, dst: *mut T, value: T, pe: u32) -> KernelResult {
        self.core.yield_point();
        let call = "aclshmem_p";
        let e = self.on(call)?.default_ctx().view_at(dst.cast_const(), 1);
        e.and_then(|v| v.p(0, value, pe)).map_err(|e| fail(call, e))
    }

    /// Loads PE `pe`'s copy of the element at symmetric `src` (`aclshmem_<T>_g`).
    pub fn g<T: Pod>(&self, src: *const T, pe: u32) -> Result<T, KernelError> {
        self.core.yield_point();
        let v = self.on("aclshmem_g")?.default_ctx().view_at(src, 1);
        v.and_then(|v| v.g(0, pe))
            .map_err(|e| fail("aclshmem_g", e))
    }

    /// Updates PE `pe`'s `i32` signal word at symmetric `sig` with `op` and `value`
    /// (`aclshmemx_signal_op`; ADD is atomic, SET a plain store, as on CANN).
    pub fn signal_op(&self, sig: *mut i32, value: i32, op: SignalOp, pe: u32) -> KernelResult {
        self.core.yield_point();
        let e = self
            .on("aclshmemx_signal_op")?
            .default_ctx()
            .elem_at(sig.cast_const());
        e.and_then(|e| e.signal_op(value, op, pe))
            .map_err(|e| fail("aclshmemx_signal_op", e))
    }

    /// Waits until this PE's `i32` signal word at `sig` compares to `value` with `cmp`, and
    /// returns the value that satisfied it (`aclshmem_signal_wait_until`). The block sleeps
    /// while it waits.
    pub fn signal_wait_until(
        &self,
        sig: *const i32,
        cmp: Cmp,
        value: i32,
    ) -> Result<i32, KernelError> {
        self.core.yield_point();
        let e = self
            .on("aclshmem_signal_wait_until")?
            .default_ctx()
            .elem_at(sig);
        e.and_then(|e| e.signal_wait_until(cmp, value))
            .map_err(|e| fail("aclshmem_signal_wait_until", e))
    }

    /// One atomic on the `width`-wide word at symmetric `addr` on PE `pe`, returning the old
    /// bits. The AI cores have atomics whatever the host has (CANN's device atomics exist where
    /// its host API has none).
    fn device_amo(
        &self,
        call: &str,
        addr: *const u8,
        width: Width,
        op: AmoOp,
        pe: u32,
    ) -> Result<u64, KernelError> {
        self.core.yield_point();
        let inst = self.on(call)?;
        let ctx = inst.default_ctx();
        let pe = ctx.target(pe).map_err(|e| fail(call, e))?;
        let w = width.bytes();
        let off = inst
            .offset_of(addr, w)
            .ok_or_else(|| fail(call, crate::sym::not_symmetric(addr, w)))?;
        if !off.is_multiple_of(w) {
            return Err(fail(
                call,
                format!("heap offset {off:#x} is not aligned to the {w}-byte word"),
            ));
        }
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        unsafe { inst.fabric().atomic(ctx.queue(), pe, off, width, op) }.map_err(|e| fail(call, e))
    }

    /// An atomic on the element of `T` at symmetric `addr` on PE `pe`, returning its previous
    /// value (`aclshmem_<T>_atomic_fetch_add`, `_swap`, `_compare_swap`, `_fetch_and`, …, and
    /// their non-fetching forms): the operations CANN defines on `T` (add and compare-swap on
    /// integers, the bitwise ones on unsigned integers; fetch, set and swap on every type).
    pub fn atomic<T: AmoType>(&self, addr: *mut T, op: AmoOp, pe: u32) -> Result<T, KernelError> {
        let call = "aclshmem_atomic";
        if !T::allows(op) {
            return Err(fail(
                call,
                format!("no atomic {op:?} on {}", std::any::type_name::<T>()),
            ));
        }
        let old = self.device_amo(call, addr.cast_const().cast(), T::WIDTH, op, pe)?;
        Ok(T::from_bits(old))
    }

    /// Adds `value` to the floating-point element at symmetric `addr` on PE `pe`, atomically,
    /// and returns the previous value (`aclshmem_<T>_atomic_add` on `float`, `half` and
    /// `bfloat16`, which CANN's AI cores add with `SetAtomicAdd`): a compare-and-swap loop on
    /// the element's bits.
    pub fn atomic_add_float<F: DeviceFloat>(
        &self,
        addr: *mut F,
        value: F,
        pe: u32,
    ) -> Result<F, KernelError> {
        let call = "aclshmem_atomic_add";
        let a = addr.cast_const().cast::<u8>();
        let mut old = self.device_amo(call, a, F::WIDTH, AmoOp::Fetch, pe)?;
        loop {
            let new = F::from_bits(old).add(value).to_bits();
            let seen = self.device_amo(
                call,
                a,
                F::WIDTH,
                AmoOp::CompareSwap {
                    cond: old,
                    value: new,
                },
                pe,
            )?;
            if seen == old {
                return Ok(F::from_bits(old));
            }
            old = seen;
        }
    }

    /// Completes this block's puts (`aclshmem_quiet`).
    pub fn quiet(&self) -> KernelResult {
        self.core.yield_point();
        let inst = self.on("aclshmem_quiet")?;
        inst.quiet().map_err(|e| fail("aclshmem_quiet", e))
    }

    /// The same as [`Device::quiet`], as on CANN (`aclshmem_fence`).
    pub fn fence(&self) -> KernelResult {
        self.core.yield_point();
        let inst = self.on("aclshmem_fence")?;
        inst.quiet().map_err(|e| fail("aclshmem_fence", e))
    }

    /// Waits until every block of every PE of the instance has arrived, with every put issued
    /// before complete (`aclshmem_barrier_all`). The blocks of this PE meet, one of them meets
    /// the other PEs, and the blocks meet again. Refused in a launch that runs in waves.
    pub fn barrier_all(&self) -> KernelResult {
        self.core
            .sync_all()
            .map_err(|e| fail("aclshmem_barrier_all", e.detail))?;
        if self.core.block_idx() == 0 {
            self.on("aclshmem_barrier_all")?
                .barrier_all()
                .map_err(|e| fail("aclshmem_barrier_all", e))?;
        }
        self.core
            .sync_all()
            .map_err(|e| fail("aclshmem_barrier_all", e.detail))
    }
    /// Waits until every block of every member of `team` has arrived, with the puts issued
    /// before complete (`aclshmem_barrier(team)`): this PE's blocks meet, block 0 meets the
    /// team, the blocks meet again. The team must be of the block's instance; refused in a
    /// launch of waves.
    pub fn barrier(&self, team: &crate::Team) -> KernelResult {
        let call = "aclshmem_barrier";
        let inst = self.on(call)?;
        if team.instance().id() != inst.id() {
            return Err(fail(
                call,
                format!(
                    "the team belongs to instance {}, the block acts on instance {}",
                    team.instance().id(),
                    inst.id()
                ),
            ));
        }
        self.core.sync_all().map_err(|e| fail(call, e.detail))?;
        if self.core.block_idx() == 0 {
            team.barrier().map_err(|e| fail(call, e))?;
        }
        self.core.sync_all().map_err(|e| fail(call, e.detail))
    }

    /// The instance PE of `team`'s PE `pe` (`aclshmem_team_pe_mapping`), or -1 when `pe` is
    /// not a member, as CANN answers.
    pub fn team_pe_mapping(&self, team: &crate::Team, pe: u32) -> i32 {
        self.core.yield_point();
        team.to_instance_pe(pe).map_or(-1, |p| p as i32)
    }

    /// `util_set_ffts_config`: the FFTS configuration A2/A3 kernels set at their entry; the
    /// simulated cores need none, so any value is accepted.
    pub fn util_set_ffts_config(&self, config: u64) {
        let _ = config;
        self.core.yield_point();
    }
}

impl Instance {
    /// Enqueues a launch of the kernel `name` on `block_dim` blocks of this PE's NPU, on
    /// `stream`: every block runs `body` with its [`Device`] view of this instance. A failure is
    /// reported by the stream's next synchronisation, naming the kernel, the block and the call.
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let buf = inst.calloc::<u32>(64)?;
    /// let at = buf.as_ptr() as usize; // a symmetric address, as a kernel argument
    /// let stream = shmem::Stream::new();
    /// let (me, n) = (inst.my_pe(), inst.n_pes());
    /// // Block b writes element b of the next PE's buffer.
    /// inst.launch(&stream, "ring", 8, move |dev| {
    ///     let b = dev.block_idx();
    ///     dev.p((at as *mut u32).wrapping_add(b as usize), me * 100 + b, (me + 1) % n)?;
    ///     dev.barrier_all()
    /// })?;
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn launch(
        &self,
        stream: &Stream,
        name: &str,
        block_dim: u32,
        body: impl Fn(&mut Device<'_>) -> KernelResult + Send + Sync + 'static,
    ) -> Result<()> {
        self.check_live()?;
        if block_dim == 0 {
            return Err(Error::InvalidValue(format!(
                "kernel {name}: a launch needs at least one block"
            )));
        }
        let s = stream.simulated(name)?;
        let inst = self.clone();
        s.launch(
            Kernel::new(name, move |core| {
                crate::fault::point("kernel.in_launch", inst.my_pe(), inst.id());
                let mut dev = Device {
                    core,
                    inst: Some(inst.clone()),
                    mte: DEFAULT_MTE_UB,
                };
                body(&mut dev)
            }),
            block_dim,
        );
        Ok(())
    }
}

/// A block of a kernel built with `MULTI_INSTANCE`: the [`Device`] calls act on the instance
/// that [`MultiDevice::instance_ctx_set`] selected last, and none is selected when the block
/// starts (every block selects its own; blocks of one kernel may use different instances, and
/// a block may switch as it goes). A SHMEM call before the first selection fails the launch,
/// naming the kernel, the block and the call (on CANN it reads an uninitialised address). In a
/// kernel of one instance ([`Instance::launch`]) the [`Device`] has no such calls, as CANN's
/// are unavailable without `MULTI_INSTANCE`.
#[derive(Debug)]
pub struct MultiDevice<'a>(Device<'a>);

impl<'a> std::ops::Deref for MultiDevice<'a> {
    type Target = Device<'a>;
    fn deref(&self) -> &Device<'a> {
        &self.0
    }
}

impl<'a> std::ops::DerefMut for MultiDevice<'a> {
    fn deref_mut(&mut self) -> &mut Device<'a> {
        &mut self.0
    }
}

impl MultiDevice<'_> {
    /// Selects instance `id` for this block's later calls (`aclshmemx_instance_ctx_set`). An id
    /// with no initialised instance on this PE fails the launch.
    pub fn instance_ctx_set(&mut self, id: u64) -> KernelResult {
        self.0.core.yield_point();
        let inst = Instance::by_id(id).ok_or_else(|| {
            fail(
                "aclshmemx_instance_ctx_set",
                format!("instance {id} is not initialised on this PE"),
            )
        })?;
        self.0.inst = Some(inst);
        Ok(())
    }

    /// The instance this block selected (`aclshmemx_instance_ctx_get`).
    pub fn instance_ctx_get(&self) -> Result<u64, KernelError> {
        self.0.on("aclshmemx_instance_ctx_get").map(Instance::id)
    }
}

/// Enqueues a launch of a kernel built with `MULTI_INSTANCE` on `stream`: every block runs
/// `body` with a [`MultiDevice`], which selects its instances itself.
///
/// ```no_run
/// # fn demo() -> shmem::Result<()> {
/// let stream = shmem::Stream::new();
/// shmem::launch_multi_instance(&stream, "switch", 4, |dev| {
///     for id in 1..=3 {
///         dev.instance_ctx_set(id)?;  // before any SHMEM call, in every block
///         dev.barrier_all()?;         // instance id's PEs
///     }
///     Ok(())
/// })?;
/// stream.synchronize()?;
/// # Ok(()) }
/// ```
pub fn launch_multi_instance(
    stream: &Stream,
    name: &str,
    block_dim: u32,
    body: impl Fn(&mut MultiDevice<'_>) -> KernelResult + Send + Sync + 'static,
) -> Result<()> {
    launch_starting_on(stream, name, block_dim, None, body)
}

/// Enqueues a launch whose blocks start acting on `start`, and may select others with
/// [`MultiDevice::instance_ctx_set`]: a kernel built without `MULTI_INSTANCE` acts on instance 0
/// (pass it), one built with it starts on none ([`launch_multi_instance`]). The C ABI's
/// launches, which learn how the kernel was built from its launch line, come here.
pub fn launch_starting_on(
    stream: &Stream,
    name: &str,
    block_dim: u32,
    start: Option<Instance>,
    body: impl Fn(&mut MultiDevice<'_>) -> KernelResult + Send + Sync + 'static,
) -> Result<()> {
    if block_dim == 0 {
        return Err(Error::InvalidValue(format!(
            "kernel {name}: a launch needs at least one block"
        )));
    }
    let s = stream.simulated(name)?;
    s.launch(
        Kernel::new(name, move |core| {
            if let Some(i) = &start {
                crate::fault::point("kernel.in_launch", i.my_pe(), i.id());
            }
            let mut dev = MultiDevice(Device {
                core,
                inst: start.clone(),
                mte: DEFAULT_MTE_UB,
            });
            body(&mut dev)
        }),
        block_dim,
    );
    Ok(())
}
