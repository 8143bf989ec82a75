//! Layer 1: Open MPI's C ABI, loaded at run time.
//!
//! Nothing links against MPI at build time. [`Library::load`] `dlopen`s Open MPI's `libmpi`
//! once; each function is resolved with `dlsym` on its first use and cached (one
//! [`OnceLock`] per symbol), so a missing symbol only fails the calls that need it, with an
//! error naming the symbol and the library. The addresses of the predefined handles
//! (`MPI_COMM_WORLD`, ...) are resolved at load time: they are what identifies the library as
//! Open MPI, whose handles are pointers to exported objects (MPICH's are integers).
//!
//! The function-pointer types are transcribed from Open MPI 4.1's `mpi.h`; every opaque
//! handle type (`MPI_Comm`, `MPI_Datatype`, `MPI_Errhandler`) is a pointer to an incomplete
//! struct there, which is ABI-identical to `*mut c_void`.

use std::ffi::{CStr, OsStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::OnceLock;

use libloading::os::unix::{Library as DlLibrary, RTLD_GLOBAL, RTLD_NOW};

use super::error::MpiError;

/// `MPI_Comm` (Open MPI: `struct ompi_communicator_t *`).
pub(crate) type MpiComm = *mut c_void;
/// `MPI_Datatype` (Open MPI: `struct ompi_datatype_t *`).
pub(crate) type MpiDatatype = *mut c_void;
/// `MPI_Errhandler` (Open MPI: `struct ompi_errhandler_t *`).
pub(crate) type MpiErrhandler = *mut c_void;

/// `MPI_SUCCESS`.
pub(crate) const MPI_SUCCESS: c_int = 0;
/// `MPI_UNDEFINED` (the color that leaves a process out of `MPI_Comm_split`).
pub(crate) const MPI_UNDEFINED: c_int = -32766;
/// `MPI_THREAD_SINGLE` (the first value of Open MPI's thread-level enum).
pub(crate) const MPI_THREAD_SINGLE: c_int = 0;
/// `MPI_THREAD_FUNNELED`.
pub(crate) const MPI_THREAD_FUNNELED: c_int = 1;
/// `MPI_THREAD_SERIALIZED`.
pub(crate) const MPI_THREAD_SERIALIZED: c_int = 2;
/// `MPI_THREAD_MULTIPLE`.
pub(crate) const MPI_THREAD_MULTIPLE: c_int = 3;
/// `MPI_MAX_ERROR_STRING` (`OPAL_MAX_ERROR_STRING`): the buffer `MPI_Error_string` fills.
pub(crate) const MPI_MAX_ERROR_STRING: usize = 256;

/// `int MPI_Initialized(int *flag)`
pub(crate) type MpiInitializedFn = unsafe extern "C" fn(flag: *mut c_int) -> c_int;
/// `int MPI_Finalized(int *flag)`
pub(crate) type MpiFinalizedFn = unsafe extern "C" fn(flag: *mut c_int) -> c_int;
/// `int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)`
pub(crate) type MpiInitThreadFn = unsafe extern "C" fn(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int;
/// `int MPI_Query_thread(int *provided)`
pub(crate) type MpiQueryThreadFn = unsafe extern "C" fn(provided: *mut c_int) -> c_int;
/// `int MPI_Is_thread_main(int *flag)`
pub(crate) type MpiIsThreadMainFn = unsafe extern "C" fn(flag: *mut c_int) -> c_int;
/// `int MPI_Finalize(void)`
pub(crate) type MpiFinalizeFn = unsafe extern "C" fn() -> c_int;
/// `int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)`
pub(crate) type MpiCommDupFn = unsafe extern "C" fn(comm: MpiComm, newcomm: *mut MpiComm) -> c_int;
/// `int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)`
pub(crate) type MpiCommSplitFn =
    unsafe extern "C" fn(comm: MpiComm, color: c_int, key: c_int, newcomm: *mut MpiComm) -> c_int;
/// `int MPI_Comm_free(MPI_Comm *comm)`
pub(crate) type MpiCommFreeFn = unsafe extern "C" fn(comm: *mut MpiComm) -> c_int;
/// `int MPI_Comm_rank(MPI_Comm comm, int *rank)`
pub(crate) type MpiCommRankFn = unsafe extern "C" fn(comm: MpiComm, rank: *mut c_int) -> c_int;
/// `int MPI_Comm_size(MPI_Comm comm, int *size)`
pub(crate) type MpiCommSizeFn = unsafe extern "C" fn(comm: MpiComm, size: *mut c_int) -> c_int;
/// `int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)`
pub(crate) type MpiCommSetErrhandlerFn =
    unsafe extern "C" fn(comm: MpiComm, errhandler: MpiErrhandler) -> c_int;
/// `int MPI_Barrier(MPI_Comm comm)`
pub(crate) type MpiBarrierFn = unsafe extern "C" fn(comm: MpiComm) -> c_int;
/// `int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
/// void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)`
pub(crate) type MpiAllgatherFn = unsafe extern "C" fn(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MpiDatatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MpiDatatype,
    comm: MpiComm,
) -> c_int;
/// `int MPI_Abort(MPI_Comm comm, int errorcode)`
pub(crate) type MpiAbortFn = unsafe extern "C" fn(comm: MpiComm, errorcode: c_int) -> c_int;
/// `int MPI_Error_string(int errorcode, char *string, int *resultlen)`
pub(crate) type MpiErrorStringFn =
    unsafe extern "C" fn(errorcode: c_int, string: *mut c_char, resultlen: *mut c_int) -> c_int;

/// The environment variable that names the exact `libmpi` to load.
pub(crate) const LIB_ENV: &str = "SHMEM_MPI_LIB";

/// Where `libmpi` is looked for when [`LIB_ENV`] is unset: the loader's search path (soname,
/// then the development link), then the Debian and RHEL install locations.
pub(crate) const CANDIDATES: &[&str] = &[
    "libmpi.so.40",
    "libmpi.so",
    "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
    "/usr/lib64/openmpi/lib/libmpi.so",
    "/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so",
];

/// The addresses of Open MPI's predefined handles (`MPI_COMM_WORLD` is
/// `&ompi_mpi_comm_world`, ...), as integers so that they can be shared between threads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handles {
    /// `MPI_COMM_WORLD`.
    pub(crate) comm_world: usize,
    /// `MPI_COMM_SELF`.
    pub(crate) comm_self: usize,
    /// `MPI_COMM_NULL`.
    pub(crate) comm_null: usize,
    /// `MPI_BYTE`.
    pub(crate) byte: usize,
    /// `MPI_ERRORS_RETURN`.
    pub(crate) errors_return: usize,
}

/// A loader error with its cause (`dlerror`'s text: libloading keeps it as the source).
fn dl_error(e: &libloading::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Turns a handle kept as an integer back into the pointer Open MPI expects.
pub(crate) fn handle_ptr(addr: usize) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(addr)
}

macro_rules! functions {
    ($( $(#[$doc:meta])* $field:ident: $ty:ty = $name:literal; )*) => {
        /// One lazily resolved slot per MPI function.
        #[derive(Default)]
        struct Functions {
            $( $field: OnceLock<Result<$ty, String>>, )*
        }

        impl Library {
            $(
                $(#[$doc])*
                pub(crate) fn $field(&self) -> Result<$ty, MpiError> {
                    // SAFETY: `$ty` is transcribed from the declaration of `$name` in Open
                    // MPI's mpi.h (the pairing is made once, in the invocation of this macro).
                    unsafe { self.function::<$ty>(&self.functions.$field, $name) }
                }
            )*
        }
    };
}

functions! {
    /// `MPI_Initialized`.
    initialized: MpiInitializedFn = c"MPI_Initialized";
    /// `MPI_Finalized`.
    finalized: MpiFinalizedFn = c"MPI_Finalized";
    /// `MPI_Init_thread`.
    init_thread: MpiInitThreadFn = c"MPI_Init_thread";
    /// `MPI_Query_thread`.
    query_thread: MpiQueryThreadFn = c"MPI_Query_thread";
    /// `MPI_Is_thread_main`.
    is_thread_main: MpiIsThreadMainFn = c"MPI_Is_thread_main";
    /// `MPI_Finalize`.
    finalize: MpiFinalizeFn = c"MPI_Finalize";
    /// `MPI_Comm_dup`.
    comm_dup: MpiCommDupFn = c"MPI_Comm_dup";
    /// `MPI_Comm_split`.
    comm_split: MpiCommSplitFn = c"MPI_Comm_split";
    /// `MPI_Comm_free`.
    comm_free: MpiCommFreeFn = c"MPI_Comm_free";
    /// `MPI_Comm_rank`.
    comm_rank: MpiCommRankFn = c"MPI_Comm_rank";
    /// `MPI_Comm_size`.
    comm_size: MpiCommSizeFn = c"MPI_Comm_size";
    /// `MPI_Comm_set_errhandler`.
    comm_set_errhandler: MpiCommSetErrhandlerFn = c"MPI_Comm_set_errhandler";
    /// `MPI_Barrier`.
    barrier: MpiBarrierFn = c"MPI_Barrier";
    /// `MPI_Allgather`.
    allgather: MpiAllgatherFn = c"MPI_Allgather";
    /// `MPI_Abort`.
    abort: MpiAbortFn = c"MPI_Abort";
    /// `MPI_Error_string`.
    error_string: MpiErrorStringFn = c"MPI_Error_string";
}

/// Open MPI's `libmpi`, opened once for the life of the process (it is never unloaded).
pub(crate) struct Library {
    dl: DlLibrary,
    path: String,
    handles: Handles,
    functions: Functions,
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.path)
            .field("handles", &self.handles)
            .finish_non_exhaustive()
    }
}

impl Library {
    /// Opens Open MPI's `libmpi`: exactly `env_path` when it is given and not empty (the value
    /// of [`LIB_ENV`]), else the first of [`CANDIDATES`] that loads and is Open MPI.
    ///
    /// The error names every place tried and why each failed.
    pub(crate) fn load(env_path: Option<&OsStr>) -> Result<Library, MpiError> {
        Library::load_from(env_path, CANDIDATES)
    }

    fn load_from(env_path: Option<&OsStr>, candidates: &[&str]) -> Result<Library, MpiError> {
        if let Some(path) = env_path.filter(|p| !p.is_empty()) {
            return Library::open(path).map_err(|why| {
                MpiError::unavailable(format!(
                    "could not load the MPI library {LIB_ENV}={}: {why}",
                    path.display()
                ))
            });
        }
        let mut tried = Vec::with_capacity(candidates.len());
        for name in candidates {
            match Library::open(OsStr::new(name)) {
                Ok(lib) => return Ok(lib),
                Err(why) => tried.push(format!("{name}: {why}")),
            }
        }
        Err(MpiError::unavailable(format!(
            "could not load Open MPI's libmpi; tried {}. Install Open MPI (Debian/Ubuntu: \
             openmpi-bin libopenmpi-dev; RHEL: openmpi) or set {LIB_ENV} to the full path of \
             its libmpi.so",
            tried.join("; ")
        )))
    }

    /// Opens one candidate and checks that it is Open MPI.
    fn open(name: &OsStr) -> Result<Library, String> {
        // SAFETY: dlopen runs libmpi's ELF initialisers. Open MPI's only register MCA
        // framework state; they take no arguments and need nothing from us (MPI itself is
        // initialised only by MPI_Init_thread). The library is never unloaded (it lives in a
        // static), so its finalisers do not run while any of its pointers are in use.
        // RTLD_GLOBAL: Open MPI's components, which it dlopens itself, resolve libmpi's
        // symbols through the global scope. RTLD_NOW: a broken installation fails here, as an
        // error, rather than at the first call.
        let dl = unsafe { DlLibrary::open(Some(name), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| dl_error(&e))?;
        let data = |symbol: &CStr| -> Result<usize, String> {
            // SAFETY: the symbol is looked up as an opaque address and never read through a
            // Rust type: Open MPI's handles are the addresses of these exported objects.
            let sym = unsafe { dl.get::<*mut c_void>(symbol) }.map_err(|e| dl_error(&e))?;
            Ok(sym.into_raw().expose_provenance())
        };
        let comm_world = data(c"ompi_mpi_comm_world").map_err(|_| {
            "it is not Open MPI: it has no `ompi_mpi_comm_world` symbol (MPICH and other MPIs \
             have a different handle ABI; not supported)"
                .to_owned()
        })?;
        let named = |symbol: &CStr| {
            data(symbol).map_err(|e| {
                format!(
                    "it lacks Open MPI's predefined handle `{}`: {e}",
                    symbol.to_string_lossy()
                )
            })
        };
        let handles = Handles {
            comm_world,
            comm_self: named(c"ompi_mpi_comm_self")?,
            comm_null: named(c"ompi_mpi_comm_null")?,
            byte: named(c"ompi_mpi_byte")?,
            errors_return: named(c"ompi_mpi_errors_return")?,
        };
        Ok(Library {
            dl,
            path: name.to_string_lossy().into_owned(),
            handles,
            functions: Functions::default(),
        })
    }

    /// The name or path the library was opened by.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The predefined handles.
    pub(crate) fn handles(&self) -> &Handles {
        &self.handles
    }

    /// Resolves `name` on first use and caches the outcome (a missing symbol stays missing).
    ///
    /// # Safety
    ///
    /// `T` must be the exact function-pointer type of the C function `name`.
    unsafe fn function<T: Copy>(
        &self,
        slot: &OnceLock<Result<T, String>>,
        name: &'static CStr,
    ) -> Result<T, MpiError> {
        let resolved = slot.get_or_init(|| {
            // SAFETY: the caller guarantees that `T` is the type of `name`.
            match unsafe { self.dl.get::<T>(name) } {
                Ok(sym) => Ok(*sym),
                Err(e) => Err(dl_error(&e)),
            }
        });
        resolved.as_ref().copied().map_err(|e| {
            MpiError::unavailable(format!(
                "the MPI library {} has no symbol `{}`: {e}",
                self.path,
                name.to_string_lossy()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_env_library_is_an_error_naming_the_path() {
        let path = "/nonexistent/shmem-mpi-test/libmpi.so.40";
        let err = Library::load(Some(OsStr::new(path))).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.kind(), super::super::MpiErrorKind::Unavailable);
        assert!(text.contains(path), "{text}");
        assert!(text.contains(LIB_ENV), "{text}");
    }

    #[test]
    fn a_library_that_is_not_open_mpi_is_refused() {
        let err = Library::load(Some(OsStr::new("libm.so.6"))).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("libm.so.6"), "{text}");
        assert!(text.contains("not Open MPI"), "{text}");
        assert!(text.contains("MPICH"), "{text}");
    }

    #[test]
    fn the_search_error_lists_every_candidate_and_why() {
        let err = Library::load_from(None, &["/nonexistent/libmpi.so", "libm.so.6"]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/nonexistent/libmpi.so: dlopen failed"),
            "{text}"
        );
        assert!(text.contains("No such file"), "{text}");
        assert!(text.contains("libm.so.6: it is not Open MPI"), "{text}");
        assert!(text.contains(LIB_ENV), "{text}");
        // An empty SHMEM_MPI_LIB counts as unset.
        let err = Library::load_from(Some(OsStr::new("")), &[]).unwrap_err();
        assert!(err.to_string().contains("tried"), "{err}");
    }

    #[test]
    fn open_mpi_loads_and_resolves_lazily() {
        let lib = Library::load(None).expect("Open MPI is installed on this machine");
        let h = *lib.handles();
        assert_ne!(h.comm_world, 0);
        assert_ne!(h.comm_world, h.comm_self);
        assert_ne!(h.comm_world, h.comm_null);
        assert!(lib.functions.barrier.get().is_none(), "resolved before use");
        lib.barrier().expect("MPI_Barrier");
        assert!(lib.functions.barrier.get().is_some());
    }
}
