//! The device window of a heap that is device memory ([`SegmentSpec::device_memory`], CANN's
//! instances): the symmetric addresses of every PE's segment lie in an address range of their
//! own that host code cannot load from or store to (it faults, as device memory does on an NPU),
//! while the transport keeps working through its own mappings of the segments. With
//! `SHMEM_SIM_DEVICE_HOST_ACCESS=1` the window maps the segments readable and writable instead,
//! for debugging.
//!
//! When the ACL runtime stand-in (`libascendcl.so`) is loaded in the process, every PE's window
//! is registered with it as device memory reached through the transport's mapping
//! (`aclsimRegisterDeviceMemory`, its private interface), so that `aclrtMemcpy` to and from
//! symmetric addresses works as on an NPU; the registration ends with the window. The runtime is
//! found only if already loaded (`RTLD_NOLOAD`): the simulator never loads it itself.
//!
//! [`SegmentSpec::device_memory`]: shmem_backend::SegmentSpec::device_memory

use std::ffi::{c_int, c_void};
use std::os::fd::AsFd;
use std::ptr::NonNull;

use shmem_backend::{Pe, TransportError};

use crate::segment::{Geometry, Segments};

/// `aclsimRegisterDeviceMemory(devPtr, size, hostAlias)`.
type Register = unsafe extern "C" fn(*mut c_void, usize, *mut c_void) -> c_int;
/// `aclsimUnregisterDeviceMemory(devPtr)`.
type Unregister = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The private interface of the loaded ACL runtime stand-in.
struct Runtime {
    _lib: libloading::os::unix::Library,
    register: Register,
    unregister: Unregister,
}

impl Runtime {
    /// The stand-in, if it is loaded and has the interface.
    fn loaded() -> Option<Runtime> {
        let flags = libc::RTLD_NOLOAD | libc::RTLD_LAZY;
        // SAFETY: RTLD_NOLOAD loads nothing, so no initialiser runs; the handle only names a
        // library already loaded.
        let lib =
            unsafe { libloading::os::unix::Library::open(Some("libascendcl.so"), flags) }.ok()?;
        // SAFETY: in the stand-in these symbols have these types (`acl/acl_sim.h`).
        let (register, unregister) = unsafe {
            (
                *lib.get::<Register>(b"aclsimRegisterDeviceMemory\0").ok()?,
                *lib.get::<Unregister>(b"aclsimUnregisterDeviceMemory\0")
                    .ok()?,
            )
        };
        Some(Runtime {
            _lib: lib,
            register,
            unregister,
        })
    }
}

/// The window, and its registration with the runtime.
pub(crate) struct DeviceWindow {
    /// The device addresses registered with the runtime.
    registered: Vec<*mut c_void>,
    runtime: Option<Runtime>,
    /// Declared last: unmapped after the registrations end.
    segments: Segments,
}

// SAFETY: the raw pointers are addresses of the window, which the struct owns; the runtime's
// functions may be called from any thread.
unsafe impl Send for DeviceWindow {}
// SAFETY: as above; `&DeviceWindow` gives only the window's base address.
unsafe impl Sync for DeviceWindow {}

impl DeviceWindow {
    /// Reserves the window for `n_pes` segments, inaccessible to the host (or, with
    /// `host_access`, to be mapped with [`DeviceWindow::map`]).
    pub(crate) fn reserve(geometry: Geometry) -> Result<DeviceWindow, TransportError> {
        Ok(DeviceWindow {
            registered: Vec::new(),
            runtime: None,
            segments: Segments::reserve(geometry)?,
        })
    }

    /// Maps the instance's memory object over the window, readable and writable by the host
    /// (`SHMEM_SIM_DEVICE_HOST_ACCESS=1`).
    pub(crate) fn map(&self, fd: impl AsFd, instance: u64) -> Result<(), TransportError> {
        self.segments.map(fd, instance)
    }

    /// The start of `pe`'s window slot: its symmetric address.
    pub(crate) fn slot(&self, pe: Pe) -> NonNull<u8> {
        self.segments.slot(pe)
    }

    /// Registers every PE's `heap` bytes with the ACL runtime, if loaded, as device memory
    /// that the runtime reaches at `alias(pe)`.
    ///
    /// # Safety
    ///
    /// `alias(pe)..alias(pe) + heap` stays mapped, readable and writable as long as `self`.
    pub(crate) unsafe fn register(
        &mut self,
        n_pes: u32,
        heap: usize,
        alias: impl Fn(Pe) -> *mut u8,
    ) -> Result<(), TransportError> {
        let Some(rt) = Runtime::loaded() else {
            tracing::debug!("no ACL runtime loaded: the device heap is registered with nobody");
            return Ok(());
        };
        for pe in 0..n_pes {
            let dev = self.slot(pe).as_ptr().cast::<c_void>();
            // SAFETY: the stand-in's function; the alias stays mapped (this function's
            // contract) until `drop` unregisters it.
            let rc = unsafe { (rt.register)(dev, heap, alias(pe).cast()) };
            if rc != 0 {
                return Err(TransportError::Attach(format!(
                    "registering PE {pe}'s heap with the ACL runtime as device memory failed (error {rc})"
                )));
            }
            self.registered.push(dev);
        }
        self.runtime = Some(rt);
        Ok(())
    }
}

impl Drop for DeviceWindow {
    fn drop(&mut self) {
        if let Some(rt) = &self.runtime {
            for &dev in &self.registered {
                // SAFETY: registered by `register` and not yet unregistered.
                let _ = unsafe { (rt.unregister)(dev) };
            }
        }
    }
}
