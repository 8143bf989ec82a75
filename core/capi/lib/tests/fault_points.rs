//! The library's own fault points under a C program (issue 14, item 1): `libshmem.so` built
//! with the core's `fault-injection` feature, in a target directory of its own (release builds
//! never have it), put in front of the ordinary one with `LD_LIBRARY_PATH` (`oshcc` links
//! with a run path, which that overrides). `conformance/c/exit_paths.c ring` passes a barrier,
//! a point-to-point wait, another barrier and finalize; `SHMEM_FAULT` makes PE 2 die, leave or
//! stop exactly inside one of them, and `oshrun` must end the job naming PE 2 and how it ended.
//! (`c_api.rs` has the cases where the C program itself dies while the others are blocked.)

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{c_program, oshrun_with, target_dir, text};
use shmem_conformance::libraries::Build;

/// The hang catcher: a job that ends later than this fails the test.
const BOUND: Duration = Duration::from_secs(30);

/// Builds `libshmem.so` with the fault points (`target/fault-injection`) and returns the
/// directory that holds it.
fn fault_library() -> PathBuf {
    let lib = shmem_conformance::libraries::build(Build {
        packages: &["shmem-c"],
        features: Some("shmem-c/fault-injection"),
        apart: Some("fault-injection"),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(lib.join("libshmem.so").is_file(), "{}", lib.display());
    lib
}

/// Runs `exe ring` on 4 PEs with the fault library and `SHMEM_FAULT=fault`.
fn ring(
    exe: &Path,
    lib: &Path,
    fault: &str,
    extra: &[(&str, &str)],
) -> (std::process::Output, Duration) {
    // The fault library first; the ordinary target directory after it for the ACL runtime's
    // stand-in, which libshmem.so links.
    let path = format!("{}:{}", lib.display(), target_dir().display());
    let mut vars = vec![("LD_LIBRARY_PATH", path.as_str()), ("SHMEM_FAULT", fault)];
    vars.extend_from_slice(extra);
    let start = Instant::now();
    let out = oshrun_with(exe, 4, &["ring"], &vars);
    (out, start.elapsed())
}

#[test]
fn a_c_pe_killed_leaving_or_stopped_at_a_library_fault_point_ends_the_job_naming_it() {
    let lib = fault_library();
    let (dir, exe) = c_program("exit_paths", "c-fault-points");

    // The fault library itself runs the program to the end when no point is armed for a PE
    // of this job, and refuses a point it does not have (so it is the one loaded).
    let (out, _) = ring(&exe, &lib, "barrier.waiting:kill:7", &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(t.matches(" ok\n").count(), 4, "{t}");
    let (out, _) = ring(&exe, &lib, "no.such.point:kill", &[]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("no.such.point"), "{t}");

    for (fault, code, says) in [
        ("init.after_connect:kill:2", 137, "SIGKILL"),
        ("barrier.waiting:kill:2", 137, "SIGKILL"),
        ("wait_until.waiting:kill:2", 137, "SIGKILL"),
        ("finalize.entered:kill:2", 137, "SIGKILL"),
        ("barrier.waiting:exit:2", 3, "exited with status 3"),
        ("wait_until.waiting:exit:2", 3, "exited with status 3"),
    ] {
        let (out, took) = ring(&exe, &lib, fault, &[]);
        let t = text(&out);
        println!("{fault}: the job ended in {:.2} s", took.as_secs_f64());
        assert!(took < BOUND, "{fault}: {took:?}\n{t}");
        assert_eq!(out.status.code(), Some(code), "{fault}:\n{t}");
        assert!(
            t.contains("shmemrun: PE 2 ") && t.contains(says),
            "{fault}:\n{t}"
        );
        assert!(!t.contains("PE 2 ok"), "{fault}:\n{t}");
    }

    // A stopped PE: with SHMEM_TIMEOUT=3 the hang report names it and its state, the waiters
    // fail with a timeout, and the launcher ends the job (and the stopped PE).
    let (out, took) = ring(
        &exe,
        &lib,
        "barrier.waiting:stop:2",
        &[("SHMEM_TIMEOUT", "3"), ("SHMEM_HANG_REPORT", "1")],
    );
    let t = text(&out);
    println!(
        "barrier.waiting:stop:2: the job ended in {:.2} s",
        took.as_secs_f64()
    );
    assert!(took < BOUND, "stop: {took:?}\n{t}");
    assert!(!out.status.success(), "stop:\n{t}");
    assert!(
        t.contains("hang?") && t.contains("PE 2 (stopped)"),
        "stop:\n{t}"
    );
    assert!(t.contains("timed out"), "stop:\n{t}");
    let _ = std::fs::remove_dir_all(dir);
}
