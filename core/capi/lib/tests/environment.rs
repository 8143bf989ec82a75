//! C programs in a hostile environment (issue 14, item 6): a 1 kHz interval timer whose
//! handlers interrupt every blocking system call, and a descriptor limit too low for the job.
//! Each either completes or fails with a clear error naming the limit, never hangs.
//! (`fork` and `system()` after init are in `c_api.rs`, with the other ways a PE leaves.)

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{c_program, oshrun_with, text};

/// `conformance/c/signals.c` on 4 PEs: SIGALRM and SIGPROF every millisecond, handled without
/// `SA_RESTART`, through barriers, waits, locks, allocations, team splits and collectives.
#[test]
fn every_routine_completes_under_a_1_khz_timer_whose_signals_interrupt_system_calls() {
    let (dir, exe) = c_program("signals", "signals");
    let out = oshrun_with(&exe, 4, &[], &[]);
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(" ok: ").count(), 4, "{text}");
    // The program runs until every PE took 300 SIGALRMs.
    for line in text.lines().filter(|l| l.contains(" ok: ")) {
        let alarms: u32 = line
            .split(" ok: ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a count in {line:?}"));
        assert!(alarms >= 300, "{line}");
    }
    println!("{}", text.trim());
    let _ = std::fs::remove_dir_all(dir);
}

/// An 8-PE job whose PEs may open only `n` descriptors (`ulimit -n`, soft and hard), for every
/// limit from 6 up, so that descriptors run out at each step of init in turn: duplicating PE
/// 0's socket, connecting, PE 0's server accepting the PEs (its own connection among them),
/// reading the kernel's boot id, and sharing the heap. Each either runs the job or fails at
/// once with an error that names `RLIMIT_NOFILE` and its value; 6 is too few and 64 enough.
#[test]
fn too_few_descriptors_is_a_clear_error_naming_the_limit_never_a_hang() {
    let (dir, exe) = c_program("exit_paths", "nofile");
    let exe = exe.to_str().expect("a UTF-8 path");
    for limit in (6..=32).chain([64]) {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
            .args(["-n", "8", "--timeout", "120", "--", "sh", "-c"])
            .arg(format!("ulimit -n {limit} && exec '{exe}' fork"))
            .env("SHMEM_TIMEOUT", "60")
            .output()
            .expect("oshrun runs");
        let took = start.elapsed();
        let text = text(&out);
        println!(
            "RLIMIT_NOFILE {limit}: ended in {:.2} s",
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(30), "{limit}: {took:?}\n{text}");
        assert!(limit > 6 || !out.status.success(), "{limit}:\n{text}");
        assert!(limit < 64 || out.status.success(), "{limit}:\n{text}");
        if out.status.success() {
            assert_eq!(text.matches(" ok").count(), 8, "{limit}:\n{text}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{limit}:\n{text}");
        assert!(
            text.contains(&format!(
                "(EMFILE; RLIMIT_NOFILE {limit}, hard limit {limit})"
            )),
            "{limit}: no line names the limit:\n{text}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
