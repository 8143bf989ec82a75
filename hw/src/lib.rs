//! The Ascend hardware backend: Ascend NPUs through the ACL runtime (`libascendcl.so`) and CANN
//! SHMEM (`libshmem.so`), both loaded at run time, so that this crate builds on any machine with
//! no SDK (`docs/hardware.md`).
//!
//! Built so far: finding and loading the two libraries ([`load`]). The transport over them is
//! not built yet.

pub mod load;

pub use load::{Libraries, LoadError, Places, load};
