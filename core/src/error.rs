//! The error type of the `shmem` crate and CANN SHMEM's numeric return codes.

use shmem_backend::TransportError;

/// CANN SHMEM's return codes (`aclshmem_error_code_t`), which the C ABI returns and
/// [`Error::code`] maps every error onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Code {
    /// `ACLSHMEM_SUCCESS`
    Success = 0,
    /// `ACLSHMEM_INVALID_PARAM`
    InvalidParam = -1,
    /// `ACLSHMEM_INVALID_VALUE`
    InvalidValue = -2,
    /// `ACLSHMEM_SMEM_ERROR`
    SmemError = -3,
    /// `ACLSHMEM_INNER_ERROR`
    InnerError = -4,
    /// `ACLSHMEM_NOT_INITED`
    NotInited = -5,
    /// `ACLSHMEM_BOOTSTRAP_ERROR`
    BootstrapError = -6,
    /// `ACLSHMEM_TIMEOUT_ERROR`
    TimeoutError = -7,
    /// `ACLSHMEM_MALLOC_FAILED`
    MallocFailed = -8,
    /// `ACLSHMEM_DL_FUNC_FAILED`
    DlFuncFailed = -9,
    /// `ACLSHMEM_INNER_TIMEOUT`
    InnerTimeout = -10,
    /// `ACLSHMEM_UNDER_API_UNLOAD`
    UnderApiUnload = -11,
    /// `ACLSHMEM_NOT_SUPPORTED`
    NotSupported = -100,
}

/// Everything that can go wrong in the `shmem` crate.
///
/// Each variant says what was wrong; [`Error::code`] gives the CANN return code the C ABI
/// reports for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument that CANN rejects with `ACLSHMEM_INVALID_PARAM`.
    #[error("invalid parameter: {0}")]
    InvalidParam(String),
    /// An argument that CANN rejects with `ACLSHMEM_INVALID_VALUE`.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A PE number outside the instance (or team).
    #[error("PE {pe} is out of range (there are {n_pes} PEs)")]
    InvalidPe {
        /// The PE asked for.
        pe: i64,
        /// The number of PEs.
        n_pes: u32,
    },
    /// An address or range that does not lie inside the symmetric heap.
    #[error("{0}")]
    OutOfBounds(String),
    /// An atomic or waited-on word at a misaligned address.
    #[error("{0}")]
    Misaligned(String),
    /// `init` of an instance that is already initialised.
    #[error("instance {instance_id} is already initialized; do not call init repeatedly")]
    AlreadyInitialized {
        /// The instance.
        instance_id: u64,
    },
    /// A call on an instance that is not (or no longer) initialised.
    #[error("instance {instance_id} is not initialized")]
    NotInitialized {
        /// The instance.
        instance_id: u64,
    },
    /// An instance id that names no instance.
    #[error("instance {instance_id} does not exist")]
    UnknownInstance {
        /// The instance.
        instance_id: u64,
    },
    /// The PEs could not meet or talk through the bootstrap.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// The symmetric memory could not be set up.
    #[error("symmetric memory: {0}")]
    Memory(String),
    /// A wait or collective operation that did not finish in time.
    #[error("timed out after {seconds:.1} s waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        seconds: f64,
    },
    /// A peer PE died or left while this PE depended on it.
    #[error("PE {pe} is gone: {detail}")]
    PeerLost {
        /// The PE.
        pe: u32,
        /// How it was detected.
        detail: String,
    },
    /// A PE called `global_exit`, or the launcher is ending the job.
    #[error("the job is ending: {0}")]
    JobEnding(String),
    /// A symmetric allocation that does not fit.
    #[error("cannot allocate {requested} bytes from the symmetric heap: {detail}")]
    OutOfMemory {
        /// The bytes asked for.
        requested: u64,
        /// Why it failed.
        detail: String,
    },
    /// A routine or option that this backend or profile does not provide.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// An internal limit or inconsistency (`ACLSHMEM_INNER_ERROR`).
    #[error("{0}")]
    Inner(String),
    /// Any other transport failure.
    #[error(transparent)]
    Transport(TransportError),
}

impl Error {
    /// The CANN return code for this error.
    pub fn code(&self) -> Code {
        match self {
            Error::InvalidParam(_)
            | Error::InvalidPe { .. }
            | Error::OutOfBounds(_)
            | Error::Misaligned(_) => Code::InvalidParam,
            Error::InvalidValue(_) => Code::InvalidValue,
            Error::AlreadyInitialized { .. }
            | Error::UnknownInstance { .. }
            | Error::Bootstrap(_)
            | Error::Inner(_) => Code::InnerError,
            Error::Memory(_) => Code::SmemError,
            Error::NotInitialized { .. } => Code::NotInited,
            Error::Timeout { .. } => Code::TimeoutError,
            Error::PeerLost { .. } | Error::JobEnding(_) => Code::BootstrapError,
            Error::OutOfMemory { .. } => Code::MallocFailed,
            Error::NotSupported(_) => Code::NotSupported,
            Error::Transport(_) => Code::InnerError,
        }
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Error {
        match e {
            TransportError::InvalidPe { pe, n_pes } => Error::InvalidPe {
                pe: i64::from(pe),
                n_pes,
            },
            TransportError::OutOfBounds { .. } | TransportError::LocalBuffer { .. } => {
                Error::OutOfBounds(e.to_string())
            }
            TransportError::Misaligned { .. } => Error::Misaligned(e.to_string()),
            TransportError::Timeout { what, seconds } => Error::Timeout { what, seconds },
            TransportError::PeerLost { pe, detail } => Error::PeerLost { pe, detail },
            TransportError::JobEnding { detail } => Error::JobEnding(detail),
            TransportError::Unsupported { .. } => Error::NotSupported(e.to_string()),
            other => Error::Transport(other),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_canns() {
        assert_eq!(Code::InvalidParam as i32, -1);
        assert_eq!(Code::NotSupported as i32, -100);
        assert_eq!(
            Error::AlreadyInitialized { instance_id: 0 }.code(),
            Code::InnerError
        );
        assert_eq!(Error::InvalidValue("x".into()).code(), Code::InvalidValue);
        let e: Error = TransportError::InvalidPe { pe: 9, n_pes: 4 }.into();
        assert_eq!(e.code(), Code::InvalidParam);
        assert_eq!(e.to_string(), "PE 9 is out of range (there are 4 PEs)");
    }
}
