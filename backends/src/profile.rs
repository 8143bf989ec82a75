//! What a transport can do and the limits it enforces.

/// The limits of the hardware library that every transport enforces, so that a program that runs
/// on the simulator also fits on the hardware.
///
/// The values default to CANN SHMEM's (`ACLSHMEM_MAX_PES`, `ACLSHMEM_MAX_LOCAL_SIZE`, the 128 GiB
/// per-instance address space, 255 non-default instances).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most PEs one instance may have (`ACLSHMEM_MAX_PES`).
    pub max_pes: u32,
    /// The largest `local_mem_size` of one PE (`ACLSHMEM_MAX_LOCAL_SIZE`).
    pub max_local_mem: u64,
    /// `local_mem_size` must be a multiple of this (`ACLSHMEM_PAGE_SIZE`).
    pub local_mem_granularity: u64,
    /// The most address space all the heaps of one instance may span together, counted as
    /// `n_pes × align_up(local_mem_size + extra, heap_alignment)`.
    pub max_instance_space: u64,
    /// The alignment of one PE's slot in that address space (`ACLSHMEM_HEAP_ALIGNMENT_SIZE`).
    pub heap_alignment: u64,
    /// The largest instance id (ids `1..=max_instance_id` besides the default instance 0).
    pub max_instance_id: u64,
}

impl Limits {
    /// CANN SHMEM's limits.
    pub const CANN: Limits = Limits {
        max_pes: 16384,
        max_local_mem: 40 << 30,
        local_mem_granularity: 2 << 20,
        max_instance_space: 128 << 30,
        heap_alignment: 1 << 30,
        max_instance_id: 255,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::CANN
    }
}

/// Optional abilities of a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Peers' segments are mapped into this process, so [`crate::Transport::segment_ptr`]
    /// returns load/store addresses for every PE.
    pub load_store: bool,
    /// Remote atomics are issued by the host (CANN's host API has none).
    pub host_atomics: bool,
    /// The transport can delay non-blocking operations until the latest point the
    /// specification allows (the simulator's strict completion mode is on).
    pub strict_completion: bool,
}

/// A transport's name, limits and capabilities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// A short name (`"sim"`, `"hw"`).
    pub name: &'static str,
    /// The limits it enforces.
    pub limits: Limits,
    /// What it can do.
    pub caps: Capabilities,
}
