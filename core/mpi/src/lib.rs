//! A small, safe binding to Open MPI, loaded at run time (re-exported by `shmem` as
//! `shmem::mpi`).
//!
//! Nothing links against MPI. The first call to [`Mpi::get`] loads Open MPI's `libmpi` with
//! [`shmem_dl`]: exactly the file named by `SHMEM_MPI_LIB` when that variable is set (and not
//! empty), else the first of `libmpi.so.40`, `libmpi.so` (through the loader's search path),
//! `/usr/lib/x86_64-linux-gnu/libmpi.so.40`, `/usr/lib64/openmpi/lib/libmpi.so` and
//! `/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so` that loads and is Open MPI. Functions are
//! resolved on first use. A missing library or symbol is an [`MpiError`] whose source says what
//! is missing and where it was looked for; the outcome of loading is kept for the life of the
//! process. Only Open MPI is supported: MPICH and its derivatives have a different handle ABI.
//!
//! The layers are cudarc's: `sys` (the C ABI and the lazy symbol table) → `result` (one
//! `Result`-returning, still `unsafe`, wrapper per call) → this safe layer. It covers what
//! SHMEM's MPI bootstrap needs (init and finalize, communicators, rank and size, split, dup,
//! barrier, allgather, abort); it is not a general MPI binding. Run programs that use it under
//! `mpirun`:
//!
//! ```no_run
//! // mpirun -np 4 target/debug/examples/mpi_check
//! use shmem_mpi::Mpi;
//!
//! let mpi = Mpi::get()?;
//! mpi.init()?;
//! let world = mpi.world();
//! let (rank, size) = (world.rank()?, world.size()?);
//! let evens = world.split((rank % 2 == 0).then_some(0), rank)?; // None on odd ranks
//! if let Some(evens) = evens {
//!     assert_eq!(evens.size()?, (size + 1) / 2);
//!     evens.barrier()?;
//!     evens.free()?;
//! }
//! mpi.finalize()?;
//! # Ok::<(), shmem_mpi::MpiError>(())
//! ```
//!
//! # Safety rules this crate enforces
//!
//! - **State.** Calls other than [`Mpi::init`], [`Mpi::is_initialized`], [`Mpi::is_finalized`]
//!   and [`Mpi::finalize`] need MPI initialised and not finalised; otherwise they fail with
//!   [`MpiErrorKind::Usage`] instead of reaching MPI (which would abort the job).
//! - **Live handles.** A [`Comm`] is a copyable handle. Communicators made here
//!   ([`Comm::split`], [`Comm::dup`]) or adopted with [`Comm::from_raw`] are recorded as live;
//!   [`Comm::free`] removes them, after which every copy is refused, so a freed handle never
//!   reaches MPI. `free` also refuses a communicator that another thread is using at that
//!   moment, and [`Mpi::finalize`] refuses while any call is in progress.
//! - **Threads.** [`Mpi::init`] asks for `MPI_THREAD_MULTIPLE`. When MPI provides it (Open
//!   MPI 4 does), calls from several threads run concurrently. When MPI provides less (also
//!   when another component initialised MPI with a lower level), every MPI call made through
//!   this crate is serialised by one process-wide lock, which turns the program into a legal
//!   `MPI_THREAD_SERIALIZED` user. The consequence: a thread blocked in a collective holds the
//!   lock, and any other thread's MPI call in this process waits until that collective
//!   completes; two threads driving collectives on different communicators can then deadlock
//!   across processes. Under `MPI_THREAD_FUNNELED` or `MPI_THREAD_SINGLE`, calls from any
//!   thread but the one that initialised MPI are refused.
//!
//! Errors on communicators keep their error handler: on MPI's default
//! (`MPI_ERRORS_ARE_FATAL`) an MPI failure ends the job rather than returning a code
//! ([`Comm::set_errors_return`] changes that). Calls made directly to MPI by other code in the
//! process (C libraries, ...) are beyond these checks.
#![deny(unsafe_op_in_unsafe_fn)]

mod error;
mod result;
mod sys;

use std::collections::HashMap;
use std::ffi::c_int;
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};

pub use error::{MpiError, MpiErrorKind};
use sys::{Library, MPI_UNDEFINED, handle_ptr};

/// An MPI thread level (`MPI_THREAD_*`), in increasing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// `MPI_THREAD_SINGLE`: one thread only.
    Single,
    /// `MPI_THREAD_FUNNELED`: only the thread that initialised MPI calls it.
    Funneled,
    /// `MPI_THREAD_SERIALIZED`: any thread, one at a time.
    Serialized,
    /// `MPI_THREAD_MULTIPLE`: any thread, concurrently.
    Multiple,
}

impl ThreadLevel {
    /// Open MPI's value (its thread-level enum starts at 0 with `MPI_THREAD_SINGLE`).
    fn raw(self) -> c_int {
        self as c_int
    }

    fn from_raw(raw: c_int) -> ThreadLevel {
        match raw {
            i32::MIN..=0 => ThreadLevel::Single,
            1 => ThreadLevel::Funneled,
            2 => ThreadLevel::Serialized,
            _ => ThreadLevel::Multiple,
        }
    }
}

impl fmt::Display for ThreadLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ThreadLevel::Single => "MPI_THREAD_SINGLE",
            ThreadLevel::Funneled => "MPI_THREAD_FUNNELED",
            ThreadLevel::Serialized => "MPI_THREAD_SERIALIZED",
            ThreadLevel::Multiple => "MPI_THREAD_MULTIPLE",
        })
    }
}

/// The outcome of loading, kept for the life of the process.
static MPI: OnceLock<Result<Mpi, MpiError>> = OnceLock::new();

/// Open MPI's `libmpi`, loaded at run time: the entry point of this crate.
///
/// There is one per process ([`Mpi::get`]). It initialises and finalises MPI and hands out
/// the predefined communicators; see the [crate documentation](crate) for the rules it
/// enforces.
///
/// ```no_run
/// let mpi = shmem_mpi::Mpi::get()?;
/// mpi.init()?;
/// println!("rank {} of {}", mpi.world().rank()?, mpi.world().size()?);
/// mpi.finalize()?;
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
pub struct Mpi {
    lib: Library,
    /// Serialises init and finalize.
    lifecycle: Mutex<()>,
    /// The thread level MPI provides, once known.
    level: OnceLock<ThreadLevel>,
    /// Live communicators and calls in progress.
    table: Mutex<Table>,
    /// Held during every MPI call when MPI does not provide `MPI_THREAD_MULTIPLE`.
    serial: Mutex<()>,
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi")
            .field("library", &self.lib.path())
            .field("thread_level", &self.level.get())
            .finish_non_exhaustive()
    }
}

/// Bookkeeping that keeps freed handles away from MPI.
#[derive(Debug, Default)]
struct Table {
    /// Live non-predefined communicators, with the number of calls using each right now.
    live: HashMap<usize, u32>,
    /// Calls in progress, on any communicator.
    in_flight: u32,
    /// `MPI_Finalize` has started: no new calls.
    closed: bool,
}

/// How a call uses its communicator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// An ordinary call: the communicator stays live.
    Use,
    /// `MPI_Comm_free`: the communicator leaves the table first.
    Free,
}

/// A call in progress (dropping it ends the call): the table entry, then (when MPI does not
/// provide `MPI_THREAD_MULTIPLE`) the process-wide lock. Fields drop in order: lock first.
struct Entered<'a> {
    _serial: Option<MutexGuard<'a, ()>>,
    _call: InFlight<'a>,
}

/// The table's record of one call in progress.
struct InFlight<'a> {
    mpi: &'a Mpi,
    /// The communicator whose use count this call holds (not for predefined ones or frees).
    comm: Option<usize>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut t = self.mpi.table();
        t.in_flight = t.in_flight.saturating_sub(1);
        if let Some(c) = self.comm
            && let Some(n) = t.live.get_mut(&c)
        {
            *n = n.saturating_sub(1);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Mpi {
    /// Loads Open MPI's `libmpi` (on the first call; later calls return the same outcome).
    /// This does not initialise MPI.
    ///
    /// Fails with [`MpiErrorKind::Unavailable`] if no Open MPI library is found (the error's
    /// source lists every place tried) or if `SHMEM_MPI_LIB` names a file that cannot be loaded
    /// or is not Open MPI.
    ///
    /// ```
    /// match shmem_mpi::Mpi::get() {
    ///     Ok(mpi) => println!("loaded {mpi:?}"),
    ///     Err(e) => println!("no MPI: {e}"),
    /// }
    /// ```
    pub fn get() -> Result<&'static Mpi, MpiError> {
        MPI.get_or_init(|| {
            let env = std::env::var_os(sys::LIB_ENV);
            Library::load(env.as_deref(), sys::CANDIDATES).map(|lib| Mpi {
                lib,
                lifecycle: Mutex::new(()),
                level: OnceLock::new(),
                table: Mutex::new(Table::default()),
                serial: Mutex::new(()),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Initialises MPI with `MPI_Init_thread`, asking for `MPI_THREAD_MULTIPLE`, unless it is
    /// initialised already (by this crate or by anyone else in the process), in which case it
    /// does nothing. Fails if MPI was finalised: MPI cannot be initialised twice in a process.
    ///
    /// The caller owns this initialisation and ends it with [`Mpi::finalize`].
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// mpi.init()?; // already initialised: nothing happens
    /// assert!(mpi.is_initialized()?);
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn init(&self) -> Result<(), MpiError> {
        self.init_thread(ThreadLevel::Multiple).map(|_| ())
    }

    /// [`Mpi::init`] asking for `required` (a program that wants less than
    /// `MPI_THREAD_MULTIPLE`); returns whether this call initialised MPI (`false`: it already
    /// was, with whatever level it was given).
    pub fn init_thread(&self, required: ThreadLevel) -> Result<bool, MpiError> {
        const CALL: &str = "MPI_Init_thread";
        let _lifecycle = lock(&self.lifecycle);
        if self.is_finalized()? {
            let m = "MPI was finalised; it cannot be initialised again in this process";
            return Err(MpiError::usage(CALL, m));
        }
        if result::state_flag(&self.lib, false)? {
            return Ok(false);
        }
        // SAFETY: MPI is neither initialised nor finalised (checked just above), and no other
        // thread can initialise it through this crate meanwhile (we hold the lifecycle lock).
        // Other calls of this crate fail their state check until this one is done.
        let provided = unsafe { result::init_thread(&self.lib, required.raw()) }?;
        // Only ever set after MPI is initialised, and the level cannot change afterwards.
        let level = ThreadLevel::from_raw(provided);
        let _ = self.level.set(level);
        tracing::debug!("mpi: initialised {} with {level}", self.lib.path());
        Ok(true)
    }

    /// Whether MPI is initialised and not yet finalised, i.e. whether MPI calls can be made
    /// now. Works at any time, also before [`Mpi::init`].
    ///
    /// ```
    /// if let Ok(mpi) = shmem_mpi::Mpi::get() {
    ///     println!("MPI usable: {:?}", mpi.is_initialized());
    /// }
    /// ```
    pub fn is_initialized(&self) -> Result<bool, MpiError> {
        Ok(result::state_flag(&self.lib, false)? && !self.is_finalized()?)
    }

    /// Whether MPI was finalised (`MPI_Finalized`); works at any time.
    pub fn is_finalized(&self) -> Result<bool, MpiError> {
        result::state_flag(&self.lib, true)
    }

    /// `MPI_COMM_WORLD`: every process started by `mpirun`.
    pub fn world(&self) -> Comm {
        Comm(self.lib.handles.comm_world)
    }

    /// `MPI_COMM_SELF`: this process alone.
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// assert_eq!(mpi.self_comm().size()?, 1);
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn self_comm(&self) -> Comm {
        Comm(self.lib.handles.comm_self)
    }

    /// Whether MPI provides `MPI_THREAD_MULTIPLE` (`MPI_Query_thread`), so that calls from
    /// several threads run concurrently instead of being serialised by this crate.
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// if !mpi.thread_multiple()? {
    ///     eprintln!("MPI calls of this process are serialised");
    /// }
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn thread_multiple(&self) -> Result<bool, MpiError> {
        self.check_active("MPI_Query_thread")?;
        Ok(self.level()? == ThreadLevel::Multiple)
    }

    /// Finalises MPI with `MPI_Finalize` if it is initialised and not finalised yet (else does
    /// nothing). It is collective over all processes of the job. Fails, without finalising,
    /// while another thread is inside an MPI call made through this crate.
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// mpi.finalize()?;
    /// mpi.finalize()?; // already finalised: nothing happens
    /// assert!(!mpi.is_initialized()?);
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn finalize(&self) -> Result<(), MpiError> {
        const CALL: &str = "MPI_Finalize";
        let _lifecycle = lock(&self.lifecycle);
        if !self.is_initialized()? {
            return Ok(());
        }
        {
            let mut t = self.table();
            if t.in_flight > 0 {
                let n = t.in_flight;
                let m = format!(
                    "{n} MPI call(s) are still in progress in other threads; finalise after"
                );
                return Err(MpiError::usage(CALL, m));
            }
            t.closed = true;
        }
        let res = self.serialize(CALL).and_then(|_serial| {
            // SAFETY: MPI is initialised and not finalised (checked above under the lifecycle
            // lock); no call of this crate is in progress and none can start (`closed`); the
            // thread rules hold (`serialize`).
            unsafe { result::finalize(&self.lib) }
        });
        if res.is_err() {
            self.table().closed = false;
        }
        res
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }

    /// Fails unless MPI is initialised and not finalised.
    fn check_active(&self, call: &'static str) -> Result<(), MpiError> {
        if !result::state_flag(&self.lib, false)? {
            let m = "MPI is not initialised (call Mpi::init first)";
            return Err(MpiError::usage(call, m));
        }
        if self.is_finalized()? {
            return Err(MpiError::usage(call, "MPI was finalised"));
        }
        Ok(())
    }

    /// The thread level MPI provides. MPI must be initialised.
    fn level(&self) -> Result<ThreadLevel, MpiError> {
        if let Some(&l) = self.level.get() {
            return Ok(l);
        }
        // SAFETY: every caller has just checked that MPI is initialised and not finalised.
        let l = ThreadLevel::from_raw(unsafe { result::thread_query(&self.lib, false) }?);
        let _ = self.level.set(l);
        Ok(l)
    }

    /// What the thread level demands of a call from this thread: nothing (`None`) under
    /// `MPI_THREAD_MULTIPLE`, else the process-wide lock, and under `MPI_THREAD_FUNNELED` or
    /// `MPI_THREAD_SINGLE` also that this is the thread that initialised MPI.
    fn serialize(&self, call: &'static str) -> Result<Option<MutexGuard<'_, ()>>, MpiError> {
        let level = self.level()?;
        if level == ThreadLevel::Multiple {
            return Ok(None);
        }
        self.check_thread(call, level)?;
        Ok(Some(lock(&self.serial)))
    }

    /// Under `MPI_THREAD_FUNNELED` or `MPI_THREAD_SINGLE`, only the thread that initialised
    /// MPI may call it.
    fn check_thread(&self, call: &'static str, level: ThreadLevel) -> Result<(), MpiError> {
        // SAFETY: every caller has just checked that MPI is initialised and not finalised.
        if level < ThreadLevel::Serialized && unsafe { result::thread_query(&self.lib, true) }? == 0
        {
            let m = format!(
                "MPI provides only {level}: only the thread that initialised it may call it"
            );
            return Err(MpiError::usage(call, m));
        }
        Ok(())
    }

    /// Starts a call on `comm`: records it in the table (refusing a communicator that is not
    /// live), checks MPI's state and applies the thread rules.
    fn enter(
        &self,
        call: &'static str,
        comm: Comm,
        access: Access,
    ) -> Result<Entered<'_>, MpiError> {
        let (c, h, free) = (comm.0, self.lib.handles, access == Access::Free);
        let predefined = c == h.comm_world || c == h.comm_self;
        let mut t = self.table();
        let refusal = match (t.live.get(&c).copied(), predefined) {
            _ if t.closed => Some("MPI is being finalised or was finalised".to_owned()),
            _ if c == h.comm_null => Some("MPI_COMM_NULL is not a communicator".to_owned()),
            (_, true) if free => {
                Some("MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed".to_owned())
            }
            (None, false) => Some(format!(
                "communicator {c:#x} is not live: it was freed, or not obtained through shmem_mpi"
            )),
            (Some(n), false) if free && n > 0 => Some(format!(
                "communicator {c:#x} is in use by {n} call(s) in other threads; free it after"
            )),
            _ => None,
        };
        if let Some(m) = refusal {
            return Err(MpiError::usage(call, m));
        }
        let counted = match (predefined, free) {
            (true, _) => None,
            (false, true) => {
                t.live.remove(&c);
                None
            }
            (false, false) => {
                *t.live.entry(c).or_default() += 1;
                Some(c)
            }
        };
        t.in_flight += 1;
        drop(t);
        let in_flight = InFlight {
            mpi: self,
            comm: counted,
        };
        match self.check_active(call).and_then(|()| self.serialize(call)) {
            Ok(serial) => Ok(Entered {
                _serial: serial,
                _call: in_flight,
            }),
            Err(e) => {
                if free {
                    self.adopt(c);
                }
                Err(e)
            }
        }
    }

    /// Records `raw` as a live communicator (predefined and null handles need no record).
    fn adopt(&self, raw: usize) {
        let h = self.lib.handles;
        if raw != h.comm_null && raw != h.comm_world && raw != h.comm_self {
            self.table().live.entry(raw).or_insert(0);
        }
    }

    /// A new handle from MPI: `None` for `MPI_COMM_NULL`, else recorded as live.
    fn adopt_new(&self, raw: sys::MpiComm) -> Option<Comm> {
        let raw = raw.expose_provenance();
        if raw == self.lib.handles.comm_null {
            return None;
        }
        self.adopt(raw);
        Some(Comm(raw))
    }
}

/// An MPI communicator: a raw `MPI_Comm` handle (in Open MPI, a pointer).
///
/// It is `Copy`; its methods refuse a communicator that was freed (through any copy), or
/// that MPI is not ready for, with an [`MpiError`] of kind [`MpiErrorKind::Usage`].
///
/// ```no_run
/// let mpi = shmem_mpi::Mpi::get()?;
/// mpi.init()?;
/// let world = mpi.world();
/// println!("rank {} of {}", world.rank()?, world.size()?);
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Comm(usize);

impl Comm {
    /// Adopts a raw `MPI_Comm` handle from C code (its address as an integer), e.g. the value
    /// behind the `MPI_Comm*` that CANN's `comm_args` points to. `MPI_COMM_WORLD`,
    /// `MPI_COMM_SELF` and `MPI_COMM_NULL` are recognised; any other handle is recorded as
    /// live until [`Comm::free`].
    ///
    /// # Safety
    ///
    /// `raw` must be `MPI_COMM_NULL` or a valid Open MPI communicator of this process, and
    /// must stay valid while this `Comm` (or a copy) is used: code outside this crate must
    /// not free it before then.
    pub unsafe fn from_raw(raw: usize) -> Comm {
        if let Ok(mpi) = Mpi::get() {
            mpi.adopt(raw);
        }
        Comm(raw)
    }

    /// The raw `MPI_Comm` handle (its address as an integer), to hand to C code.
    pub fn as_raw(&self) -> usize {
        self.0
    }

    fn ptr(self) -> sys::MpiComm {
        handle_ptr(self.0)
    }

    /// Runs `f` on the raw handle inside [`Mpi::enter`]'s checks: when `f` runs, MPI is active,
    /// the handle is live or predefined (so valid: see [`Comm::from_raw`]) and stays so until
    /// `f` returns, and the thread rules are applied.
    fn call<T>(
        self,
        name: &'static str,
        f: impl FnOnce(&Library, sys::MpiComm) -> Result<T, MpiError>,
    ) -> Result<T, MpiError> {
        let mpi = Mpi::get()?;
        let _call = mpi.enter(name, self, Access::Use)?;
        f(&mpi.lib, self.ptr())
    }

    /// This process's rank in the communicator (`MPI_Comm_rank`).
    pub fn rank(&self) -> Result<i32, MpiError> {
        self.call("MPI_Comm_rank", |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::comm_query(lib, c, false) }
        })
    }

    /// The number of processes in the communicator (`MPI_Comm_size`).
    pub fn size(&self) -> Result<i32, MpiError> {
        self.call("MPI_Comm_size", |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::comm_query(lib, c, true) }
        })
    }

    /// Collective: splits the communicator by `color` (`MPI_Comm_split`); ranks in the new
    /// communicator are ordered by `key`, then by rank here. A process passing `None`
    /// (`MPI_UNDEFINED`) joins no new communicator and gets `Ok(None)`.
    ///
    /// A color must not be negative: such a process fails at once, without calling MPI (and
    /// the others then wait for it in the split).
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// let world = mpi.world();
    /// let rank = world.rank()?;
    /// if let Some(evens) = world.split((rank % 2 == 0).then_some(0), rank)? {
    ///     assert_eq!(evens.rank()?, rank / 2);
    ///     evens.free()?;
    /// }
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<Comm>, MpiError> {
        const CALL: &str = "MPI_Comm_split";
        let color = match color {
            None => MPI_UNDEFINED,
            Some(c) if c >= 0 => c,
            Some(c) => {
                let m = format!("color {c} is negative; pass None for MPI_UNDEFINED");
                return Err(MpiError::usage(CALL, m));
            }
        };
        let new = self.call(CALL, |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::comm_new(lib, c, Some((color, key))) }
        })?;
        Ok(Mpi::get()?.adopt_new(new))
    }

    /// Collective: a duplicate with the same group and its own communication context
    /// (`MPI_Comm_dup`), recorded as live.
    pub fn dup(&self) -> Result<Comm, MpiError> {
        const CALL: &str = "MPI_Comm_dup";
        let new = self.call(CALL, |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::comm_new(lib, c, None) }
        })?;
        Mpi::get()?
            .adopt_new(new)
            .ok_or_else(|| MpiError::usage(CALL, "MPI returned MPI_COMM_NULL for a duplicate"))
    }

    /// Collective: waits until every process of the communicator has entered the barrier
    /// (`MPI_Barrier`).
    pub fn barrier(&self) -> Result<(), MpiError> {
        self.call("MPI_Barrier", |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::barrier(lib, c) }
        })
    }

    /// Makes MPI failures on this communicator return error codes (`MPI_ERRORS_RETURN`)
    /// instead of ending the job.
    pub fn set_errors_return(&self) -> Result<(), MpiError> {
        self.call("MPI_Comm_set_errhandler", |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::comm_set_errors_return(lib, c) }
        })
    }

    /// Collective: `MPI_Allgather` of `send.len()` bytes from every rank into `recv`, which
    /// must hold `send.len()` bytes per rank (checked). Every rank must pass the same length.
    pub fn allgather_bytes(&self, send: &[u8], recv: &mut [u8]) -> Result<(), MpiError> {
        self.call("MPI_Allgather", |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            unsafe { result::allgather_bytes(lib, c, send, recv) }
        })
    }

    /// Frees the communicator (`MPI_Comm_free`); every copy of the handle is refused
    /// afterwards. `MPI_COMM_WORLD` and `MPI_COMM_SELF` cannot be freed, and a communicator
    /// that another thread is using right now is refused (nothing is freed).
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// let all = mpi.world().split(Some(0), 0)?.expect("every rank passed color 0");
    /// let copy = all;
    /// all.free()?;
    /// assert!(copy.barrier().is_err()); // freed: refused
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn free(self) -> Result<(), MpiError> {
        let mpi = Mpi::get()?;
        let call = mpi.enter("MPI_Comm_free", self, Access::Free)?;
        // SAFETY: `enter` checked that MPI is active and that the handle was live and used by
        // no call, and removed it from the table, so no later call can use it; the thread
        // rules are applied; it is not predefined (refused by `enter`).
        let res = unsafe { result::comm_free(&mpi.lib, self.ptr()) };
        drop(call);
        if res.is_err() {
            // Not freed: still usable.
            mpi.adopt(self.0);
        }
        res
    }

    /// `MPI_Abort`: ends the job with `code`; normally does not return. When MPI calls are
    /// serialised and another thread is inside one, this fails at once rather than wait (the
    /// caller should then exit, which makes `mpirun` end the job).
    pub fn abort(&self, code: i32) -> Result<(), MpiError> {
        const CALL: &str = "MPI_Abort";
        let mpi = Mpi::get()?;
        // Not `enter`: it would wait for the serialisation lock.
        let t = mpi.table();
        let h = mpi.lib.handles;
        let known = self.0 == h.comm_world || self.0 == h.comm_self || t.live.contains_key(&self.0);
        if t.closed || !known {
            let m = "the communicator is not live, or MPI is being finalised";
            return Err(MpiError::usage(CALL, m));
        }
        mpi.check_active(CALL)?;
        let level = mpi.level()?;
        let _serial = if level == ThreadLevel::Multiple {
            None
        } else {
            mpi.check_thread(CALL, level)?;
            match mpi.serial.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => {
                    let m =
                        "another thread is inside an MPI call, and MPI is not MPI_THREAD_MULTIPLE";
                    return Err(MpiError::usage(CALL, m));
                }
            }
        };
        // SAFETY: MPI is active and the handle is live or predefined (checked above; holding
        // the table lock keeps it from being freed meanwhile); the thread rules are applied.
        unsafe { result::abort(&mpi.lib, self.ptr(), code) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_loads_without_initialising() {
        let mpi = Mpi::get().expect("Open MPI is installed on this machine");
        assert!(!mpi.is_initialized().expect("MPI_Initialized"));
        assert_ne!(mpi.world(), mpi.self_comm());
        assert_eq!(mpi.world().as_raw(), mpi.lib.handles.comm_world);
    }

    #[test]
    fn calls_before_init_are_refused_not_fatal() {
        let mpi = Mpi::get().expect("Open MPI is installed on this machine");
        let e = mpi.world().barrier().unwrap_err();
        assert_eq!(e.kind(), MpiErrorKind::Usage);
        assert_eq!(e.call(), Some("MPI_Barrier"));
        assert!(e.to_string().contains("not initialised"), "{e}");
        assert!(mpi.thread_multiple().is_err());
        assert!(!mpi.is_initialized().expect("MPI_Initialized"));
    }

    #[test]
    fn unknown_freed_and_predefined_handles_are_refused() {
        let mpi = Mpi::get().expect("Open MPI is installed on this machine");
        assert!(
            Comm(0x10)
                .rank()
                .unwrap_err()
                .to_string()
                .contains("not live")
        );
        assert!(
            mpi.world()
                .free()
                .unwrap_err()
                .to_string()
                .contains("cannot be freed")
        );
        let null = Comm(mpi.lib.handles.comm_null);
        assert!(
            null.size()
                .unwrap_err()
                .to_string()
                .contains("MPI_COMM_NULL")
        );
        let e = mpi.world().split(Some(-1), 0).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
    }

    #[test]
    fn thread_levels_are_open_mpis() {
        assert_eq!(ThreadLevel::Multiple.raw(), 3);
        for l in [
            ThreadLevel::Single,
            ThreadLevel::Funneled,
            ThreadLevel::Serialized,
            ThreadLevel::Multiple,
        ] {
            assert_eq!(ThreadLevel::from_raw(l.raw()), l);
        }
        assert_eq!(ThreadLevel::Funneled.to_string(), "MPI_THREAD_FUNNELED");
    }
}
