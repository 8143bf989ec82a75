//! The collective phase of the model case's epochs (`model::`), on a third instance: reductions,
//! broadcasts, fcollects, alltoalls, team splits (with a reduction and a barrier on the new
//! team), lock-protected increments and puts through created contexts. Every PE draws the same
//! sequence from the seed and the epoch, and every result is checked against values computed
//! from the schedule, so nothing depends on how the PEs interleave.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shmem::{CtxOptions, Instance, SymBuf, TeamConfig};

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

/// The third instance's buffers and the running expectations of the phase.
pub(crate) struct Collectives {
    inst: Instance,
    src: SymBuf<u64>,
    dst: SymBuf<u64>,
    lock: SymBuf<i64>,
    counter: SymBuf<u64>,
    /// One word per PE: what each PE last put through a context.
    ctx_words: SymBuf<u64>,
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

impl Collectives {
    pub(crate) fn new(inst: Instance) -> Result<Collectives, Failure> {
        let n = inst.n_pes() as usize;
        Ok(Collectives {
            src: inst.calloc::<u64>(WORDS * n)?,
            dst: inst.calloc::<u64>(WORDS * n)?,
            lock: inst.calloc::<i64>(1)?,
            counter: inst.calloc::<u64>(1)?,
            ctx_words: inst.calloc::<u64>(n)?,
            inst,
            locked: 0,
            splits: 0,
        })
    }

    /// The operations of epoch `epoch`, the same on every PE.
    fn schedule(&self, seed: u64, epoch: usize, count: usize) -> Vec<Coll> {
        let n = self.inst.n_pes();
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
        let (me, n) = (self.inst.my_pe(), self.inst.n_pes());
        let world = self.inst.team_world();
        let mut calls = 0;
        let ops = self.schedule(seed, epoch, count);
        for (k, &op) in ops.iter().enumerate() {
            let v = |pe: u32, j: usize| val(seed, epoch, k, pe, j);
            let (src, dst) = (self.src.as_slice(), self.dst.as_slice());
            match op {
                Coll::Reduce { len } => {
                    src.slice(..len)
                        .put(&(0..len).map(|j| v(me, j)).collect::<Vec<_>>(), me)?;
                    world.sum_reduce(dst.slice(..len), src.slice(..len))?;
                    let want: Vec<u64> = (0..len)
                        .map(|j| (0..n).fold(0u64, |s, p| s.wrapping_add(v(p, j))))
                        .collect();
                    check!(
                        dst.slice(..len).to_vec(me)? == want,
                        "epoch {epoch}: {op:?}"
                    );
                    calls += 2;
                }
                Coll::Broadcast { root, len } => {
                    src.slice(..len)
                        .put(&(0..len).map(|j| v(me, j)).collect::<Vec<_>>(), me)?;
                    world.broadcast(dst.slice(..len), src.slice(..len), root)?;
                    let want: Vec<u64> = (0..len).map(|j| v(root, j)).collect();
                    check!(
                        dst.slice(..len).to_vec(me)? == want,
                        "epoch {epoch}: {op:?}"
                    );
                    calls += 2;
                }
                Coll::Fcollect { len } => {
                    src.slice(..len)
                        .put(&(0..len).map(|j| v(me, j)).collect::<Vec<_>>(), me)?;
                    let all = len * n as usize;
                    world.fcollect(dst.slice(..all), src.slice(..len))?;
                    let want: Vec<u64> = (0..n)
                        .flat_map(|p| (0..len).map(move |j| v(p, j)))
                        .collect();
                    check!(
                        dst.slice(..all).to_vec(me)? == want,
                        "epoch {epoch}: {op:?}"
                    );
                    calls += 2;
                }
                Coll::Alltoall { len } => {
                    let all = len * n as usize;
                    // Block `t` of PE `p` goes to PE `t`: word `t * len + j` of `v(p, ·)`.
                    src.slice(..all)
                        .put(&(0..all).map(|j| v(me, j)).collect::<Vec<_>>(), me)?;
                    world.alltoall(dst.slice(..all), src.slice(..all))?;
                    let mine = me as usize * len;
                    let want: Vec<u64> = (0..n)
                        .flat_map(|p| (0..len).map(move |j| v(p, mine + j)))
                        .collect();
                    check!(
                        dst.slice(..all).to_vec(me)? == want,
                        "epoch {epoch}: {op:?}"
                    );
                    calls += 2;
                }
                Coll::Split { start } => {
                    let size = (n - start).div_ceil(2);
                    let team =
                        world.split_strided(start as i32, 2, size as i32, TeamConfig::default())?;
                    calls += 1;
                    self.splits += 1;
                    let member = me >= start && (me - start) % 2 == 0;
                    check!(
                        team.is_some() == member,
                        "epoch {epoch}: {op:?}: PE {me} membership"
                    );
                    if let Some(t) = team {
                        src.slice(..1).put(&[v(me, 0)], me)?;
                        t.sum_reduce(dst.slice(..1), src.slice(..1))?;
                        let want = (start..n)
                            .step_by(2)
                            .fold(0u64, |s, p| s.wrapping_add(v(p, 0)));
                        check!(
                            dst.slice(..1).to_vec(me)? == [want],
                            "epoch {epoch}: {op:?}: reduce on the team"
                        );
                        t.barrier()?;
                        t.destroy()?;
                        calls += 4;
                    }
                }
                Coll::Lock => {
                    let lock = self.lock.elem(0);
                    let counter = self.counter.as_slice();
                    lock.set_lock()?;
                    let c = counter.g(0, 0)?;
                    counter.p(0, c + 1, 0)?;
                    self.inst.default_ctx().quiet()?;
                    lock.clear_lock()?;
                    self.locked += u64::from(n);
                    calls += 5;
                }
                Coll::Ctx => {
                    let c = self.inst.ctx_create(CtxOptions::NONE)?;
                    let next = (me + 1) % n;
                    self.ctx_words
                        .as_slice()
                        .on(&c)
                        .slice(me as usize..me as usize + 1)
                        .put(&[v(me, 0)], next)?;
                    c.quiet()?;
                    c.destroy()?;
                    calls += 4;
                }
            }
        }
        // Every PE's increments and context puts are complete before anyone checks them.
        self.inst.barrier_all()?;
        calls += 1;
        if me == 0 {
            let c = self.counter.as_slice().g(0, 0)?;
            check!(
                c == self.locked,
                "epoch {epoch}: the locked counter is {c}, {} increments were made",
                self.locked
            );
        }
        let prev = (me + n - 1) % n;
        if let Some(k) = ops.iter().rposition(|o| matches!(o, Coll::Ctx)) {
            let got = self.ctx_words.as_slice().g(prev as usize, me)?;
            let want = val(seed, epoch, k, prev, 0);
            check!(
                got == want,
                "epoch {epoch}: the last context put of PE {prev} left {got:#x}"
            );
        }
        // Nobody changes the checked words before every PE has checked them.
        self.inst.barrier_all()?;
        Ok(calls + 1)
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
