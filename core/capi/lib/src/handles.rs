//! Handles of objects a C program owns (created contexts, split teams): each object lives in a
//! slot of a chunk that is never freed, so the slot's address is a stable handle, and a
//! handle is checked against the slots before it is used. A destroyed object's slot is
//! reused, so creating and destroying allocates nothing once the chunks exist.
//!
//! The table takes no lock on its paths that a program repeats (look-up, insert into a slot
//! that was just freed, remove): each slot's state word says whether it is empty, being
//! written or read out, or live, and moves between those by compare-and-swap; only adding a
//! chunk takes a lock. Chunk `k` has `FIRST << k` slots, so a fixed array of chunk pointers
//! covers any number of objects a process can hold; chunk 0 is part of the table itself, so a
//! program with at most `FIRST` objects at once finds each handle with one comparison.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

/// Slots of the first chunk; each further chunk has twice as many as the one before.
const FIRST: usize = 64;
/// Chunks at most: `FIRST * (2^CHUNKS - 1)` slots, more objects than memory holds.
const CHUNKS: usize = 32;

/// A slot's states.
const EMPTY: u8 = 0;
/// Being written by `insert` or read out by `remove`: neither live nor free.
const BUSY: u8 = 1;
const LIVE: u8 = 2;

/// A table of live handles of `T`. Its first chunk is part of it, so the table does not move
/// once it has handed out a handle (the C ABI's tables are statics).
pub(crate) struct Handles<T> {
    /// Chunk 0.
    first: [Slot<T>; FIRST],
    /// Chunk `k`'s first slot (at `k - 1`), or null while it does not exist. Never freed nor
    /// moved while the table lives, so a slot keeps its address (and `first` is in a static).
    chunks: [AtomicPtr<Slot<T>>; CHUNKS - 1],
    /// Serializes adding chunks.
    grow: Mutex<()>,
    /// The index of a slot that was probably empty a moment ago (the last one freed).
    hint: AtomicUsize,
}

/// One object, or none, as its state word says. The value is written only by the thread that
/// moved the state from `EMPTY` to `BUSY`, read out only by the one that moved it from `LIVE` to
/// `BUSY`, and shared (`&T`) while the state is `LIVE`.
struct Slot<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Slot<T> {
    const fn empty() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }
}

// SAFETY: objects move between threads through the table (`T: Send`), and the table hands out
// `&T` to several threads at once (`T: Sync`); every access to a slot's value is ordered by its
// state word as `Slot` describes.
unsafe impl<T: Send + Sync> Sync for Handles<T> {}
// SAFETY: as above; the table owns its objects.
unsafe impl<T: Send> Send for Handles<T> {}

/// Chunk `k`'s length.
const fn chunk_len(k: usize) -> usize {
    FIRST << k
}

/// The index of chunk `k`'s first slot.
const fn chunk_start(k: usize) -> usize {
    FIRST * ((1 << k) - 1)
}

impl<T> Handles<T> {
    /// An empty table.
    pub(crate) const fn new() -> Self {
        Self {
            first: [const { Slot::empty() }; FIRST],
            chunks: [const { AtomicPtr::new(ptr::null_mut()) }; CHUNKS - 1],
            grow: Mutex::new(()),
            hint: AtomicUsize::new(0),
        }
    }

    /// Stores `value` and returns its handle; `None` when every slot a process can have is
    /// taken.
    pub(crate) fn insert(&self, value: T) -> Option<*mut c_void> {
        let (slot, index) = self.claim()?;
        // SAFETY: this thread moved the slot from EMPTY to BUSY, so it alone touches the value.
        unsafe { (*slot.value.get()).write(value) };
        // Release: a thread that sees LIVE (acquire) sees the value.
        slot.state.store(LIVE, Ordering::Release);
        self.hint.store(index + 1, Ordering::Relaxed);
        Some(ptr::from_ref(slot).cast_mut().cast())
    }

    /// An empty slot, moved to BUSY, and its index: the hinted one if it is still empty, else
    /// the first empty one, else the first of a new chunk.
    fn claim(&self) -> Option<(&Slot<T>, usize)> {
        let take = |slot: &Slot<T>| {
            slot.state
                .compare_exchange(EMPTY, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        };
        let hint = self.hint.load(Ordering::Relaxed);
        if let Some(slot) = self.at(hint)
            && take(slot)
        {
            return Some((slot, hint));
        }
        loop {
            let mut k = 0;
            while let Some(chunk) = self.chunk(k) {
                if let Some(i) = chunk.iter().position(take) {
                    return Some((&chunk[i], chunk_start(k) + i));
                }
                k += 1;
            }
            self.add_chunk(k)?;
        }
    }

    /// Adds chunk `k` unless another thread did meanwhile; `None` past the last chunk.
    #[cold]
    fn add_chunk(&self, k: usize) -> Option<()> {
        let at = self.chunks.get(k.checked_sub(1)?)?;
        let _held = self.grow.lock().unwrap_or_else(|p| p.into_inner());
        if at.load(Ordering::Acquire).is_null() {
            let chunk: Box<[Slot<T>]> = (0..chunk_len(k)).map(|_| Slot::empty()).collect();
            // Release: a thread that finds the pointer (acquire) sees the empty slots.
            at.store(Box::into_raw(chunk).cast(), Ordering::Release);
        }
        Some(())
    }

    /// Chunk `k`, if it exists.
    #[inline]
    fn chunk(&self, k: usize) -> Option<&[Slot<T>]> {
        let Some(at) = k.checked_sub(1) else {
            return Some(&self.first);
        };
        let base = self.chunks.get(at)?.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is a chunk of `chunk_len(k)` initialised slots that lives
        // as long as the table (`add_chunk` published it with release).
        (!base.is_null()).then(|| unsafe { std::slice::from_raw_parts(base, chunk_len(k)) })
    }

    /// The slot with index `i`, if its chunk exists.
    #[inline]
    fn at(&self, i: usize) -> Option<&Slot<T>> {
        if let Some(slot) = self.first.get(i) {
            return Some(slot);
        }
        // Chunk k holds the indices [FIRST (2^k - 1), FIRST (2^(k+1) - 1)).
        let k = (usize::BITS - 1 - (i / FIRST + 1).leading_zeros()) as usize;
        self.chunk(k)?.get(i - chunk_start(k))
    }

    /// The slot `h` is the address of, and its index, if it is one.
    #[inline]
    fn locate(&self, h: *mut c_void) -> Option<(&Slot<T>, usize)> {
        let size = size_of::<Slot<T>>();
        let off = (h as usize).wrapping_sub(self.first.as_ptr() as usize);
        if off < FIRST * size {
            return off
                .is_multiple_of(size)
                .then(|| (&self.first[off / size], off / size));
        }
        self.locate_further(h)
    }

    /// [`Self::locate`] past chunk 0.
    #[cold]
    fn locate_further(&self, h: *mut c_void) -> Option<(&Slot<T>, usize)> {
        let size = size_of::<Slot<T>>();
        let mut k = 1;
        while let Some(chunk) = self.chunk(k) {
            let off = (h as usize).wrapping_sub(chunk.as_ptr() as usize);
            if off < size_of_val(chunk) {
                return off
                    .is_multiple_of(size)
                    .then(|| (&chunk[off / size], chunk_start(k) + off / size));
            }
            k += 1;
        }
        None
    }

    /// The live object `h` names.
    ///
    /// The reference stays valid until the object is removed; OpenSHMEM forbids destroying a
    /// context or team while the program still uses its handle, so the C routines rely on it.
    #[inline]
    pub(crate) fn get(&'static self, h: *mut c_void) -> Option<&'static T> {
        let (slot, _) = self.locate(h)?;
        // Acquire: pairs with the release that made the slot live, so the value is seen whole.
        (slot.state.load(Ordering::Acquire) == LIVE)
            // SAFETY: a live slot's value is initialised and stays in place until `remove`,
            // which the contract above orders after every use.
            .then(|| unsafe { (*slot.value.get()).assume_init_ref() })
    }

    /// Takes the live object `h` names out of the table; its handle is refused from now on.
    pub(crate) fn remove(&self, h: *mut c_void) -> Option<T> {
        let (slot, index) = self.locate(h)?;
        let value = Self::take(slot)?;
        self.hint.store(index, Ordering::Relaxed);
        Some(value)
    }

    /// The object of a live slot, which becomes empty; `None` if it was not live.
    fn take(slot: &Slot<T>) -> Option<T> {
        slot.state
            .compare_exchange(LIVE, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        // SAFETY: this thread moved the slot from LIVE to BUSY, so the value is initialised and
        // no other thread reads it out; shared references to it ended with the program's last
        // use of the handle (see `get`).
        let value = unsafe { (*slot.value.get()).assume_init_read() };
        // Release: the next writer of the slot (acquire) comes after this read.
        slot.state.store(EMPTY, Ordering::Release);
        Some(value)
    }

    /// Every slot of every chunk.
    fn slots(&self) -> impl Iterator<Item = &Slot<T>> {
        (0..CHUNKS).map_while(|k| self.chunk(k)).flatten()
    }

    /// The handle of the first live object `pred` accepts.
    pub(crate) fn find(&self, pred: impl Fn(&T) -> bool) -> Option<*mut c_void> {
        self.slots().find_map(|slot| {
            let live = slot.state.load(Ordering::Acquire) == LIVE;
            // SAFETY: a live slot's value is initialised (see `get`).
            (live && pred(unsafe { (*slot.value.get()).assume_init_ref() }))
                .then(|| ptr::from_ref(slot).cast_mut().cast())
        })
    }

    /// Takes every live object out of the table.
    pub(crate) fn take_all(&self) -> Vec<T> {
        self.slots().filter_map(Self::take).collect()
    }
}

impl<T> Drop for Handles<T> {
    fn drop(&mut self) {
        drop(self.take_all());
        for (k, c) in (1..).zip(self.chunks.iter_mut()) {
            let base = *c.get_mut();
            if !base.is_null() {
                // SAFETY: `add_chunk` made this pointer with `Box::into_raw` of a boxed slice of
                // `chunk_len(k)` slots; the table is going away, so nothing refers to it.
                drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(base, chunk_len(k))) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_stable_checked_and_reused() {
        static T: Handles<String> = Handles::new();
        let hs: Vec<_> = (0..70)
            .map(|i| T.insert(format!("v{i}")).unwrap())
            .collect();
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
        assert_eq!(T.insert("again".into()), Some(hs[5]));
        let mut all = T.take_all();
        all.sort();
        assert_eq!(all.len(), 70);
        assert!(hs.iter().all(|&h| T.get(h).is_none()));
    }

    #[test]
    fn threads_insert_look_up_and_remove_at_once_without_losing_an_object() {
        static T: Handles<(usize, usize)> = Handles::new();
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    // 4 × 30 objects at once: the threads also add the second chunk.
                    for round in 0..500 {
                        let hs: Vec<_> = (0..30)
                            .map(|i| T.insert((t, round * 30 + i)).unwrap())
                            .collect();
                        for (i, &h) in hs.iter().enumerate() {
                            assert_eq!(T.get(h), Some(&(t, round * 30 + i)));
                        }
                        for (i, &h) in hs.iter().enumerate() {
                            assert_eq!(T.remove(h), Some((t, round * 30 + i)));
                        }
                    }
                });
            }
        });
        assert!(T.take_all().is_empty());
    }

    #[test]
    fn indices_map_to_chunks_and_back() {
        let t: Handles<u32> = Handles::new();
        let hs: Vec<_> = (0..150).map(|i| t.insert(i).unwrap()).collect();
        for (i, &h) in hs.iter().enumerate() {
            let (slot, index) = t.locate(h).unwrap();
            assert_eq!(index, i);
            assert!(std::ptr::eq(t.at(index).unwrap(), slot));
        }
        // 64 + 128 slots: two chunks.
        assert!(t.chunk(1).is_some() && t.chunk(2).is_none());
    }
}
