//! The state of an instance's teams on this PE: members, agreed index, sync slot, scratch
//! area and counters. It knows no instance; the handles in the parent module do.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use shmem_backend::{BarrierSpec, Pe, WaitWord};

use crate::error::{Error, Result};
use crate::heap::layout::{Reserved, SYNC_ARRAY_SIZE};

/// The radix of the barrier and reduction trees.
pub(crate) const RADIX: u32 = shmem_backend::sync::RADIX;
/// The most teams one instance can have at once, the world and shared teams included (CANN's
/// team mask effectively allows 64).
pub const MAX_TEAMS: usize = 128;
/// Bytes of collective scratch per team, beyond the heap.
pub(crate) const SCRATCH_PER_TEAM: usize = 96 << 10;
/// The index of the world team.
pub(crate) const WORLD_INDEX: u32 = 0;
/// The index of the shared team.
pub(crate) const SHARED_INDEX: u32 = 1;

/// Offsets of the words of a team's sync slot (one 64-byte line each).
pub(crate) mod words {
    /// Barrier arrivals (signal-add by children).
    pub(crate) const ARRIVE: u64 = 0;
    /// Barrier release (signal-set of the epoch by the parent).
    pub(crate) const RELEASE: u64 = 64;
    /// Large broadcasts: a root counts the members ready to receive.
    pub(crate) const READY: u64 = 128;
    /// Large broadcasts: a root tells a member its data has arrived.
    pub(crate) const DONE: u64 = 192;
    /// Collectives: blocks received in an all-to-all exchange.
    pub(crate) const DATA: u64 = 256;
    /// Reductions: partial results received from children.
    pub(crate) const UP: u64 = 320;
    /// Reductions: a result chunk received from the parent.
    pub(crate) const DOWN: u64 = 384;
    /// Small exchanges through the gather scratch: blocks received into each half.
    pub(crate) const GATHER: [u64; 2] = [448, 512];
    /// Reduce-scatter reductions: result segments received.
    pub(crate) const RESULT: u64 = 576;
    /// How many collective calls on the team this PE has entered (written by the PE itself,
    /// read by the others' hang reports to name the members that have not arrived).
    pub(crate) const ENTERED: u64 = 640;
    /// A split's agreements on this parent: two words reduced in place.
    pub(crate) const SPLIT: u64 = 704;
    /// Scans: the previous member's prefix is in its `dest` (set by it).
    pub(crate) const SCAN: u64 = 768;
    /// Scans: the next member has read this PE's prefix (set by it).
    pub(crate) const SCAN_ACK: u64 = 832;
    /// Small broadcasts: one word per broadcast slot of the scratch (packed in one line); small
    /// broadcast number `k` of the team sets word `k % BROADCAST_SLOTS` to `k` on a member once
    /// the data is in that member's slot.
    pub(crate) const BROADCAST: u64 = 896;
    /// Broadcast slots in a team's scratch, and words of the [`BROADCAST`] ring.
    pub(crate) const BROADCAST_SLOTS: u64 = 4;
}
const _: () = assert!(words::SCAN_ACK + 8 <= words::BROADCAST);
const _: () = assert!(words::BROADCAST + 8 * words::BROADCAST_SLOTS <= SYNC_ARRAY_SIZE);

/// A wait until this PE's 64-bit sync word at `offset` is at least `threshold`.
pub(crate) fn at_least(offset: usize, threshold: u64) -> WaitWord {
    WaitWord::count(offset, threshold)
}

/// The configuration of a team (`shmem_team_config_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// The number of contexts the program intends to create from the team.
    pub num_contexts: i32,
}

/// The PEs of a team, as instance PE numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Members {
    /// The first PE.
    pub start: u32,
    /// The distance between consecutive members: negative for a team in reverse order
    /// (OpenSHMEM 1.6), 0 only for a team of one PE.
    pub stride: i32,
    /// The number of members.
    pub size: u32,
}

impl Members {
    /// The instance PE of team rank `rank`.
    pub(crate) fn pe(&self, rank: u32) -> Pe {
        (i64::from(self.start) + i64::from(rank) * i64::from(self.stride)) as Pe
    }

    /// The team rank of instance PE `pe`, if it is a member.
    pub(crate) fn rank_of(&self, pe: Pe) -> Option<u32> {
        let d = i64::from(pe) - i64::from(self.start);
        if self.stride == 0 {
            return (d == 0 && self.size > 0).then_some(0);
        }
        let stride = i64::from(self.stride);
        let rank = d / stride;
        (d % stride == 0 && (0..i64::from(self.size)).contains(&rank)).then_some(rank as u32)
    }
}

/// Collective bookkeeping of one team on this PE: how far each of its signal words has been
/// waited on. Collectives on one team never run concurrently, so a mutex costs nothing.
#[derive(Debug, Default)]
pub(crate) struct CollCounters {
    /// Large broadcasts completed (the value of DONE a root sets).
    pub seq: u64,
    /// READY signals this PE has waited for as a root.
    pub ready: u64,
    /// Small broadcasts begun on the team (the value a root sets in the broadcast ring).
    pub broadcasts: u64,
    /// DATA signals this PE has waited for.
    pub data: u64,
    /// UP signals this PE has waited for.
    pub up: u64,
    /// Reduction chunks completed (the value of DOWN a parent sets).
    pub chunk: u64,
    /// Small exchanges completed (their parity picks the gather half).
    pub rounds: u64,
    /// GATHER signals this PE has waited for, per half.
    pub gather: [u64; 2],
    /// RESULT signals this PE has waited for.
    pub result: u64,
    /// Scans begun on the team (the value of SCAN and SCAN_ACK they set).
    pub scans: u64,
}

/// One team's state on this PE.
#[derive(Debug)]
pub(crate) struct TeamState {
    /// Its members.
    pub members: Members,
    /// This PE's rank in it.
    pub my_rank: u32,
    /// The agreed index.
    pub index: u32,
    /// The heap offset of its sync-pool slot.
    pub slot: u64,
    /// The segment offset of its scratch area.
    pub scratch: usize,
    /// Its configuration.
    pub config: TeamConfig,
    /// Barriers completed so far.
    epoch: AtomicU64,
    /// Collective calls this PE entered on the team (barriers and collectives alike).
    entered: AtomicU64,
    /// Collective bookkeeping.
    pub coll: Mutex<CollCounters>,
    live: AtomicBool,
}

impl TeamState {
    pub(crate) fn new(
        members: Members,
        my_rank: u32,
        index: u32,
        reserved: &Reserved,
        heap_size: usize,
        config: TeamConfig,
    ) -> TeamState {
        TeamState {
            members,
            my_rank,
            index,
            slot: reserved.team_slot(u64::from(index)),
            scratch: heap_size + index as usize * SCRATCH_PER_TEAM,
            config,
            epoch: AtomicU64::new(0),
            entered: AtomicU64::new(0),
            coll: Mutex::new(CollCounters::default()),
            live: AtomicBool::new(true),
        }
    }

    /// The next barrier over the team: its epoch is taken now, in call order.
    pub(crate) fn next_barrier(&self) -> BarrierSpec {
        BarrierSpec {
            start: self.members.start,
            stride: self.members.stride,
            size: self.members.size,
            rank: self.my_rank,
            arrive: (self.slot + words::ARRIVE) as usize,
            release: (self.slot + words::RELEASE) as usize,
            epoch: self.next_epoch(),
            world: self.index == WORLD_INDEX,
        }
    }

    /// The number of this PE's next barrier on the team (barriers on one team never run
    /// concurrently on a PE, as no collectives do).
    fn next_epoch(&self) -> u64 {
        let e = self.epoch.load(Ordering::Relaxed) + 1;
        self.epoch.store(e, Ordering::Relaxed);
        e
    }

    /// Counts one more collective call entered, and returns the count.
    pub(crate) fn enter(&self) -> u64 {
        // Only this PE's collective calls on the team count, and those never run concurrently.
        let n = self.entered.load(Ordering::Relaxed) + 1;
        self.entered.store(n, Ordering::Relaxed);
        n
    }

    /// The collective calls entered so far.
    pub(crate) fn entered(&self) -> u64 {
        self.entered.load(Ordering::Relaxed)
    }

    pub(crate) fn coll(&self) -> MutexGuard<'_, CollCounters> {
        self.coll.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the team is live (not destroyed).
    pub(crate) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Marks the team destroyed.
    pub(crate) fn destroyed(&self) {
        self.live.store(false, Ordering::Release);
    }

    /// Checks the team is live.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.is_live() {
            Ok(())
        } else {
            Err(Error::InvalidParam("the team was destroyed".into()))
        }
    }

    /// The instance PE of team PE `pe`.
    pub(crate) fn to_instance_pe(&self, pe: Pe) -> Result<Pe> {
        self.check_live()?;
        if pe < self.members.size {
            Ok(self.members.pe(pe))
        } else {
            Err(Error::InvalidPe {
                pe: i64::from(pe),
                n_pes: self.members.size,
            })
        }
    }
}

/// The teams of one instance on this PE.
#[derive(Debug)]
pub(crate) struct Teams {
    pub world: Arc<TeamState>,
    pub shared: Arc<TeamState>,
    /// Which indices this PE's live teams use, and which its splits in progress hold.
    indices: Mutex<Indices>,
}

/// The team indices of one instance on this PE. Splits from different threads (on different
/// parent teams) run concurrently: each agrees on candidate indices with its parent's members,
/// then reserves them here, and starts over if a concurrent split reserved one first.
#[derive(Debug)]
pub(crate) struct Indices {
    /// Taken by a live team of this PE.
    pub used: [bool; MAX_TEAMS],
    /// Held by a split in progress on this PE (whether or not this PE joins the new team).
    pub reserved: [bool; MAX_TEAMS],
}

impl Indices {
    /// The indices neither used nor reserved here, as a bitmap of `MAX_TEAMS` bits (set:
    /// taken), for the agreement.
    pub(crate) fn taken_bits(&self) -> [u8; MAX_TEAMS / 8] {
        let mut bits = [0u8; MAX_TEAMS / 8];
        for i in 0..MAX_TEAMS {
            if self.used[i] || self.reserved[i] {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        bits
    }

    /// Reserves every index of `want`, if none is used or reserved here; otherwise reserves
    /// nothing and returns false.
    pub(crate) fn reserve(&mut self, want: &[u32]) -> bool {
        let free = want
            .iter()
            .all(|&i| !self.used[i as usize] && !self.reserved[i as usize]);
        if free {
            for &i in want {
                self.reserved[i as usize] = true;
            }
        }
        free
    }

    /// Gives back the reservations of `want`.
    pub(crate) fn release(&mut self, want: &[u32]) {
        for &i in want {
            self.reserved[i as usize] = false;
        }
    }
}

impl Teams {
    /// The world and shared teams of a PE; `host_mapping` says whether this PE can load and
    /// store its peers' heaps (else the shared team is this PE alone).
    pub(crate) fn new(
        n_pes: u32,
        my_pe: u32,
        reserved: &Reserved,
        heap_size: usize,
        host_mapping: bool,
    ) -> Teams {
        let all = Members {
            start: 0,
            stride: 1,
            size: n_pes,
        };
        let (shared, shared_rank) = if host_mapping {
            (all, my_pe)
        } else {
            (
                Members {
                    start: my_pe,
                    stride: 1,
                    size: 1,
                },
                0,
            )
        };
        let mut used = [false; MAX_TEAMS];
        used[WORLD_INDEX as usize] = true;
        used[SHARED_INDEX as usize] = true;
        Teams {
            world: Arc::new(TeamState::new(
                all,
                my_pe,
                WORLD_INDEX,
                reserved,
                heap_size,
                TeamConfig::default(),
            )),
            shared: Arc::new(TeamState::new(
                shared,
                shared_rank,
                SHARED_INDEX,
                reserved,
                heap_size,
                TeamConfig::default(),
            )),
            indices: Mutex::new(Indices {
                used,
                reserved: [false; MAX_TEAMS],
            }),
        }
    }

    /// The indices of this PE's teams (held only for bookkeeping, never across a wait).
    pub(crate) fn indices(&self) -> MutexGuard<'_, Indices> {
        self.indices.lock().unwrap_or_else(|p| p.into_inner())
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
