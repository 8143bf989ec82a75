//! [`Stream`]: the project's one asynchronous, in-order stream executor.
//!
//! A stream runs the work enqueued on it one item at a time, first in, first out, on a worker
//! thread of its own, while the thread that enqueued goes on; [`Stream::synchronize`] waits
//! until everything enqueued so far has run and reports the first failure since the last
//! synchronisation. A waiting thread runs due work that has not started itself, in the same
//! order and one item at a time, so a synchronisation right after an enqueue (a put on a
//! stream, then `aclrtSynchronizeStream`) costs a function call, not a trip through the
//! scheduler to the worker and back. This is what an `aclrtStream` is to the host: CANN's `_on_stream` calls,
//! the ACL runtime stand-in and kernel launches all enqueue work on it, and none of them
//! writes another executor.
//!
//! A *strict* stream (the simulator's strict completion mode) holds its work back as long as
//! nothing can have observed it: until the stream is synchronised, or until some thread of the
//! process blocks in a wait of the simulator ([`release_held`]), whichever comes first. So a
//! program that reads the result of stream work without synchronising sees stale data, as it
//! can on a device, while a program that waits for the work's effect always gets it.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use shmem_sim::Stream;
//!
//! let stream = Stream::new(true); // strict: nothing runs before it is released
//! let hits = Arc::new(AtomicU32::new(0));
//! for i in 0..3 {
//!     let hits = hits.clone();
//!     stream.enqueue(move || {
//!         assert_eq!(hits.fetch_add(1, Ordering::SeqCst), i); // in order
//!         Ok(())
//!     });
//! }
//! assert_eq!(hits.load(Ordering::SeqCst), 0);
//! stream.synchronize()?;
//! assert_eq!(hits.load(Ordering::SeqCst), 3);
//! # Ok::<(), shmem_backend::TransportError>(())
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;

use shmem_backend::TransportError;

/// One item of work.
pub type Task = Box<dyn FnOnce() -> Result<(), TransportError> + Send + 'static>;

/// An in-order stream of work with a worker thread of its own. Cloning gives another handle to
/// the same stream; when the last handle is dropped, the remaining work runs and the worker
/// ends.
#[derive(Clone)]
pub struct Stream {
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = lock(&self.handle.shared.state);
        f.debug_struct("Stream")
            .field("strict", &self.handle.shared.strict)
            .field("submitted", &s.submitted)
            .field("completed", &s.completed)
            .finish()
    }
}

/// Owned by the user-facing handles only; its drop ends the worker.
struct Handle {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    state: Mutex<State>,
    /// The worker waits here for work (or to be released).
    work: Condvar,
    /// Synchronisers wait here for progress.
    progress: Condvar,
    strict: bool,
}

#[derive(Default)]
struct State {
    tasks: VecDeque<Task>,
    /// Tasks ever enqueued, and ever finished.
    submitted: u64,
    completed: u64,
    /// A strict stream runs its tasks only up to this one.
    released_to: u64,
    /// The first failure since the last synchronisation.
    error: Option<TransportError>,
    /// A task is running (on the worker, or on a thread waiting for it): tasks run one at a
    /// time, in order.
    running: bool,
    closed: bool,
    /// A strict stream is listed in `HELD`.
    listed: bool,
}

/// Strict streams with work held back, for [`release_held`].
static HELD: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());
/// How many entries `HELD` has (read without the lock on every wait).
static HELD_COUNT: AtomicUsize = AtomicUsize::new(0);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Tasks run outside the lock, so a poisoned lock only means a panic in our own short
    // critical sections; the state is still consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Releases the held work of every strict stream of the process: called by the simulator
/// whenever a thread is about to block in a wait, because from then on the work's effect may
/// be what it waits for.
pub fn release_held() {
    if HELD_COUNT.load(Ordering::Acquire) == 0 {
        return;
    }
    let streams: Vec<Arc<Shared>> = {
        let mut held = lock(&HELD);
        let live = held.drain(..).filter_map(|w| w.upgrade()).collect();
        HELD_COUNT.store(0, Ordering::Release);
        live
    };
    for s in streams {
        lock(&s.state).listed = false;
        s.release_to(u64::MAX);
    }
}

impl Shared {
    fn release_to(&self, upto: u64) {
        let mut s = lock(&self.state);
        let upto = upto.min(s.submitted);
        if upto > s.released_to {
            s.released_to = upto;
            self.work.notify_one();
        }
    }

    /// The next task, marked running, if one may run now: none is running and a strict
    /// stream has released it.
    fn take_next(&self, s: &mut State) -> Option<Task> {
        if s.running || (self.strict && s.completed >= s.released_to) {
            return None;
        }
        let task = s.tasks.pop_front()?;
        s.running = true;
        Some(task)
    }

    /// Runs a task taken with [`Shared::take_next`] and records its end; returns the state
    /// locked again.
    fn run_task(&self, task: Task) -> MutexGuard<'_, State> {
        let result = task();
        let mut s = lock(&self.state);
        s.running = false;
        s.completed += 1;
        if let Err(e) = result
            && s.error.is_none()
        {
            s.error = Some(e);
        }
        // Whoever runs the next task: a waiter or the worker.
        self.progress.notify_all();
        self.work.notify_one();
        s
    }

    fn run(self: Arc<Self>) {
        let mut s = lock(&self.state);
        loop {
            if let Some(t) = self.take_next(&mut s) {
                drop(s);
                s = self.run_task(t);
                continue;
            }
            if s.closed && s.tasks.is_empty() && !s.running {
                return;
            }
            s = self.work.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Stream {
    /// A new stream; `strict` holds its work back until it is synchronised or some thread of
    /// the process blocks in a wait (see the module documentation).
    ///
    /// # Panics
    ///
    /// If the operating system cannot start the worker thread.
    pub fn new(strict: bool) -> Stream {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            progress: Condvar::new(),
            strict,
        });
        let worker = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("shmem-stream".into())
                .stack_size(1 << 20)
                .spawn(move || shared.run())
                .expect("cannot start a stream's worker thread")
        };
        Stream {
            handle: Arc::new(Handle {
                shared,
                worker: Mutex::new(Some(worker)),
            }),
        }
    }

    /// A stream that is strict when the simulator's strict completion mode is on
    /// (`SHMEM_SIM_STRICT`).
    pub fn from_env() -> Result<Stream, crate::SettingError> {
        Ok(Stream::new(crate::SimSettings::from_env()?.strict))
    }

    /// Whether the stream holds its work back (strict mode).
    pub fn is_strict(&self) -> bool {
        self.handle.shared.strict
    }

    /// Enqueues `task`; returns its position in the stream (1 for the first task).
    pub fn enqueue(
        &self,
        task: impl FnOnce() -> Result<(), TransportError> + Send + 'static,
    ) -> u64 {
        let shared = &self.handle.shared;
        let (n, list) = {
            let mut s = lock(&shared.state);
            s.tasks.push_back(Box::new(task));
            s.submitted += 1;
            let list = shared.strict && !std::mem::replace(&mut s.listed, true);
            (s.submitted, list)
        };
        if list {
            let mut held = lock(&HELD);
            held.push(Arc::downgrade(shared));
            HELD_COUNT.store(held.len(), Ordering::Release);
        }
        if !shared.strict {
            shared.work.notify_one();
        }
        n
    }

    /// Waits until the task at position `n` (and so every earlier one) has run, releasing held
    /// work up to it. Does not report failures; [`Stream::synchronize`] does.
    ///
    /// A task that is due and not yet started runs on the waiting thread itself, as the worker
    /// would run it (one at a time, in order): a synchronisation right after an enqueue does
    /// not wait for the worker thread to be scheduled.
    pub fn wait_for(&self, n: u64) {
        let shared = &self.handle.shared;
        shared.release_to(n);
        let mut s = lock(&shared.state);
        while s.completed < n.min(s.submitted) {
            if let Some(t) = shared.take_next(&mut s) {
                drop(s);
                s = shared.run_task(t);
                continue;
            }
            s = shared.progress.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// [`Stream::wait_for`], giving up after `timeout`: whether the task at position `n` has
    /// run (`aclrtSynchronizeStreamWithTimeout`).
    pub fn wait_for_timeout(&self, n: u64, timeout: std::time::Duration) -> bool {
        let shared = &self.handle.shared;
        shared.release_to(n);
        let deadline = std::time::Instant::now() + timeout;
        let mut s = lock(&shared.state);
        while s.completed < n.min(s.submitted) {
            let now = std::time::Instant::now();
            if now >= deadline {
                return false;
            }
            s = shared
                .progress
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// The position of the last task enqueued so far (0 before the first).
    pub fn submitted(&self) -> u64 {
        lock(&self.handle.shared.state).submitted
    }

    /// The first failure since the last synchronisation, taken (as [`Stream::synchronize`]
    /// reports it).
    pub fn take_error(&self) -> Option<TransportError> {
        lock(&self.handle.shared.state).error.take()
    }

    /// Runs `task` in stream order and waits for it: for work whose result the caller needs
    /// now (a get into host memory, a fetching atomic).
    pub fn call(
        &self,
        task: impl FnOnce() -> Result<(), TransportError> + Send + 'static,
    ) -> Result<(), TransportError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        // The caller gets the task's failure itself; the stream's record stays clean of it.
        let n = self.enqueue(move || {
            let _ = tx.send(task());
            Ok(())
        });
        self.wait_for(n);
        rx.recv().unwrap_or(Err(TransportError::Attach(
            "a stream task ended without a result".into(),
        )))
    }

    /// Waits until every task enqueued so far has run, and returns the first failure since the
    /// last synchronisation (`aclrtSynchronizeStream`).
    pub fn synchronize(&self) -> Result<(), TransportError> {
        let shared = &self.handle.shared;
        let upto = lock(&shared.state).submitted;
        self.wait_for(upto);
        match lock(&shared.state).error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The stream as an opaque pointer, for a C ABI (`aclrtStream`); the stream lives at least
    /// until [`Stream::from_raw`] takes the pointer back.
    pub fn into_raw(self) -> *mut std::ffi::c_void {
        Arc::into_raw(self.handle).cast_mut().cast()
    }

    /// A new handle to the stream behind a pointer from [`Stream::into_raw`], which stays valid.
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Stream::into_raw`] and has not been passed to [`Stream::destroy_raw`].
    pub unsafe fn from_raw(ptr: *mut std::ffi::c_void) -> Stream {
        let p = ptr.cast::<Handle>().cast_const();
        // SAFETY: `p` came from `Arc::into_raw` and its count is still held (the contract), so
        // adding a count and building a second `Arc` is sound.
        unsafe {
            Arc::increment_strong_count(p);
            Stream {
                handle: Arc::from_raw(p),
            }
        }
    }

    /// Gives back the handle that [`Stream::into_raw`] made (`aclrtDestroyStream`).
    ///
    /// # Safety
    ///
    /// `ptr` came from [`Stream::into_raw`] and is not used afterwards.
    pub unsafe fn destroy_raw(ptr: *mut std::ffi::c_void) {
        // SAFETY: the contract gives us back the count `into_raw` kept.
        drop(unsafe { Arc::from_raw(ptr.cast::<Handle>().cast_const()) });
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        {
            let mut s = lock(&self.shared.state);
            s.closed = true;
            s.released_to = u64::MAX;
        }
        self.shared.work.notify_one();
        let worker = self
            .worker
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(w) = worker
            && w.join().is_err()
        {
            tracing::warn!("a stream task panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn tasks_run_in_order_and_asynchronously() {
        let s = Stream::new(false);
        let log = Arc::new(Mutex::new(Vec::new()));
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let l = log.clone();
        s.enqueue(move || {
            go_rx.recv().unwrap();
            l.lock().unwrap().push(0);
            Ok(())
        });
        for i in 1..100 {
            let l = log.clone();
            s.enqueue(move || {
                l.lock().unwrap().push(i);
                Ok(())
            });
        }
        // The enqueuing thread went on while the first task blocks.
        assert!(log.lock().unwrap().is_empty());
        go_tx.send(()).unwrap();
        s.synchronize().unwrap();
        assert_eq!(*log.lock().unwrap(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn synchronising_threads_run_due_tasks_one_at_a_time_in_order() {
        // Four threads synchronise while tasks arrive: each task runs once, none overlaps
        // another, and they run in order, whichever thread (a waiter or the worker) runs it.
        let s = Stream::new(false);
        let log = Arc::new(Mutex::new(Vec::new()));
        let busy = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        s.wait_for(s.submitted());
                    }
                })
            })
            .collect();
        for i in 0..400 {
            let (l, b) = (log.clone(), busy.clone());
            s.enqueue(move || {
                assert_eq!(b.fetch_add(1, Ordering::SeqCst), 0, "two tasks at once");
                l.lock().unwrap().push(i);
                b.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            });
        }
        s.synchronize().unwrap();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*log.lock().unwrap(), (0..400).collect::<Vec<_>>());
    }

    #[test]
    fn the_first_failure_is_reported_once() {
        let s = Stream::new(false);
        s.enqueue(|| Err(TransportError::Attach("first".into())));
        s.enqueue(|| Err(TransportError::Attach("second".into())));
        let ran = Arc::new(AtomicU64::new(0));
        let r = ran.clone();
        s.enqueue(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        let e = s.synchronize().unwrap_err();
        assert!(e.to_string().contains("first"), "{e}");
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "work after a failure still runs"
        );
        s.synchronize().unwrap();
    }

    #[test]
    fn strict_streams_hold_work_until_synchronised_or_released() {
        let s = Stream::new(true);
        let ran = Arc::new(AtomicU64::new(0));
        let r = ran.clone();
        s.enqueue(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        // Not released: it stays held however long we look (a bounded look, not a timing
        // assumption: the worker cannot run it without a release).
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        s.synchronize().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        let r = ran.clone();
        let n = s.enqueue(move || {
            r.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        release_held();
        s.wait_for(n);
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn call_returns_the_task_result_in_order() {
        let s = Stream::new(true);
        let v = Arc::new(AtomicU64::new(0));
        let a = v.clone();
        s.enqueue(move || {
            a.store(7, Ordering::SeqCst);
            Ok(())
        });
        let b = v.clone();
        let seen = Arc::new(AtomicU64::new(0));
        let c = seen.clone();
        s.call(move || {
            c.store(b.load(Ordering::SeqCst), Ordering::SeqCst);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 7);
        let e = s
            .call(|| Err(TransportError::Attach("no".into())))
            .unwrap_err();
        assert!(e.to_string().contains("no"));
        s.synchronize().unwrap();
    }

    #[test]
    fn dropping_the_last_handle_runs_the_rest() {
        let ran = Arc::new(AtomicU64::new(0));
        {
            let s = Stream::new(true);
            for _ in 0..10 {
                let r = ran.clone();
                s.enqueue(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                });
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn raw_round_trip() {
        let s = Stream::new(false);
        let raw = s.clone().into_raw();
        // SAFETY: `raw` came from into_raw and is destroyed once, below.
        let again = unsafe { Stream::from_raw(raw) };
        again.enqueue(|| Ok(()));
        again.synchronize().unwrap();
        drop(again);
        // SAFETY: as above.
        unsafe { Stream::destroy_raw(raw) };
        s.synchronize().unwrap();
    }
}
