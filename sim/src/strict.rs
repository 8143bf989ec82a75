//! Strict completion mode: operations are held back and completed as late, and in as hostile
//! an order, as the OpenSHMEM rules allow, so that a program missing a `quiet` or a `fence`
//! fails on the laptop as it would on a device whose DMA engines complete out of order.
//!
//! A queue holds its non-blocking operations and, when its transport allows relaxed completion
//! ([`shmem_backend::Capabilities::relaxed_completion`]: OpenSHMEM's rules, not CANN's host
//! stream order), its blocking puts, non-fetching atomics and signals too (their local buffers
//! are copied, so they are reusable at return). Held operations complete:
//! - all of them at `quiet` (and so at every barrier), in a random order that respects fences;
//! - those to a PE, before this PE reads from it (a get, a `g`, a fetching atomic): a PE reads
//!   its own writes;
//! - blocking ones eventually without a quiet ([`StrictQueue::deliver_due`], run by the
//!   process's delivery thread): a PE's oldest fence epoch once its operations are
//!   [`SETTLE`] old, the newest first and the others [`GAP`] later, so that a reader polling the
//!   last-issued word (a flag put without a fence) sees it before the data. Non-blocking ones
//!   go with them only where a fence orders them ahead of a held blocking one;
//! - one random eligible operation, with probability `early`, each time one is issued.
//!
//! Operations to the same PE are grouped by fence epoch; only the oldest epoch of a PE may
//! complete, so fence ordering always holds, while operations inside an epoch, or to different
//! PEs, complete in any order.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shmem_backend::{AmoOp, Pe, Signal, Width};

/// How long held blocking operations wait before delivery without a quiet: operations issued
/// in quick succession (data, then a flag) are held together.
pub(crate) const SETTLE: Duration = Duration::from_millis(2);
/// How long after the newest operation of an epoch the others follow.
pub(crate) const GAP: Duration = Duration::from_millis(50);

/// A validated operation waiting to be performed. Addresses are already translated and checked.
#[derive(Debug)]
pub(crate) enum Deferred {
    /// Copy `len` bytes from `src` to `dst` in PE `pe`'s segment, then apply the signal, if any.
    Put {
        pe: Pe,
        dst: *mut u8,
        src: *const u8,
        len: usize,
        signal: Option<Signal>,
        /// The copy of a blocking put's source that `src` points into, if it is held.
        owned: Option<Box<[u8]>>,
    },
    /// Copy `len` bytes from `src` (a peer's segment) to the local `dst`.
    Get {
        dst: *mut u8,
        src: *const u8,
        len: usize,
    },
    /// Perform `op` on the word at `offset` of PE `pe`'s segment, storing the old value to
    /// `fetch` if non-null.
    Amo {
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    },
}

struct Held {
    op: Deferred,
    /// A blocking operation, which must be delivered eventually without a quiet.
    blocking: bool,
    issued: Instant,
}

// SAFETY: the raw pointers in a held operation point into the instance's shared mappings, into
// its own copy of the source, or into caller buffers that the non-blocking operation's safety
// contract keeps valid, and not accessed by the caller, until the queue's quiet; the queue is
// behind a mutex, so one thread at a time performs them.
unsafe impl Send for Held {}

/// The operations held for one PE, by fence epoch (oldest first).
#[derive(Default)]
struct PeHeld {
    groups: VecDeque<(u64, Vec<Held>)>,
    /// When the newest operation of the oldest epoch went ahead of the others.
    gap_since: Option<Instant>,
}

/// The held operations of one completion queue.
pub(crate) struct StrictQueue {
    by_pe: BTreeMap<Pe, PeHeld>,
    epoch: u64,
    held: usize,
    rng: SmallRng,
    early: f64,
}

impl std::fmt::Debug for StrictQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrictQueue")
            .field("held", &self.held)
            .field("epoch", &self.epoch)
            .finish()
    }
}

impl StrictQueue {
    pub(crate) fn new(seed: u64, early: f64) -> StrictQueue {
        StrictQueue {
            by_pe: BTreeMap::new(),
            epoch: 0,
            held: 0,
            rng: SmallRng::seed_from_u64(seed),
            early,
        }
    }

    /// Holds non-blocking `op` (which targets, or reads from, `pe`), then maybe completes one
    /// held operation.
    pub(crate) fn push(&mut self, pe: Pe, op: Deferred, exec: &mut dyn FnMut(Deferred)) {
        self.hold(pe, op, false, exec);
    }

    /// Holds blocking `op` to `pe`, which [`StrictQueue::deliver_due`] delivers eventually.
    pub(crate) fn push_blocking(&mut self, pe: Pe, op: Deferred, exec: &mut dyn FnMut(Deferred)) {
        self.hold(pe, op, true, exec);
    }

    fn hold(&mut self, pe: Pe, op: Deferred, blocking: bool, exec: &mut dyn FnMut(Deferred)) {
        let held = Held {
            op,
            blocking,
            issued: Instant::now(),
        };
        let groups = &mut self.by_pe.entry(pe).or_default().groups;
        match groups.back_mut() {
            Some((epoch, ops)) if *epoch == self.epoch => ops.push(held),
            _ => groups.push_back((self.epoch, vec![held])),
        }
        self.held += 1;
        if self.early > 0.0 && self.rng.random_bool(self.early) {
            self.complete_one(exec);
        }
    }

    /// Starts a new fence epoch.
    pub(crate) fn fence(&mut self) {
        self.epoch += 1;
    }

    /// Completes every held operation to `pe` issued before the latest fence.
    pub(crate) fn complete_fenced(&mut self, pe: Pe, exec: &mut dyn FnMut(Deferred)) {
        let current = self.epoch;
        self.complete_while(pe, |e| e < current, exec);
    }

    /// Completes every held operation to `pe`, in fence order (before this PE reads from it).
    pub(crate) fn complete_to(&mut self, pe: Pe, exec: &mut dyn FnMut(Deferred)) {
        self.complete_while(pe, |_| true, exec);
    }

    fn complete_while(
        &mut self,
        pe: Pe,
        take: impl Fn(u64) -> bool,
        exec: &mut dyn FnMut(Deferred),
    ) {
        let Some(p) = self.by_pe.get_mut(&pe) else {
            return;
        };
        while p.groups.front().is_some_and(|(e, _)| take(*e)) {
            let (_, ops) = p.groups.pop_front().expect("checked");
            p.gap_since = None;
            self.held -= ops.len();
            ops.into_iter().for_each(|h| exec(h.op));
        }
        if p.groups.is_empty() {
            self.by_pe.remove(&pe);
        }
    }

    /// Completes everything, in a random order that respects fences.
    pub(crate) fn complete_all(&mut self, exec: &mut dyn FnMut(Deferred)) {
        while self.held > 0 {
            self.complete_one(exec);
        }
        self.by_pe.clear();
    }

    /// Delivers the blocking operations that are due at `now` (see the module documentation),
    /// and returns when the next ones will be, if any are held.
    pub(crate) fn deliver_due(
        &mut self,
        now: Instant,
        exec: &mut dyn FnMut(Deferred),
    ) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut soonest = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        let mut delivered = 0;
        for p in self.by_pe.values_mut() {
            loop {
                let later_blocking = p
                    .groups
                    .iter()
                    .skip(1)
                    .any(|(_, g)| g.iter().any(|h| h.blocking));
                let Some((_, front)) = p.groups.front_mut() else {
                    break;
                };
                // What may go now: the blocking operations, and the non-blocking ones too when
                // a fence orders them ahead of a later blocking one.
                let goes = |h: &Held| h.blocking || later_blocking;
                let Some(settled) = front.iter().filter(|h| goes(h)).map(|h| h.issued).max() else {
                    break;
                };
                if now < settled + SETTLE {
                    soonest(settled + SETTLE);
                    break;
                }
                match p.gap_since {
                    None => {
                        let newest = (0..front.len()).rev().find(|&i| goes(&front[i]));
                        let i = newest.expect("a settled operation exists");
                        exec(front.remove(i).op);
                        delivered += 1;
                        if front.iter().any(goes) {
                            p.gap_since = Some(now);
                            soonest(now + GAP);
                            break;
                        }
                    }
                    Some(since) if now >= since + GAP => {
                        p.gap_since = None;
                        let mut i = 0;
                        while i < front.len() {
                            if goes(&front[i]) {
                                exec(front.swap_remove(i).op);
                                delivered += 1;
                            } else {
                                i += 1;
                            }
                        }
                    }
                    Some(since) => {
                        soonest(since + GAP);
                        break;
                    }
                }
                if front.is_empty() {
                    p.groups.pop_front();
                } else {
                    // Only non-blocking operations are left in the oldest epoch: they wait for
                    // a quiet, and so does everything fenced behind them.
                    break;
                }
            }
        }
        self.held -= delivered;
        self.by_pe.retain(|_, p| !p.groups.is_empty());
        next
    }

    /// Completes one random operation among those allowed to complete now.
    fn complete_one(&mut self, exec: &mut dyn FnMut(Deferred)) {
        if self.held == 0 {
            return;
        }
        let k = self.rng.random_range(0..self.by_pe.len());
        let pe = *self.by_pe.keys().nth(k).expect("k < len");
        let p = self.by_pe.get_mut(&pe).expect("present");
        let (_, front) = p.groups.front_mut().expect("a PE entry always has a group");
        let i = self.rng.random_range(0..front.len());
        let op = front.remove(i);
        if front.is_empty() {
            p.groups.pop_front();
            p.gap_since = None;
            if p.groups.is_empty() {
                self.by_pe.remove(&pe);
            }
        }
        self.held -= 1;
        exec(op.op);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(pe: Pe, tag: usize) -> Deferred {
        Deferred::Put {
            pe,
            dst: std::ptr::null_mut(),
            src: std::ptr::null(),
            len: tag,
            signal: None,
            owned: None,
        }
    }

    fn tag(d: &Deferred) -> (Pe, usize) {
        match d {
            Deferred::Put { pe, len, .. } => (*pe, *len),
            _ => unreachable!(),
        }
    }

    #[test]
    fn fences_order_operations_per_pe() {
        for seed in 0..50 {
            let mut q = StrictQueue::new(seed, 0.0);
            let mut done = Vec::new();
            let mut exec = |d: Deferred| done.push(tag(&d));
            for t in 0..4 {
                q.push(1, put(1, t), &mut exec);
                q.push(2, put(2, t), &mut exec);
            }
            q.fence();
            for t in 4..8 {
                q.push(1, put(1, t), &mut exec);
            }
            assert_eq!(q.held, 12);
            q.complete_all(&mut exec);
            assert_eq!(q.held, 0);
            let pe1: Vec<usize> = done
                .iter()
                .filter(|(p, _)| *p == 1)
                .map(|(_, t)| *t)
                .collect();
            let before: Vec<usize> = pe1.iter().copied().take(4).collect();
            assert!(
                before.iter().all(|&t| t < 4),
                "seed {seed}: a post-fence op overtook the fence: {pe1:?}"
            );
            assert_eq!(done.len(), 12);
        }
    }

    #[test]
    fn operations_inside_an_epoch_are_reordered() {
        let mut orders = std::collections::HashSet::new();
        for seed in 0..20 {
            let mut q = StrictQueue::new(seed, 0.0);
            let mut done = Vec::new();
            let mut exec = |d: Deferred| done.push(tag(&d).1);
            for t in 0..5 {
                q.push(1, put(1, t), &mut exec);
            }
            q.complete_all(&mut exec);
            orders.insert(done);
        }
        assert!(orders.len() > 1, "strict mode never reordered operations");
    }

    #[test]
    fn due_blocking_operations_go_newest_first_then_the_rest_after_a_gap() {
        let mut q = StrictQueue::new(7, 0.0);
        let done = std::cell::RefCell::new(Vec::new());
        let mut exec = |d: Deferred| done.borrow_mut().push(tag(&d).1);
        let t0 = Instant::now();
        q.push_blocking(1, put(1, 0), &mut exec); // the data
        q.push_blocking(1, put(1, 1), &mut exec); // the flag, unfenced
        let due = q.deliver_due(t0, &mut exec).expect("something is held");
        assert!(
            due > t0 && done.borrow().is_empty(),
            "nothing is due before it settles"
        );
        let t1 = Instant::now() + SETTLE;
        let next = q.deliver_due(t1, &mut exec);
        assert_eq!(*done.borrow(), vec![1], "the newest goes first");
        assert_eq!(next, Some(t1 + GAP));
        assert_eq!(q.deliver_due(t1 + GAP / 2, &mut exec), Some(t1 + GAP));
        assert_eq!(*done.borrow(), vec![1]);
        assert_eq!(q.deliver_due(t1 + GAP, &mut exec), None);
        assert_eq!(*done.borrow(), vec![1, 0]);
        assert_eq!(q.held, 0);
    }

    #[test]
    fn due_delivery_keeps_fences_and_leaves_lone_non_blocking_ones() {
        let mut q = StrictQueue::new(7, 0.0);
        let done = std::cell::RefCell::new(Vec::new());
        let mut exec = |d: Deferred| done.borrow_mut().push(tag(&d).1);
        q.push(2, put(2, 0), &mut exec); // non-blocking
        q.fence();
        q.push_blocking(2, put(2, 1), &mut exec);
        q.push(3, put(3, 2), &mut exec); // non-blocking, nothing fenced behind it
        let later = Instant::now() + SETTLE;
        assert_eq!(q.deliver_due(later, &mut exec), None);
        assert_eq!(
            *done.borrow(),
            vec![0, 1],
            "the fence orders the non-blocking put ahead"
        );
        assert_eq!(q.held, 1, "a lone non-blocking put waits for a quiet");
        q.complete_all(&mut exec);
        assert_eq!(*done.borrow(), vec![0, 1, 2]);
    }

    #[test]
    fn complete_fenced_leaves_the_current_epoch() {
        let mut q = StrictQueue::new(1, 0.0);
        let mut done = Vec::new();
        let mut exec = |d: Deferred| done.push(tag(&d).1);
        q.push(3, put(3, 0), &mut exec);
        q.fence();
        q.push(3, put(3, 1), &mut exec);
        q.complete_fenced(3, &mut exec);
        assert_eq!(done, vec![0]);
        assert_eq!(q.held, 1);
    }
}
