//! What the integration tests of the core and of its reliability tests (`core/reliability`,
//! which include this file) share.

use std::path::{Path, PathBuf};

#[allow(dead_code)] // only the TLS tests make certificates
pub(crate) mod pki;
#[allow(dead_code)] // only the tests that look for processes left behind
pub(crate) mod procs;

/// The path of this package's example `name`, which `cargo test` builds beside the tests.
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let p = dir.join("examples").join(name);
    assert!(
        p.is_file(),
        "cargo test builds the {name} example (for this test alone: cargo build -p {} --example {name})",
        env!("CARGO_PKG_NAME")
    );
    p
}
