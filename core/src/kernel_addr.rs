//! Where kernels reach memory. On an NPU a kernel dereferences device addresses directly; on
//! the simulator a heap of device memory (CANN's instances) lies at symmetric addresses that
//! host code cannot touch, and kernels reach the same segments through the transport's own
//! mappings ([`Instance::kernel_addr`]). A kernel launched from C is given its pointer
//! arguments translated to those mappings, and the device calls accept either form
//! ([`Instance::locate`]).

use shmem_backend::Pe;

use crate::instance::Instance;

impl Instance {
    /// The PE and segment offset of `addr`, which may be a symmetric address of any PE's copy
    /// of an object (what `aclshmem_ptr` computes) or the address at which kernels of this
    /// process reach it ([`Instance::kernel_addr`]); `None` for any other address.
    pub fn locate(&self, addr: *const u8) -> Option<(Pe, usize)> {
        let fabric = self.fabric();
        let a = addr as usize;
        let n = self.n_pes();
        let len = fabric.segment_size();
        let find = |base: &dyn Fn(Pe) -> Option<usize>| -> Option<(Pe, usize)> {
            let b0 = base(0)?;
            let off0 = a.checked_sub(b0)?;
            // The segments lie at a constant stride in both views: guess, then check.
            let stride = if n > 1 { base(1)?.checked_sub(b0)? } else { 0 };
            let pe = match stride {
                0 => 0,
                s => (off0 / s).min(n as usize - 1) as Pe,
            };
            let off = a.checked_sub(base(pe)?)?;
            (off < len).then_some((pe, off))
        };
        find(&|pe| Some(fabric.segment_base(pe) as usize))
            .or_else(|| find(&|pe| fabric.kernel_mapping(pe).map(|p| p.as_ptr() as usize)))
    }

    /// Where kernels running in this process load and store the object at `addr` (any PE's
    /// symmetric address, or already a kernel address), or `None` if `addr` is not in any
    /// PE's segment or kernels do not run in this process.
    ///
    /// ```no_run
    /// # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
    /// let buf = inst.calloc::<u32>(4)?;
    /// let k = inst.kernel_addr(buf.as_ptr().cast()).expect("the simulator runs kernels");
    /// assert_eq!(inst.locate(k), Some((inst.my_pe(), inst.offset_of(buf.as_ptr().cast(), 1).unwrap())));
    /// # Ok(()) }
    /// ```
    pub fn kernel_addr(&self, addr: *const u8) -> Option<*mut u8> {
        let (pe, off) = self.locate(addr)?;
        let base = self.fabric().kernel_mapping(pe)?;
        Some(base.as_ptr().wrapping_add(off))
    }

    /// The symmetric address of the object a kernel reaches at `addr` (the inverse of
    /// [`Instance::kernel_addr`]), with the PE whose copy it is.
    pub fn symmetric_addr(&self, addr: *const u8) -> Option<(Pe, *mut u8)> {
        let (pe, off) = self.locate(addr)?;
        Some((
            pe,
            (self.fabric().segment_base(pe) as usize + off) as *mut u8,
        ))
    }
}
