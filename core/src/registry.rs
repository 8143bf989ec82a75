//! A process-wide table of live objects by id, with a claim while one is being created.
//!
//! The instances use one: it enforces that an id names at most one live
//! instance per process (as CANN's context domain does) and lets the CANN-compatible layer
//! find an instance by id. The Rust API never looks instances up: it passes handles.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::{Error, Result};

enum Entry<T> {
    /// Creation is running for this id.
    Creating,
    /// The object is live (while a strong handle exists).
    Live(Weak<T>),
}

/// Live objects of type `T` by id.
pub(crate) struct Registry<T> {
    map: Mutex<BTreeMap<u64, Entry<T>>>,
}

/// A claim on an id while its object is being created; dropping it without
/// [`Claim::commit`] frees the id again.
pub(crate) struct Claim<'r, T> {
    registry: &'r Registry<T>,
    id: u64,
    committed: bool,
}

impl<T> Registry<T> {
    pub(crate) const fn new() -> Registry<T> {
        Registry {
            map: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Entry<T>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims `id` for a new object, or fails if one with that id is live or being created.
    pub(crate) fn claim(&self, id: u64) -> Result<Claim<'_, T>> {
        let mut r = self.lock();
        match r.get(&id) {
            Some(Entry::Creating) => Err(Error::AlreadyInitialized { instance_id: id }),
            Some(Entry::Live(w)) if w.strong_count() > 0 => {
                Err(Error::AlreadyInitialized { instance_id: id })
            }
            _ => {
                r.insert(id, Entry::Creating);
                Ok(Claim {
                    registry: self,
                    id,
                    committed: false,
                })
            }
        }
    }

    /// Forgets `id`.
    pub(crate) fn release(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// The live object with id `id`.
    pub(crate) fn lookup(&self, id: u64) -> Option<Arc<T>> {
        match self.lock().get(&id) {
            Some(Entry::Live(w)) => w.upgrade(),
            _ => None,
        }
    }

    /// Whether the object with id `id` is being created right now.
    pub(crate) fn is_creating(&self, id: u64) -> bool {
        matches!(self.lock().get(&id), Some(Entry::Creating))
    }

    /// The ids of the live objects, in order.
    pub(crate) fn live_ids(&self) -> Vec<u64> {
        self.lock()
            .iter()
            .filter_map(|(id, e)| match e {
                Entry::Live(w) if w.strong_count() > 0 => Some(*id),
                _ => None,
            })
            .collect()
    }
}

impl<T> Claim<'_, T> {
    /// Records the created object under the claimed id.
    pub(crate) fn commit(mut self, object: &Arc<T>) {
        self.registry
            .lock()
            .insert(self.id, Entry::Live(Arc::downgrade(object)));
        self.committed = true;
    }
}

impl<T> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        if !self.committed {
            self.registry.release(self.id);
        }
    }
}

impl<T> std::fmt::Debug for Claim<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim").field("id", &self.id).finish()
    }
}
