//! What this build of `libshmem.so` is, for the hw backend's loader: every build answers
//! `shmemrs_library_kind()`, so that the backend never takes one of this project's libraries
//! for CANN SHMEM unless it is a stand-in (built with the `stand-in` feature, which plays CANN
//! SHMEM on the simulator and has no hw backend of its own).

use std::ffi::{CStr, c_char};

/// The kind of this build: `"stand-in"` or `"program"`.
#[cfg(feature = "stand-in")]
const KIND: &CStr = c"stand-in";
#[cfg(not(feature = "stand-in"))]
const KIND: &CStr = c"program";

/// `shmemrs_library_kind` (this project's): `"stand-in"` for a build that plays CANN SHMEM,
/// `"program"` for the library programs link.
#[unsafe(no_mangle)]
pub extern "C" fn shmemrs_library_kind() -> *const c_char {
    KIND.as_ptr()
}
