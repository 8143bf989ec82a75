//! `shmem-bench`: put/get latency and bandwidth and barrier latency of the simulator, beside
//! the machine's physical limits (single-thread memcpy, cache-line round trip) and Open MPI's
//! OpenSHMEM, all measured in one run; then a second table of remote atomics, put-with-signal
//! and collectives on the world team, against the same OpenSHMEM.
//!
//! ```text
//! cargo run --release -p shmem-benches --bin shmem-bench
//! ```
//!
//! The program launches itself as the PEs of each scenario (2 PEs for point-to-point and
//! atomics, 2, 4 and 8 for barriers and collectives; 8 PEs on this 2-core machine are
//! oversubscribed). Every figure is the median of 9 batch means.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use shmem::{Instance, SignalOp};
use shmem_benches::limits;
use shmem_benches::oshmem::{Oshmem, parse_results};
use shmem_benches::stats::{gbps, median_per_op, mops, size, us};
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
/// Operations per batch of the atomics and put-with-signal measurements.
const AMO_REPS: usize = 20_000;
/// The largest broadcast, in bytes, and the longest reduction, in `i64` elements.
const COLL_BYTES: usize = 64 << 10;
const REDUCE_MAX: usize = 8192;

#[derive(Parser, Debug)]
#[command(
    about = "Benchmarks of the shmem simulator against the machine's limits and Open MPI's OpenSHMEM"
)]
struct Args {
    /// A run that only shows every measurement works (in about a minute, as CI runs it): one
    /// batch per figure, no Open MPI, barriers and collectives on 2 and 4 PEs. Its figures are
    /// not measurements.
    #[arg(long)]
    smoke: bool,
    /// Skip the Open MPI OpenSHMEM comparison.
    #[arg(long)]
    no_oshmem: bool,
    /// Also measure the multi-instance costs (switching, create/finalize, 255 live instances).
    #[arg(long)]
    multi_instance: bool,
    /// Also measure kernels on simulated AI cores: launch overhead, kernel put bandwidth per
    /// block count, and the kernel barrier_all latency.
    #[arg(long)]
    kernels: bool,
    /// PE counts for the barrier measurements.
    #[arg(long, value_delimiter = ',', default_values_t = vec![2u32, 4, 8])]
    barrier_pes: Vec<u32>,
    /// Skip the collectives of the second table (the atomics are still measured).
    #[arg(long)]
    no_collectives: bool,
    /// PE counts for the collectives.
    #[arg(long, value_delimiter = ',', default_values_t = vec![2u32, 4, 8])]
    coll_pes: Vec<u32>,
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
    let mut args = Args::parse();
    if args.smoke {
        // The PEs inherit the setting, which shortens every batch loop (`stats::smoke`).
        // SAFETY: nothing else runs yet: the driver is single-threaded until it launches jobs.
        unsafe { std::env::set_var(shmem_benches::stats::SMOKE, "1") };
        args.no_oshmem = true;
        args.barrier_pes = vec![2, 4];
        args.coll_pes = vec![2, 4];
    }
    match driver(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmem-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A port range that every PE of the multi-instance scenario uses, chosen by the driver.
const RANGE_VAR: &str = "SHMEM_BENCH_PORT_RANGE";

fn rss_kib() -> f64 {
    shmem_benches::harness::proc_kib("status", "VmRSS:") as f64
}

fn open_fds() -> f64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()) as f64
}

/// The multi-instance costs: switching the active instance (CANN's context set), creating and
/// finalising an instance on every PE, and 255 live instances.
fn multi_instance(
    world: &Instance,
    results: &mut BTreeMap<String, f64>,
) -> Result<(), shmem::Error> {
    let me = world.my_pe();
    let n = world.n_pes();
    let range = std::env::var(RANGE_VAR).unwrap_or_else(|_| "21000:21300".into());
    let attrs = |id: u64| {
        let mut a = shmem::Attributes::new(me, n, "tcp://127.0.0.1:0", 2 << 20);
        a.instance_id = id;
        a.port_range = Some(range.clone());
        a
    };
    // Create + finalize of instance 1, 21 rounds.
    let create = median_per_op(9, 2, || {
        for _ in 0..2 {
            Instance::init(&attrs(1))
                .expect("init")
                .finalize()
                .expect("finalize");
        }
    });
    results.insert("mi_create_finalize".into(), create);
    // Switching the active instance between two live instances (CANN's ctx_set).
    let a = shmem_capi::cann::init_attr(shmem_capi::cann::INIT_WITH_DEFAULT, &attrs(2))?;
    let b = shmem_capi::cann::init_attr(shmem_capi::cann::INIT_WITH_DEFAULT, &attrs(3))?;
    let switch = median_per_op(9, 100_000, || {
        for k in 0..100_000u64 {
            shmem_capi::cann::instance_ctx_set(2 + (k & 1)).expect("ctx_set");
        }
    });
    results.insert("mi_switch".into(), switch);
    shmem_capi::cann::finalize_instance(2)?;
    shmem_capi::cann::finalize_instance(3)?;
    drop((a, b));
    world.barrier_all()?;
    // 255 live instances (1..=255).
    let (rss0, fds0) = (rss_kib(), open_fds());
    let t = std::time::Instant::now();
    let live: Vec<Instance> = (1..=255)
        .map(|id| Instance::init(&attrs(id)))
        .collect::<Result<_, _>>()?;
    let created = t.elapsed().as_secs_f64();
    world.barrier_all()?;
    let (rss1, fds1) = (rss_kib(), open_fds());
    let t = std::time::Instant::now();
    for inst in &live {
        inst.finalize()?;
    }
    let finalized = t.elapsed().as_secs_f64();
    drop(live);
    world.barrier_all()?;
    let (rss2, fds2) = (rss_kib(), open_fds());
    // Every PE reports its figures; PE 0 prints them all.
    let mine = [
        created,
        finalized,
        rss1 - rss0,
        fds1 - fds0,
        rss2 - rss0,
        fds2 - fds0,
    ];
    let table = world.calloc::<f64>(mine.len() * n as usize)?;
    table
        .slice(me as usize * mine.len()..(me as usize + 1) * mine.len())
        .put(&mine, 0)?;
    world.barrier_all()?;
    if me == 0 {
        let all = table.as_slice().to_vec(0)?;
        for (pe, row) in all.chunks(mine.len()).enumerate() {
            for (k, name) in [
                "create255_s",
                "finalize255_s",
                "rss255_kib",
                "fds255",
                "rss_after_kib",
                "fds_after",
            ]
            .iter()
            .enumerate()
            {
                results.insert(format!("mi_pe{pe}_{name}"), row[k]);
            }
        }
    }
    table.free()?;
    Ok(())
}

/// Remote atomics on `i64` and put-with-signal, PE 0 to PE 1 (as `shmem_int64_atomic_*` and
/// `shmem_putmem_signal` in the C twin).
fn atomics(inst: &Instance, results: &mut BTreeMap<String, f64>) -> Result<(), shmem::Error> {
    // The fetch-and-add word and the compare-and-swap word, which only the swaps update.
    let words = inst.calloc::<i64>(2)?;
    let sig = inst.calloc::<u64>(1)?;
    let data = inst.malloc::<u8>(8)?;
    inst.barrier_all()?;
    if inst.my_pe() == 0 {
        let peer = 1;
        let (word, cswap, sig) = (words.elem(0), words.elem(1), sig.elem(0));
        results.insert(
            "amo_fetch_add_lat".into(),
            median_per_op(9, AMO_REPS, || {
                for _ in 0..AMO_REPS {
                    word.atomic_fetch_add(1, peer).expect("fetch_add");
                }
            }),
        );
        // Every swap succeeds: the word on PE 1 counts the calls from zero.
        let mut calls = 0i64;
        results.insert(
            "amo_cswap_lat".into(),
            median_per_op(9, AMO_REPS, || {
                for _ in 0..AMO_REPS {
                    cswap
                        .atomic_compare_swap(calls, calls + 1, peer)
                        .expect("compare_swap");
                    calls += 1;
                }
            }),
        );
        results.insert(
            "amo_add_rate".into(),
            median_per_op(9, AMO_REPS, || {
                for _ in 0..AMO_REPS {
                    word.atomic_add(1, peer).expect("add");
                }
                inst.quiet().expect("quiet");
            }),
        );
        let local = [1u8; 8];
        let mut value = 0u64;
        results.insert(
            "put_signal_lat_8".into(),
            median_per_op(9, AMO_REPS, || {
                for _ in 0..AMO_REPS {
                    value += 1;
                    data.as_slice()
                        .put_signal(&local, sig, value, SignalOp::Set, peer)
                        .expect("put_signal");
                    inst.quiet().expect("quiet");
                }
            }),
        );
    }
    inst.barrier_all()?;
    data.free()?;
    sig.free()?;
    words.free()
}

/// Operations per batch of a collective on `n` PEs: fewer when PEs outnumber the 2 cores.
fn coll_reps(n: u32, large: bool) -> usize {
    match (large, n) {
        (false, 0..=2) => 2000,
        (false, 3..=4) => 500,
        (false, _) => 200,
        (true, 0..=2) => 200,
        (true, 3..=4) => 100,
        (true, _) => 40,
    }
}

/// Collectives on the world team, each followed by `barrier_all` (timed until the last PE
/// returns, as `benches/oshmem/oshmem_bench.c` times OSHMEM's), timed on PE 0.
fn collectives(inst: &Instance, results: &mut BTreeMap<String, f64>) -> Result<(), shmem::Error> {
    let world = inst.team_world();
    let n = world.n_pes();
    let blocks = 8 * n as usize;
    let src = inst.calloc::<u8>(COLL_BYTES.max(blocks))?;
    let dst = inst.calloc::<u8>(COLL_BYTES.max(blocks))?;
    let red_src = inst.calloc::<i64>(REDUCE_MAX)?;
    let red_dst = inst.calloc::<i64>(REDUCE_MAX)?;
    type Op<'a> = &'a dyn Fn() -> Result<(), shmem::Error>;
    let ops: [(&str, bool, Op<'_>); 6] = [
        ("bcast_8", false, &|| {
            world.broadcast(dst.slice(..8), src.slice(..8), 0)
        }),
        ("bcast_65536", true, &|| {
            world.broadcast(dst.slice(..COLL_BYTES), src.slice(..COLL_BYTES), 0)
        }),
        ("sum_reduce_1", false, &|| {
            world.sum_reduce(red_dst.slice(..1), red_src.slice(..1))
        }),
        ("sum_reduce_8192", true, &|| {
            world.sum_reduce(red_dst.as_slice(), red_src.as_slice())
        }),
        ("fcollect_8", false, &|| {
            world.fcollect(dst.slice(..blocks), src.slice(..8))
        }),
        ("alltoall_8", false, &|| {
            world.alltoall(dst.slice(..blocks), src.slice(..blocks))
        }),
    ];
    for (key, large, op) in ops {
        inst.barrier_all()?;
        let reps = coll_reps(n, large);
        let t = median_per_op(9, reps, || {
            for _ in 0..reps {
                op().expect(key);
                inst.barrier_all().expect("barrier_all");
            }
        });
        results.insert(format!("{key}_{n}"), t);
    }
    inst.barrier_all()?;
    red_dst.free()?;
    red_src.free()?;
    dst.free()?;
    src.free()
}

/// Prints the results as `RESULT` lines, on PE 0 only.
fn print_results(inst: &Instance, results: &BTreeMap<String, f64>) {
    if inst.my_pe() == 0 {
        for (k, v) in results {
            println!("RESULT {k} {v:.9e}");
        }
    }
}

/// Block counts and sizes of the kernel put and get bandwidth.
const KERNEL_BLOCKS: [u32; 4] = [1, 2, 8, 48];
const KERNEL_SIZES: [usize; 3] = [64 << 10, 1 << 20, 4 << 20];
/// Blocks per PE of the kernel `barrier_all`.
const KERNEL_BARRIER_BLOCKS: u32 = 8;

/// Kernels on simulated AI cores, PE 0 measuring towards PE 1 (both launch, in step): an empty
/// 1-block launch and its synchronisation; puts and gets of each size split among the blocks
/// (each block's share through its UB), many in one launch so that the launch is not counted;
/// `barrier_all` from 8 blocks of both PEs.
fn kernels(inst: &Instance, results: &mut BTreeMap<String, f64>) -> Result<(), shmem::Error> {
    let (me, peer) = (inst.my_pe(), 1 - inst.my_pe());
    let max = *KERNEL_SIZES.last().expect("sizes");
    let src = inst.malloc::<u8>(max)?;
    let dst = inst.malloc::<u8>(max)?;
    let (s, d) = (src.as_ptr() as usize, dst.as_ptr() as usize);
    let stream = shmem::Stream::new();
    inst.barrier_all()?;
    let reps = 200;
    results.insert(
        "kernel_launch".into(),
        median_per_op(9, reps, || {
            for _ in 0..reps {
                inst.launch(&stream, "empty", 1, |_| Ok(()))
                    .expect("launch");
                stream.synchronize().expect("synchronize");
            }
        }),
    );
    for op in ["put", "get"] {
        for blocks in KERNEL_BLOCKS {
            for size in KERNEL_SIZES {
                // 64 MiB a launch: the launch is a small part of it.
                let transfers = (64usize << 20) / size;
                inst.barrier_all()?;
                let t = median_per_op(5, transfers, || {
                    inst.launch(&stream, op, blocks, move |dev| {
                        let share = size.div_ceil(blocks as usize);
                        let b = dev.block_idx() as usize;
                        let (lo, hi) = ((b * share).min(size), ((b + 1) * share).min(size));
                        if me == 0 && hi > lo {
                            for _ in 0..transfers {
                                let (to, from) = ((d + lo) as *mut u8, (s + lo) as *const u8);
                                if op == "put" {
                                    dev.putmem(to, from, hi - lo, peer)?;
                                } else {
                                    dev.getmem(to, from, hi - lo, peer)?;
                                }
                            }
                        }
                        dev.sync_all()
                    })
                    .expect("launch");
                    stream.synchronize().expect("synchronize");
                });
                results.insert(format!("kernel_{op}_{blocks}_{size}"), t);
            }
        }
    }
    inst.barrier_all()?;
    let per_launch = 500;
    let t = median_per_op(5, per_launch, || {
        inst.launch(&stream, "barrier", KERNEL_BARRIER_BLOCKS, move |dev| {
            for _ in 0..per_launch {
                dev.barrier_all()?;
            }
            Ok(())
        })
        .expect("launch");
        stream.synchronize().expect("synchronize");
    });
    results.insert("kernel_barrier".into(), t);
    // CANN's host path on a stream: `aclshmemx_putmem_on_stream` of 8 bytes, then
    // `aclrtSynchronizeStream`; `aclshmemx_barrier_on_stream` (a 1-block kernel), then the same.
    let ctx = inst.stream_ctx(&stream)?;
    let word = dst.slice(..8).on(&ctx);
    inst.barrier_all()?;
    let reps = 200;
    results.insert(
        "stream_put".into(),
        median_per_op(9, reps, || {
            for _ in 0..reps {
                word.put(&[1; 8], peer).expect("put on the stream");
                stream.synchronize().expect("synchronize");
            }
        }),
    );
    inst.barrier_all()?;
    let reps = 100;
    results.insert(
        "stream_barrier".into(),
        median_per_op(9, reps, || {
            for _ in 0..reps {
                inst.launch(&stream, "barrier_on_stream", 1, |dev| dev.barrier_all())
                    .expect("launch");
                stream.synchronize().expect("synchronize");
            }
        }),
    );
    ctx.destroy()?;
    inst.barrier_all()?;
    src.free()?;
    dst.free()
}

/// Sizes of the put-beside-memcpy comparison.
const COPY_SIZES: [usize; 8] = [
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
];

/// The extra cache lines per call of the memcpy loops beside the put: 1, the least any call with
/// state of its own reads; 3, the least a put reads (its instance's line, its transport's and the
/// target's wake-up word).
const EXTRA_LINES: [usize; 2] = [1, 3];

/// One cache line of memory.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u64; 8]);

/// Put against a memcpy loop with the identical source and destination (PE 1's heap through
/// this PE's mapping of it), batches interleaved: per size, the median over 9 pairs of the
/// memcpy's time over the put's (the put's share of memcpy bandwidth) and of the put's time
/// less the memcpy's per call (its overhead); beside them, what reading 1 and 3 more cache lines
/// per call adds to the memcpy, the floor of the overhead on a host whose L1d the copy fills.
fn put_beside_memcpy(
    inst: &Instance,
    results: &mut BTreeMap<String, f64>,
) -> Result<(), shmem::Error> {
    let max = *COPY_SIZES.last().expect("sizes");
    let buf = inst.malloc::<u8>(max)?;
    let local = vec![1u8; max];
    inst.barrier_all()?;
    if inst.my_pe() == 0 {
        let peer = 1;
        let dst = buf
            .as_slice()
            .ptr(peer)
            .ok_or_else(|| shmem::Error::NotSupported("no host mapping of the peer".into()))?;
        let lines = Box::new([Line([0; 8]); EXTRA_LINES[1]]);
        for s in COPY_SIZES {
            let reps = ((64usize << 20) / s).clamp(8, 20_000);
            let vs = buf.slice(0..s);
            let put = || {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    vs.put(&local[..s], peer).expect("put");
                }
                inst.quiet().expect("quiet");
                t.elapsed().as_secs_f64() / reps as f64
            };
            // The memcpy loop, reading `k` more cache lines per call away from the copy's (which
            // loses lines to them when it fills the L1d).
            let copy = |k: usize| {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    for l in &lines[..k] {
                        // SAFETY: `l` is a live, aligned `Line`.
                        unsafe { std::ptr::read_volatile(std::hint::black_box(l)) };
                    }
                    // SAFETY: `dst` maps PE 1's heap of `max >= s` bytes, which nobody else
                    // touches during the measurement; `local` holds `s` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            std::hint::black_box(local.as_ptr()),
                            dst.as_ptr(),
                            s,
                        )
                    };
                    std::hint::black_box(dst);
                }
                t.elapsed().as_secs_f64() / reps as f64
            };
            let (_, _) = (put(), copy(0));
            let pairs = if shmem_benches::stats::smoke() { 1 } else { 9 };
            let (mut ratio, mut over) = (vec![], vec![]);
            let mut lines_over = [vec![], vec![]];
            for _ in 0..pairs {
                let (p, c) = (put(), copy(0));
                ratio.push(c / p);
                over.push(p - c);
                for (k, o) in EXTRA_LINES.into_iter().zip(&mut lines_over) {
                    o.push(copy(k) - c);
                }
            }
            for (k, mut o) in EXTRA_LINES.into_iter().zip(lines_over) {
                results.insert(
                    format!("copy_lines_{k}_over_{s}"),
                    shmem_benches::stats::median(&mut o),
                );
            }
            results.insert(
                format!("copy_ratio_{s}"),
                shmem_benches::stats::median(&mut ratio),
            );
            results.insert(
                format!("copy_over_{s}"),
                shmem_benches::stats::median(&mut over),
            );
        }
    }
    inst.barrier_all()?;
    buf.free()
}

/// The PE side: measures and prints `RESULT` lines on PE 0.
fn pe_main(role: &str) -> Result<(), shmem::Error> {
    let inst = Instance::from_env()?;
    if role == "copy" {
        let mut results = BTreeMap::new();
        put_beside_memcpy(&inst, &mut results)?;
        print_results(&inst, &results);
        return inst.finalize();
    }
    if role == "kernel" {
        let mut results = BTreeMap::new();
        kernels(&inst, &mut results)?;
        print_results(&inst, &results);
        return inst.finalize();
    }
    if role == "amo" || role == "coll" {
        let mut results = BTreeMap::new();
        if role == "amo" {
            atomics(&inst, &mut results)?;
        } else {
            collectives(&inst, &mut results)?;
        }
        print_results(&inst, &results);
        return inst.finalize();
    }
    let me = inst.my_pe();
    let max = *SIZES.last().expect("sizes");
    let buf = inst.malloc::<u8>(max)?;
    let mut local = vec![1u8; max];
    inst.barrier_all()?;
    let mut results = BTreeMap::new();
    if role == "p2p" && me == 0 {
        let peer = 1;
        let v8 = buf.slice(0..8);
        results.insert(
            "put_lat_8".to_string(),
            median_per_op(9, 20000, || {
                for _ in 0..20000 {
                    v8.put(&local[..8], peer).expect("put");
                    inst.quiet().expect("quiet");
                }
            }),
        );
        results.insert(
            "get_lat_8".to_string(),
            median_per_op(9, 20000, || {
                for _ in 0..20000 {
                    v8.get(&mut local[..8], peer).expect("get");
                }
            }),
        );
        for s in SIZES {
            let reps = ((64usize << 20) / s).max(8);
            let vs = buf.slice(0..s);
            results.insert(
                format!("put_bw_{s}"),
                median_per_op(9, reps, || {
                    for _ in 0..reps {
                        vs.put(&local[..s], peer).expect("put");
                    }
                    inst.quiet().expect("quiet");
                }),
            );
            results.insert(
                format!("get_bw_{s}"),
                median_per_op(9, reps, || {
                    for _ in 0..reps {
                        vs.get(&mut local[..s], peer).expect("get");
                    }
                }),
            );
        }
    }
    inst.barrier_all()?;
    if role == "multi_instance" {
        multi_instance(&inst, &mut results)?;
    }
    let n = inst.n_pes();
    let reps = if n > 4 { 500 } else { 2000 };
    let b = median_per_op(9, reps, || {
        for _ in 0..reps {
            inst.barrier_all().expect("barrier");
        }
    });
    results.insert(format!("barrier_{n}"), b);
    print_results(&inst, &results);
    buf.free()?;
    inst.finalize()
}

/// A block of 300 free ports below the ephemeral range, for the instances' bootstrap servers.
fn free_port_range() -> String {
    let base = (0..100u16)
        .map(|k| 20000 + (std::process::id() as u16 % 37 + k * 53) % 40 * 300)
        .find(|&b| {
            (b + 1..=b + 255)
                .step_by(17)
                .all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        })
        .unwrap_or(21000);
    format!("{base}:{}", base + 299)
}

fn launch(role: &str, n: u32) -> Result<BTreeMap<String, f64>, String> {
    launch_with(role, n, &[])
}

/// [`launch`] with more environment.
fn launch_with(role: &str, n: u32, env: &[(&str, &str)]) -> Result<BTreeMap<String, f64>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut job = Job::new(exe);
    for (k, v) in env {
        job = job.env(k, v);
    }
    let report = job
        .n_pes(n)
        .env(ROLE, role)
        .env(RANGE_VAR, free_port_range())
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
    let mut lib = None;
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
                lib = Some(o);
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
    // The heap must be host-mapped for the memcpy side: the OpenSHMEM profile's.
    let copy = launch_with("copy", 2, &[("SHMEM_PROFILE", "openshmem")])?;
    let extra = EXTRA_LINES.map(|k| format!("memcpy reading {k} more line(s)"));
    let mut header = vec![
        "put beside memcpy into the same peer mapping",
        "put / memcpy bandwidth",
        "put overhead per call",
    ];
    header.extend(extra.iter().map(String::as_str));
    let mut t = Table::new(&header);
    for s in COPY_SIZES {
        let g = |k: String| copy.get(&k).copied().ok_or(format!("missing result {k}"));
        let mut row = vec![
            size(s),
            format!("{:.2}", g(format!("copy_ratio_{s}"))?),
            format!("{:.1} ns", g(format!("copy_over_{s}"))? * 1e9),
        ];
        for k in EXTRA_LINES {
            row.push(format!(
                "{:.1} ns",
                g(format!("copy_lines_{k}_over_{s}"))? * 1e9
            ));
        }
        t.row(row);
    }
    println!("\n2 PEs, medians of 9 interleaved pairs of batches:");
    print!("{}", t.render());
    atomics_and_collectives(args, lib.as_ref(), &osh_note, cpus)?;
    if args.kernels {
        let k = launch("kernel", 2)?;
        let g = |key: &str| {
            k.get(key)
                .copied()
                .ok_or_else(|| format!("missing result {key}"))
        };
        println!("\nkernels on simulated AI cores, 2 PEs (medians of 9 batches; bandwidth: of 5):");
        println!(
            "  launch + synchronise an empty 1-block kernel: {}",
            us(g("kernel_launch")?)
        );
        // The floor of a kernel barrier when blocks outnumber the cores: every block of every
        // PE runs once, one hand-off after another on each core.
        let turns = f64::from(KERNEL_BARRIER_BLOCKS * 2) / cpus.max(1) as f64;
        let barrier = g("kernel_barrier")?;
        match limits::same_core_yield_handoff() {
            Some(h) => println!(
                "  barrier_all from {KERNEL_BARRIER_BLOCKS} blocks of each PE: {} = {:.1} x ({} blocks / {cpus} cores) x a same-core yield hand-off ({})",
                us(barrier),
                barrier / (turns * h),
                KERNEL_BARRIER_BLOCKS * 2,
                us(h)
            ),
            None => println!(
                "  barrier_all from {KERNEL_BARRIER_BLOCKS} blocks of each PE: {} (no hand-off figure: threads cannot be pinned here)",
                us(barrier)
            ),
        }
        println!(
            "  CANN's stream path, 2 PEs: an 8-byte put on a stream + synchronise: {}; a barrier on the stream (a 1-block kernel) + synchronise: {}",
            us(g("stream_put")?),
            us(g("stream_barrier")?)
        );
        // Every transfer goes through UB: two copies. One block is one thread's memcpy;
        // several blocks share the cores, so their bound is the cores' aggregate.
        let mut t = Table::new(&[
            "kernel transfer, inside one launch",
            "1 block",
            "/ (memcpy/2)",
            "2 blocks",
            "8 blocks",
            "48 blocks",
            "2+ blocks / (2-thread memcpy/2)",
        ]);
        // The references, once per size: half of one memcpy, half of two at once.
        let halves: Vec<(usize, f64, f64)> = KERNEL_SIZES
            .iter()
            .map(|&size| {
                (
                    size,
                    limits::memcpy(size) * 2.0,
                    limits::memcpy_parallel(size, 2) * 2.0,
                )
            })
            .collect();
        for op in ["put", "get"] {
            for &(size, half_copy, half_pair) in &halves {
                let k = |blocks: u32| g(&format!("kernel_{op}_{blocks}_{size}"));
                let mut row = vec![
                    format!("{op} {}", shmem_benches::stats::size(size)),
                    gbps(size, k(1)?),
                    format!("{:.2}", half_copy / k(1)?),
                ];
                let mut best = f64::INFINITY;
                for blocks in [2, 8, 48] {
                    row.push(gbps(size, k(blocks)?));
                    best = best.min(k(blocks)?);
                }
                row.push(format!("{:.2} (best)", half_pair / best));
                t.row(row);
            }
        }
        print!("{}", t.render());
    }
    if args.multi_instance {
        let mi = launch("multi_instance", 4)?;
        let g = |k: &str| {
            mi.get(k)
                .copied()
                .ok_or_else(|| format!("missing result {k}"))
        };
        println!("\nmulti-instance, 4 PEs (medians of 9 batches):");
        println!(
            "  switch the active instance (cann::instance_ctx_set): {}",
            us(g("mi_switch")?)
        );
        println!(
            "  create + finalize one instance on all 4 PEs:         {}",
            us(g("mi_create_finalize")?)
        );
        let mut t = Table::new(&[
            "PE",
            "create 255",
            "finalize 255",
            "memory of 255 live",
            "descriptors of 255 live",
            "left after finalize",
        ]);
        for pe in 0..4 {
            let k = |name: &str| g(&format!("mi_pe{pe}_{name}"));
            t.row(vec![
                pe.to_string(),
                format!("{:.0} ms", k("create255_s")? * 1e3),
                format!("{:.0} ms", k("finalize255_s")? * 1e3),
                format!("+{:.1} MiB", k("rss255_kib")? / 1024.0),
                format!("+{:.0}", k("fds255")?),
                format!(
                    "{:+.1} MiB, {:+.0} fds",
                    k("rss_after_kib")? / 1024.0,
                    k("fds_after")?
                ),
            ]);
        }
        print!("{}", t.render());
    }
    Ok(())
}

/// The second table: remote atomics and put-with-signal on 2 PEs, and collectives on the world
/// team at each of `--coll-pes`, beside OSHMEM (`lib`, when it is available).
fn atomics_and_collectives(
    args: &Args,
    lib: Option<&Oshmem>,
    osh_note: &str,
    cpus: usize,
) -> Result<(), String> {
    let coll_pes: &[u32] = if args.no_collectives {
        &[]
    } else {
        &args.coll_pes
    };
    let jobs: Vec<(&str, u32)> = std::iter::once(("amo", 2))
        .chain(coll_pes.iter().map(|&n| ("coll", n)))
        .collect();
    let mut sim = BTreeMap::new();
    for &(role, n) in &jobs {
        sim.extend(launch(role, n)?);
    }
    let mut osh = BTreeMap::new();
    let mut notes = Vec::new();
    if let Some(o) = lib {
        for &(mode, n) in &jobs {
            match o.run_with_notes(mode, n) {
                Ok((results, job_notes)) => {
                    osh.extend(results);
                    for note in job_notes {
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                    }
                }
                Err(e) => notes.push(format!("{mode} on {n} PEs failed: {e}")),
            }
        }
    }
    // A row: the simulator's figure and OSHMEM's, both formatted by `fmt`.
    type Fmt = fn(f64) -> String;
    let row = |op: String, what: String, key: &str, fmt: Fmt| {
        let sim = sim
            .get(key)
            .copied()
            .ok_or_else(|| format!("missing result {key}"))?;
        let osh = osh.get(key).map_or("-".to_string(), |v| fmt(*v));
        Ok::<_, String>(vec![op, what, fmt(sim), osh])
    };
    let mut t = Table::new(&["operation", "size", "shmem sim", "OSHMEM"]);
    let amos: [(&str, &str, &str, Fmt); 4] = [
        ("atomic_fetch_add latency", "i64", "amo_fetch_add_lat", us),
        ("atomic_compare_swap latency", "i64", "amo_cswap_lat", us),
        (
            "atomic_add rate (then one quiet)",
            "i64",
            "amo_add_rate",
            mops,
        ),
        ("put_signal + quiet latency", "8 B", "put_signal_lat_8", us),
    ];
    for (op, what, key, fmt) in amos {
        t.row(row(op.into(), what.into(), key, fmt)?);
    }
    let colls = [
        ("broadcast", "bcast_8", size(8)),
        ("broadcast", "bcast_65536", size(COLL_BYTES)),
        ("sum_reduce", "sum_reduce_1", "1 x i64".to_string()),
        (
            "sum_reduce",
            "sum_reduce_8192",
            format!("{REDUCE_MAX} x i64"),
        ),
        ("fcollect", "fcollect_8", format!("{} per PE", size(8))),
        ("alltoall", "alltoall_8", format!("{} per PE", size(8))),
    ];
    for (op, key, what) in &colls {
        for &n in coll_pes {
            let over = if n as usize > cpus {
                " (oversubscribed)"
            } else {
                ""
            };
            let op = format!("{op}, {n} PEs{over}");
            t.row(row(op, what.clone(), &format!("{key}_{n}"), us)?);
        }
    }
    let colls_title = if coll_pes.is_empty() {
        ""
    } else {
        ", and collectives on the world team"
    };
    println!("\nremote atomics, PE 0 to PE 1{colls_title}:");
    print!("{}", t.render());
    if !coll_pes.is_empty() {
        println!(
            "Each collective is followed by barrier_all, on both sides, so a row is the time until\n\
             the last PE returns (the barrier rows above give its share)."
        );
    }
    match lib {
        Some(o) => println!(
            "OSHMEM column: Open MPI OpenSHMEM via {}",
            o.oshcc().display()
        ),
        None => println!("OSHMEM column: {osh_note}"),
    }
    for note in &notes {
        println!("  {note}");
    }
    Ok(())
}
