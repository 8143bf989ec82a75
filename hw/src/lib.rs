//! The Ascend hardware backend: Ascend NPUs through the ACL runtime (`libascendcl.so`) and CANN
//! SHMEM (`libshmem.so`), both loaded at run time, so that this crate builds on any machine with
//! no SDK (`docs/hardware.md`).
//!
//! Built so far: finding and loading the two libraries ([`load()`], module [`mod@load`]), the raw function
//! tables and error types of the ACL runtime ([`acl`]) and CANN SHMEM ([`cann`]), and what the loaded CANN SHMEM release has
//! ([`version`]). The transport over them is not built yet.

pub mod acl;
pub mod cann;
pub mod cann_types;
mod error;
pub mod load;
pub mod version;

pub use acl::{Acl, AclError};
pub use cann::{Cann, ShmemError};
pub use error::HwError;
pub use load::{Libraries, LoadError, Places, load};
pub use version::Features;
