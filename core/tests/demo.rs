//! The examples stay true: the Quick start demo (`cargo run --release -p shmem --example demo`)
//! and the multi-instance kernel example are built with the same cargo and profile, run, and
//! required to verify everything they check.

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/<name>`, built now (cargo does not hold the build directory while
/// tests run), so the demo run is always the one of this source tree.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from target/<profile>/deps")
        .to_path_buf();
    let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("debug");
    let profile = if profile == "debug" { "dev" } else { profile };
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "-p",
            "shmem",
            "--example",
            name,
            "--profile",
            profile,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building the example {name} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("examples").join(name)
}

#[test]
fn the_quick_start_demo_verifies_every_instance() {
    let out = Command::new(example("demo"))
        .env("SHMEM_TIMEOUT", "60")
        .output()
        .expect("the demo runs (cargo test builds the examples)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("5 of 5 instances verified on every member PE"),
        "{text}"
    );
    assert_eq!(
        text.matches("kernel allgather (8 and 16 blocks)").count(),
        5,
        "{text}"
    );
}

#[test]
fn the_multi_instance_kernel_example_verifies_its_values() {
    let out = Command::new(example("multi_instance_kernel"))
        .env("SHMEM_TIMEOUT", "60")
        .output()
        .expect("the example runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("every value verified"), "{text}");
}
