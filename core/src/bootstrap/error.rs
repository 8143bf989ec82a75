//! The bootstrap's one error type: a kind to match on, a message that names who or what
//! failed, and the underlying cause as [`source`](std::error::Error::source).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use shmem_backend::TransportError;

/// Why PE 0's server refused a PE that wanted to join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RefuseReason {
    /// The job secret differs: the PE belongs to another job.
    SecretMismatch,
    /// The rank is not below PE 0's number of PEs.
    RankOutOfRange,
    /// Another live connection has this rank.
    RankAlreadyConnected,
    /// The PE's number of PEs differs from PE 0's.
    NPesMismatch,
    /// The PE wants another instance.
    InstanceMismatch,
    /// The PE speaks another protocol version (mixed builds in one job).
    ProtocolVersion,
    /// The rank was lost or called `global_exit` in this job; it cannot rejoin.
    RankGone,
    /// The server is finishing (a previous incarnation of the job).
    ShuttingDown,
}

impl RefuseReason {
    /// Whether a joining PE tries again (until its init timeout): only a server that is
    /// shutting down may be followed by the next incarnation on the same port.
    pub fn is_retryable(self) -> bool {
        self == RefuseReason::ShuttingDown
    }
}

/// What kind of failure a [`BootstrapError`] is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BootstrapErrorKind {
    /// PE `pe`'s connection closed without a goodbye: it died (or dropped its instance).
    PeerLost {
        /// The lost PE.
        pe: u32,
    },
    /// The connection to PE 0's server broke: PE 0 died or stopped its server.
    ServerLost,
    /// PE `pe` called `global_exit(status)`: the job is ending.
    GlobalExit {
        /// Who.
        pe: u32,
        /// Its status.
        status: i32,
    },
    /// A wait expired; `missing` are the PEs that did not arrive (empty if not a collective).
    Timeout {
        /// The PEs that never arrived, ascending.
        missing: Vec<u32>,
    },
    /// PE 0's server refused this PE.
    Refused(RefuseReason),
    /// The PEs disagree about the protocol: collective order or kind, malformed frames.
    Protocol,
    /// A bad argument or configuration.
    Invalid,
    /// This PE's bootstrap was finalized already.
    Finalized,
    /// PE 0's server could not be reached within the init timeout.
    Connect,
    /// A bootstrap address, interface or unique id that cannot be used.
    Address,
    /// A local operating-system or library failure.
    Io,
    /// A resource limit was reached: this process has no file descriptor left
    /// (`RLIMIT_NOFILE`), or the system's file table is full. Trying again cannot help.
    Limit,
}

/// A bootstrap failure. [`kind`](BootstrapError::kind) says what happened, `Display` says it
/// in words naming who or what (`{:#}` adds the causes), and [`source`](StdError::source) is
/// the underlying error (an `io::Error`, an MPI error, a frame that does not decode, ...), if
/// any.
///
/// ```
/// # fn f(e: &shmem::BootstrapError) {
/// use shmem::BootstrapErrorKind;
/// match e.kind() {
///     BootstrapErrorKind::Timeout { missing } => eprintln!("PEs {missing:?} never came: {e}"),
///     BootstrapErrorKind::PeerLost { pe } => eprintln!("PE {pe} died"),
///     _ => eprintln!("{e}"),
/// }
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BootstrapError {
    kind: BootstrapErrorKind,
    message: String,
    source: Option<Arc<dyn StdError + Send + Sync>>,
    init: bool,
}

impl BootstrapError {
    /// What kind of failure this is.
    pub fn kind(&self) -> &BootstrapErrorKind {
        &self.kind
    }

    /// Whether it happened while the PEs met at init (CANN reports those as `INNER_ERROR`).
    pub fn during_init(&self) -> bool {
        self.init
    }

    pub(crate) fn new(kind: BootstrapErrorKind, message: impl Into<String>) -> BootstrapError {
        BootstrapError {
            kind,
            message: message.into(),
            source: None,
            init: false,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> BootstrapError {
        BootstrapError::new(BootstrapErrorKind::Invalid, message)
    }

    pub(crate) fn address(message: impl Into<String>) -> BootstrapError {
        BootstrapError::new(BootstrapErrorKind::Address, message)
    }

    pub(crate) fn timeout(missing: Vec<u32>, message: impl Into<String>) -> BootstrapError {
        BootstrapError::new(BootstrapErrorKind::Timeout { missing }, message)
    }

    pub(crate) fn protocol(message: impl Into<String>) -> BootstrapError {
        BootstrapError::new(BootstrapErrorKind::Protocol, message)
    }

    /// PE `pe` called `global_exit(status)`.
    pub(crate) fn global_exit(pe: u32, status: i32) -> BootstrapError {
        let m = format!("PE {pe} called global_exit({status}): the job is ending");
        BootstrapError::new(BootstrapErrorKind::GlobalExit { pe, status }, m)
    }

    /// The bootstrap of PE `pe` was finalized already.
    pub(crate) fn finalized(pe: u32) -> BootstrapError {
        let m = format!("the bootstrap of PE {pe} was already finalized");
        BootstrapError::new(BootstrapErrorKind::Finalized, m)
    }

    /// A local failure while doing `context`; running out of descriptors is a
    /// [`BootstrapErrorKind::Limit`] that names the limit.
    pub(crate) fn io(context: impl Into<String>, e: impl Into<std::io::Error>) -> BootstrapError {
        let e = e.into();
        match crate::rlimit::limit_reached(&e) {
            Some(limit) => {
                let m = format!("{}: {limit}", context.into());
                BootstrapError::new(BootstrapErrorKind::Limit, m).with_source(e)
            }
            None => BootstrapError::new(BootstrapErrorKind::Io, context).with_source(e),
        }
    }

    /// A thread that `context` needed could not start; a refusal by a limit on tasks is a
    /// [`BootstrapErrorKind::Limit`] that names the limit.
    pub(crate) fn thread(context: impl Into<String>, e: std::io::Error) -> BootstrapError {
        match shmem_backend::tasks_refused(&e) {
            Some(limit) => {
                let m = format!("{}: {limit}", context.into());
                BootstrapError::new(BootstrapErrorKind::Limit, m).with_source(e)
            }
            None => BootstrapError::io(context, e),
        }
    }

    pub(crate) fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Marks the error as a failure of the PEs to meet at init.
    pub(crate) fn at_init(mut self) -> Self {
        self.init = true;
        self
    }

    /// The message, without the source.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

/// The message; with `{:#}`, followed by the chain of causes (`message: cause: cause`).
impl fmt::Display for BootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        let first = self.source().filter(|_| f.alternate());
        std::iter::successors(first, |&c| c.source()).try_for_each(|c| write!(f, ": {c}"))
    }
}

impl StdError for BootstrapError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        let source: &(dyn StdError + 'static) = self.source.as_deref()?;
        Some(source)
    }
}

/// The bootstrap's failures as the transport sees them, while it attaches its peers or waits.
impl From<BootstrapError> for TransportError {
    fn from(e: BootstrapError) -> TransportError {
        let detail = e.message;
        match e.kind {
            BootstrapErrorKind::PeerLost { pe } => TransportError::PeerLost { pe, detail },
            BootstrapErrorKind::ServerLost => TransportError::PeerLost { pe: 0, detail },
            BootstrapErrorKind::GlobalExit { pe, status } => {
                TransportError::JobEnding { pe, status }
            }
            _ => TransportError::Exchange(detail),
        }
    }
}
