//! C and C++ programs linked to this project's `libshmem.so` run on the hw backend
//! (`SHMEM_BACKEND=hw`) through the stand-ins of the ACL runtime and CANN SHMEM, laid out as
//! CANN installs them (`docs/hardware.md`): the program's library drives the stand-in
//! `libshmem.so`, a separate artifact built without the hw backend, and never itself.

mod common;

use common::{build, oshrun, target_dir, temp_dir, text};

/// The environment of a job on the hw backend: the stand-ins' paths, and the runtime's
/// directory on `LD_LIBRARY_PATH` as the toolkit's `set_env.sh` puts it.
fn hw_env() -> Vec<(&'static str, String)> {
    target_dir();
    let mut env = shmem_conformance::stand_ins::build().expect("the stand-ins build");
    let lib64 = shmem_conformance::stand_ins::runtime_dir(&env).expect("the runtime's directory");
    env.push(("LD_LIBRARY_PATH", lib64.display().to_string()));
    env.push(("SHMEM_BACKEND", "hw".into()));
    env.push(("SHMEM_SIM_STRICT", "1".into()));
    env
}

#[test]
fn a_cann_host_program_runs_on_hw_through_the_stand_ins() {
    let dir = temp_dir("hw-cann-host");
    let exe = dir.join("host");
    let out = std::process::Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(common::repo().join("conformance/cann/host.cpp"))
        .output()
        .expect("aclshmem-c++ runs");
    assert!(out.status.success(), "{}", text(&out));
    let env = hw_env();
    for n in [1, 2, 4] {
        let port = common::free_ports(3);
        let (port0, range) = (port.to_string(), format!("{}:{}", port + 1, port + 2));
        let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        vars.push(("CANN_TEST_PORT", &port0));
        vars.push(("SHMEM_INSTANCE_PORT_RANGE", &range));
        let out = oshrun(&exe, n, &vars);
        let t = text(&out);
        assert!(out.status.success(), "{n} PEs on hw:\n{t}");
        assert_eq!(t.matches(" ok").count(), n as usize, "{n} PEs on hw:\n{t}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_program_that_asks_for_hw_without_cann_fails_at_init_naming_what_is_missing() {
    let dir = temp_dir("hw-missing");
    let exe = build(
        target_dir().join("oshcc").to_str().unwrap(),
        "conformance/c/coll.c",
        &[],
        &dir,
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty = empty.display().to_string();
    let out = oshrun(
        &exe,
        1,
        &[
            ("SHMEM_BACKEND", "hw"),
            ("SHMEM_HW_ACL_LIBRARY", &format!("{empty}/libascendcl.so")),
        ],
    );
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(!t.contains("panicked"), "{t}");
    assert!(t.contains("libascendcl.so"), "{t}");
    assert!(t.contains(&empty), "{t}");
}
