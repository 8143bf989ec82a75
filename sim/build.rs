//! Tells the tests whether they run as root (which the tests that act as another user need).

include!("../backends/build/not_root.rs");

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../backends/build/not_root.rs");
    declare_not_root();
}
