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

impl Limits {
    /// The limits of an OpenSHMEM program, which models a CPU job: no device address space
    /// bounds the instance (Sandia OpenSHMEM and Open MPI run thousands of PEs), so neither the
    /// 128 GiB instance span nor CANN's PE count applies; the heap's layout stays CANN's.
    pub const OPENSHMEM: Limits = Limits {
        max_pes: 1 << 20,
        max_local_mem: Limits::CANN.max_local_mem,
        local_mem_granularity: Limits::CANN.local_mem_granularity,
        max_instance_space: u64::MAX,
        heap_alignment: Limits::CANN.heap_alignment,
        max_instance_id: Limits::CANN.max_instance_id,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::CANN
    }
}

/// What a transport can do beyond moving bytes between segments. The core reads these to
/// decide what it refuses: an operation whose capability is missing fails with
/// `NOT_SUPPORTED` before anything happens, and the transport's method for it is the trait's
/// default, which returns [`crate::TransportError::Unsupported`].
///
/// [`Capabilities::CANN`] is what a transport built on CANN SHMEM's host API and the ACL
/// runtime has; the simulator takes it under `SHMEM_PROFILE=cann`, so that a program checked
/// on the laptop fails exactly where it would fail on the hardware backend.
///
/// ```
/// use shmem_backend::Capabilities;
/// let sim = Capabilities::ALL;
/// let as_cann = sim.restrict(Capabilities::CANN);
/// assert!(!as_cann.host_atomics && !as_cann.host_mapping && as_cann.streams);
/// assert!(!as_cann.relaxed_completion); // CANN's host calls complete in stream order
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Remote atomics issued by the host ([`crate::Transport::atomic`]); CANN's host API has
    /// none, so neither have the locks built on them.
    pub host_atomics: bool,
    /// Peers' segments are mapped for host loads and stores
    /// ([`crate::Transport::host_mapping`], behind `shmem_ptr`); on Ascend a peer's heap is
    /// device memory, which the host cannot dereference.
    pub host_mapping: bool,
    /// Queues can be made from streams ([`crate::Transport::stream_queue`], CANN's
    /// `_on_stream` calls).
    pub streams: bool,
    /// Device memory can be the local side of an operation ([`crate::Local::Device`]).
    pub device_memory: bool,
    /// Blocking puts, non-fetching atomics and signals may reach their target after they
    /// return, in any order until the next fence, quiet or barrier (OpenSHMEM's rule). Without
    /// it each host call completes before the next one starts (CANN's host API, whose calls
    /// run in stream order). The simulator's strict mode holds blocking operations back only
    /// where this is set.
    pub relaxed_completion: bool,
}

impl Capabilities {
    /// The capabilities of a transport over CANN SHMEM's host API and the ACL runtime: streams
    /// and device memory, but no host atomics and no host mapping of peers' heaps.
    pub const CANN: Capabilities = Capabilities {
        host_atomics: false,
        host_mapping: false,
        streams: true,
        device_memory: true,
        relaxed_completion: false,
    };

    /// Every capability.
    pub const ALL: Capabilities = Capabilities {
        host_atomics: true,
        host_mapping: true,
        streams: true,
        device_memory: true,
        relaxed_completion: true,
    };

    /// The capabilities both `self` and `mask` have.
    pub const fn restrict(self, mask: Capabilities) -> Capabilities {
        Capabilities {
            host_atomics: self.host_atomics && mask.host_atomics,
            host_mapping: self.host_mapping && mask.host_mapping,
            streams: self.streams && mask.streams,
            device_memory: self.device_memory && mask.device_memory,
            relaxed_completion: self.relaxed_completion && mask.relaxed_completion,
        }
    }
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
    /// Whether operations complete as late as the specification allows (the simulator's
    /// strict completion mode), so that missing quiets and fences show.
    pub strict: bool,
}
