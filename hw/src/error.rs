//! The backend's errors: a library that could not be loaded, a function it lacks, or a call that
//! failed with the vendor's code.

use shmem_dl::DlError;

use crate::acl::AclError;
use crate::cann::ShmemError;
use crate::load::LoadError;

/// What went wrong in the hardware backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HwError {
    /// The vendor libraries could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A loaded library lacks a function the call needs.
    #[error(transparent)]
    Missing(#[from] DlError),
    /// A setting of the backend has a value it cannot use.
    #[error("{0}")]
    Setting(String),
    /// An ACL runtime call failed, with the runtime's message for it when it gave one
    /// (`aclGetRecentErrMsg`).
    #[error("{call} failed: {error}{}", .detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Acl {
        /// The C function.
        call: &'static str,
        /// Its `aclError`.
        error: AclError,
        /// The runtime's message.
        detail: Option<String>,
    },
    /// A CANN SHMEM call failed.
    #[error("{call} failed: {error}")]
    Shmem {
        /// The C function.
        call: &'static str,
        /// Its `aclshmem_error_code_t`.
        error: ShmemError,
    },
}
