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

/// Memory mappings at the system's limit (`vm.max_map_count`, which no test may lower): each
/// PE of `exit_paths maps <spare>` fills its own mappings up to the limit less `spare` before
/// `shmem_init`, from none left to plenty. Out of mappings a process can start no thread and its
/// allocations begin to fail (before the check, a PE aborted in the allocator or blamed
/// `RLIMIT_NPROC`), so init checks first: each PE either runs the job or fails at once naming
/// `vm.max_map_count`, never a hang or an abort.
#[test]
fn too_few_memory_mappings_is_a_clear_error_naming_the_limit_never_a_hang() {
    let (dir, exe) = c_program("exit_paths", "maps");
    for spare in [0, 3, 10, 30, 51, 52, 60, 100, 200] {
        let start = Instant::now();
        let out = oshrun_with(&exe, 4, &["maps", &spare.to_string()], &[]);
        let took = start.elapsed();
        let text = text(&out);
        println!(
            "{spare} mappings to spare: ended in {:.2} s",
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(30), "{spare}: {took:?}\n{text}");
        assert!(spare < 100 || out.status.success(), "{spare}:\n{text}");
        if out.status.success() {
            assert_eq!(text.matches(" ok").count(), 4, "{spare}:\n{text}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{spare}:\n{text}");
        assert!(
            text.contains("memory mappings of the") && text.contains("(vm.max_map_count)"),
            "{spare}: no line names the limit:\n{text}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A page of the heap the system cannot supply (`exit_paths sigbus`: PE 1 of 2 touches a page
/// of its `shmem_malloc` block that the kernel answers with SIGBUS, as it does when memory runs
/// short under strict overcommit or a memory limit): the PE says which heap, PE, offset and
/// sizes, and ends by SIGBUS, which the launcher names; its peer does not pass a barrier.
#[test]
fn a_heap_page_the_system_cannot_supply_is_reported_naming_the_heap_and_its_size() {
    let (dir, exe) = c_program("exit_paths", "sigbus");
    let out = oshrun_with(&exe, 2, &["sigbus"], &[("SHMEM_SYMMETRIC_SIZE", "16M")]);
    let text = text(&out);
    assert_eq!(out.status.code(), Some(128 + 7), "{text}");
    for says in [
        "shmem: SIGBUS at 0x",
        "the symmetric heap of instance 0 (PE 1's segment, offset 0x",
        "; 2 PEs",
        "vm.overcommit_memory",
        "PE 1 (pid",
        "was killed by signal 7 (SIGBUS)",
    ] {
        assert!(text.contains(says), "{says:?} missing:\n{text}");
    }
    assert!(
        !text.contains("passed a barrier") && !text.contains("wrote a page"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// An 8-PE job of a user allowed `n` processes (`ulimit -u`, soft and hard, counting threads):
/// the launcher cannot start a PE, or a PE cannot start its bootstrap threads. Each fails at
/// once, naming `RLIMIT_NPROC` and its value with the system's `kernel.threads-max` and
/// `kernel.pid_max` (which, system-wide, a test must not lower); 256 runs the job. The limit
/// binds only a user without `CAP_SYS_RESOURCE`, so the job runs as `nobody`.
#[test]
#[cfg_attr(
    not_root,
    ignore = "needs root to run the job as another user (CI runs as root)"
)]
fn too_few_processes_is_a_clear_error_naming_the_limit_never_a_hang() {
    let (dir, exe) = c_program("exit_paths", "nproc");
    let exe = exe.to_str().expect("a UTF-8 path");
    let open = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    open(&dir);
    for limit in [4, 5, 6, 8, 12, 16, 256] {
        let start = Instant::now();
        let out = Command::new("setpriv")
            .args([
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "bash",
                "-c",
            ])
            .arg(format!(
                "ulimit -u {limit} && exec '{}' -n 8 --timeout 120 -- '{exe}' fork",
                env!("CARGO_BIN_EXE_oshrun")
            ))
            .env("SHMEM_TIMEOUT", "60")
            .output()
            .expect("setpriv runs");
        let took = start.elapsed();
        let text = text(&out);
        println!("RLIMIT_NPROC {limit}: ended in {:.2} s", took.as_secs_f64());
        assert!(took < Duration::from_secs(30), "{limit}: {took:?}\n{text}");
        if limit == 256 {
            assert!(out.status.success(), "{limit}:\n{text}");
            assert_eq!(text.matches(" ok").count(), 8, "{limit}:\n{text}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{limit}:\n{text}");
        let named = format!("this user's RLIMIT_NPROC is {limit} (hard limit {limit};");
        assert!(
            text.contains(&named),
            "{limit}: no line names the limit:\n{text}"
        );
        assert!(text.contains("kernel.pid_max = "), "{limit}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
