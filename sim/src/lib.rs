//! The multi-process shared-memory simulator: a [`Transport`](shmem_backend::Transport) in which
//! every PE is an OS process and every PE's segment is mapped into every process, and the
//! `shmemrun` launcher that starts such jobs.
//!
//! - [`SimTransport`] moves data with `memcpy` and CPU atomics on the peers' mappings; waiting
//!   PEs spin, yield or sleep on a shared futex according to [`WaitPolicy`]; a strict completion
//!   mode (see [`SimSettings`]) delays non-blocking operations as long as the rules allow.
//! - [`Stream`] is the asynchronous in-order executor behind stream queues (CANN's
//!   `_on_stream` calls), the ACL runtime stand-in and kernel launches.
//! - [`launcher`] starts a job of N PEs, supervises it and gives each PE its identity.
//!
//! Segments are anonymous `memfd` objects handed from PE to PE over abstract Unix sockets: no
//! shared-memory name exists at any moment, so nothing is left behind after any exit.
#![deny(unsafe_op_in_unsafe_fn)]

mod access;
mod control;
mod core_pool;
mod delivery;
mod device_window;
mod fd_exchange;
pub mod launch;
pub mod launcher;
mod segment;
mod settings;
mod sigbus;
pub mod stream;
mod strict;
mod transport;
mod wait;

pub use access::{copy_program_memory, ordering};
pub use launch::{Core, Kernel, KernelError, KernelResult, MAX_AIV_PER_NPU, UB_ALIGN, UB_SIZE};
pub use segment::page_size;
pub use settings::{SettingError, SimSettings, WaitPolicy, strict_seed};
pub use stream::Stream;
pub use transport::{SimQueue, SimTransport};
