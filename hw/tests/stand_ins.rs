//! Loading through the project's ABI-compatible stand-ins: the ACL runtime stand-in
//! (`libascendcl.so`) and this project's `libshmem.so` playing CANN SHMEM's, found as CANN's
//! `set_env.sh` lays them out (`ASCEND_HOME_PATH/lib64`, `SHMEM_HOME_PATH/shmem/lib`).

use std::path::{Path, PathBuf};
use std::process::Command;

use shmem_hw::{Places, load};

/// `target/<profile>`, with the stand-ins built now (cargo does not hold the build directory
/// while tests run).
fn built() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf();
    let profile = dir
        .file_name()
        .expect("a profile")
        .to_string_lossy()
        .into_owned();
    let profile = if profile == "debug" {
        "dev".to_string()
    } else {
        profile
    };
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "shmem-c",
            "-p",
            "shmem-acl",
            "--lib",
            "--profile",
            &profile,
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn the_stand_ins_load_from_cann_s_layout_and_cann_shmem_binds_to_itself() {
    let target = built();
    let root = std::env::temp_dir().join(format!("shmem-hw-layout-{}", std::process::id()));
    let (lib64, shmem_lib) = (root.join("ascend/lib64"), root.join("shmem/shmem/lib"));
    std::fs::create_dir_all(&lib64).unwrap();
    std::fs::create_dir_all(&shmem_lib).unwrap();
    std::fs::copy(target.join("libascendcl.so"), lib64.join("libascendcl.so")).unwrap();
    std::fs::copy(target.join("libshmem.so"), shmem_lib.join("libshmem.so")).unwrap();
    let places = Places {
        ascend_home: Some(root.join("ascend")),
        shmem_home: Some(root.join("shmem")),
        ..Places::default()
    };
    // SAFETY: the stand-ins' initialisers run nothing that needs more than a process.
    let libs = unsafe { load(&places) }.expect("the stand-ins load");
    assert_eq!(
        libs.acl.path(),
        lib64.join("libascendcl.so").display().to_string()
    );
    assert_eq!(
        libs.shmem.path(),
        shmem_lib.join("libshmem.so").display().to_string()
    );
    libs.shmem
        .address(c"aclshmemx_init_attr")
        .expect("CANN SHMEM's init is there");
    // Loaded RTLD_LOCAL: CANN SHMEM's names are not in the global scope.
    // SAFETY: dlsym on the global handle only looks the name up.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"aclshmemx_init_attr".as_ptr()) };
    assert!(
        global.is_null(),
        "CANN SHMEM's names stay out of the global scope"
    );
    let _ = std::fs::remove_dir_all(root);
}
