//! `model::` — a model-based randomized test: barrier-separated epochs of random RMA, atomics
//! and signals from every PE, on two instances at once, checked word by word against a plain
//! sequential model that every PE computes from the same schedule.
//!
//! # How it works
//!
//! Every PE holds, on instance 0 and on instance 1 (all PEs, made with
//! `attrs_for`), the same six regions of words: data
//! (`u64`), atomic words of three types (`u64`, `u32`, `i64`) and signal words (`u64`, `u32`).
//! The regions sit at the same heap offsets on both instances and are modelled separately, so
//! any interference between the heaps shows as a mismatch.
//!
//! Each epoch, every PE derives the same random schedule from the seed and the epoch number: the
//! role of every word, and the program of every PE. Every PE then simulates all programs, one PE
//! after the other, on its copy of the model. That is valid because the schedule only contains
//! operations whose outcome does not depend on how the PEs interleave:
//! - **Data words** belong to at most one writer per epoch (ownership by blocks of
//!   16 words, drawn per epoch). The owner writes them with `put`, `p`, `iput`,
//!   `put_nbi`, the data part of `put_signal` and the C ABIs' byte-level `putmem` on a heap
//!   offset (`shmem_capi::raw`, the layer under `shmem_putmem` and `aclshmem_putmem`; `getmem`
//!   likewise reads), as often as it likes, in program order: when it
//!   touches a word again that an earlier write of the same fence epoch may still be carrying,
//!   the schedule puts a `fence` between the two (the scope's quiet or the barrier also clear
//!   it). OpenSHMEM orders nothing else, and the simulator's strict mode reorders the rest.
//! - **Frozen words** (a quarter of the data blocks, a tenth of the atomic words) are written by
//!   nobody during the epoch. Only they are read within the epoch (`get`, `g`, `iget`,
//!   `get_nbi`, `atomic_fetch`, a failing `atomic_compare_swap`), and every value read is checked
//!   against the model at once (or when the `nbi` scope ends).
//! - **Atomic words** have one role per epoch: *add* (add/inc/fetch_add/fetch_inc with full-width
//!   wrapping values, from every PE), *ticket* (only fetch_add/fetch_inc, whose returned values
//!   are gathered after the epoch: sorted, they must form one chain from the epoch's start value,
//!   each step the addend of one operation), *or*, *and* or *xor* (one operator per word, so the
//!   result is order-independent; fetched values must lie between the start and final values),
//!   *frozen*, or *owned* by one PE (swap, successful compare-and-swap, set, fetch, with exact
//!   expected results, under the fence rule; after a non-blocking fetching atomic on its word
//!   the owner quiets instead, since a fence does not order fetched values). A few hot
//!   words per instance take most of the traffic, so every PE hits them in every epoch.
//! - **Signal words**: per-writer words (only PE `w` SETs word `w` on any PE, with `put_signal`
//!   or `signal_op`, under the same fence rule as data) and shared counters that every PE ADDs
//!   to. And a ring: on instance 0 every PE `put_signal`s a payload to its right neighbour, on
//!   instance 1 to its left one, then later `signal_wait_until`s its own ring word and checks the
//!   payload the signal announced. Every PE issues both ring signals before either of its waits,
//!   and nothing else in an epoch waits, so no deadlock is possible.
//!
//! After each epoch every PE writes the values its ticket operations returned to a log, both
//! instances run `barrier_all`, and every PE reads back every word of every PE's regions on both
//! instances with `get` and compares them with the model, and checks every ticket chain. A
//! second pair of barriers separates the checks from the next epoch's writes.
//!
//! Then, on a third instance, every PE runs the epoch's collective phase
//! (`model_collectives`): reductions, broadcasts, fcollects, alltoalls, team splits with a
//! reduction and a barrier on the new team, lock-protected increments and puts through created
//! contexts, each checked against values the schedule determines. The phase makes more than a
//! tenth of all calls, and team splits more than one in a hundred (both checked).
//!
//! At ten points of the run every PE samples its resident memory and its open descriptors:
//! after the first sample, memory stays within 1 MiB and the descriptor count does not change.
//!
//! The executor reaches the words through [`Words`] and runs the epochs on a [`Target`]: here
//! the Rust API, and in `model_c_abi.rs` the exported symbols of `libshmem.so`, with the same
//! schedule, model and checks.
//!
//! The fast tier issues at least 100 000 operations (library calls, fences not counted) in
//! 40 epochs, the full tier 500 000 in 200, whatever the PE count; `SHMEM_MODEL_OPS` sets
//! another number (a soak: 500 000 in each of the strict and the relaxed case is 10⁶).
//!
//! # The seed
//!
//! `SHMEM_MODEL_SEED` (decimal, or hexadecimal with `0x`) chooses the seed; `random` draws a new
//! one; unset, the seed is a fixed default, so CI is deterministic. PE 0's choice is broadcast,
//! every PE prints it to stderr, and every failure names it with the command that replays it:
//! `SHMEM_MODEL_SEED=<seed> cargo test -p shmem-conformance --test sim -- model::`. The seed
//! fixes the schedule; the order in which the simulator's strict mode completes non-blocking
//! operations is its own random choice, fixed too when `SHMEM_SIM_STRICT_SEED` is set.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shmem::{AmoBitwise, AmoStandard, Cmp, Instance, NbiScope, SignalOp, SymBuf, SymElem};

use crate::cases::model_collectives::{Collectives, RustColls};
use crate::cases::multi_instance::{attrs_for, open_fds, rss_kib};
use crate::{Case, Ctx, Failure, Outcome, check};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "model::random_epochs_against_a_sequential_model",
            random_epochs,
        )
        .pes(&[8])
        .full_pes(&[4, 5])
        .timeout(300),
        // The same schedule with operations completing as soon as issued: half of a soak
        // (`SHMEM_MODEL_OPS`) runs in each mode.
        Case::new(
            "model::random_epochs_against_a_sequential_model_without_strict_mode",
            random_epochs,
        )
        .pes(&[8])
        .timeout(300)
        .relaxed(),
    ]
}

/// The variable that chooses the seed.
const SEED_VAR: &str = "SHMEM_MODEL_SEED";
/// The seed when [`SEED_VAR`] is unset.
const DEFAULT_SEED: u64 = 0x5eed_c0de_2024;
/// The variable that sets the operations of a run (a soak: see `docs/reliability.md`).
const OPS_VAR: &str = "SHMEM_MODEL_OPS";
/// The operations of the fast tier, over all PEs and epochs (at least this many are issued).
const FAST_OPS: usize = 100_000;
/// The operations of the full tier.
const FULL_OPS: usize = 500_000;
/// Data words per PE and instance.
const DATA_WORDS: usize = 2048;
/// Data words per ownership block.
const BLOCK: usize = 16;
/// Data blocks per PE and instance.
const BLOCKS: usize = DATA_WORDS / BLOCK;
/// Atomic words per PE, instance and type.
const AMO_WORDS: usize = 16;
/// Shared signal counters per PE, instance and width.
const SIG_COUNTERS: usize = 4;
/// Words of the ring payload.
const RING_DATA: usize = 4;
/// Hot atomic words per instance.
const HOT: usize = 8;

/// The word regions of each PE's heap, on each instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Region {
    /// `u64` data words: puts and gets.
    Data = 0,
    /// `u64` atomic words.
    A64 = 1,
    /// `u32` atomic words.
    A32 = 2,
    /// `i64` atomic words.
    Ai64 = 3,
    /// `u64` signal words: one per writer, then [`SIG_COUNTERS`] counters, the ring word and the
    /// ring payload.
    Sig = 4,
    /// `u32` signal words: one per writer, then [`SIG_COUNTERS`] counters.
    Sig32 = 5,
}

const REGIONS: [Region; 6] = [
    Region::Data,
    Region::A64,
    Region::A32,
    Region::Ai64,
    Region::Sig,
    Region::Sig32,
];
const AMO_REGIONS: [Region; 3] = [Region::A64, Region::A32, Region::Ai64];

impl Region {
    fn name(self) -> &'static str {
        match self {
            Region::Data => "data (u64)",
            Region::A64 => "atomic u64",
            Region::A32 => "atomic u32",
            Region::Ai64 => "atomic i64",
            Region::Sig => "signal u64",
            Region::Sig32 => "signal u32",
        }
    }

    /// The bits a word of the region holds.
    fn mask(self) -> u64 {
        match self {
            Region::A32 | Region::Sig32 => u64::from(u32::MAX),
            _ => u64::MAX,
        }
    }

    /// Words per PE with `n` PEs.
    pub(super) fn len(self, n: usize) -> usize {
        match self {
            Region::Data => DATA_WORDS,
            Region::A64 | Region::A32 | Region::Ai64 => AMO_WORDS,
            Region::Sig => n + SIG_COUNTERS + 1 + RING_DATA,
            Region::Sig32 => n + SIG_COUNTERS,
        }
    }

    /// The position among [`AMO_REGIONS`].
    fn amo_index(self) -> usize {
        self as usize - 1
    }
}

/// The index of ring word in [`Region::Sig`].
fn ring_word(n: usize) -> usize {
    n + SIG_COUNTERS
}

/// The index of the first ring payload word in [`Region::Sig`].
fn ring_data(n: usize) -> usize {
    n + SIG_COUNTERS + 1
}

/// The PE that PE `pe` ring-signals on instance `inst`: the right neighbour on 0, the left on 1.
fn ring_target(inst: u8, pe: u32, n: usize) -> u32 {
    let n = n as u32;
    if inst == 0 {
        (pe + 1) % n
    } else {
        (pe + n - 1) % n
    }
}

/// The PE whose ring signal PE `pe` waits for on instance `inst`.
fn ring_source(inst: u8, pe: u32, n: usize) -> u32 {
    ring_target(1 - inst, pe, n)
}

/// One word of the model: a word of `region` on PE `pe` of instance `inst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Loc {
    pub(super) inst: u8,
    pub(super) region: Region,
    pub(super) pe: u32,
    pub(super) idx: usize,
}

impl Loc {
    fn new(inst: u8, region: Region, pe: u32, idx: usize) -> Loc {
        Loc {
            inst,
            region,
            pe,
            idx,
        }
    }
}

/// The last operation the model applied to a word.
#[derive(Clone, Copy, Debug)]
struct Touch {
    epoch: usize,
    pe: u32,
    what: &'static str,
}

/// The expected contents of every word of every PE on both instances.
#[derive(Clone, Debug)]
struct Model {
    n: usize,
    base: [usize; 6],
    per_pe: usize,
    words: Vec<u64>,
    last: Vec<Option<Touch>>,
}

impl Model {
    /// All words zero, as `calloc` leaves them.
    fn new(n: usize) -> Model {
        let mut base = [0; 6];
        let mut at = 0;
        for r in REGIONS {
            base[r as usize] = at;
            at += r.len(n);
        }
        let total = 2 * n * at;
        Model {
            n,
            base,
            per_pe: at,
            words: vec![0; total],
            last: vec![None; total],
        }
    }

    fn at(&self, l: Loc) -> usize {
        debug_assert!(l.idx < l.region.len(self.n), "{l:?}");
        (usize::from(l.inst) * self.n + l.pe as usize) * self.per_pe
            + self.base[l.region as usize]
            + l.idx
    }

    fn get(&self, l: Loc) -> u64 {
        self.words[self.at(l)]
    }

    fn write(&mut self, l: Loc, v: u64, t: Touch) {
        let i = self.at(l);
        self.words[i] = v & l.region.mask();
        self.last[i] = Some(t);
    }

    /// The words of `region` on PE `pe` of instance `inst`.
    fn region(&self, inst: u8, pe: u32, region: Region) -> &[u64] {
        let s = self.at(Loc::new(inst, region, pe, 0));
        &self.words[s..s + region.len(self.n)]
    }

    /// Who last changed the word, for failure messages.
    fn history(&self, l: Loc) -> String {
        match self.last[self.at(l)] {
            Some(t) => format!(
                "last changed in the model by PE {} with {} in epoch {}",
                t.pe, t.what, t.epoch
            ),
            None => "never written since calloc".into(),
        }
    }
}

/// An atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Amo {
    Add,
    Inc,
    FetchAdd,
    FetchInc,
    Or,
    FetchOr,
    And,
    FetchAnd,
    Xor,
    FetchXor,
    Fetch,
    Swap,
    CompareSwap,
    Set,
}

impl Amo {
    pub(super) fn name(self, nbi: bool) -> &'static str {
        match (self, nbi) {
            (Amo::Add, _) => "atomic_add",
            (Amo::Inc, _) => "atomic_inc",
            (Amo::FetchAdd, false) => "atomic_fetch_add",
            (Amo::FetchAdd, true) => "atomic_fetch_add_nbi",
            (Amo::FetchInc, false) => "atomic_fetch_inc",
            (Amo::FetchInc, true) => "atomic_fetch_inc_nbi",
            (Amo::Or, _) => "atomic_or",
            (Amo::FetchOr, false) => "atomic_fetch_or",
            (Amo::FetchOr, true) => "atomic_fetch_or_nbi",
            (Amo::And, _) => "atomic_and",
            (Amo::FetchAnd, false) => "atomic_fetch_and",
            (Amo::FetchAnd, true) => "atomic_fetch_and_nbi",
            (Amo::Xor, _) => "atomic_xor",
            (Amo::FetchXor, false) => "atomic_fetch_xor",
            (Amo::FetchXor, true) => "atomic_fetch_xor_nbi",
            (Amo::Fetch, false) => "atomic_fetch",
            (Amo::Fetch, true) => "atomic_fetch_nbi",
            (Amo::Swap, false) => "atomic_swap",
            (Amo::Swap, true) => "atomic_swap_nbi",
            (Amo::CompareSwap, false) => "atomic_compare_swap",
            (Amo::CompareSwap, true) => "atomic_compare_swap_nbi",
            (Amo::Set, _) => "atomic_set",
        }
    }

    /// The word after the operation (before masking to the width).
    fn apply(self, old: u64, val: u64, cond: u64) -> u64 {
        match self {
            Amo::Add | Amo::Inc | Amo::FetchAdd | Amo::FetchInc => old.wrapping_add(val),
            Amo::Or | Amo::FetchOr => old | val,
            Amo::And | Amo::FetchAnd => old & val,
            Amo::Xor | Amo::FetchXor => old ^ val,
            Amo::Fetch => old,
            Amo::Swap | Amo::Set => val,
            Amo::CompareSwap if old == cond => val,
            Amo::CompareSwap => old,
        }
    }
}

/// What a fetched value must be.
#[derive(Clone, Copy, Debug)]
pub(super) enum Expect {
    /// Anything (a fetch from a word every PE adds to or xors).
    Nothing,
    /// Exactly this.
    Exact(u64),
    /// Recorded in slot `.0` of the PE's ticket log, and checked as a chain after the epoch.
    Ticket(usize),
    /// A superset of the start value's bits, a subset of the final value's (fetch_or).
    OrRange,
    /// A subset of the start value's bits, a superset of the final value's (fetch_and).
    AndRange,
}

/// How a contiguous put is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PutHow {
    Blocking,
    P,
    Nbi,
    /// The C ABIs' byte-level call on a heap offset (`shmem_capi::raw::putmem`, which
    /// `shmem_putmem` and `aclshmem_putmem` run once they have the address's offset).
    Bytes,
}

/// How a contiguous get is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GetHow {
    Blocking,
    G,
    Nbi,
    /// The C ABIs' byte-level call (`shmem_capi::raw::getmem`).
    Bytes,
}

/// One operation of a PE's program. Data indices are word indices in [`Region::Data`].
#[derive(Debug)]
pub(super) enum Op {
    /// `fence` on the block's instance.
    Fence,
    /// `quiet` on the block's instance.
    Quiet,
    /// `vals` into data words `idx..` of `pe`.
    Put {
        pe: u32,
        idx: usize,
        vals: Vec<u64>,
        how: PutHow,
    },
    /// Strided put: `src[i * src_stride]` into data word `idx + i * dst_stride` of `pe`.
    Iput {
        pe: u32,
        idx: usize,
        dst_stride: usize,
        src_stride: usize,
        src: Vec<u64>,
        nelems: usize,
    },
    /// Data words `idx..idx + expect.len()` of `pe`, which must equal `expect`.
    Get {
        pe: u32,
        idx: usize,
        expect: Vec<u64>,
        how: GetHow,
    },
    /// Strided get of data words `idx + i * stride` of `pe`, which must equal `expect[i]`.
    Iget {
        pe: u32,
        idx: usize,
        stride: usize,
        expect: Vec<u64>,
    },
    /// An atomic operation on `loc`.
    Amo {
        loc: Loc,
        amo: Amo,
        val: u64,
        cond: u64,
        nbi: bool,
        expect: Expect,
    },
    /// `vals` into data words `idx..` of `pe`, then `op` with `value` on the signal word `sig`.
    PutSignal {
        pe: u32,
        idx: usize,
        vals: Vec<u64>,
        sig: Loc,
        op: SignalOp,
        value: u64,
        nbi: bool,
    },
    /// `signal_op` with `op` and `value` on `sig`.
    Signal { sig: Loc, op: SignalOp, value: u64 },
    /// The ring: `vals` into `pe`'s ring payload, then SET its ring word to `value`.
    RingSignal { pe: u32, vals: Vec<u64>, value: u64 },
    /// The ring: wait until this PE's ring word equals `value`, then read the payload that
    /// `from` sent.
    RingWait {
        from: u32,
        value: u64,
        expect: Vec<u64>,
    },
}

impl Op {
    /// The library calls that issue it (a fence counts as none: it is not an operation).
    fn calls(&self) -> usize {
        match self {
            Op::Fence | Op::Quiet => 0,
            // signal_wait_until, signal_fetch and the get of the payload.
            Op::RingWait { .. } => 3,
            _ => 1,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Op::Fence => "fence",
            Op::Quiet => "quiet",
            Op::Put { how, .. } => match how {
                PutHow::Blocking => "put",
                PutHow::P => "p",
                PutHow::Nbi => "put_nbi",
                PutHow::Bytes => "putmem",
            },
            Op::Iput { .. } => "iput",
            Op::Get { how, .. } => match how {
                GetHow::Blocking => "get",
                GetHow::G => "g",
                GetHow::Nbi => "get_nbi",
                GetHow::Bytes => "getmem",
            },
            Op::Iget { .. } => "iget",
            Op::Amo { amo, nbi, .. } => amo.name(*nbi),
            Op::PutSignal { nbi: false, .. } => "put_signal",
            Op::PutSignal { nbi: true, .. } => "put_signal_nbi",
            Op::Signal { .. } => "signal_op",
            Op::RingSignal { .. } => "put_signal (ring)",
            Op::RingWait { .. } => "signal_wait_until (ring)",
        }
    }
}

/// Operations on one instance: blocking ones, or an `nbi` scope (which may also hold blocking
/// ones) that quiets when it ends.
#[derive(Debug)]
struct Block {
    inst: u8,
    nbi: bool,
    ops: Vec<Op>,
}

/// One PE's program for one epoch.
#[derive(Debug, Default)]
struct Program {
    blocks: Vec<Block>,
    /// The word and addend of each ticket operation, in program order (the log's slots).
    tickets: Vec<(Loc, u64)>,
}

impl Program {
    fn ops(&self) -> impl Iterator<Item = &Op> {
        self.blocks.iter().flat_map(|b| b.ops.iter())
    }
}

/// What must separate an operation that may still be in flight from the next one on the same
/// word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    Fence,
    Quiet,
}

/// The role of an atomic word for one epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Add,
    Ticket,
    Or,
    And,
    Xor,
    Frozen,
    Owned(u32),
}

/// What every PE of an epoch shares: the roles of the words.
#[derive(Debug)]
struct Plan {
    n: usize,
    epoch: usize,
    /// The owner of each data block, `None` when the block is frozen.
    owners: Vec<Option<u32>>,
    /// The frozen data blocks of each instance: `(pe, block)`.
    frozen: [Vec<(u32, usize)>; 2],
    /// The role of each atomic word.
    roles: Vec<Role>,
    /// The hot atomic words of each instance.
    hot: [Vec<Loc>; 2],
    /// The hot signal counter of each instance and width: `(pe, counter)`.
    hot_counter: [[(u32, usize); 2]; 2],
    /// The ring payload each PE sends on each instance.
    ring: [Vec<Vec<u64>>; 2],
}

impl Plan {
    fn block_at(&self, inst: u8, pe: u32, block: usize) -> usize {
        (usize::from(inst) * self.n + pe as usize) * BLOCKS + block
    }

    fn role_at(&self, l: Loc) -> usize {
        ((usize::from(l.inst) * 3 + l.region.amo_index()) * self.n + l.pe as usize) * AMO_WORDS
            + l.idx
    }

    fn role(&self, l: Loc) -> Role {
        self.roles[self.role_at(l)]
    }

    /// Draws the roles of epoch `epoch`.
    fn draw(rng: &mut SmallRng, n: usize, epoch: usize) -> Plan {
        let mut owners = Vec::with_capacity(2 * n * BLOCKS);
        let mut frozen = [Vec::new(), Vec::new()];
        for inst in 0..2u8 {
            for pe in 0..n as u32 {
                for b in 0..BLOCKS {
                    if rng.random_range(0..4) == 0 {
                        owners.push(None);
                        frozen[usize::from(inst)].push((pe, b));
                    } else {
                        owners.push(Some(rng.random_range(0..n as u32)));
                    }
                }
            }
        }
        let mut roles = Vec::with_capacity(2 * 3 * n * AMO_WORDS);
        for _ in 0..2 * 3 * n * AMO_WORDS {
            roles.push(match rng.random_range(0..20) {
                0..=5 => Role::Add,
                6..=8 => Role::Ticket,
                9..=10 => Role::Or,
                11..=12 => Role::And,
                13..=14 => Role::Xor,
                15..=16 => Role::Frozen,
                _ => Role::Owned(rng.random_range(0..n as u32)),
            });
        }
        let mut plan = Plan {
            n,
            epoch,
            owners,
            frozen,
            roles,
            hot: [Vec::new(), Vec::new()],
            hot_counter: [[(0, 0); 2]; 2],
            ring: [Vec::new(), Vec::new()],
        };
        // The hot words: two of each shared role, one of each bitwise operator.
        let hot_roles = [
            Role::Ticket,
            Role::Ticket,
            Role::Add,
            Role::Add,
            Role::Or,
            Role::And,
            Role::Xor,
            Role::Add,
        ];
        for inst in 0..2u8 {
            while plan.hot[usize::from(inst)].len() < HOT {
                let l = Loc::new(
                    inst,
                    AMO_REGIONS[rng.random_range(0..3)],
                    rng.random_range(0..n as u32),
                    rng.random_range(0..AMO_WORDS),
                );
                if plan.hot[usize::from(inst)].contains(&l) {
                    continue;
                }
                let at = plan.role_at(l);
                plan.roles[at] = hot_roles[plan.hot[usize::from(inst)].len()];
                plan.hot[usize::from(inst)].push(l);
            }
            for w in 0..2 {
                plan.hot_counter[usize::from(inst)][w] = (
                    rng.random_range(0..n as u32),
                    rng.random_range(0..SIG_COUNTERS),
                );
            }
            plan.ring[usize::from(inst)] = (0..n)
                .map(|_| (0..RING_DATA).map(|_| rng.random()).collect())
                .collect();
        }
        plan
    }
}

/// Builds one PE's program for an epoch and applies it to the model.
struct PeGen<'a> {
    plan: &'a Plan,
    model: &'a mut Model,
    rng: &'a mut SmallRng,
    me: u32,
    /// The data blocks this PE owns, per instance: `(pe, block)`.
    owned_blocks: [Vec<(u32, usize)>; 2],
    /// The atomic words this PE owns, per instance.
    owned_amo: [Vec<Loc>; 2],
    /// Words this PE wrote (or read without waiting for the result) since the last fence or
    /// quiet of each instance, and what must come before the next operation on them.
    pending: [HashMap<Loc, Need>; 2],
    /// The block this PE wrote last, per instance (written again more often, to exercise the
    /// fence rule).
    last_block: [Option<(u32, usize)>; 2],
    tickets: Vec<(Loc, u64)>,
}

impl<'a> PeGen<'a> {
    fn new(plan: &'a Plan, model: &'a mut Model, rng: &'a mut SmallRng, me: u32) -> PeGen<'a> {
        let n = plan.n as u32;
        let mut owned_blocks = [Vec::new(), Vec::new()];
        let mut owned_amo = [Vec::new(), Vec::new()];
        for inst in 0..2u8 {
            for pe in 0..n {
                for b in 0..BLOCKS {
                    if plan.owners[plan.block_at(inst, pe, b)] == Some(me) {
                        owned_blocks[usize::from(inst)].push((pe, b));
                    }
                }
                for r in AMO_REGIONS {
                    for idx in 0..AMO_WORDS {
                        let l = Loc::new(inst, r, pe, idx);
                        if plan.role(l) == Role::Owned(me) {
                            owned_amo[usize::from(inst)].push(l);
                        }
                    }
                }
            }
        }
        PeGen {
            plan,
            model,
            rng,
            me,
            owned_blocks,
            owned_amo,
            pending: [HashMap::new(), HashMap::new()],
            last_block: [None, None],
            tickets: Vec::new(),
        }
    }

    fn touch(&self, what: &'static str) -> Touch {
        Touch {
            epoch: self.plan.epoch,
            pe: self.me,
            what,
        }
    }

    /// Puts a fence (or a quiet, if one of them needs it or `quiet` is set) ahead of an
    /// operation on `locs` if one of them may still be in flight.
    fn order(&mut self, inst: u8, locs: &[Loc], ops: &mut Vec<Op>, quiet: bool) {
        let pending = &mut self.pending[usize::from(inst)];
        let Some(need) = locs.iter().filter_map(|l| pending.get(l).copied()).max() else {
            return;
        };
        if quiet || need == Need::Quiet {
            ops.push(Op::Quiet);
            pending.clear();
        } else {
            ops.push(Op::Fence);
            pending.retain(|_, n| *n == Need::Quiet);
        }
    }

    /// Records that `locs` may be in flight until the next fence (or quiet, as `need` says).
    fn mark(&mut self, inst: u8, locs: &[Loc], need: Need) {
        let pending = &mut self.pending[usize::from(inst)];
        for l in locs {
            let n = pending.entry(*l).or_insert(need);
            *n = (*n).max(need);
        }
    }

    fn pick_owned_block(&mut self, inst: u8) -> Option<(u32, usize)> {
        let i = usize::from(inst);
        if let Some(b) = self.last_block[i]
            && self.rng.random_bool(0.35)
        {
            return Some(b);
        }
        let owned = &self.owned_blocks[i];
        if owned.is_empty() {
            return None;
        }
        let b = owned[self.rng.random_range(0..owned.len())];
        self.last_block[i] = Some(b);
        Some(b)
    }

    fn pick_frozen_block(&mut self, inst: u8) -> Option<(u32, usize)> {
        let frozen = &self.plan.frozen[usize::from(inst)];
        (!frozen.is_empty()).then(|| frozen[self.rng.random_range(0..frozen.len())])
    }

    /// A random `(start, len)` inside a block, at most `max` long.
    fn span(&mut self, max: usize) -> (usize, usize) {
        let start = self.rng.random_range(0..BLOCK);
        let len = self.rng.random_range(1..=(BLOCK - start).min(max));
        (start, len)
    }

    fn data_locs(inst: u8, pe: u32, idx: usize, len: usize, stride: usize) -> Vec<Loc> {
        (0..len)
            .map(|k| Loc::new(inst, Region::Data, pe, idx + k * stride))
            .collect()
    }

    fn put(&mut self, inst: u8, how: PutHow, ops: &mut Vec<Op>) -> bool {
        let Some((pe, b)) = self.pick_owned_block(inst) else {
            return false;
        };
        let (start, len) = if how == PutHow::P {
            (self.rng.random_range(0..BLOCK), 1)
        } else {
            self.span(BLOCK)
        };
        let idx = b * BLOCK + start;
        let vals: Vec<u64> = (0..len).map(|_| self.rng.random()).collect();
        let locs = Self::data_locs(inst, pe, idx, len, 1);
        self.order(inst, &locs, ops, false);
        let op = Op::Put { pe, idx, vals, how };
        let t = self.touch(op.name());
        if let Op::Put { vals, .. } = &op {
            for (l, v) in locs.iter().zip(vals) {
                self.model.write(*l, *v, t);
            }
        }
        self.mark(inst, &locs, Need::Fence);
        ops.push(op);
        true
    }

    fn iput(&mut self, inst: u8, ops: &mut Vec<Op>) -> bool {
        let Some((pe, b)) = self.pick_owned_block(inst) else {
            return false;
        };
        let start = self.rng.random_range(0..BLOCK);
        let dst_stride = self.rng.random_range(1..=4);
        let nelems = self
            .rng
            .random_range(1..=(BLOCK - 1 - start) / dst_stride + 1);
        let src_stride = self.rng.random_range(1..=3);
        let src: Vec<u64> = (0..(nelems - 1) * src_stride + 1)
            .map(|_| self.rng.random())
            .collect();
        let idx = b * BLOCK + start;
        let locs = Self::data_locs(inst, pe, idx, nelems, dst_stride);
        self.order(inst, &locs, ops, false);
        let t = self.touch("iput");
        for (k, l) in locs.iter().enumerate() {
            self.model.write(*l, src[k * src_stride], t);
        }
        self.mark(inst, &locs, Need::Fence);
        ops.push(Op::Iput {
            pe,
            idx,
            dst_stride,
            src_stride,
            src,
            nelems,
        });
        true
    }

    fn get(&mut self, inst: u8, how: GetHow, ops: &mut Vec<Op>) -> bool {
        let Some((pe, b)) = self.pick_frozen_block(inst) else {
            return false;
        };
        let (start, len) = if how == GetHow::G {
            (self.rng.random_range(0..BLOCK), 1)
        } else {
            self.span(BLOCK)
        };
        let idx = b * BLOCK + start;
        let expect = Self::data_locs(inst, pe, idx, len, 1)
            .iter()
            .map(|l| self.model.get(*l))
            .collect();
        ops.push(Op::Get {
            pe,
            idx,
            expect,
            how,
        });
        true
    }

    fn iget(&mut self, inst: u8, ops: &mut Vec<Op>) -> bool {
        let Some((pe, b)) = self.pick_frozen_block(inst) else {
            return false;
        };
        let start = self.rng.random_range(0..BLOCK);
        let stride = self.rng.random_range(1..=4);
        let nelems = self.rng.random_range(1..=(BLOCK - 1 - start) / stride + 1);
        let idx = b * BLOCK + start;
        let expect = Self::data_locs(inst, pe, idx, nelems, stride)
            .iter()
            .map(|l| self.model.get(*l))
            .collect();
        ops.push(Op::Iget {
            pe,
            idx,
            stride,
            expect,
        });
        true
    }

    /// The target of an atomic: mostly a hot word, else one this PE owns, else any word this PE
    /// may touch.
    fn pick_amo(&mut self, inst: u8) -> Loc {
        let i = usize::from(inst);
        let x = self.rng.random_range(0..100);
        if x < 55 {
            return self.plan.hot[i][self.rng.random_range(0..HOT)];
        }
        if x < 75 && !self.owned_amo[i].is_empty() {
            return self.owned_amo[i][self.rng.random_range(0..self.owned_amo[i].len())];
        }
        for _ in 0..8 {
            let l = Loc::new(
                inst,
                AMO_REGIONS[self.rng.random_range(0..3)],
                self.rng.random_range(0..self.plan.n as u32),
                self.rng.random_range(0..AMO_WORDS),
            );
            match self.plan.role(l) {
                Role::Owned(p) if p != self.me => continue,
                _ => return l,
            }
        }
        self.plan.hot[i][0]
    }

    fn amo(&mut self, inst: u8, nbi_ok: bool, ops: &mut Vec<Op>) {
        let loc = self.pick_amo(inst);
        let mask = loc.region.mask();
        let nbi = nbi_ok && self.rng.random_bool(0.5);
        let r = self.rng.random_range(0..4);
        let cur = self.model.get(loc);
        // Bits: sparse for or, dense for and, so the words do not saturate at once.
        let sparse = self.rng.random::<u64>() & self.rng.random::<u64>() & self.rng.random::<u64>();
        let (amo, val, cond, expect) = match self.plan.role(loc) {
            Role::Add => {
                let v = if self.rng.random_bool(0.5) {
                    self.rng.random::<u64>() & mask
                } else {
                    self.rng.random_range(1..100)
                };
                match (nbi, r) {
                    (true, 0 | 1) | (false, 2) => (Amo::FetchAdd, v, 0, Expect::Nothing),
                    (true, _) | (false, 3) => (Amo::FetchInc, 1, 0, Expect::Nothing),
                    (false, 0) => (Amo::Add, v, 0, Expect::Nothing),
                    (false, _) => (Amo::Inc, 1, 0, Expect::Nothing),
                }
            }
            Role::Ticket => {
                let slot = self.tickets.len();
                let (amo, v) = if r < 2 {
                    (Amo::FetchAdd, self.rng.random_range(1..=16))
                } else {
                    (Amo::FetchInc, 1)
                };
                self.tickets.push((loc, v));
                (amo, v, 0, Expect::Ticket(slot))
            }
            Role::Or if nbi || r < 2 => (Amo::FetchOr, sparse & mask, 0, Expect::OrRange),
            Role::Or => (Amo::Or, sparse & mask, 0, Expect::Nothing),
            Role::And if nbi || r < 2 => (Amo::FetchAnd, !sparse & mask, 0, Expect::AndRange),
            Role::And => (Amo::And, !sparse & mask, 0, Expect::Nothing),
            Role::Xor => {
                let v = self.rng.random::<u64>() & mask;
                if nbi || r < 2 {
                    (Amo::FetchXor, v, 0, Expect::Nothing)
                } else {
                    (Amo::Xor, v, 0, Expect::Nothing)
                }
            }
            Role::Frozen => {
                if r < 2 {
                    (Amo::Fetch, 0, 0, Expect::Exact(cur))
                } else {
                    // A compare-and-swap that fails: it must return the value and change nothing.
                    let cond = cur.wrapping_add(self.rng.random_range(1..1000)) & mask;
                    let v = self.rng.random::<u64>() & mask;
                    (Amo::CompareSwap, v, cond, Expect::Exact(cur))
                }
            }
            Role::Owned(p) => {
                debug_assert_eq!(p, self.me);
                let v = self.rng.random::<u64>() & mask;
                let op = match (nbi, r) {
                    (_, 0) => (Amo::Swap, v, 0, Expect::Exact(cur)),
                    (_, 1) => (Amo::CompareSwap, v, cur, Expect::Exact(cur)),
                    (true, _) | (false, 2) => (Amo::Fetch, 0, 0, Expect::Exact(cur)),
                    (false, _) => (Amo::Set, v, 0, Expect::Nothing),
                };
                // A fence orders a blocking atomic (atomic_fetch included) behind the updates
                // before it.
                self.order(inst, &[loc], ops, false);
                op
            }
        };
        // A blocking fetching atomic has completed when it returns; anything else on an owned
        // word may still be in flight. Fence does not order the values a non-blocking atomic
        // fetches (OpenSHMEM 1.6), so after one only a quiet lets the word be touched again.
        if matches!(self.plan.role(loc), Role::Owned(_)) {
            if nbi {
                self.mark(inst, &[loc], Need::Quiet);
            } else if amo == Amo::Set {
                self.mark(inst, &[loc], Need::Fence);
            }
        }
        let new = amo.apply(cur, val, cond) & mask;
        if new != cur || !matches!(amo, Amo::Fetch | Amo::CompareSwap) {
            let t = self.touch(amo.name(nbi));
            self.model.write(loc, new, t);
        }
        ops.push(Op::Amo {
            loc,
            amo,
            val,
            cond,
            nbi,
            expect,
        });
    }

    /// A signal word for this PE to update on `pe` (`None`: a random PE, or the hot counter):
    /// its own SET word, or a shared ADD counter. Returns the word, the op and the value.
    fn pick_signal(&mut self, inst: u8, pe: Option<u32>) -> (Loc, SignalOp, u64) {
        let n = self.plan.n;
        let wide = self.rng.random_bool(0.5);
        let region = if wide { Region::Sig } else { Region::Sig32 };
        if self.rng.random_bool(0.45) {
            let pe = pe.unwrap_or_else(|| self.rng.random_range(0..n as u32));
            let v = self.rng.random::<u64>() & region.mask();
            (
                Loc::new(inst, region, pe, self.me as usize),
                SignalOp::Set,
                v,
            )
        } else {
            let (pe, k) = match pe {
                Some(pe) => (pe, self.rng.random_range(0..SIG_COUNTERS)),
                None if self.rng.random_bool(0.6) => {
                    self.plan.hot_counter[usize::from(inst)][usize::from(!wide)]
                }
                None => (
                    self.rng.random_range(0..n as u32),
                    self.rng.random_range(0..SIG_COUNTERS),
                ),
            };
            let v = self.rng.random_range(1..=1000);
            (Loc::new(inst, region, pe, n + k), SignalOp::Add, v)
        }
    }

    fn apply_signal(&mut self, sig: Loc, op: SignalOp, value: u64, what: &'static str) {
        let t = self.touch(what);
        let new = match op {
            SignalOp::Set => value,
            SignalOp::Add => self.model.get(sig).wrapping_add(value),
        };
        self.model.write(sig, new, t);
    }

    fn put_signal(&mut self, inst: u8, nbi: bool, ops: &mut Vec<Op>) -> bool {
        let Some((pe, b)) = self.pick_owned_block(inst) else {
            return false;
        };
        let (start, len) = self.span(8);
        let idx = b * BLOCK + start;
        let vals: Vec<u64> = (0..len).map(|_| self.rng.random()).collect();
        let (sig, op, value) = self.pick_signal(inst, Some(pe));
        let mut locs = Self::data_locs(inst, pe, idx, len, 1);
        if op == SignalOp::Set {
            locs.push(sig);
        }
        self.order(inst, &locs, ops, false);
        let op = Op::PutSignal {
            pe,
            idx,
            vals,
            sig,
            op,
            value,
            nbi,
        };
        let name = op.name();
        let t = self.touch(name);
        if let Op::PutSignal {
            vals,
            sig,
            op,
            value,
            ..
        } = &op
        {
            for (l, v) in locs.iter().zip(vals) {
                self.model.write(*l, *v, t);
            }
            self.apply_signal(*sig, *op, *value, name);
        }
        self.mark(inst, &locs, Need::Fence);
        ops.push(op);
        true
    }

    fn signal(&mut self, inst: u8, ops: &mut Vec<Op>) {
        let (sig, op, value) = self.pick_signal(inst, None);
        if op == SignalOp::Set {
            self.order(inst, &[sig], ops, false);
            self.mark(inst, &[sig], Need::Fence);
        }
        self.apply_signal(sig, op, value, "signal_op");
        ops.push(Op::Signal { sig, op, value });
    }

    /// One random operation (maybe preceded by a fence) into `ops`.
    fn op(&mut self, inst: u8, nbi: bool, ops: &mut Vec<Op>) {
        let w = self.rng.random_range(0..100);
        let done = if nbi && w < 67 {
            match w {
                0..20 => self.put(inst, PutHow::Nbi, ops),
                20..32 => self.get(inst, GetHow::Nbi, ops),
                32..57 => {
                    self.amo(inst, true, ops);
                    true
                }
                _ => self.put_signal(inst, true, ops),
            }
        } else {
            match self.rng.random_range(0..100) {
                0..6 => self.put(inst, PutHow::Blocking, ops),
                6..10 => self.put(inst, PutHow::Bytes, ops),
                10..17 => self.put(inst, PutHow::P, ops),
                17..25 => self.iput(inst, ops),
                25..29 => self.get(inst, GetHow::Blocking, ops),
                29..33 => self.get(inst, GetHow::Bytes, ops),
                33..38 => self.get(inst, GetHow::G, ops),
                38..43 => self.iget(inst, ops),
                43..78 => {
                    self.amo(inst, false, ops);
                    true
                }
                78..89 => self.put_signal(inst, false, ops),
                _ => {
                    self.signal(inst, ops);
                    true
                }
            }
        };
        if !done {
            self.amo(inst, nbi, ops);
        }
    }

    /// Blocks of random operations until they make at least `calls` calls.
    fn blocks(&mut self, calls: usize) -> Vec<Block> {
        let mut out = Vec::new();
        let mut made = 0;
        while made < calls {
            let inst = self.rng.random_range(0..2u8);
            let nbi = self.rng.random_bool(0.5);
            let len = self.rng.random_range(1..=12);
            let mut ops = Vec::new();
            for _ in 0..len {
                self.op(inst, nbi, &mut ops);
            }
            if nbi {
                // The scope's quiet completes everything of this instance.
                self.pending[usize::from(inst)].clear();
            }
            made += ops.iter().map(Op::calls).sum::<usize>();
            out.push(Block { inst, nbi, ops });
        }
        out
    }

    /// This PE's program: a first half with both ring signals somewhere in it, a second half
    /// with both ring waits. Every PE signals before it waits, so the waits cannot deadlock.
    fn program(mut self, calls: usize) -> Program {
        let n = self.plan.n;
        let value = self.plan.epoch as u64 + 1;
        let half = calls.saturating_sub(8) / 2;
        let mut first = self.blocks(half);
        let mut second = self.blocks(half);
        for inst in 0..2u8 {
            let i = usize::from(inst);
            let to = ring_target(inst, self.me, n);
            let vals = self.plan.ring[i][self.me as usize].clone();
            let t = self.touch("put_signal (ring)");
            for (k, v) in vals.iter().enumerate() {
                self.model
                    .write(Loc::new(inst, Region::Sig, to, ring_data(n) + k), *v, t);
            }
            self.model
                .write(Loc::new(inst, Region::Sig, to, ring_word(n)), value, t);
            let at = self.rng.random_range(0..=first.len());
            first.insert(
                at,
                Block {
                    inst,
                    nbi: false,
                    ops: vec![Op::RingSignal {
                        pe: to,
                        vals,
                        value,
                    }],
                },
            );
            let from = ring_source(inst, self.me, n);
            let at = self.rng.random_range(0..=second.len());
            second.insert(
                at,
                Block {
                    inst,
                    nbi: false,
                    ops: vec![Op::RingWait {
                        from,
                        value,
                        expect: self.plan.ring[i][from as usize].clone(),
                    }],
                },
            );
        }
        first.append(&mut second);
        Program {
            blocks: first,
            tickets: self.tickets,
        }
    }
}

/// The seed of the run's schedule for epoch `epoch`.
fn epoch_seed(seed: u64, epoch: usize) -> u64 {
    // splitmix64 of the pair, so neighbouring seeds give unrelated schedules.
    let mut z = seed ^ (epoch as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Every PE's program for epoch `epoch`, and the model after it.
fn schedule(seed: u64, epoch: usize, n: usize, calls: usize, model: &mut Model) -> Vec<Program> {
    let mut rng = SmallRng::seed_from_u64(epoch_seed(seed, epoch));
    let plan = Plan::draw(&mut rng, n, epoch);
    (0..n as u32)
        .map(|pe| PeGen::new(&plan, model, &mut rng, pe).program(calls))
        .collect()
}

/// The regions of one PE on one instance.
/// The words of one instance's six regions, and the calls that reach them: the Rust API's
/// ([`Heap`]) or the exported C symbols' (`model_c_abi`). The executor ([`Exec`]) and the
/// checks are the same for both.
pub(super) trait Words {
    /// The heap offset of a word (for messages).
    fn offset(&self, region: Region, idx: usize) -> usize;
    /// PE `pe`'s words of `region`, read with one get.
    fn read(&self, region: Region, pe: u32) -> Result<Vec<u64>, Failure>;
    /// `fence`.
    fn fence(&self) -> Outcome;
    /// `quiet`.
    fn quiet(&self) -> Outcome;
    /// A blocking put of `vals` into data words `idx..` of `pe` (never [`PutHow::Nbi`]).
    fn put(&self, how: PutHow, idx: usize, vals: &[u64], pe: u32) -> Outcome;
    /// `src[i * src_stride]` into data word `idx + i * dst_stride` of `pe`, `nelems` of them.
    fn iput(
        &self,
        idx: usize,
        dst_stride: usize,
        src: &[u64],
        src_stride: usize,
        nelems: usize,
        pe: u32,
    ) -> Outcome;
    /// A blocking get of `len` words at `at` (data or signal words) of `pe` (never
    /// [`GetHow::Nbi`]).
    fn get(&self, how: GetHow, at: At, len: usize, pe: u32) -> Result<Vec<u64>, Failure>;
    /// Data words `idx + i * stride` of `pe`, `len` of them.
    fn iget(&self, idx: usize, stride: usize, len: usize, pe: u32) -> Result<Vec<u64>, Failure>;
    /// A blocking atomic on word `at` of `pe`: what it fetched, if it fetches.
    fn amo(&self, at: At, amo: Amo, val: u64, cond: u64, pe: u32) -> Result<Option<u64>, Failure>;
    /// `vals` into the 64-bit words at `dst` of `pe`, then `op` with `value` on the signal word
    /// `sig` of `pe`.
    fn put_signal(
        &self,
        dst: At,
        vals: &[u64],
        sig: At,
        value: u64,
        op: SignalOp,
        pe: u32,
    ) -> Outcome;
    /// `signal_op` with `op` and `value` on the signal word `sig` of `pe`.
    fn signal(&self, sig: At, value: u64, op: SignalOp, pe: u32) -> Outcome;
    /// Waits until this PE's 64-bit signal word `idx` equals `value`: what the wait returned,
    /// and what a `signal_fetch` then read.
    fn signal_wait(&self, idx: usize, value: u64) -> Result<(u64, u64), Failure>;
    /// Runs an `nbi` block: its non-blocking operations here, the others with `blocking`, then
    /// quiets. Returns what the non-blocking gets read (concatenated) and what the non-blocking
    /// fetching atomics fetched, each in program order.
    fn nbi(
        &self,
        ops: &[Op],
        blocking: &mut dyn FnMut(&Op) -> Outcome,
    ) -> Result<(Vec<u64>, Vec<u64>), Failure>;
}

/// A word: its region and index.
pub(super) type At = (Region, usize);

/// The regions of one instance, reached through the Rust API.
struct Heap {
    inst: Instance,
    data: SymBuf<u64>,
    a64: SymBuf<u64>,
    a32: SymBuf<u32>,
    ai64: SymBuf<i64>,
    sig: SymBuf<u64>,
    sig32: SymBuf<u32>,
}

impl Heap {
    fn new(inst: Instance, n: usize) -> Result<Heap, Failure> {
        Ok(Heap {
            data: inst.calloc(Region::Data.len(n))?,
            a64: inst.calloc(Region::A64.len(n))?,
            a32: inst.calloc(Region::A32.len(n))?,
            ai64: inst.calloc(Region::Ai64.len(n))?,
            sig: inst.calloc(Region::Sig.len(n))?,
            sig32: inst.calloc(Region::Sig32.len(n))?,
            inst,
        })
    }

    /// The buffer of a region of 64-bit unsigned words.
    fn u64s(&self, region: Region) -> &SymBuf<u64> {
        match region {
            Region::Data => &self.data,
            Region::A64 => &self.a64,
            Region::Sig => &self.sig,
            other => unreachable!("{other:?} does not hold u64 words"),
        }
    }

    fn free(self) -> Outcome {
        self.data.free()?;
        self.a64.free()?;
        self.a32.free()?;
        self.ai64.free()?;
        self.sig.free()?;
        self.sig32.free()?;
        Ok(())
    }
}

impl Words for Heap {
    fn offset(&self, region: Region, idx: usize) -> usize {
        match region {
            Region::Data => self.data.offset() + idx * 8,
            Region::A64 => self.a64.offset() + idx * 8,
            Region::A32 => self.a32.offset() + idx * 4,
            Region::Ai64 => self.ai64.offset() + idx * 8,
            Region::Sig => self.sig.offset() + idx * 8,
            Region::Sig32 => self.sig32.offset() + idx * 4,
        }
    }

    fn read(&self, region: Region, pe: u32) -> Result<Vec<u64>, Failure> {
        Ok(match region {
            Region::Data => self.data.as_slice().to_vec(pe)?,
            Region::A64 => self.a64.as_slice().to_vec(pe)?,
            Region::A32 => widen(self.a32.as_slice().to_vec(pe)?),
            Region::Ai64 => widen(self.ai64.as_slice().to_vec(pe)?),
            Region::Sig => self.sig.as_slice().to_vec(pe)?,
            Region::Sig32 => widen(self.sig32.as_slice().to_vec(pe)?),
        })
    }

    fn fence(&self) -> Outcome {
        Ok(self.inst.fence()?)
    }

    fn quiet(&self) -> Outcome {
        Ok(self.inst.quiet()?)
    }

    fn put(&self, how: PutHow, idx: usize, vals: &[u64], pe: u32) -> Outcome {
        match how {
            PutHow::Blocking => self.data.slice(idx..idx + vals.len()).put(vals, pe)?,
            PutHow::P => self.data.as_slice().p(idx, vals[0], pe)?,
            PutHow::Nbi => unreachable!("put_nbi runs in a scope"),
            PutHow::Bytes => {
                let at = self.data.offset() + idx * 8;
                let bytes = bytemuck::cast_slice(vals);
                shmem_capi::raw::putmem(self.inst.default_ctx(), at, bytes, pe)?
            }
        }
        Ok(())
    }

    fn iput(
        &self,
        idx: usize,
        dst_stride: usize,
        src: &[u64],
        src_stride: usize,
        nelems: usize,
        pe: u32,
    ) -> Outcome {
        let (dst_stride, src_stride) = (dst_stride as isize, src_stride as isize);
        Ok(self
            .data
            .slice(idx..)
            .iput(dst_stride, src, src_stride, nelems, pe)?)
    }

    fn get(
        &self,
        how: GetHow,
        (region, idx): At,
        len: usize,
        pe: u32,
    ) -> Result<Vec<u64>, Failure> {
        let words = self.u64s(region);
        Ok(match how {
            GetHow::Blocking => words.slice(idx..idx + len).to_vec(pe)?,
            GetHow::G => vec![words.as_slice().g(idx, pe)?],
            GetHow::Nbi => unreachable!("get_nbi runs in a scope"),
            GetHow::Bytes => {
                let mut got = vec![0u64; len];
                let at = words.offset() + idx * 8;
                let bytes = bytemuck::cast_slice_mut(&mut got);
                shmem_capi::raw::getmem(self.inst.default_ctx(), at, bytes, pe)?;
                got
            }
        })
    }

    fn iget(&self, idx: usize, stride: usize, len: usize, pe: u32) -> Result<Vec<u64>, Failure> {
        let mut got = vec![0u64; len];
        self.data
            .slice(idx..)
            .iget(stride as isize, &mut got, 1, len, pe)?;
        Ok(got)
    }

    fn amo(
        &self,
        (region, idx): At,
        amo: Amo,
        val: u64,
        cond: u64,
        pe: u32,
    ) -> Result<Option<u64>, Failure> {
        Ok(match region {
            Region::A64 => amo_blocking(self.a64.elem(idx), amo, val, cond, pe)?,
            Region::A32 => amo_blocking(self.a32.elem(idx), amo, val, cond, pe)?,
            Region::Ai64 => amo_blocking(self.ai64.elem(idx), amo, val, cond, pe)?,
            other => unreachable!("no atomics on {other:?}"),
        })
    }

    fn put_signal(
        &self,
        (region, idx): At,
        vals: &[u64],
        sig: At,
        value: u64,
        op: SignalOp,
        pe: u32,
    ) -> Outcome {
        let dst = self.u64s(region).slice(idx..idx + vals.len());
        match sig.0 {
            Region::Sig => dst.put_signal(vals, self.sig.elem(sig.1), value, op, pe)?,
            _ => dst.put_signal(vals, self.sig32.elem(sig.1), value as u32, op, pe)?,
        }
        Ok(())
    }

    fn signal(&self, (region, idx): At, value: u64, op: SignalOp, pe: u32) -> Outcome {
        match region {
            Region::Sig => self.sig.elem(idx).signal_op(value, op, pe)?,
            _ => self.sig32.elem(idx).signal_op(value as u32, op, pe)?,
        }
        Ok(())
    }

    fn signal_wait(&self, idx: usize, value: u64) -> Result<(u64, u64), Failure> {
        let word = self.sig.elem(idx);
        let seen = word.signal_wait_until(Cmp::Eq, value)?;
        Ok((seen, word.signal_fetch()?))
    }

    fn nbi(
        &self,
        ops: &[Op],
        blocking: &mut dyn FnMut(&Op) -> Outcome,
    ) -> Result<(Vec<u64>, Vec<u64>), Failure> {
        let (mut gets, mut f64s, mut f32s, mut fi64s) = (0, 0, 0, 0);
        for op in ops {
            match op {
                Op::Get {
                    expect,
                    how: GetHow::Nbi,
                    ..
                } => gets += expect.len(),
                Op::Amo { loc, nbi: true, .. } => match loc.region {
                    Region::A64 => f64s += 1,
                    Region::A32 => f32s += 1,
                    _ => fi64s += 1,
                },
                _ => {}
            }
        }
        let mut gbuf = vec![0u64; gets];
        let mut b64 = vec![0u64; f64s];
        let mut b32 = vec![0u32; f32s];
        let mut bi64 = vec![0i64; fi64s];
        {
            let (mut g, mut s64, mut s32, mut si64) =
                (&mut gbuf[..], &mut b64[..], &mut b32[..], &mut bi64[..]);
            self.inst.nbi(|s| -> Outcome {
                for op in ops {
                    match op {
                        Op::Put {
                            pe,
                            idx,
                            vals,
                            how: PutHow::Nbi,
                        } => s.put_nbi(self.data.slice(*idx..*idx + vals.len()), vals, *pe)?,
                        Op::Get {
                            pe,
                            idx,
                            expect,
                            how: GetHow::Nbi,
                        } => {
                            let len = expect.len();
                            s.get_nbi(self.data.slice(*idx..*idx + len), take(&mut g, len), *pe)?;
                        }
                        Op::Amo {
                            loc,
                            amo,
                            val,
                            cond,
                            nbi: true,
                            ..
                        } => {
                            let (a, v, c, pe, i) = (*amo, *val, *cond, loc.pe, loc.idx);
                            match loc.region {
                                Region::A64 => {
                                    let slot = &mut take(&mut s64, 1)[0];
                                    amo_nbi(s, self.a64.elem(i), slot, a, v, c, pe)?
                                }
                                Region::A32 => {
                                    let slot = &mut take(&mut s32, 1)[0];
                                    amo_nbi(s, self.a32.elem(i), slot, a, v, c, pe)?
                                }
                                _ => {
                                    let slot = &mut take(&mut si64, 1)[0];
                                    amo_nbi(s, self.ai64.elem(i), slot, a, v, c, pe)?
                                }
                            }
                        }
                        Op::PutSignal {
                            pe,
                            idx,
                            vals,
                            sig,
                            op,
                            value,
                            nbi: true,
                        } => {
                            let dst = self.data.slice(*idx..*idx + vals.len());
                            let (v, op, pe) = (*value, *op, *pe);
                            match sig.region {
                                Region::Sig => {
                                    s.put_signal_nbi(dst, vals, self.sig.elem(sig.idx), v, op, pe)?
                                }
                                _ => s.put_signal_nbi(
                                    dst,
                                    vals,
                                    self.sig32.elem(sig.idx),
                                    v as u32,
                                    op,
                                    pe,
                                )?,
                            }
                        }
                        other => blocking(other)?,
                    }
                }
                Ok(())
            })??;
        }
        // The fetched values in program order, from the three typed buffers.
        let (mut k64, mut k32, mut ki64) = (0, 0, 0);
        let mut fetched = Vec::with_capacity(f64s + f32s + fi64s);
        for op in ops {
            if let Op::Amo { loc, nbi: true, .. } = op {
                fetched.push(match loc.region {
                    Region::A64 => {
                        k64 += 1;
                        b64[k64 - 1]
                    }
                    Region::A32 => {
                        k32 += 1;
                        u64::from(b32[k32 - 1])
                    }
                    _ => {
                        ki64 += 1;
                        bi64[ki64 - 1] as u64
                    }
                });
            }
        }
        Ok((gbuf, fetched))
    }
}

fn widen<T: Word>(v: Vec<T>) -> Vec<u64> {
    v.into_iter().map(Word::to_u64).collect()
}

/// The atomic word types, as the model's `u64`s.
pub(super) trait Word: AmoStandard + AmoBitwise {
    fn from_u64(v: u64) -> Self;
    fn to_u64(self) -> u64;
}

impl Word for u64 {
    fn from_u64(v: u64) -> u64 {
        v
    }
    fn to_u64(self) -> u64 {
        self
    }
}

impl Word for u32 {
    fn from_u64(v: u64) -> u32 {
        v as u32
    }
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl Word for i64 {
    fn from_u64(v: u64) -> i64 {
        v as i64
    }
    fn to_u64(self) -> u64 {
        self as u64
    }
}

/// Issues a blocking atomic; returns what it fetched, if it fetches.
fn amo_blocking<T: Word>(
    e: SymElem<'_, T>,
    amo: Amo,
    val: u64,
    cond: u64,
    pe: u32,
) -> shmem::Result<Option<u64>> {
    let v = T::from_u64(val);
    let fetched = match amo {
        Amo::Add => return e.atomic_add(v, pe).map(|()| None),
        Amo::Inc => return e.atomic_inc(pe).map(|()| None),
        Amo::Or => return e.atomic_or(v, pe).map(|()| None),
        Amo::And => return e.atomic_and(v, pe).map(|()| None),
        Amo::Xor => return e.atomic_xor(v, pe).map(|()| None),
        Amo::Set => return e.atomic_set(v, pe).map(|()| None),
        Amo::FetchAdd => e.atomic_fetch_add(v, pe)?,
        Amo::FetchInc => e.atomic_fetch_inc(pe)?,
        Amo::FetchOr => e.atomic_fetch_or(v, pe)?,
        Amo::FetchAnd => e.atomic_fetch_and(v, pe)?,
        Amo::FetchXor => e.atomic_fetch_xor(v, pe)?,
        Amo::Fetch => e.atomic_fetch(pe)?,
        Amo::Swap => e.atomic_swap(v, pe)?,
        Amo::CompareSwap => e.atomic_compare_swap(T::from_u64(cond), v, pe)?,
    };
    Ok(Some(fetched.to_u64()))
}

/// Issues a non-blocking fetching atomic into `slot`.
fn amo_nbi<'env, T: Word>(
    s: &NbiScope<'env>,
    e: SymElem<'_, T>,
    slot: &'env mut T,
    amo: Amo,
    val: u64,
    cond: u64,
    pe: u32,
) -> shmem::Result<()> {
    let v = T::from_u64(val);
    match amo {
        Amo::FetchAdd => s.atomic_fetch_add_nbi(e, slot, v, pe),
        Amo::FetchInc => s.atomic_fetch_inc_nbi(e, slot, pe),
        Amo::FetchOr => s.atomic_fetch_or_nbi(e, slot, v, pe),
        Amo::FetchAnd => s.atomic_fetch_and_nbi(e, slot, v, pe),
        Amo::FetchXor => s.atomic_fetch_xor_nbi(e, slot, v, pe),
        Amo::Fetch => s.atomic_fetch_nbi(e, slot, pe),
        Amo::Swap => s.atomic_swap_nbi(e, slot, v, pe),
        Amo::CompareSwap => s.atomic_compare_swap_nbi(e, slot, T::from_u64(cond), v, pe),
        other => unreachable!("the schedule never issues {other:?} without blocking"),
    }
}

/// Takes the first `len` elements off a buffer that is handed out piece by piece.
fn take<'b, T>(rest: &mut &'b mut [T], len: usize) -> &'b mut [T] {
    let (head, tail) = std::mem::take(rest).split_at_mut(len);
    *rest = tail;
    head
}

/// Runs one PE's program and checks what it reads.
struct Exec<'a, W: Words> {
    seed: u64,
    epoch: usize,
    me: u32,
    n: usize,
    heaps: &'a [W; 2],
    /// The model when the epoch began.
    prev: &'a Model,
    /// The model when the epoch ends.
    next: &'a Model,
}

impl<W: Words> Exec<'_, W> {
    fn fail(&self, what: impl Display) -> Failure {
        Failure(format!(
            "model mismatch with seed {seed} in epoch {epoch}, seen by PE {me} of {n}: {what}\n\
             replay with: {SEED_VAR}={seed} cargo test -p shmem-conformance --test sim -- model::",
            seed = self.seed,
            epoch = self.epoch,
            me = self.me,
            n = self.n,
        ))
    }

    fn place(&self, l: Loc) -> String {
        format!(
            "instance {}, PE {}'s {} word {} (heap offset {:#x})",
            l.inst,
            l.pe,
            l.region.name(),
            l.idx,
            self.heaps[usize::from(l.inst)].offset(l.region, l.idx)
        )
    }

    /// Checks words read within the epoch (frozen words: the model at the start holds them).
    fn check_read(&self, op: &str, locs: &[Loc], got: &[u64], expect: &[u64]) -> Outcome {
        for ((l, g), e) in locs.iter().zip(got).zip(expect) {
            if g != e {
                return Err(self.fail(format_args!(
                    "{op} of {} returned {g:#x}, the model expects {e:#x} (nobody writes it in this epoch; {})",
                    self.place(*l),
                    self.prev.history(*l)
                )));
            }
        }
        Ok(())
    }

    fn check_fetch(
        &self,
        loc: Loc,
        what: &str,
        expect: Expect,
        got: u64,
        tickets: &mut [u64],
    ) -> Outcome {
        let (start, end) = (self.prev.get(loc), self.next.get(loc));
        let ok = match expect {
            Expect::Nothing => true,
            Expect::Exact(v) => got == v,
            Expect::Ticket(slot) => {
                tickets[slot] = got;
                true
            }
            Expect::OrRange => got & start == start && got | end == end,
            Expect::AndRange => got & end == end && got | start == start,
        };
        if ok {
            return Ok(());
        }
        Err(self.fail(format_args!(
            "{what} on {} returned {got:#x}; the model expects {} (the word is {start:#x} when the epoch starts and {end:#x} when it ends; {})",
            self.place(loc),
            match expect {
                Expect::Exact(v) => format!("{v:#x}"),
                Expect::OrRange => "a value with every bit of the start value and only bits of the final one".into(),
                Expect::AndRange => "a value with every bit of the final value and only bits of the start one".into(),
                Expect::Nothing | Expect::Ticket(_) => unreachable!(),
            },
            self.next.history(loc)
        )))
    }

    /// Runs a blocking operation on instance `inst`.
    fn blocking(&self, inst: u8, op: &Op, tickets: &mut [u64]) -> Outcome {
        let h = &self.heaps[usize::from(inst)];
        let locs = |pe, idx, len, stride| PeGen::data_locs(inst, pe, idx, len, stride);
        match op {
            Op::Fence => h.fence()?,
            Op::Quiet => h.quiet()?,
            Op::Put { pe, idx, vals, how } => h.put(*how, *idx, vals, *pe)?,
            Op::Iput {
                pe,
                idx,
                dst_stride,
                src_stride,
                src,
                nelems,
            } => h.iput(*idx, *dst_stride, src, *src_stride, *nelems, *pe)?,
            Op::Get {
                pe,
                idx,
                expect,
                how,
            } => {
                let got = h.get(*how, (Region::Data, *idx), expect.len(), *pe)?;
                self.check_read(op.name(), &locs(*pe, *idx, got.len(), 1), &got, expect)?;
            }
            Op::Iget {
                pe,
                idx,
                stride,
                expect,
            } => {
                let got = h.iget(*idx, *stride, expect.len(), *pe)?;
                self.check_read("iget", &locs(*pe, *idx, got.len(), *stride), &got, expect)?;
            }
            Op::Amo {
                loc,
                amo,
                val,
                cond,
                expect,
                nbi,
            } => {
                debug_assert!(!nbi);
                if let Some(got) = h.amo((loc.region, loc.idx), *amo, *val, *cond, loc.pe)? {
                    self.check_fetch(*loc, op.name(), *expect, got, tickets)?;
                }
            }
            Op::PutSignal {
                pe,
                idx,
                vals,
                sig,
                op,
                value,
                nbi,
            } => {
                debug_assert!(!nbi);
                let dst = (Region::Data, *idx);
                h.put_signal(dst, vals, (sig.region, sig.idx), *value, *op, *pe)?
            }
            Op::Signal { sig, op, value } => {
                h.signal((sig.region, sig.idx), *value, *op, sig.pe)?
            }
            Op::RingSignal { pe, vals, value } => {
                let (d, w) = (ring_data(self.n), ring_word(self.n));
                h.put_signal(
                    (Region::Sig, d),
                    vals,
                    (Region::Sig, w),
                    *value,
                    SignalOp::Set,
                    *pe,
                )?;
            }
            Op::RingWait {
                from,
                value,
                expect,
            } => {
                let ring = Loc::new(inst, Region::Sig, self.me, ring_word(self.n));
                let (seen, fetched) = h.signal_wait(ring_word(self.n), *value)?;
                if seen != *value || fetched != *value {
                    return Err(self.fail(format_args!(
                        "signal_wait_until(Eq, {value}) on {} returned {seen}, and signal_fetch then read {fetched}",
                        self.place(ring)
                    )));
                }
                let d = ring_data(self.n);
                let got = h.get(GetHow::Blocking, (Region::Sig, d), RING_DATA, self.me)?;
                let locs: Vec<Loc> = (0..RING_DATA)
                    .map(|k| Loc::new(inst, Region::Sig, self.me, d + k))
                    .collect();
                for ((l, g), e) in locs.iter().zip(&got).zip(expect) {
                    if g != e {
                        return Err(self.fail(format_args!(
                            "after the ring signal from PE {from} arrived, {} holds {g:#x}, but the put_signal it announced carried {e:#x}",
                            self.place(*l)
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs one block: blocking operations directly, or an `nbi` scope whose results are checked
    /// once it has ended.
    fn block(&self, b: &Block, tickets: &mut [u64]) -> Outcome {
        if !b.nbi {
            for op in &b.ops {
                self.blocking(b.inst, op, tickets)?;
            }
            return Ok(());
        }
        let h = &self.heaps[usize::from(b.inst)];
        let (gets, fetched) = h.nbi(&b.ops, &mut |op| self.blocking(b.inst, op, tickets))?;
        // The scope has quieted: check what the non-blocking reads brought back.
        let (mut g, mut f) = (0, 0);
        for op in &b.ops {
            match op {
                Op::Get {
                    pe,
                    idx,
                    expect,
                    how: GetHow::Nbi,
                } => {
                    let got = &gets[g..g + expect.len()];
                    g += expect.len();
                    let locs = PeGen::data_locs(b.inst, *pe, *idx, got.len(), 1);
                    self.check_read("get_nbi", &locs, got, expect)?;
                }
                Op::Amo {
                    loc,
                    expect,
                    nbi: true,
                    ..
                } => {
                    f += 1;
                    self.check_fetch(*loc, op.name(), *expect, fetched[f - 1], tickets)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// After the epoch's barriers: every word of every PE on both instances against the model.
    fn check_state(&self) -> Outcome {
        for inst in 0..2u8 {
            let h = &self.heaps[usize::from(inst)];
            for pe in 0..self.n as u32 {
                for region in REGIONS {
                    let got = h.read(region, pe)?;
                    let want = self.next.region(inst, pe, region);
                    if let Some(idx) = (0..got.len()).find(|&i| got[i] != want[i]) {
                        let l = Loc::new(inst, region, pe, idx);
                        return Err(self.fail(format_args!(
                            "after the epoch, {} holds {:#x}; the model expects {:#x} ({}; it was {:#x} when the epoch began)",
                            self.place(l),
                            got[idx],
                            want[idx],
                            self.next.history(l),
                            self.prev.get(l),
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// After the epoch's barriers: the values every ticket operation of every PE returned form,
    /// per word, one chain from the epoch's start value, one addend per step.
    fn check_tickets(&self, programs: &[Program], log: &dyn Log) -> Outcome {
        let mut by_word: BTreeMap<Loc, Vec<(u64, u64, u32)>> = BTreeMap::new();
        for (pe, p) in programs.iter().enumerate() {
            if p.tickets.is_empty() {
                continue;
            }
            let got = log.read(pe as u32, p.tickets.len())?;
            for (&(loc, addend), v) in p.tickets.iter().zip(got) {
                by_word.entry(loc).or_default().push((v, addend, pe as u32));
            }
        }
        for (loc, mut fetched) in by_word {
            let mask = loc.region.mask();
            let start = self.prev.get(loc);
            fetched.sort_by_key(|&(v, _, _)| v.wrapping_sub(start) & mask);
            let mut at = start;
            for (k, &(v, addend, pe)) in fetched.iter().enumerate() {
                if v != at {
                    let seq: Vec<String> = fetched
                        .iter()
                        .map(|(v, a, p)| format!("{v:#x}(+{a} by PE {p})"))
                        .collect();
                    return Err(self.fail(format_args!(
                        "the {} fetch_add/fetch_inc results on {} do not form one sequence from {start:#x}: sorted, result {k} is {v:#x} (by PE {pe}) where {at:#x} was due; all: [{}]",
                        fetched.len(),
                        self.place(loc),
                        seq.join(", ")
                    )));
                }
                at = at.wrapping_add(addend) & mask;
            }
        }
        Ok(())
    }
}

/// The run's seed as PE 0 chooses it: [`SEED_VAR`] if set (`random` draws one), else
/// [`DEFAULT_SEED`]. Every PE takes PE 0's (`choose_seed`).
pub(super) fn seed_from_env() -> Result<u64, Failure> {
    Ok(match std::env::var(SEED_VAR) {
        Err(_) => DEFAULT_SEED,
        Ok(v) if v.trim() == "random" => rand::random(),
        Ok(v) => {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.map_err(|e| {
                Failure(format!(
                    "{SEED_VAR}={v:?} is not a seed (a u64 in decimal or 0x-hex, or `random`): {e}"
                ))
            })?
        }
    })
}

/// PE 0's seed ([`seed_from_env`]), broadcast.
fn choose_seed(world: &Instance) -> Result<u64, Failure> {
    let slot = world.calloc::<u64>(1)?;
    if world.my_pe() == 0 {
        let seed = seed_from_env()?;
        for pe in 0..world.n_pes() {
            slot.as_slice().p(0, seed, pe)?;
        }
    }
    world.barrier_all()?;
    let seed = slot.as_slice().g(0, world.my_pe())?;
    world.barrier_all()?;
    slot.free()?;
    Ok(seed)
}

/// Where each PE leaves the values its ticket operations returned, for every PE to check.
pub(super) trait Log {
    /// Writes this PE's values.
    fn write(&self, tickets: &[u64]) -> Outcome;
    /// PE `pe`'s first `len` values.
    fn read(&self, pe: u32, len: usize) -> Result<Vec<u64>, Failure>;
}

impl Log for SymBuf<u64> {
    fn write(&self, tickets: &[u64]) -> Outcome {
        let me = self.instance().my_pe();
        Ok(self.slice(..tickets.len()).put(tickets, me)?)
    }

    fn read(&self, pe: u32, len: usize) -> Result<Vec<u64>, Failure> {
        Ok(self.slice(..len).to_vec(pe)?)
    }
}

/// What the epochs run on: two instances' regions, the barrier that separates the phases, the
/// ticket log and the collective phase.
pub(super) trait Target {
    /// The regions' words and the calls that reach them.
    type Words: Words;
    /// The regions of instance 0 and instance 1.
    fn heaps(&self) -> &[Self::Words; 2];
    /// `barrier_all` on both instances.
    fn barrier(&self) -> Outcome;
    /// The ticket log.
    fn log(&self) -> &dyn Log;
    /// The collective phase of `epoch` with about `ops` operations: the calls it made.
    fn collectives(&mut self, seed: u64, epoch: usize, ops: usize) -> Result<usize, Failure>;
    /// The team splits the collective phase made so far.
    fn splits(&self) -> usize;
}

/// The size of a run.
pub(super) struct RunSize {
    pub(super) epochs: usize,
    /// Calls per PE and epoch of the RMA, atomic and signal phase.
    pub(super) calls: usize,
    /// Operations per PE and epoch of the collective phase.
    pub(super) coll_ops: usize,
}

impl RunSize {
    /// The size for `n` PEs: [`OPS_VAR`] operations, or the tier's number, about an eighth of
    /// them in the collective phase.
    pub(super) fn new(ctx: &Ctx, n: usize) -> Result<RunSize, Failure> {
        let budget = match std::env::var(OPS_VAR) {
            Ok(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| Failure(format!("{OPS_VAR}={v:?} is not a number of operations")))?,
            Err(_) => ctx.iters(FAST_OPS, FULL_OPS),
        };
        let epochs = (budget / 2_500).clamp(ctx.iters(40, 100), 4_000);
        // About an eighth of each PE's calls are the collective phase's (an operation there
        // makes 2.5 calls on average, with its barriers): more than a tenth of the total.
        let per_pe = budget.div_ceil(epochs * n);
        Ok(RunSize {
            epochs,
            calls: per_pe * 7 / 8,
            coll_ops: (per_pe / 20).max(1),
        })
    }

    /// The length of the ticket log: more than a PE's calls in an epoch.
    pub(super) fn log_len(&self) -> usize {
        self.calls + 64
    }
}

/// What a run did.
pub(super) struct Summary {
    /// RMA, atomic and signal calls of every PE.
    pub(super) total: usize,
    /// Fences among them.
    pub(super) fences: usize,
    /// This PE's calls in the collective phase.
    pub(super) coll_calls: usize,
    /// Calls by kind.
    pub(super) kinds: BTreeMap<&'static str, usize>,
    /// Resident memory (KiB) and open descriptors at ten points.
    pub(super) samples: Vec<(u64, usize)>,
    pub(super) elapsed: std::time::Duration,
}

/// Runs `plan`'s epochs with `seed` on `target` as PE `me` of `n`, checks every epoch against
/// the model, and checks that resident memory and descriptors settle.
pub(super) fn run_epochs<T: Target>(
    target: &mut T,
    plan: &RunSize,
    seed: u64,
    me: u32,
    n: usize,
) -> Result<Summary, Failure> {
    let started = std::time::Instant::now();
    let mut model = Model::new(n);
    let mut sum = Summary {
        total: 0,
        fences: 0,
        coll_calls: 0,
        kinds: BTreeMap::new(),
        samples: Vec::new(),
        elapsed: Default::default(),
    };
    for epoch in 0..plan.epochs {
        let prev = model.clone();
        let programs = schedule(seed, epoch, n, plan.calls, &mut model);
        for op in programs.iter().flat_map(Program::ops) {
            sum.total += op.calls();
            sum.fences += usize::from(matches!(op, Op::Fence));
            *sum.kinds.entry(op.name()).or_default() += 1;
        }
        let mine = &programs[me as usize];
        check!(
            mine.tickets.len() <= plan.log_len(),
            "{} ticket operations overflow the log of {}",
            mine.tickets.len(),
            plan.log_len()
        );
        let mut tickets = vec![0u64; mine.tickets.len()];
        {
            let exec = Exec {
                seed,
                epoch,
                me,
                n,
                heaps: target.heaps(),
                prev: &prev,
                next: &model,
            };
            for b in &mine.blocks {
                exec.block(b, &mut tickets)?;
            }
        }
        sum.coll_calls += target.collectives(seed, epoch, plan.coll_ops)?;
        if (epoch + 1) % plan.epochs.div_ceil(10) == 0 {
            sum.samples.push((rss_kib(), open_fds()));
        }
        if !tickets.is_empty() {
            target.log().write(&tickets)?;
        }
        target.barrier()?;
        let exec = Exec {
            seed,
            epoch,
            me,
            n,
            heaps: target.heaps(),
            prev: &prev,
            next: &model,
        };
        exec.check_state()?;
        exec.check_tickets(&programs, target.log())?;
        // Nobody writes the next epoch's words before everyone has checked this one's.
        target.barrier()?;
    }
    check!(
        sum.total >= 10_000,
        "the schedule made only {} operations",
        sum.total
    );
    // Every PE made the same number of collective calls but for the team splits' members.
    let all = sum.total + sum.coll_calls * n;
    check!(
        sum.coll_calls * n * 10 >= all,
        "the collective phase made {} of {all} calls, below a tenth",
        sum.coll_calls * n
    );
    check!(
        target.splits() * n * 100 >= all,
        "{} team splits of {all} calls, below one in a hundred",
        target.splits() * n
    );
    // Resident memory and descriptors settle after the first sample: later ones stay within
    // 1 MiB, and the descriptor count does not change.
    let samples = &sum.samples;
    if let Some(later) = samples.get(1..).filter(|l| l.len() >= 2) {
        let (lo, hi) = later
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), s| (lo.min(s.0), hi.max(s.0)));
        check!(
            hi - lo <= 1024,
            "resident memory grew from {lo} to {hi} KiB: {samples:?}"
        );
        check!(
            later.iter().all(|s| s.1 == later[0].1),
            "the open descriptors changed: {samples:?}"
        );
    }
    sum.elapsed = started.elapsed();
    Ok(sum)
}

/// The Rust API's side: instances 0 and 1 for the epochs, instance 2 for the collective phase.
struct RustTarget {
    world: Instance,
    one: Instance,
    heaps: [Heap; 2],
    log: SymBuf<u64>,
    colls: Collectives<RustColls>,
}

impl Target for RustTarget {
    type Words = Heap;

    fn heaps(&self) -> &[Heap; 2] {
        &self.heaps
    }

    fn barrier(&self) -> Outcome {
        self.world.barrier_all()?;
        Ok(self.one.barrier_all()?)
    }

    fn log(&self) -> &dyn Log {
        &self.log
    }

    fn collectives(&mut self, seed: u64, epoch: usize, ops: usize) -> Result<usize, Failure> {
        self.colls.epoch(seed, epoch, ops)
    }

    fn splits(&self) -> usize {
        self.colls.splits
    }
}

fn random_epochs(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let members: Vec<u32> = (0..ctx.n_pes).collect();
    let one = Instance::init(&attrs_for(ctx, 1, &members).expect("every PE is a member"))?;
    let two = Instance::init(&attrs_for(ctx, 2, &members).expect("every PE is a member"))?;
    let colls = Collectives::new(RustColls::new(two)?);
    let (me, n) = (ctx.pe, ctx.n_pes as usize);
    check!(n >= 2, "the model case needs at least two PEs");
    let seed = choose_seed(&world)?;
    eprintln!(
        "model: PE {me} of {n}: seed {seed} (replay: {SEED_VAR}={seed} cargo test -p shmem-conformance --test sim -- model::)"
    );
    let plan = RunSize::new(ctx, n)?;
    let heaps = [Heap::new(world.clone(), n)?, Heap::new(one.clone(), n)?];
    for r in REGIONS {
        check!(
            heaps[0].offset(r, 0) == heaps[1].offset(r, 0),
            "the {} region sits at different offsets on the two instances",
            r.name()
        );
    }
    let log = world.calloc::<u64>(plan.log_len())?;
    let mut target = RustTarget {
        world: world.clone(),
        one: one.clone(),
        heaps,
        log,
        colls,
    };
    let sum = run_epochs(&mut target, &plan, seed, me, n)?;
    let RustTarget {
        heaps, log, colls, ..
    } = target;
    let all = sum.total + sum.coll_calls * n;
    if me == 0 {
        let mix: Vec<String> = sum.kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!(
            "model: seed {seed}: {} epochs, {all} operations on {n} PEs and 3 instances ({} RMA, atomic and signal calls, {} fences; {} collective-phase calls, {} team splits) in {:.2?}: {}; PE 0's resident memory (KiB) and descriptors at 10 points: {:?}",
            plan.epochs,
            sum.total,
            sum.fences,
            sum.coll_calls * n,
            colls.splits,
            sum.elapsed,
            mix.join(", "),
            sum.samples
        );
    }

    log.free()?;
    let [h0, h1] = heaps;
    h0.free()?;
    h1.free()?;
    colls.ops.finish()?;
    one.finalize()?;
    world.finalize()?;
    Ok(())
}
