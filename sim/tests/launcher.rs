//! Integration tests of the job launcher (`shmem_sim::launcher`) and of the `shmemrun` binary.
//!
//! Most PEs are `/bin/sh -c` scripts. Two tests re-run this test binary as the PE program (the
//! `pe_role_helper` test does the PE's work when `SHMEM_SIM_LAUNCHER_TEST_ROLE` is set) to check
//! the Rust side of the environment contract. Every job has a timeout, so no test can hang.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmem_sim::launcher::env as contract;
use shmem_sim::launcher::{
    Job, LaunchError, Output, PeEnd, Signal, StopCause, TIMEOUT_EXIT_CODE, Termination,
};

const JOB_TIMEOUT: Duration = Duration::from_secs(20);
const ROLE: &str = "SHMEM_SIM_LAUNCHER_TEST_ROLE";
const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

/// A job of `n` PEs, each running `script` with `/bin/sh`, quietly, with a timeout.
fn sh(n: u32, script: &str) -> Job {
    Job::new("/bin/sh")
        .args(["-c", script])
        .n_pes(n)
        .timeout(JOB_TIMEOUT)
        .quiet(true)
}

fn exited(pe: &shmem_sim::launcher::PeOutcome) -> Option<i32> {
    match pe.end {
        PeEnd::Exited(code) => Some(code),
        _ => None,
    }
}

#[test]
fn all_pes_exit_zero() {
    let report = sh(3, "exit 0").run().unwrap();
    assert_eq!(report.exit_code, 0);
    assert!(report.success());
    assert_eq!(report.failure, None);
    assert_eq!(report.cause, None);
    assert_eq!(report.pes.len(), 3);
    for (i, pe) in report.pes.iter().enumerate() {
        assert_eq!(pe.pe as usize, i);
        assert_eq!(exited(pe), Some(0), "{pe}");
        assert!(pe.pid > 0);
    }
}

#[test]
fn pe_that_exits_zero_early_is_normal() {
    let report = sh(2, r#"[ "$SHMEMRUN_PE" = 0 ] && exit 0; sleep 0.2; exit 0"#)
        .run()
        .unwrap();
    assert_eq!(report.exit_code, 0);
    assert!(report.pes.iter().all(|p| exited(p) == Some(0)));
}

#[test]
fn nonzero_exit_stops_the_others_and_sets_the_code() {
    let report = sh(
        3,
        r#"if [ "$SHMEMRUN_PE" = 1 ]; then exit 3; fi; exec sleep 30"#,
    )
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 3);
    let failure = report.failure.as_deref().unwrap();
    assert!(failure.starts_with("PE 1 (pid "), "{failure}");
    assert!(failure.contains("exited with status 3"), "{failure}");
    assert!(failure.contains("stopping the other 2 PEs"), "{failure}");
    assert_eq!(report.pes[1].end, PeEnd::Exited(3));
    for pe in [0, 2] {
        assert_eq!(
            report.pes[pe].end,
            PeEnd::Stopped(Termination::Signaled(Signal(15))),
            "{}",
            report.pes[pe]
        );
    }
    assert!(report.elapsed < Duration::from_secs(5));
}

#[test]
fn pe_killed_by_signal_stops_the_others_quickly() {
    let report = sh(
        4,
        r#"if [ "$SHMEMRUN_PE" = 2 ]; then sleep 0.1; kill -9 $$; fi; exec sleep 30"#,
    )
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 128 + 9);
    let failure = report.failure.as_deref().unwrap();
    let pid = report.pes[2].pid;
    assert_eq!(
        failure,
        format!("PE 2 (pid {pid}) was killed by signal 9 (SIGKILL); stopping the other 3 PEs")
    );
    assert_eq!(report.pes[2].end, PeEnd::Signaled(Signal(9)));
    assert!(matches!(
        report.cause,
        Some(StopCause::PeFailed {
            pe: 2,
            how: Termination::Signaled(Signal(9)),
            ..
        })
    ));
    for pe in [0, 1, 3] {
        assert!(
            matches!(report.pes[pe].end, PeEnd::Stopped(_)),
            "{}",
            report.pes[pe]
        );
    }
    let stop = report.stop_duration.unwrap();
    eprintln!(
        "PE death -> all other PEs reaped in {stop:?} (job {:?})",
        report.elapsed
    );
    assert!(stop < Duration::from_secs(5), "{stop:?}");
}

#[test]
fn pe_ignoring_sigterm_is_killed_after_the_grace() {
    let report = sh(
        2,
        r#"if [ "$SHMEMRUN_PE" = 0 ]; then sleep 0.1; exit 4; fi; trap '' TERM; exec sleep 30"#,
    )
    .kill_grace(Duration::from_millis(200))
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 4);
    assert_eq!(
        report.pes[1].end,
        PeEnd::Stopped(Termination::Signaled(Signal(9)))
    );
    let stop = report.stop_duration.unwrap();
    assert!(
        stop >= Duration::from_millis(200) && stop < Duration::from_secs(3),
        "{stop:?}"
    );
}

#[test]
fn global_exit_from_a_shell_pe() {
    let report = sh(
        3,
        r#"if [ "$SHMEMRUN_PE" = 1 ]; then echo "exit 7" >&$SHMEMRUN_CONTROL_FD; fi; exec sleep 30"#,
    )
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 7);
    assert_eq!(
        report.cause,
        Some(StopCause::GlobalExit {
            status: 7,
            pe: None
        })
    );
    assert!(
        report
            .failure
            .as_deref()
            .unwrap()
            .contains("global_exit(7)")
    );
    assert!(
        report
            .pes
            .iter()
            .all(|p| matches!(p.end, PeEnd::Stopped(_)))
    );
    assert!(report.stop_duration.unwrap() < Duration::from_secs(5));
}

#[test]
fn global_exit_zero_naming_the_pe_ends_the_job_with_zero() {
    let report = sh(
        3,
        r#"if [ "$SHMEMRUN_PE" = 0 ]; then echo "exit 0 0" >&$SHMEMRUN_CONTROL_FD; exit 0; fi; exec sleep 30"#,
    )
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 0);
    assert_eq!(
        report.failure.as_deref(),
        Some("PE 0 called global_exit(0); stopping the other 2 PEs")
    );
    // The caller is not signalled: it exits by itself.
    assert_eq!(report.pes[0].end, PeEnd::Exited(0));
    assert!(matches!(report.pes[1].end, PeEnd::Stopped(_)));
}

#[test]
fn malformed_control_lines_are_ignored() {
    let report = sh(2, r#"echo "bogus 1" >&$SHMEMRUN_CONTROL_FD; exit 0"#)
        .run()
        .unwrap();
    assert_eq!(report.exit_code, 0);
    assert_eq!(report.cause, None);
}

#[test]
fn timeout_gives_124_and_names_the_running_pes() {
    let report = sh(3, r#"[ "$SHMEMRUN_PE" = 1 ] && exit 0; exec sleep 30"#)
        .timeout(Duration::from_millis(300))
        .run()
        .unwrap();
    assert_eq!(report.exit_code, TIMEOUT_EXIT_CODE);
    assert_eq!(
        report.failure.as_deref(),
        Some("timed out after 0.3 s; PEs still running: 0, 2")
    );
    assert_eq!(report.pes[1].end, PeEnd::Exited(0));
    for pe in [0, 2] {
        assert_eq!(
            report.pes[pe].end,
            PeEnd::TimedOut(Termination::Signaled(Signal(15)))
        );
    }
    assert!(report.elapsed < Duration::from_secs(3));
}

#[test]
fn capture_collects_each_pes_streams() {
    let report = sh(
        3,
        r#"echo "out $SHMEMRUN_PE"; echo "err $SHMEMRUN_PE" >&2; printf "last $SHMEMRUN_PE""#,
    )
    .output(Output::Capture)
    .run()
    .unwrap();
    assert_eq!(report.exit_code, 0);
    assert_eq!(report.outputs.len(), 3);
    for (pe, out) in report.outputs.iter().enumerate() {
        assert_eq!(out.pe as usize, pe);
        assert_eq!(out.stdout_text(), format!("out {pe}\nlast {pe}"));
        assert_eq!(out.stderr_text(), format!("err {pe}\n"));
        assert_eq!((out.stdout_dropped, out.stderr_dropped), (0, 0));
    }
}

#[test]
fn capture_keeps_the_tail_within_the_limit() {
    let report = sh(
        1,
        "i=0; while [ $i -lt 500 ]; do echo 123456789; i=$((i+1)); done; echo end",
    )
    .output(Output::Capture)
    .capture_limit(100)
    .run()
    .unwrap();
    let out = &report.outputs[0];
    assert_eq!(out.stdout.len(), 100);
    assert_eq!(out.stdout_dropped, 5004 - 100);
    assert!(out.stdout_text().ends_with("123456789\nend\n"));
}

#[test]
fn environment_contract_per_pe() {
    // Each PE prints its view of the contract; PE 0 also describes its bootstrap descriptor
    // (a socket, in state 0A = LISTEN in /proc/net/tcp).
    let script = r#"
        echo "pe=$SHMEMRUN_PE npes=$SHMEMRUN_NPES"
        echo "boot=$SHMEMRUN_BOOTSTRAP"
        echo "secret=$SHMEMRUN_SECRET"
        echo "job=$SHMEMRUN_JOB"
        echo "control=$(readlink /proc/$$/fd/$SHMEMRUN_CONTROL_FD | cut -d: -f1)"
        echo "bootfd=${SHMEMRUN_BOOTSTRAP_FD-none}"
        if [ -n "$SHMEMRUN_BOOTSTRAP_FD" ]; then
            link=$(readlink /proc/$$/fd/$SHMEMRUN_BOOTSTRAP_FD)
            ino=${link#socket:[}; ino=${ino%]}
            echo "bootkind=${link%%:*}"
            echo "bootstate=$(awk -v i="$ino" '$10 == i { print $4 }' /proc/net/tcp)"
        fi
        for f in /proc/$$/fd/*; do
            case "$(readlink "$f")" in socket:*) echo "socketfd=${f##*/}";; esac
        done
        echo "common=$COMMON only=${ONLY-unset}"
    "#;
    let report = sh(3, script)
        .output(Output::Capture)
        .env("COMMON", "yes")
        .pe_env(2, "ONLY", "two")
        .env(contract::BOOTSTRAP_FD, "99")
        .run()
        .unwrap();
    assert_eq!(report.exit_code, 0, "{:?}", report.outputs);
    let views: Vec<Vec<String>> = report
        .outputs
        .iter()
        .map(|o| o.stdout_text().lines().map(str::to_owned).collect())
        .collect();
    let field = |pe: usize, key: &str| -> Vec<String> {
        views[pe]
            .iter()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned))
            .collect()
    };
    let boot = field(0, "boot")[0].clone();
    let port: u16 = boot
        .strip_prefix("tcp://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("bad bootstrap address {boot}"));
    assert_ne!(port, 0);
    let secret = field(0, "secret")[0].clone();
    assert_eq!(secret.len(), 32);
    assert!(
        secret
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    let job = field(0, "job")[0].clone();
    assert!(
        job.starts_with(&format!("{}-", std::process::id())),
        "{job}"
    );
    for (pe, view) in views.iter().enumerate() {
        let pe_line = format!("pe={pe} npes=3");
        assert!(view.contains(&pe_line), "{view:?}");
        assert_eq!(field(pe, "boot"), std::slice::from_ref(&boot));
        assert_eq!(field(pe, "secret"), std::slice::from_ref(&secret));
        assert_eq!(field(pe, "job"), std::slice::from_ref(&job));
        assert_eq!(field(pe, "control"), ["pipe"]);
    }
    // The bootstrap socket is on PE 0 only, and it is listening.
    let boot_fd = field(0, "bootfd")[0].clone();
    assert_ne!(boot_fd, "none");
    assert_eq!(field(0, "bootkind"), ["socket"]);
    assert_eq!(field(0, "bootstate"), ["0A"]);
    assert_eq!(field(0, "socketfd"), [boot_fd]);
    for (pe, view) in views.iter().enumerate().skip(1) {
        assert_eq!(field(pe, "bootfd"), ["none"]);
        assert!(field(pe, "socketfd").is_empty(), "{view:?}");
    }
    assert_eq!(field(0, "common"), ["yes only=unset"]);
    assert_eq!(field(2, "common"), ["yes only=two"]);

    // Two launches never share a secret or a job id.
    let other = sh(1, "echo $SHMEMRUN_SECRET $SHMEMRUN_JOB")
        .output(Output::Capture)
        .run()
        .unwrap();
    let other = other.outputs[0].stdout_text().into_owned();
    assert!(!other.contains(&secret) && !other.contains(&job), "{other}");
}

/// Every PE's `GLIBC_TUNABLES` in a job of `n` PEs given `tunables` (`None`: unset).
fn pe_tunables(n: u32, tunables: Option<&str>) -> BTreeSet<String> {
    let mut job = sh(n, r#"echo "${GLIBC_TUNABLES-unset}""#).output(Output::Capture);
    job = match tunables {
        Some(t) => job.env("GLIBC_TUNABLES", t),
        None => job.env_remove("GLIBC_TUNABLES"),
    };
    let report = job.run().unwrap();
    assert_eq!(report.exit_code, 0, "{:?}", report.outputs);
    report
        .outputs
        .iter()
        .map(|o| o.stdout_text().trim().to_owned())
        .collect()
}

#[test]
fn glibc_rseq_is_turned_off_only_when_pes_outnumber_cpus() {
    let cpus = rustix::thread::sched_getaffinity(None)
        .map(|set| set.count())
        .expect("the affinity");
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(pe_tunables(cpus, None), set(&["unset"]));
    assert_eq!(pe_tunables(cpus + 1, None), set(&["glibc.pthread.rseq=0"]));
    assert_eq!(
        pe_tunables(cpus + 1, Some("glibc.malloc.arena_max=2")),
        set(&["glibc.malloc.arena_max=2:glibc.pthread.rseq=0"])
    );
    // A program that asks for the registration keeps it.
    assert_eq!(
        pe_tunables(cpus + 1, Some("glibc.pthread.rseq=1")),
        set(&["glibc.pthread.rseq=1"])
    );
}

#[test]
fn program_is_looked_up_in_path() {
    let report = Job::new("sh")
        .args(["-c", "exit 0"])
        .n_pes(2)
        .timeout(JOB_TIMEOUT)
        .run()
        .unwrap();
    assert_eq!(report.exit_code, 0);
}

#[test]
fn missing_program_is_a_clear_error() {
    let err = Job::new("no-such-shmem-program-xyz")
        .n_pes(2)
        .timeout(JOB_TIMEOUT)
        .run()
        .unwrap_err();
    assert!(
        matches!(err, LaunchError::ProgramNotFound { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("no-such-shmem-program-xyz") && text.contains("PATH"),
        "{text}"
    );
    assert_eq!(err.exit_code(), 127);
    let err = Job::new("/no/such/dir/prog").run().unwrap_err();
    assert!(err.to_string().contains("/no/such/dir/prog"), "{err}");
}

#[test]
fn bad_configurations_are_rejected() {
    assert!(matches!(
        sh(0, "exit 0").run(),
        Err(LaunchError::BadPeCount { n_pes: 0 })
    ));
    assert!(matches!(
        sh(2, "exit 0").pe_env(2, "X", "1").run(),
        Err(LaunchError::PeOutOfRange { pe: 2, n_pes: 2 })
    ));
}

#[test]
fn global_exit_request_outside_a_job_is_an_error() {
    if std::env::var_os(contract::CONTROL_FD).is_none() {
        let err = contract::request_global_exit(1).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        assert!(matches!(contract::launched_pe(), Ok(None)));
    }
}

// ---- Rust PEs: this test binary, re-run as the PE program -------------------------------

fn self_job(role: &str, n: u32) -> Job {
    let exe = std::env::current_exe().expect("the test binary's path");
    Job::new(exe)
        .args([
            "--exact",
            "pe_role_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .n_pes(n)
        .output(Output::Capture)
        .timeout(JOB_TIMEOUT)
        .quiet(true)
}

/// Does the PE's work when this binary runs as a PE of a test job; a no-op otherwise.
#[test]
fn pe_role_helper() {
    let Some(role) = std::env::var_os(ROLE) else {
        return;
    };
    match role.to_str() {
        Some("bootstrap") => role_bootstrap(),
        Some("global_exit") => role_global_exit(),
        other => panic!("unknown role {other:?}"),
    }
}

fn role_bootstrap() {
    let info = contract::launched_pe()
        .unwrap()
        .expect("launched by the test");
    // A second call never yields a second owner of the listener.
    let again = contract::launched_pe().unwrap().unwrap();
    assert!(again.bootstrap_listener.is_none());
    assert_eq!(again.secret, info.secret);
    if info.pe == 0 {
        let listener = info
            .bootstrap_listener
            .expect("PE 0 owns the bootstrap listener");
        assert_eq!(listener.local_addr().unwrap(), info.bootstrap_addr);
        for _ in 1..info.n_pes {
            let (mut peer, _) = listener.accept().unwrap();
            let mut secret = [0u8; contract::SECRET_BYTES];
            peer.read_exact(&mut secret).unwrap();
            assert_eq!(secret, info.secret);
            peer.write_all(b"ok").unwrap();
        }
        println!("PE 0 served {} peers", info.n_pes - 1);
    } else {
        assert!(info.bootstrap_listener.is_none());
        let mut stream = TcpStream::connect(info.bootstrap_addr).unwrap();
        stream.write_all(&info.secret).unwrap();
        let mut reply = [0u8; 2];
        stream.read_exact(&mut reply).unwrap();
        assert_eq!(&reply, b"ok");
        println!("PE {} joined", info.pe);
    }
}

fn role_global_exit() {
    let info = contract::launched_pe().unwrap().unwrap();
    if info.pe == 1 {
        contract::request_global_exit(9).unwrap();
        std::process::exit(9);
    }
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn rust_pes_bootstrap_through_the_inherited_listener() {
    let report = self_job("bootstrap", 3).run().unwrap();
    assert_eq!(report.exit_code, 0, "{:#?}", report.outputs);
    assert!(
        report.outputs[0]
            .stdout_text()
            .contains("PE 0 served 2 peers")
    );
    assert!(report.outputs[2].stdout_text().contains("PE 2 joined"));
}

#[test]
fn rust_pe_global_exit_names_the_caller() {
    let report = self_job("global_exit", 3).run().unwrap();
    assert_eq!(report.exit_code, 9, "{:#?}", report.outputs);
    assert_eq!(
        report.cause,
        Some(StopCause::GlobalExit {
            status: 9,
            pe: Some(1)
        })
    );
    assert_eq!(
        report.failure.as_deref(),
        Some("PE 1 called global_exit(9); stopping the other 2 PEs")
    );
    assert_eq!(report.pes[1].end, PeEnd::Exited(9));
    assert!(matches!(report.pes[0].end, PeEnd::Stopped(_)));
}

// ---- the shmemrun binary ----------------------------------------------------------------

fn shmemrun(args: &[&str]) -> std::process::Output {
    Command::new(SHMEMRUN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run shmemrun")
}

fn sorted_lines(bytes: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn shmemrun_accepts_np_and_passes_hyphen_arguments() {
    let out = shmemrun(&[
        "-np",
        "2",
        "--timeout",
        "20",
        "sh",
        "-c",
        r#"echo "$SHMEMRUN_PE:$1:$2""#,
        "sh",
        "-m",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        sorted_lines(&out.stdout),
        BTreeSet::from(["0:-m:x".to_owned(), "1:-m:x".to_owned()])
    );
    let out = shmemrun(&["-n", "2", "--timeout", "20", "--", "sh", "-c", "exit 0"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn shmemrun_exits_with_the_job_code() {
    let out = shmemrun(&["-n", "2", "--timeout", "20", "sh", "-c", "exit 5"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exited with status 5"));
    let out = shmemrun(&["-n", "2", "--timeout", "0.2", "sleep", "30"]);
    assert_eq!(out.status.code(), Some(124));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("shmemrun: timed out after 0.2 s; PEs still running: 0, 1"),
        "{stderr}"
    );
    let out = shmemrun(&["-n", "2", "no-such-shmem-program-xyz"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-shmem-program-xyz"));
}

#[test]
fn shmemrun_tags_output_lines() {
    let out = shmemrun(&[
        "-n",
        "2",
        "--tag-output",
        "--timeout",
        "20",
        "sh",
        "-c",
        r#"echo "out $SHMEMRUN_PE"; echo "err $SHMEMRUN_PE" >&2; printf "partial $SHMEMRUN_PE""#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        sorted_lines(&out.stdout),
        BTreeSet::from(
            [
                "[PE 0] out 0",
                "[PE 0] partial 0",
                "[PE 1] out 1",
                "[PE 1] partial 1"
            ]
            .map(str::to_owned)
        )
    );
    assert_eq!(
        sorted_lines(&out.stderr),
        BTreeSet::from(["[PE 0] err 0", "[PE 1] err 1"].map(str::to_owned))
    );
}

#[test]
fn shmemrun_help_documents_the_environment() {
    let out = shmemrun(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for name in contract::ALL {
        assert!(help.contains(name), "{name} missing from --help");
    }
    assert!(help.contains("-n, --npes"));
}

/// Starts `shmemrun` with PEs that print their pid and sleep; returns it and the PE pids.
fn start_sleeping_job(n: usize) -> (std::process::Child, Vec<u32>) {
    let mut child = Command::new(SHMEMRUN)
        .args([
            "-n",
            &n.to_string(),
            "--timeout",
            "20",
            "sh",
            "-c",
            "echo $$; exec sleep 30",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start shmemrun");
    let stdout = child.stdout.take().unwrap();
    let pids = BufReader::new(stdout)
        .lines()
        .take(n)
        .map(|l| l.unwrap().trim().parse::<u32>().unwrap())
        .collect();
    (child, pids)
}

fn wait_with_deadline(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("shmemrun did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether `pid` is gone (absent, or a zombie nobody has reaped yet).
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

fn all_gone_within(pids: &[u32], limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if pids.iter().all(|&pid| is_gone(pid)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn signal(pid: u32, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
}

#[test]
fn shmemrun_forwards_sigterm_and_stops_the_job() {
    let (mut child, pids) = start_sleeping_job(3);
    let start = Instant::now();
    signal(child.id(), rustix::process::Signal::TERM);
    let status = wait_with_deadline(&mut child, Duration::from_secs(5));
    eprintln!("SIGTERM -> shmemrun exited in {:?}", start.elapsed());
    assert_eq!(status.code(), Some(128 + 15));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("received SIGTERM"), "{stderr}");
    assert!(
        all_gone_within(&pids, Duration::from_secs(1)),
        "PEs {pids:?} survived"
    );
}

#[test]
fn pes_die_with_a_killed_launcher() {
    let (mut child, pids) = start_sleeping_job(2);
    signal(child.id(), rustix::process::Signal::KILL);
    let _ = wait_with_deadline(&mut child, Duration::from_secs(5));
    assert!(
        all_gone_within(&pids, Duration::from_secs(2)),
        "PEs {pids:?} survived their launcher"
    );
    assert!(
        !pids
            .iter()
            .any(|pid| Path::new(&format!("/proc/{pid}/cmdline")).exists() && !is_gone(*pid))
    );
}

#[test]
fn keep_going_lets_the_survivors_finish() {
    let report = Job::new("/bin/sh")
        .args([
            "-c",
            r#"if [ "$SHMEMRUN_PE" = 1 ]; then kill -9 $$; fi; sleep 0.3; exit 0"#,
        ])
        .n_pes(3)
        .timeout(Duration::from_secs(10))
        .keep_going(true)
        .quiet(true)
        .run()
        .unwrap();
    assert_eq!(report.exit_code, 128 + 9);
    assert!(
        report.cause.is_none(),
        "the job was stopped: {:?}",
        report.cause
    );
    assert!(
        matches!(report.pes[1].end, PeEnd::Signaled(s) if s.0 == 9),
        "{:?}",
        report.pes[1]
    );
    assert_eq!(report.pes[0].end, PeEnd::Exited(0));
    assert_eq!(report.pes[2].end, PeEnd::Exited(0));
    assert!(
        report
            .failure
            .as_deref()
            .is_some_and(|f| f.contains("PE 1")),
        "{:?}",
        report.failure
    );
}

#[test]
fn strict_mode_jobs_get_one_seed_and_a_failure_names_it() {
    // PE 1 fails; keep_going lets PE 0 finish its echo (else the launcher may stop it first).
    let report = sh(2, "echo \"$SHMEM_SIM_STRICT_SEED\"; exit $SHMEMRUN_PE")
        .env("SHMEM_SIM_STRICT", "1")
        .keep_going(true)
        .output(Output::Capture)
        .run()
        .expect("the job starts");
    let seed = report.strict_seed.expect("a strict job has a seed");
    for o in &report.outputs {
        assert_eq!(
            o.stdout_text().trim(),
            seed.to_string(),
            "PE {} got another seed",
            o.pe
        );
    }
    assert!(!report.success());
    // A seed the user gives is the job's, and a job not in strict mode has none.
    let given = sh(1, "exit 0")
        .env("SHMEM_SIM_STRICT", "on")
        .env("SHMEM_SIM_STRICT_SEED", "42")
        .run()
        .expect("the job starts");
    assert_eq!(given.strict_seed, Some(42));
    let relaxed = sh(1, "exit 0")
        .env("SHMEM_SIM_STRICT", "0")
        .run()
        .expect("the job starts");
    assert_eq!(relaxed.strict_seed, None);
    // shmemrun prints the seed of a failed strict job.
    let out = Command::new(SHMEMRUN)
        .args(["-n", "1", "--", "/bin/sh", "-c", "exit 3"])
        .env("SHMEM_SIM_STRICT", "1")
        .env("SHMEM_SIM_STRICT_SEED", "7")
        .output()
        .expect("shmemrun runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ERROR") && err.contains("SHMEM_SIM_STRICT_SEED=7"),
        "{err}"
    );
}
