//! `libshmem.so` and `libshmem.a`: the OpenSHMEM C ABI over the Rust library, for C, C++ and
//! Python programs that use OpenSHMEM (`#include <shmem.h>`, `oshcc`, `oshrun`).
//!
//! The library holds no semantics of its own: every routine maps onto the Rust core, on the
//! default instance that `shmem_init` creates from the launcher's environment under the
//! OpenSHMEM profile (no NPU device-address limits). Typed families are generated from one type
//! table (`src/table.rs`) by `build.rs`, which also writes the header; `include/shmem.h` is that
//! header, checked against the generator by the tests.
//!
//! **Errors.** No panic unwinds into C: every routine runs inside [`boundary::call`], whose
//! panic hook ends the PE before unwinding begins. A failed routine logs one line naming the call and the cause; one that returns a
//! code returns the specification's; an unrecoverable failure (a dead peer, a timeout, the job
//! ending) ends the process with a non-zero status and that message.
//!
//! This first part of the ABI covers setup, the symmetric heap and RMA (every typed, sized and
//! byte form, blocking and non-blocking, strided); the other families follow.
#![deny(unsafe_op_in_unsafe_fn)]
// The crate's Rust items are all internal (its interface is the C ABI), and its documentation
// is about them.
#![allow(rustdoc::private_intra_doc_links)]

pub mod active_set;
pub mod amo;
mod boundary;
pub mod build_kind;
pub mod cann;
pub mod coll;
pub mod ctx;
pub mod extensions;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handles;
pub mod heap;
pub mod longdouble;
pub mod p2p;
pub mod rma;
pub mod setup;
mod startup_info;
mod static_data;
pub mod team;
mod world;

/// The type table the generated routines come from (also `build.rs`'s), for the constants the
/// hand-written routines share with the header.
#[allow(dead_code, unreachable_pub)]
mod table {
    include!("table.rs");
}

/// The generated typed, sized and byte RMA routines (`shmem_TYPENAME_put`, `shmem_put32`, …).
// Some generated bodies call only safe code inside the `unsafe` block every routine has.
#[allow(unused_unsafe)]
pub mod rma_typed {
    use std::ffi::c_int;
    include!(concat!(env!("OUT_DIR"), "/rma_typed.rs"));
}
