//! OpenSHMEM's distributed locks (`shmem_set_lock`, `shmem_test_lock`, `shmem_clear_lock`) on a
//! symmetric `i64` (C `long`) that every PE initialised to 0, and a guard that clears the lock
//! when it is dropped.
//!
//! # Layout
//!
//! The lock is a queue lock in the style of Mellor-Crummey and Scott (MCS), kept in the 8-byte
//! word itself, on every PE, as two 32-bit halves (offsets +0 and +4 of the word, on a
//! little-endian target):
//!
//! | half | on PE 0 of the instance | on every other PE |
//! |---|---|---|
//! | low (+0) | the queue's *tail*: 0 = free, else the last PE in the queue + 1 | unused (0) |
//! | high (+4) | PE 0's queue node | that PE's queue node |
//!
//! A queue node holds `next` (the PE queued behind this one + 1, 0 = none) in bits 0..31 and
//! the `granted` flag in bit 31.
//!
//! The lock's home is **PE 0 of the instance**, whatever context the element carries: a
//! context created from a team numbers PEs in that team, but a lock is a property of the
//! instance's memory, and two contexts of different teams must agree on one home.
//!
//! # Algorithm
//!
//! - `set_lock`: reset this PE's node to 0; swap `me + 1` into the tail. A previous tail of 0
//!   means the lock was free, and it is now held. Otherwise the previous tail is the PE just
//!   ahead in the queue: write `me + 1` into its node's `next` (an atomic or), then wait
//!   locally, sleeping on this PE's node word only, until `granted` is set.
//! - `clear_lock`: first complete every operation of the critical section (a `quiet` of the
//!   element's context, and of the default context if that is another one). If no successor
//!   has linked in, compare-and-swap the tail from `me + 1` to 0, and if that succeeds the lock
//!   is free. If it fails, a successor has swapped itself in and is about to link: wait
//!   locally until this node's `next` is set. Then set `granted` in the successor's node.
//! - `test_lock`: reset this PE's node, then compare-and-swap the tail from 0 to `me + 1`.
//!
//! Only remote atomics (swap, compare-and-swap and or, all on 32-bit halves) and local waits
//! are used, so it runs on any transport with remote atomics.
//!
//! # Guarantees
//!
//! - **Mutual exclusion**, and the operations of one critical section are complete and
//!   visible before the next holder's `set_lock` (or successful `test_lock`) returns.
//! - **FIFO fairness**: PEs acquire the lock in the order their swaps reach the tail on PE 0;
//!   no PE is overtaken once it is queued.
//! - **No lost wake-ups**: every hand-over is a flag (`granted`, `next`) set in the waiter's
//!   own memory, which stays set, and the waiter re-checks it after announcing its sleep. A
//!   waiter sleeps only on its own node word, so traffic on other words does not wake it.
//! - Each waiting PE spins or sleeps on its own memory only; a hand-over costs one remote
//!   atomic, and an uncontended acquire and release one each.
//!
//! # Rules and errors
//!
//! - Every PE's copy of the word must be 0 before first use (allocate it with
//!   [`Instance::calloc`](crate::Instance::calloc)) and the word must be used only through
//!   these calls. A word naming a PE outside the instance is reported as corrupt.
//! - A PE holds a lock, not a thread: while one thread of a PE holds or is acquiring a lock,
//!   `set_lock` from another thread of the same PE fails with `INVALID_PARAM` (the PE has one
//!   queue node per lock), and `test_lock` returns false. `clear_lock` of a lock this PE does
//!   not hold fails with `INVALID_PARAM` and changes nothing.
//! - A `set_lock` that times out (`SHMEM_TIMEOUT`) stays queued: calling `set_lock` (or
//!   `test_lock`) again resumes waiting for the hand-over instead of queueing a second time.
//!   Other failures in the middle of the protocol (a peer that died) leave the lock unusable.
//! - Locks need remote atomics issued by the host, which CANN's host API lacks: on a transport
//!   without them (the hardware one, and the simulator under `SHMEM_PROFILE=cann`) every call
//!   fails with `NOT_SUPPORTED`.
//!
//! ```no_run
//! # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
//! let lock = inst.calloc::<i64>(1)?;              // 0 on every PE
//! let total = inst.calloc::<u64>(1)?;
//! inst.barrier_all()?;
//! {
//!     let _held = lock.elem(0).lock()?;           // FIFO among the PEs that wait
//!     let t = total.as_slice().g(0, 0)?;
//!     total.as_slice().p(0, t + 1, 0)?;
//! }                                               // cleared here, the put completed first
//! inst.barrier_all()?;
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError, Weak};

use shmem_backend::{AmoOp, Pe, Watch, Width};

use crate::error::{Error, Result};
use crate::instance::Inner;
use crate::sym::SymElem;

const _: () = assert!(
    cfg!(target_endian = "little"),
    "the lock layout puts the queue tail in the low half of the word at offset +0"
);

/// The byte offset of the tail (on PE 0) in the word.
const TAIL: usize = 0;
/// The byte offset of the queue node in the word.
const NODE: usize = 4;
/// The `granted` flag of a node.
const GRANTED: u64 = 1 << 31;
/// The `next` field of a node.
const NEXT: u64 = GRANTED - 1;
/// The home of every lock: PE 0 of the instance.
const HOME: Pe = 0;

/// What this process knows about a lock its PE takes part in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// A thread is queueing (or has, and its wait ended early).
    Queued,
    /// This PE holds the lock.
    Held,
}

/// One lock this PE is queued for or holds.
struct Entry {
    inst: Weak<Inner>,
    offset: usize,
    state: State,
}

/// The locks of this process's PEs, by instance and offset: what keeps one PE from queueing
/// twice with its single node, or releasing a lock it does not hold.
static LOCKS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// A held lock; dropping it clears the lock (see [`SymElem::lock`]).
#[must_use = "the lock is cleared as soon as the guard is dropped"]
pub struct LockGuard<'a> {
    elem: SymElem<'a, i64>,
    cleared: bool,
}

impl std::fmt::Debug for LockGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("offset", &format_args!("{:#x}", self.elem.offset))
            .finish()
    }
}

impl LockGuard<'_> {
    /// Clears the lock now, reporting a failure instead of logging it.
    pub fn unlock(mut self) -> Result<()> {
        self.cleared = true;
        self.elem.clear_lock()
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        if !self.cleared
            && let Err(e) = Lock::new(&self.elem).and_then(|l| l.clear())
        {
            crate::diag::warn(format_args!(
                "clear_lock of the lock at heap offset {:#x}, when its guard was dropped, failed: {e}",
                self.elem.offset
            ));
        }
    }
}

/// One lock operation of this PE.
struct Lock<'e, 'a> {
    elem: &'e SymElem<'a, i64>,
    me: Pe,
    n_pes: u32,
}

impl<'e, 'a> Lock<'e, 'a> {
    /// Checks what every lock operation needs: remote atomics, a live instance and context,
    /// and a word inside the heap.
    fn new(elem: &'e SymElem<'a, i64>) -> Result<Self> {
        let inst = elem.ctx.inst;
        elem.ctx.usable()?;
        elem.check_word(Width::W64)?;
        let n_pes = inst.n_pes();
        if u64::from(n_pes) >= NEXT {
            return Err(Error::InvalidParam(format!(
                "a lock node cannot name {n_pes} PEs"
            )));
        }
        Ok(Lock {
            elem,
            me: inst.my_pe(),
            n_pes,
        })
    }

    fn inst(&self) -> &'a crate::Instance {
        self.elem.ctx.inst
    }

    /// This PE's number in a node or the tail.
    fn tag(&self) -> u64 {
        u64::from(self.me) + 1
    }

    /// A 32-bit atomic on half `half` of the word on `pe`; returns the previous value.
    fn amo(&self, pe: Pe, half: usize, op: AmoOp) -> Result<u64> {
        let inst = self.inst();
        // SAFETY: `new` checked the 8-byte word is aligned and inside the heap, and `pe` is
        // this PE or the lock's home, PE 0.
        unsafe {
            inst.fabric().atomic(
                &inst.inner.sync_queue,
                pe,
                self.elem.offset + half,
                Width::W32,
                op,
            )
        }
    }

    /// This PE's node, loaded.
    fn node(&self) -> Result<u64> {
        // SAFETY: as in `amo`.
        unsafe {
            self.inst()
                .fabric()
                .load(self.elem.offset + NODE, Width::W32)
        }
    }

    /// The PE a tail or `next` value names.
    fn named(&self, tag: u64, field: &str) -> Result<Option<Pe>> {
        match tag {
            0 => Ok(None),
            t if t <= u64::from(self.n_pes) => Ok(Some((t - 1) as Pe)),
            t => Err(Error::Inner(format!(
                "the lock at heap offset {:#x} is corrupt: its {field} names PE {} of {} \
                 (was every PE's copy initialised to 0?)",
                self.elem.offset,
                t - 1,
                self.n_pes
            ))),
        }
    }

    /// Waits until this PE's node satisfies `done`; returns the node.
    fn wait_node(&self, what: &str, done: impl Fn(u64) -> bool) -> Result<u64> {
        let inst = self.inst();
        let off = self.elem.offset + NODE;
        let mut seen = 0;
        inst.fabric()
            .wait_local(
                Watch::word(off, Width::W32),
                &format_args!("{what} (the lock at heap offset {:#x})", self.elem.offset),
                &mut || {
                    seen = self.node()?;
                    Ok(done(seen))
                },
            )
            .map_err(|e| inst.fail(e))?;
        Ok(seen)
    }

    /// Resets this PE's node (a fetching swap, so it is complete before the tail is touched).
    fn reset_node(&self) -> Result<()> {
        self.amo(self.me, NODE, AmoOp::Swap(0)).map(|_| ())
    }

    fn state(&self) -> Option<State> {
        let inst = &self.inst().inner;
        let locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        locks
            .iter()
            .find(|e| e.offset == self.elem.offset && e.inst.as_ptr() == Arc::as_ptr(inst))
            .map(|e| e.state)
    }

    /// Records `state` for the lock (`None` forgets it); with `only_if_absent`, records only if
    /// nothing is recorded, and says whether it did.
    fn record(&self, state: Option<State>, only_if_absent: bool) -> bool {
        let inst = &self.inst().inner;
        let mut locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        locks.retain(|e| e.inst.strong_count() > 0);
        let pos = locks
            .iter()
            .position(|e| e.offset == self.elem.offset && e.inst.as_ptr() == Arc::as_ptr(inst));
        match (pos, state) {
            (Some(_), _) if only_if_absent => false,
            (Some(i), Some(s)) => {
                locks[i].state = s;
                true
            }
            (Some(i), None) => {
                locks.swap_remove(i);
                true
            }
            (None, Some(s)) => {
                locks.push(Entry {
                    inst: Arc::downgrade(inst),
                    offset: self.elem.offset,
                    state: s,
                });
                true
            }
            (None, None) => true,
        }
    }

    fn wait_granted(&self) -> Result<()> {
        let what = format!(
            "set_lock: the lock at heap offset {:#x} to be handed to PE {}",
            self.elem.offset, self.me
        );
        self.wait_node(&what, |v| v & GRANTED != 0)?;
        self.record(Some(State::Held), false);
        Ok(())
    }

    fn set(&self) -> Result<()> {
        match self.state() {
            Some(State::Held) => {
                return Err(Error::InvalidParam(format!(
                    "set_lock: PE {} already holds the lock at heap offset {:#x}",
                    self.me, self.elem.offset
                )));
            }
            // A wait that ended early: keep waiting, without queueing again.
            Some(State::Queued) => return self.wait_granted(),
            None => {}
        }
        if !self.record(Some(State::Queued), true) {
            return Err(Error::InvalidParam(format!(
                "set_lock: another thread of PE {} is acquiring the lock at heap offset {:#x}",
                self.me, self.elem.offset
            )));
        }
        let queued = (|| {
            self.reset_node()?;
            let prev = self.amo(HOME, TAIL, AmoOp::Swap(self.tag()))?;
            match self.named(prev, "tail")? {
                None => Ok(false),
                Some(p) => {
                    self.amo(p, NODE, AmoOp::Or(self.tag()))?;
                    Ok(true)
                }
            }
        })();
        match queued {
            Err(e) => {
                self.record(None, false);
                Err(e)
            }
            Ok(false) => {
                self.record(Some(State::Held), false);
                Ok(())
            }
            Ok(true) => self.wait_granted(),
        }
    }

    fn test(&self) -> Result<bool> {
        match self.state() {
            Some(State::Held) => return Ok(false),
            Some(State::Queued) => {
                if self.node()? & GRANTED != 0 {
                    self.record(Some(State::Held), false);
                    return Ok(true);
                }
                return Ok(false);
            }
            None => {}
        }
        if !self.record(Some(State::Queued), true) {
            // Another thread of this PE got there first.
            return Ok(false);
        }
        let r = (|| {
            self.reset_node()?;
            let prev = self.amo(
                HOME,
                TAIL,
                AmoOp::CompareSwap {
                    cond: 0,
                    value: self.tag(),
                },
            )?;
            Ok(prev == 0)
        })();
        match r {
            Ok(true) => {
                self.record(Some(State::Held), false);
                Ok(true)
            }
            other => {
                self.record(None, false);
                other
            }
        }
    }

    fn clear(&self) -> Result<()> {
        if self.state() != Some(State::Held) {
            return Err(Error::InvalidParam(format!(
                "clear_lock: PE {} does not hold the lock at heap offset {:#x}",
                self.me, self.elem.offset
            )));
        }
        let ctx = self.elem.ctx;
        ctx.quiet()?;
        if ctx.ctx.is_some() {
            self.inst().quiet()?;
        }
        let mut next = self.named(self.node()? & NEXT, "next")?;
        if next.is_none() {
            let prev = self.amo(
                HOME,
                TAIL,
                AmoOp::CompareSwap {
                    cond: self.tag(),
                    value: 0,
                },
            )?;
            if prev == self.tag() {
                self.record(None, false);
                return Ok(());
            }
            // Another PE queued behind this one, and its node will link in; a tail that names
            // no PE means the word was written by something other than a lock call, and
            // nobody would ever link in.
            if self.named(prev, "tail")?.is_none() {
                self.record(None, false);
                return Err(Error::Inner(format!(
                    "clear_lock: the lock at heap offset {:#x} is corrupt: PE {} holds it, but its tail is empty (was the word written by something other than the lock calls?)",
                    self.elem.offset, self.me
                )));
            }
            let what = format!(
                "clear_lock: the next PE queued for the lock at heap offset {:#x} to link in",
                self.elem.offset
            );
            let node = self.wait_node(&what, |v| v & NEXT != 0)?;
            next = self.named(node & NEXT, "next")?;
        }
        let Some(succ) = next else {
            return Err(Error::Inner("a lock successor vanished".into()));
        };
        self.amo(succ, NODE, AmoOp::Or(GRANTED))?;
        self.record(None, false);
        Ok(())
    }
}

impl<'a> SymElem<'a, i64> {
    /// Acquires the lock, waiting in FIFO order behind the PEs already queued for it
    /// (`shmem_set_lock`).
    ///
    /// The lock is an MCS queue lock kept in the word: the low half of PE 0's copy (PE 0 of
    /// the instance, whatever team the element's context numbers PEs in) is the queue's tail,
    /// and the high half of every PE's copy is that PE's queue node (`next` PE + 1, and a
    /// `granted` flag). Acquiring swaps this PE into the tail, links it behind the previous
    /// tail, and sleeps on its own node until the predecessor grants the lock. Every PE's copy
    /// must be 0 before first use. Calling it again after it timed out resumes the wait; while
    /// this PE holds the lock, or another of its threads is acquiring it, it fails with
    /// `INVALID_PARAM`. Fails with `NOT_SUPPORTED` on a transport without remote atomics
    /// issued by the host (the hardware one, and the simulator under `SHMEM_PROFILE=cann`).
    pub fn set_lock(&self) -> Result<()> {
        self.ctx.inst.require(
            |c| c.host_atomics,
            "distributed locks (built on remote atomics)",
        )?;
        self.ctx.inst.check_peers()?;
        Lock::new(self).and_then(|l| l.set())?;
        crate::fault::point("lock.held", self.ctx.inst.my_pe(), self.ctx.inst.id());
        Ok(())
    }

    /// Acquires the lock if it is free, without waiting: true when this call acquired it
    /// (OpenSHMEM's `shmem_test_lock` returning 0), false when it is held or queued for.
    pub fn test_lock(&self) -> Result<bool> {
        self.ctx.inst.require(
            |c| c.host_atomics,
            "distributed locks (built on remote atomics)",
        )?;
        Lock::new(self).and_then(|l| l.test())
    }

    /// Releases the lock, after completing the operations issued on this element's context
    /// (and on the default context) (`shmem_clear_lock`); hands it to the next PE queued, if
    /// any.
    pub fn clear_lock(&self) -> Result<()> {
        self.ctx.inst.require(
            |c| c.host_atomics,
            "distributed locks (built on remote atomics)",
        )?;
        Lock::new(self).and_then(|l| l.clear())
    }

    /// Acquires the lock as [`SymElem::set_lock`] does, and returns a guard that clears it when
    /// dropped (a failure to clear is logged; [`LockGuard::unlock`] reports it instead).
    pub fn lock(&self) -> Result<LockGuard<'a>> {
        self.set_lock()?;
        Ok(LockGuard {
            elem: *self,
            cleared: false,
        })
    }
}
