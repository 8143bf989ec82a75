//! `host:port` addresses: the one parser (of CANN's `ip_port` after its scheme, and of
//! `SHMEM_UID_SESSION_ID`), the one resolver and the one bind helper of the bootstrap.
//!
//! The shapes are `HOST:PORT`, split at the last `:`, where `HOST` is a dotted IPv4 address or
//! a host name of at most 253 characters out of `[A-Za-z0-9.-]`; and `[HOST]:PORT`, where
//! `HOST` may also be an IPv6 address with an optional `%scope` (an interface name or index).
//! `PORT` is decimal ASCII digits (no sign, no blanks) up to 65535; callers check its range
//! and which hosts their syntax allows.

use std::fmt;
use std::io;
use std::net::{
    IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpListener, ToSocketAddrs,
};
use std::time::{Duration, Instant};

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::error::BootstrapError;

/// `listen()` backlog of a bootstrap server (the kernel caps it at `somaxconn`).
pub(crate) const BACKLOG: i32 = 4096;
/// The longest host name CANN accepts.
const MAX_HOSTNAME_LEN: usize = 253;
/// The longest interface name Linux allows (`IFNAMSIZ - 1`).
const MAX_IFNAME_LEN: usize = 15;

/// The host part of an address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    /// A literal address.
    Ip(IpAddr),
    /// A host name, resolved when used.
    Name(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ip(a) => a.fmt(f),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// A parsed `host:port` or `[host]:port`, which is also what a bootstrap URL holds
/// ([`super::url`]: the brackets are `tcp6://`). Displayed as that URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct HostPort {
    /// The host.
    pub(crate) host: Host,
    /// The `%scope` of a bracketed IPv6 address.
    pub(crate) scope: Option<String>,
    /// The port, not range-checked.
    pub(crate) port: u16,
    /// Whether the host was in brackets: IPv6 syntax (`tcp6://`), IPv6 addresses only.
    pub(crate) bracketed: bool,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (host, port) = (&self.host, self.port);
        match self.bracketed {
            false => write!(f, "tcp://{host}:{port}"),
            true => write!(f, "tcp6://[{host}]:{port}"),
        }
    }
}

impl HostPort {
    /// The address of a server socket.
    pub(crate) fn of(addr: SocketAddr) -> HostPort {
        HostPort {
            host: Host::Ip(addr.ip()),
            scope: None,
            port: addr.port(),
            bracketed: addr.is_ipv6(),
        }
    }

    /// The socket addresses to try, in order: a literal address is itself (with its scope
    /// id); a name goes through the system resolver (`/etc/hosts`, DNS), IPv4 addresses
    /// first, or only IPv6 ones when the host was in brackets.
    pub(crate) fn resolve(&self) -> Result<Vec<SocketAddr>, BootstrapError> {
        let v6_only = self.bracketed;
        let mut addrs: Vec<SocketAddr> = match &self.host {
            Host::Ip(ip) => {
                let index = |s: &str| s.parse().or_else(|_| nix::net::if_::if_nametoindex(s));
                let scope_id = match self.scope.as_deref() {
                    None => 0,
                    Some(s) => index(s).map_err(|e| {
                        let m = format!("scope {s:?} is not a network interface of this machine");
                        BootstrapError::address(m).with_source(io::Error::from(e))
                    })?,
                };
                vec![socket_addr(*ip, self.port, scope_id)]
            }
            Host::Name(n) => {
                let m =
                    format!("cannot resolve host {n:?}; use an IP address or a name in /etc/hosts");
                let found = (n.as_str(), self.port).to_socket_addrs();
                found
                    .map_err(|e| BootstrapError::address(m).with_source(e))?
                    .collect()
            }
        };
        if v6_only {
            addrs.retain(SocketAddr::is_ipv6);
        }
        // Stable: keeps the resolver's order within each family.
        addrs.sort_by_key(SocketAddr::is_ipv6);
        addrs.dedup();
        if addrs.is_empty() {
            let family = if v6_only { "IPv6 " } else { "" };
            let m = format!("host {:?} has no {family}address", self.host.to_string());
            return Err(BootstrapError::address(m));
        }
        Ok(addrs)
    }

    /// PE 0's listening socket on the first resolved address that binds.
    pub(crate) fn bind(&self) -> Result<TcpListener, BootstrapError> {
        let what = |a| format!("could not bind the bootstrap server of {self} to {a}");
        bind_first(&self.resolve()?, true, what).map(|(l, _)| l)
    }
}

/// Parses `s`; `what` names it in messages and `v6_example` shows how an IPv6 address is
/// written in this syntax.
pub(crate) fn parse_host_port(
    s: &str,
    what: &str,
    v6_example: &str,
) -> Result<HostPort, BootstrapError> {
    let err = |why: String| Err(BootstrapError::address(format!("{what} {s:?} {why}")));
    if s.is_empty() {
        return Err(BootstrapError::address(format!("{what} is empty")));
    }
    let (host, port, bracketed) = match s.strip_prefix('[') {
        Some(rest) => {
            let Some((inside, after)) = rest.split_once(']') else {
                return err("has '[' without ']'".into());
            };
            let port = match after.strip_prefix(':') {
                Some(p) => p,
                None if after.is_empty() => return err("has no :port".into()),
                None => return err(format!("must look like {v6_example}: text follows ']'")),
            };
            (inside, port, true)
        }
        None => {
            let Some((host, port)) = s.rsplit_once(':') else {
                return err("has no :port".into());
            };
            if host.contains(':') || host.contains('[') {
                let m = format!("holds an IPv6 address, which needs brackets, as in {v6_example}");
                return err(m);
            }
            (host, port, false)
        }
    };
    let (host, scope) = match host.split_once('%') {
        Some((h, scope)) if bracketed => (h, Some(scope)),
        _ => (host, None),
    };
    let name_char = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    let host = if host.is_empty() {
        return err("has an empty host".into());
    } else if let Ok(a) = host.parse::<IpAddr>() {
        Host::Ip(a)
    } else if host.len() <= MAX_HOSTNAME_LEN && host.bytes().all(name_char) {
        Host::Name(host.to_owned())
    } else {
        return err(format!(
            "has host {host:?}, neither an IP address nor a host name of at most {MAX_HOSTNAME_LEN} characters \
             out of [A-Za-z0-9.-]"
        ));
    };
    if let Some(sc) = scope {
        let ifname_char = |b: u8| b.is_ascii_graphic() && b != b'/' && b != b'%';
        let name_ok = sc.len() <= MAX_IFNAME_LEN && sc.bytes().all(ifname_char);
        let index_ok = sc.bytes().all(|b| b.is_ascii_digit()) && sc.parse::<u32>().is_ok();
        if !matches!(host, Host::Ip(IpAddr::V6(_))) || sc.is_empty() || !(index_ok || name_ok) {
            return err(format!(
                "has scope {sc:?}: only an IPv6 address takes a %scope, an interface name or index"
            ));
        }
    }
    let Some(port) = parse_port(port) else {
        return err(format!(
            "has port {port:?}, not a decimal number up to 65535"
        ));
    };
    Ok(HostPort {
        host,
        scope: scope.map(str::to_owned),
        port,
        bracketed,
    })
}

/// A decimal port, strictly: ASCII digits only, the whole string, 0..=65535.
pub(crate) fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().and_then(|p| u16::try_from(p).ok())
}

/// The socket address of `ip` and `port`, with `scope_id` if it is IPv6.
pub(crate) fn socket_addr(ip: IpAddr, port: u16, scope_id: u32) -> SocketAddr {
    match ip {
        IpAddr::V4(a) => SocketAddr::V4(SocketAddrV4::new(a, port)),
        IpAddr::V6(a) => SocketAddr::V6(SocketAddrV6::new(a, port, 0, scope_id)),
    }
}

/// A TCP socket bound to `addr` (the exact address, never the wildcard one a caller did not
/// name) with `SO_REUSEADDR`, so that a finalize→init loop can reuse the port, and
/// close-on-exec; listening if `listen`.
pub(crate) fn bind(addr: SocketAddr, listen: bool) -> io::Result<TcpListener> {
    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    if listen {
        rustix::net::listen(&fd, BACKLOG)?;
    }
    Ok(TcpListener::from(fd))
}

/// How long [`bind_past_self_connections`] waits for a socket connected to itself to go.
const SELF_CONNECTED_WAIT: Duration = Duration::from_secs(10);

/// Whether a TCP socket of this network namespace is connected to itself on `port`. A client
/// that dials a loopback port nobody listens on yet can be given that very port as its source,
/// and TCP's simultaneous open then connects the socket to itself. It holds the port only until
/// its owner sees it and resets it (the bootstrap's dial does at once), so a bind that finds
/// the port taken by one waits for that instead of failing.
fn self_connected(port: u16) -> bool {
    let port = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).is_ok_and(|t| {
            t.lines().skip(1).any(|line| {
                // `sl local_address rem_address st ...`, addresses as `HEXIP:HEXPORT`.
                let mut col = line.split_whitespace().skip(1);
                matches!((col.next(), col.next()),
                    (Some(local), Some(remote)) if local == remote && local.ends_with(&port))
            })
        })
    })
}

/// [`bind`], waiting (up to [`SELF_CONNECTED_WAIT`]) while the address is taken by a socket
/// connected to itself ([`self_connected`]): any other occupant fails it at once.
fn bind_past_self_connections(addr: SocketAddr, listen: bool) -> io::Result<TcpListener> {
    let until = Instant::now() + SELF_CONNECTED_WAIT;
    loop {
        match bind(addr, listen) {
            Err(e)
                if e.kind() == io::ErrorKind::AddrInUse
                    && Instant::now() < until
                    && self_connected(addr.port()) =>
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            r => return r,
        }
    }
}

/// The first of `addrs` (not empty) that [`bind`]s, with its address; else an error saying
/// `what` failed for the first of them.
pub(crate) fn bind_first(
    addrs: &[SocketAddr],
    listen: bool,
    what: impl FnOnce(SocketAddr) -> String,
) -> Result<(TcpListener, SocketAddr), BootstrapError> {
    let mut first = None;
    for &a in addrs {
        match bind_past_self_connections(a, listen) {
            Ok(l) => return Ok((l, a)),
            Err(e) if first.is_none() => first = Some((a, e)),
            Err(_) => {}
        }
    }
    let (a, e) = first.expect("a resolved host has at least one address");
    let why = match e.kind() {
        io::ErrorKind::AddrInUse => {
            "the address is in use (another job, or another program, listens there)".to_owned()
        }
        _ => e.to_string(),
    };
    Err(BootstrapError::io(format!("{}: {why}", what(a)), e))
}

/// `127.0.0.1`, for the servers of the job-local rendezvous.
pub(crate) const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Whether `ip` is link-local (IPv4 `169.254/16`, IPv6 `fe80::/10`).
pub(crate) fn is_link_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => a.is_unicast_link_local(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> HostPort {
        parse_host_port(s, "address", "[::1]:2000").unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn err(s: &str) -> String {
        let e = parse_host_port(s, "address", "[::1]:2000").expect_err(s);
        assert_eq!(e.kind(), &super::super::BootstrapErrorKind::Address);
        e.to_string()
    }

    #[test]
    fn shapes() {
        let hp = ok("127.0.0.1:5000");
        assert_eq!(
            (hp.host, hp.port, hp.bracketed),
            (Host::Ip(LOOPBACK), 5000, false)
        );
        assert_eq!(
            ok("node-01.cluster.local:02000").host,
            Host::Name("node-01.cluster.local".into())
        );
        assert_eq!(ok("node-01.cluster.local:02000").port, 2000);
        let hp = ok("[fe80::1%eth0]:7000");
        assert_eq!((hp.scope.as_deref(), hp.bracketed), (Some("eth0"), true));
        assert_eq!(ok("[fe80::1%3]:7000").scope.as_deref(), Some("3"));
        assert_eq!(ok("[localhost]:1").host, Host::Name("localhost".into()));
        assert!(parse_host_port(&format!("{}:1", "a".repeat(253)), "a", "").is_ok());
    }

    #[test]
    fn rejections_say_why() {
        assert!(err("").contains("empty"));
        for s in ["127.0.0.1", "[::1]"] {
            assert!(err(s).contains("no :port"), "{s}");
        }
        for s in ["::1:2000", "a:b:2000", "tcp://x:1"] {
            assert!(
                err(s).contains("needs brackets, as in [::1]:2000"),
                "{s}: {}",
                err(s)
            );
        }
        assert!(err("[::1:2000").contains("without ']'"));
        assert!(err("[::1]x:2000").contains("text follows"));
        assert!(err(":2000").contains("empty host") && err("[]:2000").contains("empty host"));
        for s in ["ho st:1", "ho_st:1", "hôst:1", "1.2.3.4%eth0:1"] {
            assert!(err(s).contains("neither an IP address"), "{s}: {}", err(s));
        }
        assert!(err(&format!("{}:1", "a".repeat(254))).contains("253"));
        for s in [
            "[fe80::1%]:1",
            "[fe80::1%a/b]:1",
            "[fe80::1%averyveryverylongname]:1",
            "[1.2.3.4%2]:1",
        ] {
            assert!(err(s).contains("%scope"), "{s}");
        }
        for p in [
            "65536",
            "",
            "+2000",
            "-2000",
            " 2000",
            "2000 ",
            "20a0",
            "0x800",
            "99999999999999",
        ] {
            assert!(
                err(&format!("h:{p}")).contains("not a decimal number"),
                "{p:?}"
            );
        }
    }

    #[test]
    fn resolution_orders_families() {
        assert_eq!(
            ok("127.0.0.1:5000").resolve().unwrap(),
            vec!["127.0.0.1:5000".parse().unwrap()]
        );
        let v = ok("localhost:5000").resolve().expect("localhost resolves");
        assert!(
            v[0].is_ipv4() && v.iter().all(|a| a.port() == 5000 && a.ip().is_loopback()),
            "{v:?}"
        );
        let first_v6 = v.iter().position(SocketAddr::is_ipv6).unwrap_or(v.len());
        assert!(
            v[first_v6..].iter().all(SocketAddr::is_ipv6),
            "IPv4 first: {v:?}"
        );
        match ok("[localhost]:5000").resolve() {
            Ok(v) => assert!(v.iter().all(SocketAddr::is_ipv6), "{v:?}"),
            Err(e) => assert!(e.to_string().contains("no IPv6 address"), "{e}"),
        }
        let v = ok("[fe80::1%lo]:5000").resolve().expect("lo exists");
        assert!(matches!(v[0], SocketAddr::V6(a) if a.scope_id() != 0));
        let e = ok("[fe80::1%nonexistent0]:5000").resolve().unwrap_err();
        assert!(
            e.to_string().contains("nonexistent0") && std::error::Error::source(&e).is_some(),
            "{e}"
        );
        let e = ok("no-such-host.invalid:5000").resolve().unwrap_err();
        assert!(
            e.to_string().contains("cannot resolve") && std::error::Error::source(&e).is_some(),
            "{e}"
        );
    }

    #[test]
    fn a_bind_waits_for_a_socket_connected_to_itself_to_be_reset_and_no_other_occupant() {
        let (s, a) = crate::bootstrap::tests::self_connected_socket();
        assert!(
            self_connected(a.port()),
            "/proc/net/tcp shows the self-connection"
        );
        let reset = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            rustix::net::sockopt::set_socket_linger(&s, Some(Duration::ZERO)).expect("linger");
        });
        let (l, at) = bind_first(&[a], true, |a| format!("bind {a}"))
            .expect("bound once the self-connection is reset");
        assert_eq!(at, a);
        reset.join().expect("reset");
        assert!(!self_connected(a.port()));
        // A listener is another occupant: the bind fails at once.
        let t = Instant::now();
        let e = bind_first(&[a], true, |a| format!("bind {a}")).expect_err("taken");
        assert!(e.to_string().contains("in use"), "{e}");
        assert!(t.elapsed() < SELF_CONNECTED_WAIT, "did not wait");
        drop(l);
    }

    #[test]
    fn bind_reuses_and_listens_on_request() {
        let l = bind("127.0.0.1:0".parse().unwrap(), false).expect("bind");
        assert!(
            !rustix::net::sockopt::socket_acceptconn(&l).unwrap(),
            "bound, not listening"
        );
        let a = l.local_addr().unwrap();
        drop(l);
        let l = bind(a, true).expect("rebind the same port");
        assert!(rustix::net::sockopt::socket_acceptconn(&l).unwrap());
        assert!(bind(a, true).is_err(), "the port is taken while listening");
    }
}
