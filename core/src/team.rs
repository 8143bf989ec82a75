//! Teams and the barrier built from signals and local waits.
//!
//! A team is a strided set of the instance's PEs (`start + i * stride`, `i < size`) with a slot
//! in the sync pool of the reserved heap area. The barrier is a tree of radix [`RADIX`]: every
//! PE waits for its children to signal-add one to its *arrival* word, signals its parent, waits
//! for the parent to signal-set its *release* word to the barrier's epoch, and releases its own
//! children. Counts and epochs only grow, so no word is ever reset and consecutive barriers
//! cannot confuse each other. With up to `RADIX + 1` PEs the tree is a single root: two
//! phases, which matters when PEs outnumber cores (every phase costs each waiting PE one trip
//! through the scheduler).
//!
//! Only `signal` and local waits are used, so the barrier runs on any transport that has them.

use std::sync::atomic::{AtomicU64, Ordering};

use shmem_backend::{
    Cmp, DynQueue, DynTransport, Pe, ScalarKind, Signal, SignalOp, WaitCtl, Watch, Width,
};

use crate::error::Result;
use crate::heap::layout::SYNC_ARRAY_SIZE;

/// The radix of the barrier tree.
pub(crate) const RADIX: u32 = 8;
/// Offset of the arrival counter inside a team's sync slot.
const ARRIVE: u64 = 0;
/// Offset of the release word inside a team's sync slot (its own cache line).
const RELEASE: u64 = 64;
const _: () = assert!(RELEASE + 8 <= SYNC_ARRAY_SIZE);

/// The PEs of a team, as instance PE numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Members {
    /// The first PE.
    pub start: u32,
    /// The distance between consecutive members.
    pub stride: u32,
    /// The number of members.
    pub size: u32,
}

impl Members {
    /// The instance PE of team rank `rank`.
    pub(crate) fn pe(&self, rank: u32) -> Pe {
        self.start + rank * self.stride
    }

    /// The team rank of instance PE `pe`, if it is a member.
    #[cfg_attr(not(test), expect(dead_code, reason = "used by team translation"))]
    pub(crate) fn rank_of(&self, pe: Pe) -> Option<u32> {
        let d = pe.checked_sub(self.start)?;
        if self.stride == 0 {
            return (d == 0 && self.size > 0).then_some(0);
        }
        (d % self.stride == 0 && d / self.stride < self.size).then_some(d / self.stride)
    }
}

/// One team's state on this PE.
#[derive(Debug)]
pub(crate) struct TeamState {
    /// Its members.
    pub members: Members,
    /// This PE's rank in it.
    pub my_rank: u32,
    /// The heap offset of its sync-pool slot.
    pub slot: u64,
    /// Barriers completed so far.
    epoch: AtomicU64,
}

impl TeamState {
    pub(crate) fn new(members: Members, my_rank: u32, slot: u64) -> TeamState {
        TeamState {
            members,
            my_rank,
            slot,
            epoch: AtomicU64::new(0),
        }
    }

    /// Runs one barrier over the team. The caller has completed (quieted) its own outstanding
    /// operations; `ctl` bounds the waits.
    pub(crate) fn barrier(
        &self,
        t: &dyn DynTransport,
        q: &dyn DynQueue,
        ctl: &WaitCtl<'_>,
    ) -> Result<()> {
        let n = self.members.size;
        if n <= 1 {
            return Ok(());
        }
        let e = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let r = self.my_rank;
        let first_child = r * RADIX + 1;
        let children = if first_child < n {
            (n - first_child).min(RADIX)
        } else {
            0
        };
        let arrive = (self.slot + ARRIVE) as usize;
        let release = (self.slot + RELEASE) as usize;
        if children > 0 {
            let want = e * u64::from(children);
            t.wait_local(
                Watch::word(arrive, Width::W64),
                &mut || {
                    ScalarKind::U64.compare(Cmp::Ge, t.load(arrive, Width::W64).unwrap_or(0), want)
                },
                ctl,
            )?;
        }
        if r != 0 {
            let parent = self.members.pe((r - 1) / RADIX);
            t.signal(
                q,
                parent,
                Signal {
                    offset: arrive,
                    width: Width::W64,
                    op: SignalOp::Add,
                    value: 1,
                },
            )?;
            t.wait_local(
                Watch::word(release, Width::W64),
                &mut || {
                    ScalarKind::U64.compare(Cmp::Ge, t.load(release, Width::W64).unwrap_or(0), e)
                },
                ctl,
            )?;
        }
        for c in first_child..first_child + children {
            t.signal(
                q,
                self.members.pe(c),
                Signal {
                    offset: release,
                    width: Width::W64,
                    op: SignalOp::Set,
                    value: e,
                },
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_translate_both_ways() {
        let m = Members {
            start: 1,
            stride: 2,
            size: 3,
        };
        assert_eq!((0..3).map(|r| m.pe(r)).collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(m.rank_of(5), Some(2));
        assert_eq!(m.rank_of(4), None);
        assert_eq!(m.rank_of(7), None);
        assert_eq!(m.rank_of(0), None);
    }
}
