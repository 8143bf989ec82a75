//! Tells the tests whether this machine has an IPv6 loopback, so that the IPv6 bootstrap test
//! is reported as ignored (with the reason) rather than passing without testing anything.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_ipv6_loopback)");
    println!("cargo::rerun-if-changed=build.rs");
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("cargo::rustc-cfg=no_ipv6_loopback");
    }
}
