//! Layer 1: Open MPI's C ABI, loaded at run time with [`shmem_dl`].
//!
//! [`Library::load`] `dlopen`s Open MPI's `libmpi` once; each function is resolved on first use
//! through the [`Functions`] table, so a missing symbol only fails the calls that need it. The
//! addresses of the predefined handles (`MPI_COMM_WORLD`, ...) are resolved at load time: they
//! are what identifies the library as Open MPI, whose handles are pointers to exported objects
//! (MPICH's are integers).
//!
//! The function-pointer types are transcribed from Open MPI 4.1's `mpi.h`; every opaque handle
//! type (`MPI_Comm`, `MPI_Datatype`, `MPI_Errhandler`) is a pointer to an incomplete struct
//! there, which is ABI-identical to `*mut c_void`.

use std::ffi::{CStr, OsStr, c_char, c_int, c_void};

use shmem_dl::DlError;

use crate::error::MpiError;

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
/// `MPI_MAX_ERROR_STRING` (`OPAL_MAX_ERROR_STRING`): the buffer `MPI_Error_string` fills.
pub(crate) const MPI_MAX_ERROR_STRING: usize = 256;

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

shmem_dl::symbols! {
    /// The MPI functions this crate calls, resolved on first use. The parameter types follow
    /// the C declarations above each entry, in order.
    pub(crate) struct Functions {
        /// `int MPI_Initialized(int *flag)`
        initialized: unsafe extern "C" fn(*mut c_int) -> c_int = c"MPI_Initialized";
        /// `int MPI_Finalized(int *flag)`
        finalized: unsafe extern "C" fn(*mut c_int) -> c_int = c"MPI_Finalized";
        /// `int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)`
        init_thread: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int)
            -> c_int = c"MPI_Init_thread";
        /// `int MPI_Query_thread(int *provided)`
        query_thread: unsafe extern "C" fn(*mut c_int) -> c_int = c"MPI_Query_thread";
        /// `int MPI_Is_thread_main(int *flag)`
        is_thread_main: unsafe extern "C" fn(*mut c_int) -> c_int = c"MPI_Is_thread_main";
        /// `int MPI_Finalize(void)`
        finalize: unsafe extern "C" fn() -> c_int = c"MPI_Finalize";
        /// `int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)`
        comm_dup: unsafe extern "C" fn(MpiComm, *mut MpiComm) -> c_int = c"MPI_Comm_dup";
        /// `int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)`
        comm_split: unsafe extern "C" fn(MpiComm, c_int, c_int, *mut MpiComm) -> c_int
            = c"MPI_Comm_split";
        /// `int MPI_Comm_free(MPI_Comm *comm)`
        comm_free: unsafe extern "C" fn(*mut MpiComm) -> c_int = c"MPI_Comm_free";
        /// `int MPI_Comm_rank(MPI_Comm comm, int *rank)`
        comm_rank: unsafe extern "C" fn(MpiComm, *mut c_int) -> c_int = c"MPI_Comm_rank";
        /// `int MPI_Comm_size(MPI_Comm comm, int *size)`
        comm_size: unsafe extern "C" fn(MpiComm, *mut c_int) -> c_int = c"MPI_Comm_size";
        /// `int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)`
        comm_set_errhandler: unsafe extern "C" fn(MpiComm, MpiErrhandler) -> c_int
            = c"MPI_Comm_set_errhandler";
        /// `int MPI_Barrier(MPI_Comm comm)`
        barrier: unsafe extern "C" fn(MpiComm) -> c_int = c"MPI_Barrier";
        /// `int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
        /// void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)`
        allgather: unsafe extern "C" fn(
            *const c_void, c_int, MpiDatatype, *mut c_void, c_int, MpiDatatype, MpiComm,
        ) -> c_int = c"MPI_Allgather";
        /// `int MPI_Abort(MPI_Comm comm, int errorcode)`
        abort: unsafe extern "C" fn(MpiComm, c_int) -> c_int = c"MPI_Abort";
        /// `int MPI_Error_string(int errorcode, char *string, int *resultlen)`
        error_string: unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int
            = c"MPI_Error_string";
    }
}

/// The addresses of Open MPI's predefined handles (`MPI_COMM_WORLD` is `&ompi_mpi_comm_world`,
/// ...), as integers so that they can be shared between threads.
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

/// Turns a handle kept as an integer back into the pointer Open MPI expects.
pub(crate) fn handle_ptr(addr: usize) -> *mut c_void {
    std::ptr::with_exposed_provenance_mut(addr)
}

/// Open MPI's `libmpi`, opened once for the life of the process (it is never unloaded).
#[derive(Debug)]
pub(crate) struct Library {
    /// The functions, resolved on first use.
    pub(crate) f: Functions,
    /// The predefined handles.
    pub(crate) handles: Handles,
}

impl Library {
    /// Opens Open MPI's `libmpi`: exactly `env_path` when it is given and not empty (the value
    /// of [`LIB_ENV`]), else the first of `candidates` that loads and is Open MPI. The error's
    /// source names every place tried and why each failed.
    pub(crate) fn load(env_path: Option<&OsStr>, candidates: &[&str]) -> Result<Library, MpiError> {
        let exact = env_path.filter(|p| !p.is_empty());
        let places: Vec<&OsStr> = match exact {
            Some(path) => vec![path],
            None => candidates.iter().map(OsStr::new).collect(),
        };
        // SAFETY: dlopen runs libmpi's ELF initialisers. Open MPI's only register MCA framework
        // state; they take no arguments and need nothing from us (MPI itself is initialised
        // only by MPI_Init_thread). The library lives in a static and is never unloaded, so its
        // finalisers do not run while any of its pointers are in use.
        let opened = unsafe { shmem_dl::Library::open_first("libmpi", &places, open_mpi_handles) };
        let (lib, handles) = opened.map_err(|e| {
            let hint = match exact {
                Some(p) => format!("could not load the MPI library {LIB_ENV}={}", p.display()),
                None => format!(
                    "could not load Open MPI's libmpi. Install Open MPI (Debian/Ubuntu: openmpi-bin \
                     libopenmpi-dev; RHEL: openmpi) or set {LIB_ENV} to the full path of its libmpi.so"
                ),
            };
            MpiError::unavailable(hint, e)
        })?;
        // SAFETY: every type in `Functions` is transcribed from Open MPI's mpi.h, and `lib` is
        // Open MPI (`open_mpi_handles` found its predefined objects).
        let f = unsafe { Functions::new(lib) };
        Ok(Library { f, handles })
    }

    /// The name or path the library was opened by.
    pub(crate) fn path(&self) -> &str {
        self.f.library().path()
    }
}

/// The check of a loaded candidate: it is Open MPI if it exports Open MPI's predefined objects.
fn open_mpi_handles(lib: &shmem_dl::Library) -> Result<Handles, String> {
    let addr = |s: &CStr| -> Result<usize, DlError> {
        lib.address(s).map(|p| p.as_ptr().expose_provenance())
    };
    let comm_world = addr(c"ompi_mpi_comm_world").map_err(|_| {
        "it is not Open MPI: it has no `ompi_mpi_comm_world` symbol (MPICH and other MPIs have a \
         different handle ABI; not supported)"
            .to_owned()
    })?;
    let named =
        |s: &CStr| addr(s).map_err(|e| format!("it lacks Open MPI's predefined handle: {e}"));
    Ok(Handles {
        comm_world,
        comm_self: named(c"ompi_mpi_comm_self")?,
        comm_null: named(c"ompi_mpi_comm_null")?,
        byte: named(c"ompi_mpi_byte")?,
        errors_return: named(c"ompi_mpi_errors_return")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MpiErrorKind;

    fn sources(e: &MpiError) -> String {
        let mut text = e.to_string();
        let mut s = std::error::Error::source(e);
        while let Some(x) = s {
            text = format!("{text}: {x}");
            s = x.source();
        }
        text
    }

    #[test]
    fn missing_env_library_is_an_error_naming_the_path() {
        let path = "/nonexistent/shmem-mpi-test/libmpi.so.40";
        let err = Library::load(Some(OsStr::new(path)), CANDIDATES).unwrap_err();
        assert_eq!(err.kind(), MpiErrorKind::Unavailable);
        let text = sources(&err);
        assert!(text.contains(path) && text.contains(LIB_ENV), "{text}");
    }

    #[test]
    fn a_library_that_is_not_open_mpi_is_refused() {
        let err = Library::load(Some(OsStr::new("libm.so.6")), CANDIDATES).unwrap_err();
        let text = sources(&err);
        assert!(text.contains("libm.so.6: it is not Open MPI"), "{text}");
        assert!(text.contains("MPICH"), "{text}");
    }

    #[test]
    fn the_search_error_lists_every_candidate_and_why() {
        let err = Library::load(None, &["/nonexistent/libmpi.so", "libm.so.6"]).unwrap_err();
        let text = sources(&err);
        assert!(
            text.contains("/nonexistent/libmpi.so: ") && text.contains("No such file"),
            "{text}"
        );
        assert!(text.contains("libm.so.6: it is not Open MPI"), "{text}");
        assert!(text.contains(LIB_ENV), "{text}");
        // An empty SHMEM_MPI_LIB counts as unset.
        let err = Library::load(Some(OsStr::new("")), &[]).unwrap_err();
        assert!(sources(&err).contains("tried no place"), "{err}");
    }

    #[test]
    fn open_mpi_loads_and_resolves_lazily() {
        let lib = Library::load(None, CANDIDATES).expect("Open MPI is installed on this machine");
        let h = lib.handles;
        assert!(h.comm_world != 0 && h.comm_world != h.comm_self && h.comm_world != h.comm_null);
        assert!(!lib.f.barrier.is_resolved(), "resolved before use");
        lib.f.barrier().expect("MPI_Barrier");
        assert!(lib.f.barrier.is_resolved());
    }
}
