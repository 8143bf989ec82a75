//! The process-wide registry of live instances, keyed by instance id.
//!
//! It enforces that an id names at most one live instance per process (as CANN's context
//! domain does) and lets the CANN-compatible layer find an instance by id. The Rust API never
//! looks instances up here: it passes [`Instance`](crate::Instance) handles.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{Error, Result};
use crate::instance::Inner;

enum Entry {
    /// `init` is running for this id.
    Creating,
    /// The instance is initialised.
    Live(Weak<Inner>),
}

static REGISTRY: Mutex<BTreeMap<u64, Entry>> = Mutex::new(BTreeMap::new());

fn registry() -> MutexGuard<'static, BTreeMap<u64, Entry>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// A claim on an id while its instance is being created; dropping it without
/// [`Claim::commit`] frees the id again.
#[derive(Debug)]
pub(crate) struct Claim {
    id: u64,
    committed: bool,
}

/// Claims `id` for a new instance, or fails if an instance with that id is live or being
/// created.
pub(crate) fn claim(id: u64) -> Result<Claim> {
    let mut r = registry();
    match r.get(&id) {
        Some(Entry::Creating) => Err(Error::AlreadyInitialized { instance_id: id }),
        Some(Entry::Live(w)) if w.strong_count() > 0 => {
            Err(Error::AlreadyInitialized { instance_id: id })
        }
        _ => {
            r.insert(id, Entry::Creating);
            Ok(Claim {
                id,
                committed: false,
            })
        }
    }
}

impl Claim {
    /// Records the created instance under the claimed id.
    pub(crate) fn commit(mut self, inner: &Arc<Inner>) {
        registry().insert(self.id, Entry::Live(Arc::downgrade(inner)));
        self.committed = true;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.committed {
            registry().remove(&self.id);
        }
    }
}

/// Forgets instance `id` (after its finalize).
pub(crate) fn release(id: u64) {
    registry().remove(&id);
}

/// The live instance with id `id`.
pub(crate) fn lookup(id: u64) -> Option<Arc<Inner>> {
    match registry().get(&id) {
        Some(Entry::Live(w)) => w.upgrade(),
        _ => None,
    }
}

/// Whether instance `id` is being created right now.
pub(crate) fn is_creating(id: u64) -> bool {
    matches!(registry().get(&id), Some(Entry::Creating))
}

/// The ids of the live instances, in order.
pub(crate) fn live_ids() -> Vec<u64> {
    registry()
        .iter()
        .filter_map(|(id, e)| match e {
            Entry::Live(w) if w.strong_count() > 0 => Some(*id),
            _ => None,
        })
        .collect()
}
