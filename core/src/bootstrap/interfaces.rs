//! Which address of this machine PE 0 serves a unique id on, when `SHMEM_UID_SESSION_ID`
//! does not say: the interface named by `SHMEM_UID_SOCK_IFNAME` (`ifname`, `ifname:inet4` or
//! `ifname:inet6`), or one chosen automatically.
//!
//! A named interface gives its IPv4 address if it has one (unless `:inet6` is asked for),
//! else a global IPv6 address, else a link-local one; any interface may be named, `lo`
//! included. Automatic choice skips interfaces named `lo*`, `docker*`, `veth*`, `br-*`,
//! `virbr*`, `tun*` or `tap*`, interfaces that are down, and loopback, link-local, unspecified
//! or multicast addresses, and prefers IPv4.

use std::net::IpAddr;

use super::addr::is_link_local;
use super::error::BootstrapError;

/// Name prefixes of interfaces that automatic selection skips.
const SKIPPED_PREFIXES: [&str; 7] = ["lo", "docker", "veth", "br-", "virbr", "tun", "tap"];

/// An address family asked for with `ifname:inet4` / `ifname:inet6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// IPv4.
    Inet4,
    /// IPv6.
    Inet6,
}

/// One entry of the interface list: an address of an interface, or (`ip == None`) an
/// interface seen without an IP address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IfAddr {
    /// The interface name.
    pub(crate) name: String,
    /// The address.
    pub(crate) ip: Option<IpAddr>,
    /// The IPv6 scope id (the interface index of a link-local address).
    pub(crate) scope_id: u32,
    /// Whether the interface is up.
    pub(crate) up: bool,
    /// Whether it is a loopback interface.
    pub(crate) loopback: bool,
}

/// `items` joined, or `none` for no item.
fn listed(items: Vec<String>, none: &str) -> String {
    match items.is_empty() {
        true => none.to_owned(),
        false => items.join(", "),
    }
}

/// Parses `SHMEM_UID_SOCK_IFNAME` syntax.
pub(crate) fn parse_ifname_spec(raw: &str) -> Result<(String, Option<Family>), BootstrapError> {
    let value = raw.trim();
    let bad = |why: String| {
        let m = format!(
            "unique-id interface {value:?} {why}; SHMEM_UID_SOCK_IFNAME takes ifname, ifname:inet4 or ifname:inet6"
        );
        Err(BootstrapError::address(m))
    };
    let (name, family) = match value.rsplit_once(':') {
        Some((n, "inet4")) => (n, Some(Family::Inet4)),
        Some((n, "inet6")) => (n, Some(Family::Inet6)),
        Some((_, other)) => return bad(format!("has {other:?}, which is not an address family")),
        None => (value, None),
    };
    if name.is_empty() {
        return bad("has no interface name".into());
    }
    Ok((name.to_owned(), family))
}

/// This machine's interfaces and their IP addresses, in `getifaddrs` order.
pub(crate) fn interface_addrs() -> Result<Vec<IfAddr>, BootstrapError> {
    use nix::net::if_::InterfaceFlags;
    let it = nix::ifaddrs::getifaddrs()
        .map_err(|e| BootstrapError::io("cannot list the network interfaces of this machine", e))?;
    Ok(it
        .map(|ifa| {
            let a = ifa.address.as_ref();
            let v4 = a
                .and_then(|a| a.as_sockaddr_in())
                .map(|v4| (v4.ip().into(), 0));
            let v6 = a.and_then(|a| a.as_sockaddr_in6());
            let ip = v4.or(v6.map(|v6| (v6.ip().into(), v6.scope_id())));
            IfAddr {
                name: ifa.interface_name.clone(),
                ip: ip.map(|(ip, _)| ip),
                scope_id: ip.map_or(0, |(_, scope)| scope),
                up: ifa.flags.contains(InterfaceFlags::IFF_UP),
                loopback: ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK),
            }
        })
        .collect())
}

/// The address (and scope id) of interface `name`, of `family` if given: IPv4, then global
/// IPv6, then link-local IPv6.
pub(crate) fn pick_for_interface(
    list: &[IfAddr],
    name: &str,
    family: Option<Family>,
) -> Result<(IpAddr, u32), BootstrapError> {
    let mine: Vec<&IfAddr> = list.iter().filter(|a| a.name == name).collect();
    if mine.is_empty() {
        let mut names: Vec<String> = list.iter().map(|a| a.name.clone()).collect();
        names.dedup();
        let names = listed(names, "no interfaces");
        return Err(BootstrapError::address(format!(
            "network interface {name:?} does not exist (this machine has: {names}); set \
             SHMEM_UID_SOCK_IFNAME to one of them, or SHMEM_UID_SESSION_ID to ip:port"
        )));
    }
    let fits = |ip: &IpAddr| family.is_none_or(|f| (f == Family::Inet4) == ip.is_ipv4());
    let ips = mine.iter().filter_map(|a| a.ip.map(|ip| (ip, a.scope_id)));
    let best = ips
        .filter(|(ip, _)| fits(ip))
        .min_by_key(|(ip, _)| (ip.is_ipv6(), is_link_local(ip)));
    if let Some(found) = best {
        return Ok(found);
    }
    let found = mine
        .iter()
        .filter_map(|a| a.ip.map(|ip| ip.to_string()))
        .collect();
    let found = listed(found, "no IP address");
    let family = match family {
        None => "IP",
        Some(Family::Inet4) => "IPv4",
        Some(Family::Inet6) => "IPv6",
    };
    Err(BootstrapError::address(format!(
        "network interface {name:?} has no {family} address (it has: {found}); ask for another \
         family (ifname:inet4 or ifname:inet6) or another interface"
    )))
}

/// Automatic selection: the first qualifying IPv4 address, else the first qualifying IPv6
/// one. Returns the interface name, the address and its scope id.
pub(crate) fn pick_auto(list: &[IfAddr]) -> Result<(String, IpAddr, u32), BootstrapError> {
    let mut skipped: Vec<String> = Vec::new();
    let mut best: Option<(&IfAddr, IpAddr)> = None;
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
        match why {
            Some(why) => skipped.push(format!("skipped {} {ip}: {why}", a.name)),
            None if best.is_none_or(|(_, b)| b.is_ipv6() && ip.is_ipv4()) => best = Some((a, ip)),
            None => {}
        }
    }
    let Some((a, ip)) = best else {
        let considered = listed(skipped, "no interface has an IP address");
        return Err(BootstrapError::address(format!(
            "no network interface qualifies for the unique id ({considered}); loopback, \
             link-local, down and virtual interfaces (lo, docker, veth, br-, virbr, tun, tap) are \
             skipped. Set SHMEM_UID_SESSION_ID=<ip>:<port> (e.g. 127.0.0.1:<port> when all PEs \
             run on this machine) or SHMEM_UID_SOCK_IFNAME=<interface> (e.g. lo)"
        )));
    };
    Ok((a.name.clone(), ip, a.scope_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifa(name: &str, ip: &str, up: bool) -> IfAddr {
        let ip: IpAddr = ip.parse().unwrap();
        let scope_id = if is_link_local(&ip) && ip.is_ipv6() {
            7
        } else {
            0
        };
        IfAddr {
            name: name.into(),
            ip: Some(ip),
            scope_id,
            up,
            loopback: ip.is_loopback(),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
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
        for bad in ["eth0:ipv4", "eth0:"] {
            assert!(
                parse_ifname_spec(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("not an address family")
            );
        }
        for bad in ["", ":inet6"] {
            assert!(
                parse_ifname_spec(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("no interface name")
            );
        }
    }

    #[test]
    fn interface_choice_rules() {
        let none = IfAddr {
            name: "ifb0".into(),
            ip: None,
            scope_id: 0,
            up: false,
            loopback: false,
        };
        let list = vec![
            none,
            ifa("eth0", "fe80::1", true),
            ifa("eth0", "fd00::2", true),
            ifa("eth0", "192.0.2.2", true),
            ifa("lo", "127.0.0.1", true),
            ifa("lo", "::1", true),
            ifa("eth1", "fe80::9", true),
        ];
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
        let e = pick_for_interface(&list, "eth1", Some(Family::Inet4))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no IPv4 address") && e.contains("fe80::9"),
            "{e}"
        );
        let e = pick_for_interface(&list, "ifb0", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no IP address"), "{e}");
        let e = pick_for_interface(&list, "nonexistent0", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not exist") && e.contains("ifb0, eth0, lo, eth1"),
            "{e}"
        );
    }

    #[test]
    fn auto_choice_rules() {
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
        let m = pick_auto(&list).unwrap_err().to_string();
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
    fn this_machine_lists_its_loopback() {
        let list = interface_addrs().expect("getifaddrs");
        assert!(
            list.iter()
                .any(|a| a.loopback && a.ip.is_some_and(|ip| ip.is_loopback())),
            "{list:?}"
        );
    }
}
