//! `shmem-bench`: put/get latency and bandwidth and barrier latency of the simulator, beside
//! the machine's physical limits (single-thread memcpy, cache-line round trip) and Open MPI's
//! OpenSHMEM, all measured in one run.
//!
//! ```text
//! cargo run --release -p shmem-benches --bin shmem-bench
//! ```
//!
//! The program launches itself as the PEs of each scenario (2 PEs for point-to-point, 2, 4 and
//! 8 for barriers; 8 PEs on this 2-core machine are oversubscribed). Every figure is the median
//! of 9 batch means.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use shmem::Instance;
use shmem_benches::limits;
use shmem_benches::oshmem::{Oshmem, parse_results};
use shmem_benches::stats::{gbps, median_per_op, size, us};
use shmem_benches::table::Table;
use shmem_sim::launcher::{Job, Output};

const SIZES: [usize; 7] = [
    1 << 10,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
];
const ROLE: &str = "SHMEM_BENCH_ROLE";

#[derive(Parser, Debug)]
#[command(
    about = "Benchmarks of the shmem simulator against the machine's limits and Open MPI's OpenSHMEM"
)]
struct Args {
    /// Skip the Open MPI OpenSHMEM comparison.
    #[arg(long)]
    no_oshmem: bool,
    /// PE counts for the barrier measurements.
    #[arg(long, value_delimiter = ',', default_values_t = vec![2u32, 4, 8])]
    barrier_pes: Vec<u32>,
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(ROLE) {
        return match pe_main(&role) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("shmem-bench PE: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let args = Args::parse();
    match driver(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmem-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The PE side: measures and prints `RESULT` lines on PE 0.
fn pe_main(role: &str) -> Result<(), shmem::Error> {
    let inst = Instance::from_env()?;
    let me = inst.my_pe();
    let max = *SIZES.last().expect("sizes");
    let buf = inst.malloc::<u8>(max)?;
    let off = buf.offset();
    let mut local = vec![1u8; max];
    inst.barrier_all()?;
    let mut results = BTreeMap::new();
    if role == "p2p" && me == 0 {
        let peer = 1;
        results.insert(
            "put_lat_8".to_string(),
            median_per_op(9, 20000, || {
                for _ in 0..20000 {
                    inst.put_bytes(off, &local[..8], peer).expect("put");
                    inst.quiet().expect("quiet");
                }
            }),
        );
        results.insert(
            "get_lat_8".to_string(),
            median_per_op(9, 20000, || {
                for _ in 0..20000 {
                    inst.get_bytes(off, &mut local[..8], peer).expect("get");
                }
            }),
        );
        for s in SIZES {
            let reps = ((64usize << 20) / s).max(8);
            results.insert(
                format!("put_bw_{s}"),
                median_per_op(9, reps, || {
                    for _ in 0..reps {
                        inst.put_bytes(off, &local[..s], peer).expect("put");
                    }
                    inst.quiet().expect("quiet");
                }),
            );
            results.insert(
                format!("get_bw_{s}"),
                median_per_op(9, reps, || {
                    for _ in 0..reps {
                        inst.get_bytes(off, &mut local[..s], peer).expect("get");
                    }
                }),
            );
        }
    }
    inst.barrier_all()?;
    let n = inst.n_pes();
    let reps = if n > 4 { 500 } else { 2000 };
    let b = median_per_op(9, reps, || {
        for _ in 0..reps {
            inst.barrier_all().expect("barrier");
        }
    });
    results.insert(format!("barrier_{n}"), b);
    if me == 0 {
        for (k, v) in &results {
            println!("RESULT {k} {v:.9e}");
        }
    }
    buf.free()?;
    inst.finalize()
}

fn launch(role: &str, n: u32) -> Result<BTreeMap<String, f64>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let report = Job::new(exe)
        .n_pes(n)
        .env(ROLE, role)
        .env("SHMEM_SYMMETRIC_SIZE", "16M")
        .timeout(Duration::from_secs(300))
        .output(Output::Capture)
        .run()
        .map_err(|e| e.to_string())?;
    if !report.success() {
        let err = report
            .outputs
            .iter()
            .map(|o| o.stderr_text().into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!(
            "the {role} job on {n} PEs failed: {}\n{err}",
            report.failure.unwrap_or_default()
        ));
    }
    Ok(parse_results(&report.outputs[0].stdout_text()))
}

fn driver(args: &Args) -> Result<(), String> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "shmem-bench: the sim transport on {cpus} CPUs; medians of 9 batches; wait policy {}",
        std::env::var("SHMEM_WAIT_POLICY").unwrap_or_else(|_| "adaptive".into())
    );
    let rtt = limits::cache_line_round_trip();
    let memcpy: BTreeMap<usize, f64> = std::iter::once(8)
        .chain(SIZES)
        .map(|s| (s, limits::memcpy(s)))
        .collect();
    let mut sim = launch("p2p", 2)?;
    for &n in &args.barrier_pes {
        if n != 2 {
            sim.extend(launch("barrier", n)?);
        }
    }
    let mut osh = BTreeMap::new();
    let mut osh_note = String::from("not run (--no-oshmem)");
    if !args.no_oshmem {
        match Oshmem::prepare(&std::env::temp_dir().join("shmem-bench-oshmem")) {
            Err(e) => osh_note = format!("not available: {e}"),
            Ok(o) => {
                osh_note = format!("Open MPI OpenSHMEM via {}", o.oshcc().display());
                match o.run("p2p", 2) {
                    Ok(r) => osh.extend(r),
                    Err(e) => osh_note.push_str(&format!("; p2p failed: {e}")),
                }
                for &n in &args.barrier_pes {
                    if n != 2 {
                        match o.run("barrier", n) {
                            Ok(r) => osh.extend(r),
                            Err(e) => {
                                osh_note.push_str(&format!("; barrier on {n} PEs failed: {e}"))
                            }
                        }
                    }
                }
            }
        }
    }
    let osh_lat = |k: &str| osh.get(k).map_or("-".to_string(), |v| us(*v));
    let osh_bw = |k: &str, s: usize| osh.get(k).map_or("-".to_string(), |v| gbps(s, *v));
    let get = |k: &str| {
        sim.get(k)
            .copied()
            .ok_or_else(|| format!("missing result {k}"))
    };

    let mut t = Table::new(&[
        "operation",
        "size",
        "shmem sim",
        "memcpy (1 thread)",
        "cache-line RTT",
        "OSHMEM",
    ]);
    t.row(vec![
        "put latency".into(),
        size(8),
        us(get("put_lat_8")?),
        us(memcpy[&8]),
        us(rtt),
        osh_lat("put_lat_8"),
    ]);
    t.row(vec![
        "get latency".into(),
        size(8),
        us(get("get_lat_8")?),
        us(memcpy[&8]),
        us(rtt),
        osh_lat("get_lat_8"),
    ]);
    for s in SIZES {
        t.row(vec![
            "put bandwidth".into(),
            size(s),
            gbps(s, get(&format!("put_bw_{s}"))?),
            gbps(s, memcpy[&s]),
            "".into(),
            osh_bw(&format!("put_bw_{s}"), s),
        ]);
    }
    for s in SIZES {
        t.row(vec![
            "get bandwidth".into(),
            size(s),
            gbps(s, get(&format!("get_bw_{s}"))?),
            gbps(s, memcpy[&s]),
            "".into(),
            osh_bw(&format!("get_bw_{s}"), s),
        ]);
    }
    for &n in &args.barrier_pes {
        let over = if n as usize > cpus {
            " (oversubscribed)"
        } else {
            ""
        };
        t.row(vec![
            format!("barrier_all, {n} PEs{over}"),
            "".into(),
            us(get(&format!("barrier_{n}"))?),
            "".into(),
            us(rtt),
            osh_lat(&format!("barrier_{n}")),
        ]);
    }
    print!("{}", t.render());
    println!("OSHMEM column: {osh_note}");
    Ok(())
}
