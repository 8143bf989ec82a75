//! Parsing of CANN `ip_port` strings: where PE 0's config-store server listens.
//!
//! Accepted shapes (CANN's `is_valid_ip_port_url`):
//!
//! * `tcp://HOST:PORT`, split at the **last** `:`; `HOST` is a dotted IPv4 address or a host
//!   name of at most 253 characters out of `[A-Za-z0-9.-]`;
//! * `tcp6://[HOST]:PORT`; `HOST` is an IPv6 address (no zone id) or a host name, which then
//!   resolves to IPv6 addresses only. An IPv4 address inside the brackets is rejected.
//!
//! `PORT` is decimal ASCII digits (no sign, no blanks). [`parse_url`] needs
//! `1024 < PORT <= 65535`; [`parse_template`] takes the same shapes with port exactly `0`, the
//! multi-instance template that [`select_instance_port`] rewrites.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// Longest host name CANN accepts.
pub(crate) const MAX_HOSTNAME_LEN: usize = 253;

/// The host part of a bootstrap URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    /// A literal IPv4 address.
    Ipv4(Ipv4Addr),
    /// A literal IPv6 address (only inside `tcp6://[...]`).
    Ipv6(Ipv6Addr),
    /// A host name, resolved with the system resolver when used.
    Name(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Ipv4(a) => a.fmt(f),
            Host::Ipv6(a) => a.fmt(f),
            Host::Name(n) => f.write_str(n),
        }
    }
}

/// Which address family the scheme asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum FamilyHint {
    /// `tcp://`: IPv4 addresses first, then any IPv6 addresses a host name also has.
    Tcp,
    /// `tcp6://`: IPv6 addresses only.
    Tcp6,
}

/// A parsed `tcp://host:port` or `tcp6://[host]:port`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BootstrapUrl {
    /// Address or name of PE 0's machine.
    pub(crate) host: Host,
    /// TCP port of PE 0's server (0 only in a multi-instance template).
    pub(crate) port: u16,
    /// The scheme: which address family to use.
    pub(crate) family_hint: FamilyHint,
}

impl fmt::Display for BootstrapUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.family_hint {
            FamilyHint::Tcp => write!(f, "tcp://{}:{}", self.host, self.port),
            FamilyHint::Tcp6 => write!(f, "tcp6://[{}]:{}", self.host, self.port),
        }
    }
}

/// Why an `ip_port` string, a port range or a port selection was rejected. The C API maps
/// every variant to `ACLSHMEM_INVALID_VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    /// The string is empty.
    #[error("the bootstrap address is empty (expected tcp://host:port or tcp6://[host]:port)")]
    Empty,
    /// Neither `tcp://` nor `tcp6://`.
    #[error("bootstrap address {url:?} must start with tcp:// or tcp6://")]
    UnknownScheme {
        /// The rejected string.
        url: String,
    },
    /// No `:port` after the host.
    #[error("bootstrap address {url:?} has no :port after the host")]
    MissingPort {
        /// The rejected string.
        url: String,
    },
    /// `tcp6://` without `[host]`, or with text other than `:port` after `]`.
    #[error(
        "bootstrap address {url:?}: tcp6:// needs the host in brackets, as in tcp6://[::1]:port"
    )]
    Tcp6Brackets {
        /// The rejected string.
        url: String,
    },
    /// Nothing between `//` (or the brackets) and `:port`.
    #[error("bootstrap address {url:?} has an empty host")]
    EmptyHost {
        /// The rejected string.
        url: String,
    },
    /// An IPv6 address (or anything with a `:`) after `tcp://`.
    #[error("bootstrap address {url:?}: an IPv6 address needs the form tcp6://[address]:port")]
    Ipv6NeedsTcp6 {
        /// The rejected string.
        url: String,
    },
    /// An IPv4 address inside `tcp6://[...]`.
    #[error("bootstrap address {url:?}: {host} is an IPv4 address; use tcp://{host}:port")]
    Ipv4InTcp6 {
        /// The rejected string.
        url: String,
        /// The IPv4 address found in the brackets.
        host: String,
    },
    /// A host name longer than 253 characters.
    #[error("bootstrap address: host name of {len} characters is longer than the limit of 253")]
    HostTooLong {
        /// Its length.
        len: usize,
    },
    /// A host that is no address and has characters outside `[A-Za-z0-9.-]`.
    #[error(
        "bootstrap address {url:?}: host {host:?} is neither an IP address nor a host name of [A-Za-z0-9.-]"
    )]
    BadHost {
        /// The rejected string.
        url: String,
        /// The host part.
        host: String,
    },
    /// The port is not a decimal number in 0..=65535.
    #[error("bootstrap address {url:?}: port {port:?} is not a decimal number in 0..=65535")]
    BadPort {
        /// The rejected string.
        url: String,
        /// The port part.
        port: String,
    },
    /// [`parse_url`]: the port is 1024 or lower.
    #[error("bootstrap address {url:?}: port {port} must be above 1024 (and at most 65535)")]
    PortOutOfRange {
        /// The rejected string.
        url: String,
        /// The port.
        port: u16,
    },
    /// [`parse_template`] / [`select_instance_port`]: a multi-instance template must have port 0.
    #[error(
        "bootstrap address {url:?}: with multi-instance ports from SHMEM_INSTANCE_PORT_RANGE the port must be 0, not {port}"
    )]
    TemplatePortNotZero {
        /// The rejected string.
        url: String,
        /// The port found.
        port: u16,
    },
    /// `SHMEM_INSTANCE_PORT_RANGE` is not set.
    #[error(
        "SHMEM_INSTANCE_PORT_RANGE is not set; a non-zero instance with a tcp:// address needs it (start:end)"
    )]
    PortRangeMissing,
    /// `SHMEM_INSTANCE_PORT_RANGE` has no `:`.
    #[error("SHMEM_INSTANCE_PORT_RANGE={range:?} must have the form start:end")]
    PortRangeNoColon {
        /// The variable's value.
        range: String,
    },
    /// The start of the range is not a port number.
    #[error(
        "SHMEM_INSTANCE_PORT_RANGE={range:?}: start {start:?} is not a decimal number in 0..=65535"
    )]
    PortRangeBadStart {
        /// The variable's value.
        range: String,
        /// The start part.
        start: String,
    },
    /// The end of the range is not a port number.
    #[error(
        "SHMEM_INSTANCE_PORT_RANGE={range:?}: end {end:?} is not a decimal number in 0..=65535"
    )]
    PortRangeBadEnd {
        /// The variable's value.
        range: String,
        /// The end part.
        end: String,
    },
    /// The end of the range is below its start.
    #[error("SHMEM_INSTANCE_PORT_RANGE: end {end} is below start {start}")]
    PortRangeReversed {
        /// Start port.
        start: u16,
        /// End port.
        end: u16,
    },
    /// The instance id does not fit the range.
    #[error(
        "instance id {id} is above {max}, the most SHMEM_INSTANCE_PORT_RANGE={start}:{end} allows (port = start + id)"
    )]
    InstanceIdOutOfRange {
        /// The instance id.
        id: u64,
        /// Start port.
        start: u16,
        /// End port.
        end: u16,
        /// `end - start`.
        max: u64,
    },
    /// [`select_instance_port`] got an empty `ip_port`.
    #[error("ip_port is empty; a multi-instance init needs a template such as tcp://192.168.0.1:0")]
    EmptyIpPort,
    /// A `tcp6://` template without `]:` followed by a port.
    #[error("ip_port {ip_port:?}: a tcp6:// template needs the form tcp6://[address]:0")]
    TemplateTcp6Malformed {
        /// The template.
        ip_port: String,
    },
    /// A `tcp://` template without a second `:`.
    #[error("ip_port {ip_port:?} has no :port (expected tcp://host:0)")]
    TemplateMissingPort {
        /// The template.
        ip_port: String,
    },
    /// The template's port is not a decimal number in 0..=65535.
    #[error("ip_port {ip_port:?}: port {port:?} is not a decimal number in 0..=65535")]
    TemplateBadPort {
        /// The template.
        ip_port: String,
        /// The port part.
        port: String,
    },
}

/// Parses a decimal port strictly: ASCII digits only, the whole string, 0..=65535.
fn parse_port_strict(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().and_then(|p| u16::try_from(p).ok())
}

fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
}

/// Shape parsing shared by [`parse_url`] and [`parse_template`]; the port is not range-checked.
fn parse_shape(s: &str) -> Result<BootstrapUrl, UrlError> {
    if s.is_empty() {
        return Err(UrlError::Empty);
    }
    let url = || s.to_owned();
    if let Some(rest) = s.strip_prefix("tcp6://") {
        let inner = rest
            .strip_prefix('[')
            .ok_or_else(|| UrlError::Tcp6Brackets { url: url() })?;
        let close = inner
            .find(']')
            .ok_or_else(|| UrlError::Tcp6Brackets { url: url() })?;
        let host_str = &inner[..close];
        let after = &inner[close + 1..];
        let port_str = after.strip_prefix(':').ok_or_else(|| {
            if after.is_empty() {
                UrlError::MissingPort { url: url() }
            } else {
                UrlError::Tcp6Brackets { url: url() }
            }
        })?;
        if host_str.is_empty() {
            return Err(UrlError::EmptyHost { url: url() });
        }
        let host = if let Ok(a) = host_str.parse::<Ipv6Addr>() {
            Host::Ipv6(a)
        } else if host_str.parse::<Ipv4Addr>().is_ok() {
            return Err(UrlError::Ipv4InTcp6 {
                url: url(),
                host: host_str.to_owned(),
            });
        } else {
            check_hostname(s, host_str)?
        };
        let port = parse_port_strict(port_str).ok_or_else(|| UrlError::BadPort {
            url: url(),
            port: port_str.to_owned(),
        })?;
        Ok(BootstrapUrl {
            host,
            port,
            family_hint: FamilyHint::Tcp6,
        })
    } else if let Some(rest) = s.strip_prefix("tcp://") {
        let (host_str, port_str) = rest
            .rsplit_once(':')
            .ok_or_else(|| UrlError::MissingPort { url: url() })?;
        if host_str.is_empty() {
            return Err(UrlError::EmptyHost { url: url() });
        }
        let host = if let Ok(a) = host_str.parse::<Ipv4Addr>() {
            Host::Ipv4(a)
        } else if host_str.contains(':') || host_str.starts_with('[') {
            return Err(UrlError::Ipv6NeedsTcp6 { url: url() });
        } else {
            check_hostname(s, host_str)?
        };
        let port = parse_port_strict(port_str).ok_or_else(|| UrlError::BadPort {
            url: url(),
            port: port_str.to_owned(),
        })?;
        Ok(BootstrapUrl {
            host,
            port,
            family_hint: FamilyHint::Tcp,
        })
    } else {
        Err(UrlError::UnknownScheme { url: url() })
    }
}

fn check_hostname(url: &str, host: &str) -> Result<Host, UrlError> {
    if host.len() > MAX_HOSTNAME_LEN {
        return Err(UrlError::HostTooLong { len: host.len() });
    }
    if !is_hostname(host) {
        return Err(UrlError::BadHost {
            url: url.to_owned(),
            host: host.to_owned(),
        });
    }
    Ok(Host::Name(host.to_owned()))
}

/// Parses an `ip_port` of a running job: `tcp://host:port` or `tcp6://[host]:port` with
/// `1024 < port <= 65535` (CANN's `is_valid_ip_port_url`).
pub(crate) fn parse_url(s: &str) -> Result<BootstrapUrl, UrlError> {
    let u = parse_shape(s)?;
    if u.port <= 1024 {
        return Err(UrlError::PortOutOfRange {
            url: s.to_owned(),
            port: u.port,
        });
    }
    Ok(u)
}

#[cfg(test)]
/// Parses a multi-instance template: the shapes of [`parse_url`] with port exactly 0.
pub(crate) fn parse_template(s: &str) -> Result<BootstrapUrl, UrlError> {
    let u = parse_shape(s)?;
    if u.port != 0 {
        return Err(UrlError::TemplatePortNotZero {
            url: s.to_owned(),
            port: u.port,
        });
    }
    Ok(u)
}

/// CANN's `aclshmemi_instance_port_selection`: rewrites the template `ip_port` (port 0) to
/// port `start + instance_id`, where `range` is the value of `SHMEM_INSTANCE_PORT_RANGE`
/// (`None` when the variable is not set).
///
/// The checks and their order are CANN's: the range is `start:end` split at the first `:`,
/// both strict decimal ports, `end >= start`, `instance_id <= end - start`; then `ip_port`
/// must be non-empty; for `tcp6://` the port follows `]:`, otherwise it follows the second
/// `:` of the string; that port must be exactly 0. Like CANN, the scheme and host are not
/// validated here: pass the result through [`parse_url`] (which also needs the port above
/// 1024). CANN calls this only for instances other than 0.
pub(crate) fn select_instance_port(
    ip_port: &str,
    instance_id: u64,
    range: Option<&str>,
) -> Result<String, UrlError> {
    let range = range.ok_or(UrlError::PortRangeMissing)?;
    let (start_s, end_s) = range
        .split_once(':')
        .ok_or_else(|| UrlError::PortRangeNoColon {
            range: range.to_owned(),
        })?;
    let start = parse_port_strict(start_s).ok_or_else(|| UrlError::PortRangeBadStart {
        range: range.to_owned(),
        start: start_s.to_owned(),
    })?;
    let end = parse_port_strict(end_s).ok_or_else(|| UrlError::PortRangeBadEnd {
        range: range.to_owned(),
        end: end_s.to_owned(),
    })?;
    if end < start {
        return Err(UrlError::PortRangeReversed { start, end });
    }
    let max = u64::from(end - start);
    if instance_id > max {
        return Err(UrlError::InstanceIdOutOfRange {
            id: instance_id,
            start,
            end,
            max,
        });
    }
    // Cannot overflow: instance_id <= end - start, so start + instance_id <= end <= 65535.
    let port = u64::from(start) + instance_id;
    if ip_port.is_empty() {
        return Err(UrlError::EmptyIpPort);
    }
    let pos = if ip_port.starts_with("tcp6://") {
        let close = ip_port
            .find(']')
            .ok_or_else(|| UrlError::TemplateTcp6Malformed {
                ip_port: ip_port.to_owned(),
            })?;
        let pos = close + 1;
        if ip_port.as_bytes().get(pos) != Some(&b':') || pos + 1 >= ip_port.len() {
            return Err(UrlError::TemplateTcp6Malformed {
                ip_port: ip_port.to_owned(),
            });
        }
        pos
    } else {
        let first = ip_port
            .find(':')
            .ok_or_else(|| UrlError::TemplateMissingPort {
                ip_port: ip_port.to_owned(),
            })?;
        let second =
            ip_port[first + 1..]
                .find(':')
                .ok_or_else(|| UrlError::TemplateMissingPort {
                    ip_port: ip_port.to_owned(),
                })?;
        first + 1 + second
    };
    let port_s = &ip_port[pos + 1..];
    let input_port = parse_port_strict(port_s).ok_or_else(|| UrlError::TemplateBadPort {
        ip_port: ip_port.to_owned(),
        port: port_s.to_owned(),
    })?;
    if input_port != 0 {
        return Err(UrlError::TemplatePortNotZero {
            url: ip_port.to_owned(),
            port: input_port,
        });
    }
    Ok(format!("{}:{}", &ip_port[..pos], port))
}

/// Resolves the URL to socket addresses, in the order to try them: `tcp6://` yields IPv6
/// addresses only; `tcp://` yields IPv4 addresses first, then IPv6 ones of a host name.
pub(crate) fn resolve(url: &BootstrapUrl) -> io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = match &url.host {
        Host::Ipv4(a) => vec![SocketAddr::new(IpAddr::V4(*a), url.port)],
        Host::Ipv6(a) => vec![SocketAddr::new(IpAddr::V6(*a), url.port)],
        Host::Name(n) => {
            let mut v: Vec<SocketAddr> = (n.as_str(), url.port).to_socket_addrs()?.collect();
            match url.family_hint {
                FamilyHint::Tcp6 => v.retain(SocketAddr::is_ipv6),
                // Stable: keeps the resolver's order within each family.
                FamilyHint::Tcp => v.sort_by_key(SocketAddr::is_ipv6),
            }
            v.dedup();
            v
        }
    };
    if addrs.is_empty() {
        let fam = match url.family_hint {
            FamilyHint::Tcp6 => "IPv6 ",
            FamilyHint::Tcp => "",
        };
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("host {} has no {fam}address", url.host),
        ));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> BootstrapUrl {
        parse_url(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    #[test]
    fn ipv4() {
        let u = ok("tcp://127.0.0.1:5000");
        assert_eq!(u.host, Host::Ipv4(Ipv4Addr::LOCALHOST));
        assert_eq!(u.port, 5000);
        assert_eq!(u.family_hint, FamilyHint::Tcp);
        assert_eq!(u.to_string(), "tcp://127.0.0.1:5000");
    }

    #[test]
    fn ipv6() {
        let u = ok("tcp6://[::1]:65535");
        assert_eq!(u.host, Host::Ipv6(Ipv6Addr::LOCALHOST));
        assert_eq!(u.port, 65535);
        assert_eq!(u.family_hint, FamilyHint::Tcp6);
        assert_eq!(u.to_string(), "tcp6://[::1]:65535");
        let u = ok("tcp6://[fe80::1:2:3]:2000");
        assert_eq!(u.host, Host::Ipv6("fe80::1:2:3".parse().unwrap()));
    }

    #[test]
    fn hostname() {
        let u = ok("tcp://node-01.cluster.local:1025");
        assert_eq!(u.host, Host::Name("node-01.cluster.local".into()));
        assert_eq!(u.port, 1025);
        let u = ok("tcp6://[localhost]:3000");
        assert_eq!(u.host, Host::Name("localhost".into()));
        assert_eq!(u.family_hint, FamilyHint::Tcp6);
        let long = "a".repeat(253);
        assert!(parse_url(&format!("tcp://{long}:2000")).is_ok());
        let too_long = "a".repeat(254);
        assert_eq!(
            parse_url(&format!("tcp://{too_long}:2000")),
            Err(UrlError::HostTooLong { len: 254 })
        );
    }

    #[test]
    fn port_rules() {
        assert!(matches!(
            parse_url("tcp://1.2.3.4:1024"),
            Err(UrlError::PortOutOfRange { port: 1024, .. })
        ));
        assert!(matches!(
            parse_url("tcp://1.2.3.4:0"),
            Err(UrlError::PortOutOfRange { port: 0, .. })
        ));
        assert!(parse_url("tcp://1.2.3.4:1025").is_ok());
        assert!(parse_url("tcp://1.2.3.4:65535").is_ok());
        for bad in [
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
            let s = format!("tcp://1.2.3.4:{bad}");
            assert!(
                matches!(parse_url(&s), Err(UrlError::BadPort { .. })),
                "{s:?}"
            );
        }
        // Leading zeros are still decimal.
        assert_eq!(ok("tcp://1.2.3.4:02000").port, 2000);
    }

    #[test]
    fn split_at_last_colon() {
        // The host "a:b" contains a colon: not IPv4, not a host name.
        assert!(matches!(
            parse_url("tcp://a:b:2000"),
            Err(UrlError::Ipv6NeedsTcp6 { .. })
        ));
        assert!(matches!(
            parse_url("tcp://::1:2000"),
            Err(UrlError::Ipv6NeedsTcp6 { .. })
        ));
        assert!(matches!(
            parse_url("tcp://[::1]:2000"),
            Err(UrlError::Ipv6NeedsTcp6 { .. })
        ));
    }

    #[test]
    fn shape_errors() {
        assert_eq!(parse_url(""), Err(UrlError::Empty));
        assert!(matches!(
            parse_url("udp://1.2.3.4:2000"),
            Err(UrlError::UnknownScheme { .. })
        ));
        assert!(matches!(
            parse_url("1.2.3.4:2000"),
            Err(UrlError::UnknownScheme { .. })
        ));
        assert!(matches!(
            parse_url("TCP://1.2.3.4:2000"),
            Err(UrlError::UnknownScheme { .. })
        ));
        assert!(matches!(
            parse_url("tcp://1.2.3.4"),
            Err(UrlError::MissingPort { .. })
        ));
        assert!(matches!(
            parse_url("tcp://:2000"),
            Err(UrlError::EmptyHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp://ho_st:2000"),
            Err(UrlError::BadHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp://ho st:2000"),
            Err(UrlError::BadHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp://hôst:2000"),
            Err(UrlError::BadHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://::1:2000"),
            Err(UrlError::Tcp6Brackets { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[::1:2000"),
            Err(UrlError::Tcp6Brackets { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[::1]x:2000"),
            Err(UrlError::Tcp6Brackets { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[::1]"),
            Err(UrlError::MissingPort { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[]:2000"),
            Err(UrlError::EmptyHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[1.2.3.4]:2000"),
            Err(UrlError::Ipv4InTcp6 { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[::1%eth0]:2000"),
            Err(UrlError::BadHost { .. })
        ));
        assert!(matches!(
            parse_url("tcp6://[::1]:70000"),
            Err(UrlError::BadPort { .. })
        ));
    }

    #[test]
    fn template() {
        let u = parse_template("tcp://10.0.0.1:0").unwrap();
        assert_eq!(u.port, 0);
        assert!(parse_template("tcp6://[::1]:0").is_ok());
        assert!(matches!(
            parse_template("tcp://10.0.0.1:2000"),
            Err(UrlError::TemplatePortNotZero { port: 2000, .. })
        ));
        assert!(matches!(
            parse_template("tcp://10.0.0.1"),
            Err(UrlError::MissingPort { .. })
        ));
    }

    #[test]
    fn instance_port_selection() {
        let r = Some("20000:21023");
        assert_eq!(
            select_instance_port("tcp://10.0.0.1:0", 1, r).unwrap(),
            "tcp://10.0.0.1:20001"
        );
        assert_eq!(
            select_instance_port("tcp://10.0.0.1:0", 1023, r).unwrap(),
            "tcp://10.0.0.1:21023"
        );
        assert_eq!(
            select_instance_port("tcp6://[::1]:0", 5, r).unwrap(),
            "tcp6://[::1]:20005"
        );
        assert_eq!(
            select_instance_port("tcp://node:0", 0, r).unwrap(),
            "tcp://node:20000"
        );
        assert_eq!(
            select_instance_port("tcp://node:00", 2, Some("1024:2047")).unwrap(),
            "tcp://node:1026"
        );
        // Every result parses as a real URL.
        assert!(parse_url(&select_instance_port("tcp6://[::1]:0", 5, r).unwrap()).is_ok());
        // Edge of the range; a single-port range.
        assert_eq!(
            select_instance_port("tcp://h:0", 0, Some("3000:3000")).unwrap(),
            "tcp://h:3000"
        );
        assert_eq!(
            select_instance_port("tcp://h:0", 0, Some("65535:65535")).unwrap(),
            "tcp://h:65535"
        );
    }

    #[test]
    fn instance_port_selection_errors() {
        let t = "tcp://10.0.0.1:0";
        assert_eq!(
            select_instance_port(t, 1, None),
            Err(UrlError::PortRangeMissing)
        );
        assert!(matches!(
            select_instance_port(t, 1, Some("20000")),
            Err(UrlError::PortRangeNoColon { .. })
        ));
        assert!(matches!(
            select_instance_port(t, 1, Some("")),
            Err(UrlError::PortRangeNoColon { .. })
        ));
        for bad in [
            ":2000",
            "x:2000",
            "-1:2000",
            "65536:70000",
            " 1:2000",
            "+1:2000",
        ] {
            assert!(
                matches!(
                    select_instance_port(t, 1, Some(bad)),
                    Err(UrlError::PortRangeBadStart { .. })
                ),
                "{bad:?}"
            );
        }
        for bad in [
            "2000:",
            "2000:x",
            "2000:65536",
            "2000:3000:4000",
            "2000:3000 ",
        ] {
            assert!(
                matches!(
                    select_instance_port(t, 1, Some(bad)),
                    Err(UrlError::PortRangeBadEnd { .. })
                ),
                "{bad:?}"
            );
        }
        assert_eq!(
            select_instance_port(t, 1, Some("3000:2000")),
            Err(UrlError::PortRangeReversed {
                start: 3000,
                end: 2000
            })
        );
        assert_eq!(
            select_instance_port(t, 11, Some("2000:2010")),
            Err(UrlError::InstanceIdOutOfRange {
                id: 11,
                start: 2000,
                end: 2010,
                max: 10
            })
        );
        assert!(select_instance_port(t, 10, Some("2000:2010")).is_ok());
        assert!(matches!(
            select_instance_port(t, u64::MAX, Some("0:65535")),
            Err(UrlError::InstanceIdOutOfRange { .. })
        ));
        // Range errors come before ip_port errors, as in CANN.
        assert_eq!(
            select_instance_port("", 1, None),
            Err(UrlError::PortRangeMissing)
        );
        assert_eq!(
            select_instance_port("", 1, Some("2000:3000")),
            Err(UrlError::EmptyIpPort)
        );
        let r = Some("2000:3000");
        for bad in [
            "tcp6://::1:0",
            "tcp6://[::1]0",
            "tcp6://[::1]:",
            "tcp6://[::1]",
        ] {
            assert!(
                matches!(
                    select_instance_port(bad, 1, r),
                    Err(UrlError::TemplateTcp6Malformed { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            select_instance_port("tcp//10.0.0.1", 1, r),
            Err(UrlError::TemplateMissingPort { .. })
        ));
        assert!(matches!(
            select_instance_port("tcp://10.0.0.1", 1, r),
            Err(UrlError::TemplateMissingPort { .. })
        ));
        assert!(matches!(
            select_instance_port("tcp://10.0.0.1:", 1, r),
            Err(UrlError::TemplateBadPort { .. })
        ));
        assert!(matches!(
            select_instance_port("tcp://10.0.0.1:0x", 1, r),
            Err(UrlError::TemplateBadPort { .. })
        ));
        assert!(matches!(
            select_instance_port("tcp://h:1:0", 1, r),
            Err(UrlError::TemplateBadPort { .. })
        ));
        assert!(matches!(
            select_instance_port("tcp://10.0.0.1:5000", 1, r),
            Err(UrlError::TemplatePortNotZero { port: 5000, .. })
        ));
        assert!(matches!(
            select_instance_port("tcp6://[::1]:7", 1, r),
            Err(UrlError::TemplatePortNotZero { port: 7, .. })
        ));
    }

    #[test]
    fn resolve_orders_families() {
        let v = resolve(&ok("tcp://127.0.0.1:5000")).unwrap();
        assert_eq!(v, vec!["127.0.0.1:5000".parse().unwrap()]);
        let v = resolve(&ok("tcp6://[::1]:5000")).unwrap();
        assert_eq!(v, vec!["[::1]:5000".parse().unwrap()]);
        let v = resolve(&ok("tcp://localhost:5000")).unwrap();
        assert!(!v.is_empty());
        let first_v6 = v.iter().position(SocketAddr::is_ipv6).unwrap_or(v.len());
        assert!(
            v[first_v6..].iter().all(SocketAddr::is_ipv6),
            "IPv4 first: {v:?}"
        );
        assert!(v.iter().all(|a| a.port() == 5000));
        match resolve(&ok("tcp6://[localhost]:5000")) {
            Ok(v) => assert!(v.iter().all(SocketAddr::is_ipv6), "{v:?}"),
            Err(e) => println!("note: localhost has no IPv6 address here: {e}"),
        }
        assert!(resolve(&ok("tcp://no-such-host.invalid:5000")).is_err());
    }

    #[test]
    fn error_messages_name_the_input() {
        let e = parse_url("tcp://1.2.3.4:80").unwrap_err().to_string();
        assert!(e.contains("tcp://1.2.3.4:80") && e.contains("1024"), "{e}");
        let e = select_instance_port("tcp://h:0", 9, Some("100:105"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("instance id 9") && e.contains("100:105"), "{e}");
    }
}
