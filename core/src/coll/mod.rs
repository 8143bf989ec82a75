//! Collectives on teams, built from put-with-signal, signal and local waits only, so they run
//! on any transport that has those (the hardware one included).
//!
//! Each team has a sync slot in the reserved heap area (counters that only grow: see
//! [`words`](crate::team::words)) and a scratch area beyond the heap, split into a *gather*
//! region (small exchanges: the team index agreement, `collect`'s sizes), *broadcast* slots
//! and a *reduction* region (one slot per child of the reduction tree). The algorithms:
//!
//! - **broadcast** of up to [`BROADCAST_SLOT`] bytes: the root puts the data into a broadcast
//!   slot of every member's scratch with a signal to that slot's word, and returns once its
//!   data is out; each member waits for its word and copies the slot into its `dest`. One
//!   phase: the slots are used in turn, and the first broadcast of every
//!   [`BROADCAST_SLOTS`](words::BROADCAST_SLOTS) begins with a barrier, so a slot is written
//!   again only after every member has copied out of it. Larger ones: members tell the root
//!   they are ready (their `dest` is free), the root puts the data into every member's `dest`
//!   with a signal. Two phases.
//! - **small fcollect, collect, alltoall** (all blocks together within half the gather
//!   region): every PE puts its blocks into every member's gather scratch with a signal-add,
//!   waits for its own count and copies the blocks into its `dest`. One phase: the two halves
//!   of the region alternate, and a PE can only reach the next use of a half after every
//!   member has sent it a block of the round in between, which each sends only once it has
//!   copied out of that half. Larger ones: an entry barrier (every `dest` is free), then every
//!   PE puts its blocks straight into every member's `dest` and waits for its own count.
//! - **reductions** of at least [`RS_MIN_BYTES`] on teams of up to 9 PEs: reduce-scatter then
//!   allgather. After an entry sync each PE owns a segment of the array: it gets that segment
//!   of every member's `source`, combines it and puts the result into every member's `dest`,
//!   then signals each member once. Two phases whatever the size, and the combining is spread
//!   over all PEs. Others (small vectors, large teams): chunk by chunk up a tree of radix 8
//!   (children put their partial results into their parent's scratch slots), the root
//!   combines, and the result goes back down into every member's `dest`; with up to 9 PEs the
//!   tree is one level. `source` and `dest` may be the same array (in place).
//!
//! Phases, not messages, are what cost when PEs outnumber cores: every phase makes each waiting
//! PE go through the scheduler once. The algorithms therefore keep the number of phases small
//! rather than the number of puts.

mod exchange;
mod reduce;
mod scan;

pub use reduce::{Complex32, Complex64, ReduceOp, Reducible};

use shmem_backend::{Local, LocalMut, Pe, Signal, SignalOp, Width};

use crate::error::{Error, Result};
use crate::fabric::{Fabric, Queue};
use crate::instance::Instance;
use crate::team::{CollWait, SCRATCH_PER_TEAM, Team, at_least, words};

/// Bytes of a team's scratch used for gathers.
pub(crate) const GATHER_BYTES: usize = 16 << 10;
/// Bytes of one half of the gather region (small exchanges alternate between the halves).
pub(crate) const GATHER_HALF: usize = GATHER_BYTES / 2;
/// Bytes of one broadcast slot: the largest broadcast that goes through the scratch.
pub(crate) const BROADCAST_SLOT: usize = 8 << 10;
/// Bytes of a team's scratch used for broadcasts.
pub(crate) const BROADCAST_BYTES: usize = BROADCAST_SLOT * words::BROADCAST_SLOTS as usize;
/// Bytes of a team's scratch used for reductions.
pub(crate) const REDUCE_BYTES: usize = SCRATCH_PER_TEAM - GATHER_BYTES - BROADCAST_BYTES;
/// The smallest reduction (in bytes) that goes by reduce-scatter and allgather.
pub(crate) const RS_MIN_BYTES: usize = 4 << 10;
/// Bytes of one reduction slot (one per child of the tree).
pub(crate) const REDUCE_SLOT: usize = REDUCE_BYTES / crate::team::RADIX as usize;

/// Where the bytes a collective sends come from: host memory it computed, or this PE's own
/// segment (a user's `source`, or scratch), which then goes straight to the peer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bytes<'a> {
    Host(&'a [u8]),
    /// `len` bytes at segment offset `offset` of this PE.
    Own(usize, usize),
}

impl Bytes<'_> {
    fn local(&self) -> Local<'_> {
        match *self {
            Bytes::Host(b) => Local::Host(b),
            Bytes::Own(offset, len) => Local::Segment { offset, len },
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Bytes::Host(b) => b.is_empty(),
            Bytes::Own(_, len) => *len == 0,
        }
    }
}

// Every segment offset these helpers use is computed by the collectives from a view the
// caller passed (inside the heap) or from the team's sync slot and scratch area (inside the
// segment), and every rank is a member of the team: the transport's preconditions hold.
impl Team {
    pub(crate) fn t(&self) -> &Fabric {
        self.inst.fabric()
    }

    pub(crate) fn q(&self) -> &Queue {
        &self.inst.inner.sync_queue
    }

    /// The segment offset of this team's gather region.
    pub(crate) fn gather_area(&self) -> usize {
        self.state.scratch
    }

    /// The segment offset of reduction slot `i`.
    pub(crate) fn reduce_slot(&self, i: u32) -> usize {
        self.reduce_area() + i as usize * REDUCE_SLOT
    }

    /// The segment offset of broadcast slot `i`.
    pub(crate) fn broadcast_slot(&self, i: u64) -> usize {
        self.state.scratch + GATHER_BYTES + i as usize * BROADCAST_SLOT
    }

    /// The segment offset of this team's reduction region.
    pub(crate) fn reduce_area(&self) -> usize {
        self.state.scratch + GATHER_BYTES + BROADCAST_BYTES
    }

    /// Puts `data` at segment offset `dst` of team rank `rank` with a signal-add of 1 to its
    /// word `word`; empty `data` sends the signal alone.
    pub(crate) fn put_count(
        &self,
        rank: u32,
        dst: usize,
        data: Bytes<'_>,
        word: u64,
    ) -> Result<()> {
        if data.is_empty() {
            self.signal_word(rank, word, SignalOp::Add, 1)
        } else {
            self.put_signal_word(rank, dst, data, word, SignalOp::Add, 1)
        }
    }

    /// Copies `data` to segment offset `dst` of this PE.
    pub(crate) fn write_own(&self, dst: usize, data: &[u8]) -> Result<()> {
        // SAFETY: see the comment on this impl.
        unsafe {
            self.t()
                .put(self.q(), self.inst.my_pe(), dst, Local::Host(data))
        }
    }

    /// Copies `len` bytes within this PE's segment, from `src` to `dst`.
    pub(crate) fn copy_own(&self, dst: usize, src: usize, len: usize) -> Result<()> {
        if len == 0 || dst == src {
            return Ok(());
        }
        // SAFETY: see the comment on this impl.
        unsafe {
            self.t().put(
                self.q(),
                self.inst.my_pe(),
                dst,
                Local::Segment { offset: src, len },
            )
        }
    }

    /// The heap offset of one of this team's sync words.
    pub(crate) fn word(&self, word: u64) -> usize {
        (self.state.slot + word) as usize
    }

    /// Waits until this PE's sync word `word` reaches `threshold`.
    pub(crate) fn wait_word(&self, word: u64, threshold: u64, what: &str) -> Result<()> {
        let w = at_least(self.word(word), threshold);
        // SAFETY: a sync word of the team's slot: aligned, inside the reserved area.
        unsafe {
            self.t()
                .wait_until(self.q(), w, &CollWait { team: self, what })
        }
        .map(|_| ())
        .map_err(|e| self.inst.fail(e))
    }

    /// The instance PE of team rank `rank`.
    pub(crate) fn pe_of(&self, rank: u32) -> Pe {
        self.state.members.pe(rank)
    }

    /// Applies `op value` to sync word `word` of team rank `rank`.
    pub(crate) fn signal_word(&self, rank: u32, word: u64, op: SignalOp, value: u64) -> Result<()> {
        let sig = Signal {
            offset: self.word(word),
            width: Width::W64,
            op,
            value,
        };
        // SAFETY: see the comment on this impl.
        unsafe { self.t().signal(self.q(), self.pe_of(rank), sig) }
    }

    /// Puts `data` at segment offset `dst` of team rank `rank`, then applies `op value` to its
    /// sync word `word` (the signal arrives after the data).
    pub(crate) fn put_signal_word(
        &self,
        rank: u32,
        dst: usize,
        data: Bytes<'_>,
        word: u64,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        let sig = Signal {
            offset: self.word(word),
            width: Width::W64,
            op,
            value,
        };
        // SAFETY: see the comment on this impl.
        unsafe {
            self.t()
                .put_signal(self.q(), self.pe_of(rank), dst, data.local(), sig)
        }
    }

    /// Copies `len` bytes at segment offset `off` of this PE's own segment.
    pub(crate) fn read_own(&self, off: usize, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0u8; len];
        // SAFETY: see the comment on this impl.
        unsafe {
            self.t()
                .get(self.q(), self.inst.my_pe(), off, LocalMut::Host(&mut v))
        }?;
        Ok(v)
    }

    /// The collective prologue: the team is live, and `dest` and `source` (their instances,
    /// `homes`) belong to the team's instance.
    pub(crate) fn coll_prologue(&self, homes: [&Instance; 2]) -> Result<()> {
        self.check_live()?;
        homes.iter().try_for_each(|h| self.inst.owns(h))?;
        self.enter()
    }
}

/// Checks that a view has exactly `want` elements.
pub(crate) fn check_len(what: &str, name: &str, have: usize, want: usize) -> Result<()> {
    if have == want {
        Ok(())
    } else {
        Err(Error::InvalidParam(format!(
            "{what}: {name} has {have} elements, {want} are needed"
        )))
    }
}
