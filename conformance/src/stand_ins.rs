//! Where the suite's `hw` trials find the vendor libraries: on a machine with NPUs, CANN's own
//! ([`devices`], with `SHMEM_HW_SUITE=devices`); elsewhere the hardware's stand-ins, which they
//! load in place of the vendor libraries: this project's `libascendcl.so` and its `libshmem.so` built with the core's
//! `stand-in` feature (it plays CANN SHMEM on the simulator and has no hw backend of its own),
//! as separate artifacts under `target/stand-in/`, never the files the program itself links.

use std::path::{Path, PathBuf};

/// Builds the stand-ins for the profile of the running test binary and returns the
/// environment that points the hw backend at them (`SHMEM_HW_ACL_LIBRARY`,
/// `SHMEM_HW_SHMEM_LIBRARY`) and pins CANN SHMEM's unique-id listener to loopback
/// (`SHMEM_UID_SOCK_IFNAME=lo`).
pub fn build() -> Result<Vec<(&'static str, String)>, String> {
    let built = crate::libraries::build(crate::libraries::Build {
        packages: &["shmem-c", "shmem-acl"],
        features: Some("shmem-c/stand-in"),
        apart: Some("stand-in"),
    })?;
    // Laid out as CANN installs them, each library in a directory of its own, so that the
    // runtime's directory can go on LD_LIBRARY_PATH (as the toolkit's set_env.sh puts it)
    // without bringing the stand-in libshmem.so with it.
    let root = built.join("cann");
    let acl = root.join("ascend/lib64/libascendcl.so");
    let shmem = root.join("shmem/shmem/lib/libshmem.so");
    for (from, to) in [("libascendcl.so", &acl), ("libshmem.so", &shmem)] {
        place(&built.join(from), to)?;
    }
    Ok(vec![
        ("SHMEM_HW_ACL_LIBRARY", acl.display().to_string()),
        ("SHMEM_HW_SHMEM_LIBRARY", shmem.display().to_string()),
        // CANN SHMEM's own unique id listens on loopback.
        ("SHMEM_UID_SOCK_IFNAME", "lo".to_string()),
    ])
}

/// The directory of the runtime stand-in in `env` (what `LD_LIBRARY_PATH` gets for a C
/// program, which links the runtime itself).
pub fn runtime_dir(env: &[(&'static str, String)]) -> Option<PathBuf> {
    let (_, acl) = env.iter().find(|(k, _)| *k == "SHMEM_HW_ACL_LIBRARY")?;
    Path::new(acl).parent().map(Path::to_path_buf)
}

/// Puts the file `from` at `to` (a hard link, else a copy), replacing what was there.
fn place(from: &Path, to: &Path) -> Result<(), String> {
    let dir = to.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(to);
    std::fs::hard_link(from, to)
        .or_else(|_| std::fs::copy(from, to).map(drop))
        .map_err(|e| format!("cannot place {} at {}: {e}", from.display(), to.display()))
}

/// `Ok` when the vendor libraries load from where the environment says (CANN's `set_env.sh`)
/// and the ACL runtime counts at least one device; otherwise why not.
pub fn devices() -> Result<(), String> {
    // SAFETY: the search accepts only files that are the ACL runtime and CANN SHMEM, whose
    // initialisers are made to run in a program's process.
    let libs =
        unsafe { shmem_hw::load(&shmem_hw::Places::from_env()) }.map_err(|e| e.to_string())?;
    // SAFETY: the table's types are the runtime's C types.
    let acl = unsafe { shmem_hw::Acl::new(libs.acl) };
    let mut count = 0u32;
    // SAFETY: writes one uint32_t.
    unsafe { acl.try_aclrt_get_device_count(&mut count) }.map_err(|e| e.to_string())?;
    if count == 0 {
        return Err(format!(
            "the ACL runtime {} counts no device",
            acl.library().path()
        ));
    }
    Ok(())
}
