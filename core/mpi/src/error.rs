//! The error type of this crate.

use std::fmt;

use shmem_dl::DlError;

/// What kind of failure an [`MpiError`] is.
///
/// ```
/// use shmem_mpi::{Mpi, MpiErrorKind};
///
/// match Mpi::get() {
///     Ok(_) => println!("Open MPI is installed"),
///     Err(e) if e.kind() == MpiErrorKind::Unavailable => println!("no MPI here: {e}"),
///     Err(e) => println!("unexpected: {e}"),
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MpiErrorKind {
    /// Open MPI's `libmpi` (or one of its symbols) could not be loaded, or the library found is
    /// not Open MPI. The error's source says where it was looked for.
    Unavailable,
    /// An MPI call returned an error code ([`MpiError::code`] holds it).
    Failed,
    /// The call was refused before reaching MPI: MPI is not initialised or was finalised (or
    /// is being finalised), the communicator is `MPI_COMM_NULL`, an argument is out of range,
    /// or the thread level forbids the call from this thread.
    Usage,
}

/// An error from this crate: the MPI error code with its `MPI_Error_string` text, the
/// loader's error (as [`source`](std::error::Error::source)), or the reason a call was refused.
///
/// ```no_run
/// use shmem_mpi::Mpi;
///
/// let mpi = Mpi::get()?;
/// if let Err(e) = mpi.world().barrier() {
///     // e.g. "MPI_Barrier: MPI is not initialised (call Mpi::init first)"
///     eprintln!("{e} (call {:?}, code {:?})", e.call(), e.code());
/// }
/// # Ok::<(), shmem_mpi::MpiError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MpiError {
    kind: MpiErrorKind,
    call: Option<&'static str>,
    code: Option<i32>,
    message: String,
    #[source]
    source: Option<Box<DlError>>,
}

impl MpiError {
    /// What kind of failure this is.
    pub fn kind(&self) -> MpiErrorKind {
        self.kind
    }

    /// The MPI error code, when an MPI call returned one.
    pub fn code(&self) -> Option<i32> {
        self.code
    }

    /// The MPI function concerned (`"MPI_Barrier"`, ...), if any (none for loader errors).
    pub fn call(&self) -> Option<&'static str> {
        self.call
    }

    fn new(
        kind: MpiErrorKind,
        call: Option<&'static str>,
        message: String,
        source: Option<DlError>,
    ) -> MpiError {
        let source = source.map(Box::new);
        MpiError {
            kind,
            call,
            code: None,
            message,
            source,
        }
    }

    /// The library or a symbol could not be loaded.
    pub(crate) fn unavailable(message: String, source: DlError) -> MpiError {
        MpiError::new(MpiErrorKind::Unavailable, None, message, Some(source))
    }

    /// `call` returned `code`, which `MPI_Error_string` explains as `text`.
    pub(crate) fn failed(call: &'static str, code: i32, text: &str) -> MpiError {
        let message = format!("{call} failed with MPI error {code}: {text}");
        let mut e = MpiError::new(MpiErrorKind::Failed, Some(call), message, None);
        e.code = Some(code);
        e
    }

    /// `call` was refused before it reached MPI, because of `reason`.
    pub(crate) fn usage(call: &'static str, reason: impl fmt::Display) -> MpiError {
        let message = format!("{call}: {reason}");
        MpiError::new(MpiErrorKind::Usage, Some(call), message, None)
    }

    /// `call` needs a function that the library lacks.
    pub(crate) fn missing(call: &'static str, source: DlError) -> MpiError {
        let message = format!("{call} is not available in the loaded MPI library");
        MpiError::new(MpiErrorKind::Unavailable, Some(call), message, Some(source))
    }
}
