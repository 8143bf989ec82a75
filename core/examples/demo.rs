//! The Quick start demo: a 4-PE job on the simulator that checks its own results and prints a
//! table.
//!
//! ```text
//! cargo run --release -p shmem --example demo
//! ```
//!
//! Started plainly, it launches itself as 4 PEs (through the same launcher as `shmemrun`);
//! every PE runs each check, the PEs agree on the outcome through symmetric memory, and PE 0
//! prints one row per check. The exit status is non-zero if any check failed on any PE.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use shmem::{Instance, SymBuf};
use shmem_sim::launcher::{Job, Output};

const PES: u32 = 4;

fn main() -> ExitCode {
    if std::env::var_os("SHMEMRUN_PE").is_none() {
        return launch();
    }
    match pe() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::from(2)
        }
    }
}

/// Starts this program as the PEs of a job and returns the job's status.
fn launch() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("demo: cannot find this program: {e}");
            return ExitCode::from(2);
        }
    };
    println!("demo: starting {PES} PEs on the simulator (one process each)");
    let job = Job::new(exe)
        .args(std::env::args_os().skip(1))
        .n_pes(PES)
        .env("SHMEM_SYMMETRIC_SIZE", "32M")
        .timeout(Duration::from_secs(120))
        .output(Output::Inherit);
    match job.run() {
        Ok(report) => ExitCode::from(report.exit_code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::from(2)
        }
    }
}

/// One check: its name and what it did on each PE.
struct Row {
    name: String,
    pes: String,
    ok: bool,
    micros: f64,
    detail: String,
}

/// Runs `check` on every PE; all PEs learn whether it passed everywhere.
fn run_check(
    inst: &Instance,
    votes: &SymBuf<u32>,
    name: &str,
    check: impl FnOnce() -> Result<String, String>,
) -> Result<Row, shmem::Error> {
    let t = Instant::now();
    let outcome = check();
    let micros = t.elapsed().as_secs_f64() * 1e6;
    let me = inst.my_pe();
    let ok = outcome.is_ok();
    // Everyone writes its vote into every PE's table, then reads its own table.
    for pe in 0..inst.n_pes() {
        votes.as_slice().p(me as usize, u32::from(ok), pe)?;
    }
    inst.barrier_all()?;
    let all = votes.as_slice().to_vec(me)?;
    let failed: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 1)
        .map(|(pe, _)| pe.to_string())
        .collect();
    if let Err(e) = &outcome {
        eprintln!("demo: PE {me}: {name}: {e}");
    }
    Ok(Row {
        name: name.to_string(),
        pes: format!("0..{}", inst.n_pes() - 1),
        ok: failed.is_empty(),
        micros,
        detail: if failed.is_empty() {
            outcome.unwrap_or_default()
        } else {
            format!("failed on PE {}", failed.join(", "))
        },
    })
}

fn pe() -> Result<bool, shmem::Error> {
    let inst = Instance::from_env()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let votes = inst.calloc::<u32>(n as usize)?;
    let mut rows = Vec::new();

    let ring = inst.calloc::<u64>(1024)?;
    rows.push(run_check(
        &inst,
        &votes,
        "ring put (8 KiB to the right neighbour)",
        || {
            let data: Vec<u64> = (0..1024).map(|i| u64::from(me) << 32 | i).collect();
            ring.as_slice()
                .put(&data, right)
                .map_err(|e| e.to_string())?;
            inst.barrier_all().map_err(|e| e.to_string())?;
            let got = ring.as_slice().to_vec(me).map_err(|e| e.to_string())?;
            let ok = got
                .iter()
                .enumerate()
                .all(|(i, &v)| v == u64::from(left) << 32 | i as u64);
            if ok {
                Ok(format!("got PE {left}'s data"))
            } else {
                Err("wrong data from the left neighbour".into())
            }
        },
    )?);

    let gathered = inst.calloc::<u32>(n as usize * 16)?;
    rows.push(run_check(
        &inst,
        &votes,
        "allgather (puts + barrier)",
        || {
            let mine: Vec<u32> = (0..16).map(|k| me * 100 + k).collect();
            for pe in 0..n {
                gathered
                    .slice(me as usize * 16..(me as usize + 1) * 16)
                    .put(&mine, pe)
                    .map_err(|e| e.to_string())?;
            }
            inst.barrier_all().map_err(|e| e.to_string())?;
            let got = gathered.as_slice().to_vec(me).map_err(|e| e.to_string())?;
            let want: Vec<u32> = (0..n)
                .flat_map(|p| (0..16).map(move |k| p * 100 + k))
                .collect();
            if got == want {
                Ok(format!("{} values from {n} PEs", want.len()))
            } else {
                Err("allgather mismatch".into())
            }
        },
    )?);

    let counter = inst.calloc::<i32>(1)?;
    rows.push(run_check(
        &inst,
        &votes,
        "barrier ring increment (100 rounds)",
        || {
            for round in 1..=100 {
                let cur = counter.as_slice().g(0, me).map_err(|e| e.to_string())?;
                inst.barrier_all().map_err(|e| e.to_string())?;
                counter
                    .as_slice()
                    .p(0, cur + 1, right)
                    .map_err(|e| e.to_string())?;
                inst.barrier_all().map_err(|e| e.to_string())?;
                if counter.as_slice().g(0, me).map_err(|e| e.to_string())? != round {
                    return Err(format!("round {round}: wrong count"));
                }
            }
            Ok("every PE counted to 100".into())
        },
    )?);

    rows.push(run_check(
        &inst,
        &votes,
        "bad input is refused (PE 7, past the heap)",
        || {
            let bad_pe = ring.as_slice().put(&[0; 1024], 7).is_err();
            let past = inst
                .put_bytes(inst.heap_size() - 4, &[0; 8], right)
                .is_err();
            let intact =
                ring.as_slice().g(0, me).map_err(|e| e.to_string())? == u64::from(left) << 32;
            if bad_pe && past && intact {
                Ok("errors returned, nothing written".into())
            } else {
                Err("a bad access was not refused".into())
            }
        },
    )?);

    if me == 0 {
        println!(
            "\n{:<46} {:<6} {:<6} {:>10}  detail",
            "check", "PEs", "result", "time"
        );
        println!("{}", "-".repeat(100));
        for r in &rows {
            println!(
                "{:<46} {:<6} {:<6} {:>8.0} us  {}",
                r.name,
                r.pes,
                if r.ok { "ok" } else { "FAILED" },
                r.micros,
                r.detail
            );
        }
        let failed = rows.iter().filter(|r| !r.ok).count();
        println!(
            "\n{} of {} checks passed on all {n} PEs",
            rows.len() - failed,
            rows.len()
        );
    }
    let all_ok = rows.iter().all(|r| r.ok);
    for b in [ring.free(), gathered.free(), counter.free(), votes.free()] {
        b?;
    }
    inst.finalize()?;
    Ok(all_ok)
}
