//! The ACL runtime, in two layers: the raw table of its functions and constants, generated from
//! the table that also generates the ACL stand-in's `acl/acl.h` (`sim/acl/src/table.rs`), and
//! [`AclError`], the `Result` form of its `aclError` codes.

#![allow(non_camel_case_types, missing_docs)]

use std::fmt;

include!(concat!(env!("OUT_DIR"), "/acl_raw.rs"));

/// A failed ACL call: its `aclError` code (never `ACL_SUCCESS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AclError(pub i32);

impl AclError {
    /// `Ok` for `ACL_SUCCESS`, else the code as an error.
    pub fn check(code: i32) -> Result<(), AclError> {
        match code {
            ACL_SUCCESS => Ok(()),
            c => Err(AclError(c)),
        }
    }
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ACL error {}", self.0)
    }
}

impl std::error::Error for AclError {}

impl Acl {
    /// The error of ACL call `call` that failed with `error`, with the runtime's message for
    /// it (`aclGetRecentErrMsg`, read now, on the thread that made the call).
    fn failed(&self, call: &'static str, error: AclError) -> crate::HwError {
        let detail = self.acl_get_recent_err_msg().ok().and_then(|f| {
            // SAFETY: `aclGetRecentErrMsg(void)` returns NULL or a C string the runtime keeps
            // until the thread's next call.
            let p = unsafe { f() };
            if p.is_null() {
                return None;
            }
            // SAFETY: non-null: a C string, per the above.
            let msg = unsafe { std::ffi::CStr::from_ptr(p) };
            Some(msg.to_string_lossy().into_owned())
        });
        crate::HwError::Acl {
            call,
            error,
            detail: detail.filter(|d| !d.is_empty()),
        }
    }
}
