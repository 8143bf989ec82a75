//! CANN SHMEM host programs (C++17, CANN's `shmem.h` from `core/capi/include/cann/`) against
//! libshmem.so's CANN ABI, started by the launcher with each PE passing its own `my_pe`,
//! `n_pes` and `ip_port`, as CANN's examples do.

mod common;

use std::net::TcpListener;
use std::process::Command;

use common::{repo, target_dir, temp_dir, text};

/// A port that was free a moment ago, with the two above it free too (instance 0 on the
/// first; `SHMEM_INSTANCE_PORT_RANGE` starting at the second, so instance 1 gets the third).
pub(crate) fn three_free_ports() -> u16 {
    loop {
        let p = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if p < 65000 && (1..3).all(|k| TcpListener::bind(("127.0.0.1", p + k)).is_ok()) {
            return p;
        }
    }
}

#[test]
fn a_cann_host_program_runs_its_init_heap_team_and_multi_instance_flow() {
    let dir = temp_dir("cann-host");
    let exe = dir.join("host");
    // The CANN-style wrapper `aclshmem-c++` (a link the build script makes to `aclshmem-cxx`).
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(repo().join("conformance/cann/host.cpp"))
        .output()
        .expect("aclshmem-c++ runs");
    assert!(out.status.success(), "{}", text(&out));
    let shown = Command::new(env!("CARGO_BIN_EXE_aclshmem-cxx"))
        .args(["-show", "x.cpp"])
        .output()
        .expect("aclshmem-cxx runs");
    let shown = text(&shown);
    assert!(
        shown.contains("include/cann") && shown.contains("-lshmem -lascendcl"),
        "{shown}"
    );
    for (n, strict) in [(1, "0"), (2, "0"), (4, "0"), (2, "1")] {
        let port = three_free_ports();
        let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
            .args(["-n", &n.to_string(), "--timeout", "120", "--"])
            .arg(&exe)
            .env("CANN_TEST_PORT", port.to_string())
            .env(
                "SHMEM_INSTANCE_PORT_RANGE",
                format!("{}:{}", port + 1, port + 2),
            )
            .env("SHMEM_TIMEOUT", "60")
            .env("SHMEM_SIM_STRICT", strict)
            .output()
            .expect("the launcher runs");
        let t = text(&out);
        assert!(out.status.success(), "{n} PEs:\n{t}");
        assert_eq!(t.matches(" ok").count(), n as usize, "{n} PEs:\n{t}");
        // A refused call is one line naming it, with CANN's code.
        assert!(
            t.contains("ERROR aclshmemx_init_attr: invalid value: local_mem_size is 0 (code -2)"),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cann_headers_from_plain_c_have_cann_layouts_and_values() {
    let dir = temp_dir("cann-layout");
    let exe = dir.join("layout");
    let out = Command::new(target_dir().join("aclshmem-cc"))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(repo().join("conformance/cann/layout.c"))
        .output()
        .expect("aclshmem-cc runs");
    assert!(out.status.success(), "{}", text(&out));
    let run = Command::new(&exe).output().expect("the program runs");
    assert!(
        run.status.success() && text(&run).contains("layout: ok"),
        "{}",
        text(&run)
    );
    let _ = std::fs::remove_dir_all(dir);
}
