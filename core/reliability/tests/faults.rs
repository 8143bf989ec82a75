//! Deterministic fault injection (issue 14, item 1): the `fault_job` example passes every named
//! fault point, and `SHMEM_FAULT` makes one PE die (SIGKILL), leave without finalize (`_exit`)
//! or stop (SIGSTOP) exactly there. Each test checks what the rest of the job does then, and
//! that the job leaves nothing behind: no process carrying the test's mark in its environment,
//! nothing in the job's own TMPDIR, and no `/dev/shm` name of the library (which makes none).
//!
//! Every job has a launcher timeout or a watchdog; the 30 s bounds below catch hangs, the
//! figures the tests print are the times.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shmem_sim::launcher::{Job, JobReport, Output, StopCause, Termination};

#[path = "../../tests/common/mod.rs"]
mod common;

/// The hang catcher: a fault must end a job well within this.
const BOUND: Duration = Duration::from_secs(30);

/// A mark unique to one job, set in its PEs' environment, and a TMPDIR of its own.
struct Mark {
    value: String,
    tmp: PathBuf,
}

impl Mark {
    fn new(what: &str) -> Mark {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let value = format!(
            "{}-{k}-{}",
            std::process::id(),
            what.replace(['.', ':'], "_")
        );
        let tmp = std::env::temp_dir().join(format!("shmem-faults-{value}"));
        std::fs::create_dir_all(&tmp).expect("a TMPDIR for the job");
        Mark { value, tmp }
    }

    /// Processes whose environment carries the mark.
    fn survivors(&self) -> Vec<u32> {
        common::procs::processes_with(&format!("SHMEM_FAULT_TEST_MARK={}", self.value))
    }

    /// Nothing of the job is left; waits up to 5 s for processes to be reaped by others.
    fn assert_clean(&self) {
        let until = Instant::now() + Duration::from_secs(5);
        while !self.survivors().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            self.survivors(),
            Vec::<u32>::new(),
            "{}: processes left",
            self.value
        );
        let left: Vec<_> = std::fs::read_dir(&self.tmp)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.is_empty(),
            "{}: left in its TMPDIR: {left:?}",
            self.value
        );
        let shm: Vec<_> = std::fs::read_dir("/dev/shm")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("shmem") || n.contains("aclshmem"))
            .collect();
        assert!(shm.is_empty(), "names in /dev/shm: {shm:?}");
        let _ = std::fs::remove_dir(&self.tmp);
    }
}

/// A 4-PE `shmemrun` job of `fault_job` with `SHMEM_FAULT=fault` and `extra` variables.
fn launch(fault: &str, extra: &[(&str, &str)], timeout: Duration) -> (JobReport, Mark) {
    let (job, mark) = job(fault, extra, timeout);
    (job.run().expect("the job starts"), mark)
}

/// The job [`launch`] runs, not yet started.
fn job(fault: &str, extra: &[(&str, &str)], timeout: Duration) -> (Job, Mark) {
    let mark = Mark::new(fault);
    let mut job = Job::new(common::example("fault_job"))
        .n_pes(4)
        .timeout(timeout)
        .output(Output::Capture)
        .quiet(true)
        .env("SHMEM_FAULT", fault)
        .env("SHMEM_FAULT_TEST_MARK", &mark.value)
        .env("TMPDIR", &mark.tmp)
        .env("SHMEM_TIMEOUT", "60");
    for (k, v) in extra {
        job = job.env(k, v);
    }
    (job, mark)
}

/// Whether a hang report (`hang? PE k has waited … for PE 1, PE 2 (stopped)`) names PE 2 in
/// `state` among the members waited for. PE 2's own line about its fault does not count.
fn hang_report_names_pe2(stderr: &str, state: &str) -> bool {
    let want = format!("PE 2 ({state})");
    stderr.lines().any(|l| {
        l.contains("hang?")
            && l.rsplit_once(" for ")
                .is_some_and(|(_, pes)| pes.split(", ").any(|p| p == want))
    })
}

fn stderr_of(report: &JobReport) -> String {
    report
        .outputs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect()
}

#[test]
fn under_shmemrun_a_pe_killed_at_any_point_ends_the_job_naming_it() {
    for &point in shmem::FAULT_POINTS {
        let (r, mark) = launch(&format!("{point}:kill:2"), &[], Duration::from_secs(120));
        println!("{point}: ended in {:.2} s", r.elapsed.as_secs_f64());
        assert!(r.elapsed < BOUND, "{point}: the job took {:?}", r.elapsed);
        assert_eq!(r.exit_code, 128 + 9, "{point}: {r:#?}");
        match &r.cause {
            Some(StopCause::PeFailed {
                pe: 2,
                how: Termination::Signaled(s),
                ..
            }) if s.0 == 9 => {}
            other => panic!("{point}: the launcher blamed {other:?}"),
        }
        let says = r.failure.clone().unwrap_or_default();
        assert!(
            says.contains("PE 2") && says.contains("SIGKILL"),
            "{point}: {says}"
        );
        mark.assert_clean();
    }
}

#[test]
fn under_shmemrun_a_pe_leaving_without_finalize_ends_the_job_naming_it() {
    // A survivor that notices PE 2's loss may exit before PE 2's own exit is visible (its
    // sockets close before it becomes a zombie); the bootstrap server tells the launcher which
    // PE went first, so the launcher still blames PE 2.
    for point in ["barrier.waiting", "wait_until.waiting", "lock.held"] {
        let (r, mark) = launch(&format!("{point}:exit:2"), &[], Duration::from_secs(120));
        assert!(r.elapsed < BOUND, "{point}: the job took {:?}", r.elapsed);
        assert_eq!(r.exit_code, 3, "{point}: {r:#?}");
        match &r.cause {
            Some(StopCause::PeFailed {
                pe: 2,
                how: Termination::Exited(3),
                ..
            }) => {}
            other => panic!("{point}: the launcher blamed {other:?}"),
        }
        for o in &r.outputs {
            let err = String::from_utf8_lossy(&o.stderr);
            if o.pe != 2 && err.contains("failed") {
                assert!(err.contains("[lost PE 2]"), "{point}: PE {}: {err}", o.pe);
            }
        }
        mark.assert_clean();
    }
}

#[test]
fn a_stopped_pe_is_reported_the_waiters_time_out_and_the_launcher_kills_it() {
    let (r, mark) = launch(
        "barrier.waiting:stop:2",
        &[("SHMEM_TIMEOUT", "3"), ("SHMEM_HANG_REPORT", "1")],
        Duration::from_secs(120),
    );
    let err = stderr_of(&r);
    println!(
        "stopped PE with SHMEM_TIMEOUT=3: ended in {:.2} s",
        r.elapsed.as_secs_f64()
    );
    assert!(r.elapsed < BOUND, "the job took {:?}", r.elapsed);
    assert!(
        hang_report_names_pe2(&err, "stopped"),
        "no hang report names PE 2 and its state:\n{err}"
    );
    assert!(
        err.contains("barrier_all failed") && err.contains("timed out"),
        "the waiters did not fail with a timeout:\n{err}"
    );
    assert_ne!(r.exit_code, 0);
    assert!(
        matches!(r.cause, Some(StopCause::PeFailed { pe, .. }) if pe != 2),
        "a waiter's failure ends the job: {:?}",
        r.cause
    );
    mark.assert_clean();
}

#[test]
fn a_stopped_pe_without_a_timeout_is_ended_by_the_launchers_timeout() {
    let (r, mark) = launch(
        "barrier.waiting:stop:2",
        &[("SHMEM_TIMEOUT", "0"), ("SHMEM_HANG_REPORT", "1")],
        Duration::from_secs(6),
    );
    let err = stderr_of(&r);
    assert_eq!(r.exit_code, 124, "{r:#?}");
    assert!(matches!(r.cause, Some(StopCause::TimedOut { .. })));
    assert!(hang_report_names_pe2(&err, "stopped"), "{err}");
    mark.assert_clean();
}

#[test]
fn a_stopped_pe_continued_within_two_seconds_lets_the_job_complete() {
    let (job, mark) = job("barrier.waiting:stop:2", &[], Duration::from_secs(120));
    let runner = std::thread::spawn(move || job.run());
    // Find PE 2 stopped, then continue it a second later.
    let until = Instant::now() + BOUND;
    let pid = loop {
        let stopped = mark.survivors().into_iter().find(|pid| {
            let pe2 = std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|e| e.split(|&b| b == 0).any(|kv| kv == b"SHMEMRUN_PE=2"));
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            pe2 && state
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('T'))
        });
        if let Some(p) = stopped {
            break p;
        }
        assert!(Instant::now() < until, "PE 2 never stopped");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_secs(1));
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
    let r = runner
        .join()
        .expect("the launcher thread")
        .expect("the job ran");
    assert_eq!(r.exit_code, 0, "{}\n{r:#?}", stderr_of(&r));
    mark.assert_clean();
}

/// A self-launched PE (`FAULT_JOB`), with a watchdog that kills it after `BOUND`.
struct SelfPe {
    pe: u32,
    child: Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// How a self-launched PE ended.
struct Ended {
    pe: u32,
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
}

/// Four self-launched PEs (no launcher) with `SHMEM_FAULT=fault`: how each ended, and when the
/// last did.
fn self_launched(fault: &str) -> (Vec<Ended>, Duration, Mark) {
    let mark = Mark::new(fault);
    let (p1, p2) = (free_port(), free_port());
    let start = Instant::now();
    let pes: Vec<SelfPe> = (0..4)
        .map(|pe| SelfPe {
            pe,
            child: Command::new(common::example("fault_job"))
                .env("FAULT_JOB", format!("{pe},4,{p1}"))
                .env("SHMEM_INSTANCE_PORT_RANGE", format!("{}:{p2}", p2 - 1))
                .env("SHMEM_FAULT", fault)
                .env("SHMEM_FAULT_TEST_MARK", &mark.value)
                .env("TMPDIR", &mark.tmp)
                .env("SHMEM_TIMEOUT", "60")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("fault_job starts"),
        })
        .collect();
    let mut out = Vec::new();
    for mut p in pes {
        let deadline = start + BOUND;
        let status = loop {
            if let Some(s) = p.child.try_wait().expect("try_wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = p.child.kill();
                break p.child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        use std::io::Read;
        let _ = p
            .child
            .stderr
            .take()
            .map(|mut s| s.read_to_string(&mut err));
        use std::os::unix::process::ExitStatusExt;
        out.push(Ended {
            pe: p.pe,
            code: status.code(),
            signal: status.signal(),
            stderr: err,
        });
    }
    (out, start.elapsed(), mark)
}

#[test]
fn self_launched_survivors_fail_naming_the_dead_pe_and_other_instances_work() {
    for point in [
        "malloc.in_allgather",
        "barrier.waiting",
        "lock.held",
        "coll.in_exchange",
        "wait_until.waiting",
    ] {
        let (pes, took, mark) = self_launched(&format!("{point}:kill:2"));
        println!(
            "{point}: self-launched job ended in {:.2} s",
            took.as_secs_f64()
        );
        assert!(took < BOUND, "{point}: {took:?}");
        for Ended {
            pe,
            code,
            signal,
            stderr: err,
        } in &pes
        {
            if *pe == 2 {
                assert_eq!(
                    *signal,
                    Some(9),
                    "{point}: PE 2 was to die by SIGKILL: {err}"
                );
                continue;
            }
            assert_eq!(*code, Some(1), "{point}: PE {pe} should fail:\n{err}");
            assert!(
                err.contains("[lost PE 2]"),
                "{point}: PE {pe} does not name PE 2:\n{err}"
            );
            assert!(
                err.contains("a new barrier failed"),
                "{point}: PE {pe}: a new call on the instance did not fail:\n{err}"
            );
            if *pe < 2 {
                assert!(
                    err.contains("instance 1 works: Ok(true)"),
                    "{point}: PE {pe}: instance 1 stopped working:\n{err}"
                );
            }
        }
        mark.assert_clean();
    }
}
