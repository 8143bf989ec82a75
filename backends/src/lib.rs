//! The transport contract of the shmem workspace.
//!
//! A *transport* moves bytes between the symmetric segments of the PEs of one SHMEM instance. It
//! knows nothing of instances, teams or allocators: the core (crate `shmem`) decides what lives at
//! which offset of a segment, and a transport only guarantees that every access it performs stays
//! inside a segment and follows the ordering rules documented on [`Transport`].
//!
//! The vocabulary shared by every layer lives here too: comparison operators with CANN's numeric
//! values ([`Cmp`]), signal operators ([`SignalOp`]), atomic operations ([`AmoOp`]), access widths
//! ([`Width`]), the limits and capabilities of a transport ([`Profile`]) and its error type
//! ([`TransportError`]).
//!
//! Two forms of the trait exist, as in wgpu-hal: [`Transport`] is the static trait with an
//! associated completion-queue type, and [`DynTransport`] is its object-safe mirror, implemented
//! for every `Transport` by a blanket impl, for choosing a backend at run time.
//!
//! ```
//! use shmem_backend::{Cmp, SignalOp};
//! assert_eq!(Cmp::Ge as i32, 3);
//! assert_eq!(Cmp::from_raw(5), Some(Cmp::Le));
//! assert_eq!(SignalOp::from_raw(1), Some(SignalOp::Add));
//! ```
#![deny(unsafe_op_in_unsafe_fn)]

mod dyn_transport;
mod error;
mod ops;
mod profile;
mod transport;

pub use dyn_transport::{DynQueue, DynTransport};
pub use error::TransportError;
pub use ops::{AmoOp, Cmp, Scalar, ScalarKind, SignalOp, Width};
pub use profile::{Capabilities, Limits, Profile};
pub use transport::{Exchange, SegmentSpec, Signal, Strided, Transport, WaitCtl, Watch};

/// A PE number inside one instance (`0..n_pes`).
pub type Pe = u32;
