//! Unique-id mode: CANN's `aclshmemx_uniqueid_t`, how PE 0 makes one, and what init reads
//! from it.
//!
//! PE 0 calls [`UniqueId::new`] (CANN's `aclshmemx_get_uniqueid`): it picks an address for
//! its config-store server, binds a TCP socket there (bound, **not** listening) and returns a
//! 136-byte plain-old-data id that names the address and carries a random job secret. The
//! program broadcasts the bytes ([`UniqueId::to_bytes`], e.g. with `MPI_Bcast`); every PE
//! turns them back into an id ([`UniqueId::from_bytes`]), passes it with its rank
//! ([`set_attr_uniqueid_args`]) and inits. At init every PE joins the config store at
//! [`UniqueId::url`] presenting [`UniqueId::secret`]; the process that made the id serves on
//! the socket it bound ([`UniqueId::take_listener`]), so the port stays reserved from the
//! moment the id exists.
//!
//! # Choosing the address ([`UniqueId::new`])
//!
//! 1. `SHMEM_UID_SESSION_ID` set: `ip:port`, `[ipv6]:port`, `[ipv6%scope]:port` (scope = an
//!    interface name or index) or `hostname:port` (resolved, IPv4 preferred). The port must be
//!    in `1024..=65535`; exactly that address and port are bound ([`UniqueId::with_session`]).
//! 2. Else `SHMEM_UID_SOCK_IFNAME` set: `ifname`, `ifname:inet4` or `ifname:inet6` (no family:
//!    IPv4 preferred; for IPv6 a global address is preferred to a link-local one). That
//!    interface's address is bound on a random port in `[1024, 65536)`, with up to 1000
//!    attempts ([`UniqueId::with_interface`]).
//! 3. Else an interface is chosen automatically: interfaces named `lo*`, `docker*`, `veth*`,
//!    `br-*`, `virbr*`, `tun*` or `tap*`, interfaces that are down, and loopback, link-local,
//!    unspecified or multicast addresses are skipped; IPv4 is preferred; then a random port as
//!    in 2 ([`UniqueId::with_auto_interface`]).
//!
//! An empty (or all-blank) variable counts as unset. When both are set only
//! `SHMEM_UID_SESSION_ID` is read, as in CANN.
//!
//! # Layout
//!
//! The outer fields are CANN's (native endianness, as the C struct): `version` =
//! [`UniqueId::VERSION`] (65672); `my_pe` and `n_pes` are written as 0 and never read (CANN
//! takes both from the init attributes). The 124 bytes of `internal` are this library's own,
//! little-endian:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0   | 4  | layout tag `b"RsU1"` (rejects ids of other implementations and zeroed ids) |
//! | 4   | 2  | address family: 4 = IPv4, 6 = IPv6 |
//! | 6   | 2  | port of PE 0's server (never 0) |
//! | 8   | 16 | address: IPv4 in bytes 8..12 (network order, rest zero) or IPv6 (network order) |
//! | 24  | 4  | IPv6 scope id (0 = none; always 0 for IPv4) |
//! | 28  | 4  | the bound socket's fd (`i32`) in the creating process; meaningless elsewhere |
//! | 32  | 4  | pid (`u32`) of the creating process, so no other process takes the fd for its own |
//! | 36  | 16 | job secret, random ([`crate::attr::Secret`]); CANN has an 8-byte magic here |
//! | 52  | 72 | reserved, written as zero, ignored when read |
//!
//! The bound socket cannot live in the `Copy` id, so it is kept in a process-wide registry
//! keyed by the secret until [`UniqueId::take_listener`] removes it (an id that is never used
//! keeps its socket open until the process ends, as CANN's does).

use std::env::VarError;
use std::fmt;
use std::io;
use std::mem::size_of;
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener, ToSocketAddrs,
};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, PoisonError};

use bytemuck::{Pod, Zeroable};
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use shmem_backend::Limits;

use super::url::{BootstrapUrl, FamilyHint, Host, MAX_HOSTNAME_LEN};
use crate::attr::{Attributes, Secret};

/// The variable naming PE 0's address and port (`ip:port`, `[ipv6]:port`, `hostname:port`).
pub(crate) const SESSION_ENV: &str = "SHMEM_UID_SESSION_ID";
/// The variable naming the interface whose address PE 0 uses (`ifname[:inet4|:inet6]`).
pub(crate) const IFNAME_ENV: &str = "SHMEM_UID_SOCK_IFNAME";
/// CANN's `ACLSHMEM_UNIQUE_ID_INNER_LEN`: bytes of [`UniqueId::internal`].
pub(crate) const INNER_LEN: usize = 124;
/// Size of a [`UniqueId`] in bytes (CANN's `sizeof(aclshmemx_uniqueid_t)`).
pub(crate) const UID_LEN: usize = 136;
/// Lowest port a unique id may use.
pub(crate) const MIN_PORT: u16 = 1024;
/// How many random ports are tried before giving up.
pub(crate) const PORT_ATTEMPTS: u32 = 1000;
/// Name prefixes of interfaces that automatic selection skips.
pub(crate) const SKIPPED_PREFIXES: [&str; 7] =
    ["lo", "docker", "veth", "br-", "virbr", "tun", "tap"];

const LAYOUT_TAG: [u8; 4] = *b"RsU1";
const OFF_TAG: usize = 0;
const OFF_FAMILY: usize = 4;
const OFF_PORT: usize = 6;
const OFF_ADDR: usize = 8;
const OFF_SCOPE: usize = 24;
const OFF_FD: usize = 28;
const OFF_PID: usize = 32;
const OFF_SECRET: usize = 36;
const END_SECRET: usize = 52;
const FAMILY_V4: u16 = 4;
const FAMILY_V6: u16 = 6;
/// Longest interface name Linux allows (`IFNAMSIZ - 1`).
const MAX_IFNAME_LEN: usize = 15;

/// CANN's `aclshmemx_uniqueid_t`: what PE 0 makes and every PE needs to init in unique-id
/// mode. Plain old data (136 bytes); see the module docs for the layout of `internal`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct UniqueId {
    /// [`UniqueId::VERSION`] for a valid id.
    pub(crate) version: i32,
    /// Written as 0 and not read (CANN takes the rank from the init attributes).
    pub(crate) my_pe: i32,
    /// Written as 0 and not read (CANN takes the size from the init attributes).
    pub(crate) n_pes: i32,
    /// This library's encoding of PE 0's address, the socket and the job secret.
    pub(crate) internal: [u8; INNER_LEN],
}

const _: () = assert!(size_of::<UniqueId>() == UID_LEN);
const _: () = assert!(UniqueId::VERSION == (1 << 16) + 136);
const _: () = assert!(END_SECRET <= INNER_LEN);

/// What `internal` holds, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Inner {
    /// PE 0's server address, with its port (and IPv6 scope id).
    addr: SocketAddr,
    /// The bound socket in the creating process.
    fd: i32,
    /// The creating process.
    pid: u32,
    /// The job secret.
    secret: [u8; 16],
}

impl Inner {
    fn encode(&self) -> [u8; INNER_LEN] {
        let mut b = [0u8; INNER_LEN];
        b[OFF_TAG..OFF_FAMILY].copy_from_slice(&LAYOUT_TAG);
        let (family, addr, scope) = match self.addr {
            SocketAddr::V4(a) => {
                let mut addr = [0u8; 16];
                addr[..4].copy_from_slice(&a.ip().octets());
                (FAMILY_V4, addr, 0)
            }
            SocketAddr::V6(a) => (FAMILY_V6, a.ip().octets(), a.scope_id()),
        };
        b[OFF_FAMILY..OFF_PORT].copy_from_slice(&family.to_le_bytes());
        b[OFF_PORT..OFF_ADDR].copy_from_slice(&self.addr.port().to_le_bytes());
        b[OFF_ADDR..OFF_SCOPE].copy_from_slice(&addr);
        b[OFF_SCOPE..OFF_FD].copy_from_slice(&scope.to_le_bytes());
        b[OFF_FD..OFF_PID].copy_from_slice(&self.fd.to_le_bytes());
        b[OFF_PID..OFF_SECRET].copy_from_slice(&self.pid.to_le_bytes());
        b[OFF_SECRET..END_SECRET].copy_from_slice(&self.secret);
        b
    }

    fn decode(b: &[u8; INNER_LEN]) -> Result<Inner, UidError> {
        if b[OFF_TAG..OFF_FAMILY] != LAYOUT_TAG {
            return Err(UidError::ForeignLayout);
        }
        let family = u16::from_le_bytes([b[OFF_FAMILY], b[OFF_FAMILY + 1]]);
        let port = u16::from_le_bytes([b[OFF_PORT], b[OFF_PORT + 1]]);
        let mut addr = [0u8; 16];
        addr.copy_from_slice(&b[OFF_ADDR..OFF_SCOPE]);
        let scope = u32::from_le_bytes(le4(b, OFF_SCOPE));
        let addr = match family {
            FAMILY_V4 => SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]),
                port,
            )),
            FAMILY_V6 => SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(addr), port, 0, scope)),
            other => return Err(UidError::BadFamily { family: other }),
        };
        if port == 0 {
            return Err(UidError::ZeroPort);
        }
        let mut secret = [0u8; 16];
        secret.copy_from_slice(&b[OFF_SECRET..END_SECRET]);
        Ok(Inner {
            addr,
            fd: i32::from_le_bytes(le4(b, OFF_FD)),
            pid: u32::from_le_bytes(le4(b, OFF_PID)),
            secret,
        })
    }
}

fn le4(b: &[u8; INNER_LEN], off: usize) -> [u8; 4] {
    [b[off], b[off + 1], b[off + 2], b[off + 3]]
}

/// Bound sockets of the ids this process made, by secret, until init takes them.
static LISTENERS: Mutex<Vec<([u8; 16], TcpListener)>> = Mutex::new(Vec::new());

impl UniqueId {
    /// CANN's `ACLSHMEM_UNIQUEID_VERSION`: `(1 << 16) + sizeof(aclshmemx_uniqueid_t)`.
    pub const VERSION: i32 = (1 << 16) + UID_LEN as i32;

    /// CANN's `aclshmemx_get_uniqueid`, on PE 0: chooses the address from
    /// `SHMEM_UID_SESSION_ID`, else `SHMEM_UID_SOCK_IFNAME`, else automatically (see the
    /// module docs), binds a socket there and returns the id to broadcast.
    pub fn new() -> Result<UniqueId, UidError> {
        UniqueId::from_lookup(env_value)
    }

    /// [`UniqueId::new`] with the variables read through `get` (unset or blank: `None`).
    fn from_lookup(
        get: impl Fn(&'static str) -> Result<Option<String>, UidError>,
    ) -> Result<UniqueId, UidError> {
        if let Some(session) = get(SESSION_ENV)? {
            if get(IFNAME_ENV).ok().flatten().is_some() {
                tracing::debug!("unique id: {SESSION_ENV} is set, so {IFNAME_ENV} is ignored");
            }
            return UniqueId::with_session(&session);
        }
        if let Some(ifname) = get(IFNAME_ENV)? {
            return UniqueId::with_interface(&ifname);
        }
        UniqueId::with_auto_interface()
    }

    /// Makes an id for exactly the address and port of `session`, in `SHMEM_UID_SESSION_ID`
    /// syntax: `ip:port`, `[ipv6]:port`, `[ipv6%scope]:port` or `hostname:port` (resolved,
    /// IPv4 addresses tried first), port in `1024..=65535`.
    pub fn with_session(session: &str) -> Result<UniqueId, UidError> {
        let value = session.trim();
        let parsed = parse_session(value)?;
        let addrs = session_addrs(&parsed, value)?;
        let mut first_err = None;
        for addr in addrs {
            match bind_socket(addr) {
                Ok(l) => return UniqueId::register(l, addr, "the session address"),
                Err(source) => {
                    tracing::debug!("unique id: cannot bind {addr} for {value:?}: {source}");
                    first_err.get_or_insert(UidError::Bind { addr, source });
                }
            }
        }
        // session_addrs never returns an empty list; stay total all the same.
        Err(first_err.unwrap_or_else(|| UidError::Resolve {
            value: value.to_owned(),
            host: parsed.host.to_string(),
            source: io::Error::new(io::ErrorKind::NotFound, "no address"),
        }))
    }

    /// Makes an id for the address of one interface, in `SHMEM_UID_SOCK_IFNAME` syntax:
    /// `ifname`, `ifname:inet4` or `ifname:inet6`, on a random port. Any interface may be
    /// named, `lo` included.
    pub fn with_interface(spec: &str) -> Result<UniqueId, UidError> {
        let (name, family) = parse_ifname_spec(spec)?;
        let list = interface_addrs()?;
        let (ip, scope) = pick_for_interface(&list, &name, family)?;
        let (l, addr) = bind_random_port(ip, scope)?;
        UniqueId::register(l, addr, &format!("interface {name}"))
    }

    /// Makes an id for an automatically chosen interface (step 3 of the module docs) on a
    /// random port; fails with a hint at `SHMEM_UID_SESSION_ID` when no interface qualifies.
    pub fn with_auto_interface() -> Result<UniqueId, UidError> {
        let list = interface_addrs()?;
        let (name, ip, scope) = pick_auto(&list)?;
        let (l, addr) = bind_random_port(ip, scope)?;
        UniqueId::register(l, addr, &format!("automatically chosen interface {name}"))
    }

    /// Fills a fresh id for the socket `l` bound to `addr` and keeps `l` in the registry.
    fn register(l: TcpListener, addr: SocketAddr, how: &str) -> Result<UniqueId, UidError> {
        let addr = l.local_addr().unwrap_or(addr);
        let secret = Secret::random();
        let inner = Inner {
            addr,
            fd: l.as_raw_fd(),
            pid: std::process::id(),
            secret: secret.0,
        };
        LISTENERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((secret.0, l));
        tracing::debug!("unique id: PE 0 will serve on {addr} ({how})");
        Ok(UniqueId {
            version: UniqueId::VERSION,
            my_pe: 0,
            n_pes: 0,
            internal: inner.encode(),
        })
    }

    /// The 136 bytes to broadcast to the other PEs (the struct's memory, as C sees it).
    pub fn to_bytes(self) -> [u8; UID_LEN] {
        let mut out = [0u8; UID_LEN];
        out.copy_from_slice(bytemuck::bytes_of(&self));
        out
    }

    /// An id from broadcast bytes: exactly 136 of them, with CANN's version and an address
    /// this library wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId, UidError> {
        if bytes.len() != UID_LEN {
            return Err(UidError::BadLength { len: bytes.len() });
        }
        let uid: UniqueId = bytemuck::try_pod_read_unaligned(bytes)
            .map_err(|_| UidError::BadLength { len: bytes.len() })?;
        uid.decode()?;
        Ok(uid)
    }

    /// Checks the version and decodes `internal`.
    fn decode(&self) -> Result<Inner, UidError> {
        if self.version != UniqueId::VERSION {
            return Err(UidError::BadVersion {
                found: self.version,
            });
        }
        Inner::decode(&self.internal)
    }

    #[cfg(test)]
    /// PE 0's server address with its port and IPv6 scope id.
    pub(crate) fn socket_addr(&self) -> Result<SocketAddr, UidError> {
        Ok(self.decode()?.addr)
    }

    /// The bootstrap URL of PE 0's server (`tcp://a.b.c.d:port` or `tcp6://[addr]:port`). An
    /// IPv6 address with a scope id is refused: a [`BootstrapUrl`] cannot carry the scope,
    /// and without it no PE could connect.
    pub(crate) fn url(&self) -> Result<BootstrapUrl, UidError> {
        match self.decode()?.addr {
            SocketAddr::V4(a) => Ok(BootstrapUrl {
                host: Host::Ipv4(*a.ip()),
                port: a.port(),
                family_hint: FamilyHint::Tcp,
            }),
            SocketAddr::V6(a) if a.scope_id() != 0 => {
                Err(UidError::ScopedAddress { addr: a.into() })
            }
            SocketAddr::V6(a) => Ok(BootstrapUrl {
                host: Host::Ipv6(*a.ip()),
                port: a.port(),
                family_hint: FamilyHint::Tcp6,
            }),
        }
    }

    /// The job secret every PE presents to PE 0's server (the raw bytes, undecoded: a
    /// malformed id gives a secret nobody else has).
    pub(crate) fn secret(&self) -> Secret {
        let mut s = [0u8; 16];
        s.copy_from_slice(&self.internal[OFF_SECRET..END_SECRET]);
        Secret(s)
    }

    /// The bound (not listening) socket of this id, if this process made the id and no one
    /// took the socket yet; removes it from the registry, so a second take gives `None`. PE 0
    /// serves on it; any other PE (or an id from another process) gets `None`.
    pub(crate) fn take_listener(&self) -> Option<TcpListener> {
        let inner = self.decode().ok()?;
        if inner.pid != std::process::id() {
            return None;
        }
        let mut reg = LISTENERS.lock().unwrap_or_else(PoisonError::into_inner);
        let i = reg
            .iter()
            .position(|(s, l)| *s == inner.secret && l.as_raw_fd() == inner.fd)?;
        Some(reg.swap_remove(i).1)
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("UniqueId");
        d.field("version", &self.version)
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes);
        match self.decode() {
            Ok(i) => d
                .field("addr", &i.addr)
                .field("fd", &i.fd)
                .field("pid", &i.pid)
                .field("secret", &"<redacted>"),
            Err(_) => d.field("internal", &"<not a valid unique id>"),
        };
        d.finish()
    }
}

/// What [`set_attr_uniqueid_args`] stores: the init attributes of one PE in unique-id mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UidArgs {
    /// This PE's rank (not yet checked against `n_pes`; init does that).
    pub(crate) my_pe: i32,
    /// The number of PEs.
    pub(crate) n_pes: i32,
    /// Bytes of symmetric heap per PE. A negative request wraps, as C's conversion of
    /// `int64_t` to `uint64_t` does, and init's check then rejects it as too large.
    pub(crate) local_mem_size: u64,
    /// The id (a copy: unlike CANN's pointer it need not outlive init).
    pub(crate) uid: UniqueId,
}

impl UidArgs {
    /// Writes `my_pe`, `n_pes`, `local_mem_size`, the id's secret and the unique-id mode into
    /// `attrs`; `ip_port` and everything else are left as they are.
    pub(crate) fn apply(&self, attrs: &mut Attributes) {
        attrs.my_pe = self.my_pe;
        attrs.n_pes = self.n_pes;
        attrs.local_mem_size = self.local_mem_size;
        attrs.secret = Some(self.uid.secret());
        attrs.mode = crate::attr::InitMode::UniqueId(self.uid);
    }
}

/// CANN's `aclshmemx_set_attr_uniqueid_args`: checks, in CANN's order, `local_mem_size <=
/// 40 GiB`, `n_pes <= 16384` and `my_pe < 16384` (each failure is CANN's
/// `ACLSHMEM_INVALID_VALUE`) and returns what to store. As in CANN, nothing else is checked
/// here (negative values pass; init rejects them), and the id itself is not inspected.
pub(crate) fn set_attr_uniqueid_args(
    my_pe: i32,
    n_pes: i32,
    local_mem_size: i64,
    uid: &UniqueId,
) -> Result<UidArgs, UidError> {
    let limits = Limits::CANN;
    if i128::from(local_mem_size) > i128::from(limits.max_local_mem) {
        return Err(UidError::LocalMemTooLarge {
            size: local_mem_size,
            max: limits.max_local_mem,
        });
    }
    if i64::from(n_pes) > i64::from(limits.max_pes) {
        return Err(UidError::TooManyPes {
            n_pes,
            max: limits.max_pes,
        });
    }
    if i64::from(my_pe) >= i64::from(limits.max_pes) {
        return Err(UidError::MyPeTooLarge {
            my_pe,
            max: limits.max_pes,
        });
    }
    Ok(UidArgs {
        my_pe,
        n_pes,
        // C's int64_t -> uint64_t conversion: two's complement wrap.
        local_mem_size: local_mem_size as u64,
        uid: *uid,
    })
}

/// Everything that can go wrong making, reading or using a unique id. The C API maps the
/// argument checks of [`set_attr_uniqueid_args`] to `ACLSHMEM_INVALID_VALUE`.
#[derive(Debug, thiserror::Error)]
pub enum UidError {
    /// A variable holds bytes that are not UTF-8.
    #[error("{var} is not valid UTF-8; set it to plain ASCII")]
    EnvNotUnicode {
        /// The variable.
        var: &'static str,
    },
    /// The session address is empty.
    #[error(
        "the unique-id session address is empty; SHMEM_UID_SESSION_ID takes ip:port, [ipv6]:port or hostname:port"
    )]
    SessionEmpty,
    /// No `:port`.
    #[error(
        "unique-id session address {value:?} has no :port; SHMEM_UID_SESSION_ID takes ip:port, [ipv6]:port or hostname:port"
    )]
    SessionMissingPort {
        /// The rejected value.
        value: String,
    },
    /// `[` without `]`, or text other than `:port` after `]`.
    #[error("unique-id session address {value:?}: an IPv6 address must look like [addr]:port")]
    SessionBrackets {
        /// The rejected value.
        value: String,
    },
    /// Something other than an IPv6 address in brackets.
    #[error(
        "unique-id session address {value:?}: {host:?} in brackets is not an IPv6 address (write IPv4 addresses and host names without brackets)"
    )]
    SessionNotIpv6 {
        /// The rejected value.
        value: String,
        /// What was in the brackets.
        host: String,
    },
    /// An IPv6 address without brackets.
    #[error("unique-id session address {value:?}: an IPv6 address needs brackets, as in {hint}")]
    SessionIpv6NeedsBrackets {
        /// The rejected value.
        value: String,
        /// The value as it was probably meant, e.g. `[::1]:2000`.
        hint: String,
    },
    /// Nothing before `:port`.
    #[error("unique-id session address {value:?} has an empty host before :port")]
    SessionEmptyHost {
        /// The rejected value.
        value: String,
    },
    /// Neither an IP address nor a host name of `[A-Za-z0-9.-]` (at most 253 characters).
    #[error(
        "unique-id session address {value:?}: {host:?} is neither an IP address nor a host name of at most 253 characters out of [A-Za-z0-9.-]"
    )]
    SessionBadHost {
        /// The rejected value.
        value: String,
        /// The host part.
        host: String,
    },
    /// An empty or malformed `%scope`.
    #[error(
        "unique-id session address {value:?}: scope {scope:?} is neither an interface name nor an interface index"
    )]
    SessionBadScope {
        /// The rejected value.
        value: String,
        /// The scope part.
        scope: String,
    },
    /// A `%scope` naming no interface of this machine.
    #[error(
        "unique-id session address {value:?}: scope {scope:?} is not an interface of this machine: {source}"
    )]
    SessionUnknownScope {
        /// The rejected value.
        value: String,
        /// The scope part.
        scope: String,
        /// Why the lookup failed.
        source: io::Error,
    },
    /// The port is not a decimal number up to 65535.
    #[error(
        "unique-id session address {value:?}: port {port:?} is not a decimal number in 1024..=65535"
    )]
    SessionBadPort {
        /// The rejected value.
        value: String,
        /// The port part.
        port: String,
    },
    /// The port is below 1024.
    #[error(
        "unique-id session address {value:?}: port {port} is below 1024; choose a port in 1024..=65535"
    )]
    SessionPortTooLow {
        /// The rejected value.
        value: String,
        /// The port.
        port: u16,
    },
    /// A host name that does not resolve.
    #[error(
        "unique-id session address {value:?}: cannot resolve host {host:?}: {source}; use an IP address or a name in /etc/hosts"
    )]
    Resolve {
        /// The value.
        value: String,
        /// The host name.
        host: String,
        /// The resolver's error.
        source: io::Error,
    },
    /// No interface name.
    #[error(
        "unique-id interface {value:?} has no interface name; SHMEM_UID_SOCK_IFNAME takes ifname, ifname:inet4 or ifname:inet6"
    )]
    IfnameEmpty {
        /// The rejected value.
        value: String,
    },
    /// A family other than `inet4`/`inet6`.
    #[error(
        "unique-id interface {value:?}: {family:?} is not an address family; SHMEM_UID_SOCK_IFNAME takes ifname, ifname:inet4 or ifname:inet6"
    )]
    IfnameBadFamily {
        /// The rejected value.
        value: String,
        /// The text after the last `:`.
        family: String,
    },
    /// `getifaddrs` failed.
    #[error("cannot list the network interfaces of this machine: {source}")]
    ListInterfaces {
        /// The error.
        source: io::Error,
    },
    /// The named interface does not exist.
    #[error(
        "network interface {name:?} does not exist (this machine has: {available}); set SHMEM_UID_SOCK_IFNAME to one of them, or SHMEM_UID_SESSION_ID to ip:port"
    )]
    InterfaceNotFound {
        /// The name asked for.
        name: String,
        /// The interfaces there are.
        available: String,
    },
    /// The named interface has no address of the wanted family.
    #[error(
        "network interface {name:?} has no {family} address (it has: {found}); ask for another family (ifname:inet4 or ifname:inet6) or another interface"
    )]
    InterfaceNoAddress {
        /// The interface.
        name: String,
        /// "IPv4", "IPv6" or "IP".
        family: &'static str,
        /// The addresses it has.
        found: String,
    },
    /// Automatic selection found nothing.
    #[error(
        "no network interface qualifies for the unique id ({considered}); loopback, link-local, down and virtual interfaces (lo, docker, veth, br-, virbr, tun, tap) are skipped. Set SHMEM_UID_SESSION_ID=<ip>:<port> (e.g. 127.0.0.1:<port> when all PEs run on this machine) or SHMEM_UID_SOCK_IFNAME=<interface> (e.g. lo)"
    )]
    NoUsableInterface {
        /// What was found and why each was skipped.
        considered: String,
    },
    /// Binding the socket failed.
    #[error(
        "cannot bind the unique-id socket to {addr}: {source}; the address must belong to this machine and the port be free (SHMEM_UID_SESSION_ID=ip:port chooses both)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: io::Error,
    },
    /// Every random port tried was in use.
    #[error(
        "no free port on {ip} after {attempts} random tries in 1024..=65535 (last: {last}); free some ports or set SHMEM_UID_SESSION_ID=ip:port"
    )]
    NoFreePort {
        /// The address.
        ip: IpAddr,
        /// How many ports were tried.
        attempts: u32,
        /// The last error.
        last: String,
    },
    /// Not 136 bytes.
    #[error(
        "a unique id has 136 bytes, not {len}; broadcast all of aclshmemx_uniqueid_t unchanged"
    )]
    BadLength {
        /// The length given.
        len: usize,
    },
    /// The version is not CANN's.
    #[error(
        "the unique id has version {found}, expected 65672 ((1 << 16) + 136); get it from aclshmemx_get_uniqueid on PE 0 and broadcast it unchanged"
    )]
    BadVersion {
        /// The version found.
        found: i32,
    },
    /// `internal` was not written by this library.
    #[error(
        "the unique id was not made by this library (or is zeroed or corrupted); get it from aclshmemx_get_uniqueid on PE 0 of this job and broadcast all 136 bytes unchanged"
    )]
    ForeignLayout,
    /// An address family other than IPv4/IPv6.
    #[error(
        "the unique id holds address family {family}, neither IPv4 (4) nor IPv6 (6); it is corrupted"
    )]
    BadFamily {
        /// The family code found.
        family: u16,
    },
    /// Port 0.
    #[error("the unique id holds port 0; it is corrupted")]
    ZeroPort,
    /// A scoped (link-local) IPv6 address, which a bootstrap URL cannot carry.
    #[error(
        "the unique id's address {addr} has an IPv6 scope, which the bootstrap cannot use yet; use a global or IPv4 address (SHMEM_UID_SESSION_ID or SHMEM_UID_SOCK_IFNAME=ifname:inet4)"
    )]
    ScopedAddress {
        /// The address.
        addr: SocketAddr,
    },
    /// `local_mem_size` above 40 GiB.
    #[error("local_mem_size {size} exceeds the maximum of {max} bytes (40 GiB)")]
    LocalMemTooLarge {
        /// The size asked for.
        size: i64,
        /// The limit.
        max: u64,
    },
    /// `n_pes` above 16384.
    #[error("n_pes {n_pes} exceeds the maximum of {max} PEs")]
    TooManyPes {
        /// The count asked for.
        n_pes: i32,
        /// The limit.
        max: u32,
    },
    /// `my_pe` at or above 16384.
    #[error("my_pe {my_pe} must be below the maximum of {max} PEs")]
    MyPeTooLarge {
        /// The rank asked for.
        my_pe: i32,
        /// The limit.
        max: u32,
    },
}

/// A variable's value; unset, empty and all-blank values are `None`.
fn env_value(var: &'static str) -> Result<Option<String>, UidError> {
    match std::env::var(var) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(_)) => Err(UidError::EnvNotUnicode { var }),
    }
}

/// The scope of an IPv6 session address.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    /// A numeric interface index.
    Index(u32),
    /// An interface name, looked up when the address is bound.
    Name(String),
}

/// The host of a session address.
#[derive(Clone, Debug, PartialEq, Eq)]
enum SessionHost {
    /// A literal IPv4 address.
    V4(Ipv4Addr),
    /// A literal IPv6 address, with an optional scope.
    V6(Ipv6Addr, Option<Scope>),
    /// A host name to resolve.
    Name(String),
}

impl fmt::Display for SessionHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionHost::V4(a) => a.fmt(f),
            SessionHost::V6(a, None) => a.fmt(f),
            SessionHost::V6(a, Some(Scope::Index(i))) => write!(f, "{a}%{i}"),
            SessionHost::V6(a, Some(Scope::Name(n))) => write!(f, "{a}%{n}"),
            SessionHost::Name(n) => f.write_str(n),
        }
    }
}

/// A parsed `SHMEM_UID_SESSION_ID`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Session {
    host: SessionHost,
    port: u16,
}

/// Parses `SHMEM_UID_SESSION_ID` syntax (no resolution, no interface lookup).
fn parse_session(raw: &str) -> Result<Session, UidError> {
    let value = raw.trim();
    let v = || value.to_owned();
    if value.is_empty() {
        return Err(UidError::SessionEmpty);
    }
    if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| UidError::SessionBrackets { value: v() })?;
        let port_s = after.strip_prefix(':').ok_or_else(|| {
            if after.is_empty() {
                UidError::SessionMissingPort { value: v() }
            } else {
                UidError::SessionBrackets { value: v() }
            }
        })?;
        if inside.is_empty() {
            return Err(UidError::SessionEmptyHost { value: v() });
        }
        let (addr_s, scope_s) = match inside.split_once('%') {
            Some((a, s)) => (a, Some(s)),
            None => (inside, None),
        };
        let addr: Ipv6Addr = addr_s.parse().map_err(|_| UidError::SessionNotIpv6 {
            value: v(),
            host: inside.to_owned(),
        })?;
        let scope = scope_s.map(|s| parse_scope(value, s)).transpose()?;
        let port = parse_session_port(value, port_s)?;
        return Ok(Session {
            host: SessionHost::V6(addr, scope),
            port,
        });
    }
    // An IPv6 address (possibly scoped) without brackets. "::1:2000" is itself an IPv6
    // address, so the hint guesses that a decimal last group was meant as the port.
    if is_ipv6_literal(value) {
        let hint = match value.rsplit_once(':') {
            Some((h, p))
                if is_ipv6_literal(h) && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) =>
            {
                format!("[{h}]:{p}")
            }
            _ => format!("[{value}]:port"),
        };
        return Err(UidError::SessionIpv6NeedsBrackets { value: v(), hint });
    }
    let (host_s, port_s) = value
        .rsplit_once(':')
        .ok_or_else(|| UidError::SessionMissingPort { value: v() })?;
    if host_s.is_empty() {
        return Err(UidError::SessionEmptyHost { value: v() });
    }
    let host = if let Ok(a) = host_s.parse::<Ipv4Addr>() {
        SessionHost::V4(a)
    } else if is_ipv6_literal(host_s) {
        return Err(UidError::SessionIpv6NeedsBrackets {
            value: v(),
            hint: format!("[{host_s}]:{port_s}"),
        });
    } else if host_s.len() <= MAX_HOSTNAME_LEN
        && host_s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    {
        SessionHost::Name(host_s.to_owned())
    } else {
        return Err(UidError::SessionBadHost {
            value: v(),
            host: host_s.to_owned(),
        });
    };
    let port = parse_session_port(value, port_s)?;
    Ok(Session { host, port })
}

/// `addr` or `addr%scope` where `addr` is an IPv6 address.
fn is_ipv6_literal(s: &str) -> bool {
    let addr = s.split_once('%').map_or(s, |(a, _)| a);
    addr.parse::<Ipv6Addr>().is_ok()
}

fn parse_scope(value: &str, s: &str) -> Result<Scope, UidError> {
    let bad = || UidError::SessionBadScope {
        value: value.to_owned(),
        scope: s.to_owned(),
    };
    if s.is_empty() {
        return Err(bad());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u32>().map(Scope::Index).map_err(|_| bad());
    }
    if s.len() > MAX_IFNAME_LEN
        || !s
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b'%')
    {
        return Err(bad());
    }
    Ok(Scope::Name(s.to_owned()))
}

fn parse_session_port(value: &str, s: &str) -> Result<u16, UidError> {
    let bad = || UidError::SessionBadPort {
        value: value.to_owned(),
        port: s.to_owned(),
    };
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let port = s
        .parse::<u32>()
        .ok()
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(bad)?;
    if port < MIN_PORT {
        return Err(UidError::SessionPortTooLow {
            value: value.to_owned(),
            port,
        });
    }
    Ok(port)
}

/// The addresses to try binding for a session, preferred first (IPv4 before IPv6).
fn session_addrs(s: &Session, value: &str) -> Result<Vec<SocketAddr>, UidError> {
    match &s.host {
        SessionHost::V4(a) => Ok(vec![SocketAddr::V4(SocketAddrV4::new(*a, s.port))]),
        SessionHost::V6(a, scope) => {
            let scope_id = match scope {
                None => 0,
                Some(Scope::Index(i)) => *i,
                Some(Scope::Name(n)) => nix::net::if_::if_nametoindex(n.as_str()).map_err(|e| {
                    UidError::SessionUnknownScope {
                        value: value.to_owned(),
                        scope: n.clone(),
                        source: e.into(),
                    }
                })?,
            };
            Ok(vec![SocketAddr::V6(SocketAddrV6::new(
                *a, s.port, 0, scope_id,
            ))])
        }
        SessionHost::Name(n) => {
            let resolve_err = |source| UidError::Resolve {
                value: value.to_owned(),
                host: n.clone(),
                source,
            };
            let mut v: Vec<SocketAddr> = (n.as_str(), s.port)
                .to_socket_addrs()
                .map_err(resolve_err)?
                .collect();
            // Stable: the resolver's order within each family.
            v.sort_by_key(SocketAddr::is_ipv6);
            v.dedup();
            if v.is_empty() {
                return Err(resolve_err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the name has no address",
                )));
            }
            Ok(v)
        }
    }
}

/// An address family asked for with `ifname:inet4` / `ifname:inet6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Inet4,
    Inet6,
}

/// Parses `SHMEM_UID_SOCK_IFNAME` syntax.
fn parse_ifname_spec(raw: &str) -> Result<(String, Option<Family>), UidError> {
    let value = raw.trim();
    let (name, family) = match value.rsplit_once(':') {
        Some((n, "inet4")) => (n, Some(Family::Inet4)),
        Some((n, "inet6")) => (n, Some(Family::Inet6)),
        Some((_, other)) => {
            return Err(UidError::IfnameBadFamily {
                value: value.to_owned(),
                family: other.to_owned(),
            });
        }
        None => (value, None),
    };
    if name.is_empty() {
        return Err(UidError::IfnameEmpty {
            value: value.to_owned(),
        });
    }
    Ok((name.to_owned(), family))
}

/// One entry of the interface list: an address of an interface, or (`ip == None`) an
/// interface seen without an IP address.
#[derive(Clone, Debug, PartialEq, Eq)]
struct IfAddr {
    name: String,
    ip: Option<IpAddr>,
    scope_id: u32,
    up: bool,
    loopback: bool,
}

/// This machine's interfaces and their IP addresses, in `getifaddrs` order.
fn interface_addrs() -> Result<Vec<IfAddr>, UidError> {
    use nix::net::if_::InterfaceFlags;
    let it =
        nix::ifaddrs::getifaddrs().map_err(|e| UidError::ListInterfaces { source: e.into() })?;
    let mut out = Vec::new();
    for ifa in it {
        let (ip, scope_id) = match &ifa.address {
            Some(a) => {
                if let Some(v4) = a.as_sockaddr_in() {
                    (Some(IpAddr::V4(v4.ip())), 0)
                } else if let Some(v6) = a.as_sockaddr_in6() {
                    (Some(IpAddr::V6(v6.ip())), v6.scope_id())
                } else {
                    (None, 0)
                }
            }
            None => (None, 0),
        };
        out.push(IfAddr {
            name: ifa.interface_name.clone(),
            ip,
            scope_id,
            up: ifa.flags.contains(InterfaceFlags::IFF_UP),
            loopback: ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK),
        });
    }
    Ok(out)
}

fn is_link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => a.is_unicast_link_local(),
    }
}

/// Lower is better: IPv4, then global IPv6, then link-local IPv6.
fn address_rank(ip: &IpAddr) -> u8 {
    match ip {
        IpAddr::V4(_) => 0,
        IpAddr::V6(_) if !is_link_local(ip) => 1,
        IpAddr::V6(_) => 2,
    }
}

/// The address (and scope id) of interface `name`, of `family` if given, IPv4 preferred.
fn pick_for_interface(
    list: &[IfAddr],
    name: &str,
    family: Option<Family>,
) -> Result<(IpAddr, u32), UidError> {
    let mine: Vec<&IfAddr> = list.iter().filter(|a| a.name == name).collect();
    if mine.is_empty() {
        let mut names: Vec<&str> = Vec::new();
        for a in list {
            if !names.contains(&a.name.as_str()) {
                names.push(&a.name);
            }
        }
        let available = if names.is_empty() {
            "no interfaces".to_owned()
        } else {
            names.join(", ")
        };
        return Err(UidError::InterfaceNotFound {
            name: name.to_owned(),
            available,
        });
    }
    let fits = |ip: &IpAddr| match family {
        None => true,
        Some(Family::Inet4) => ip.is_ipv4(),
        Some(Family::Inet6) => ip.is_ipv6(),
    };
    let best = mine
        .iter()
        .filter_map(|a| a.ip.map(|ip| (ip, a.scope_id)))
        .filter(|(ip, _)| fits(ip))
        .min_by_key(|(ip, _)| address_rank(ip));
    match best {
        Some((ip, scope)) => Ok((ip, if ip.is_ipv6() { scope } else { 0 })),
        None => {
            let found: Vec<String> = mine
                .iter()
                .filter_map(|a| a.ip.map(|ip| ip.to_string()))
                .collect();
            Err(UidError::InterfaceNoAddress {
                name: name.to_owned(),
                family: match family {
                    None => "IP",
                    Some(Family::Inet4) => "IPv4",
                    Some(Family::Inet6) => "IPv6",
                },
                found: if found.is_empty() {
                    "no IP address".to_owned()
                } else {
                    found.join(", ")
                },
            })
        }
    }
}

/// Automatic selection: the first qualifying IPv4 address, else the first qualifying IPv6
/// one. Returns the interface name, the address and its scope id.
fn pick_auto(list: &[IfAddr]) -> Result<(String, IpAddr, u32), UidError> {
    let mut skipped: Vec<String> = Vec::new();
    let mut best: Option<(u8, &IfAddr, IpAddr)> = None;
    for a in list {
        let Some(ip) = a.ip else { continue };
        let why = if SKIPPED_PREFIXES.iter().any(|p| a.name.starts_with(p)) {
            Some("virtual or loopback interface")
        } else if !a.up {
            Some("interface down")
        } else if a.loopback || ip.is_loopback() {
            Some("loopback")
        } else if is_link_local(&ip) {
            Some("link-local")
        } else if ip.is_unspecified() || ip.is_multicast() {
            Some("not a unicast address")
        } else {
            None
        };
        if let Some(why) = why {
            skipped.push(format!("{} {ip}: {why}", a.name));
            continue;
        }
        let rank = u8::from(ip.is_ipv6());
        if best.as_ref().is_none_or(|(r, ..)| rank < *r) {
            best = Some((rank, a, ip));
        }
    }
    match best {
        Some((_, a, ip)) => Ok((
            a.name.clone(),
            ip,
            if ip.is_ipv6() { a.scope_id } else { 0 },
        )),
        None => Err(UidError::NoUsableInterface {
            considered: if skipped.is_empty() {
                "no interface has an IP address".to_owned()
            } else {
                format!("skipped {}", skipped.join("; "))
            },
        }),
    }
}

/// A TCP socket bound to `addr` with `SO_REUSEADDR` and close-on-exec, not listening.
fn bind_socket(addr: SocketAddr) -> io::Result<TcpListener> {
    let family = if addr.is_ipv6() {
        AddressFamily::INET6
    } else {
        AddressFamily::INET
    };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    Ok(TcpListener::from(fd))
}

/// Binds `ip` on a random port in `[1024, 65536)`, trying up to [`PORT_ATTEMPTS`] ports; only
/// "address in use" is retried.
fn bind_random_port(ip: IpAddr, scope_id: u32) -> Result<(TcpListener, SocketAddr), UidError> {
    let mut last = String::from("none");
    for _ in 0..PORT_ATTEMPTS {
        let port: u16 = rand::random_range(MIN_PORT..=u16::MAX);
        let addr = match ip {
            IpAddr::V4(a) => SocketAddr::V4(SocketAddrV4::new(a, port)),
            IpAddr::V6(a) => SocketAddr::V6(SocketAddrV6::new(a, port, 0, scope_id)),
        };
        match bind_socket(addr) {
            Ok(l) => return Ok((l, addr)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = format!("{addr}: {e}"),
            Err(source) => return Err(UidError::Bind { addr, source }),
        }
    }
    Err(UidError::NoFreePort {
        ip,
        attempts: PORT_ATTEMPTS,
        last,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    use super::*;
    use crate::bootstrap::{Bootstrap, StoreBootstrap, StoreConfig};

    fn free_port() -> u16 {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("bind 127.0.0.1:0")
            .port()
    }

    fn parse_ok(s: &str) -> Session {
        parse_session(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().expect("IPv6 literal")
    }

    #[test]
    fn session_ipv4_ipv6_scope_hostname() {
        assert_eq!(
            parse_ok("127.0.0.1:5000"),
            Session {
                host: SessionHost::V4(Ipv4Addr::LOCALHOST),
                port: 5000
            }
        );
        assert_eq!(parse_ok("  10.1.2.3:1024 ").port, 1024);
        assert_eq!(parse_ok("10.1.2.3:65535").port, 65535);
        assert_eq!(
            parse_ok("[::1]:6000"),
            Session {
                host: SessionHost::V6(Ipv6Addr::LOCALHOST, None),
                port: 6000
            }
        );
        assert_eq!(
            parse_ok("[fe80::1%eth0]:7000"),
            Session {
                host: SessionHost::V6(v6("fe80::1"), Some(Scope::Name("eth0".into()))),
                port: 7000
            }
        );
        assert_eq!(
            parse_ok("[fe80::1%3]:7000").host,
            SessionHost::V6(v6("fe80::1"), Some(Scope::Index(3)))
        );
        assert_eq!(
            parse_ok("localhost:8000"),
            Session {
                host: SessionHost::Name("localhost".into()),
                port: 8000
            }
        );
        assert_eq!(
            parse_ok("node-01.cluster.local:02000").host,
            SessionHost::Name("node-01.cluster.local".into())
        );
        assert_eq!(parse_ok("node-01.cluster.local:02000").port, 2000);
    }

    #[test]
    fn session_errors() {
        let err = |s: &str| parse_session(s).expect_err(s);
        for s in ["127.0.0.1", "localhost", "host.example"] {
            assert!(
                matches!(err(s), UidError::SessionMissingPort { .. }),
                "{s:?}"
            );
        }
        assert!(matches!(err("[::1]"), UidError::SessionMissingPort { .. }));
        for s in [
            "::1:2000",
            "fe80::1:2000",
            "::1",
            "fe80::1%eth0",
            "2001:db8::5",
        ] {
            assert!(
                matches!(err(s), UidError::SessionIpv6NeedsBrackets { .. }),
                "{s:?}: {}",
                err(s)
            );
        }
        for s in ["127.0.0.1:80", "[::1]:1023", "localhost:0"] {
            assert!(
                matches!(err(s), UidError::SessionPortTooLow { .. }),
                "{s:?}"
            );
        }
        for s in [
            "127.0.0.1:65536",
            "127.0.0.1:70000",
            "127.0.0.1:99999999999",
            "[::1]:70000",
            "host:",
            "host:abc",
            "host:+2000",
            "host:-2000",
            "host:20 00",
            "host:0x800",
        ] {
            assert!(matches!(err(s), UidError::SessionBadPort { .. }), "{s:?}");
        }
        assert!(matches!(err(""), UidError::SessionEmpty));
        assert!(matches!(err("   "), UidError::SessionEmpty));
        assert!(matches!(err(":2000"), UidError::SessionEmptyHost { .. }));
        assert!(matches!(err("[]:2000"), UidError::SessionEmptyHost { .. }));
        for s in [
            "ho st:2000",
            "ho_st:2000",
            "hôst:2000",
            "http://x:2000",
            "a:b:2000",
            "1.2.3.4%eth0:2000",
        ] {
            assert!(
                matches!(err(s), UidError::SessionBadHost { .. }),
                "{s:?}: {}",
                err(s)
            );
        }
        let long = format!("{}:2000", "a".repeat(254));
        assert!(matches!(err(&long), UidError::SessionBadHost { .. }));
        assert!(parse_session(&format!("{}:2000", "a".repeat(253))).is_ok());
        for s in ["[::1:2000", "[::1]x:2000", "[::1]2000"] {
            assert!(matches!(err(s), UidError::SessionBrackets { .. }), "{s:?}");
        }
        for s in ["[1.2.3.4]:2000", "[localhost]:2000", "[zz::1]:2000"] {
            assert!(matches!(err(s), UidError::SessionNotIpv6 { .. }), "{s:?}");
        }
        for s in [
            "[fe80::1%]:2000",
            "[fe80::1%99999999999]:2000",
            "[fe80::1%a/b]:2000",
            "[fe80::1%averyveryverylongname]:2000",
        ] {
            assert!(matches!(err(s), UidError::SessionBadScope { .. }), "{s:?}");
        }
        // Messages name the input and say what to do.
        let e = err("127.0.0.1:80").to_string();
        assert!(e.contains("127.0.0.1:80") && e.contains("1024"), "{e}");
        let e = err("::1:2000").to_string();
        assert!(e.contains("as in [::1]:2000"), "{e}");
        let e = err("fe80::1%eth0").to_string();
        assert!(e.contains("as in [fe80::1%eth0]:port"), "{e}");
        let e = err("127.0.0.1").to_string();
        assert!(e.contains("SHMEM_UID_SESSION_ID"), "{e}");
    }

    #[test]
    fn session_resolution() {
        let s = parse_ok("localhost:5000");
        let v = session_addrs(&s, "localhost:5000").expect("localhost resolves");
        assert!(v[0].is_ipv4(), "IPv4 first: {v:?}");
        assert!(v.iter().all(|a| a.port() == 5000 && a.ip().is_loopback()));
        let s = parse_ok("[fe80::1%lo]:5000");
        let v = session_addrs(&s, "[fe80::1%lo]:5000").expect("lo exists");
        match v[0] {
            SocketAddr::V6(a) => assert_ne!(a.scope_id(), 0),
            other => panic!("{other}"),
        }
        let s = parse_ok("[fe80::1%nonexistent0]:5000");
        assert!(matches!(
            session_addrs(&s, "x"),
            Err(UidError::SessionUnknownScope { .. })
        ));
        let s = parse_ok("no-such-host.invalid:5000");
        assert!(matches!(
            session_addrs(&s, "x"),
            Err(UidError::Resolve { .. })
        ));
    }

    #[test]
    fn with_session_binds_that_port_and_gives_the_socket_once() {
        let port = free_port();
        let uid = UniqueId::with_session(&format!("127.0.0.1:{port}")).expect("with_session");
        assert_eq!(uid.version, UniqueId::VERSION);
        assert_eq!(uid.version, 65672);
        assert_eq!(
            uid.socket_addr().unwrap(),
            SocketAddr::from((Ipv4Addr::LOCALHOST, port))
        );
        assert_eq!(
            uid.url().unwrap().to_string(),
            format!("tcp://127.0.0.1:{port}")
        );
        let copy = uid;
        let l = uid
            .take_listener()
            .expect("the creating process gets the socket");
        assert_eq!(l.local_addr().unwrap().port(), port);
        assert!(
            !rustix::net::sockopt::socket_acceptconn(&l).unwrap(),
            "bound, not listening"
        );
        assert!(uid.take_listener().is_none(), "second take");
        assert!(
            copy.take_listener().is_none(),
            "a copy does not take it again"
        );
        drop(l);
        // Binding the same port twice while the first is held fails clearly.
        let uid = UniqueId::with_session(&format!("127.0.0.1:{port}")).expect("rebind");
        let hold = TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = hold.local_addr().unwrap().port();
        let e = UniqueId::with_session(&format!("127.0.0.1:{busy}")).unwrap_err();
        assert!(matches!(e, UidError::Bind { .. }), "{e}");
        assert!(e.to_string().contains(&busy.to_string()), "{e}");
        drop(uid.take_listener());
    }

    #[test]
    fn with_session_hostname_prefers_ipv4() {
        let port = free_port();
        let uid = UniqueId::with_session(&format!("localhost:{port}")).expect("localhost");
        let a = uid.socket_addr().unwrap();
        assert!(a.ip().is_loopback() && a.port() == port, "{a}");
        assert!(a.is_ipv4(), "{a}");
        assert!(uid.take_listener().is_some());
    }

    #[test]
    fn bytes_round_trip_and_rejections() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let bytes = uid.to_bytes();
        assert_eq!(bytes.len(), 136);
        assert_eq!(&bytes[..4], &65672i32.to_ne_bytes());
        let back = UniqueId::from_bytes(&bytes).expect("round trip");
        assert_eq!(back, uid);
        assert_eq!(back.secret(), uid.secret());
        assert_eq!(back.url().unwrap(), uid.url().unwrap());
        // Unaligned input is fine.
        let mut shifted = [0u8; 137];
        shifted[1..].copy_from_slice(&bytes);
        assert_eq!(UniqueId::from_bytes(&shifted[1..]).unwrap(), uid);
        for len in [0, 1, 135, 137] {
            let mut v = bytes.to_vec();
            v.resize(len, 0);
            assert!(
                matches!(UniqueId::from_bytes(&v), Err(UidError::BadLength { len: l }) if l == len),
                "len {len}"
            );
        }
        let mut wrong = uid;
        wrong.version = (1 << 16) + 56;
        let e = UniqueId::from_bytes(&wrong.to_bytes()).unwrap_err();
        assert!(
            matches!(e, UidError::BadVersion { found } if found == (1 << 16) + 56),
            "{e}"
        );
        assert!(e.to_string().contains("65672"), "{e}");
        // CANN's initializer (version, zeros) is not a usable id.
        let init = UniqueId {
            version: UniqueId::VERSION,
            ..UniqueId::zeroed()
        };
        assert!(matches!(
            UniqueId::from_bytes(&init.to_bytes()),
            Err(UidError::ForeignLayout)
        ));
        assert!(matches!(init.url(), Err(UidError::ForeignLayout)));
        assert!(init.take_listener().is_none());
        let mut fam = uid;
        fam.internal[OFF_FAMILY] = 2;
        assert!(matches!(
            UniqueId::from_bytes(&fam.to_bytes()),
            Err(UidError::BadFamily { family: 2 })
        ));
        let mut zero = uid;
        zero.internal[OFF_PORT..OFF_ADDR].fill(0);
        assert!(matches!(
            UniqueId::from_bytes(&zero.to_bytes()),
            Err(UidError::ZeroPort)
        ));
        drop(uid.take_listener());
    }

    #[test]
    fn layout_is_little_endian_as_documented() {
        let inner = Inner {
            addr: SocketAddr::V6(SocketAddrV6::new(v6("2001:db8::7"), 0x1234, 0, 0x0102_0304)),
            fd: -1,
            pid: 0xA1B2_C3D4,
            secret: [9; 16],
        };
        let b = inner.encode();
        assert_eq!(&b[0..4], b"RsU1");
        assert_eq!(&b[4..6], &[6, 0]);
        assert_eq!(&b[6..8], &[0x34, 0x12]);
        assert_eq!(&b[8..24], &v6("2001:db8::7").octets());
        assert_eq!(&b[24..28], &[4, 3, 2, 1]);
        assert_eq!(&b[28..32], &[0xFF; 4]);
        assert_eq!(&b[32..36], &[0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(&b[36..52], &[9; 16]);
        assert!(b[52..].iter().all(|&x| x == 0));
        assert_eq!(Inner::decode(&b).unwrap(), inner);
        let v4 = Inner {
            addr: SocketAddr::from(([192, 0, 2, 9], 4000)),
            ..inner
        };
        let b = v4.encode();
        assert_eq!(&b[4..6], &[4, 0]);
        assert_eq!(&b[8..12], &[192, 0, 2, 9]);
        assert!(b[12..28].iter().all(|&x| x == 0));
        assert_eq!(Inner::decode(&b).unwrap(), v4);
    }

    #[test]
    fn an_id_from_another_process_gives_no_listener() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let mut forged = uid;
        let other_pid = std::process::id().wrapping_add(1);
        forged.internal[OFF_PID..OFF_SECRET].copy_from_slice(&other_pid.to_le_bytes());
        assert!(forged.take_listener().is_none());
        // Same pid, another secret: not ours either.
        let mut other = uid;
        other.internal[OFF_SECRET] ^= 0xFF;
        assert!(other.take_listener().is_none());
        // The real one still has its socket.
        assert!(uid.take_listener().is_some());
    }

    #[test]
    fn debug_hides_the_secret() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let s = format!("{uid:?}");
        assert!(s.contains("127.0.0.1") && s.contains("<redacted>"), "{s}");
        let hex: String = uid.secret().0.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!s.contains(&hex), "{s}");
        assert!(format!("{:?}", UniqueId::zeroed()).contains("not a valid"));
        drop(uid.take_listener());
    }

    #[test]
    fn scoped_ipv6_url_is_refused_clearly() {
        let mut uid = UniqueId::zeroed();
        uid.version = UniqueId::VERSION;
        uid.internal = Inner {
            addr: SocketAddr::V6(SocketAddrV6::new(v6("fe80::1"), 5000, 0, 2)),
            fd: -1,
            pid: 0,
            secret: [1; 16],
        }
        .encode();
        assert!(matches!(uid.url(), Err(UidError::ScopedAddress { .. })));
        assert_eq!(uid.socket_addr().unwrap().port(), 5000);
        uid.internal = Inner {
            addr: SocketAddr::V6(SocketAddrV6::new(v6("fd00::2"), 5000, 0, 0)),
            fd: -1,
            pid: 0,
            secret: [1; 16],
        }
        .encode();
        assert_eq!(uid.url().unwrap().to_string(), "tcp6://[fd00::2]:5000");
    }

    #[test]
    fn ifname_spec() {
        assert_eq!(parse_ifname_spec("eth0").unwrap(), ("eth0".into(), None));
        assert_eq!(
            parse_ifname_spec(" eth0:inet4 ").unwrap(),
            ("eth0".into(), Some(Family::Inet4))
        );
        assert_eq!(
            parse_ifname_spec("eth0:inet6").unwrap(),
            ("eth0".into(), Some(Family::Inet6))
        );
        assert!(matches!(
            parse_ifname_spec("eth0:ipv4"),
            Err(UidError::IfnameBadFamily { .. })
        ));
        assert!(matches!(
            parse_ifname_spec("eth0:"),
            Err(UidError::IfnameBadFamily { .. })
        ));
        assert!(matches!(
            parse_ifname_spec(""),
            Err(UidError::IfnameEmpty { .. })
        ));
        assert!(matches!(
            parse_ifname_spec(":inet6"),
            Err(UidError::IfnameEmpty { .. })
        ));
    }

    fn ifa(name: &str, ip: &str, up: bool) -> IfAddr {
        let ip: IpAddr = ip.parse().unwrap();
        IfAddr {
            name: name.into(),
            ip: Some(ip),
            scope_id: if is_link_local(&ip) && ip.is_ipv6() {
                7
            } else {
                0
            },
            up,
            loopback: ip.is_loopback(),
        }
    }

    #[test]
    fn interface_choice_rules() {
        let list = vec![
            IfAddr {
                name: "ifb0".into(),
                ip: None,
                scope_id: 0,
                up: false,
                loopback: false,
            },
            ifa("eth0", "fe80::1", true),
            ifa("eth0", "fd00::2", true),
            ifa("eth0", "192.0.2.2", true),
            ifa("lo", "127.0.0.1", true),
            ifa("lo", "::1", true),
            ifa("eth1", "fe80::9", true),
        ];
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            pick_for_interface(&list, "eth0", None).unwrap(),
            (ip("192.0.2.2"), 0)
        );
        assert_eq!(
            pick_for_interface(&list, "eth0", Some(Family::Inet6)).unwrap(),
            (ip("fd00::2"), 0)
        );
        assert_eq!(
            pick_for_interface(&list, "eth1", None).unwrap(),
            (ip("fe80::9"), 7)
        );
        assert_eq!(
            pick_for_interface(&list, "lo", None).unwrap(),
            (ip("127.0.0.1"), 0)
        );
        let e = pick_for_interface(&list, "eth1", Some(Family::Inet4)).unwrap_err();
        assert!(
            matches!(e, UidError::InterfaceNoAddress { family: "IPv4", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("fe80::9"), "{e}");
        let e = pick_for_interface(&list, "ifb0", None).unwrap_err();
        assert!(e.to_string().contains("no IP address"), "{e}");
        let e = pick_for_interface(&list, "nonexistent0", None).unwrap_err();
        assert!(matches!(e, UidError::InterfaceNotFound { .. }), "{e}");
        assert!(e.to_string().contains("ifb0, eth0, lo, eth1"), "{e}");
    }

    #[test]
    fn auto_choice_rules() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // IPv4 is preferred even when an IPv6 address comes first.
        let list = vec![
            ifa("eth0", "fd00::2", true),
            ifa("lo", "127.0.0.1", true),
            ifa("eth1", "198.51.100.4", true),
            ifa("eth2", "203.0.113.5", true),
        ];
        assert_eq!(
            pick_auto(&list).unwrap(),
            ("eth1".into(), ip("198.51.100.4"), 0)
        );
        // Only IPv6 qualifies.
        let list = vec![ifa("eth0", "fe80::1", true), ifa("eth0", "fd00::2", true)];
        assert_eq!(pick_auto(&list).unwrap(), ("eth0".into(), ip("fd00::2"), 0));
        // Nothing qualifies: every reason is named, with the hint.
        let list = vec![
            ifa("lo", "127.0.0.1", true),
            ifa("docker0", "172.17.0.1", true),
            ifa("veth12", "198.51.100.1", true),
            ifa("br-1a2b", "198.51.100.2", true),
            ifa("virbr0", "198.51.100.3", true),
            ifa("tun0", "198.51.100.4", true),
            ifa("tap0", "198.51.100.5", true),
            ifa("eth0", "fe80::1", true),
            ifa("eth1", "169.254.3.4", true),
            ifa("eth2", "198.51.100.6", false),
            ifa("eth3", "0.0.0.0", true),
        ];
        let e = pick_auto(&list).unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, UidError::NoUsableInterface { .. }));
        for needle in [
            "SHMEM_UID_SESSION_ID",
            "SHMEM_UID_SOCK_IFNAME",
            "lo 127.0.0.1",
            "docker0",
            "tap0",
            "eth0 fe80::1: link-local",
            "eth1 169.254.3.4: link-local",
            "eth2 198.51.100.6: interface down",
            "eth3 0.0.0.0",
        ] {
            assert!(m.contains(needle), "{needle:?} missing in {m}");
        }
        let e = pick_auto(&[]).unwrap_err().to_string();
        assert!(e.contains("no interface has an IP address") && e.contains("SHMEM_UID_SESSION_ID"));
    }

    #[test]
    fn with_interface_lo_and_nonexistent() {
        let uid = UniqueId::with_interface("lo").expect("explicit lo is allowed");
        let a = uid.socket_addr().unwrap();
        assert!(a.ip().is_loopback() && a.is_ipv4(), "{a}");
        assert!(a.port() >= MIN_PORT);
        let l = uid.take_listener().expect("socket");
        assert_eq!(l.local_addr().unwrap(), a);
        match UniqueId::with_interface("lo:inet6") {
            Ok(uid) => {
                assert_eq!(
                    uid.socket_addr().unwrap().ip(),
                    IpAddr::V6(Ipv6Addr::LOCALHOST)
                );
                assert!(uid.take_listener().is_some());
            }
            Err(e) => {
                println!("note: lo has no usable IPv6 address here: {e}");
                assert!(
                    matches!(
                        e,
                        UidError::InterfaceNoAddress { .. } | UidError::Bind { .. }
                    ),
                    "{e}"
                );
            }
        }
        let e = UniqueId::with_interface("nonexistent0").unwrap_err();
        assert!(matches!(e, UidError::InterfaceNotFound { .. }), "{e}");
        let m = e.to_string();
        assert!(m.contains("nonexistent0") && m.contains("lo"), "{m}");
        assert!(matches!(
            UniqueId::with_interface("lo:inet5"),
            Err(UidError::IfnameBadFamily { .. })
        ));
    }

    #[test]
    fn auto_selection_finds_an_address_or_says_what_to_do() {
        match UniqueId::with_auto_interface() {
            Ok(uid) => {
                let a = uid.socket_addr().unwrap();
                assert!(
                    !a.ip().is_loopback() && !is_link_local(&a.ip()),
                    "auto-selection chose {a}"
                );
                assert!(a.port() >= MIN_PORT);
                println!("auto-selection chose {a}");
                assert!(uid.take_listener().is_some());
            }
            Err(e) => {
                println!("auto-selection failed here: {e}");
                assert!(e.to_string().contains("SHMEM_UID_SESSION_ID"), "{e}");
            }
        }
    }

    #[test]
    fn new_reads_session_then_ifname_then_auto() {
        let port = free_port();
        let session = format!("127.0.0.1:{port}");
        let both = |var: &'static str| -> Result<Option<String>, UidError> {
            Ok(match var {
                SESSION_ENV => Some(session.clone()),
                IFNAME_ENV => Some("nonexistent0".into()),
                _ => None,
            })
        };
        let uid = UniqueId::from_lookup(both).expect("the session wins");
        assert_eq!(uid.socket_addr().unwrap().port(), port);
        assert!(uid.take_listener().is_some());
        let ifname = |var: &'static str| -> Result<Option<String>, UidError> {
            Ok((var == IFNAME_ENV).then(|| "lo".to_owned()))
        };
        let uid = UniqueId::from_lookup(ifname).expect("lo");
        assert!(uid.socket_addr().unwrap().ip().is_loopback());
        assert!(uid.take_listener().is_some());
        let bad = |var: &'static str| -> Result<Option<String>, UidError> {
            Err(UidError::EnvNotUnicode { var })
        };
        let e = UniqueId::from_lookup(bad).unwrap_err().to_string();
        assert!(e.contains("SHMEM_UID_SESSION_ID is not valid UTF-8"), "{e}");
        // The real environment: whatever it says, an id or a clear error, never a panic.
        match UniqueId::new() {
            Ok(uid) => assert!(uid.take_listener().is_some()),
            Err(e) => println!("UniqueId::new() here: {e}"),
        }
        assert!(matches!(
            env_value("SHMEM_UID_TEST_SURELY_UNSET_VARIABLE"),
            Ok(None)
        ));
    }

    #[test]
    fn set_attr_uniqueid_args_checks_as_cann() {
        let uid = UniqueId::zeroed();
        let a = set_attr_uniqueid_args(1, 4, 2 << 20, &uid).unwrap();
        assert_eq!(
            a,
            UidArgs {
                my_pe: 1,
                n_pes: 4,
                local_mem_size: 2 << 20,
                uid
            }
        );
        assert!(set_attr_uniqueid_args(0, 16384, 40 << 30, &uid).is_ok());
        assert!(set_attr_uniqueid_args(16383, 16384, 0, &uid).is_ok());
        assert!(matches!(
            set_attr_uniqueid_args(0, 2, (40 << 30) + 1, &uid),
            Err(UidError::LocalMemTooLarge { .. })
        ));
        assert!(matches!(
            set_attr_uniqueid_args(0, 2, i64::MAX, &uid),
            Err(UidError::LocalMemTooLarge { .. })
        ));
        assert!(matches!(
            set_attr_uniqueid_args(0, 16385, 2 << 20, &uid),
            Err(UidError::TooManyPes { .. })
        ));
        assert!(matches!(
            set_attr_uniqueid_args(16384, 16384, 2 << 20, &uid),
            Err(UidError::MyPeTooLarge { .. })
        ));
        // CANN's order: memory first, then n_pes, then my_pe.
        assert!(matches!(
            set_attr_uniqueid_args(20000, 20000, i64::MAX, &uid),
            Err(UidError::LocalMemTooLarge { .. })
        ));
        assert!(matches!(
            set_attr_uniqueid_args(20000, 20000, 0, &uid),
            Err(UidError::TooManyPes { .. })
        ));
        // Negative values pass here, as in CANN; init's check rejects them.
        let a = set_attr_uniqueid_args(-1, -2, -1, &uid).unwrap();
        assert_eq!(a.local_mem_size, u64::MAX);
        let mut attrs = Attributes::new(0, 1, "", 2 << 20);
        a.apply(&mut attrs);
        assert_eq!((attrs.my_pe, attrs.n_pes), (-1, -2));
        assert!(attrs.validate().is_err());
        let a = set_attr_uniqueid_args(0, 1, -1, &uid).unwrap();
        a.apply(&mut attrs);
        assert_eq!(
            attrs.validate().unwrap_err().code(),
            crate::Code::InvalidValue
        );
        let e = set_attr_uniqueid_args(0, 16385, 0, &uid)
            .unwrap_err()
            .to_string();
        assert!(e.contains("16385") && e.contains("16384"), "{e}");
    }

    #[test]
    fn apply_fills_the_attributes() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let args = set_attr_uniqueid_args(2, 3, 4 << 20, &uid).unwrap();
        let mut attrs = Attributes::new(0, 1, "", 2 << 20);
        args.apply(&mut attrs);
        assert_eq!(
            (attrs.my_pe, attrs.n_pes, attrs.local_mem_size),
            (2, 3, 4 << 20)
        );
        assert_eq!(attrs.secret, Some(uid.secret()));
        assert!(attrs.ip_port.is_empty());
        assert!(attrs.validate().is_ok());
        drop(uid.take_listener());
    }

    #[test]
    fn end_to_end_three_pes_over_a_unique_id() {
        const N: u32 = 3;
        const T: Duration = Duration::from_secs(10);

        fn run(
            pe: u32,
            uid: UniqueId,
            listener: Option<TcpListener>,
        ) -> Result<Vec<Vec<u8>>, String> {
            let cfg = StoreConfig {
                url: uid.url().map_err(|e| e.to_string())?,
                my_pe: pe,
                n_pes: N,
                instance_id: 0,
                secret: uid.secret(),
                init_timeout: T,
                op_timeout: T,
                listener,
            };
            let bs = StoreBootstrap::connect(cfg).map_err(|e| format!("connect: {e}"))?;
            bs.barrier().map_err(|e| format!("barrier: {e}"))?;
            let all = bs
                .allgather(format!("PE {pe}").as_bytes())
                .map_err(|e| format!("allgather: {e}"))?;
            bs.finalize().map_err(|e| format!("finalize: {e}"))?;
            Ok(all)
        }

        let port = free_port();
        let (txs, rxs): (Vec<_>, Vec<_>) = (1..N).map(|_| mpsc::channel::<Vec<u8>>()).unzip();
        let pe0 = thread::spawn(move || {
            let uid = UniqueId::with_session(&format!("127.0.0.1:{port}"))
                .map_err(|e| format!("uid: {e}"))?;
            // PE 0 takes its socket before anyone else sees the id.
            let listener = uid.take_listener().ok_or("PE 0 did not get its socket")?;
            let bytes = uid.to_bytes();
            for tx in &txs {
                tx.send(bytes.to_vec()).map_err(|e| e.to_string())?;
            }
            run(0, uid, Some(listener))
        });
        let others: Vec<_> = rxs
            .into_iter()
            .zip(1..N)
            .map(|(rx, pe)| {
                thread::spawn(move || {
                    let bytes = rx.recv_timeout(T).map_err(|e| format!("no uid: {e}"))?;
                    let uid = UniqueId::from_bytes(&bytes).map_err(|e| e.to_string())?;
                    if uid.take_listener().is_some() {
                        return Err("the socket was still registered after PE 0 took it".into());
                    }
                    run(pe, uid, None)
                })
            })
            .collect();
        let mut results = vec![pe0.join().expect("PE 0 thread")];
        results.extend(others.into_iter().map(|h| h.join().expect("PE thread")));
        let want: Vec<Vec<u8>> = (0..N).map(|p| format!("PE {p}").into_bytes()).collect();
        for (pe, r) in results.into_iter().enumerate() {
            let all = r.unwrap_or_else(|e| panic!("PE {pe}: {e}"));
            assert_eq!(all, want, "PE {pe}");
        }
    }
}
