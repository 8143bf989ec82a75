//! The error type of the `shmem` crate and CANN SHMEM's numeric return codes.

use shmem_backend::TransportError;

use crate::bootstrap::{BootstrapError, BootstrapErrorKind};

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
    /// The PEs could not meet, or talk, through the bootstrap; its kind says what happened
    /// ([`Error::code`] follows it: `INNER_ERROR` for a failure to meet at init, as CANN).
    #[error(transparent)]
    Bootstrap(BootstrapError),
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
    /// PE `pe` called `global_exit(status)`: the job is ending.
    #[error("the job is ending: PE {pe} called global_exit({status})")]
    JobEnding {
        /// The PE that ended the job.
        pe: u32,
        /// Its exit status, which every PE exits with.
        status: i32,
    },
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
            Error::Bootstrap(e) => bootstrap_code(e),
            Error::AlreadyInitialized { .. } | Error::UnknownInstance { .. } | Error::Inner(_) => {
                Code::InnerError
            }
            Error::Memory(_) => Code::SmemError,
            Error::NotInitialized { .. } => Code::NotInited,
            Error::Timeout { .. } => Code::TimeoutError,
            Error::PeerLost { .. } | Error::JobEnding { .. } => Code::BootstrapError,
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
            TransportError::JobEnding { pe, status } => Error::JobEnding { pe, status },
            TransportError::Finalized { instance } => Error::NotInitialized {
                instance_id: instance,
            },
            TransportError::Unsupported { .. } => Error::NotSupported(e.to_string()),
            // Running out of descriptors names the limit to raise.
            TransportError::Os { context, source } => {
                let context = match crate::rlimit::limit_reached(&source) {
                    Some(limit) => format!("{context}: {limit}"),
                    None => context,
                };
                Error::Transport(TransportError::Os { context, source })
            }
            other => Error::Transport(other),
        }
    }
}

/// CANN's code for a bootstrap failure: `INNER_ERROR` when the PEs could not meet at init;
/// later, `BOOTSTRAP_ERROR` for a lost peer or the end of the job and `TIMEOUT_ERROR` for a
/// timeout; a bad address `INVALID_PARAM` and a bad value `INVALID_VALUE`, whenever found.
fn bootstrap_code(e: &BootstrapError) -> Code {
    match e.kind() {
        BootstrapErrorKind::Address => Code::InvalidParam,
        BootstrapErrorKind::Invalid if !e.during_init() => Code::InvalidValue,
        _ if e.during_init() => Code::InnerError,
        BootstrapErrorKind::Timeout { .. } => Code::TimeoutError,
        BootstrapErrorKind::PeerLost { .. }
        | BootstrapErrorKind::ServerLost
        | BootstrapErrorKind::GlobalExit { .. } => Code::BootstrapError,
        _ => Code::InnerError,
    }
}

/// A bootstrap failure as a library error: after init, a lost peer is [`Error::PeerLost`]
/// (PE 0 for a lost server) and a global exit [`Error::JobEnding`], as when a wait finds
/// them; everything else keeps the bootstrap's error whole.
impl From<BootstrapError> for Error {
    fn from(e: BootstrapError) -> Error {
        match *e.kind() {
            _ if e.during_init() => Error::Bootstrap(e),
            BootstrapErrorKind::PeerLost { pe } => Error::PeerLost {
                pe,
                detail: e.message().to_owned(),
            },
            BootstrapErrorKind::ServerLost => Error::PeerLost {
                pe: 0,
                detail: e.message().to_owned(),
            },
            BootstrapErrorKind::GlobalExit { pe, status } => Error::JobEnding { pe, status },
            _ => Error::Bootstrap(e),
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
