//! Collective allocation: every PE allocates locally, then one allgather of a fixed record
//! tells every PE which heap call every other PE made, and whether it succeeded, with the same
//! size, at the same offset. On any disagreement every PE releases its block and reports which
//! PE differed, so the heaps never diverge. Every heap collective (malloc, calloc, align,
//! realloc, free) sends the same record, so PEs out of step (one in `malloc`, one in `free`)
//! each get an error naming both calls instead of a record of the wrong size.

use std::fmt;

use bytemuck::{Pod, Zeroable};
use shmem_backend::Pe;

use super::allocator::AllocError;
use super::{Heap, poison};
use crate::bootstrap::allgather_records;
use crate::error::{Error, Result};
use crate::instance::Instance;

/// The heap call a PE made, as the user wrote it: what the PEs of a collective allocation
/// compare, and what a mismatch names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeapCall {
    /// `malloc(size)`.
    Malloc { size: u64 },
    /// `calloc(size)` (the total bytes).
    Calloc { size: u64 },
    /// `align(align, size)`.
    Align { align: u64, size: u64 },
    /// `realloc(offset, size)`.
    Realloc { offset: u64, size: u64 },
    /// `free(offset)`.
    Free { offset: u64 },
}

impl HeapCall {
    fn encode(self) -> [u64; 3] {
        match self {
            HeapCall::Malloc { size } => [1, size, 0],
            HeapCall::Calloc { size } => [2, size, 0],
            HeapCall::Align { align, size } => [3, align, size],
            HeapCall::Realloc { offset, size } => [4, offset, size],
            HeapCall::Free { offset } => [5, offset, 0],
        }
    }

    fn decode([kind, a, b]: [u64; 3]) -> Option<HeapCall> {
        Some(match kind {
            1 => HeapCall::Malloc { size: a },
            2 => HeapCall::Calloc { size: a },
            3 => HeapCall::Align { align: a, size: b },
            4 => HeapCall::Realloc { offset: a, size: b },
            5 => HeapCall::Free { offset: a },
            _ => return None,
        })
    }
}

impl fmt::Display for HeapCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HeapCall::Malloc { size } => write!(f, "malloc({size})"),
            HeapCall::Calloc { size } => write!(f, "calloc({size})"),
            HeapCall::Align { align, size } => write!(f, "align({align}, {size})"),
            HeapCall::Realloc { offset, size } => write!(f, "realloc({offset:#x}, {size})"),
            HeapCall::Free { offset } => write!(f, "free({offset:#x})"),
        }
    }
}

/// What each PE contributes to a heap collective.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct HeapRecord {
    /// The call ([`HeapCall::encode`]).
    call: [u64; 3],
    /// 0: done (or, for a free, about to be); 1: an invalid request (zero bytes, a bad
    /// alignment); 2: no room.
    status: u64,
    /// Where the block landed (`u64::MAX` when it did not).
    offset: u64,
}

/// Every PE's record, after checking that every PE made the same call as this one.
fn exchange(inst: &Instance, call: HeapCall, status: u64, offset: u64) -> Result<Vec<HeapRecord>> {
    let mine = HeapRecord {
        call: call.encode(),
        status,
        offset,
    };
    crate::fault::point("malloc.in_allgather", inst.my_pe(), inst.id());
    let all = allgather_records(&*inst.inner.boot, &mine).map_err(|e| inst.fail(Error::from(e)))?;
    let me = inst.my_pe();
    let differs = all
        .iter()
        .enumerate()
        .find(|(_, r)| r.call != mine.call)
        .map(|(pe, r)| (pe, HeapCall::decode(r.call)));
    match differs {
        None => Ok(all),
        Some((pe, Some(theirs))) => Err(Error::InvalidParam(format!(
            "collective mismatch: PE {pe} called {theirs} while PE {me} called {call}; the heap is unchanged"
        ))),
        Some((pe, None)) => Err(Error::InvalidParam(format!(
            "collective mismatch: PE {pe} sent a heap call this build does not know ({:?}) while PE {me} called {call}; the heap is unchanged",
            all[pe].call
        ))),
    }
}

impl Instance {
    /// Collectively allocates `size` bytes (aligned to `align`, and zeroed if asked) at the
    /// same offset on every PE, for the user's `call`.
    pub(crate) fn alloc_collective(
        &self,
        call: HeapCall,
        size: u64,
        align: Option<u64>,
        zero: bool,
    ) -> Result<u64> {
        self.check_live()?;
        // OpenSHMEM's allocation routines begin with a barrier_all: the default context's
        // operations complete first (held puts must not land in a block reused meanwhile).
        self.fabric().quiet(&self.inner.hot.queue)?;
        let heap = &self.inner.heap;
        let local = heap.allocate(size, align);
        let asan = self.inner.asan_base();
        if let Ok(off) = local {
            poison::unpoison(asan, off, size);
        }
        if let Ok(off) = local
            && zero
        {
            // SAFETY: the block lies inside this PE's heap, which the segment contains.
            unsafe {
                self.fabric().fill(
                    &self.inner.sync_queue,
                    self.my_pe(),
                    off as usize,
                    0,
                    size as usize,
                )
            }?;
        }
        let status = match &local {
            Ok(_) => 0,
            Err(AllocError::Zero | AllocError::NotPowerOfTwo { .. }) => 1,
            Err(_) => 2,
        };
        let undo = |heap: &Heap| {
            if let Ok(off) = local
                && let Ok(len) = heap.release(off)
            {
                poison::poison(asan, off, len);
            }
        };
        let offset = local.as_ref().copied().unwrap_or(u64::MAX);
        let all = exchange(self, call, status, offset).inspect_err(|_| undo(heap))?;
        if let Err(e) = &local {
            return Err(match e {
                AllocError::Zero | AllocError::NotPowerOfTwo { .. } => {
                    Error::InvalidValue(e.to_string())
                }
                _ => Error::OutOfMemory {
                    requested: size,
                    detail: e.to_string(),
                },
            });
        }
        for (pe, r) in all.iter().enumerate() {
            let problem = if r.status != 0 {
                Some(format!("the allocation failed on PE {pe}"))
            } else if Ok(r.offset) != local {
                Some(format!(
                    "PE {pe} placed the block at offset {:#x}, this PE elsewhere: the PEs' heaps have diverged",
                    r.offset
                ))
            } else {
                None
            };
            if let Some(detail) = problem {
                undo(heap);
                return Err(Error::OutOfMemory {
                    requested: size,
                    detail,
                });
            }
        }
        Ok(local.expect("checked above"))
    }

    /// Collectively moves the block at `off` (of `old` bytes) to a new block of `new` bytes,
    /// copying this PE's contents up to the smaller size, and frees the old block. On failure
    /// the old block is unchanged.
    pub(crate) fn realloc_collective(
        &self,
        off: u64,
        old: u64,
        new: u64,
        align: usize,
    ) -> Result<u64> {
        let align = (align > 16).then_some(align as u64);
        let call = HeapCall::Realloc {
            offset: off,
            size: new,
        };
        let to = self.alloc_collective(call, new, align, false)?;
        let keep = old.min(new) as usize;
        let me: Pe = self.my_pe();
        // `old` is the whole block, which may extend past what the user asked for (poisoned
        // for AddressSanitizer); the block is freed below, which poisons it again.
        poison::unpoison(self.inner.asan_base(), off, old);
        // SAFETY: both blocks lie inside this PE's heap; the copy is within the smaller one.
        let copy = unsafe {
            self.fabric().put(
                &self.inner.sync_queue,
                me,
                to as usize,
                shmem_backend::Local::Segment {
                    offset: off as usize,
                    len: keep,
                },
            )
        };
        if let Err(e) = copy {
            let _ = self.free_as(call, to);
            return Err(e);
        }
        self.free_as(call, off)?;
        Ok(to)
    }

    /// Collectively releases the block at heap offset `off` (`free`).
    pub(crate) fn free_collective(&self, off: u64) -> Result<()> {
        self.free_as(HeapCall::Free { offset: off }, off)
    }

    /// Collectively releases the block at heap offset `off`, for the user's `call`.
    fn free_as(&self, call: HeapCall, off: u64) -> Result<()> {
        self.check_live()?;
        self.fabric().quiet(&self.inner.hot.queue)?;
        exchange(self, call, 0, off)?;
        let len = self
            .inner
            .heap
            .release(off)
            .map_err(|e| Error::InvalidParam(e.to_string()))?;
        poison::poison(self.inner.asan_base(), off, len);
        Ok(())
    }
}
