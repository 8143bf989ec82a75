//! Symmetric static data: memory of the program (a C program's `.data` and `.bss`) that an
//! instance makes symmetric at init, beside its heap, as OpenSHMEM requires of global and static
//! variables.
//!
//! The instance's segment gets a window after the heap and the teams' scratch areas; at init
//! the transport copies the range into the window and maps the window over the range
//! ([`Transport::alias_local`](shmem_backend::Transport::alias_local)), so the program's own
//! loads and stores and every PE's RMA and atomics reach the same bytes. Every PE runs the same
//! executable, so the range has the same length on all of them (the segments' sizes, which the
//! transport compares, would differ otherwise) and one offset names the same variable on each,
//! whatever address ASLR gave it.

use std::ptr::NonNull;

/// A page-aligned range of this process's memory to make symmetric at init
/// ([`Instance::init_with_static_data`](crate::Instance::init_with_static_data)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticRange {
    /// The first byte (page-aligned).
    pub addr: NonNull<u8>,
    /// Its length in bytes (a multiple of the page size).
    pub len: usize,
}

// SAFETY: a `StaticRange` is an address and a length; it gives no access by itself.
unsafe impl Send for StaticRange {}
// SAFETY: as above.
unsafe impl Sync for StaticRange {}

/// Where an instance keeps the program's static data: the range and its segment offset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    addr: usize,
    len: usize,
    offset: usize,
}

impl Window {
    /// The window of `range`, at segment offset `offset`.
    pub(crate) fn new(range: StaticRange, offset: usize) -> Window {
        Window {
            addr: range.addr.as_ptr() as usize,
            len: range.len,
            offset,
        }
    }

    /// The segment offset of the `len` bytes at `addr`, if they lie in the range.
    #[inline]
    pub(crate) fn offset_of(&self, addr: usize, len: usize) -> Option<usize> {
        let off = addr.checked_sub(self.addr)?;
        (off.checked_add(len)? <= self.len).then_some(self.offset + off)
    }

    /// Whether segment offsets `lo..hi` lie in the window.
    #[inline]
    pub(crate) fn holds(&self, lo: u64, hi: u64) -> bool {
        lo >= self.offset as u64 && hi <= (self.offset + self.len) as u64
    }
}
