//! Broadcast, fcollect, collect, alltoall and alltoalls, and the internal gather.

use bytemuck::Pod;
use shmem_backend::{Pe, SignalOp, Strided};

use super::{BROADCAST_SLOT, Bytes, GATHER_BYTES, GATHER_HALF, check_len};
use crate::error::{Error, Result};
use crate::sym::SymSlice;
use crate::team::{Team, words};

/// What one page-table page maps: a block of an alltoall that crosses a multiple of it (the
/// segments start at one) reaches two regions of every peer.
const REGION: usize = 2 << 20;

impl Team {
    /// One round of a small exchange through the gather scratch, with no entry barrier: puts
    /// every `(rank, offset, data)` of `puts` (exactly one per member) into that member's
    /// current gather half at `offset`, waits until every member's put has arrived here, and
    /// returns the segment offset of this PE's half, whose first `total` bytes the caller then
    /// copies out before its next exchange. Collective over the team.
    ///
    /// The halves alternate between rounds. A member writes into half `h` again only in the
    /// round after next, which it reaches only after this PE's block of the next round has
    /// arrived, and this PE sends that only once it has copied this round's data out.
    fn scratch_round<'d>(
        &self,
        total: usize,
        puts: impl Iterator<Item = (u32, usize, Bytes<'d>)>,
    ) -> Result<usize> {
        debug_assert!(total <= GATHER_HALF);
        let n = self.n_pes();
        let mut c = self.state.coll();
        let half = (c.rounds % 2) as usize;
        c.rounds += 1;
        let area = self.gather_area() + half * GATHER_HALF;
        for (i, (rank, off, data)) in puts.enumerate() {
            self.put_count(rank, area + off, data, words::GATHER[half])?;
            self.in_exchange(i);
        }
        c.gather[half] += u64::from(n);
        self.wait_word(
            words::GATHER[half],
            c.gather[half],
            "the blocks of a team exchange",
        )?;
        debug_assert!(total <= GATHER_HALF);
        Ok(area)
    }

    /// Every member's `mine` (all of one length), indexed by team rank, exchanged through the
    /// team's gather region. Collective over the team.
    pub(crate) fn allgather_scratch(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let n = self.n_pes() as usize;
        let len = mine.len();
        let me = self.my_pe() as usize;
        if len * n > GATHER_HALF {
            return Err(Error::Inner(format!(
                "a gather of {len} bytes from {n} PEs does not fit half the team's {GATHER_BYTES}-byte gather scratch"
            )));
        }
        let area = self.scratch_round(
            len * n,
            (0..n as u32).map(|r| (r, me * len, Bytes::Host(mine))),
        )?;
        let all = self.read_own(area, len * n)?;
        Ok(all.chunks(len.max(1)).take(n).map(<[u8]>::to_vec).collect())
    }

    /// Copies `source` on PE `root` into `dest` on every member, the root included
    /// (`shmem_broadcast`). Collective over the team; `dest` and `source` have the same length.
    ///
    /// Up to 8 KiB, the root returns once its data is out, without waiting for the others to
    /// arrive; each member returns once its `dest` holds the data. A member's `dest` is written
    /// only while that member is in the call.
    pub fn broadcast<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
        root: Pe,
    ) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        check_len("broadcast", "source", source.len(), dest.len())?;
        let n = self.n_pes();
        if root >= n {
            return Err(Error::InvalidPe {
                pe: i64::from(root),
                n_pes: n,
            });
        }
        let len = source.byte_len();
        if len <= BROADCAST_SLOT {
            return self.broadcast_small(dest.offset(), source.offset(), len, root);
        }
        let mut c = self.state.coll();
        c.seq += 1;
        let seq = c.seq;
        if self.my_pe() == root {
            c.ready += u64::from(n - 1);
            self.wait_word(words::READY, c.ready, "members ready for a broadcast")?;
            let data = Bytes::Own(source.offset(), len);
            for r in 0..n {
                self.put_signal_word(r, dest.offset(), data, words::DONE, SignalOp::Set, seq)?;
            }
        } else {
            self.signal_word(root, words::READY, SignalOp::Add, 1)?;
            self.wait_word(words::DONE, seq, "a broadcast's data")?;
        }
        Ok(())
    }

    /// A broadcast of `len` bytes, at most one broadcast slot, through the members' scratch.
    fn broadcast_small(&self, dest: usize, source: usize, len: usize, root: Pe) -> Result<()> {
        let mut c = self.state.coll();
        c.broadcasts += 1;
        let k = c.broadcasts;
        // Small broadcast `k` goes through slot `k % SLOTS` and its word, which broadcast
        // `k - SLOTS` used last. Roots do not wait, so a member may still be copying out of
        // that slot when a fast root reaches broadcast `k`: the first broadcast of every window
        // of SLOTS begins with a barrier, after which every member has returned from every
        // earlier broadcast and every earlier root's puts are complete.
        const SLOTS: u64 = words::BROADCAST_SLOTS;
        if k > SLOTS && k % SLOTS == 1 {
            self.run_barrier(self.q(), "broadcast")?;
        }
        let (slot, word) = (
            self.broadcast_slot(k % SLOTS),
            words::BROADCAST + 8 * (k % SLOTS),
        );
        if self.my_pe() == root {
            let data = Bytes::Own(source, len);
            let n = self.n_pes();
            for r in (1..n).map(|i| (root + i) % n) {
                if len == 0 {
                    self.signal_word(r, word, SignalOp::Set, k)?;
                } else {
                    self.put_signal_word(r, slot, data, word, SignalOp::Set, k)?;
                }
            }
            self.copy_own(dest, source, len)
        } else {
            self.wait_word(word, k, "a broadcast's data")?;
            self.copy_own(dest, slot, len)
        }
    }

    /// Puts this PE's blocks into the members' memory at segment offset `dest` (each at its
    /// byte offset) after an entry barrier, and waits until every member's blocks have arrived
    /// here.
    fn exchange(&self, dest: usize, blocks: &[(u32, usize, Bytes<'_>)]) -> Result<()> {
        self.sync()?;
        let mut c = self.state.coll();
        for (i, (rank, off, data)) in blocks.iter().enumerate() {
            self.put_count(*rank, dest + off, *data, words::DATA)?;
            self.in_exchange(i);
        }
        c.data += u64::from(self.n_pes());
        self.wait_word(words::DATA, c.data, "the blocks of an exchange")
    }

    /// Concatenates every member's `source`, in rank order, into `dest` on every member
    /// (`shmem_fcollect`): `dest` has `n_pes * source.len()` elements.
    pub fn fcollect<T: Pod>(&self, dest: SymSlice<'_, T>, source: SymSlice<'_, T>) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        let n = self.n_pes();
        check_len("fcollect", "dest", dest.len(), n as usize * source.len())?;
        let data = Bytes::Own(source.offset(), source.byte_len());
        let at = self.my_pe() as usize * source.byte_len();
        if dest.byte_len() <= GATHER_HALF {
            let area = self.scratch_round(dest.byte_len(), (0..n).map(|r| (r, at, data)))?;
            return self.copy_own(dest.offset(), area, dest.byte_len());
        }
        let blocks: Vec<_> = (0..n).map(|r| (r, at, data)).collect();
        self.exchange(dest.offset(), &blocks)
    }

    /// Concatenates every member's `source` (of any length), in rank order, into `dest` on
    /// every member (`shmem_collect`); returns the number of elements gathered. `dest` must
    /// hold at least that many.
    pub fn collect<T: Pod>(&self, dest: SymSlice<'_, T>, source: SymSlice<'_, T>) -> Result<usize> {
        self.coll_prologue([dest.home, source.home])?;
        let sizes = self.allgather_scratch(&(source.len() as u64).to_le_bytes())?;
        let sizes: Vec<usize> = sizes
            .iter()
            .map(|b| u64::from_le_bytes(b[..8].try_into().expect("8 bytes")) as usize)
            .collect();
        let total: usize = sizes.iter().sum();
        if dest.len() < total {
            return Err(Error::InvalidParam(format!(
                "collect: dest has {} elements, the members contribute {total}",
                dest.len()
            )));
        }
        let before: usize = sizes[..self.my_pe() as usize].iter().sum();
        let data = Bytes::Own(source.offset(), source.byte_len());
        let sz = std::mem::size_of::<T>();
        let at = before * sz;
        if total * sz <= GATHER_HALF {
            let area = self.scratch_round(total * sz, (0..self.n_pes()).map(|r| (r, at, data)))?;
            self.copy_own(dest.offset(), area, total * sz)?;
            return Ok(total);
        }
        let blocks: Vec<_> = (0..self.n_pes()).map(|r| (r, at, data)).collect();
        self.exchange(dest.offset(), &blocks)?;
        Ok(total)
    }

    /// Sends block `j` of `source` to member `j`, which stores it as block `my_pe` of its
    /// `dest` (`shmem_alltoall`): both have `n_pes * nelems` elements.
    pub fn alltoall<T: Pod>(&self, dest: SymSlice<'_, T>, source: SymSlice<'_, T>) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        let n = self.n_pes() as usize;
        check_len("alltoall", "source", source.len(), dest.len())?;
        if !dest.len().is_multiple_of(n) {
            return Err(Error::InvalidParam(format!(
                "alltoall: {} elements do not split into {n} blocks",
                dest.len()
            )));
        }
        let block = dest.byte_len() / n;
        let part = |r: usize| Bytes::Own(source.offset() + r * block, block);
        let at = self.my_pe() as usize * block;
        if dest.byte_len() <= GATHER_HALF {
            let area =
                self.scratch_round(dest.byte_len(), (0..n).map(|r| (r as u32, at, part(r))))?;
            return self.copy_own(dest.offset(), area, dest.byte_len());
        }
        self.pull_blocks(dest.offset(), source.offset(), block)
    }

    /// Fault point `coll.in_exchange`: after the first of an exchange's blocks.
    #[inline(always)]
    fn in_exchange(&self, block: usize) {
        if block == 0 {
            crate::fault::point("coll.in_exchange", self.inst.my_pe(), self.inst.id());
        }
    }

    /// The large alltoall: once every member has entered, each pulls its block (`len` bytes
    /// at `source + rank * len` of every member's heap) into `dest` at the member's rank,
    /// starting with the next rank so that the members do not all read the same peer at once;
    /// a second sync keeps each source in place until every member has read it.
    ///
    /// Pulling touches one region of each peer's heap, its source. Pushing with a signal per
    /// block touched two (the destination and the team's sync words, far apart at the heap's
    /// start), and at 1,024 PEs each 2 MiB region of a peer that a PE reaches costs it a
    /// page-table page. A block that crosses a 2 MiB boundary would cost its member two per
    /// peer (4 MiB more at 1,024 PEs), so such a block is pushed to its member by every
    /// member instead, before the second sync.
    fn pull_blocks(&self, dest: usize, source: usize, len: usize) -> Result<()> {
        let n = self.n_pes();
        let me = self.my_pe();
        let block = |r: u32| source + r as usize * len;
        let crosses = |r: u32| len <= REGION && block(r) / REGION != (block(r) + len - 1) / REGION;
        self.sync()?;
        for (i, r) in (1..=n).map(|k| (me + k) % n).enumerate() {
            let to = shmem_backend::LocalMut::Segment {
                offset: dest + r as usize * len,
                len,
            };
            if r == me || !crosses(me) {
                // SAFETY: see the comment on the impl in `coll/mod.rs`: both ranges were
                // checked against views of the heap, and the member is a PE of the instance.
                unsafe { self.t().get(self.q(), self.pe_of(r), block(me), to) }?;
            }
            self.in_exchange(i);
        }
        let mut pushed = false;
        for r in (0..n).filter(|&r| r != me && crosses(r)) {
            let from = shmem_backend::Local::Segment {
                offset: block(r),
                len,
            };
            // SAFETY: as above.
            unsafe {
                self.t()
                    .put(self.q(), self.pe_of(r), dest + me as usize * len, from)
            }?;
            pushed = true;
        }
        if pushed {
            self.t().quiet(self.q())?;
        }
        self.sync()
    }

    /// Strided [`Team::alltoall`] (`shmem_alltoalls`): element `k` of the block for member `j`
    /// is `source[(j * nelems + k) * sst]`, stored at `dest[(my_pe * nelems + k) * dst]` there.
    pub fn alltoalls<T: Pod>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        let n = self.n_pes() as usize;
        if dst == 0 || sst == 0 {
            return Err(Error::InvalidParam(
                "alltoalls: strides must be at least 1".into(),
            ));
        }
        // Elements a side spans; `None` when that overflows (and so exceeds any view).
        let need = |stride: usize| {
            if nelems == 0 {
                Some(0)
            } else {
                (n.checked_mul(nelems)? - 1)
                    .checked_mul(stride)?
                    .checked_add(1)
            }
        };
        let fits = |len: usize, stride: usize| need(stride).is_some_and(|k| k <= len);
        if !fits(source.len(), sst) || !fits(dest.len(), dst) {
            let show =
                |stride| need(stride).map_or("more than usize::MAX".into(), |k| k.to_string());
            return Err(Error::InvalidParam(format!(
                "alltoalls: {nelems} elements per PE with strides {dst}/{sst} need {} destination and {} source elements",
                show(dst),
                show(sst)
            )));
        }
        let sz = std::mem::size_of::<T>();
        let all = shmem_backend::Local::Segment {
            offset: source.offset(),
            len: source.byte_len(),
        };
        self.sync()?;
        let mut c = self.state.coll();
        let me = self.my_pe() as usize;
        for j in 0..n {
            let src = Strided {
                first: j * nelems * sst * sz,
                stride: (sst * sz) as isize,
            };
            let d = Strided {
                first: dest.offset() + me * nelems * dst * sz,
                stride: (dst * sz) as isize,
            };
            // SAFETY: `need` checked both strided spans against the views, which lie in
            // the heap; the member is a PE of the instance.
            unsafe {
                self.t()
                    .iput(self.q(), self.pe_of(j as u32), d, all, src, sz, nelems)
            }?;
            self.t().fence(self.q())?;
            self.signal_word(j as u32, words::DATA, SignalOp::Add, 1)?;
        }
        c.data += n as u64;
        self.wait_word(words::DATA, c.data, "the blocks of an alltoalls")
    }
}
