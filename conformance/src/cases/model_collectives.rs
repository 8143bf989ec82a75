//! The collective phase of the model case's epochs (`model::`): reductions, broadcasts,
//! fcollects, alltoalls, team splits (with a reduction and a barrier on the new team),
//! lock-protected increments and puts through created contexts. Every PE draws the same
//! sequence from the seed and the epoch, and every result is checked against values computed
//! from the schedule, so nothing depends on how the PEs interleave. The calls come through
//! [`CollOps`]: the Rust API on a third instance ([`RustColls`]), or the exported C symbols
//! (`model_c_abi.rs`).

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shmem::{CtxOptions, Instance, SymBuf, SymSlice, TeamConfig};

use crate::{Failure, check};

/// Words per PE in a collective's blocks.
const WORDS: usize = 32;

/// One collective operation of the phase.
#[derive(Clone, Copy, Debug)]
enum Coll {
    Reduce {
        len: usize,
    },
    Broadcast {
        root: u32,
        len: usize,
    },
    Fcollect {
        len: usize,
    },
    Alltoall {
        len: usize,
    },
    /// Split off the PEs `start, start + 2, …`, reduce and barrier on the new team, destroy it.
    Split {
        start: u32,
    },
    /// Increment the counter on PE 0 under the lock.
    Lock,
    /// Put this PE's number to the next PE through a context of its own.
    Ctx,
}

/// The calls of the phase, on the buffers of the instance they run on: the Rust API's
/// ([`RustColls`]) or the exported C symbols' (`model_c_abi`). Each takes this PE's values and
/// returns what the collective left in its destination; [`Collectives`] checks it.
pub(crate) trait CollOps {
    /// This PE and the number of PEs.
    fn me_n(&self) -> (u32, u32);
    /// `mine` into the source, a sum reduction over every PE; the destination.
    fn reduce(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure>;
    /// `mine` into the source, a broadcast from `root`; the destination.
    fn broadcast(&mut self, root: u32, mine: &[u64]) -> Result<Vec<u64>, Failure>;
    /// `mine` into the source, an fcollect; the destination (every PE's block in order).
    fn fcollect(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure>;
    /// `mine` (one block per PE) into the source, an alltoall; the destination.
    fn alltoall(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure>;
    /// Splits off the `size` PEs `start, start + 2, …`; on a member, `mine` into the source, a
    /// sum reduction and a barrier on the new team, which is then destroyed. `None` on a PE
    /// outside the team, else the reduction's result.
    fn split_reduce(&mut self, start: u32, size: u32, mine: u64) -> Result<Option<u64>, Failure>;
    /// Under the lock: reads PE 0's counter, writes it back plus one, quiets.
    fn locked_increment(&mut self) -> Result<(), Failure>;
    /// Puts `value` into word `me` of the next PE's context words, through a context of its
    /// own, which is quieted and destroyed.
    fn ctx_put(&mut self, value: u64) -> Result<(), Failure>;
    /// `barrier_all`.
    fn barrier(&mut self) -> Result<(), Failure>;
    /// PE 0's counter.
    fn counter(&mut self) -> Result<u64, Failure>;
    /// This PE's context word `from`.
    fn ctx_word(&mut self, from: u32) -> Result<u64, Failure>;
}

/// The phase's running expectations, over the calls of one API.
pub(crate) struct Collectives<O: CollOps> {
    pub(crate) ops: O,
    /// Lock increments made so far, by all PEs.
    locked: u64,
    /// How many of each kind ran, by all PEs.
    pub(crate) splits: usize,
}

/// The value PE `pe` contributes at word `j` of operation `k` of the epoch.
fn val(seed: u64, epoch: usize, k: usize, pe: u32, j: usize) -> u64 {
    let mut h = seed ^ (epoch as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for x in [k as u64, u64::from(pe), j as u64] {
        h = (h ^ x).wrapping_mul(0x0100_0000_01b3).rotate_left(17);
    }
    h
}

/// The words per PE the phase's blocks need, for a [`CollOps`] to allocate.
pub(crate) const BLOCK_WORDS: usize = WORDS;

impl<O: CollOps> Collectives<O> {
    pub(crate) fn new(ops: O) -> Collectives<O> {
        Collectives {
            ops,
            locked: 0,
            splits: 0,
        }
    }

    /// The operations of epoch `epoch`, the same on every PE.
    fn schedule(&self, seed: u64, epoch: usize, count: usize) -> Vec<Coll> {
        let n = self.ops.me_n().1;
        let mut rng = SmallRng::seed_from_u64(seed ^ 0xc011_ec71_5e00 ^ epoch as u64);
        (0..count)
            .map(|_| {
                let len = rng.random_range(1..=WORDS);
                match rng.random_range(0..100) {
                    0..20 => Coll::Reduce { len },
                    20..35 => Coll::Broadcast {
                        root: rng.random_range(0..n),
                        len,
                    },
                    35..45 => Coll::Fcollect { len },
                    45..55 => Coll::Alltoall { len },
                    55..85 => Coll::Split {
                        start: rng.random_range(0..2.min(n)),
                    },
                    85..93 => Coll::Lock,
                    _ => Coll::Ctx,
                }
            })
            .collect()
    }

    /// Runs `count` operations of epoch `epoch` and checks each; returns the library calls
    /// this PE made.
    pub(crate) fn epoch(
        &mut self,
        seed: u64,
        epoch: usize,
        count: usize,
    ) -> Result<usize, Failure> {
        let (me, n) = self.ops.me_n();
        let mut calls = 0;
        let ops = self.schedule(seed, epoch, count);
        for (k, &op) in ops.iter().enumerate() {
            let v = |pe: u32, j: usize| val(seed, epoch, k, pe, j);
            let mine = |len: usize| (0..len).map(|j| v(me, j)).collect::<Vec<_>>();
            let (got, want): (Vec<u64>, Vec<u64>) = match op {
                Coll::Reduce { len } => (
                    self.ops.reduce(&mine(len))?,
                    (0..len)
                        .map(|j| (0..n).fold(0u64, |s, p| s.wrapping_add(v(p, j))))
                        .collect(),
                ),
                Coll::Broadcast { root, len } => (
                    self.ops.broadcast(root, &mine(len))?,
                    (0..len).map(|j| v(root, j)).collect(),
                ),
                Coll::Fcollect { len } => (
                    self.ops.fcollect(&mine(len))?,
                    (0..n)
                        .flat_map(|p| (0..len).map(move |j| v(p, j)))
                        .collect(),
                ),
                Coll::Alltoall { len } => {
                    // Block `t` of PE `p` goes to PE `t`: word `t * len + j` of `v(p, ·)`.
                    let at = me as usize * len;
                    (
                        self.ops.alltoall(&mine(len * n as usize))?,
                        (0..n)
                            .flat_map(|p| (0..len).map(move |j| v(p, at + j)))
                            .collect(),
                    )
                }
                Coll::Split { start } => {
                    let size = (n - start).div_ceil(2);
                    let got = self.ops.split_reduce(start, size, v(me, 0))?;
                    calls += 1;
                    self.splits += 1;
                    let member = me >= start && (me - start) % 2 == 0;
                    check!(
                        got.is_some() == member,
                        "epoch {epoch}: {op:?}: PE {me} membership"
                    );
                    if let Some(sum) = got {
                        let want = (start..n)
                            .step_by(2)
                            .fold(0u64, |s, p| s.wrapping_add(v(p, 0)));
                        check!(sum == want, "epoch {epoch}: {op:?}: reduce on the team");
                        calls += 4;
                    }
                    continue;
                }
                Coll::Lock => {
                    self.ops.locked_increment()?;
                    self.locked += u64::from(n);
                    calls += 5;
                    continue;
                }
                Coll::Ctx => {
                    self.ops.ctx_put(v(me, 0))?;
                    calls += 4;
                    continue;
                }
            };
            check!(got == want, "epoch {epoch}: {op:?}");
            calls += 2;
        }
        // Every PE's increments and context puts are complete before anyone checks them.
        self.ops.barrier()?;
        calls += 1;
        if me == 0 {
            let c = self.ops.counter()?;
            check!(
                c == self.locked,
                "epoch {epoch}: the locked counter is {c}, {} increments were made",
                self.locked
            );
        }
        let prev = (me + n - 1) % n;
        if let Some(k) = ops.iter().rposition(|o| matches!(o, Coll::Ctx)) {
            let got = self.ops.ctx_word(prev)?;
            let want = val(seed, epoch, k, prev, 0);
            check!(
                got == want,
                "epoch {epoch}: the last context put of PE {prev} left {got:#x}"
            );
        }
        // Nobody changes the checked words before every PE has checked them.
        self.ops.barrier()?;
        Ok(calls + 1)
    }
}

/// The phase through the Rust API, on a third instance.
pub(crate) struct RustColls {
    inst: Instance,
    src: SymBuf<u64>,
    dst: SymBuf<u64>,
    lock: SymBuf<i64>,
    counter: SymBuf<u64>,
    /// One word per PE: what each PE last put through a context.
    ctx_words: SymBuf<u64>,
}

impl RustColls {
    pub(crate) fn new(inst: Instance) -> Result<RustColls, Failure> {
        let n = inst.n_pes() as usize;
        Ok(RustColls {
            src: inst.calloc::<u64>(WORDS * n)?,
            dst: inst.calloc::<u64>(WORDS * n)?,
            lock: inst.calloc::<i64>(1)?,
            counter: inst.calloc::<u64>(1)?,
            ctx_words: inst.calloc::<u64>(n)?,
            inst,
        })
    }

    /// `mine` into the source; then `f` on the source and destination views of `mine.len()`
    /// and `out` words; the destination's words.
    fn run(
        &self,
        mine: &[u64],
        out: usize,
        f: impl FnOnce(SymSlice<'_, u64>, SymSlice<'_, u64>) -> shmem::Result<()>,
    ) -> Result<Vec<u64>, Failure> {
        let me = self.inst.my_pe();
        let (src, dst) = (self.src.as_slice(), self.dst.as_slice());
        src.slice(..mine.len()).put(mine, me)?;
        f(dst.slice(..out), src.slice(..mine.len()))?;
        Ok(dst.slice(..out).to_vec(me)?)
    }

    /// Frees the buffers and finalizes the instance.
    pub(crate) fn finish(self) -> Result<(), Failure> {
        for b in [self.src, self.dst, self.counter, self.ctx_words] {
            b.free()?;
        }
        self.lock.free()?;
        self.inst.finalize()?;
        Ok(())
    }
}

impl CollOps for RustColls {
    fn me_n(&self) -> (u32, u32) {
        (self.inst.my_pe(), self.inst.n_pes())
    }

    fn reduce(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let w = self.inst.team_world();
        self.run(mine, mine.len(), |d, s| w.sum_reduce(d, s))
    }

    fn broadcast(&mut self, root: u32, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let w = self.inst.team_world();
        self.run(mine, mine.len(), |d, s| w.broadcast(d, s, root))
    }

    fn fcollect(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let w = self.inst.team_world();
        let all = mine.len() * self.inst.n_pes() as usize;
        self.run(mine, all, |d, s| w.fcollect(d, s))
    }

    fn alltoall(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let w = self.inst.team_world();
        self.run(mine, mine.len(), |d, s| w.alltoall(d, s))
    }

    fn split_reduce(&mut self, start: u32, size: u32, mine: u64) -> Result<Option<u64>, Failure> {
        let world = self.inst.team_world();
        let team = world.split_strided(start as i32, 2, size as i32, TeamConfig::default())?;
        let Some(t) = team else {
            return Ok(None);
        };
        let got = self.run(&[mine], 1, |d, s| t.sum_reduce(d, s))?;
        t.barrier()?;
        t.destroy()?;
        Ok(Some(got[0]))
    }

    fn locked_increment(&mut self) -> Result<(), Failure> {
        let lock = self.lock.elem(0);
        let counter = self.counter.as_slice();
        lock.set_lock()?;
        let c = counter.g(0, 0)?;
        counter.p(0, c + 1, 0)?;
        self.inst.default_ctx().quiet()?;
        lock.clear_lock()?;
        Ok(())
    }

    fn ctx_put(&mut self, value: u64) -> Result<(), Failure> {
        let (me, n) = self.me_n();
        let c = self.inst.ctx_create(CtxOptions::NONE)?;
        self.ctx_words
            .as_slice()
            .on(&c)
            .slice(me as usize..me as usize + 1)
            .put(&[value], (me + 1) % n)?;
        c.quiet()?;
        c.destroy()?;
        Ok(())
    }

    fn barrier(&mut self) -> Result<(), Failure> {
        Ok(self.inst.barrier_all()?)
    }

    fn counter(&mut self) -> Result<u64, Failure> {
        Ok(self.counter.as_slice().g(0, 0)?)
    }

    fn ctx_word(&mut self, from: u32) -> Result<u64, Failure> {
        Ok(self
            .ctx_words
            .as_slice()
            .g(from as usize, self.inst.my_pe())?)
    }
}
