//! How start-up, barriers, an alltoall, finalize and memory grow with the number of PEs, phase
//! by phase, and the ring job's time beside another build's (the parent commit's, for example).
//!
//! ```text
//! cargo build --release -p shmem-benches -p shmem-sim -p shmem --bins --example ring
//! target/release/shmem-scale --pes 64,256,1024
//! target/release/shmem-scale --pes 64,1024 --alltoall 0 --growth 9
//! target/release/shmem-scale --pes 1024 --ab OTHER/target/release --pairs 3
//! target/release/shmem-scale --create 4 --ab OTHER/target/release --pairs 9
//! ```
//!
//! With `--growth PAIRS`, it times only the barrier at the first and the last PE count of
//! `--pes`, in that many interleaved pairs of jobs, and prints each pair's ratio
//! t_barrier(last) / t_barrier(first) and their median.
//!
//! With `--create N`, it times instead the creation and finalisation of one more instance
//! (instance 1, self-launched on a loopback port) on every PE of an `N`-PE job, 20 times per
//! job, beside the same program built against another library (`--ab`).
//!
//! Each PE times its own phases and prints them after finalize; the driver reports, per phase,
//! the slowest PE (a collective phase ends when its last PE does) and the median PE. `spawn`
//! runs from the driver starting `shmemrun` to the PE entering `main`; `bootstrap` to the PE's
//! join of the bootstrap; `segments` to the instance's return from `init` (the memory object's
//! exchange and mapping, and the instance's set-up); `memory` is the PE's private memory plus
//! its page tables after the alltoall (`Private_*` of `/proc/self/smaps_rollup` + `VmPTE`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use shmem::Instance;
use shmem_benches::harness::proc_kib;
use shmem_benches::stats::median;
use shmem_benches::table::Table;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Set for the PEs the driver starts: the driver's clock when it started `shmemrun`.
const T0: &str = "SHMEM_SCALE_T0_NS";
/// Barriers before the timed ones.
const WARM_UP: usize = 10;
/// Set for the PEs the driver starts: the barriers to time (`--barriers`).
const BARRIERS: &str = "SHMEM_SCALE_BARRIERS";
/// Set for the PEs the driver starts: the bytes of the alltoall (`--alltoall`).
const ALLTOALL: &str = "SHMEM_SCALE_ALLTOALL";
/// Marks a PE's result line.
const MARK: &str = "shmem-scale:";
/// Set for the PEs of a `--create` job: the first of the ports instance 1 may use.
const CREATE: &str = "SHMEM_SCALE_CREATE_PORTS";
/// Instances created and finalised per `--create` job.
const CREATES: usize = 20;

#[derive(Parser, Debug)]
#[command(about = "Start-up, barrier, alltoall, finalize and memory per PE as the PEs grow")]
struct Args {
    /// PE counts to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = vec![64u32, 128, 256, 512, 1024])]
    pes: Vec<u32>,
    /// Also time `shmemrun -n N -- ring 100` here and with the `shmemrun` and `ring` of this
    /// directory (another build, such as the parent commit's `target/release`), interleaved.
    #[arg(long)]
    ab: Option<PathBuf>,
    /// A/B pairs per PE count.
    #[arg(long, default_value_t = 3)]
    pairs: usize,
    /// Barriers each job times (a profile of the barrier phase wants more).
    #[arg(long, default_value_t = 100)]
    barriers: usize,
    /// Bytes each PE sends each other PE in the alltoall (0: no alltoall, which at 1,024 PEs
    /// is most of the job's time).
    #[arg(long, default_value_t = 1024)]
    alltoall: usize,
    /// Give up on a job after this many seconds (the parent's 1,024-PE ring took minutes).
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Time creating and finalising an instance on every PE of a job of this many PEs
    /// instead of the sweep.
    #[arg(long)]
    create: Option<u32>,
    /// Instead of the sweep, time the barrier at the first and the last PE count of `--pes` in
    /// this many interleaved pairs of jobs, and print t_barrier(last) / t_barrier(first).
    #[arg(long, value_name = "PAIRS")]
    growth: Option<usize>,
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The time of the library's "bootstrap joined" event, caught by a tracing layer.
static JOINED: Mutex<Option<Instant>> = Mutex::new(None);

struct Joined;

impl<S: tracing::Subscriber> Layer<S> for Joined {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        struct Message(bool);
        impl Visit for Message {
            fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 |= format!("{v:?}") == "bootstrap joined";
                }
            }
        }
        let mut m = Message(false);
        event.record(&mut m);
        if m.0 {
            let mut j = JOINED.lock().unwrap_or_else(|e| e.into_inner());
            j.get_or_insert_with(Instant::now);
        }
    }
}

/// A PE's private memory and its page tables, in KiB.
fn memory_kib() -> (u64, u64) {
    (
        proc_kib("smaps_rollup", "Private_"),
        proc_kib("status", "VmPTE:"),
    )
}

/// A `--create` job's PE: creates and finalises instance 1 `CREATES` times, all PEs together,
/// and prints the mean time of one creation and finalisation (PE 0's clock, from a barrier
/// before the first to a barrier after the last).
fn create_main(first_port: u16) -> Result<(), shmem::Error> {
    let world = Instance::from_env()?;
    let (me, n) = (world.my_pe(), world.n_pes());
    let range = format!("{first_port}:{}", first_port + 64);
    world.barrier_all()?;
    let t = Instant::now();
    for _ in 0..CREATES {
        let mut a = shmem::Attributes::new(me, n, "tcp://127.0.0.1:0", 2 << 20);
        a.instance_id = 1;
        a.port_range = Some(range.clone());
        Instance::init(&a)?.finalize()?;
    }
    world.barrier_all()?;
    let each = t.elapsed().as_secs_f64() / CREATES as f64;
    if me == 0 {
        println!("{MARK} create_finalize={each}");
    }
    world.finalize()
}

fn pe_main(t0_ns: u128, barriers: usize, bytes: usize) -> Result<(), shmem::Error> {
    let entered_ns = now_ns();
    let entered = Instant::now();
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(
        Joined.with_filter(
            tracing_subscriber::filter::Targets::new().with_target("shmem", tracing::Level::DEBUG),
        ),
    ));
    let inst = Instance::from_env()?;
    let ready = Instant::now();
    let joined = JOINED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or(entered);
    // Untimed barriers first, as OSU's benchmarks skip their first iterations: the PEs come
    // out of start-up asleep or still being scheduled in.
    for _ in 0..WARM_UP {
        inst.barrier_all()?;
    }
    let t = Instant::now();
    for _ in 0..barriers {
        inst.barrier_all()?;
    }
    let barrier_time = t.elapsed();
    // The PEs that leave the last barrier first must not start the next phase (zeroing the
    // alltoall's buffers, page fault by page fault) while the others have yet to be scheduled
    // to leave it: that time would count in their barriers.
    inst.barrier_all()?;
    let n = inst.n_pes() as usize;
    let src = inst.calloc::<u8>((n * bytes).max(1))?;
    let dst = inst.calloc::<u8>((n * bytes).max(1))?;
    inst.barrier_all()?;
    let t = Instant::now();
    if bytes > 0 {
        inst.team_world()
            .alltoall(dst.slice(..n * bytes), src.slice(..n * bytes))?;
    }
    inst.barrier_all()?;
    let alltoall = t.elapsed();
    let (private, pte) = memory_kib();
    let me = inst.my_pe();
    let t = Instant::now();
    inst.finalize()?;
    let finalize = t.elapsed();
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "{MARK} pe={} spawn={} bootstrap={} segments={} barrier={} alltoall={} finalize={} memory_kib={} private_kib={private} pte_kib={pte}",
        me,
        entered_ns.saturating_sub(t0_ns) as f64 * 1e-9,
        s(joined - entered),
        s(ready - joined),
        s(barrier_time) / barriers.max(1) as f64,
        s(alltoall),
        s(finalize),
        private + pte,
    );
    Ok(())
}

/// One PE's figures, by name.
type Row = Vec<(String, f64)>;

fn parse(stdout: &str) -> Vec<Row> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(MARK))
        .map(|(_, rest)| {
            rest.split_whitespace()
                .filter_map(|kv| {
                    let (k, v) = kv.split_once('=')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect()
        })
        .collect()
}

/// Runs `shmemrun -n n -- program args` with `env` set, returning its wall time and standard
/// output.
fn run(
    shmemrun: &Path,
    n: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, String)],
    timeout: u64,
) -> Result<(f64, String), String> {
    let t = Instant::now();
    let out = Command::new(shmemrun)
        .args([
            "-n",
            &n.to_string(),
            "--timeout",
            &timeout.to_string(),
            "--",
        ])
        .arg(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .map_err(|e| format!("cannot start {}: {e}", shmemrun.display()))?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{} -n {n} {} failed ({}):\n{}",
            shmemrun.display(),
            program.display(),
            out.status,
            collapse(&String::from_utf8_lossy(&out.stderr))
        ));
    }
    Ok((wall, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// `text` with each line once, in the order of its first appearance, followed by the number of
/// times it came when more than once: a job whose 1,024 PEs fail alike says so in one line.
fn collapse(text: &str) -> String {
    let mut lines: Vec<(&str, usize)> = Vec::new();
    for line in text.lines() {
        match lines.iter_mut().find(|(l, _)| *l == line) {
            Some((_, n)) => *n += 1,
            None => lines.push((line, 1)),
        }
    }
    lines
        .iter()
        .map(|&(l, n)| match n {
            1 => format!("{l}\n"),
            n => format!("{l}  ({n} times)\n"),
        })
        .collect()
}

/// `--create n`: this build's and the other's instance creation, interleaved.
fn create_ab(args: &Args, n: u32, dir: &Path) -> Result<(), String> {
    let other = args.ab.as_deref().unwrap_or(dir);
    let job = |d: &Path| -> Result<f64, String> {
        let port = shmem_benches::harness::free_ports(65).to_string();
        let (shmemrun, program) = (d.join("shmemrun"), d.join("shmem-scale"));
        let (_, stdout) = run(&shmemrun, n, &program, &[], &[(CREATE, port)], args.timeout)?;
        match parse(&stdout).first().and_then(|r| r.first()) {
            Some((_, v)) => Ok(*v),
            None => Err(format!(
                "the create job of {} reported nothing",
                d.display()
            )),
        }
    };
    let (mut mine, mut theirs, mut ratios) = (vec![], vec![], vec![]);
    for _ in 0..args.pairs {
        let (a, b) = (job(dir)?, job(other)?);
        mine.push(a);
        theirs.push(b);
        ratios.push(a / b);
    }
    println!(
        "create + finalize one instance on all {n} PEs ({CREATES} per job, {} interleaved pairs of jobs): this build {:.3} ms, {} {:.3} ms, this/other {:.3} (median of the pairs)",
        args.pairs,
        median(&mut mine) * 1e3,
        other.display(),
        median(&mut theirs) * 1e3,
        median(&mut ratios)
    );
    Ok(())
}

/// One job of the sweep on `n` PEs: its wall time and every PE's figures.
fn sweep_job(shmemrun: &Path, exe: &Path, n: u32, args: &Args) -> Result<(f64, Vec<Row>), String> {
    let (wall, stdout) = run(
        shmemrun,
        n,
        exe,
        &[],
        &[
            (T0, now_ns().to_string()),
            (BARRIERS, args.barriers.to_string()),
            (ALLTOALL, args.alltoall.to_string()),
        ],
        args.timeout,
    )?;
    let rows = parse(&stdout);
    if rows.len() != n as usize {
        return Err(format!("{} of {n} PEs reported", rows.len()));
    }
    Ok((wall, rows))
}

/// Every PE's `key`, times `scale`.
fn values(rows: &[Row], key: &str, scale: f64) -> Vec<f64> {
    rows.iter()
        .filter_map(|r| r.iter().find(|(k, _)| k == key).map(|(_, v)| v * scale))
        .collect()
}

/// The largest of `v` (the slowest PE of a phase); NaN when `v` is empty.
fn slowest(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

/// `--growth PAIRS`: the barrier's growth from the first to the last PE count of `--pes`, the
/// slowest PE's mean barrier of each job, from interleaved pairs of jobs.
fn growth(args: &Args, pairs: usize, shmemrun: &Path, exe: &Path) -> Result<(), String> {
    let (Some(&small), Some(&large)) = (args.pes.first(), args.pes.last()) else {
        return Err("--growth needs PE counts (--pes)".into());
    };
    let barrier = |n: u32| -> Result<f64, String> {
        let (_, rows) = sweep_job(shmemrun, exe, n, args)?;
        Ok(slowest(&values(&rows, "barrier", 1e6)))
    };
    let mut table = Table::new(&[
        "pair",
        &format!("{small} PEs (us)"),
        &format!("{large} PEs (us)"),
        "ratio",
    ]);
    let mut ratios = Vec::with_capacity(pairs);
    for pair in 1..=pairs {
        let (a, b) = (barrier(small)?, barrier(large)?);
        ratios.push(b / a);
        table.row(vec![
            pair.to_string(),
            format!("{a:.3}"),
            format!("{b:.3}"),
            format!("{:.1}", b / a),
        ]);
    }
    print!("{}", table.render());
    println!(
        "t_barrier({large}) / t_barrier({small}): {:.1} (median of {pairs} interleaved pairs; the slowest PE's mean over {} barriers)",
        median(&mut ratios),
        args.barriers
    );
    Ok(())
}

fn driver(args: &Args) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("the program has no directory")?;
    if let Some(n) = args.create {
        return create_ab(args, n, dir);
    }
    let shmemrun = dir.join("shmemrun");
    println!(
        "shmem-scale: SHMEM_PROFILE={}, SHMEM_SYMMETRIC_SIZE={}, wait policy {}, {} CPUs; per phase the slowest PE / the median PE",
        std::env::var("SHMEM_PROFILE").unwrap_or_else(|_| "(default)".into()),
        std::env::var("SHMEM_SYMMETRIC_SIZE").unwrap_or_else(|_| "(default)".into()),
        std::env::var("SHMEM_WAIT_POLICY").unwrap_or_else(|_| "adaptive".into()),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    if let Some(pairs) = args.growth {
        return growth(args, pairs, &shmemrun, &exe);
    }
    let alltoall = match args.alltoall {
        0 => "no alltoall".to_string(),
        b if b % 1024 == 0 => format!("alltoall {} KiB (ms)", b / 1024),
        b => format!("alltoall {b} B (ms)"),
    };
    let phases = [
        ("spawn", "spawn (s)", 1.0),
        ("bootstrap", "bootstrap (s)", 1.0),
        ("segments", "segments + init (s)", 1.0),
        ("barrier", "barrier (us)", 1e6),
        ("alltoall", alltoall.as_str(), 1e3),
        ("finalize", "finalize (s)", 1.0),
        ("memory_kib", "memory/PE (MiB)", 1.0 / 1024.0),
        ("private_kib", "of which private", 1.0 / 1024.0),
        ("pte_kib", "page tables", 1.0 / 1024.0),
    ];
    let mut head = vec!["PEs", "job (s)"];
    head.extend(phases.iter().map(|p| p.1));
    let mut table = Table::new(&head);
    for &n in &args.pes {
        let (wall, rows) = sweep_job(&shmemrun, &exe, n, args)?;
        let mut cells = vec![n.to_string(), format!("{wall:.2}")];
        for (key, _, scale) in phases {
            let mut v = values(&rows, key, scale);
            let max = slowest(&v);
            let mid = if v.is_empty() {
                f64::NAN
            } else {
                median(&mut v)
            };
            cells.push(format!("{max:.3} / {mid:.3}"));
        }
        table.row(cells);
    }
    print!("{}", table.render());
    if let Some(other) = &args.ab {
        let ring = dir.join("examples").join("ring");
        let o_run = other.join("shmemrun");
        let o_ring = Some(other.join("examples").join("ring"))
            .filter(|p| p.exists())
            .unwrap_or_else(|| other.join("ring"));
        println!(
            "\n`shmemrun -n N -- ring 100`: this build against {} ({} interleaved pairs)",
            other.display(),
            args.pairs
        );
        let mut table = Table::new(&[
            "PEs",
            "this build (s)",
            "other (s)",
            "this/other (median of pairs)",
        ]);
        for &n in &args.pes {
            let (mut mine, mut theirs, mut ratios) = (vec![], vec![], vec![]);
            for _ in 0..args.pairs {
                let t0 = || [(T0, now_ns().to_string())];
                let a = run(&shmemrun, n, &ring, &["100"], &t0(), args.timeout)?.0;
                let b = run(&o_run, n, &o_ring, &["100"], &t0(), args.timeout)?.0;
                mine.push(a);
                theirs.push(b);
                ratios.push(a / b);
            }
            table.row(vec![
                n.to_string(),
                format!("{:.2}", median(&mut mine)),
                format!("{:.2}", median(&mut theirs)),
                format!("{:.3}", median(&mut ratios)),
            ]);
        }
        print!("{}", table.render());
    }
    Ok(())
}

fn main() -> ExitCode {
    let env = |k: &str| std::env::var(k).ok();
    let (who, result) = if let Some(port) = env(CREATE).and_then(|v| v.parse().ok()) {
        (
            "shmem-scale PE",
            create_main(port).map_err(|e| e.to_string()),
        )
    } else if let Some(t0) = env(T0).and_then(|v| v.parse().ok()) {
        let barriers = env(BARRIERS).and_then(|v| v.parse().ok()).unwrap_or(100);
        let bytes = env(ALLTOALL).and_then(|v| v.parse().ok()).unwrap_or(1024);
        (
            "shmem-scale PE",
            pe_main(t0, barriers, bytes).map_err(|e| e.to_string()),
        )
    } else {
        ("shmem-scale", driver(&Args::parse()))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One write, so that the lines of many PEs sharing the launcher's pipe never mix.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("{who}: {e}\n").as_bytes(),
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::collapse;

    #[test]
    fn repeated_lines_are_counted_once_in_order() {
        assert_eq!(collapse("a\nb\na\na\nc"), "a  (3 times)\nb\nc\n");
        assert_eq!(collapse(""), "");
    }
}
