//! A PE killed by SIGKILL in the middle of a job: the job must end, fast, with a message naming
//! the dead PE, leaving no PE running and nothing in `/dev/shm`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use shmem_sim::launcher::{Job, Output, StopCause, Termination};

/// The `ring` example, which `cargo test` builds next to this test's binary.
fn ring_example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?; // target/<profile>/deps -> target/<profile>
    let p = dir.join("examples").join("ring");
    p.is_file().then_some(p)
}

fn children_running(program: &str) -> Vec<(u32, u32)> {
    // (pid, PE) of this process's children running `program`.
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(me) {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmd).contains(program) {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let pe = env
            .split(|&b| b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .find_map(|kv| kv.strip_prefix("SHMEMRUN_PE=").and_then(|v| v.parse().ok()));
        if let Some(pe) = pe {
            out.push((pid, pe));
        }
    }
    out
}

fn dev_shm() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_pe_killed_mid_run_ends_the_job_quickly_and_leaves_nothing() {
    let ring = ring_example().expect("the ring example is built by `cargo test`");
    let shm_before = dev_shm();
    // Enough iterations that the ring is still running when the kill comes.
    let job = Job::new(&ring)
        .arg("10000000")
        .n_pes(4)
        .timeout(Duration::from_secs(120))
        .output(Output::Capture)
        .quiet(true);
    let runner = std::thread::spawn(move || job.run());
    let deadline = Instant::now() + Duration::from_secs(30);
    let victim = loop {
        let pes = children_running("examples/ring");
        if pes.len() == 4 {
            break pes
                .into_iter()
                .find(|&(_, pe)| pe == 2)
                .expect("PE 2 runs")
                .0;
        }
        assert!(Instant::now() < deadline, "the 4 PEs never all started");
        std::thread::sleep(Duration::from_millis(5));
    };
    // Let the ring get going, then kill PE 2 the way a crash or the OOM killer would.
    std::thread::sleep(Duration::from_millis(200));
    let killed_at = Instant::now();
    let pid = rustix::process::Pid::from_raw(victim as i32).expect("a pid is positive");
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).expect("kill PE 2");
    let report = runner
        .join()
        .expect("the launcher thread")
        .expect("the job ran");
    let took = killed_at.elapsed();

    assert!(
        took < Duration::from_secs(10),
        "the job took {took:?} to end after the kill"
    );
    assert_ne!(report.exit_code, 0);
    assert_eq!(
        report.exit_code,
        128 + 9,
        "the job's exit code is the dead PE's"
    );
    match &report.cause {
        Some(StopCause::PeFailed {
            pe: 2,
            how: Termination::Signaled(s),
            ..
        }) if s.0 == 9 => {}
        other => panic!("the launcher blamed {other:?}, not PE 2's SIGKILL; report: {report:#?}"),
    }
    let failure = report.failure.clone().unwrap_or_default();
    assert!(
        failure.contains("PE 2") && failure.contains("SIGKILL"),
        "the message does not name PE 2 and SIGKILL: {failure}"
    );
    assert!(
        children_running("examples/ring").is_empty(),
        "a PE survived the job"
    );
    assert_eq!(dev_shm(), shm_before, "the job left something in /dev/shm");
}
