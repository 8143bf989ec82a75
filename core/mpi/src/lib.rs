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
//!     assert_eq!(evens.comm().size()?, (size + 1) / 2);
//!     evens.comm().barrier()?;
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
//! - **Valid handles, by ownership.** A communicator made here ([`Comm::split`],
//!   [`Comm::dup`]) is an [`OwnedComm`]: [`OwnedComm::free`] consumes it, and the copyable
//!   [`Comm`] handles it lends ([`OwnedComm::comm`]) borrow it, so no handle outlives the free
//!   and none is in use in another thread while it runs. The predefined communicators
//!   ([`Mpi::world`], [`Mpi::self_comm`]) cannot be freed. A handle from C code is borrowed
//!   with the `unsafe` [`Comm::from_raw`], whose caller vouches for it. [`Mpi::finalize`]
//!   refuses while any call is in progress, and no call starts while it runs.
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

use std::ffi::c_int;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{
    Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard, TryLockError, TryLockResult,
};

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
    /// From Open MPI's value (its thread-level enum starts at 0 with `MPI_THREAD_SINGLE`, and
    /// `level as c_int` is the way back).
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
    /// Read-held by every call in progress, write-held by `MPI_Finalize`.
    calls: RwLock<()>,
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

/// What the thread rules hold during a call: the process-wide lock, unless MPI provides
/// `MPI_THREAD_MULTIPLE`.
type Serial<'a> = Option<MutexGuard<'a, ()>>;

/// A call in progress: the thread rules' lock (if any), then the read side of
/// [`Mpi::calls`]. Fields drop in order: the serialisation lock first.
type Entered<'a> = (Serial<'a>, RwLockReadGuard<'a, ()>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A lock taken without waiting (a poisoned one too), or `None` if someone holds it.
fn acquired<G>(r: TryLockResult<G>) -> Option<G> {
    match r {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
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
                calls: RwLock::new(()),
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
        if self.flag(result::initialized)? {
            return Ok(false);
        }
        let (argc, argv) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: MPI allows NULL argc/argv. MPI is neither initialised nor finalised (checked
        // just above), and no other thread can initialise it through this crate meanwhile (we
        // hold the lifecycle lock). Other calls of this crate fail their state check until
        // this one is done.
        let provided = unsafe { result::init_thread(&self.lib, argc, argv, required as c_int) }?;
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
        Ok(self.flag(result::initialized)? && !self.is_finalized()?)
    }

    /// Whether MPI was finalised (`MPI_Finalized`); works at any time.
    pub fn is_finalized(&self) -> Result<bool, MpiError> {
        self.flag(result::finalized)
    }

    /// `MPI_Initialized` or `MPI_Finalized`.
    fn flag(&self, f: unsafe fn(&Library) -> Result<c_int, MpiError>) -> Result<bool, MpiError> {
        // SAFETY: `flag` is only given these two, which MPI allows at any time, from any
        // thread.
        Ok(unsafe { f(&self.lib) }? != 0)
    }

    /// `MPI_COMM_WORLD`: every process started by `mpirun`.
    pub fn world(&self) -> Comm<'static> {
        Comm::new(self.lib.handles.comm_world)
    }

    /// `MPI_COMM_SELF`: this process alone.
    ///
    /// ```no_run
    /// let mpi = shmem_mpi::Mpi::get()?;
    /// mpi.init()?;
    /// assert_eq!(mpi.self_comm().size()?, 1);
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn self_comm(&self) -> Comm<'static> {
        Comm::new(self.lib.handles.comm_self)
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
        let Some(_calls) = acquired(self.calls.try_write()) else {
            let m = "MPI calls are still in progress in other threads; finalise after";
            return Err(MpiError::usage(CALL, m));
        };
        let _serial = self.serialize(CALL, true)?;
        // SAFETY: MPI is initialised and not finalised (checked above under the lifecycle
        // lock); no call of this crate is in progress and none can start (we hold `calls`);
        // the thread rules hold (`serialize`).
        unsafe { result::finalize(&self.lib) }
    }

    /// Fails unless MPI is initialised and not finalised.
    fn check_active(&self, call: &'static str) -> Result<(), MpiError> {
        if !self.flag(result::initialized)? {
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
        let l = ThreadLevel::from_raw(unsafe { result::query_thread(&self.lib) }?);
        let _ = self.level.set(l);
        Ok(l)
    }

    /// What the thread level demands of a call from this thread: nothing (`None`) under
    /// `MPI_THREAD_MULTIPLE`, else the process-wide lock (when another thread holds it: wait
    /// for it, or fail if not `wait`), and under `MPI_THREAD_FUNNELED` or `MPI_THREAD_SINGLE`
    /// also that this is the thread that initialised MPI. MPI must be initialised.
    fn serialize(&self, call: &'static str, wait: bool) -> Result<Serial<'_>, MpiError> {
        let level = self.level()?;
        if level == ThreadLevel::Multiple {
            return Ok(None);
        }
        // SAFETY: every caller has just checked that MPI is initialised and not finalised.
        if level < ThreadLevel::Serialized && unsafe { result::is_thread_main(&self.lib) }? == 0 {
            let m = format!(
                "MPI provides only {level}: only the thread that initialised it may call it"
            );
            return Err(MpiError::usage(call, m));
        }
        match wait {
            true => Ok(Some(lock(&self.serial))),
            false => acquired(self.serial.try_lock()).map(Some).ok_or_else(|| {
                let m = "another thread is inside an MPI call, and MPI is not MPI_THREAD_MULTIPLE";
                MpiError::usage(call, m)
            }),
        }
    }

    /// Starts a call on `comm`: keeps `MPI_Finalize` out until the call ends, checks MPI's
    /// state and applies the thread rules; with `wait == false`, fails rather than wait for
    /// another thread (`MPI_Abort`).
    fn enter(&self, call: &'static str, comm: usize, wait: bool) -> Result<Entered<'_>, MpiError> {
        if comm == self.lib.handles.comm_null {
            return Err(MpiError::usage(call, "MPI_COMM_NULL is not a communicator"));
        }
        let calls = match wait {
            true => self.calls.read().unwrap_or_else(PoisonError::into_inner),
            false => acquired(self.calls.try_read())
                .ok_or_else(|| MpiError::usage(call, "MPI is being finalised"))?,
        };
        self.check_active(call)?;
        Ok((self.serialize(call, wait)?, calls))
    }
}

/// A borrowed MPI communicator: a raw `MPI_Comm` handle (in Open MPI, a pointer), valid for
/// `'a`.
///
/// It is `Copy`. The predefined communicators are `Comm<'static>` ([`Mpi::world`],
/// [`Mpi::self_comm`]); the communicators this crate makes are [`OwnedComm`]s, which lend
/// `Comm`s that cannot outlive them; a handle from C code is borrowed with
/// [`Comm::from_raw`]. Its methods refuse, with an [`MpiError`] of kind
/// [`MpiErrorKind::Usage`], calls that MPI is not ready for.
///
/// ```no_run
/// let mpi = shmem_mpi::Mpi::get()?;
/// mpi.init()?;
/// let world = mpi.world();
/// println!("rank {} of {}", world.rank()?, world.size()?);
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
///
/// A communicator cannot be used after it is freed, and a predefined one cannot be freed:
///
/// ```compile_fail,E0505
/// # let mpi = shmem_mpi::Mpi::get()?;
/// let all = mpi.world().dup()?;
/// let comm = all.comm();
/// all.free()?;
/// comm.barrier()?; // error: `all` was moved while borrowed
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
///
/// ```compile_fail,E0599
/// # let mpi = shmem_mpi::Mpi::get()?;
/// mpi.world().free()?; // error: no method `free` on `Comm`
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Comm<'a> {
    raw: usize,
    owner: PhantomData<&'a OwnedComm>,
}

impl<'a> Comm<'a> {
    fn new(raw: usize) -> Comm<'a> {
        let owner = PhantomData;
        Comm { raw, owner }
    }

    /// Borrows a raw `MPI_Comm` handle from C code (its address as an integer), e.g. the value
    /// behind the `MPI_Comm*` that CANN's `comm_args` points to. `MPI_COMM_NULL` is refused
    /// by every call.
    ///
    /// # Safety
    ///
    /// `raw` must be `MPI_COMM_NULL` or a valid Open MPI communicator of this process, and
    /// must stay valid for `'a`: nothing may free it while this `Comm` or a copy is used.
    pub unsafe fn from_raw(raw: usize) -> Comm<'a> {
        Comm::new(raw)
    }

    /// The raw `MPI_Comm` handle (its address as an integer), to hand to C code.
    pub fn as_raw(&self) -> usize {
        self.raw
    }

    /// Runs `f` on the raw handle inside [`Mpi::enter`]'s checks: when `f` runs, MPI is active,
    /// the handle is valid (for `'a`, by construction) and not `MPI_COMM_NULL`, and the thread
    /// rules are applied, until `f` returns.
    fn call<T>(
        self,
        name: &'static str,
        wait: bool,
        f: impl FnOnce(&Library, sys::MpiComm) -> Result<T, MpiError>,
    ) -> Result<T, MpiError> {
        let mpi = Mpi::get()?;
        let _entered = mpi.enter(name, self.raw, wait)?;
        f(&mpi.lib, handle_ptr(self.raw))
    }

    /// This process's rank in the communicator (`MPI_Comm_rank`).
    pub fn rank(&self) -> Result<i32, MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        self.call("MPI_Comm_rank", true, |lib, c| unsafe {
            result::comm_rank(lib, c)
        })
    }

    /// The number of processes in the communicator (`MPI_Comm_size`).
    pub fn size(&self) -> Result<i32, MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        self.call("MPI_Comm_size", true, |lib, c| unsafe {
            result::comm_size(lib, c)
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
    ///     assert_eq!(evens.comm().rank()?, rank / 2);
    ///     evens.free()?;
    /// }
    /// # Ok::<(), shmem_mpi::MpiError>(())
    /// ```
    pub fn split(&self, color: Option<i32>, key: i32) -> Result<Option<OwnedComm>, MpiError> {
        const CALL: &str = "MPI_Comm_split";
        let color = match color {
            None => MPI_UNDEFINED,
            Some(c) if c >= 0 => c,
            Some(c) => {
                let m = format!("color {c} is negative; pass None for MPI_UNDEFINED");
                return Err(MpiError::usage(CALL, m));
            }
        };
        self.call(CALL, true, |lib, c| {
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
            let new = unsafe { result::comm_split(lib, c, color, key) }?.expose_provenance();
            Ok((new != lib.handles.comm_null).then_some(OwnedComm(new)))
        })
    }

    /// Collective: a duplicate with the same group and its own communication context
    /// (`MPI_Comm_dup`).
    pub fn dup(&self) -> Result<OwnedComm, MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        let new = self.call("MPI_Comm_dup", true, |lib, c| unsafe {
            result::comm_dup(lib, c)
        })?;
        Ok(OwnedComm(new.expose_provenance()))
    }

    /// Collective: waits until every process of the communicator has entered the barrier
    /// (`MPI_Barrier`).
    pub fn barrier(&self) -> Result<(), MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        self.call("MPI_Barrier", true, |lib, c| unsafe {
            result::barrier(lib, c)
        })
    }

    /// Makes MPI failures on this communicator return error codes (`MPI_ERRORS_RETURN`)
    /// instead of ending the job.
    pub fn set_errors_return(&self) -> Result<(), MpiError> {
        self.call("MPI_Comm_set_errhandler", true, |lib, c| {
            let errors_return = handle_ptr(lib.handles.errors_return);
            // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for, and the handler
            // is `&ompi_mpi_errors_return`, Open MPI's MPI_ERRORS_RETURN.
            unsafe { result::comm_set_errhandler(lib, c, errors_return) }
        })
    }

    /// Collective: `MPI_Allgather` of `send.len()` bytes from every rank into `recv`, which
    /// must hold `send.len()` bytes per rank (checked). Every rank must pass the same length.
    pub fn allgather_bytes(&self, send: &[u8], recv: &mut [u8]) -> Result<(), MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        self.call("MPI_Allgather", true, |lib, c| unsafe {
            result::allgather_bytes(lib, c, send, recv)
        })
    }

    /// `MPI_Abort`: ends the job with `code`; normally does not return. When MPI calls are
    /// serialised and another thread is inside one, or MPI is being finalised, this fails at
    /// once rather than wait (the caller should then exit, which makes `mpirun` end the job).
    pub fn abort(&self, code: i32) -> Result<(), MpiError> {
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for.
        self.call("MPI_Abort", false, |lib, c| unsafe {
            result::abort(lib, c, code)
        })
    }
}

/// A communicator this crate made ([`Comm::split`], [`Comm::dup`]), owned: it lends
/// [`Comm`] handles ([`OwnedComm::comm`]) and is freed with [`OwnedComm::free`].
///
/// `MPI_Comm_free` is collective, so it never runs from a drop: dropping an `OwnedComm`
/// without `free` leaves the communicator allocated until MPI is finalised.
///
/// ```no_run
/// let mpi = shmem_mpi::Mpi::get()?;
/// mpi.init()?;
/// let all = mpi.world().split(Some(0), 0)?.expect("every rank passed color 0");
/// all.comm().barrier()?;
/// all.free()?;
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct OwnedComm(usize);

impl OwnedComm {
    /// A handle to the communicator, for as long as it is borrowed.
    pub fn comm(&self) -> Comm<'_> {
        Comm::new(self.0)
    }

    /// The raw `MPI_Comm` handle (its address as an integer), to hand to C code.
    pub fn as_raw(&self) -> usize {
        self.0
    }

    /// Collective: frees the communicator (`MPI_Comm_free`). If this fails, the communicator
    /// stays allocated until MPI is finalised.
    pub fn free(self) -> Result<(), MpiError> {
        let mut handle = handle_ptr(self.0);
        // SAFETY: `call`'s guarantees are what `result`'s wrappers ask for;
        // the communicator is not predefined (this crate made it), no other handle to it is in
        // use (`self` is not borrowed) and none exists after this call (`self` is consumed).
        self.comm().call("MPI_Comm_free", true, |lib, _| unsafe {
            result::comm_free(lib, &mut handle)
        })
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
    fn null_handles_and_negative_colors_are_refused() {
        let mpi = Mpi::get().expect("Open MPI is installed on this machine");
        // SAFETY: MPI_COMM_NULL is allowed, and every call refuses it before MPI sees it.
        let null = unsafe { Comm::from_raw(mpi.lib.handles.comm_null) };
        let e = null.size().unwrap_err();
        assert_eq!(e.kind(), MpiErrorKind::Usage);
        assert!(e.to_string().contains("MPI_COMM_NULL"), "{e}");
        assert!(
            null.abort(1)
                .unwrap_err()
                .to_string()
                .contains("MPI_COMM_NULL")
        );
        let e = mpi.world().split(Some(-1), 0).unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        // Refused before MPI is initialised, also where the call would not wait.
        let e = mpi.world().abort(1).unwrap_err();
        assert!(e.to_string().contains("not initialised"), "{e}");
    }

    #[test]
    fn thread_levels_are_open_mpis() {
        assert_eq!(ThreadLevel::Multiple as c_int, 3);
        for l in [
            ThreadLevel::Single,
            ThreadLevel::Funneled,
            ThreadLevel::Serialized,
            ThreadLevel::Multiple,
        ] {
            assert_eq!(ThreadLevel::from_raw(l as c_int), l);
        }
        assert_eq!(ThreadLevel::Funneled.to_string(), "MPI_THREAD_FUNNELED");
    }
}
