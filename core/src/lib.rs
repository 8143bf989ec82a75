//! CANN SHMEM semantics in Rust: symmetric memory shared by the PEs (processing elements) of
//! one or more independent instances.
//!
//! Every PE is one process. An [`Instance`] is a team world with its own symmetric heap,
//! synchronisation resources and bootstrap; any PE can put data into, and get data from, any
//! peer's heap, and PEs synchronise with barriers. Programs created for CANN SHMEM map onto this
//! API call for call; the same program runs on the multi-process simulator (the default
//! backend) and, through the `hw` backend, on Ascend NPUs.
//!
//! ```no_run
//! // Run with: shmemrun -n 4 -- target/debug/examples/hello
//! let inst = shmem::Instance::from_env()?;
//! let (me, n) = (inst.my_pe(), inst.n_pes());
//! let slot = inst.malloc::<u32>(1)?;
//! slot.as_slice().put(&[me], (me + 1) % n)?;       // write into the right neighbour's heap
//! inst.barrier_all()?;
//! assert_eq!(slot.as_slice().g(0, me)?, (me + n - 1) % n);
//! slot.free()?;
//! inst.finalize()?;
//! # Ok::<(), shmem::Error>(())
//! ```
//!
//! See the crate's `docs/` for the architecture and the CANN differences.
#![deny(unsafe_op_in_unsafe_fn)]

mod amo;
mod attr;
pub(crate) mod bootstrap;
mod coll;
mod ctx;
mod diag;
mod error;
mod exit;
mod fabric;
mod fault;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod heap;
mod info;
mod instance;
mod kernel;
mod kernel_addr;
mod launch;
mod lock;
mod p2p;
mod registry;
mod rlimit;
mod rma;
mod settings;
mod signal;
mod statics;
mod sym;
mod team;
mod watchdog;

pub use amo::{AmoBitwise, AmoStandard, AmoType};
pub use attr::{
    Attributes, Backend, DEFAULT_TIMEOUT, EXTRA_SIZE, InitMode, Listener, MAX_IP_PORT_LEN, Secret,
    UniqueId, engine,
};
pub use bootstrap::{BootstrapError, BootstrapErrorKind, RefuseReason};
pub use coll::{Complex32, Complex64, ReduceOp, Reducible};
pub use ctx::{Context, CtxOptions, CtxRef};
pub use error::{Code, Error, Result};
pub use exit::exit_without_finalize;
pub use fabric::Stream;
#[cfg(feature = "fault-injection")]
pub use fault::POINTS as FAULT_POINTS;
pub use half::{bf16, f16};
pub use info::{
    MAJOR_VERSION, MAX_NAME_LEN, MINOR_VERSION, VENDOR_STRING, info_get_name, info_get_version,
    pcontrol, pcontrol_level,
};
pub use instance::{IdState, Instance, ThreadLevel};
pub use kernel::{
    Device, DeviceFloat, MultiDevice, NonContiguousCopyParam, launch_multi_instance,
    launch_starting_on,
};
pub use lock::LockGuard;
pub use rma::{DeviceRange, NbiScope};
pub use settings::ApiProfile;
pub use shmem_backend::{AmoOp, Capabilities, Cmp, Pe, Scalar, SignalOp, TransportError};
/// Open MPI, loaded at run time: the [`shmem_mpi`] crate (what the MPI bootstrap uses).
pub use shmem_mpi as mpi;
pub use shmem_sim::{KernelError, KernelResult, MAX_AIV_PER_NPU, UB_SIZE};
pub use signal::SignalWord;
pub use statics::StaticRange;
pub use sym::{SymBuf, SymElem, SymSlice};
pub use team::{MAX_TEAMS, Team, TeamConfig};

/// The library's name, as CANN's `aclshmem_info_get_name` reports it.
pub const NAME: &str = "ACLSHMEM v1.1.1";
/// The library's version, as CANN's `aclshmem_info_get_version` reports it.
pub const VERSION: (i32, i32) = (1, 1);
