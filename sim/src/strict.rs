//! Strict completion mode: non-blocking operations are held back and completed as late as the
//! OpenSHMEM rules allow, so that a program missing a `quiet` fails on the laptop as it would on
//! a device whose DMA engines complete out of order.
//!
//! Held operations complete:
//! - all of them at `quiet` (and so at every barrier), in a random order that respects fences;
//! - those before the latest `fence` to a PE, when a blocking update to that PE is issued (the
//!   fence promised they arrive first);
//! - one random eligible operation, with probability `early`, each time a non-blocking operation
//!   is issued.
//!
//! Operations to the same PE are grouped by fence epoch; only the oldest epoch of a PE may
//! complete, so fence ordering always holds, while operations inside an epoch, or to different
//! PEs, complete in any order.

use std::collections::{BTreeMap, VecDeque};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use shmem_backend::{AmoOp, Pe, Signal, Width};

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

struct Held(Deferred);

// SAFETY: the raw pointers in a held operation point into the instance's shared mappings or into
// caller buffers that the non-blocking operation's safety contract keeps valid, and not accessed
// by the caller, until the queue's quiet; the queue is behind a mutex, so one thread at a time
// performs them.
unsafe impl Send for Held {}

/// The held operations of one completion queue.
pub(crate) struct StrictQueue {
    by_pe: BTreeMap<Pe, VecDeque<(u64, Vec<Held>)>>,
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

    /// Holds `op` (which targets, or reads from, `pe`), then maybe completes one held operation.
    pub(crate) fn push(&mut self, pe: Pe, op: Deferred, exec: &mut dyn FnMut(Deferred)) {
        let groups = self.by_pe.entry(pe).or_default();
        match groups.back_mut() {
            Some((epoch, ops)) if *epoch == self.epoch => ops.push(Held(op)),
            _ => groups.push_back((self.epoch, vec![Held(op)])),
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
        let Some(groups) = self.by_pe.get_mut(&pe) else {
            return;
        };
        while groups.front().is_some_and(|(e, _)| *e < current) {
            let (_, ops) = groups.pop_front().expect("checked");
            self.held -= ops.len();
            ops.into_iter().for_each(|h| exec(h.0));
        }
        if groups.is_empty() {
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

    /// Completes one random operation among those allowed to complete now.
    fn complete_one(&mut self, exec: &mut dyn FnMut(Deferred)) {
        if self.held == 0 {
            return;
        }
        let k = self.rng.random_range(0..self.by_pe.len());
        let pe = *self.by_pe.keys().nth(k).expect("k < len");
        let groups = self.by_pe.get_mut(&pe).expect("present");
        let (_, front) = groups.front_mut().expect("a PE entry always has a group");
        let i = self.rng.random_range(0..front.len());
        let op = front.swap_remove(i);
        if front.is_empty() {
            groups.pop_front();
            if groups.is_empty() {
                self.by_pe.remove(&pe);
            }
        }
        self.held -= 1;
        exec(op.0);
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
