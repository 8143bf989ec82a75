//! Handles of objects a C program owns (created contexts, split teams): each object lives in a
//! slot of a chunk that is never freed, so the slot's address is a stable handle, and a
//! handle is checked against the slots before it is used. A destroyed object's slot is
//! reused, so creating and destroying allocates nothing once the chunks exist.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

/// Slots added at a time.
const CHUNK: usize = 32;

/// A table of live handles of `T`.
pub(crate) struct Handles<T> {
    slab: Mutex<Slab<T>>,
}

struct Slab<T> {
    /// Never freed nor moved: a chunk's slots keep their addresses while the process lives.
    chunks: Vec<Box<[Slot<T>]>>,
    /// Addresses of the empty slots.
    free: Vec<usize>,
}

/// One object, or none; read and written only under the table's lock, or through a shared
/// reference handed out for a live object (see [`Handles::get`]).
struct Slot<T>(UnsafeCell<Option<T>>);

// SAFETY: the slots are reached only under the lock, except for shared references to live
// objects, which `T: Sync` allows across threads; objects move between threads (`T: Send`).
unsafe impl<T: Send> Send for Slab<T> {}
// SAFETY: as above; the table hands out `&T` to several threads at once.
unsafe impl<T: Send + Sync> Sync for Handles<T> {}

impl<T> Handles<T> {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Self {
            slab: Mutex::new(Slab {
                chunks: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slab<T>> {
        self.slab.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `value` and returns its handle.
    pub(crate) fn insert(&self, value: T) -> *mut c_void {
        let mut slab = self.lock();
        let at = match slab.free.pop() {
            Some(at) => at,
            None => slab.grow(),
        };
        // SAFETY: `at` is an empty slot of a chunk that lives as long as the process; the lock
        // is held, and no reference to an empty slot's object exists.
        unsafe { *(*(at as *const Slot<T>)).0.get() = Some(value) };
        at as *mut c_void
    }

    /// The live object `h` names.
    ///
    /// The reference stays valid until the object is removed; OpenSHMEM forbids destroying a
    /// context or team while the program still uses its handle, so the C routines rely on it.
    pub(crate) fn get(&'static self, h: *mut c_void) -> Option<&'static T> {
        let slab = self.lock();
        let slot = slab.slot(h)?;
        // SAFETY: a slot of a never-freed chunk; the lock is held while it is read, and the
        // object stays in place until `remove`, which the contract above orders after every use.
        unsafe { (*slot.0.get()).as_ref() }
    }

    /// Takes the live object `h` names out of the table; its handle is refused from now on.
    pub(crate) fn remove(&self, h: *mut c_void) -> Option<T> {
        let mut slab = self.lock();
        let slot = slab.slot(h)?;
        // SAFETY: under the lock; no shared reference outlives its object (see `get`).
        let value = unsafe { (*slot.0.get()).take() }?;
        slab.free.push(h as usize);
        Some(value)
    }

    /// The handle of the first live object `pred` accepts.
    pub(crate) fn find(&self, pred: impl Fn(&T) -> bool) -> Option<*mut c_void> {
        let slab = self.lock();
        slab.chunks.iter().flat_map(|c| c.iter()).find_map(|slot| {
            // SAFETY: under the lock.
            let value = unsafe { (*slot.0.get()).as_ref() }?;
            pred(value).then(|| std::ptr::from_ref(slot).cast_mut().cast())
        })
    }

    /// Takes every live object out of the table.
    pub(crate) fn take_all(&self) -> Vec<T> {
        let mut slab = self.lock();
        let Slab { chunks, free } = &mut *slab;
        let mut out = Vec::new();
        for slot in chunks.iter().flat_map(|c| c.iter()) {
            // SAFETY: under the lock.
            if let Some(value) = unsafe { (*slot.0.get()).take() } {
                free.push(std::ptr::from_ref(slot) as usize);
                out.push(value);
            }
        }
        out
    }
}

impl<T> Slab<T> {
    /// The slot `h` is the address of, if it is one.
    fn slot(&self, h: *mut c_void) -> Option<&Slot<T>> {
        let size = size_of::<Slot<T>>();
        let h = h as usize;
        self.chunks.iter().find_map(|c| {
            let base = c.as_ptr() as usize;
            let off = h.checked_sub(base)?;
            (off % size == 0).then(|| c.get(off / size)).flatten()
        })
    }

    /// Adds a chunk of empty slots; returns one, lists the others as free.
    fn grow(&mut self) -> usize {
        let chunk: Box<[Slot<T>]> = (0..CHUNK).map(|_| Slot(UnsafeCell::new(None))).collect();
        let base = chunk.as_ptr() as usize;
        let size = size_of::<Slot<T>>();
        self.free.reserve(CHUNK);
        self.free.extend((1..CHUNK).rev().map(|i| base + i * size));
        self.chunks.push(chunk);
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_stable_checked_and_reused() {
        static T: Handles<String> = Handles::new();
        let hs: Vec<_> = (0..70).map(|i| T.insert(format!("v{i}"))).collect();
        for (i, &h) in hs.iter().enumerate() {
            assert_eq!(T.get(h).map(String::as_str), Some(format!("v{i}").as_str()));
        }
        assert_eq!(T.find(|s| s == "v65"), Some(hs[65]));
        // Not a slot: one byte in, and a stranger's address.
        assert!(T.get(hs[3].cast::<u8>().wrapping_add(1).cast()).is_none());
        let x = 0u64;
        assert!(T.get((&raw const x).cast_mut().cast()).is_none());
        assert_eq!(T.remove(hs[5]).as_deref(), Some("v5"));
        assert!(T.get(hs[5]).is_none());
        assert!(T.remove(hs[5]).is_none());
        // The freed slot is reused before any new chunk.
        assert_eq!(T.insert("again".into()), hs[5]);
        let mut all = T.take_all();
        all.sort();
        assert_eq!(all.len(), 70);
        assert!(hs.iter().all(|&h| T.get(h).is_none()));
    }
}
