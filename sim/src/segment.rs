//! The shared-memory segments of one instance, as mapped in this process.
//!
//! The segments of all PEs of an instance are one anonymous `memfd` (no name in `/dev/shm`, so
//! nothing survives any exit, SIGKILL included): first a table of the PEs' control blocks, one
//! cache line each, then PE `i`'s segment at `controls + i * stride`. It is sized
//! sparsely with `ftruncate`, so pages cost memory only once touched, and sealed against resizing
//! so no PE can make another fault. Every PE maps the whole object with one mapping into a
//! contiguous reservation, the way CANN lays out its global virtual address space; this makes
//! peer translation one addition, and start-up one mapping per PE however many PEs there are.
//! A segment is its `heap` bytes of addressable memory. The control blocks are packed together
//! so that a PE that writes to many peers (each write checks the target's block for sleepers)
//! touches one page-table page for all their blocks, not one per peer.

use std::ffi::c_void;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};
use shmem_backend::{Pe, TransportError};

use crate::control::CONTROL_SIZE;

/// The alignment of each PE's slot in the reservation.
const SLOT_ALIGN: usize = 2 << 20;

pub(crate) fn align_up(v: usize, a: usize) -> Option<usize> {
    v.checked_add(a - 1).map(|x| x & !(a - 1))
}

/// The sizes that every PE of an instance must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Addressable bytes of each segment.
    pub heap: usize,
    /// Distance between two PEs' slots in the reservation.
    pub stride: usize,
    /// The PEs.
    pub n_pes: u32,
    /// Bytes before slot 0: the control blocks, padded to a slot's alignment.
    pub controls: usize,
    /// Bytes of the memory object, and of the reservation.
    pub total: usize,
}

impl Geometry {
    pub(crate) fn new(heap: usize, n_pes: u32) -> Result<Geometry, TransportError> {
        let too_big = || {
            TransportError::Attach(format!(
                "{n_pes} segments of {heap} bytes do not fit in the address space"
            ))
        };
        let stride = align_up(heap, SLOT_ALIGN).ok_or_else(too_big)?;
        let controls = (n_pes as usize)
            .checked_mul(CONTROL_SIZE)
            .and_then(|c| align_up(c, SLOT_ALIGN))
            .ok_or_else(too_big)?;
        let total = stride
            .checked_mul(n_pes as usize)
            .and_then(|s| s.checked_add(controls))
            .ok_or_else(too_big)?;
        Ok(Geometry {
            heap,
            stride,
            n_pes,
            controls,
            total,
        })
    }

    /// Where `pe`'s segment starts in the memory object.
    pub(crate) fn segment_offset(&self, pe: Pe) -> usize {
        self.controls + pe as usize * self.stride
    }
}

/// Creates the instance's memory object: sealed, sparse, `geometry.total` bytes.
pub(crate) fn create_object(label: &str, geometry: &Geometry) -> Result<OwnedFd, TransportError> {
    let len = geometry.total;
    let name = format!("shmem-sim-{label}");
    let fd = rustix::fs::memfd_create(
        name.as_str(),
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(|e| TransportError::os("memfd_create for the symmetric segments", e))?;
    rustix::fs::ftruncate(&fd, len as u64).map_err(|e| {
        TransportError::os(format!("sizing the symmetric segments to {len} bytes"), e)
    })?;
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
        .map_err(|e| TransportError::os("sealing the symmetric segments", e))?;
    Ok(fd)
}

/// The reservation holding every PE's segment, with the segments mapped into it.
#[derive(Debug)]
pub(crate) struct Segments {
    base: NonNull<u8>,
    geometry: Geometry,
}

// SAFETY: `Segments` owns a memory mapping; the raw base pointer is only an address. All accesses
// through it are made by the transport with atomics or byte copies that tolerate concurrent
// writers (the memory is shared with other processes by design).
unsafe impl Send for Segments {}
// SAFETY: as above; `&Segments` gives no access that needs exclusive ownership.
unsafe impl Sync for Segments {}

impl Segments {
    /// Reserves address space for the control blocks and `geometry.n_pes` slots (without
    /// committing memory).
    pub(crate) fn reserve(geometry: Geometry) -> Result<Segments, TransportError> {
        let (len, n_pes) = (geometry.total, geometry.n_pes);
        // SAFETY: a new private anonymous mapping with a null hint never aliases existing memory.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::empty(),
                MapFlags::PRIVATE | MapFlags::NORESERVE,
            )
        }
        .map_err(|e| {
            TransportError::os(
                format!("reserving {len} bytes of address space for {n_pes} segments"),
                e,
            )
        })?;
        let base =
            NonNull::new(base.cast::<u8>()).expect("mmap never returns a null mapping on success");
        Ok(Segments { base, geometry })
    }

    /// Maps `fd`, the memory object of `geometry.total` bytes of instance `instance`, over the
    /// whole reservation (where a page the system cannot supply is reported, see
    /// [`crate::sigbus`]).
    pub(crate) fn map(&self, fd: impl AsFd, instance: u64) -> Result<(), TransportError> {
        let size = rustix::fs::fstat(&fd)
            .map_err(|e| TransportError::os("inspecting the symmetric segments", e))?
            .st_size;
        let g = &self.geometry;
        if size as u64 != g.total as u64 {
            return Err(TransportError::Attach(format!(
                "the instance's memory object has {size} bytes, this PE expects {} for {} PEs: the PEs disagree about local_mem_size",
                g.total, g.n_pes
            )));
        }
        // SAFETY: the mapping replaces exactly our own reservation, which no Rust object
        // references, so MAP_FIXED replaces only address space this struct owns.
        unsafe {
            rustix::mm::mmap(
                self.base.as_ptr().cast::<c_void>(),
                g.total,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::FIXED,
                fd,
                0,
            )
        }
        .map_err(|e| TransportError::os("mapping the symmetric segments", e))?;
        crate::sigbus::register(self.base.as_ptr() as usize, g, instance);
        Ok(())
    }

    /// The start of `pe`'s slot.
    pub(crate) fn slot(&self, pe: Pe) -> NonNull<u8> {
        debug_assert!(pe < self.geometry.n_pes);
        // SAFETY: the offset stays inside the reservation.
        unsafe { self.base.add(self.geometry.segment_offset(pe)) }
    }

    /// The start of the control blocks.
    pub(crate) fn controls(&self) -> NonNull<u8> {
        self.base
    }
}

impl Drop for Segments {
    fn drop(&mut self) {
        let (base, len) = (self.base.as_ptr().cast(), self.geometry.total);
        crate::sigbus::unregister(base as usize);
        // SAFETY: the reservation was created by `reserve` with this length; nothing borrows it
        // past the lifetime of `self`.
        if let Err(e) = unsafe { rustix::mm::munmap(base, len) } {
            tracing::warn!("unmapping the symmetric segments failed: {e}");
        }
    }
}

/// The system's page size. (From `sysconf`, not the auxiliary vector, which tools such as
/// valgrind present in a form some parsers reject.)
pub fn page_size() -> usize {
    // SAFETY: `sysconf` reads a system constant; it has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&p| p > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_rounds_to_slots_and_packs_the_control_blocks() {
        let g = Geometry::new(10 << 20, 3).unwrap();
        assert_eq!(g.stride, 10 << 20);
        assert_eq!(g.controls, 2 << 20);
        assert_eq!(g.segment_offset(2), (2 << 20) + (20 << 20));
        assert_eq!(g.total, (2 << 20) + (30 << 20));
        let g = Geometry::new(1, 40_000).unwrap();
        assert_eq!(g.stride, 2 << 20);
        assert_eq!(g.controls, 4 << 20);
        assert!(Geometry::new(usize::MAX / 2, 4).is_err());
    }

    #[test]
    fn maps_the_object_and_rejects_a_wrong_size() {
        let g = Geometry::new(1 << 20, 2).unwrap();
        let segs = Segments::reserve(g).unwrap();
        let obj = create_object("test", &g).unwrap();
        segs.map(&obj, 0).unwrap();
        let again = Segments::reserve(g).unwrap();
        again.map(&obj, 0).unwrap();
        // SAFETY: both reservations map the same object; the test owns it exclusively.
        unsafe {
            segs.slot(1).as_ptr().write(7);
            assert_eq!(again.slot(1).as_ptr().read(), 7);
            assert_eq!(again.slot(0).as_ptr().read(), 0);
        }
        let other = create_object("other", &Geometry::new(1 << 20, 3).unwrap()).unwrap();
        assert!(matches!(
            segs.map(&other, 0),
            Err(TransportError::Attach(_))
        ));
    }
}
