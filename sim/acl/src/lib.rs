//! `libascendcl.so`: a stand-in for the ACL runtime (AscendCL) that simulates one NPU per PE, so
//! that CANN SHMEM host programs, which call ACL around SHMEM (`aclInit`, `aclrtSetDevice`,
//! streams, `aclrtMalloc`, `aclrtMemcpy`, …), build and run on a laptop unchanged, and fail
//! where they would fail on an NPU.
//!
//! - **One table** (`src/table.rs`) holds every signature and constant, with ACL's values and
//!   the public source of each; `build.rs` generates `include/acl/acl.h` from it.
//! - **Device memory is not host memory.** `aclrtMalloc` returns an address whose pages host
//!   code cannot touch (loads and stores fault, as on an NPU); the runtime reaches the same
//!   memory through an alias of its own, for `aclrtMemcpy`/`Memset` and for the simulator's
//!   `libshmem.so` (`aclsimDeviceAlias`, `acl/acl_sim.h`). `SHMEM_SIM_DEVICE_HOST_ACCESS=1`
//!   makes device memory host-readable for debugging, and says so on standard error.
//! - **Streams** are the simulator's one stream executor ([`shmem_sim::Stream`]): asynchronous
//!   and in order; under `SHMEM_SIM_STRICT=1` queued work runs only when the stream is
//!   synchronised (or a host wait forces it), so a missing `aclrtSynchronizeStream` shows every
//!   time.
//! - **Devices**: the simulated NPUs of this node are as many as the launcher's PEs
//!   (`SHMEMRUN_NPES`, or Open MPI's local size; 1 outside a launcher), unless
//!   `SHMEM_SIM_DEVICE_COUNT` says otherwise.
//! - **Errors** follow ACL's checks and codes (100000 for a null pointer or bad enum, the rt
//!   layer's 107000 for a bad size, 107001 for a bad device, 107002 with no current context…);
//!   each failed call writes one line to standard error, and `aclGetRecentErrMsg` returns it.
//!   No panic unwinds into C.
#![deny(unsafe_op_in_unsafe_fn)]
// The crate's Rust items are all internal (its interface is the C ABI of `libascendcl.so`), and
// its documentation is about them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod api;
mod copy;
mod memory;
mod state;
mod streams;

/// The table of signatures and constants (also `build.rs`'s).
#[allow(dead_code, unreachable_pub)]
pub mod table {
    include!("table.rs");

    /// Whether `value` is a member of the enumeration `name` of [`ENUMS`].
    pub(crate) fn is_member(name: &str, value: i32) -> bool {
        ENUMS
            .iter()
            .filter(|e| e.0 == name)
            .flat_map(|e| e.1)
            .any(|m| m.1 == i64::from(value))
    }
}

/// ACL's error type.
#[allow(non_camel_case_types)]
pub type aclError = std::ffi::c_int;
