//! One conformance suite for every backend and PE count.
//!
//! A [`Case`] is written once against the `shmem` API. The runner (`tests/sim.rs`, with
//! `harness = false`) turns every case into one trial per PE count, named
//! `<area>::<case>::pes<N>` (for example `rma::put_get_all_types::pes4`), and runs each trial as
//! a real job: N processes of the test binary itself, started by the launcher library. A PE
//! process finds the case to run in its environment, runs it and exits 0 on success; the
//! trial passes when every PE passes. A case that needs something absent (a device, Open MPI)
//! reports *ignored*, never passed.
//!
//! Trials run several at a time, but never with more than [`runner::PE_SLOTS`] PEs alive at
//! once, so an oversubscribed 8-PE case is not made worse by its neighbours. Every trial has a
//! watchdog. Set `SHMEM_CONFORMANCE_FULL=1` for the heavier matrix (more PE counts, larger
//! iteration counts).
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cases;
mod ctx;
pub mod libraries;
pub mod runner;
pub mod stand_ins;

pub use ctx::{CASE_HEAP, Ctx, Failure, Outcome};

/// One conformance case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// `<area>::<name>`.
    pub name: &'static str,
    /// The PE counts it runs with in the fast tier.
    pub pes: &'static [u32],
    /// Extra PE counts for the full tier.
    pub full_pes: &'static [u32],
    /// Whether the simulator's strict completion mode is on (the suite's default: yes).
    pub strict: bool,
    /// Extra environment for every PE.
    pub env: &'static [(&'static str, &'static str)],
    /// How the job must end.
    pub expect: Expect,
    /// The watchdog, in seconds.
    pub timeout_secs: u64,
    /// Which launcher starts the PEs.
    pub via: Via,
    /// Whether the case needs an IPv6 loopback address; without one its trials are reported
    /// ignored, with the reason.
    pub needs_ipv6: bool,
    /// What the case needs of the backend beyond the semantics every backend provides; on a
    /// backend without it the case's trials are reported ignored, with the reason.
    pub needs: &'static [Need],
    /// The body, run on every PE.
    pub run: fn(&Ctx) -> Outcome,
}

/// Which launcher starts a case's PEs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The project's launcher library (what `shmemrun` runs).
    Shmemrun,
    /// Open MPI's `mpirun`; the trial is reported ignored where Open MPI is not installed.
    Mpirun,
}

/// How a case's job must end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Every PE exits 0.
    AllPass,
    /// PE `pe` is killed by SIGKILL (the case kills it) and every other PE exits 0 on its own:
    /// the launcher must not stop them, since they are checking how they notice the death.
    PeKilled {
        /// The PE that dies.
        pe: u32,
    },
}

/// What a case may need of a backend beyond what every backend provides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Remote atomics issued by the host, and the locks built on them.
    HostAtomics,
    /// Host loads and stores of symmetric memory (`ptr`, `shmem_ptr`).
    HostMapping,
    /// Kernels running on the simulator's AI cores.
    SimulatedCores,
    /// Queues made from the program's [`shmem::Stream`]s.
    ProgramStreams,
    /// The simulator's strict completion mode, which delays and reorders what a missing quiet
    /// or fence leaves unordered, so that the case can see it.
    StrictReordering,
    /// The simulator's own segments (shared-memory files, their descriptors, their memory).
    SimulatorSegments,
    /// `SHMEM_UID_SESSION_ID` for the program's own unique id alone.
    OwnSessionAddress,
    /// The project's `libshmem.so` (the OpenSHMEM C ABI), which the runner builds and names
    /// to the PEs in `SHMEM_CONFORMANCE_C_LIBRARY`.
    CLibrary,
}

impl Need {
    /// Why `backend` lacks this, or `None` when it has it.
    pub fn missing_on(self, backend: &str) -> Option<&'static str> {
        if backend != "hw" {
            return None;
        }
        Some(match self {
            Need::HostAtomics => {
                "CANN SHMEM's host API has no remote atomics, so the hw backend has no host atomics or locks"
            }
            Need::HostMapping => {
                "on Ascend every heap is device memory, which host code cannot load or store"
            }
            Need::SimulatedCores => {
                "kernels run on the simulator's AI cores; on hw they are AscendC kernels on the NPU"
            }
            Need::ProgramStreams => {
                "the cases use shmem::Stream (the simulator's executor) with host buffers and 64-bit words; on hw a stream is the program's aclrtStream with device operands and CANN's 32-bit signals (the CANN host program on hw covers it)"
            }
            Need::StrictReordering => {
                "the hw backend completes every operation in stream order, so there is nothing for the simulator's strict mode to reorder"
            }
            Need::SimulatorSegments => {
                "it measures the simulator's own segments (files, descriptors, memory), which through the stand-ins every instance has twice"
            }
            Need::OwnSessionAddress => {
                "SHMEM_UID_SESSION_ID names one address, which CANN SHMEM's own unique id takes too; on hw use SHMEM_UID_SOCK_IFNAME"
            }
            Need::CLibrary => {
                "the case loads the project's libshmem.so, whose name and symbols the hw backend's CANN library has too (the C ABI's hw path has its own programs)"
            }
        })
    }
}

/// The PE counts of the suite: 1, 2, 4 and an oversubscribed 8.
pub const STANDARD_PES: &[u32] = &[1, 2, 4, 8];
/// At least two PEs.
pub const MULTI_PES: &[u32] = &[2, 4, 8];

impl Case {
    /// A case that runs on [`STANDARD_PES`] with the defaults.
    pub const fn new(name: &'static str, run: fn(&Ctx) -> Outcome) -> Case {
        Case {
            name,
            pes: STANDARD_PES,
            full_pes: &[3, 5],
            strict: true,
            env: &[],
            expect: Expect::AllPass,
            timeout_secs: 60,
            via: Via::Shmemrun,
            needs_ipv6: false,
            needs: &[],
            run,
        }
    }

    /// The same case, which needs `needs` of the backend.
    pub const fn needs(self, needs: &'static [Need]) -> Case {
        Case { needs, ..self }
    }

    /// The same case, which needs an IPv6 loopback address.
    pub const fn needs_ipv6(self) -> Case {
        Case {
            needs_ipv6: true,
            ..self
        }
    }

    /// The same case on other PE counts (and no extra full-tier counts unless
    /// [`Case::full_pes`] adds some).
    pub const fn pes(self, pes: &'static [u32]) -> Case {
        Case {
            pes,
            full_pes: &[],
            ..self
        }
    }

    /// The same case with other full-tier PE counts.
    pub const fn full_pes(self, full_pes: &'static [u32]) -> Case {
        Case { full_pes, ..self }
    }

    /// The same case without strict completion.
    pub const fn relaxed(self) -> Case {
        Case {
            strict: false,
            ..self
        }
    }

    /// The same case with extra environment.
    pub const fn env(self, env: &'static [(&'static str, &'static str)]) -> Case {
        Case { env, ..self }
    }

    /// The same case with another expectation.
    pub const fn expect(self, expect: Expect) -> Case {
        Case { expect, ..self }
    }

    /// The same case, started by Open MPI's `mpirun`.
    pub const fn via_mpirun(self) -> Case {
        Case {
            via: Via::Mpirun,
            ..self
        }
    }

    /// The same case with another watchdog.
    pub const fn timeout(self, timeout_secs: u64) -> Case {
        Case {
            timeout_secs,
            ..self
        }
    }
}
