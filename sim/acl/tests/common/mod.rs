//! What the stand-in's tests share: where `libascendcl.so` and the crate are.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>` once `libascendcl.so` is built there (`cargo test` builds no `cdylib`
/// that no target links, so the test builds it with the same cargo and profile).
pub(crate) fn target_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            shmem_conformance::libraries::build(shmem_conformance::libraries::Build {
                packages: &["shmem-acl"],
                features: None,
                apart: None,
            })
            .unwrap_or_else(|e| panic!("building libascendcl.so: {e}"))
        })
        .clone()
}

pub(crate) fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compiles the C program `source` into `exe` against the stand-in's headers and
/// `libascendcl.so`, with `flags` (`-std=c11` always).
pub(crate) fn compile_c(source: &Path, exe: &Path, flags: &[&str]) {
    let dir = target_dir();
    let out = Command::new("cc")
        .arg("-std=c11")
        .args(flags)
        .arg("-o")
        .arg(exe)
        .arg(source)
        .arg(format!("-I{}", crate_dir().join("include").display()))
        .arg(format!("-L{}", dir.display()))
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-lascendcl")
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
