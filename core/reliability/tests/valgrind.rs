//! A Rust job under valgrind's memcheck (issue 14, item 8): the `fault_job` example, with no
//! fault armed, passes through init, a collective allocation, barriers, a lock, a wait, an
//! exchange collective, a kernel launch and finalize on 2 PEs. memcheck must find no error and
//! no definite leak (`--error-exitcode=1`), and print nothing.

use std::time::Duration;

use shmem_sim::launcher::{Job, Output};

#[path = "../../tests/common/mod.rs"]
mod common;
use common::example;

#[test]
fn a_rust_job_runs_clean_under_valgrind() {
    let report = Job::new("valgrind")
        .args([
            "-q",
            "--error-exitcode=1",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
        ])
        .arg(example("fault_job"))
        .n_pes(2)
        .timeout(Duration::from_secs(300))
        .output(Output::Capture)
        .quiet(true)
        .env("SHMEM_TIMEOUT", "240")
        .env_remove("SHMEM_FAULT")
        .run()
        .expect("the job starts (.ci/run installs valgrind)");
    let text: String = report
        .outputs
        .iter()
        .map(|o| format!("{}{}", o.stdout_text(), o.stderr_text()))
        .collect();
    assert!(report.success(), "{report:#?}\n{text}");
    assert_eq!(text.matches(": done").count(), 2, "{text}");
    let said = text.lines().any(|l| {
        l.strip_prefix("==")
            .and_then(|r| r.split_once("=="))
            .is_some_and(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    });
    assert!(!said, "valgrind reported:\n{text}");
}
