//! The program of the exit tests (`core/tests/exit.rs`): how a PE of the Rust API leaves, and
//! what a process may do after init. Run under a launcher, `shmemrun -n 3 -- exit_job MODE`:
//!
//! - `process-exit`: PE 0 calls `std::process::exit(0)` while its instance is live, right after
//!   a barrier. The instance is finalized at exit, so PE 0 stays in the job, its memory
//!   reachable, until the others (one second later) have read it and finalized.
//! - `fork-drop`: after init, a forked child drops its copy of the instance (the last handle in
//!   the child) and exits; the parent PE goes on with a barrier, a ring get and finalize.
//!
//! Every PE that completes its part prints `PE <n> ok`; a failed check prints its reason and
//! the PE exits with 1.

use std::process::ExitCode;
use std::time::Duration;

use shmem::Instance;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let inst = Instance::from_env().expect("the launcher's environment");
    let r = match mode.as_str() {
        "process-exit" => process_exit(inst),
        "fork-drop" => fork_drop(inst),
        _ => Err(format!("unknown mode {mode:?}: process-exit or fork-drop")),
    };
    match r {
        Ok(me) => {
            println!("PE {me} ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether process `pid` runs (exists and is neither a zombie nor dead).
fn running(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X']))
    })
}

fn process_exit(inst: Instance) -> Result<u32, String> {
    let e = |e: shmem::Error| e.to_string();
    let me = inst.my_pe();
    let words = inst.calloc::<u64>(2).map_err(e)?;
    if me == 0 {
        words
            .as_slice()
            .p(0, u64::from(std::process::id()), 0)
            .map_err(e)?;
    }
    inst.barrier_all().map_err(e)?;
    if me == 0 {
        println!("PE 0 leaves by process::exit");
        std::process::exit(0);
    }
    let pid0 = words.as_slice().g(0, 0).map_err(e)?;
    std::thread::sleep(Duration::from_secs(1));
    if !running(pid0) {
        return Err(format!(
            "PE {me}: PE 0 (pid {pid0}) is gone before the others finalized"
        ));
    }
    let before = words.elem(1).atomic_fetch_add(1, 0).map_err(e)?;
    if before >= u64::from(inst.n_pes() - 1) {
        return Err(format!("PE {me}: PE 0's counter read {before}"));
    }
    inst.finalize().map_err(e)?;
    Ok(me)
}

fn fork_drop(inst: Instance) -> Result<u32, String> {
    let e = |e: shmem::Error| e.to_string();
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let word = inst.calloc::<u64>(1).map_err(e)?;
    word.as_slice().p(0, u64::from(me), me).map_err(e)?;
    inst.barrier_all().map_err(e)?;
    let copy = inst.clone();
    // SAFETY: the child only drops values and exits; it takes no lock another thread of the
    // parent might hold (the PE's helper threads do not run in the child).
    match unsafe { libc::fork() } {
        0 => {
            drop(word);
            drop(copy);
            drop(inst);
            std::process::exit(0);
        }
        -1 => return Err(format!("PE {me}: fork failed")),
        child => {
            let mut status = 0;
            // SAFETY: waits for the child just forked; `status` is a valid out-parameter.
            let got = unsafe { libc::waitpid(child, &mut status, 0) };
            if got != child || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
                return Err(format!("PE {me}: the child ended with status {status:#x}"));
            }
        }
    }
    drop(copy);
    inst.barrier_all().map_err(e)?;
    let next = (me + 1) % n;
    let got = word.as_slice().g(0, next).map_err(e)?;
    if got != u64::from(next) {
        return Err(format!("PE {me}: ring get read {got}"));
    }
    inst.barrier_all().map_err(e)?;
    drop(word);
    inst.finalize().map_err(e)?;
    Ok(me)
}
