//! The C ABI of the shmem library, as a Rust library until the C entry points arrive: what C
//! callers need and the safe Rust API deliberately does not have.
//!
//! - [`cann`]: CANN SHMEM's process-wide *active instance* and its integer team handles;
//! - [`raw`]: the byte-level calls on heap offsets (`aclshmem_malloc` returns `heap_base +
//!   offset`; `aclshmem_putmem` takes symmetric addresses), each mapped onto the typed core;
//! - [`log`]: logging at the boundary, one line per failed call.
//!
//! It holds no semantics of its own: every call maps onto the `shmem` crate.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cann;
pub mod log;
pub mod raw;
