//! Init attributes, mirroring CANN's `aclshmemx_init_attr_t`, and their validation.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use shmem_backend::Limits;

pub use crate::bootstrap::UniqueId;
use crate::error::{Error, Result};

/// CANN's `ACLSHMEM_MAX_IP_PORT_LEN`: `ip_port` holds at most 63 characters.
pub const MAX_IP_PORT_LEN: usize = 64;
/// CANN's default for the init and operation timeouts (`DEFAULT_TIMEOUT`, 120 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// CANN's `ACLSHMEM_EXTRA_SIZE`: the reserved area every heap has beyond `local_mem_size`.
pub const EXTRA_SIZE: u64 = 6 << 20;

/// The data engines of `data_op_engine_type` (`data_op_engine_type_t`). On the simulator every
/// engine moves data the same way; the value is validated as CANN validates it.
pub mod engine {
    /// `ACLSHMEM_DATA_OP_MTE`: the AI-core memory transfer engine (the default).
    pub const MTE: u32 = 0x01;
    /// `ACLSHMEM_DATA_OP_SDMA`.
    pub const SDMA: u32 = 0x02;
    /// `ACLSHMEM_DATA_OP_ROCE`.
    pub const ROCE: u32 = 0x04;
    /// `ACLSHMEM_DATA_OP_UDMA`.
    pub const UDMA: u32 = 0x08;
}

/// A TCP socket already bound (and perhaps listening) at `ip_port` that PE 0's bootstrap
/// server serves on, instead of binding the address itself: what a launcher hands over
/// (`shmemrun`'s inherited socket) and what CANN's `sock_fd` names. Shared, so that the
/// attributes stay cheap to clone; two are equal when they are the same socket.
#[derive(Clone, Debug)]
pub struct Listener(Arc<TcpListener>);

impl Listener {
    /// Wraps a bound socket.
    pub fn new(socket: TcpListener) -> Listener {
        Listener(Arc::new(socket))
    }

    /// Duplicates the descriptor `fd` (the caller keeps its own), after checking that it is a
    /// socket; init checks that it is a TCP socket bound to `ip_port`'s port.
    pub fn from_fd(fd: BorrowedFd<'_>) -> Result<Listener> {
        let raw = fd.as_raw_fd();
        let bad = |why: String| Error::InvalidValue(format!("sock_fd {raw} {why}"));
        let owned = rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| {
            let e = std::io::Error::from(e);
            match crate::rlimit::limit_reached(&e) {
                Some(limit) => Error::Inner(format!("duplicating sock_fd {raw}: {limit}")),
                None => bad(format!("cannot be duplicated: {e}")),
            }
        })?;
        let stat = rustix::fs::fstat(&owned).map_err(|e| bad(e.to_string()))?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Socket {
            return Err(bad("is not a socket".into()));
        }
        Ok(Listener::new(TcpListener::from(owned)))
    }

    /// A descriptor of its own for the server.
    pub(crate) fn socket(&self) -> std::io::Result<TcpListener> {
        self.0.try_clone()
    }
}

impl PartialEq for Listener {
    fn eq(&self, other: &Listener) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Listener {}

/// Which transport an instance uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The multi-process shared-memory simulator.
    Sim,
    /// Ascend NPUs through the CANN runtime.
    Hw,
}

impl Backend {
    /// Parses `SHMEM_BACKEND` (`sim`, `hw`).
    pub fn parse(s: &str) -> Option<Backend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sim" | "simulator" => Some(Backend::Sim),
            "hw" | "ascend" | "npu" => Some(Backend::Hw),
            _ => None,
        }
    }

    /// The backend to use: `explicit`, else `SHMEM_BACKEND`, else the simulator.
    pub(crate) fn choose(explicit: Option<Backend>) -> Result<Backend> {
        if let Some(b) = explicit {
            return Ok(b);
        }
        match std::env::var("SHMEM_BACKEND") {
            Ok(v) if !v.trim().is_empty() => Backend::parse(&v).ok_or_else(|| {
                Error::InvalidValue(format!(
                    "SHMEM_BACKEND={v:?} is not a backend (expected sim or hw)"
                ))
            }),
            _ => Ok(Backend::Sim),
        }
    }
}

/// A 16-byte job secret that a PE presents when it joins the bootstrap: PEs of another job
/// (with another secret) are refused with a clear error.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Secret(pub [u8; 16]);

impl Secret {
    /// CANN's fixed connection magic `0x0ACC`: what programs that pass only `ip_port` get. It
    /// keeps out nothing but programs with another magic, so two jobs on one address can meet;
    /// launchers and unique ids give a random secret instead.
    pub const CANN_MAGIC: Secret = Secret([0xCC, 0x0A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

    /// A fresh random secret (from the operating system's generator).
    pub fn random() -> Secret {
        Secret(rand::random())
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Compares in time independent of where the secrets differ.
    pub fn ct_eq(&self, other: &[u8; 16]) -> bool {
        self.0
            .iter()
            .zip(other)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Parses 32 hexadecimal digits.
    pub fn from_hex(s: &str) -> Option<Secret> {
        let s = s.trim();
        if s.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Secret(out))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == Secret::CANN_MAGIC {
            f.write_str("Secret(CANN_MAGIC)")
        } else {
            f.write_str("Secret(<redacted>)")
        }
    }
}

/// How the PEs of an instance meet (CANN's init flags and `comm_args`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum InitMode {
    /// `ACLSHMEMX_INIT_WITH_DEFAULT`: PE 0 serves the bootstrap on `ip_port` (for instances
    /// other than 0, on the port `SHMEM_INSTANCE_PORT_RANGE` assigns).
    #[default]
    Default,
    /// `ACLSHMEMX_INIT_WITH_UNIQUEID`: meet through the unique id PE 0 made
    /// ([`UniqueId::new`]) and the program broadcast.
    UniqueId(UniqueId),
    /// `ACLSHMEMX_INIT_WITH_MPI`: bootstrap over a duplicate of this MPI communicator (`None`
    /// is `MPI_COMM_WORLD`), with Open MPI's `libmpi` loaded at run time. If MPI is not yet
    /// initialised, the library initialises it (and then only `MPI_COMM_WORLD` or
    /// `MPI_COMM_SELF` may be used), as CANN does. The communicator is only used during
    /// [`Instance::init`](crate::Instance::init); one the program made ([`crate::mpi::OwnedComm`])
    /// is passed with [`Comm::from_raw`](crate::mpi::Comm::from_raw).
    Mpi(Option<crate::mpi::Comm<'static>>),
    /// For PEs of one host started by a launcher that gives ranks but no address (`mpirun`,
    /// `srun`): PE 0 announces its bootstrap address and a job secret on an abstract Unix
    /// socket named after this job key and the instance id.
    JobLocal(String),
}

/// The attributes an instance is created with: CANN's `aclshmemx_init_attr_t` in Rust types
/// (the C ABI converts the C struct, with its signed PEs, `sock_fd` and version fields).
///
/// ```
/// use shmem::Attributes;
/// let attrs = Attributes::new(0, 2, "tcp://127.0.0.1:42000", 32 << 20);
/// assert_eq!(attrs.init_timeout.as_secs(), 120);
/// assert!(attrs.validate().is_ok());
/// let bad = Attributes { my_pe: 2, ..attrs };
/// assert_eq!(bad.validate().unwrap_err().code(), shmem::Code::InvalidParam);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes {
    /// This PE's number inside the instance.
    pub my_pe: u32,
    /// The number of PEs of the instance.
    pub n_pes: u32,
    /// PE 0's bootstrap address, `tcp://host:port` or `tcp6://[host]:port`.
    pub ip_port: String,
    /// Bytes of symmetric heap per PE, a multiple of 2 MiB; the heap gets 6 MiB more for
    /// CANN's reserved area.
    pub local_mem_size: u64,
    /// The instance to create: 0 is the default instance, 1..=255 the others.
    pub instance_id: u64,
    /// Which data engines to use (`data_op_engine_type`: bits of [`engine`]).
    pub engines: u32,
    /// How long init may wait for every PE to arrive (`shm_init_timeout`; not zero).
    pub init_timeout: Duration,
    /// How long every later bootstrap operation may take (`control_operation_timeout`; not
    /// zero).
    pub op_timeout: Duration,
    /// A socket PE 0 serves on instead of binding `ip_port` itself (CANN's `sock_fd`).
    pub listener: Option<Listener>,
    /// Which transport to use; `None` reads `SHMEM_BACKEND` and falls back to the simulator.
    pub backend: Option<Backend>,
    /// The job secret to present at the bootstrap; `None` uses [`Secret::CANN_MAGIC`].
    pub secret: Option<Secret>,
    /// Overrides `SHMEM_INSTANCE_PORT_RANGE` for this instance (`"start:end"`).
    pub port_range: Option<String>,
    /// The profile to run under; `None` reads `SHMEM_PROFILE` (see [`ApiProfile`](crate::ApiProfile)).
    pub profile: Option<crate::ApiProfile>,
    /// Overrides `SHMEM_TIMEOUT` for this instance's data-path waits (barriers, collectives,
    /// waits, locks): how long one may last before it fails with `TIMEOUT_ERROR` (not zero).
    /// `None` reads the setting. A Rust-only attribute.
    pub wait_timeout: Option<Duration>,
    /// How the PEs meet.
    pub mode: InitMode,
    /// The heap is device memory, as on an NPU: host code that loads or stores it at its
    /// symmetric addresses faults, and only the library's calls and the device runtime (the
    /// ACL stand-in's copies) reach it. CANN's C ABI sets it for its instances; a Rust-only
    /// attribute, `false` by default (OpenSHMEM requires a host-accessible heap).
    pub device_heap: bool,
}

impl Attributes {
    /// Attributes with CANN's defaults for everything but the four required fields.
    pub fn new(my_pe: u32, n_pes: u32, ip_port: &str, local_mem_size: u64) -> Attributes {
        Attributes {
            my_pe,
            n_pes,
            ip_port: ip_port.to_string(),
            local_mem_size,
            instance_id: 0,
            engines: engine::MTE,
            init_timeout: DEFAULT_TIMEOUT,
            op_timeout: DEFAULT_TIMEOUT,
            listener: None,
            backend: None,
            secret: None,
            port_range: None,
            profile: None,
            wait_timeout: None,
            mode: InitMode::Default,
            device_heap: false,
        }
    }

    /// The attributes of PE `my_pe` of `n_pes` meeting through `uid`, with CANN's defaults
    /// for the rest (`aclshmemx_set_attr_uniqueid_args`); init checks them.
    pub fn with_unique_id(
        my_pe: u32,
        n_pes: u32,
        local_mem_size: u64,
        uid: &UniqueId,
    ) -> Attributes {
        Attributes {
            secret: Some(uid.secret()),
            mode: InitMode::UniqueId(*uid),
            ..Attributes::new(my_pe, n_pes, "", local_mem_size)
        }
    }

    /// Checks the attributes as CANN's `check_attr` does, in the same order and with the same
    /// codes, plus the limits CANN only hits later (a `local_mem_size` that is not a multiple
    /// of 2 MiB, an instance id above 255, an instance that needs more than 128 GiB of address
    /// space).
    pub fn validate(&self) -> Result<()> {
        self.validate_against(&self.profile.unwrap_or_default().limits())
    }

    pub(crate) fn validate_against(&self, limits: &Limits) -> Result<()> {
        if self.wait_timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::InvalidValue(
                "wait_timeout must not be zero (None reads SHMEM_TIMEOUT)".into(),
            ));
        }
        if self.n_pes == 0 {
            return Err(Error::InvalidValue("n_pes must be positive".into()));
        }
        if self.n_pes > limits.max_pes {
            return Err(Error::InvalidValue(format!(
                "n_pes {} exceeds the maximum of {} PEs",
                self.n_pes, limits.max_pes
            )));
        }
        if self.my_pe >= self.n_pes {
            return Err(Error::InvalidParam(format!(
                "my_pe {} must be less than n_pes {}",
                self.my_pe, self.n_pes
            )));
        }
        if self.local_mem_size == 0 {
            return Err(Error::InvalidValue("local_mem_size is 0".into()));
        }
        if self.local_mem_size > limits.max_local_mem {
            return Err(Error::InvalidValue(format!(
                "local_mem_size {} exceeds the maximum of {} bytes (40 GiB)",
                self.local_mem_size, limits.max_local_mem
            )));
        }
        if self.init_timeout.is_zero() {
            return Err(Error::InvalidValue("shm_init_timeout is 0".into()));
        }
        if self.op_timeout.is_zero() {
            return Err(Error::InvalidValue("control_operation_timeout is 0".into()));
        }
        if self.engines == 0 || self.engines & !0xF != 0 {
            return Err(Error::InvalidValue(format!(
                "data_op_engine_type {:#x} is not a combination of MTE, SDMA, ROCE and UDMA",
                self.engines
            )));
        }
        if !self
            .local_mem_size
            .is_multiple_of(limits.local_mem_granularity)
        {
            return Err(Error::InvalidValue(format!(
                "local_mem_size {} is not a multiple of {} bytes (2 MiB)",
                self.local_mem_size, limits.local_mem_granularity
            )));
        }
        if self.instance_id > limits.max_instance_id {
            return Err(Error::InvalidValue(format!(
                "instance_id {} exceeds the maximum of {}",
                self.instance_id, limits.max_instance_id
            )));
        }
        if self.ip_port.len() >= MAX_IP_PORT_LEN {
            return Err(Error::InvalidValue(format!(
                "ip_port has {} characters; at most 63 fit",
                self.ip_port.len()
            )));
        }
        let slot = (self.local_mem_size + EXTRA_SIZE).next_multiple_of(limits.heap_alignment);
        let space = slot as u128 * self.n_pes as u128;
        if space > limits.max_instance_space as u128 {
            return Err(Error::InvalidValue(format!(
                "the instance would span {} GiB of address space ({} PEs x {} GiB per heap slot); at most {} GiB fit, the NPU's device address space under CANN's limits; OpenSHMEM programs, which model a CPU job, lift the limit with SHMEM_PROFILE=openshmem (Attributes::profile)",
                space >> 30,
                self.n_pes,
                slot >> 30,
                limits.max_instance_space >> 30
            )));
        }
        Ok(())
    }

    /// PE 0's bootstrap address in DEFAULT mode, `tcp://host:port` or `tcp6://[host]:port`:
    /// `ip_port` itself for instance 0; for the other instances, the template `ip_port` (port
    /// 0) with the port `port_range` (else `SHMEM_INSTANCE_PORT_RANGE`, `start:end`) assigns,
    /// `start + instance_id`. Fails as init would: a bad address with `INVALID_PARAM`, a bad
    /// range or template with `INVALID_VALUE`.
    ///
    /// ```
    /// let mut a = shmem::Attributes::new(0, 2, "tcp://10.0.0.1:0", 2 << 20);
    /// a.instance_id = 3;
    /// a.port_range = Some("20000:20255".into());
    /// assert_eq!(a.bootstrap_address()?, "tcp://10.0.0.1:20003");
    /// # Ok::<(), shmem::Error>(())
    /// ```
    pub fn bootstrap_address(&self) -> Result<String> {
        Ok(crate::bootstrap::url::default_address(self)?.to_string())
    }

    /// The heap size: `local_mem_size` plus the reserved area.
    pub(crate) fn heap_size(&self) -> u64 {
        self.local_mem_size + EXTRA_SIZE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    fn ok() -> Attributes {
        Attributes::new(1, 4, "tcp://127.0.0.1:30000", 2 << 20)
    }

    fn code(a: Attributes) -> Code {
        a.validate().unwrap_err().code()
    }

    #[test]
    fn checks_and_codes() {
        assert!(ok().validate().is_ok());
        assert_eq!(code(Attributes { n_pes: 0, ..ok() }), Code::InvalidValue);
        assert_eq!(
            code(Attributes {
                n_pes: 16385,
                my_pe: 0,
                ..ok()
            }),
            Code::InvalidValue
        );
        assert_eq!(code(Attributes { my_pe: 4, ..ok() }), Code::InvalidParam);
        assert_eq!(
            code(Attributes {
                local_mem_size: 0,
                ..ok()
            }),
            Code::InvalidValue
        );
        assert_eq!(
            code(Attributes {
                local_mem_size: (40 << 30) + (2 << 20),
                ..ok()
            }),
            Code::InvalidValue
        );
        let zero = Duration::ZERO;
        assert_eq!(
            code(Attributes {
                init_timeout: zero,
                ..ok()
            }),
            Code::InvalidValue
        );
        assert_eq!(
            code(Attributes {
                op_timeout: zero,
                ..ok()
            }),
            Code::InvalidValue
        );
        for bad in [0, 0x10, 0x11] {
            assert_eq!(
                code(Attributes {
                    engines: bad,
                    ..ok()
                }),
                Code::InvalidValue,
                "engine {bad:#x}"
            );
        }
        let a = Attributes {
            engines: engine::MTE | engine::ROCE,
            ..ok()
        };
        assert!(a.validate().is_ok());
        // my_pe >= n_pes is checked before local_mem_size, as in CANN.
        assert_eq!(
            code(Attributes {
                my_pe: 9,
                local_mem_size: 0,
                ..ok()
            }),
            Code::InvalidParam
        );
    }

    #[test]
    fn limits_beyond_cann_check_attr() {
        assert_eq!(
            code(Attributes {
                local_mem_size: 3 << 20,
                ..ok()
            }),
            Code::InvalidValue
        );
        assert_eq!(
            code(Attributes {
                instance_id: 256,
                ..ok()
            }),
            Code::InvalidValue
        );
        assert!(
            Attributes {
                instance_id: 255,
                ..ok()
            }
            .validate()
            .is_ok()
        );
        // 8 PEs x align_up(15 GiB + 6 MiB, 1 GiB) = 8 x 16 GiB = 128 GiB: the limit itself is allowed.
        assert!(
            Attributes {
                n_pes: 8,
                local_mem_size: 15 << 30,
                ..ok()
            }
            .validate()
            .is_ok()
        );
        // 9 PEs of the same size need 144 GiB.
        let e = Attributes {
            n_pes: 9,
            local_mem_size: 15 << 30,
            ..ok()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.code(), Code::InvalidValue);
        assert!(e.to_string().contains("144 GiB"), "{e}");
        let long = format!("tcp://{}:30000", "a".repeat(60));
        assert_eq!(
            code(Attributes {
                ip_port: long,
                ..ok()
            }),
            Code::InvalidValue
        );
    }

    #[test]
    fn secrets_parse() {
        let s = Secret::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
        assert_eq!(s.0[15], 15);
        assert!(Secret::from_hex("00").is_none());
        assert!(Secret::from_hex("zz0102030405060708090a0b0c0d0e0f").is_none());
        assert_eq!(format!("{:?}", Secret::CANN_MAGIC), "Secret(CANN_MAGIC)");
    }
}
