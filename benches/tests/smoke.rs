//! `shmem-bench --smoke` in CI: every measurement of the benchmark runs once, in a release
//! build, and the tables come out whole. The figures of a smoke run are not measurements and
//! are not checked.

use std::process::Command;
use std::time::{Duration, Instant};

use shmem_benches::harness::release_build;

#[test]
fn shmem_bench_smoke_runs_every_measurement() {
    let bench = release_build(&["-p", "shmem-benches", "--bin", "shmem-bench"]).join("shmem-bench");
    let start = Instant::now();
    let mut child = Command::new(&bench)
        .args(["--smoke", "--multi-instance", "--kernels"])
        .env("SHMEM_TIMEOUT", "60")
        .env_remove("LD_LIBRARY_PATH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("shmem-bench starts");
    // The watchdog: a smoke run takes well under a minute; a hung one is killed.
    let limit = Duration::from_secs(300);
    loop {
        if child.try_wait().expect("waiting works").is_some() {
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("shmem-bench --smoke ran past {limit:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("the output is read");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "shmem-bench --smoke: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        out.status.success(),
        "shmem-bench --smoke failed:\n{stdout}\n{stderr}"
    );
    for row in [
        "put latency",
        "get latency",
        "put bandwidth",
        "barrier_all",
        "atomic_fetch_add",
        "broadcast",
        "switch the active instance",
        "put beside memcpy",
        "kernel transfer, inside one launch",
        "barrier_all from 8 blocks of each PE",
    ] {
        assert!(
            stdout.contains(row),
            "the smoke run's tables have no `{row}` row:\n{stdout}"
        );
    }
}

/// `shmem-scale` in CI: the per-phase sweep and the create + finalize comparison run on a few
/// PEs (against this same build) and report every column. Its figures are not checked.
#[test]
fn shmem_scale_reports_every_phase() {
    release_build(&["-p", "shmem-sim", "--bin", "shmemrun"]);
    let dir = release_build(&["-p", "shmem-benches", "--bin", "shmem-scale"]);
    let scale = dir.join("shmem-scale");
    // `shmemrun --timeout` (the driver passes it) is the watchdog of every job it starts.
    for args in [
        &["--pes", "2,4", "--timeout", "120"][..],
        &["--create", "2", "--pairs", "1", "--timeout", "120"],
    ] {
        let out = Command::new(&scale)
            .args(args)
            .env("SHMEM_TIMEOUT", "60")
            .output()
            .expect("shmem-scale starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "shmem-scale {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let want: &[&str] = match args[0] {
            "--pes" => &["spawn", "segments + init", "alltoall 1 KiB", "page tables"],
            _ => &["create + finalize one instance on all 2 PEs", "this/other"],
        };
        for w in want {
            assert!(stdout.contains(w), "no `{w}` in:\n{stdout}");
        }
        if args[0] == "--pes" {
            let rows = stdout
                .lines()
                .filter(|l| l.starts_with("2 ") || l.starts_with("4 "));
            assert_eq!(rows.count(), 2, "a row per PE count:\n{stdout}");
        }
    }
}
