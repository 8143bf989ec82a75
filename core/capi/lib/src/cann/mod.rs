//! CANN SHMEM's host ABI (`aclshmem_*`, `aclshmemx_*`) in the same `libshmem.so` as the
//! OpenSHMEM ABI: CANN's `shmem_*` names are macros of its headers, not symbols, so the two never
//! clash. Every call maps onto CANN's contract as the Rust layer `shmem_capi::cann` keeps it (the
//! active instance, integer team handles, CANN's codes); the headers are
//! `core/capi/include/cann/`.
//!
//! All 350 of CANN's host entry points: init, finalize, information and the multi-instance
//! context (`init.rs`), logging and profiling (`log.rs`), the queries and the symmetric heap
//! (`heap.rs`), teams and barriers (`team.rs`), RMA (`rma.rs`), put-with-signal (`signal.rs`)
//! and point-to-point synchronisation (`p2p.rs`); what they ask of the ACL runtime stand-in is
//! in `acl.rs`.

use std::ffi::c_int;

use shmem_core::{Error, Result};

/// CANN's 11 host RMA types, `NAME: Rust type` (its `ACLSHMEM_TYPE_FUNC`): the one table every
/// typed family of the CANN ABI comes from. `rma_types!(m)` expands to `m! { float: f32; … }`.
macro_rules! rma_types {
    ($m:ident) => {
        $m! {
            float: f32; double: f64; int8: i8; int16: i16; int32: i32; int64: i64;
            uint8: u8; uint16: u16; uint32: u32; uint64: u64; char: std::ffi::c_char;
        }
    };
}

/// CANN's 10 point-to-point types (`ACLSHMEM_P2P_SYNC_TYPE_FUNC`: the RMA types but `double`).
macro_rules! p2p_types {
    ($m:ident) => {
        $m! {
            float: f32; int8: i8; int16: i16; int32: i32; int64: i64;
            uint8: u8; uint16: u16; uint32: u32; uint64: u64; char: std::ffi::c_char;
        }
    };
}

mod acl;
pub mod device;
mod device_state;
pub mod heap;
pub mod init;
pub mod kernel;
pub mod log;
pub mod on_stream;
pub mod p2p;
pub mod rma;
pub mod signal;
pub mod team;
pub use shmem_hw::cann_types as types;

/// Runs CANN entry `name`: 0, or CANN's code of the failure after logging it in one line.
pub(crate) fn code(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    crate::boundary::enter();
    match f() {
        Ok(()) => 0,
        Err(e) => failed(name, &e),
    }
}

/// Logs a failed CANN call and gives its code.
#[cold]
pub(crate) fn failed(name: &str, e: &Error) -> c_int {
    shmem_capi::log::init();
    tracing::error!("{name}: {e} (code {})", e.code() as i32);
    e.code() as c_int
}
