//! [`AclStream`]: a program's `aclrtStream`, which the hw backend's queues on streams enqueue
//! CANN's `_on_stream` calls on (CANN's host calls that take a stream).

use std::ffi::c_void;

use crate::error::HwError;
use crate::runtime::Runtime;

/// An `aclrtStream` of the loaded ACL runtime, made by the program (`aclrtCreateStream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AclStream(usize);

impl AclStream {
    /// The stream `raw` names.
    ///
    /// # Safety
    ///
    /// `raw` is a live `aclrtStream` of the ACL runtime the hw backend loaded, and stays live
    /// while operations are enqueued on it.
    pub unsafe fn from_raw(raw: *mut c_void) -> AclStream {
        AclStream(raw as usize)
    }

    /// The `aclrtStream`.
    pub fn raw(self) -> *mut c_void {
        self.0 as *mut c_void
    }

    /// Waits until the stream has run everything enqueued on it (`aclrtSynchronizeStream`).
    pub fn synchronize(self) -> Result<(), HwError> {
        let rt = Runtime::loaded().ok_or_else(|| {
            HwError::Setting("no hw instance has loaded the ACL runtime yet".into())
        })?;
        rt.bind()?;
        // SAFETY: a live stream of the loaded runtime (`from_raw`'s contract).
        unsafe { rt.acl.try_aclrt_synchronize_stream(self.raw()) }
    }
}
