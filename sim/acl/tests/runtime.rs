//! The ACL runtime stand-in from C: the committed headers are the generated ones, every function
//! of the table is exported, and `tests/c/runtime.c` (a CANN host program's use of ACL) passes
//! as is, under the simulator's strict mode, and with device memory made host-readable.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{compile_c, crate_dir, target_dir};

const ACL_H: &str = include_str!(concat!(env!("OUT_DIR"), "/acl.h"));
const ACL_SIM_H: &str = include_str!(concat!(env!("OUT_DIR"), "/acl_sim.h"));

#[allow(dead_code, unreachable_pub)]
mod table {
    include!("../src/table.rs");
}

#[test]
fn the_committed_headers_are_the_generated_ones() {
    for (name, generated) in [("acl.h", ACL_H), ("acl_sim.h", ACL_SIM_H)] {
        let path = crate_dir().join("include/acl").join(name);
        let committed = std::fs::read_to_string(&path).expect("the committed header");
        if committed != generated {
            if std::env::var_os("SHMEM_UPDATE_HEADERS").is_some() {
                std::fs::write(&path, generated).expect("writing the header");
            } else {
                panic!(
                    "sim/acl/include/acl/{name} differs from what build.rs generates; run `SHMEM_UPDATE_HEADERS=1 cargo test -p shmem-acl`"
                );
            }
        }
    }
    // ACL's values, spot-checked against the reference.
    for line in [
        "#define ACL_ERROR_INVALID_PARAM 100000",
        "#define ACL_ERROR_RT_PARAM_INVALID 107000",
        "#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046",
        "    ACL_MEMCPY_DEVICE_TO_HOST = 2,",
        "    ACL_MEM_MALLOC_HUGE_FIRST = 0,",
        "aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind);",
    ] {
        assert!(ACL_H.contains(line), "acl.h lacks {line:?}");
    }
}

#[test]
fn every_function_of_the_table_is_exported_with_the_soname() {
    let lib = target_dir().join("libascendcl.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs (binutils)");
    let text = String::from_utf8_lossy(&out.stdout);
    let exported: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let missing: Vec<&str> = table::FUNCTIONS
        .iter()
        .chain(table::SIM_FUNCTIONS)
        .map(|(_, name, _, _)| *name)
        .filter(|n| !exported.contains(n))
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    let d = Command::new("readelf")
        .arg("-d")
        .arg(&lib)
        .output()
        .expect("readelf runs");
    assert!(String::from_utf8_lossy(&d.stdout).contains("Library soname: [libascendcl.so]"));
}

/// Builds `tests/c/runtime.c` against the headers and `libascendcl.so`.
fn build_runtime_c() -> PathBuf {
    let exe = std::env::temp_dir().join(format!("acl-runtime-{}", std::process::id()));
    let source = crate_dir().join("tests/c/runtime.c");
    compile_c(&source, &exe, &["-Wall", "-Wextra", "-Werror"]);
    exe
}

fn runs_ok(exe: &Path, args: &[&str], vars: &[(&str, &str)]) {
    let out = Command::new(exe)
        .args(args)
        .env("SHMEM_SIM_DEVICE_COUNT", "2")
        .env_remove("SHMEM_SIM_STRICT")
        .env_remove("SHMEM_SIM_DEVICE_HOST_ACCESS")
        .envs(vars.iter().copied())
        .output()
        .expect("the program runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("runtime: ok"),
        "{vars:?}:\n{text}"
    );
    // Every refused call wrote one line naming itself.
    assert!(
        text.contains("[ACL stand-in] ERROR aclrtMemcpy: "),
        "{text}"
    );
}

#[test]
fn a_cann_host_programs_use_of_acl_behaves_as_on_an_npu() {
    let exe = build_runtime_c();
    runs_ok(&exe, &[], &[]);
    runs_ok(&exe, &[], &[("SHMEM_SIM_STRICT", "1")]);
    runs_ok(&exe, &["relaxed"], &[("SHMEM_SIM_DEVICE_HOST_ACCESS", "1")]);
    let _ = std::fs::remove_file(exe);
}
