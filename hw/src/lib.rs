//! The Ascend hardware backend: Ascend NPUs through the ACL runtime (`libascendcl.so`) and CANN
//! SHMEM (`libshmem.so`), both loaded at run time, so that this crate builds on any machine with
//! no SDK (`docs/hardware.md`).
//!
//! The layers, bottom up: finding and loading the two libraries ([`load()`], module
//! [`mod@load`]); the raw function tables and `Result` wrappers of the ACL runtime ([`acl`])
//! and CANN SHMEM ([`cann`]); what the loaded CANN SHMEM release has ([`version`]); the
//! process's one hold on them ([`runtime`]); and the [`HwTransport`] over them
//! ([`transport`]), which the core selects with `SHMEM_BACKEND=hw`.

pub mod acl;
pub mod cann;
pub mod cann_types;
mod error;
pub mod load;
pub mod runtime;
pub mod stream;
pub mod transport;
pub mod version;

pub use acl::{Acl, AclError};
pub use cann::{Cann, ShmemError};
pub use error::HwError;
pub use load::{Libraries, LoadError, Places, load};
pub use runtime::Runtime;
pub use stream::{AclStream, DeviceStream};
pub use transport::{HwQueue, HwTransport};
pub use version::Features;
