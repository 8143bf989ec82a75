//! Libraries built apart from the ones the tests' programs link: the same packages with other
//! features (the hardware's stand-ins, the fault points), each set in a target directory of
//! its own, so that no build ever replaces the ordinary `libshmem.so`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile and the workspace's target directory of the running test binary
/// (`target/<profile>/deps/<test>`).
fn target_of(exe: &Path) -> Option<(PathBuf, String)> {
    let profile_dir = exe.parent()?.parent()?;
    let profile = profile_dir.file_name()?.to_string_lossy().into_owned();
    Some((profile_dir.parent()?.to_path_buf(), profile))
}

/// Builds the libraries of `packages` with `features`, in the running test binary's profile,
/// under `target/<dir>`, and returns the directory that holds them (`target/<dir>/<profile>`).
pub fn build(dir: &str, packages: &[&str], features: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let (target, profile) =
        target_of(&exe).ok_or_else(|| format!("{} is not in a target directory", exe.display()))?;
    let dir = target.join(dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let cargo_profile = if profile == "debug" { "dev" } else { &profile };
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--lib"]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    let out = cmd
        .args([
            "--features",
            features,
            "--profile",
            cargo_profile,
            "--target-dir",
        ])
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run cargo to build {packages:?} with {features}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building {packages:?} with {features} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(dir.join(profile))
}
