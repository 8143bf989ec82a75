//! The Quick start demo: CANN's multi-instance scenario (`examples/multi_instance`) on 4 PEs of
//! the simulator, checking its own results and printing one row per instance.
//!
//! ```text
//! cargo run --release -p shmem --example demo
//! ```
//!
//! Started plainly, it launches itself as 4 PEs through the same launcher as `shmemrun`; it
//! also runs under `shmemrun -n 4` and under Open MPI's `mpirun -np 4` (no MPI calls: the PEs
//! meet through a job-local rendezvous). Besides the world instance 0, every PE takes part in
//! the instances it belongs to:
//!
//! | instance | PEs | life |
//! |---|---|---|
//! | 1 | 0, 1, 2, 3 | created, checked, finalised |
//! | 2 | 0, 3 | created and kept |
//! | 3 | 1, 3 | created, checked, finalised |
//! | 4 | 2, 3 | created and kept (PE 3 is now in 2 and 4 at once) |
//! | 5 | 1, 2 | created and kept |
//! | 2, 4, 5 | | checked together, then finalised |
//!
//! Each check is a malloc/free smoke test, an allgather of several sizes built from puts and a
//! barrier, and a kernel allgather as CANN's example runs it on the NPU: on simulated AI cores,
//! 8 blocks for less than 2 MiB per PE and 16 above (CANN's small- and large-data paths), each
//! block putting its share to every member with a signal, and every PE's block 0 waiting for all
//! the signals (no barrier). Everything is verified against values computed locally. The PEs report to PE 0 through
//! instance 0, and the exit status is non-zero if any check failed anywhere.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use shmem::{Attributes, Cmp, Instance, SignalOp, Stream, SymBuf};
use shmem_sim::launcher::{Job, Output};

const PES: u32 = 4;
/// (instance id, members in rank order).
const INSTANCES: [(u64, &[u32]); 5] = [
    (1, &[0, 1, 2, 3]),
    (2, &[0, 3]),
    (3, &[1, 3]),
    (4, &[2, 3]),
    (5, &[1, 2]),
];
/// Allgather sizes, in u32 elements per PE.
const SIZES: [usize; 6] = [1, 7, 64, 1000, 16 << 10, 64 << 10];
/// Kernel allgather sizes, in u32 elements per PE: CANN's small-data path (below 2 MiB) and its
/// large-data path.
const KERNEL_SIZES: [usize; 2] = [1000, 600_000];
/// CANN's example switches from 8 to 16 blocks at this many bytes per PE.
const DATA_SIZE_THRESHOLD: usize = 2 << 20;

fn main() -> ExitCode {
    let launched = [
        "SHMEMRUN_PE",
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if !launched {
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
    println!(
        "demo: CANN's multi-instance scenario on {PES} PEs of the simulator (one process each)"
    );
    let job = Job::new(exe)
        .args(std::env::args_os().skip(1))
        .n_pes(PES)
        .env("SHMEM_SYMMETRIC_SIZE", "16M")
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

/// A port range every PE will use: `SHMEM_INSTANCE_PORT_RANGE` if set, else a free one that
/// PE 0 finds and sends to everyone through instance 0.
fn port_range(world: &Instance) -> Result<String, shmem::Error> {
    if let Ok(r) = std::env::var("SHMEM_INSTANCE_PORT_RANGE") {
        return Ok(r);
    }
    let cell = world.calloc::<u32>(1)?;
    if world.my_pe() == 0 {
        let free = |base: u16| {
            (base + 1..=base + 5).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        };
        let base = (0..200)
            .map(|_| 20000 + rand_u16() % 10000)
            .find(|&b| free(b))
            .unwrap_or(23000);
        for pe in 0..world.n_pes() {
            cell.as_slice().p(0, u32::from(base), pe)?;
        }
    }
    world.barrier_all()?;
    let base = cell.as_slice().g(0, world.my_pe())? as u16;
    cell.free()?;
    Ok(format!("{base}:{}", base + 10))
}

fn rand_u16() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (t ^ std::process::id().rotate_left(16)) as u16
}

/// The attributes of instance `id` for this PE, if it is a member.
fn attrs(id: u64, members: &[u32], me: u32, range: &str) -> Option<Attributes> {
    let rank = members.iter().position(|&p| p == me)?;
    let mut a = Attributes::new(
        rank as u32,
        members.len() as u32,
        "tcp://127.0.0.1:0",
        16 << 20,
    );
    a.instance_id = id;
    a.port_range = Some(range.to_string());
    a.init_timeout = std::time::Duration::from_secs(30);
    a.op_timeout = std::time::Duration::from_secs(30);
    Some(a)
}

/// The value rank `r` contributes at index `i` of instance `id`'s allgather of `size`.
fn value(id: u64, size: usize, r: u32, i: usize) -> u32 {
    (id as u32) << 28 ^ (r << 24) ^ (size as u32).wrapping_mul(2654435761) ^ i as u32
}

/// The checks of one instance: a malloc/free smoke test and the allgathers. Returns a
/// description of what was verified.
fn check(inst: &Instance) -> Result<String, String> {
    let e = |e: shmem::Error| e.to_string();
    let (me, n) = (inst.my_pe(), inst.n_pes());
    // malloc/free: several sizes and alignments, all released again.
    let before = inst.heap_free();
    let blocks: Vec<SymBuf<u8>> = [16usize, 4096, 1 << 20, 100_000]
        .iter()
        .map(|&s| inst.malloc::<u8>(s))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let aligned = inst.align::<u8>(1 << 20, 64).map_err(e)?;
    if !(aligned.as_ptr() as usize).is_multiple_of(1 << 20) {
        return Err("align(1 MiB) is not aligned".into());
    }
    aligned.free().map_err(e)?;
    for b in blocks {
        b.free().map_err(e)?;
    }
    if inst.heap_free() != before {
        return Err("malloc/free leaked".into());
    }
    // allgather: every rank puts its block into every member's buffer, then a barrier.
    let mut elems = 0;
    for size in SIZES {
        let buf: SymBuf<u32> = inst.calloc(size * n as usize).map_err(e)?;
        let mine: Vec<u32> = (0..size).map(|i| value(inst.id(), size, me, i)).collect();
        for pe in 0..n {
            buf.slice(me as usize * size..(me as usize + 1) * size)
                .put(&mine, pe)
                .map_err(e)?;
        }
        inst.barrier_all().map_err(e)?;
        let got = buf.as_slice().to_vec(me).map_err(e)?;
        for r in 0..n {
            for i in 0..size {
                if got[r as usize * size + i] != value(inst.id(), size, r, i) {
                    return Err(format!(
                        "allgather of {size}: element {i} from rank {r} is wrong"
                    ));
                }
            }
        }
        elems += size * n as usize;
        inst.barrier_all().map_err(e)?;
        buf.free().map_err(e)?;
    }
    for size in KERNEL_SIZES {
        kernel_allgather(inst, size)?;
    }
    Ok(format!(
        "malloc/free ok; allgather of {} sizes ({elems} values) ok; kernel allgather ok",
        SIZES.len()
    ))
}

/// The kernel allgather of `size` u32 per PE (see the module documentation), verified.
fn kernel_allgather(inst: &Instance, size: usize) -> Result<(), String> {
    let e = |e: shmem::Error| e.to_string();
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let blocks: u32 = if size * 4 < DATA_SIZE_THRESHOLD {
        8
    } else {
        16
    };
    let input: SymBuf<u32> = inst.malloc(size).map_err(e)?;
    let output: SymBuf<u32> = inst.calloc(size * n as usize).map_err(e)?;
    let flag: SymBuf<i32> = inst.calloc(1).map_err(e)?;
    let mine: Vec<u32> = (0..size)
        .map(|i| value(inst.id(), size, me, i) ^ 1)
        .collect();
    input.as_slice().put(&mine, me).map_err(e)?;
    inst.barrier_all().map_err(e)?; // every input and flag is ready before any block runs
    let (src, dst, sig) = (
        input.as_ptr() as usize,
        output.as_ptr() as usize,
        flag.as_ptr() as usize,
    );
    let stream = Stream::new();
    inst.launch(&stream, "allgather", blocks, move |dev| {
        let (me, n, b) = (dev.my_pe(), dev.n_pes(), dev.block_idx() as usize);
        let share = size.div_ceil(blocks as usize);
        let (lo, hi) = ((b * share).min(size), ((b + 1) * share).min(size));
        for pe in 0..n {
            let to = dst + (me as usize * size + lo) * 4;
            dev.putmem_signal(
                to as *mut u8,
                (src + lo * 4) as *const u8,
                (hi - lo) * 4,
                sig as *mut i32,
                1,
                SignalOp::Add,
                pe,
            )?;
        }
        if b == 0 {
            // Every block of every member has delivered its share here.
            dev.signal_wait_until(sig as *const i32, Cmp::Eq, (blocks * n) as i32)?;
        }
        dev.sync_all()
    })
    .map_err(e)?;
    stream.synchronize().map_err(e)?;
    let got = output.as_slice().to_vec(me).map_err(e)?;
    for r in 0..n {
        for i in 0..size {
            if got[r as usize * size + i] != value(inst.id(), size, r, i) ^ 1 {
                return Err(format!(
                    "kernel allgather of {size} ({blocks} blocks): element {i} from rank {r} is wrong"
                ));
            }
        }
    }
    inst.barrier_all().map_err(e)?; // nobody's kernel writes here any more
    input.free().map_err(e)?;
    output.free().map_err(e)?;
    flag.free().map_err(e)?;
    Ok(())
}

/// What a PE reports about one instance: 1 = passed, 2 = failed, and the time.
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Report {
    status: u32,
    micros: u32,
}

fn run(
    inst: &Instance,
    reports: &SymBuf<Report>,
    me: u32,
    failures: &mut Vec<String>,
) -> Result<(), shmem::Error> {
    let t = Instant::now();
    let outcome = check(inst);
    let micros = t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
    if let Err(why) = &outcome {
        failures.push(format!("instance {}: {why}", inst.id()));
    }
    let slot = (inst.id() as usize - 1) * PES as usize + me as usize;
    let status = if outcome.is_ok() { 1 } else { 2 };
    reports.at(slot).put(&[Report { status, micros }], 0)
}

fn pe() -> Result<bool, shmem::Error> {
    let world = Instance::from_env()?;
    let me = world.my_pe();
    if world.n_pes() != PES {
        eprintln!("demo: the scenario needs {PES} PEs, not {}", world.n_pes());
        return Ok(false);
    }
    let range = port_range(&world)?;
    let reports = world.calloc::<Report>(INSTANCES.len() * PES as usize)?;
    let mut failures = Vec::new();
    let init = |id: u64| -> Result<Option<Instance>, shmem::Error> {
        let (_, members) = INSTANCES[id as usize - 1];
        attrs(id, members, me, &range)
            .map(|a| Instance::init(&a))
            .transpose()
    };
    let start = Instant::now();
    // Instance 1: everyone; created, checked, destroyed.
    if let Some(i1) = init(1)? {
        run(&i1, &reports, me, &mut failures)?;
        i1.finalize()?;
    }
    // Instance 2 on {0, 3} is created and kept; 3 on {1, 3} created, checked, destroyed.
    let i2 = init(2)?;
    if let Some(i3) = init(3)? {
        run(&i3, &reports, me, &mut failures)?;
        i3.finalize()?;
    }
    // Instances 4 on {2, 3} and 5 on {1, 2}: PE 3 is now in 2 and 4, PE 2 in 4 and 5.
    let i4 = init(4)?;
    let i5 = init(5)?;
    let kept = [i2, i4, i5];
    for inst in kept.iter().flatten() {
        run(inst, &reports, me, &mut failures)?;
    }
    for inst in kept.iter().flatten() {
        inst.finalize()?;
    }
    let total = start.elapsed();
    for f in &failures {
        eprintln!("demo: PE {me}: {f}");
    }
    world.barrier_all()?;
    let mut ok = true;
    if me == 0 {
        let all = reports.as_slice().to_vec(0)?;
        println!(
            "\n{:<9} {:<12} {:<8} {:>10}  checks",
            "instance", "PEs", "result", "time"
        );
        println!("{}", "-".repeat(86));
        for (k, (id, members)) in INSTANCES.iter().enumerate() {
            let rows: Vec<Report> = members
                .iter()
                .map(|&p| all[k * PES as usize + p as usize])
                .collect();
            let passed = rows.iter().all(|r| r.status == 1);
            let slowest = rows.iter().map(|r| r.micros).max().unwrap_or(0);
            ok &= passed;
            let pes = members
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let result = if passed { "ok" } else { "FAILED" };
            let what = if passed {
                format!(
                    "malloc/free, allgather of {} sizes, kernel allgather (8 and 16 blocks)",
                    SIZES.len()
                )
            } else {
                "see the errors above".into()
            };
            println!(
                "{:<9} {:<12} {:<8} {:>7} us  {what}",
                id,
                format!("{{{pes}}}"),
                result,
                slowest
            );
        }
        println!(
            "\n{} of {} instances verified on every member PE; all finalised ({:.0} ms)",
            INSTANCES
                .iter()
                .enumerate()
                .filter(|(k, (_, m))| m
                    .iter()
                    .all(|&p| all[k * PES as usize + p as usize].status == 1))
                .count(),
            INSTANCES.len(),
            total.as_secs_f64() * 1e3
        );
    }
    // Everyone learns the verdict: PE 0 writes it into every PE's copy of the first slot.
    let verdict = world.calloc::<u32>(1)?;
    if me == 0 {
        for pe in 0..PES {
            verdict.as_slice().p(0, if ok { 1 } else { 2 }, pe)?;
        }
    }
    world.barrier_all()?;
    let ok = verdict.as_slice().g(0, me)? == 1 && failures.is_empty();
    verdict.free()?;
    reports.free()?;
    world.finalize()?;
    Ok(ok)
}
