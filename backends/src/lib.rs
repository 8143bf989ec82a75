//! The transport contract of the shmem workspace.
//!
//! A *transport* moves bytes between the symmetric segments of the PEs of one SHMEM instance. It
//! knows nothing of instances, teams or allocators: the core (crate `shmem`) decides what lives at
//! which offset of a segment and checks every access before it reaches a transport, and a
//! transport performs it following the ordering rules documented on [`Transport`].
//!
//! The local side of an access is host memory, a range of the PE's own segment or device
//! memory ([`Local`], [`LocalMut`]); a queue is a plain completion domain or a stream
//! ([`Transport::stream_queue`]). Barriers and waits have the core's algorithms as defaults
//! ([`sync`]), which a transport may replace. What a transport cannot do it reports in its
//! [`Capabilities`], and its method for it is the default that returns
//! [`TransportError::Unsupported`].
//!
//! The vocabulary shared by every layer lives here too: comparison operators with CANN's numeric
//! values ([`Cmp`]), signal operators ([`SignalOp`]), atomic operations ([`AmoOp`]), access widths
//! ([`Width`]), the limits and capabilities of a transport ([`Profile`]) and its error type
//! ([`TransportError`]).
//!
//! ```
//! use shmem_backend::{Cmp, SignalOp};
//! assert_eq!(Cmp::Ge as i32, 3);
//! assert_eq!(Cmp::from_raw(5), Some(Cmp::Le));
//! assert_eq!(SignalOp::from_raw(1), Some(SignalOp::Add));
//! ```
#![deny(unsafe_op_in_unsafe_fn)]

mod error;
mod limits;
mod local;
mod ops;
mod profile;
pub mod sync;
mod transport;

pub use error::TransportError;
pub use limits::{limit_reached, mappings, tasks_refused, too_few_mappings};
pub use local::{Local, LocalMut};
pub use ops::{AmoOp, Cmp, Scalar, ScalarKind, SignalOp, Width};
pub use profile::{Capabilities, Limits, Profile};
pub use transport::{
    BarrierSpec, Deadline, Exchange, Patient, SegmentSpec, Signal, Strided, Transport, WaitWord,
    Watch, Watchdog,
};

/// A PE number inside one instance (`0..n_pes`).
pub type Pe = u32;
