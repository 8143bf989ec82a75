//! Shared pieces of the benchmark programs: timing, the machine's physical limits measured in
//! the same run, the table printer, the Open MPI OpenSHMEM comparison, and the harness (ports,
//! the release build) the programs and their tests use.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod harness;
pub mod limits;
pub mod oshmem;
pub mod stats;
pub mod table;
