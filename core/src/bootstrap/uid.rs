//! Unique-id mode: CANN's `aclshmemx_uniqueid_t`, how PE 0 makes one, and what init reads
//! from it.
//!
//! PE 0 calls [`UniqueId::new`] (CANN's `aclshmemx_get_uniqueid`): it picks an address for
//! its config-store server, binds a TCP socket there (bound, **not** listening, kept in the
//! process's registry, since it cannot live in the `Copy` id) and returns a 136-byte plain-old-data id that names
//! the address and carries a random job secret. The program broadcasts the bytes
//! ([`UniqueId::to_bytes`], e.g. with `MPI_Bcast`); every PE turns them back into an id
//! ([`UniqueId::from_bytes`]), passes it with its rank ([`Attributes::with_unique_id`](crate::Attributes::with_unique_id)) and inits.
//! The process that made the id serves on the socket it bound, so the port stays reserved
//! from the moment the id exists.
//!
//! # Choosing the address ([`UniqueId::new`])
//!
//! 1. `SHMEM_UID_SESSION_ID` set: `ip:port`, `[ipv6]:port`, `[ipv6%scope]:port` (scope = an
//!    interface name or index) or `hostname:port` (resolved, IPv4 preferred). The port must be
//!    in `1024..=65535`; exactly that address and port are bound ([`UniqueId::with_session`]).
//! 2. Else `SHMEM_UID_SOCK_IFNAME` set: that interface's address ([`super::interfaces`]) on a
//!    port the system picks from its ephemeral range ([`UniqueId::with_interface`]). CANN
//!    draws a random port from `[1024, 65536)` instead, which can take a port that a job of
//!    `ip_port` instances was configured to use; the ephemeral range (`ip_local_port_range`)
//!    is where no one configures a fixed port.
//! 3. Else an automatically chosen interface ([`UniqueId::with_auto_interface`]).
//!
//! An empty (or all-blank) variable counts as unset. When both are set only
//! `SHMEM_UID_SESSION_ID` is read, as in CANN.
//!
//! # Layout
//!
//! The outer fields are CANN's (native endianness, as the C struct): `version` =
//! [`UniqueId::VERSION`] (65672); `my_pe` and `n_pes` are written as 0 and never read (CANN
//! takes both from the init attributes). The 124 bytes of `internal` are this library's own
//! `Inner`, little-endian:
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
//! | 36  | 16 | job secret, random ([`Secret`]); CANN has an 8-byte magic here |
//! | 52  | 72 | reserved, written as zero, ignored when read |

use std::env::VarError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};

use super::addr::{self, Host};
use super::error::BootstrapError;
use super::url::BootstrapUrl;
use super::{interfaces, lock};
use crate::attr::Secret;

/// The variable naming PE 0's address and port (`ip:port`, `[ipv6]:port`, `hostname:port`).
pub(crate) const SESSION_ENV: &str = "SHMEM_UID_SESSION_ID";
/// The variable naming the interface whose address PE 0 uses (`ifname[:inet4|:inet6]`).
pub(crate) const IFNAME_ENV: &str = "SHMEM_UID_SOCK_IFNAME";
/// CANN's `ACLSHMEM_UNIQUE_ID_INNER_LEN`: bytes of `internal`.
const INNER_LEN: usize = 124;
/// Size of a [`UniqueId`] in bytes (CANN's `sizeof(aclshmemx_uniqueid_t)`).
const UID_LEN: usize = 136;
/// Lowest port a unique id may use.
const MIN_PORT: u16 = 1024;
const LAYOUT_TAG: [u8; 4] = *b"RsU1";
/// What a session address that does not bind needs.
const BIND_HINT: &str = "the address must belong to this machine and the port be free \
                         (SHMEM_UID_SESSION_ID=ip:port chooses both)";

/// The process's registry of unique-id sockets, with their ids' secrets: the socket an id's
/// maker bound (bound, not listening) waits here until init takes it
/// ([`UniqueId::take_listener`]). An id that is never used keeps its socket open until the
/// process ends, as CANN's does.
static LISTENERS: Mutex<Vec<([u8; 16], TcpListener)>> = Mutex::new(Vec::new());

/// CANN's `aclshmemx_uniqueid_t`: what PE 0 makes and every PE needs to init in unique-id
/// mode. Plain old data (136 bytes); see the module docs for the layout of `internal`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct UniqueId {
    /// [`UniqueId::VERSION`] for a valid id.
    version: i32,
    /// Written as 0 and not read (CANN takes the rank from the init attributes).
    my_pe: i32,
    /// Written as 0 and not read (CANN takes the size from the init attributes).
    n_pes: i32,
    /// This library's `Inner`: PE 0's address, the socket and the job secret.
    internal: [u8; INNER_LEN],
}

/// The layout of `internal`. Integers are stored little-endian (`to_le` on write).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
struct Inner {
    tag: [u8; 4],
    family: u16,
    port: u16,
    addr: [u8; 16],
    scope_id: u32,
    fd: i32,
    pid: u32,
    secret: [u8; 16],
    reserved: [u8; 72],
}

const _: () = assert!(size_of::<UniqueId>() == UID_LEN && size_of::<Inner>() == INNER_LEN);
const _: () = assert!(UniqueId::VERSION == (1 << 16) + 136);

impl Inner {
    fn new(addr: SocketAddr, fd: i32, secret: [u8; 16]) -> Inner {
        let (family, ip, scope) = match addr {
            // The IPv4 address in bytes 0..4, the rest zero.
            SocketAddr::V4(a) => (4u16, u128::from(a.ip().to_bits()) << 96, 0),
            SocketAddr::V6(a) => (6, a.ip().to_bits(), a.scope_id()),
        };
        Inner {
            tag: LAYOUT_TAG,
            family: family.to_le(),
            port: addr.port().to_le(),
            addr: ip.to_be_bytes(),
            scope_id: scope.to_le(),
            fd: fd.to_le(),
            pid: std::process::id().to_le(),
            secret,
            reserved: [0; 72],
        }
    }

    /// PE 0's server address, with its port and IPv6 scope id.
    fn addr(&self) -> Result<SocketAddr, BootstrapError> {
        let (port, bits) = (u16::from_le(self.port), u128::from_be_bytes(self.addr));
        let corrupted = |what: String| {
            let m = format!("the unique id holds {what}: it is corrupted");
            Err(BootstrapError::address(m))
        };
        let ip = match u16::from_le(self.family) {
            4 => IpAddr::V4(Ipv4Addr::from_bits((bits >> 96) as u32)),
            6 => IpAddr::V6(Ipv6Addr::from_bits(bits)),
            f => return corrupted(format!("address family {f}, not 4 or 6")),
        };
        match port {
            0 => corrupted("port 0".into()),
            _ => Ok(addr::socket_addr(ip, port, u32::from_le(self.scope_id))),
        }
    }
}

impl UniqueId {
    /// CANN's `ACLSHMEM_UNIQUEID_VERSION`: `(1 << 16) + sizeof(aclshmemx_uniqueid_t)`.
    pub const VERSION: i32 = (1 << 16) + UID_LEN as i32;

    /// CANN's `aclshmemx_get_uniqueid`, on PE 0: chooses the address from
    /// `SHMEM_UID_SESSION_ID`, else `SHMEM_UID_SOCK_IFNAME`, else automatically (see the
    /// module docs), binds a socket there and returns the id to broadcast.
    pub fn new() -> Result<UniqueId, BootstrapError> {
        UniqueId::from_lookup(env_value)
    }

    /// [`UniqueId::new`] with the variables read through `get` (unset or blank: `None`).
    fn from_lookup(
        get: impl Fn(&'static str) -> Result<Option<String>, BootstrapError>,
    ) -> Result<UniqueId, BootstrapError> {
        if let Some(session) = get(SESSION_ENV)? {
            return UniqueId::with_session(&session);
        }
        match get(IFNAME_ENV)? {
            Some(ifname) => UniqueId::with_interface(&ifname),
            None => UniqueId::with_auto_interface(),
        }
    }

    /// Makes an id for exactly the address and port of `session`, in `SHMEM_UID_SESSION_ID`
    /// syntax: `ip:port`, `[ipv6]:port`, `[ipv6%scope]:port` or `hostname:port` (resolved,
    /// IPv4 addresses tried first), port in `1024..=65535`.
    pub fn with_session(session: &str) -> Result<UniqueId, BootstrapError> {
        let value = session.trim();
        let what = "the unique-id session address (SHMEM_UID_SESSION_ID: ip:port, [ipv6]:port or hostname:port)";
        let hp = addr::parse_host_port(value, what, "[fe80::1%eth0]:2000")?;
        if hp.bracketed && !matches!(hp.host, Host::Ip(IpAddr::V6(_))) {
            return Err(BootstrapError::address(format!(
                "unique-id session address {value:?}: only an IPv6 address goes in brackets (write IPv4 addresses \
                 and host names without)"
            )));
        }
        if hp.port < MIN_PORT {
            let port = hp.port;
            return Err(BootstrapError::address(format!(
                "unique-id session address {value:?}: port {port} is below 1024; choose a port in 1024..=65535"
            )));
        }
        let what = |a| format!("cannot bind the unique-id socket to {a}; {BIND_HINT}");
        let (l, a) = addr::bind_first(&hp.resolve()?, false, what)?;
        Ok(UniqueId::register(l, a))
    }

    /// Makes an id for the address of one interface, in `SHMEM_UID_SOCK_IFNAME` syntax:
    /// `ifname`, `ifname:inet4` or `ifname:inet6`, on a port the system picks. Any interface may
    /// be named, `lo` included.
    pub fn with_interface(spec: &str) -> Result<UniqueId, BootstrapError> {
        let (name, family) = interfaces::parse_ifname_spec(spec)?;
        let (ip, scope) =
            interfaces::pick_for_interface(&interfaces::interface_addrs()?, &name, family)?;
        bind_system_port(ip, scope)
    }

    /// Makes an id for an automatically chosen interface (see the `bootstrap::interfaces`
    /// module) on a port the system picks; fails with a hint at `SHMEM_UID_SESSION_ID` when no
    /// interface qualifies.
    pub fn with_auto_interface() -> Result<UniqueId, BootstrapError> {
        let (name, ip, scope) = interfaces::pick_auto(&interfaces::interface_addrs()?)?;
        tracing::debug!("unique id: automatically chose interface {name}");
        bind_system_port(ip, scope)
    }

    /// An id for `127.0.0.1` on a port the system picks (the job-local rendezvous).
    pub(crate) fn on_loopback() -> Result<UniqueId, BootstrapError> {
        let a = SocketAddr::new(addr::LOOPBACK, 0);
        let l = addr::bind(a, false)
            .map_err(|e| BootstrapError::io("binding the bootstrap server to 127.0.0.1", e))?;
        Ok(UniqueId::register(l, a))
    }

    /// A fresh id for the socket `l` bound to `addr`, which the registry keeps.
    fn register(l: TcpListener, addr: SocketAddr) -> UniqueId {
        let addr = l.local_addr().unwrap_or(addr);
        let secret = Secret::random().0;
        let inner = Inner::new(addr, l.as_raw_fd(), secret);
        lock(&LISTENERS).push((secret, l));
        tracing::debug!("unique id: PE 0 will serve on {addr}");
        // CANN's `ACLSHMEM_UNIQUEID_INITIALIZER` (the version, and zeros), with our part.
        UniqueId {
            version: UniqueId::VERSION,
            internal: bytemuck::cast(inner),
            ..UniqueId::zeroed()
        }
    }

    /// The 136 bytes to broadcast to the other PEs (the struct's memory, as C sees it).
    pub fn to_bytes(self) -> [u8; UID_LEN] {
        bytemuck::cast(self)
    }

    /// An id from broadcast bytes: exactly 136 of them, with CANN's version and an address
    /// this library wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId, BootstrapError> {
        let Ok(uid) = bytemuck::try_pod_read_unaligned::<UniqueId>(bytes) else {
            let len = bytes.len();
            let m = format!(
                "a unique id has 136 bytes, not {len}; broadcast all of aclshmemx_uniqueid_t unchanged"
            );
            return Err(BootstrapError::address(m));
        };
        uid.inner()?.addr()?;
        Ok(uid)
    }

    /// Checks the version and the layout tag.
    fn inner(&self) -> Result<Inner, BootstrapError> {
        if self.version != UniqueId::VERSION {
            return Err(BootstrapError::address(format!(
                "the unique id has version {}, expected 65672 ((1 << 16) + 136); get it from aclshmemx_get_uniqueid \
                 on PE 0 and broadcast it unchanged",
                self.version
            )));
        }
        let inner: Inner = bytemuck::cast(self.internal);
        if inner.tag != LAYOUT_TAG {
            return Err(BootstrapError::address(
                "the unique id was not made by this library (or is zeroed or corrupted); get it from \
                 aclshmemx_get_uniqueid on PE 0 of this job and broadcast all 136 bytes unchanged",
            ));
        }
        Ok(inner)
    }

    /// The bootstrap URL of PE 0's server. An IPv6 address with a scope id is refused: a
    /// URL cannot carry the scope, and without it no PE could connect.
    pub(crate) fn url(&self) -> Result<BootstrapUrl, BootstrapError> {
        match self.inner()?.addr()? {
            SocketAddr::V6(a) if a.scope_id() != 0 => Err(BootstrapError::address(format!(
                "the unique id's address {a} has an IPv6 scope, which the bootstrap cannot use; use a global or \
                 IPv4 address (SHMEM_UID_SESSION_ID or SHMEM_UID_SOCK_IFNAME=ifname:inet4)"
            ))),
            a => Ok(BootstrapUrl::of(a)),
        }
    }

    /// The job secret every PE presents to PE 0's server (the raw bytes, undecoded: a
    /// malformed id gives a secret nobody else has).
    pub(crate) fn secret(&self) -> Secret {
        Secret(bytemuck::cast::<_, Inner>(self.internal).secret)
    }

    /// The bound (not listening) socket of this id, if this process made the id and no one
    /// took the socket yet; a second take gives `None`, as does any other process.
    pub(crate) fn take_listener(&self) -> Option<TcpListener> {
        let inner = self.inner().ok()?;
        if u32::from_le(inner.pid) != std::process::id() {
            return None;
        }
        let fd = i32::from_le(inner.fd);
        let ours = |(s, l): &([u8; 16], TcpListener)| *s == inner.secret && l.as_raw_fd() == fd;
        let mut reg = lock(&LISTENERS);
        let i = reg.iter().position(ours)?;
        Some(reg.swap_remove(i).1)
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner().and_then(|i| i.addr()) {
            Ok(addr) => write!(f, "UniqueId {{ addr: {addr}, secret: <redacted> }}"),
            Err(_) => f.write_str("UniqueId(<not a valid unique id>)"),
        }
    }
}

/// Binds `ip` on a port the system picks from its ephemeral range (port 0).
fn bind_system_port(ip: IpAddr, scope_id: u32) -> Result<UniqueId, BootstrapError> {
    let a = addr::socket_addr(ip, 0, scope_id);
    let l = addr::bind(a, false)
        .map_err(|e| BootstrapError::io(format!("cannot bind the unique-id socket to {ip}"), e))?;
    let bound = l
        .local_addr()
        .map_err(|e| BootstrapError::io("reading the unique-id socket's port", e))?;
    Ok(UniqueId::register(l, bound))
}

/// A variable's value; unset, empty and all-blank values are `None`.
fn env_value(var: &'static str) -> Result<Option<String>, BootstrapError> {
    match std::env::var(var) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(_)) => Err(BootstrapError::invalid(format!(
            "{var} is not valid UTF-8; set it to plain ASCII"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddrV6;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    use super::*;
    use crate::bootstrap::BootstrapErrorKind as Kind;
    use crate::bootstrap::server::ServerParams;
    use crate::bootstrap::store::{StoreBootstrap, StoreConfig};
    use crate::bootstrap::{Bootstrap, tests::free_port};

    fn addr_of(uid: &UniqueId) -> SocketAddr {
        uid.inner().and_then(|i| i.addr()).expect("a valid id")
    }

    #[test]
    fn with_session_binds_that_port_and_gives_the_socket_once() {
        let port = free_port();
        let uid = UniqueId::with_session(&format!(" 127.0.0.1:{port} ")).expect("with_session");
        assert_eq!(uid.version, 65672);
        assert_eq!(addr_of(&uid), SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
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
        assert!(
            uid.take_listener().is_none() && copy.take_listener().is_none(),
            "a second take"
        );
        // Binding a port that a listening socket holds fails clearly.
        let hold = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = hold.local_addr().unwrap().port();
        let e = UniqueId::with_session(&format!("127.0.0.1:{port}")).unwrap_err();
        assert_eq!(e.kind(), &Kind::Io);
        assert!(
            e.to_string().contains(&port.to_string()) && std::error::Error::source(&e).is_some(),
            "{e}"
        );
    }

    #[test]
    fn with_session_rules() {
        let port = free_port();
        let uid = UniqueId::with_session(&format!("localhost:{port}")).expect("localhost");
        assert!(addr_of(&uid).is_ipv4(), "IPv4 first");
        assert!(uid.take_listener().is_some());
        let err = |s: &str| UniqueId::with_session(s).expect_err(s).to_string();
        for s in ["127.0.0.1:80", "[::1]:1023", "localhost:0"] {
            assert!(err(s).contains("below 1024"), "{s}");
        }
        for s in ["[1.2.3.4]:2000", "[localhost]:2000"] {
            assert!(
                err(s).contains("only an IPv6 address goes in brackets"),
                "{s}"
            );
        }
        assert!(err("::1:2000").contains("as in [fe80::1%eth0]:2000"));
        assert!(err("127.0.0.1").contains("SHMEM_UID_SESSION_ID"));
        assert!(err("").contains("empty"));
        assert!(err("no-such-host.invalid:5000").contains("cannot resolve"));
    }

    #[test]
    fn bytes_round_trip_and_rejections() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let bytes = uid.to_bytes();
        assert_eq!(&bytes[..4], &65672i32.to_ne_bytes());
        let back = UniqueId::from_bytes(&bytes).expect("round trip");
        assert_eq!((back, back.secret()), (uid, uid.secret()));
        // Unaligned input is fine.
        let mut shifted = [0u8; 137];
        shifted[1..].copy_from_slice(&bytes);
        assert_eq!(UniqueId::from_bytes(&shifted[1..]).unwrap(), uid);
        for len in [0, 1, 135, 137] {
            let v = vec![0; len];
            assert!(
                UniqueId::from_bytes(&v)
                    .unwrap_err()
                    .to_string()
                    .contains(&format!("not {len}"))
            );
        }
        let wrong = UniqueId {
            version: (1 << 16) + 56,
            ..uid
        };
        assert!(
            UniqueId::from_bytes(&wrong.to_bytes())
                .unwrap_err()
                .to_string()
                .contains("65672")
        );
        // CANN's initializer (version, zeros) is not a usable id.
        let init = UniqueId {
            version: UniqueId::VERSION,
            ..UniqueId::zeroed()
        };
        assert!(
            UniqueId::from_bytes(&init.to_bytes())
                .unwrap_err()
                .to_string()
                .contains("not made by this library")
        );
        assert!(init.url().is_err() && init.take_listener().is_none());
        let mut fam = uid;
        fam.internal[4] = 2;
        assert!(
            UniqueId::from_bytes(&fam.to_bytes())
                .unwrap_err()
                .to_string()
                .contains("family 2")
        );
        let mut zero = uid;
        zero.internal[6..8].fill(0);
        assert!(
            UniqueId::from_bytes(&zero.to_bytes())
                .unwrap_err()
                .to_string()
                .contains("port 0")
        );
        drop(uid.take_listener());
    }

    #[test]
    fn layout_is_little_endian_as_documented() {
        let v6: Ipv6Addr = "2001:db8::7".parse().unwrap();
        let inner = Inner::new(
            SocketAddr::V6(SocketAddrV6::new(v6, 0x1234, 0, 0x0102_0304)),
            -1,
            [9; 16],
        );
        let b: [u8; INNER_LEN] = bytemuck::cast(inner);
        assert_eq!(&b[0..4], b"RsU1");
        assert_eq!(&b[4..8], &[6, 0, 0x34, 0x12]);
        assert_eq!(&b[8..24], &v6.octets());
        assert_eq!(&b[24..32], &[4, 3, 2, 1, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(&b[32..36], &std::process::id().to_le_bytes());
        assert_eq!(&b[36..52], &[9; 16]);
        assert!(b[52..].iter().all(|&x| x == 0));
        let v4 = Inner::new(SocketAddr::from(([192, 0, 2, 9], 4000)), 3, [1; 16]);
        let b: [u8; INNER_LEN] = bytemuck::cast(v4);
        assert_eq!(&b[4..6], &[4, 0]);
        assert_eq!(&b[8..12], &[192, 0, 2, 9]);
        assert!(b[12..28].iter().all(|&x| x == 0));
        assert_eq!(v4.addr().unwrap(), SocketAddr::from(([192, 0, 2, 9], 4000)));
    }

    #[test]
    fn an_id_from_another_process_or_with_another_secret_gives_no_listener() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let mut forged = uid;
        forged.internal[32..36].copy_from_slice(&std::process::id().wrapping_add(1).to_le_bytes());
        assert!(forged.take_listener().is_none());
        let mut other = uid;
        other.internal[36] ^= 0xFF;
        assert!(other.take_listener().is_none());
        assert!(
            uid.take_listener().is_some(),
            "the real one still has its socket"
        );
    }

    #[test]
    fn debug_hides_the_secret_and_scoped_urls_are_refused() {
        let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).unwrap();
        let s = format!("{uid:?}");
        assert!(s.contains("127.0.0.1") && s.contains("<redacted>"), "{s}");
        let hex: String = uid.secret().0.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!s.contains(&hex), "{s}");
        assert!(format!("{:?}", UniqueId::zeroed()).contains("not a valid"));
        drop(uid.take_listener());
        let scoped = |scope| {
            let a = SocketAddrV6::new("fe80::1".parse().unwrap(), 5000, 0, scope);
            UniqueId {
                internal: bytemuck::cast(Inner::new(a.into(), -1, [1; 16])),
                ..uid
            }
        };
        assert!(
            scoped(2)
                .url()
                .unwrap_err()
                .to_string()
                .contains("IPv6 scope")
        );
        assert_eq!(
            scoped(0).url().unwrap().to_string(),
            "tcp6://[fe80::1]:5000"
        );
    }

    #[test]
    fn with_interface_and_automatic_choice() {
        let uid = UniqueId::with_interface("lo").expect("explicit lo is allowed");
        let a = addr_of(&uid);
        assert!(
            a.ip().is_loopback() && a.is_ipv4() && a.port() >= MIN_PORT,
            "{a}"
        );
        assert_eq!(
            uid.take_listener().expect("socket").local_addr().unwrap(),
            a
        );
        match UniqueId::with_interface("lo:inet6") {
            Ok(uid) => assert_eq!(addr_of(&uid).ip(), IpAddr::V6(Ipv6Addr::LOCALHOST)),
            Err(e) => println!("note: lo has no usable IPv6 address here: {e}"),
        }
        let e = UniqueId::with_interface("nonexistent0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nonexistent0") && e.contains("lo"), "{e}");
        match UniqueId::with_auto_interface() {
            Ok(uid) => {
                let a = addr_of(&uid);
                assert!(
                    !a.ip().is_loopback() && !addr::is_link_local(&a.ip()),
                    "auto-selection chose {a}"
                );
                assert!(uid.take_listener().is_some());
            }
            Err(e) => assert!(e.to_string().contains("SHMEM_UID_SESSION_ID"), "{e}"),
        }
    }

    #[test]
    fn new_reads_session_then_ifname_then_auto() {
        let port = free_port();
        let session = format!("127.0.0.1:{port}");
        let both = |var: &'static str| {
            Ok(match var {
                SESSION_ENV => Some(session.clone()),
                _ => Some("nonexistent0".into()),
            })
        };
        let uid = UniqueId::from_lookup(both).expect("the session wins");
        assert_eq!(addr_of(&uid).port(), port);
        assert!(uid.take_listener().is_some());
        let uid = UniqueId::from_lookup(|var| Ok((var == IFNAME_ENV).then(|| "lo".to_owned())))
            .expect("lo");
        assert!(addr_of(&uid).ip().is_loopback() && uid.take_listener().is_some());
        let e = UniqueId::from_lookup(|var| {
            Err(BootstrapError::invalid(format!("{var} is not valid UTF-8")))
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("SHMEM_UID_SESSION_ID is not valid UTF-8"),
            "{e}"
        );
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
    fn end_to_end_three_pes_over_a_unique_id() {
        const N: u32 = 3;
        const T: Duration = Duration::from_secs(10);

        fn run(
            pe: u32,
            uid: UniqueId,
            listener: Option<TcpListener>,
        ) -> Result<Vec<Vec<u8>>, BootstrapError> {
            let job = ServerParams {
                n_pes: N,
                instance_id: 0,
                secret: uid.secret(),
                init_timeout: T,
                op_timeout: T,
                tls: None,
            };
            let cfg = StoreConfig {
                url: uid.url()?,
                my_pe: pe,
                job,
                listener,
            };
            let bs = StoreBootstrap::connect(cfg)?;
            bs.barrier()?;
            let all = bs.allgather(format!("PE {pe}").as_bytes())?;
            bs.finalize()?;
            Ok(all)
        }

        let port = free_port();
        let (txs, rxs): (Vec<_>, Vec<_>) = (1..N).map(|_| mpsc::channel::<Vec<u8>>()).unzip();
        let pe0 = thread::spawn(move || {
            let uid = UniqueId::with_session(&format!("127.0.0.1:{port}"))?;
            // PE 0 takes its socket before anyone else sees the id.
            let listener = uid.take_listener();
            assert!(listener.is_some(), "PE 0 did not get its socket");
            for tx in &txs {
                tx.send(uid.to_bytes().to_vec()).expect("send");
            }
            run(0, uid, listener)
        });
        let others: Vec<_> = rxs
            .into_iter()
            .zip(1..N)
            .map(|(rx, pe)| {
                thread::spawn(move || {
                    let uid = UniqueId::from_bytes(&rx.recv_timeout(T).expect("the id"))?;
                    assert!(
                        uid.take_listener().is_none(),
                        "the socket was still registered after PE 0 took it"
                    );
                    run(pe, uid, None)
                })
            })
            .collect();
        let want: Vec<Vec<u8>> = (0..N).map(|p| format!("PE {p}").into_bytes()).collect();
        for (pe, h) in std::iter::once(pe0).chain(others).enumerate() {
            assert_eq!(
                h.join()
                    .expect("PE thread")
                    .unwrap_or_else(|e| panic!("PE {pe}: {e}")),
                want,
                "PE {pe}"
            );
        }
    }
}
