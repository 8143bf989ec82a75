//! Collective allocation: every PE allocates locally, then one allgather of a fixed record
//! tells every PE whether every other PE succeeded, with the same size, at the same offset. On
//! any disagreement every PE releases its block and reports which PE differed, so the heaps
//! never diverge.

use bytemuck::{Pod, Zeroable};
use shmem_backend::Pe;

use super::Heap;
use super::allocator::AllocError;
use crate::bootstrap::allgather_records;
use crate::error::{Error, Result};
use crate::instance::Instance;

/// What each PE contributes to a collective allocation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct AllocRecord {
    /// 0: allocated; 1: an invalid request (zero bytes, a bad alignment); 2: no room.
    status: u64,
    /// Where the block landed (`u64::MAX` when it did not).
    offset: u64,
    /// The bytes asked for.
    size: u64,
}

/// What each PE contributes to a collective free.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct FreeRecord {
    offset: u64,
}

/// Every PE's `mine`, indexed by PE, through the instance's bootstrap.
fn allgather<T: Pod>(inst: &Instance, mine: &T) -> Result<Vec<T>> {
    allgather_records(&*inst.inner.boot, mine).map_err(|e| inst.fail(Error::from(e)))
}

impl Instance {
    /// Collectively allocates `size` bytes (aligned to `align`, and zeroed if asked) at the
    /// same offset on every PE.
    pub(crate) fn alloc_collective(
        &self,
        size: u64,
        align: Option<u64>,
        zero: bool,
    ) -> Result<u64> {
        self.check_live()?;
        let heap = &self.inner.heap;
        let local = heap.allocate(size, align);
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
        let mine = AllocRecord {
            status: match &local {
                Ok(_) => 0,
                Err(AllocError::Zero | AllocError::NotPowerOfTwo { .. }) => 1,
                Err(_) => 2,
            },
            offset: local.as_ref().copied().unwrap_or(u64::MAX),
            size,
        };
        let undo = |heap: &Heap| {
            if let Ok(off) = local {
                let _ = heap.release(off);
            }
        };
        let all = allgather(self, &mine).inspect_err(|_| undo(heap))?;
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
            } else if r.size != size {
                Some(format!(
                    "the allocation is not symmetric: PE {pe} asked for {} bytes, this PE for {size}",
                    r.size
                ))
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
        let to = self.alloc_collective(new, align, false)?;
        let keep = old.min(new) as usize;
        let me: Pe = self.my_pe();
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
            let _ = self.free_collective(to);
            return Err(e);
        }
        self.free_collective(off)?;
        Ok(to)
    }

    /// Collectively releases the block at heap offset `off`.
    pub(crate) fn free_collective(&self, off: u64) -> Result<()> {
        self.check_live()?;
        let all = allgather(self, &FreeRecord { offset: off })?;
        if let Some((pe, other)) = all
            .iter()
            .enumerate()
            .map(|(pe, r)| (pe, r.offset))
            .find(|(_, o)| *o != off)
        {
            return Err(Error::InvalidParam(format!(
                "free is not symmetric: PE {pe} frees offset {other:#x}, this PE {off:#x}; nothing was freed"
            )));
        }
        self.inner
            .heap
            .release(off)
            .map(|_| ())
            .map_err(|e| Error::InvalidParam(e.to_string()))
    }
}
