//! CANN's `ip_port`: where PE 0's config-store server listens, and which port each instance
//! gets from `SHMEM_INSTANCE_PORT_RANGE`.
//!
//! Accepted shapes (CANN's `is_valid_ip_port_url`): `tcp://HOST:PORT`, split at the **last**
//! `:`, where `HOST` is a dotted IPv4 address or a host name; and `tcp6://[HOST]:PORT`, where
//! `HOST` is an IPv6 address (no scope) or a host name, which then resolves to IPv6 addresses
//! only. `PORT` must satisfy `1024 < PORT <= 65535`. See [`super::addr`] for the host rules.

use std::net::IpAddr;

use super::addr::{self, Host, HostPort};
use super::error::BootstrapError;
use crate::attr::Attributes;

/// The variable that gives non-zero instances their ports (`start:end`).
pub(crate) const PORT_RANGE_ENV: &str = "SHMEM_INSTANCE_PORT_RANGE";

/// A parsed `tcp://host:port` or `tcp6://[host]:port`: its host, port, and `tcp6://` as the
/// brackets.
pub(crate) type BootstrapUrl = HostPort;

/// Parses an `ip_port` of a running job (CANN's `is_valid_ip_port_url`).
pub(crate) fn parse_url(s: &str) -> Result<BootstrapUrl, BootstrapError> {
    let err = |why: &str| {
        Err(BootstrapError::address(format!(
            "bootstrap address {s:?} {why}"
        )))
    };
    let (rest, tcp6) = if let Some(r) = s.strip_prefix("tcp6://") {
        (r, true)
    } else if let Some(r) = s.strip_prefix("tcp://") {
        (r, false)
    } else if s.is_empty() {
        return Err(BootstrapError::address(
            "the bootstrap address is empty (expected tcp://host:port or tcp6://[host]:port)",
        ));
    } else {
        return err("must start with tcp:// or tcp6://");
    };
    let example = match tcp6 {
        true => "tcp6://[::1]:port",
        false => "tcp6://[address]:port, not tcp://",
    };
    let hp = addr::parse_host_port(rest, "bootstrap address", example)?;
    match (&hp.host, tcp6, hp.port) {
        _ if tcp6 && !hp.bracketed => err("needs the host in brackets, as in tcp6://[::1]:port"),
        _ if hp.scope.is_some() => err("has an IPv6 scope, which ip_port cannot carry"),
        (Host::Ip(IpAddr::V4(a)), true, _) => {
            err(&format!("holds the IPv4 address {a}; use tcp://{a}:port"))
        }
        _ if hp.bracketed && !tcp6 => {
            err("needs the form tcp6://[address]:port for an IPv6 address")
        }
        (.., port @ ..=1024) => err(&format!(
            "has port {port}, which must be above 1024 (and at most 65535)"
        )),
        _ => Ok(hp),
    }
}

/// CANN's `aclshmemi_instance_port_selection`: rewrites the template `ip_port` (port 0) to
/// port `start + instance_id`, where `range` is `start:end` (`None`: not configured).
///
/// The checks and their order are CANN's: the range is split at the first `:`, both strict
/// decimal ports, `end >= start`, `instance_id <= end - start`; then `ip_port` must be
/// non-empty; for `tcp6://` the port follows `]:`, otherwise the second `:` of the string;
/// that port must be exactly 0. The scheme and host are left to [`parse_url`].
pub(crate) fn select_instance_port(
    ip_port: &str,
    instance_id: u64,
    range: Option<&str>,
) -> Result<String, BootstrapError> {
    let env = PORT_RANGE_ENV;
    let bad = |m: String| Err(BootstrapError::invalid(m));
    let Some(range) = range else {
        return bad(format!(
            "{env} is not set; a non-zero instance with tcp:// needs it (start:end)"
        ));
    };
    let Some((start_s, end_s)) = range.split_once(':') else {
        return bad(format!("{env}={range:?} must have the form start:end"));
    };
    let port = |which: &str, p: &str| {
        let m = format!("{env}={range:?}: {which} {p:?} is not a port number");
        addr::parse_port(p).ok_or_else(|| BootstrapError::invalid(m))
    };
    let (start, end) = (port("start", start_s)?, port("end", end_s)?);
    if end < start {
        return bad(format!("{env}={range:?}: end {end} is below start {start}"));
    }
    let max = u64::from(end - start);
    if instance_id > max {
        let m = format!("instance id {instance_id} is above {max}, the most {env}={range} allows");
        return bad(format!("{m} (port = start + id)"));
    }
    if ip_port.is_empty() {
        return bad(
            "ip_port is empty; multi-instance needs a template such as tcp://10.0.0.1:0".into(),
        );
    }
    let pos = if ip_port.starts_with("tcp6://") {
        let pos = ip_port.find(']').map(|c| c + 1);
        pos.filter(|&p| ip_port.as_bytes().get(p) == Some(&b':') && p + 1 < ip_port.len())
    } else {
        ip_port.match_indices(':').nth(1).map(|(i, _)| i)
    };
    let Some(pos) = pos else {
        return bad(format!(
            "ip_port {ip_port:?} needs the form tcp://host:0 or tcp6://[address]:0"
        ));
    };
    let (template, p) = (&ip_port[..pos], &ip_port[pos + 1..]);
    match addr::parse_port(p) {
        // Cannot overflow: instance_id <= end - start, so start + instance_id <= end.
        Some(0) => Ok(format!("{template}:{}", u64::from(start) + instance_id)),
        Some(n) => bad(format!(
            "ip_port {ip_port:?} has port {n}: with ports from {env} it must be 0"
        )),
        None => bad(format!(
            "ip_port {ip_port:?} has port {p:?}, not a port number"
        )),
    }
}

/// PE 0's address in DEFAULT mode: `ip_port` for instance 0; for the others, the port that
/// `attrs.port_range` (else `SHMEM_INSTANCE_PORT_RANGE`) assigns. Errors of the range or the
/// template are of kind `Invalid`, errors of the address itself of kind `Address`.
pub(crate) fn default_address(attrs: &Attributes) -> Result<BootstrapUrl, BootstrapError> {
    let ip_port = match attrs.instance_id {
        0 => attrs.ip_port.clone(),
        id => {
            let env = || std::env::var(PORT_RANGE_ENV).ok();
            let range = attrs.port_range.clone().or_else(env);
            select_instance_port(&attrs.ip_port, id, range.as_deref())?
        }
    };
    parse_url(&ip_port)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::bootstrap::BootstrapErrorKind as Kind;

    fn ok(s: &str) -> BootstrapUrl {
        parse_url(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn err(s: &str) -> String {
        let e = parse_url(s).expect_err(s);
        assert_eq!(e.kind(), &Kind::Address, "{s}");
        e.to_string()
    }

    #[test]
    fn shapes_and_display() {
        let u = ok("tcp://127.0.0.1:5000");
        assert_eq!(
            (u.host.clone(), u.port, u.bracketed),
            (Host::Ip(Ipv4Addr::LOCALHOST.into()), 5000, false)
        );
        assert_eq!(u.to_string(), "tcp://127.0.0.1:5000");
        let u = ok("tcp6://[::1]:65535");
        assert_eq!(
            (u.host.clone(), u.bracketed),
            (Host::Ip(Ipv6Addr::LOCALHOST.into()), true)
        );
        assert_eq!(u.to_string(), "tcp6://[::1]:65535");
        assert_eq!(
            ok("tcp://node-01.cluster.local:1025").host,
            Host::Name("node-01.cluster.local".into())
        );
        assert!(ok("tcp6://[localhost]:3000").bracketed);
        assert_eq!(ok("tcp://1.2.3.4:02000").port, 2000);
        assert_eq!(
            BootstrapUrl::of("[::1]:7".parse().unwrap()).to_string(),
            "tcp6://[::1]:7"
        );
    }

    #[test]
    fn cann_rules() {
        assert!(err("").contains("empty"));
        for s in ["udp://1.2.3.4:2000", "1.2.3.4:2000", "TCP://1.2.3.4:2000"] {
            assert!(err(s).contains("must start with tcp://"), "{s}");
        }
        assert!(err("tcp://1.2.3.4:1024").contains("above 1024"));
        assert!(err("tcp://1.2.3.4:0").contains("above 1024"));
        assert!(
            parse_url("tcp://1.2.3.4:1025").is_ok() && parse_url("tcp://1.2.3.4:65535").is_ok()
        );
        assert!(err("tcp://1.2.3.4:65536").contains("not a decimal"));
        for s in ["tcp://::1:2000", "tcp://a:b:2000"] {
            assert!(err(s).contains("tcp6://[address]:port"), "{s}: {}", err(s));
        }
        assert!(err("tcp://[::1]:2000").contains("tcp6://[address]:port"));
        assert!(err("tcp6://::1:2000").contains("brackets"));
        assert!(err("tcp6://[1.2.3.4]:2000").contains("use tcp://1.2.3.4:port"));
        assert!(err("tcp6://[::1%eth0]:2000").contains("scope"));
        assert!(err("tcp6://[::1]").contains("no :port"));
        assert!(err("tcp://1.2.3.4").contains("no :port"));
        let e = err("tcp://1.2.3.4:80");
        assert!(e.contains("tcp://1.2.3.4:80") && e.contains("1024"), "{e}");
    }

    #[test]
    fn instance_port_selection() {
        let r = Some("20000:21023");
        let sel = |t: &str, id: u64, r: Option<&str>| select_instance_port(t, id, r).unwrap();
        assert_eq!(sel("tcp://10.0.0.1:0", 1, r), "tcp://10.0.0.1:20001");
        assert_eq!(sel("tcp://10.0.0.1:0", 1023, r), "tcp://10.0.0.1:21023");
        assert_eq!(sel("tcp6://[::1]:0", 5, r), "tcp6://[::1]:20005");
        assert_eq!(
            sel("tcp://node:00", 2, Some("1024:2047")),
            "tcp://node:1026"
        );
        assert_eq!(sel("tcp://h:0", 0, Some("65535:65535")), "tcp://h:65535");
        assert!(parse_url(&sel("tcp6://[::1]:0", 5, r)).is_ok());
    }

    #[test]
    fn instance_port_selection_errors_in_canns_order() {
        let t = "tcp://10.0.0.1:0";
        let err = |t: &str, id: u64, r: Option<&str>| {
            let e = select_instance_port(t, id, r).expect_err(t);
            assert_eq!(e.kind(), &Kind::Invalid);
            e.to_string()
        };
        assert!(err(t, 1, None).contains("SHMEM_INSTANCE_PORT_RANGE is not set"));
        for r in ["20000", ""] {
            assert!(err(t, 1, Some(r)).contains("start:end"), "{r:?}");
        }
        for r in [
            ":2000",
            "x:2000",
            "-1:2000",
            "65536:70000",
            " 1:2000",
            "+1:2000",
        ] {
            assert!(err(t, 1, Some(r)).contains("start"), "{r:?}");
        }
        for r in [
            "2000:",
            "2000:x",
            "2000:65536",
            "2000:3000:4000",
            "2000:3000 ",
        ] {
            assert!(err(t, 1, Some(r)).contains(": end"), "{r:?}");
        }
        assert!(err(t, 1, Some("3000:2000")).contains("below start"));
        let e = err(t, 11, Some("2000:2010"));
        assert!(
            e.contains("instance id 11") && e.contains("2000:2010"),
            "{e}"
        );
        assert!(select_instance_port(t, 10, Some("2000:2010")).is_ok());
        assert!(err(t, u64::MAX, Some("0:65535")).contains("above"));
        // Range errors come before ip_port errors, as in CANN.
        assert!(err("", 1, None).contains("not set"));
        assert!(err("", 1, Some("2000:3000")).contains("ip_port is empty"));
        let r = Some("2000:3000");
        for bad in [
            "tcp6://::1:0",
            "tcp6://[::1]0",
            "tcp6://[::1]:",
            "tcp6://[::1]",
        ] {
            assert!(err(bad, 1, r).contains("tcp6://[address]:0"), "{bad:?}");
        }
        assert!(err("tcp://10.0.0.1", 1, r).contains("tcp://host:0"));
        assert!(err("tcp://10.0.0.1:", 1, r).contains("not a port number"));
        assert!(err("tcp://h:1:0", 1, r).contains("not a port number"));
        assert!(err("tcp://10.0.0.1:5000", 1, r).contains("must be 0"));
        assert!(err("tcp6://[::1]:7", 1, r).contains("must be 0"));
    }

    #[test]
    fn the_default_address_comes_from_the_attributes() {
        let mut a = Attributes::new(0, 2, "tcp://127.0.0.1:0", 2 << 20);
        a.instance_id = 3;
        a.port_range = Some("30000:30010".into());
        assert_eq!(default_address(&a).unwrap().port, 30003);
        a.instance_id = 0;
        assert_eq!(default_address(&a).unwrap_err().kind(), &Kind::Address);
        a.ip_port = "tcp://127.0.0.1:4000".into();
        assert_eq!(default_address(&a).unwrap().port, 4000);
    }
}
