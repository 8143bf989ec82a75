//! Tells the tests whether this machine has an IPv6 loopback, and whether they run as root
//! (which the tests that act as another user need), so that such tests are reported as ignored
//! (with the reason) rather than passing without testing anything.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_ipv6_loopback)");
    println!("cargo::rustc-check-cfg=cfg(not_root)");
    println!("cargo::rerun-if-changed=build.rs");
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("cargo::rustc-cfg=no_ipv6_loopback");
    }
    if !is_root() {
        println!("cargo::rustc-cfg=not_root");
    }
}

/// Whether this process's effective user is root (`Uid:` of `/proc/self/status`: real,
/// effective, saved, filesystem).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    })
}
