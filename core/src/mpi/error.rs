//! The error type of [`shmem::mpi`](crate::mpi).

use std::fmt;

/// What kind of failure an [`MpiError`] is.
///
/// ```
/// use shmem::mpi::{Mpi, MpiErrorKind};
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
    /// not Open MPI.
    Unavailable,
    /// An MPI call returned an error code ([`MpiError::code`] holds it).
    Failed,
    /// The call was refused before reaching MPI: MPI is not initialised or was finalised, the
    /// communicator is not live, an argument is out of range, or the thread level forbids the
    /// call from this thread.
    Usage,
}

/// An error from [`shmem::mpi`](crate::mpi): the MPI error code with its `MPI_Error_string`
/// text, the loader's message, or the reason a call was refused.
///
/// Its `Display` text is complete: it names the MPI call and says what went wrong.
///
/// ```no_run
/// use shmem::mpi::Mpi;
///
/// let mpi = Mpi::get()?;
/// if let Err(e) = mpi.world().barrier() {
///     // e.g. "MPI_Barrier: MPI is not initialised (call Mpi::init first)"
///     eprintln!("{e} (call {:?}, code {:?})", e.call(), e.code());
/// }
/// # Ok::<(), shmem::mpi::MpiError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MpiError {
    kind: MpiErrorKind,
    call: Option<&'static str>,
    code: Option<i32>,
    message: String,
}

impl MpiError {
    /// What kind of failure this is.
    ///
    /// ```
    /// # use shmem::mpi::{Mpi, MpiErrorKind};
    /// if let Err(e) = Mpi::get() {
    ///     assert_eq!(e.kind(), MpiErrorKind::Unavailable);
    /// }
    /// ```
    pub fn kind(&self) -> MpiErrorKind {
        self.kind
    }

    /// The MPI error code, when an MPI call returned one.
    ///
    /// ```no_run
    /// # use shmem::mpi::Mpi;
    /// let e = Mpi::get()?.world().barrier().unwrap_err();
    /// assert_eq!(e.code(), None); // refused before MPI: not initialised
    /// # Ok::<(), shmem::mpi::MpiError>(())
    /// ```
    pub fn code(&self) -> Option<i32> {
        self.code
    }

    /// The MPI function concerned (`"MPI_Barrier"`, ...), if any (none for loader errors).
    ///
    /// ```no_run
    /// # use shmem::mpi::Mpi;
    /// let e = Mpi::get()?.world().barrier().unwrap_err();
    /// assert_eq!(e.call(), Some("MPI_Barrier"));
    /// # Ok::<(), shmem::mpi::MpiError>(())
    /// ```
    pub fn call(&self) -> Option<&'static str> {
        self.call
    }

    /// The library or a symbol could not be loaded.
    pub(crate) fn unavailable(message: impl Into<String>) -> MpiError {
        MpiError {
            kind: MpiErrorKind::Unavailable,
            call: None,
            code: None,
            message: message.into(),
        }
    }

    /// `call` returned `code`, which `MPI_Error_string` explains as `text`.
    pub(crate) fn failed(call: &'static str, code: i32, text: &str) -> MpiError {
        MpiError {
            kind: MpiErrorKind::Failed,
            call: Some(call),
            code: Some(code),
            message: format!("{call} failed with MPI error {code}: {text}"),
        }
    }

    /// `call` was refused before it reached MPI, because of `reason`.
    pub(crate) fn usage(call: &'static str, reason: impl fmt::Display) -> MpiError {
        MpiError {
            kind: MpiErrorKind::Usage,
            call: Some(call),
            code: None,
            message: format!("{call}: {reason}"),
        }
    }
}
