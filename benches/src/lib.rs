//! Shared pieces of the benchmark programs: timing, the machine's physical limits measured in
//! the same run, the table printer, and the Open MPI OpenSHMEM comparison.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod limits;
pub mod oshmem;
pub mod stats;
pub mod table;
