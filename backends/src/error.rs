//! The transport error type.

use std::io;

use crate::Pe;

/// What went wrong in a transport. Transports never panic on bad input; they return one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A PE number outside `0..n_pes`.
    #[error("PE {pe} is out of range (the instance has {n_pes} PEs)")]
    InvalidPe {
        /// The PE asked for.
        pe: Pe,
        /// The number of PEs.
        n_pes: u32,
    },
    /// An access that does not fit in the segment.
    #[error(
        "access of {len} bytes at offset {offset:#x} of PE {pe} lies outside its {size:#x}-byte segment"
    )]
    OutOfBounds {
        /// The PE whose segment was addressed.
        pe: Pe,
        /// The first byte addressed.
        offset: u64,
        /// How many bytes were addressed (for strided accesses, the span).
        len: u64,
        /// The size of the segment.
        size: u64,
    },
    /// A local buffer too small for the access described with it.
    #[error("the local buffer of {len} bytes is too small for the access (needs {needed} bytes)")]
    LocalBuffer {
        /// The buffer's length.
        len: usize,
        /// The bytes the access needs.
        needed: u64,
    },
    /// An atomic or a waited-on word at an offset that is not a multiple of its width.
    #[error("offset {offset:#x} is not aligned to the {width}-byte width of the operation")]
    Misaligned {
        /// The offset.
        offset: u64,
        /// The width in bytes.
        width: usize,
    },
    /// A wait that did not finish in time.
    #[error("timed out after {seconds:.1} s waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long the wait lasted.
        seconds: f64,
    },
    /// A peer that died or left, detected while this PE waited or communicated.
    #[error("PE {pe} is gone: {detail}")]
    PeerLost {
        /// The PE that went away.
        pe: Pe,
        /// How it was detected.
        detail: String,
    },
    /// The core ended the wait: instance `instance` was finalised (by another thread) while
    /// this one waited.
    #[error("instance {instance} was finalized while this PE waited")]
    Finalized {
        /// The instance.
        instance: u64,
    },
    /// The whole job is ending: PE `pe` called `global_exit(status)`.
    #[error("the job is ending: PE {pe} called global_exit({status})")]
    JobEnding {
        /// The PE that ended the job.
        pe: Pe,
        /// Its exit status, which every PE exits with.
        status: i32,
    },
    /// The operation or option is not available on this transport.
    #[error("not supported by the {transport} transport: {what}")]
    Unsupported {
        /// The transport's name.
        transport: &'static str,
        /// What was asked for.
        what: String,
    },
    /// A kernel launch failed: a block's call broke a rule of the device (or the block ended
    /// with an error), which ends the launch, not the stream or the process.
    #[error("kernel {kernel}, block {block}: {detail}")]
    Kernel {
        /// The kernel's name.
        kernel: String,
        /// The block that failed (its index in the launch).
        block: u32,
        /// What went wrong, naming the call.
        detail: String,
    },
    /// The collective exchange the core provided failed while the transport attached its peers.
    #[error("exchange with the peers failed: {0}")]
    Exchange(String),
    /// The peers disagree about the segment or cannot share memory with this PE.
    #[error("cannot attach the peers' segments: {0}")]
    Attach(String),
    /// A call into a device runtime failed (the ACL runtime or CANN SHMEM under the hardware
    /// backend), named with its code.
    #[error("the device runtime failed: {0}")]
    Device(String),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Os {
        /// What was being done.
        context: String,
        /// The error the system returned.
        #[source]
        source: io::Error,
    },
}

impl TransportError {
    /// Wraps an operating-system error with what was being done.
    pub fn os(context: impl Into<String>, source: impl Into<io::Error>) -> TransportError {
        TransportError::Os {
            context: context.into(),
            source: source.into(),
        }
    }
}
