//! How a PE of the Rust API leaves (issue 14, item 2), with the `exit_job` example: an instance
//! still live at `std::process::exit` is finalized then, and a forked child that drops its copy
//! of an instance leaves the parent PE intact.

use std::time::Duration;

use shmem_sim::launcher::{Job, JobReport, Output};

mod common;

fn run(mode: &str, n: u32) -> JobReport {
    Job::new(common::example("exit_job"))
        .arg(mode)
        .n_pes(n)
        .timeout(Duration::from_secs(120))
        .output(Output::Capture)
        .quiet(true)
        .env("SHMEM_TIMEOUT", "60")
        .run()
        .expect("the job starts")
}

fn all_output(r: &JobReport) -> String {
    r.outputs
        .iter()
        .map(|o| format!("{}{}", o.stdout_text(), o.stderr_text()))
        .collect()
}

#[test]
fn an_instance_live_at_process_exit_is_finalized_with_the_others() {
    let r = run("process-exit", 3);
    let out = all_output(&r);
    assert!(r.success(), "{r:#?}\n{out}");
    assert!(out.contains("PE 0 leaves by process::exit"), "{out}");
    assert_eq!(out.matches(" ok").count(), 2, "{out}");
}

#[test]
fn a_forked_child_dropping_its_copy_of_an_instance_leaves_the_pe_intact() {
    let r = run("fork-drop", 3);
    let out = all_output(&r);
    assert!(r.success(), "{r:#?}\n{out}");
    assert_eq!(out.matches(" ok").count(), 3, "{out}");
}
