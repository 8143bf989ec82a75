//! Libraries the tests build themselves, with the same cargo and profile as the running test:
//! the `cdylib`s that `cargo test` does not build (no target links them), in the workspace's
//! target directory where the tests' programs find them, and the same packages with other
//! features (the hardware's stand-ins, the fault points), each set in a target directory of
//! its own, so that no build ever replaces the ordinary `libshmem.so`. (Cargo does not hold the
//! build directory while tests run.)

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile and the workspace's target directory of the running test binary
/// (`target/<profile>/deps/<test>`).
fn target_of(exe: &Path) -> Option<(PathBuf, String)> {
    let profile_dir = exe.parent()?.parent()?;
    let profile = profile_dir.file_name()?.to_string_lossy().into_owned();
    Some((profile_dir.parent()?.to_path_buf(), profile))
}

/// Where a build goes and with what.
#[derive(Clone, Copy, Debug)]
pub struct Build<'a> {
    /// The packages whose libraries are built.
    pub packages: &'a [&'a str],
    /// Their features, or none.
    pub features: Option<&'a str>,
    /// `target/<apart>` instead of the workspace's target directory.
    pub apart: Option<&'a str>,
}

/// Builds the libraries `b` names in the running test binary's profile and returns the
/// directory that holds them (`target/<profile>`, or `target/<apart>/<profile>`).
pub fn build(b: Build<'_>) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let (target, profile) =
        target_of(&exe).ok_or_else(|| format!("{} is not in a target directory", exe.display()))?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cargo_profile = if profile == "debug" { "dev" } else { &profile };
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--lib", "--profile", cargo_profile]);
    for p in b.packages {
        cmd.args(["-p", p]);
    }
    if let Some(f) = b.features {
        cmd.args(["--features", f]);
    }
    let dir = match b.apart {
        Some(apart) => {
            let dir = target.join(apart);
            cmd.arg("--target-dir").arg(&dir);
            dir
        }
        None => target,
    };
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run cargo to build {:?}: {e}", b.packages))?;
    if !out.status.success() {
        return Err(format!(
            "building {:?} with {:?} failed:\n{}",
            b.packages,
            b.features,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(dir.join(profile))
}

/// `target/<profile>` once the OpenSHMEM and CANN C library `libshmem.so` is built there, with
/// the ACL runtime's stand-in it needs beside it: built once per process (the test runner's
/// C-ABI cases, the C ABI's own tests), so that the library is always this source tree's.
pub fn c_library_dir() -> Result<PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = build(Build {
                packages: &["shmem-c", "shmem-acl"],
                features: None,
                apart: None,
            })?;
            if !dir.join("libshmem.so").is_file() {
                return Err(format!("no libshmem.so in {}", dir.display()));
            }
            Ok(dir)
        })
        .clone()
}
