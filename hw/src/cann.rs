//! CANN SHMEM's host calls, in two layers: the raw table of the calls the backend may make,
//! generated from `src/cann_table.rs` (compiled against the CANN headers by a test), and
//! [`ShmemError`], the `Result` form of CANN's `aclshmem_error_code_t`.

#![allow(missing_docs)]

use std::fmt;

include!(concat!(env!("OUT_DIR"), "/cann_raw.rs"));

/// `ACLSHMEM_SUCCESS`.
pub const ACLSHMEM_SUCCESS: i32 = 0;
/// `ACLSHMEM_NOT_SUPPORTED`: what the backend answers where the loaded release lacks a call.
pub const ACLSHMEM_NOT_SUPPORTED: i32 = -100;

/// A failed CANN SHMEM call: its `aclshmem_error_code_t` (never `ACLSHMEM_SUCCESS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShmemError(pub i32);

impl ShmemError {
    /// `Ok` for `ACLSHMEM_SUCCESS`, else the code as an error.
    pub fn check(code: i32) -> Result<(), ShmemError> {
        match code {
            ACLSHMEM_SUCCESS => Ok(()),
            c => Err(ShmemError(c)),
        }
    }
}

impl fmt::Display for ShmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CANN SHMEM error {}", self.0)
    }
}

impl std::error::Error for ShmemError {}
