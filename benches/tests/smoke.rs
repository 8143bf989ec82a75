//! `shmem-bench --smoke` in CI: every measurement of the benchmark runs once, in a release
//! build, and the tables come out whole. The figures of a smoke run are not measurements and
//! are not checked.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// `target/release/shmem-bench`, built for this test (cargo does not hold the build directory
/// while tests run).
fn release_bench() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("tests run from target/<profile>/deps")
        .to_path_buf();
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "-p",
            "shmem-benches",
            "--bin",
            "shmem-bench",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the release build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("release").join("shmem-bench")
}

#[test]
fn shmem_bench_smoke_runs_every_measurement() {
    let bench = release_bench();
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
    ] {
        assert!(
            stdout.contains(row),
            "the smoke run's tables have no `{row}` row:\n{stdout}"
        );
    }
}
