//! Tells the tests whether this machine has an IPv6 loopback, and whether they run as root
//! (which the tests that act as another user need), so that such tests are reported as ignored
//! (with the reason) rather than passing without testing anything.

include!("../backends/build/not_root.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_ipv6_loopback)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../backends/build/not_root.rs");
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("cargo::rustc-cfg=no_ipv6_loopback");
    }
    declare_not_root();
}
