//! The symmetric heap of one instance: CANN's reserved area ([`layout`]) and the best-fit
//! allocator ([`allocator`]) that places every block at the same offset on every PE.
//!
//! This module is local bookkeeping; the instance makes allocation collective.

pub(crate) mod allocator;
mod collective;
pub(crate) mod poison;

pub(crate) use collective::HeapCall;
pub(crate) mod layout;

use std::sync::Mutex;

use allocator::{AllocError, Allocator};
use layout::{Reserved, SIGNAL_AREA, SYNC_COUNTERS, SYNC_POOL};

/// The allocator of one heap, with the reserved blocks already placed.
#[derive(Debug)]
pub(crate) struct Heap {
    size: u64,
    reserved: Reserved,
    alloc: Mutex<Allocator>,
}

impl Heap {
    /// A heap of `size` bytes (`local_mem_size` + 6 MiB) with CANN's reserved blocks.
    pub(crate) fn new(size: u64) -> Result<Heap, AllocError> {
        let mut alloc = Allocator::new(size);
        let signal = alloc.allocate(SIGNAL_AREA)?;
        let sync_pool = alloc.allocate(SYNC_POOL)?;
        let sync_counters = alloc.allocate(SYNC_COUNTERS)?;
        Ok(Heap {
            size,
            reserved: Reserved {
                signal,
                sync_pool,
                sync_counters,
            },
            alloc: Mutex::new(alloc),
        })
    }

    /// The heap size in bytes.
    #[inline]
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The offsets users' blocks are allocated from (after the reserved blocks).
    pub(crate) fn user_space(&self) -> std::ops::Range<u64> {
        layout::FIRST_USER_OFFSET.min(self.size)..self.size
    }

    /// The reserved blocks.
    pub(crate) fn reserved(&self) -> &Reserved {
        &self.reserved
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Allocator> {
        self.alloc.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates `n` bytes, aligned to `align` if given.
    pub(crate) fn allocate(&self, n: u64, align: Option<u64>) -> Result<u64, AllocError> {
        let mut a = self.lock();
        match align {
            None => a.allocate(n),
            Some(al) => a.allocate_aligned(al, n),
        }
    }

    /// Releases the block starting at `off`; returns its size. The reserved blocks are the
    /// library's for the instance's life: `off` there is not an allocated block.
    pub(crate) fn release(&self, off: u64) -> Result<u64, AllocError> {
        if off < layout::FIRST_USER_OFFSET {
            return Err(AllocError::NotAllocated { offset: off });
        }
        self.lock().release(off)
    }

    /// The size of the program's used block starting at `off` (`None` for a reserved block).
    pub(crate) fn block_size(&self, off: u64) -> Option<u64> {
        if off < layout::FIRST_USER_OFFSET {
            return None;
        }
        self.lock().block_size(off)
    }

    /// Bytes free for allocation, and the largest free block.
    pub(crate) fn free(&self) -> (u64, u64) {
        let a = self.lock();
        (a.free_bytes(), a.largest_free())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_blocks_sit_where_cann_puts_them() {
        let h = Heap::new((2 << 20) + (6 << 20)).unwrap();
        assert_eq!(h.reserved().signal, 0);
        assert_eq!(h.reserved().sync_pool, 0x200);
        assert_eq!(h.reserved().sync_counters, 0x500200);
        assert_eq!(h.allocate(1, None).unwrap(), layout::FIRST_USER_OFFSET);
        assert_eq!(h.reserved().team_slot(1), 0x200 + 2560);
    }

    #[test]
    fn the_reserved_blocks_cannot_be_freed_or_resized() {
        let h = Heap::new((2 << 20) + (6 << 20)).unwrap();
        for off in [
            h.reserved().signal,
            h.reserved().sync_pool,
            h.reserved().sync_counters,
        ] {
            assert_eq!(
                h.release(off),
                Err(AllocError::NotAllocated { offset: off })
            );
            assert_eq!(h.block_size(off), None);
        }
        // They are still in place: the first block of the program comes after them.
        assert_eq!(h.allocate(1, None).unwrap(), layout::FIRST_USER_OFFSET);
    }
}
