//! The Python suite: the tests of the PyPI package shmem4py (1.0.0, from its source
//! distribution), built against this libshmem.so with this oshcc and run with oshrun on 1 and
//! 2 PEs by `conformance/python/run_shmem4py.sh`, which also proves the module uses this
//! library (its 1,510 OpenSHMEM imports bound to it, our vendor string, every feature on).
//! Needs python3 with venv and its headers, and PyPI (`.ci/run` installs the packages).

mod common;

use std::process::Command;

use common::{repo, target_dir};

#[test]
fn shmem4py_suite_passes_on_1_and_2_pes_against_this_library() {
    let out = Command::new(repo().join("conformance/python/run_shmem4py.sh"))
        .arg(target_dir())
        .env("SHMEM_TIMEOUT", "120")
        .output()
        .expect("bash runs the script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("no vendor flag"),
        "shmem4py builds against our header with no flag:\n{stdout}"
    );
    // The summary, for the test's log (shown with --nocapture).
    for line in stdout.lines().filter(|l| l.starts_with("shmem4py")) {
        println!("{line}");
    }
    assert!(
        out.status.success(),
        "the shmem4py suite failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("shmem4py: 220 passed, 0 failed"),
        "every test of shmem4py 1.0.0 runs and passes, on 1 PE and on 2 (110 each):\n{stdout}"
    );
}
