//! The best-fit allocator of the symmetric heap.
//!
//! The allocator hands out *offsets* inside a heap of `size` bytes; it never
//! touches memory. It reproduces the placement rules of CANN's
//! `memory_manager` (`src/host/mem/shmem_mgr.cpp`) exactly, because CANN's tests
//! depend on where blocks land:
//!
//! - every request is rounded up to a multiple of [`GRANULE`] (16 bytes);
//! - [`Allocator::allocate`] takes the front of the *smallest* free block that is
//!   large enough, the one with the lowest offset among equal sizes (best fit);
//! - [`Allocator::allocate_aligned`] scans the free blocks in `(size, offset)`
//!   order, starting at the smallest one that is large enough, and takes the
//!   first one that can hold the request at an aligned offset; what is left on
//!   either side stays free;
//! - [`Allocator::release`] accepts only the start of a used block and merges
//!   the freed block with its free neighbours, so free blocks are never
//!   adjacent.
//!
//! The allocator is local. The heap layer makes malloc and free collective and
//! adds the heap base to the offsets (the base is at least 2 MiB aligned, so
//! alignment relative to offset 0 is alignment of the address).
//!
//! Cost: O(log n) per operation in the number of blocks, except the aligned
//! scan, which may visit every free block that is large enough.

use std::collections::{BTreeMap, BTreeSet};

/// Every allocation size is rounded up to a multiple of this many bytes, so
/// every offset handed out is a multiple of it as well.
pub(crate) const GRANULE: u64 = 16;

/// Why an allocation or a release was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AllocError {
    /// A request for zero bytes.
    #[error("cannot allocate zero bytes from the symmetric heap")]
    Zero,
    /// A request larger than the whole heap.
    #[error("requested {requested} bytes, more than the whole symmetric heap of {heap} bytes")]
    TooLarge {
        /// The size asked for, in bytes.
        requested: u64,
        /// The size of the whole heap, in bytes.
        heap: u64,
    },
    /// An alignment that is zero or not a power of two.
    #[error("alignment {align} is not a non-zero power of two")]
    NotPowerOfTwo {
        /// The alignment asked for.
        align: u64,
    },
    /// No free block can hold the request (at the requested alignment).
    #[error(
        "out of symmetric heap memory: no free block can hold {requested} bytes \
         (rounded up to a multiple of 16, and aligned if requested); \
         the largest free block is {largest_free} bytes"
    )]
    OutOfMemory {
        /// The size asked for, in bytes (before rounding).
        requested: u64,
        /// The size of the largest free block at the time of the request.
        largest_free: u64,
    },
    /// A release of an offset that is not the start of a used block (a double
    /// free, an interior pointer, or an offset never handed out).
    #[error("offset {offset:#x} is not the start of an allocated block of the symmetric heap")]
    NotAllocated {
        /// The offset passed to the release.
        offset: u64,
    },
}

/// A best-fit allocator over the offsets `[0, size)` of a heap.
///
/// Each byte of the heap is in exactly one block, either free or used. Free
/// blocks are kept fully coalesced: no two of them are adjacent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Allocator {
    /// Size of the heap in bytes.
    size: u64,
    /// Free blocks: offset → size.
    free_by_offset: BTreeMap<u64, u64>,
    /// The same free blocks as `(size, offset)`, for best-fit lookup.
    free_by_size: BTreeSet<(u64, u64)>,
    /// Used blocks: offset → size (the rounded size).
    used: BTreeMap<u64, u64>,
    /// Sum of the sizes of the used blocks.
    used_bytes: u64,
}

/// `n` rounded up to a multiple of [`GRANULE`], or `None` on overflow.
fn round_up(n: u64) -> Option<u64> {
    n.checked_add(GRANULE - 1).map(|v| v & !(GRANULE - 1))
}

/// `off` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
fn align_up(off: u64, align: u64) -> Option<u64> {
    off.checked_add(align - 1).map(|v| v & !(align - 1))
}

impl Allocator {
    /// An allocator over a heap of `size` bytes: one free block `[0, size)`
    /// (no block at all when `size` is zero).
    pub(crate) fn new(size: u64) -> Self {
        let mut allocator = Self {
            size,
            free_by_offset: BTreeMap::new(),
            free_by_size: BTreeSet::new(),
            used: BTreeMap::new(),
            used_bytes: 0,
        };
        if size > 0 {
            allocator.insert_free(0, size);
        }
        allocator
    }

    /// Allocates `n` bytes (rounded up to a multiple of 16) from the front of
    /// the smallest free block that can hold them, the lowest-offset one among
    /// equal sizes, and returns the offset of the new block.
    ///
    /// Fails with [`AllocError::Zero`] for `n == 0`, [`AllocError::TooLarge`]
    /// for `n` larger than the heap and [`AllocError::OutOfMemory`] when no
    /// free block is large enough. The state is unchanged on failure.
    pub(crate) fn allocate(&mut self, n: u64) -> Result<u64, AllocError> {
        let rounded = self.check_request(n)?;
        let Some(&(block_size, off)) = self.free_by_size.range((rounded, 0)..).next() else {
            return Err(self.out_of_memory(n));
        };
        self.remove_free(off, block_size);
        self.insert_used(off, rounded);
        if block_size > rounded {
            self.insert_free(off + rounded, block_size - rounded);
        }
        Ok(off)
    }

    /// Allocates `n` bytes (rounded up to a multiple of 16) at an offset that
    /// is a multiple of `align`, and returns that offset.
    ///
    /// The free blocks are scanned in `(size, offset)` order, starting at the
    /// smallest one that can hold the rounded size, and the first one that can
    /// hold it at an aligned offset is used; the parts of that block before and
    /// after the new block stay free.
    ///
    /// Fails with [`AllocError::NotPowerOfTwo`] when `align` is zero or not a
    /// power of two, and otherwise as [`Allocator::allocate`]. The state is
    /// unchanged on failure.
    pub(crate) fn allocate_aligned(&mut self, align: u64, n: u64) -> Result<u64, AllocError> {
        if !align.is_power_of_two() {
            return Err(AllocError::NotPowerOfTwo { align });
        }
        let rounded = self.check_request(n)?;
        let found = self
            .free_by_size
            .range((rounded, 0)..)
            .find_map(|&(block_size, off)| {
                let head = align_up(off, align)? - off;
                (head.checked_add(rounded)? <= block_size).then_some((off, block_size, head))
            });
        let Some((off, block_size, head)) = found else {
            return Err(self.out_of_memory(n));
        };
        self.remove_free(off, block_size);
        if head > 0 {
            self.insert_free(off, head);
        }
        let start = off + head;
        self.insert_used(start, rounded);
        let tail = block_size - head - rounded;
        if tail > 0 {
            self.insert_free(start + rounded, tail);
        }
        Ok(start)
    }

    /// Releases the used block that starts at `off`, merges it with the free
    /// blocks directly before and after it, and returns its size (the rounded
    /// size that was allocated).
    ///
    /// Fails with [`AllocError::NotAllocated`], leaving the state unchanged,
    /// when `off` is not the start of a used block (a double free, an interior
    /// offset, or an offset never handed out).
    pub(crate) fn release(&mut self, off: u64) -> Result<u64, AllocError> {
        let Some(size) = self.used.remove(&off) else {
            return Err(AllocError::NotAllocated { offset: off });
        };
        self.used_bytes -= size;

        let mut start = off;
        let mut len = size;
        if let Some((&prev_off, &prev_size)) = self.free_by_offset.range(..off).next_back()
            && prev_off + prev_size == off
        {
            self.remove_free(prev_off, prev_size);
            start = prev_off;
            len += prev_size;
        }
        let next_off = off + size;
        if let Some(&next_size) = self.free_by_offset.get(&next_off) {
            self.remove_free(next_off, next_size);
            len += next_size;
        }
        self.insert_free(start, len);
        Ok(size)
    }

    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "queries for tests and for realloc")
    )]
    /// Size of the heap in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "queries for tests and for realloc")
    )]
    /// Bytes in used blocks (sizes as rounded at allocation).
    pub(crate) fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Bytes in free blocks; always `size() - used_bytes()`.
    pub(crate) fn free_bytes(&self) -> u64 {
        self.size - self.used_bytes
    }

    /// Size of the largest free block (0 when nothing is free). A plain
    /// [`Allocator::allocate`] of at most this many bytes (after rounding) succeeds.
    pub(crate) fn largest_free(&self) -> u64 {
        self.free_by_size.last().map_or(0, |&(size, _)| size)
    }

    /// Size of the used block that starts at `off`, or `None` when no used
    /// block starts there.
    pub(crate) fn block_size(&self, off: u64) -> Option<u64> {
        self.used.get(&off).copied()
    }

    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "queries for tests and for realloc")
    )]
    /// Number of used blocks.
    pub(crate) fn used_count(&self) -> usize {
        self.used.len()
    }

    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "queries for tests and for realloc")
    )]
    /// The free blocks as `(offset, size)`, by increasing offset.
    pub(crate) fn free_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.free_by_offset.iter().map(|(&off, &size)| (off, size))
    }

    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "queries for tests and for realloc")
    )]
    /// The used blocks as `(offset, size)`, by increasing offset.
    pub(crate) fn used_blocks(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.used.iter().map(|(&off, &size)| (off, size))
    }

    /// Validates a request size and returns it rounded up to the granule.
    fn check_request(&self, n: u64) -> Result<u64, AllocError> {
        if n == 0 {
            return Err(AllocError::Zero);
        }
        if n > self.size {
            return Err(AllocError::TooLarge {
                requested: n,
                heap: self.size,
            });
        }
        // Only a heap within 15 bytes of u64::MAX can overflow here, and no
        // block can hold such a request anyway.
        round_up(n).ok_or_else(|| self.out_of_memory(n))
    }

    /// The out-of-memory error for a request of `n` bytes.
    fn out_of_memory(&self, n: u64) -> AllocError {
        AllocError::OutOfMemory {
            requested: n,
            largest_free: self.largest_free(),
        }
    }

    /// Records a free block in both free indexes.
    fn insert_free(&mut self, off: u64, size: u64) {
        self.free_by_offset.insert(off, size);
        self.free_by_size.insert((size, off));
    }

    /// Removes a free block from both free indexes.
    fn remove_free(&mut self, off: u64, size: u64) {
        self.free_by_offset.remove(&off);
        self.free_by_size.remove(&(size, off));
    }

    /// Records a used block.
    fn insert_used(&mut self, off: u64, size: u64) {
        self.used.insert(off, size);
        self.used_bytes += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    /// CANN's `ACLSHMEM_EXTRA_SIZE`.
    const EXTRA: u64 = 6 * MIB;
    /// Where the first user allocation lands after CANN's internal blocks.
    const FIRST_USER: u64 = 0x52_0200;

    /// A list of blocks as `(offset, size)`.
    type Blocks = Vec<(u64, u64)>;

    /// Full snapshot of the blocks (free, used), for "state unchanged" comparisons.
    fn snapshot(a: &Allocator) -> (Blocks, Blocks) {
        (a.free_blocks().collect(), a.used_blocks().collect())
    }

    /// Checks every structural invariant of the allocator.
    fn check_invariants(a: &Allocator) {
        // The two free indexes agree.
        let by_size: BTreeSet<(u64, u64)> = a.free_blocks().map(|(o, s)| (s, o)).collect();
        assert_eq!(by_size, a.free_by_size, "free indexes disagree");
        // Free and used blocks tile [0, size) exactly, without overlap.
        let mut all: Vec<(u64, u64, bool)> = a
            .free_blocks()
            .map(|(o, s)| (o, s, true))
            .chain(a.used_blocks().map(|(o, s)| (o, s, false)))
            .collect();
        all.sort_unstable();
        let mut cursor = 0;
        let mut prev_free = false;
        for &(off, size, free) in &all {
            assert!(size > 0, "empty block at {off:#x}");
            assert_eq!(off, cursor, "gap or overlap at {off:#x}");
            assert_eq!(off % GRANULE, 0, "block at {off:#x} not 16-aligned");
            assert!(!(free && prev_free), "adjacent free blocks at {off:#x}");
            if !free {
                assert_eq!(size % GRANULE, 0, "used block size {size} not rounded");
            }
            cursor = off + size;
            prev_free = free;
        }
        assert_eq!(cursor, a.size(), "blocks do not end at the heap end");
        let used: u64 = a.used_blocks().map(|(_, s)| s).sum();
        let free: u64 = a.free_blocks().map(|(_, s)| s).sum();
        assert_eq!(used, a.used_bytes());
        assert_eq!(free, a.free_bytes());
        assert_eq!(used + free, a.size());
        assert_eq!(a.used_count(), a.used_blocks().count());
        assert_eq!(
            a.largest_free(),
            a.free_blocks().map(|(_, s)| s).max().unwrap_or(0)
        );
    }

    /// A heap of CANN's size for `local` bytes, with the three internal blocks
    /// of init allocated (signal area, sync pool, sync counters).
    fn cann_heap(local: u64) -> Allocator {
        let mut a = Allocator::new(local + EXTRA);
        assert_eq!(a.allocate(512), Ok(0));
        assert_eq!(a.allocate(5 * MIB), Ok(0x200));
        assert_eq!(a.allocate(128 * KIB), Ok(0x50_0200));
        a
    }

    #[test]
    fn cann_layout_at_init() {
        let mut a = cann_heap(4 * MIB);
        assert_eq!(a.size(), 10 * MIB);
        assert_eq!(a.used_bytes(), FIRST_USER);
        assert_eq!(a.allocate(1), Ok(FIRST_USER));
        check_invariants(&a);
    }

    #[test]
    fn cann_free_merge() {
        // CANN's free_merge with local_mem_size = 4 MiB: four 1 MiB blocks, free
        // the 2nd and 4th, 2 MiB does not fit; free the 3rd, 3 MiB fits only
        // because the 2nd, 3rd, 4th and the tail coalesced.
        let mut a = cann_heap(4 * MIB);
        let p: Vec<u64> = (0..4).map(|_| a.allocate(MIB).unwrap()).collect();
        assert_eq!(
            p,
            [
                FIRST_USER,
                FIRST_USER + MIB,
                FIRST_USER + 2 * MIB,
                FIRST_USER + 3 * MIB
            ]
        );
        let tail = 10 * MIB - (FIRST_USER + 4 * MIB);
        assert_eq!(
            a.free_blocks().collect::<Vec<_>>(),
            [(FIRST_USER + 4 * MIB, tail)]
        );

        assert_eq!(a.release(p[1]), Ok(MIB));
        assert_eq!(a.release(p[3]), Ok(MIB));
        // p[3] merged with the tail: 1 MiB + 0.875 MiB.
        assert_eq!(
            a.free_blocks().collect::<Vec<_>>(),
            [(p[1], MIB), (p[3], MIB + tail)]
        );
        let before = snapshot(&a);
        assert_eq!(
            a.allocate(2 * MIB),
            Err(AllocError::OutOfMemory {
                requested: 2 * MIB,
                largest_free: MIB + tail
            })
        );
        assert_eq!(snapshot(&a), before);

        assert_eq!(a.release(p[2]), Ok(MIB));
        // Merged both ways: p[1] .. end of heap is one block.
        assert_eq!(
            a.free_blocks().collect::<Vec<_>>(),
            [(p[1], 3 * MIB + tail)]
        );
        assert_eq!(a.allocate(3 * MIB), Ok(p[1]));
        check_invariants(&a);
    }

    #[test]
    fn cann_remaining_space_is_exact() {
        let remaining = 10 * MIB - FIRST_USER;
        let mut a = cann_heap(4 * MIB);
        assert_eq!(a.free_bytes(), remaining);
        assert_eq!(a.largest_free(), remaining);
        // CANN's allocate_full_space_success: local_mem_size bytes fit.
        let mut b = a.clone();
        assert_eq!(b.allocate(4 * MIB), Ok(FIRST_USER));

        let before = snapshot(&a);
        for n in [remaining + 1, remaining + GRANULE] {
            assert_eq!(
                a.allocate(n),
                Err(AllocError::OutOfMemory {
                    requested: n,
                    largest_free: remaining
                })
            );
        }
        assert_eq!(snapshot(&a), before);
        assert_eq!(a.allocate(remaining), Ok(FIRST_USER));
        assert_eq!(a.free_bytes(), 0);
        assert_eq!(a.largest_free(), 0);
        assert!(matches!(a.allocate(1), Err(AllocError::OutOfMemory { .. })));
        check_invariants(&a);
    }

    #[test]
    fn zero_is_rejected() {
        let mut a = Allocator::new(MIB);
        assert_eq!(a.allocate(0), Err(AllocError::Zero));
        assert_eq!(a.allocate_aligned(16, 0), Err(AllocError::Zero));
        assert_eq!(snapshot(&a), snapshot(&Allocator::new(MIB)));
    }

    #[test]
    fn too_large_is_rejected() {
        let heap = 10 * MIB;
        let mut a = Allocator::new(heap);
        let err = AllocError::TooLarge {
            requested: heap + 1,
            heap,
        };
        assert_eq!(a.allocate(heap + 1), Err(err.clone()));
        assert_eq!(a.allocate_aligned(16, heap + 1), Err(err));
        assert_eq!(
            a.allocate(u64::MAX),
            Err(AllocError::TooLarge {
                requested: u64::MAX,
                heap
            })
        );
        // Exactly the heap fits an empty heap.
        assert_eq!(a.allocate(heap), Ok(0));
        assert_eq!(a.free_blocks().count(), 0);
        check_invariants(&a);
    }

    #[test]
    fn rounding_to_granule_of_a_heap_not_multiple_of_16() {
        // n <= size, but the rounded size does not fit: out of memory, not too large.
        let mut a = Allocator::new(40);
        assert_eq!(
            a.allocate(40),
            Err(AllocError::OutOfMemory {
                requested: 40,
                largest_free: 40
            })
        );
        assert_eq!(a.allocate(17), Ok(0));
        assert_eq!(a.block_size(0), Some(32));
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), [(32, 8)]);
        check_invariants(&a);
    }

    #[test]
    fn empty_heap() {
        let mut a = Allocator::new(0);
        assert_eq!(a.free_blocks().count(), 0);
        assert_eq!(a.largest_free(), 0);
        assert_eq!(
            a.allocate(1),
            Err(AllocError::TooLarge {
                requested: 1,
                heap: 0
            })
        );
        assert_eq!(a.release(0), Err(AllocError::NotAllocated { offset: 0 }));
        check_invariants(&a);
    }

    #[test]
    fn non_power_of_two_alignment_is_rejected() {
        let mut a = Allocator::new(MIB);
        let before = snapshot(&a);
        for align in [0, 3, 17, 48, 1000, u64::MAX] {
            assert_eq!(
                a.allocate_aligned(align, 128),
                Err(AllocError::NotPowerOfTwo { align })
            );
        }
        assert_eq!(snapshot(&a), before);
    }

    #[test]
    fn alignment_is_honoured() {
        let mut a = Allocator::new(16 * MIB);
        assert_eq!(a.allocate(48), Ok(0));
        for align in [1, 2, 16, 64, 4096, MIB, 2 * MIB] {
            let off = a.allocate_aligned(align, 100).unwrap();
            assert_eq!(off % align, 0, "align {align}");
            assert_eq!(off % GRANULE, 0);
            assert_eq!(a.block_size(off), Some(112));
            check_invariants(&a);
        }
        // Small alignments behave as plain allocations: 48, then 112 each.
        let used: Vec<(u64, u64)> = a.used_blocks().collect();
        assert_eq!(
            &used[..5],
            &[(0, 48), (48, 112), (160, 112), (272, 112), (384, 112)]
        );

        // The head remainder stays free and is reused by a later best fit.
        let mut b = Allocator::new(4 * MIB);
        assert_eq!(b.allocate(16), Ok(0));
        assert_eq!(b.allocate_aligned(2 * MIB, MIB), Ok(2 * MIB));
        assert_eq!(
            b.free_blocks().collect::<Vec<_>>(),
            [(16, 2 * MIB - 16), (3 * MIB, MIB)]
        );
        // Best fit: the 1 MiB tail is smaller than the head remainder.
        assert_eq!(b.allocate(4096), Ok(3 * MIB));
        assert_eq!(b.allocate(MIB + 1), Ok(16));
        check_invariants(&b);
        // Releasing everything coalesces back to one block.
        for off in [0, 2 * MIB, 3 * MIB, 16] {
            b.release(off).unwrap();
        }
        assert_eq!(b.free_blocks().collect::<Vec<_>>(), [(0, 4 * MIB)]);
    }

    #[test]
    fn aligned_scan_skips_blocks_that_cannot_align() {
        // Holes: [16, 80) size 64 (smallest, but no 64-aligned 64-byte slot),
        // [128, 256) size 128 (fits at 128). The scan must pass the first.
        let mut a = Allocator::new(512);
        let g0 = a.allocate(16).unwrap();
        let h1 = a.allocate(64).unwrap();
        let _g1 = a.allocate(48).unwrap();
        let h2 = a.allocate(128).unwrap();
        let _g2 = a.allocate(256).unwrap();
        assert_eq!((g0, h1, h2), (0, 16, 128));
        a.release(h1).unwrap();
        a.release(h2).unwrap();
        assert_eq!(a.allocate_aligned(64, 64), Ok(128));
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), [(16, 64), (192, 64)]);
        // 16-byte alignment takes the smallest block.
        assert_eq!(a.allocate_aligned(16, 64), Ok(16));
        // No block can hold 64 bytes at 128-byte alignment.
        let before = snapshot(&a);
        assert_eq!(
            a.allocate_aligned(128, 64),
            Err(AllocError::OutOfMemory {
                requested: 64,
                largest_free: 64
            })
        );
        assert_eq!(snapshot(&a), before);
        check_invariants(&a);
    }

    #[test]
    fn huge_alignment_does_not_overflow() {
        let mut a = Allocator::new(MIB);
        a.allocate(16).unwrap();
        assert!(matches!(
            a.allocate_aligned(1 << 63, 16),
            Err(AllocError::OutOfMemory { .. })
        ));
        // Offset 0 is aligned to anything.
        let mut b = Allocator::new(MIB);
        assert_eq!(b.allocate_aligned(1 << 63, 16), Ok(0));
    }

    #[test]
    fn double_free_leaves_state_unchanged() {
        let mut a = cann_heap(4 * MIB);
        let p = a.allocate(64 * KIB).unwrap();
        let q = a.allocate(64 * KIB).unwrap();
        assert_eq!(a.release(p), Ok(64 * KIB));
        let before = snapshot(&a);
        assert_eq!(a.release(p), Err(AllocError::NotAllocated { offset: p }));
        assert_eq!(snapshot(&a), before);
        // The heap still works: the hole is reused.
        assert_eq!(a.allocate(64 * KIB), Ok(p));
        assert_eq!(a.release(q), Ok(64 * KIB));
        check_invariants(&a);
    }

    #[test]
    fn interior_and_bogus_free_leave_state_unchanged() {
        let mut a = cann_heap(4 * MIB);
        let base = a.allocate(128 * KIB).unwrap();
        let before = snapshot(&a);
        let free_start = a.free_blocks().next().unwrap().0;
        for bogus in [
            base + 64,
            base + 1,
            0x100,
            free_start + 16,
            free_start,
            10 * MIB,
            u64::MAX,
        ] {
            if bogus == base {
                continue;
            }
            assert_eq!(
                a.release(bogus),
                Err(AllocError::NotAllocated { offset: bogus })
            );
            assert_eq!(snapshot(&a), before, "after releasing {bogus:#x}");
        }
        assert_eq!(a.release(base), Ok(128 * KIB));
        assert_eq!(a.allocate(128 * KIB), Ok(base));
        check_invariants(&a);
    }

    #[test]
    fn best_fit_picks_smallest_fitting_hole() {
        // Holes of 64, 32 and 48 bytes separated by 16-byte guards, then a big tail.
        let mut a = Allocator::new(4096);
        let offs: Vec<u64> = [64, 16, 32, 16, 48, 16]
            .into_iter()
            .map(|n| a.allocate(n).unwrap())
            .collect();
        assert_eq!(offs, [0, 64, 80, 112, 128, 176]);
        for hole in [offs[0], offs[2], offs[4]] {
            a.release(hole).unwrap();
        }
        assert_eq!(
            a.free_blocks().collect::<Vec<_>>(),
            [(0, 64), (80, 32), (128, 48), (192, 4096 - 192)]
        );
        // 40 rounds to 48: the 48 hole, not the first (64) nor the tail.
        assert_eq!(a.allocate(40), Ok(128));
        // 20 rounds to 32: the 32 hole.
        assert_eq!(a.allocate(20), Ok(80));
        // 33 rounds to 48: only the 64 hole and the tail are left; 64 is smaller.
        assert_eq!(a.allocate(33), Ok(0));
        assert_eq!(
            a.free_blocks().collect::<Vec<_>>(),
            [(48, 16), (192, 4096 - 192)]
        );
        check_invariants(&a);
    }

    #[test]
    fn lowest_offset_among_equal_holes() {
        let mut a = Allocator::new(4096);
        let offs: Vec<u64> = (0..6).map(|_| a.allocate(32).unwrap()).collect();
        // Holes of 32 bytes at 160, 96 and 32 (released in that order).
        for i in [5, 3, 1] {
            a.release(offs[i]).unwrap();
        }
        // offs[5] merged with the tail, so the equal holes are at 32 and 96.
        assert_eq!(a.allocate(32), Ok(32));
        assert_eq!(a.allocate(32), Ok(96));
        assert_eq!(a.allocate(32), Ok(160));
        assert_eq!(a.allocate_aligned(16, 32), Ok(192));
        check_invariants(&a);
    }

    #[test]
    fn release_coalesces_both_sides() {
        let mut a = Allocator::new(256);
        let offs: Vec<u64> = (0..4).map(|_| a.allocate(64).unwrap()).collect();
        a.release(offs[0]).unwrap();
        a.release(offs[2]).unwrap();
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), [(0, 64), (128, 64)]);
        a.release(offs[1]).unwrap();
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), [(0, 192)]);
        a.release(offs[3]).unwrap();
        assert_eq!(a.free_blocks().collect::<Vec<_>>(), [(0, 256)]);
        assert_eq!(a, Allocator::new(256));
    }

    #[test]
    fn queries() {
        let mut a = Allocator::new(MIB);
        let p = a.allocate(100).unwrap();
        assert_eq!(a.block_size(p), Some(112));
        assert_eq!(a.block_size(p + 16), None);
        assert_eq!(a.block_size(112), None);
        assert_eq!(a.used_bytes(), 112);
        assert_eq!(a.free_bytes(), MIB - 112);
        assert_eq!(a.largest_free(), MIB - 112);
        assert_eq!(a.used_count(), 1);
        assert_eq!(a.used_blocks().collect::<Vec<_>>(), [(0, 112)]);
        assert_eq!(a.release(p), Ok(112));
        assert_eq!(a.used_count(), 0);
    }

    #[test]
    fn error_messages_say_what_was_wrong() {
        let msg = |e: AllocError| e.to_string();
        assert!(msg(AllocError::Zero).contains("zero bytes"));
        let m = msg(AllocError::TooLarge {
            requested: 11,
            heap: 10,
        });
        assert!(m.contains("11") && m.contains("10"), "{m}");
        assert!(msg(AllocError::NotPowerOfTwo { align: 17 }).contains("17"));
        let m = msg(AllocError::OutOfMemory {
            requested: 2097152,
            largest_free: 1966592,
        });
        assert!(m.contains("2097152") && m.contains("1966592"), "{m}");
        assert!(msg(AllocError::NotAllocated { offset: 0x520240 }).contains("0x520240"));
    }

    /// One step of the random sequences.
    #[derive(Debug, Clone)]
    enum Op {
        /// `allocate(n)`.
        Alloc(u64),
        /// `allocate_aligned(1 << shift, n)`.
        Aligned(u32, u64),
        /// Release the live block with this index (modulo the live count).
        ReleaseLive(usize),
        /// Release a live block's start plus a delta (an interior offset when
        /// the delta is inside the block, otherwise whatever lies there).
        ReleaseInterior(usize, u64),
        /// Release an arbitrary offset.
        ReleaseAny(u64),
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u64..600).prop_map(Op::Alloc),
            1 => (0u64..5000).prop_map(Op::Alloc),
            2 => (0u32..12, 1u64..400).prop_map(|(s, n)| Op::Aligned(s, n)),
            4 => any::<usize>().prop_map(Op::ReleaseLive),
            1 => (any::<usize>(), 1u64..64).prop_map(|(i, d)| Op::ReleaseInterior(i, d)),
            1 => (0u64..5000).prop_map(Op::ReleaseAny),
        ]
    }

    /// The free gaps between the live blocks of the model, as `(offset, size)`.
    fn model_gaps(live: &[(u64, u64)], heap: u64) -> Vec<(u64, u64)> {
        let mut sorted = live.to_vec();
        sorted.sort_unstable();
        let mut gaps = Vec::new();
        let mut cursor = 0;
        for &(off, size) in &sorted {
            if off > cursor {
                gaps.push((cursor, off - cursor));
            }
            cursor = off + size;
        }
        if heap > cursor {
            gaps.push((cursor, heap - cursor));
        }
        gaps
    }

    /// Where the model expects an allocation of `n` bytes at `align` to land.
    fn model_place(live: &[(u64, u64)], heap: u64, align: u64, n: u64) -> Option<u64> {
        let rounded = n.div_ceil(GRANULE) * GRANULE;
        let mut gaps: Vec<(u64, u64)> = model_gaps(live, heap)
            .into_iter()
            .map(|(o, s)| (s, o))
            .collect();
        gaps.sort_unstable();
        gaps.into_iter().find_map(|(size, off)| {
            let start = off.div_ceil(align) * align;
            (start + rounded <= off + size).then_some(start)
        })
    }

    proptest! {
        #[test]
        fn random_sequences_match_model(
            heap in prop_oneof![Just(4096u64), (1u64..8192)],
            ops in prop::collection::vec(op_strategy(), 1..80),
            release_order in any::<u64>(),
        ) {
            let mut a = Allocator::new(heap);
            // Live blocks of the model: (offset, rounded size).
            let mut live: Vec<(u64, u64)> = Vec::new();
            for op in ops {
                match op {
                    Op::Alloc(n) | Op::Aligned(_, n) => {
                        let align = match op {
                            Op::Aligned(shift, _) => 1u64 << shift,
                            _ => 1,
                        };
                        let before = snapshot(&a);
                        let got = if matches!(op, Op::Aligned(..)) {
                            a.allocate_aligned(align, n)
                        } else {
                            a.allocate(n)
                        };
                        let expected = if n == 0 || n > heap {
                            None
                        } else {
                            model_place(&live, heap, align, n)
                        };
                        match got {
                            Ok(off) => {
                                prop_assert_eq!(Some(off), expected);
                                prop_assert_eq!(off % GRANULE, 0);
                                prop_assert_eq!(off % align, 0);
                                let rounded = n.div_ceil(GRANULE) * GRANULE;
                                prop_assert_eq!(a.block_size(off), Some(rounded));
                                prop_assert!(off + rounded <= heap);
                                for &(o, s) in &live {
                                    prop_assert!(off + rounded <= o || o + s <= off, "overlap");
                                }
                                live.push((off, rounded));
                            }
                            Err(e) => {
                                prop_assert_eq!(expected, None, "refused: {}", e);
                                prop_assert_eq!(snapshot(&a), before);
                                match e {
                                    AllocError::Zero => prop_assert_eq!(n, 0),
                                    AllocError::TooLarge { requested, heap: h } => {
                                        prop_assert_eq!((requested, h), (n, heap));
                                        prop_assert!(n > heap);
                                    }
                                    AllocError::OutOfMemory { requested, largest_free } => {
                                        prop_assert_eq!(requested, n);
                                        prop_assert_eq!(largest_free, a.largest_free());
                                    }
                                    other => prop_assert!(false, "unexpected error {:?}", other),
                                }
                            }
                        }
                    }
                    Op::ReleaseLive(i) => {
                        if live.is_empty() {
                            continue;
                        }
                        let (off, size) = live.swap_remove(i % live.len());
                        prop_assert_eq!(a.release(off), Ok(size));
                    }
                    Op::ReleaseInterior(_, _) | Op::ReleaseAny(_) => {
                        let target = match op {
                            Op::ReleaseInterior(i, d) if !live.is_empty() => {
                                live[i % live.len()].0 + d
                            }
                            Op::ReleaseInterior(_, d) => d,
                            Op::ReleaseAny(o) => o,
                            _ => unreachable!(),
                        };
                        if let Some(pos) = live.iter().position(|&(o, _)| o == target) {
                            let (_, size) = live.swap_remove(pos);
                            prop_assert_eq!(a.release(target), Ok(size));
                        } else {
                            let before = snapshot(&a);
                            prop_assert_eq!(
                                a.release(target),
                                Err(AllocError::NotAllocated { offset: target })
                            );
                            prop_assert_eq!(snapshot(&a), before);
                        }
                    }
                }
                check_invariants(&a);
                let mut model_used = live.clone();
                model_used.sort_unstable();
                prop_assert_eq!(a.used_blocks().collect::<Vec<_>>(), model_used);
                prop_assert_eq!(a.free_blocks().collect::<Vec<_>>(), model_gaps(&live, heap));
            }
            // Release everything, in an order derived from the seed.
            let mut seed = release_order;
            while !live.is_empty() {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let (off, size) = live.swap_remove((seed >> 33) as usize % live.len());
                prop_assert_eq!(a.release(off), Ok(size));
                check_invariants(&a);
            }
            prop_assert_eq!(a.free_blocks().collect::<Vec<_>>(), vec![(0, heap)]);
            prop_assert_eq!(a.used_bytes(), 0);
            prop_assert_eq!(a, Allocator::new(heap));
        }
    }
}
