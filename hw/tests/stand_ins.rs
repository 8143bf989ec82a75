//! Loading through the project's ABI-compatible stand-ins: the ACL runtime stand-in
//! (`libascendcl.so`) and this project's `libshmem.so` playing CANN SHMEM's, found as CANN's
//! `set_env.sh` lays them out (`ASCEND_HOME_PATH/lib64`, `SHMEM_HOME_PATH/shmem/lib`).

use std::path::{Path, PathBuf};
use std::process::Command;

use shmem_hw::{Places, load};

/// `target/stand-in/<profile>`, with the stand-ins built there now, apart from the libraries
/// programs link (cargo does not hold the build directory while tests run): the ACL stand-in
/// and `libshmem.so` built with the `stand-in` feature, which plays CANN SHMEM.
fn built() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let profile = profile_dir
        .file_name()
        .expect("a profile")
        .to_string_lossy()
        .into_owned();
    let target = profile_dir.parent().expect("target").join("stand-in");
    let cargo_profile = if profile == "debug" { "dev" } else { &profile };
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "shmem-c",
            "-p",
            "shmem-acl",
            "--lib",
            "--features",
            "shmem-c/stand-in",
            "--profile",
            cargo_profile,
            "--target-dir",
        ])
        .arg(&target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join(profile)
}

/// The stand-ins, loaded from where they were built by explicit paths, and that directory.
fn stand_ins() -> (PathBuf, shmem_hw::Libraries) {
    let target = built();
    let places = Places {
        acl_library: Some(target.join("libascendcl.so")),
        shmem_library: Some(target.join("libshmem.so")),
        ..Places::default()
    };
    // SAFETY: the stand-ins' initialisers run nothing that needs more than a process.
    let libs = unsafe { load(&places) }.expect("the stand-ins load");
    (target, libs)
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

#[test]
fn every_acl_function_of_the_table_resolves_and_calls_reach_the_runtime() {
    use shmem_hw::acl::{self, Acl};
    let (_, libs) = stand_ins();
    // SAFETY: the table's types are the runtime's C types (the stand-in's header is generated
    // from the same table).
    let rt = unsafe { Acl::new(libs.acl) };
    rt.resolve_all()
        .expect("the stand-in exports every function of the table");
    assert_eq!(acl::FUNCTION_NAMES.len(), 38);
    // SAFETY: each call gets valid pointers to locals; the device is one the runtime has.
    unsafe {
        rt.try_acl_init(std::ptr::null()).expect("aclInit");
        let mut n = 0u32;
        rt.try_aclrt_get_device_count(&mut n).expect("device count");
        assert!(n >= 1, "{n} devices");
        rt.try_aclrt_set_device(0).expect("aclrtSetDevice(0)");
        let mut p = std::ptr::null_mut();
        rt.try_aclrt_malloc(&mut p, 4096, acl::ACL_MEM_MALLOC_HUGE_FIRST)
            .expect("aclrtMalloc");
        assert!(!p.is_null());
        rt.try_aclrt_free(p).expect("aclrtFree");
        // A bad device id is an error naming the call, with the runtime's code.
        let e = rt.try_aclrt_set_device(-1).expect_err("device -1");
        match &e {
            shmem_hw::HwError::Acl {
                call,
                error,
                detail,
            } => {
                assert_eq!(*call, "aclrtSetDevice");
                assert_eq!(error.0, acl::ACL_ERROR_RT_INVALID_DEVICEID);
                // The runtime's own message for the failure comes with it.
                assert!(
                    detail
                        .as_deref()
                        .is_some_and(|d| d.contains("aclrtSetDevice")),
                    "{detail:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("aclrtSetDevice failed: ACL error 107001 ("),
            "{e}"
        );
        // The raw layer is the same call without the Result.
        assert_eq!(rt.aclrt_set_device().unwrap()(0), acl::ACL_SUCCESS);
        rt.try_aclrt_reset_device(0).expect("aclrtResetDevice");
        rt.try_acl_finalize().expect("aclFinalize");
    }
}

#[test]
fn features_are_probed_by_symbol_and_an_old_release_refuses_other_instances() {
    use shmem_hw::Features;
    let (_, libs) = stand_ins();
    let f = Features::probe(&libs.shmem);
    assert_eq!(
        f,
        Features {
            multi_instance: true,
            quiet_on_stream: true
        }
    );
    assert!(f.check_instance(3, &libs.shmem).is_ok());
    // The ACL runtime has none of CANN SHMEM's calls: as a release before v1.5.0 would.
    let old = Features::probe(&libs.acl);
    assert!(!old.multi_instance && !old.quiet_on_stream);
    assert!(old.check_instance(0, &libs.acl).is_ok());
    let e = old
        .check_instance(2, &libs.acl)
        .expect_err("no multi-instance");
    assert!(
        e.contains("instance 2 needs CANN SHMEM's multi-instance calls (v1.5.0 and later)")
            && e.contains(
                "aclshmemx_instance_ctx_set, aclshmemx_instance_ctx_get, aclshmemx_finalize"
            ),
        "{e}"
    );
}

#[test]
fn every_cann_function_of_the_table_resolves_in_the_stand_in_and_answers() {
    use shmem_hw::Cann;
    let (_, libs) = stand_ins();
    // SAFETY: the table's types are CANN's C types (a test compiles it against the headers).
    let cann = unsafe { Cann::new(libs.shmem) };
    cann.resolve_all()
        .expect("the project's libshmem.so has every call of the table");
    assert_eq!(shmem_hw::cann::FUNCTION_NAMES.len(), 23);
    // SAFETY: the calls take valid pointers to locals, and none needs an initialised library.
    unsafe {
        let (mut major, mut minor) = (0, 0);
        cann.aclshmem_info_get_version().unwrap()(&mut major, &mut minor);
        assert_eq!((major, minor), (1, 1), "CANN SHMEM's API version");
        assert_eq!(cann.aclshmem_my_pe().unwrap()(), -1, "no instance yet");
        assert_eq!(cann.util_get_ffts_config().unwrap()(), 0);
        // The Result layer: a refused call names itself and carries CANN's code.
        let e = cann
            .try_aclshmemx_init_attr(1, std::ptr::null_mut())
            .expect_err("no attributes");
        assert_eq!(
            e,
            shmem_hw::HwError::Shmem {
                call: "aclshmemx_init_attr",
                error: shmem_hw::ShmemError(-1)
            }
        );
        assert_eq!(
            e.to_string(),
            "aclshmemx_init_attr failed: CANN SHMEM error -1"
        );
    }
}

#[test]
fn the_report_names_both_libraries_the_release_and_the_runtime_version() {
    use shmem_hw::Acl;
    let (target, libs) = stand_ins();
    // SAFETY: the table's types are the runtime's C types.
    let acl = unsafe { Acl::new(libs.acl) };
    let r = shmem_hw::version::report(&acl, &libs.shmem);
    assert!(
        r.starts_with(&format!(
            "CANN SHMEM {}",
            target.join("libshmem.so").display()
        )),
        "{r}"
    );
    assert!(r.contains("multi-instance yes, quiet_on_stream yes"), "{r}");
    assert!(r.contains("release unknown"), "{r}");
    assert!(
        r.contains(&format!(
            "ACL runtime {}",
            target.join("libascendcl.so").display()
        )),
        "{r}"
    );
    assert!(
        !r.contains("version unknown"),
        "the stand-in answers aclrtGetVersion: {r}"
    );
}

/// The library programs link (a build of this project's `libshmem.so` with the hw backend) is
/// never taken for CANN SHMEM, wherever it is found: it would select backends itself and call
/// back into this one.
#[test]
fn the_library_programs_link_is_never_taken_for_cann_shmem() {
    let stand_ins = built();
    let program_target = stand_ins
        .parent()
        .and_then(Path::parent)
        .expect("target")
        .join(stand_ins.file_name().expect("a profile"));
    let profile = stand_ins
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let cargo_profile = if profile == "debug" { "dev" } else { &profile };
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "shmem-c",
            "--lib",
            "--profile",
            cargo_profile,
        ])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let places = Places {
        acl_library: Some(stand_ins.join("libascendcl.so")),
        shmem_library: Some(program_target.join("libshmem.so")),
        ..Places::default()
    };
    // SAFETY: the stand-ins' initialisers run nothing that needs more than a process.
    let e = unsafe { load(&places) }.expect_err("a program build is refused");
    let msg = e.to_string();
    assert!(
        msg.contains("this is shmem-rs's own libshmem.so (a program build), not CANN SHMEM"),
        "{msg}"
    );
}
