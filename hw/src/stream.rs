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

/// An `aclrtStream` this library made (`aclrtCreateStream`), destroyed when the last handle
/// is dropped, after the work on it has run.
#[derive(Debug)]
struct Owned(AclStream);

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(rt) = Runtime::loaded()
            && rt.bind().is_ok()
        {
            // SAFETY: the stream this library made, used by no one else now.
            let _ = unsafe { rt.acl.try_aclrt_synchronize_stream(self.0.raw()) };
            // SAFETY: as above; destroyed once.
            let _ = unsafe { rt.acl.try_aclrt_destroy_stream(self.0.raw()) };
        }
    }
}

/// A stream of the device the hw backend drives: one a program made and lends ([`Self::lent`]),
/// or one made here ([`Self::create`]) and kept alive by every handle, queues included.
#[derive(Clone, Debug)]
pub struct DeviceStream {
    stream: AclStream,
    /// Held, never read: the last handle's drop destroys a stream made here.
    _owner: Option<std::sync::Arc<Owned>>,
}

impl PartialEq for DeviceStream {
    fn eq(&self, other: &Self) -> bool {
        self.stream == other.stream
    }
}

impl Eq for DeviceStream {}

impl DeviceStream {
    /// The program's stream `stream`, which the program keeps alive and destroys.
    pub fn lent(stream: AclStream) -> DeviceStream {
        DeviceStream {
            stream,
            _owner: None,
        }
    }

    /// A new stream on the device of the loaded runtime (an instance on hw must exist).
    pub fn create() -> Result<DeviceStream, HwError> {
        let rt = Runtime::loaded().ok_or_else(|| {
            HwError::Setting("no hw instance has loaded the ACL runtime yet".into())
        })?;
        rt.bind()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: writes one aclrtStream.
        unsafe { rt.acl.try_aclrt_create_stream(&mut raw) }?;
        // SAFETY: just made by the loaded runtime; `Owned` destroys it.
        let stream = unsafe { AclStream::from_raw(raw) };
        Ok(DeviceStream {
            stream,
            _owner: Some(std::sync::Arc::new(Owned(stream))),
        })
    }

    /// The `aclrtStream`.
    pub fn stream(&self) -> AclStream {
        self.stream
    }
}
