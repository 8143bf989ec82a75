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
use shmem_backend::{Cmp, SignalOp};
use shmem_sim::{Core, Kernel, KernelError, KernelResult, UB_ALIGN, UB_SIZE};

use crate::error::{Error, Result};
use crate::fabric::Stream;
use crate::instance::Instance;

/// The default staging of the MTE engine: a 16 KiB UB buffer at offset 0 (CANN's
/// `g_state.mte_config`).
const DEFAULT_MTE_UB: (usize, usize) = (0, 16 * 1024);

/// One block's view of an instance inside a kernel.
#[derive(Debug)]
pub struct Device<'a> {
    core: &'a mut Core,
    inst: Instance,
    /// The MTE staging buffer: offset into the UB and size.
    mte: (usize, usize),
}

/// A failure of `call` as the block's.
fn fail(call: &str, e: impl std::fmt::Display) -> KernelError {
    KernelError::new(call, e.to_string())
}

impl Device<'_> {
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

    /// Waits for every block of the launch on this PE (`SyncAll`).
    pub fn sync_all(&self) -> KernelResult {
        self.core.sync_all()
    }

    /// This PE's number in the instance (`aclshmem_my_pe`).
    pub fn my_pe(&self) -> u32 {
        self.core.yield_point();
        self.inst.my_pe()
    }

    /// The PEs of the instance (`aclshmem_n_pes`).
    pub fn n_pes(&self) -> u32 {
        self.core.yield_point();
        self.inst.n_pes()
    }

    /// PE `pe`'s symmetric address of the object at `addr` (`aclshmem_ptr`), or `None`.
    pub fn ptr<T>(&self, addr: *const T, pe: u32) -> Option<*mut T> {
        self.core.yield_point();
        self.inst
            .peer_addr(addr.cast(), pe)
            .map(|p| p.as_ptr().cast())
    }

    /// Sets the MTE staging buffer: `ub_size` bytes at `offset` of the UB
    /// (`aclshmemx_set_mte_config` on the device). Both 32-byte aligned, inside the UB, and not
    /// empty.
    pub fn set_mte_config(&mut self, offset: usize, ub_size: usize) -> KernelResult {
        let call = "aclshmemx_set_mte_config";
        if ub_size == 0 || !offset.is_multiple_of(UB_ALIGN) || !ub_size.is_multiple_of(UB_ALIGN) {
            return Err(fail(
                call,
                format!(
                    "offset {offset} and ub_size {ub_size} must be 32-byte aligned, ub_size not 0"
                ),
            ));
        }
        if offset.checked_add(ub_size).is_none_or(|end| end > UB_SIZE) {
            return Err(fail(
                call,
                format!("{ub_size} bytes at offset {offset} do not fit in the {UB_SIZE}-byte UB"),
            ));
        }
        self.mte = (offset, ub_size);
        Ok(())
    }

    /// Copies `len` bytes from this PE's symmetric `src` to PE `pe`'s copy of symmetric `dst`,
    /// through the UB in chunks of the MTE buffer's size (`aclshmem_putmem`: blocking, complete
    /// on return).
    pub fn putmem(&mut self, dst: *mut u8, src: *const u8, len: usize, pe: u32) -> KernelResult {
        self.stage("aclshmem_putmem", src, self.inst.my_pe(), dst, pe, len)
    }

    /// Copies `len` bytes from PE `pe`'s copy of symmetric `src` to this PE's symmetric `dst`,
    /// through the UB (`aclshmem_getmem`).
    pub fn getmem(&mut self, dst: *mut u8, src: *const u8, len: usize, pe: u32) -> KernelResult {
        self.stage("aclshmem_getmem", src, pe, dst, self.inst.my_pe(), len)
    }

    /// The MTE path: GM (`from` on `from_pe`) → UB → GM (`to` on `to_pe`), chunk by chunk.
    fn stage(
        &mut self,
        call: &str,
        from: *const u8,
        from_pe: u32,
        to: *mut u8,
        to_pe: u32,
        len: usize,
    ) -> KernelResult {
        let ctx = self.inst.default_ctx();
        let src = ctx.view_at(from, len).map_err(|e| fail(call, e))?;
        let dst = ctx
            .view_at(to.cast_const(), len)
            .map_err(|e| fail(call, e))?;
        let (offset, chunk) = self.mte;
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
        let e = self.inst.default_ctx().view_at(dst.cast_const(), 1);
        e.and_then(|v| v.p(0, value, pe)).map_err(|e| fail(call, e))
    }

    /// Loads PE `pe`'s copy of the element at symmetric `src` (`aclshmem_<T>_g`).
    pub fn g<T: Pod>(&self, src: *const T, pe: u32) -> Result<T, KernelError> {
        self.core.yield_point();
        let v = self.inst.default_ctx().view_at(src, 1);
        v.and_then(|v| v.g(0, pe))
            .map_err(|e| fail("aclshmem_g", e))
    }

    /// Updates PE `pe`'s `i32` signal word at symmetric `sig` with `op` and `value`
    /// (`aclshmemx_signal_op`; ADD is atomic, SET a plain store, as on CANN).
    pub fn signal_op(&self, sig: *mut i32, value: i32, op: SignalOp, pe: u32) -> KernelResult {
        self.core.yield_point();
        let e = self.inst.default_ctx().elem_at(sig.cast_const());
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
        let e = self.inst.default_ctx().elem_at(sig);
        e.and_then(|e| e.signal_wait_until(cmp, value))
            .map_err(|e| fail("aclshmem_signal_wait_until", e))
    }

    /// Completes this block's puts (`aclshmem_quiet`).
    pub fn quiet(&self) -> KernelResult {
        self.core.yield_point();
        self.inst.quiet().map_err(|e| fail("aclshmem_quiet", e))
    }

    /// The same as [`Device::quiet`], as on CANN (`aclshmem_fence`).
    pub fn fence(&self) -> KernelResult {
        self.core.yield_point();
        self.inst.quiet().map_err(|e| fail("aclshmem_fence", e))
    }

    /// Waits until every block of every PE of the instance has arrived, with every put issued
    /// before complete (`aclshmem_barrier_all`). The blocks of this PE meet, one of them meets
    /// the other PEs, and the blocks meet again. Refused in a launch that runs in waves.
    pub fn barrier_all(&self) -> KernelResult {
        self.core
            .sync_all()
            .map_err(|e| fail("aclshmem_barrier_all", e.detail))?;
        if self.core.block_idx() == 0 {
            self.inst
                .barrier_all()
                .map_err(|e| fail("aclshmem_barrier_all", e))?;
        }
        self.core
            .sync_all()
            .map_err(|e| fail("aclshmem_barrier_all", e.detail))
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
        let Stream::Sim(s) = stream;
        let inst = self.clone();
        s.launch(
            Kernel::new(name, move |core| {
                let mut dev = Device {
                    core,
                    inst: inst.clone(),
                    mte: DEFAULT_MTE_UB,
                };
                body(&mut dev)
            }),
            block_dim,
        );
        Ok(())
    }
}
