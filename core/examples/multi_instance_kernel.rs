//! A multi-instance kernel, as in CANN's multi-instance unit test: three instances over the same
//! 4 PEs, and one kernel of 8 blocks per PE that switches every block through the three
//! instances, writing into each instance's buffer on the next PE and meeting that instance's
//! blocks of every PE; then one whose blocks each stay on a different instance.
//!
//! ```text
//! cargo run --release -p shmem --example multi_instance_kernel
//! ```
//!
//! Started plainly, it launches itself as 4 PEs (also runs under `shmemrun -n 4`). The kernel
//! is the Rust form of a kernel built with `MULTI_INSTANCE`: every block calls
//! `instance_ctx_set` before any SHMEM call (`shmem::launch_multi_instance`, `MultiDevice`).

use std::process::ExitCode;
use std::time::Duration;

use shmem::{Attributes, Instance, Stream, SymBuf};
use shmem_sim::launcher::{Job, Output};

const PES: u32 = 4;
const BLOCKS: u32 = 8;
const IDS: [u64; 3] = [1, 2, 3];

fn main() -> ExitCode {
    if std::env::var_os("SHMEMRUN_PE").is_none() {
        let Ok(exe) = std::env::current_exe() else {
            eprintln!("multi_instance_kernel: cannot find this program");
            return ExitCode::from(2);
        };
        let job = Job::new(exe)
            .n_pes(PES)
            .timeout(Duration::from_secs(120))
            .output(Output::Inherit);
        return match job.run() {
            Ok(report) => ExitCode::from(report.exit_code.clamp(0, 255) as u8),
            Err(e) => {
                eprintln!("multi_instance_kernel: {e}");
                ExitCode::from(2)
            }
        };
    }
    match pe() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multi_instance_kernel: {e}");
            ExitCode::from(1)
        }
    }
}

/// The value block `b` of PE `pe` writes into instance `id`'s buffer.
fn stamp(id: u64, pe: u32, b: u32) -> u64 {
    id << 40 | u64::from(pe) << 20 | u64::from(b)
}

fn pe() -> Result<(), String> {
    let e = |e: shmem::Error| e.to_string();
    let world = Instance::from_env().map_err(e)?;
    let (me, n) = (world.my_pe(), world.n_pes());
    // Instance ids 1..3 take ports start + id of a range PE 0 picks and shares.
    let base = world.calloc::<u32>(1).map_err(e)?;
    if me == 0 {
        let port = (20000..30000u16)
            .step_by(97)
            .find(|&p| (p..p + 4).all(|q| std::net::TcpListener::bind(("127.0.0.1", q)).is_ok()))
            .unwrap_or(23000);
        for pe in 0..n {
            base.as_slice().p(0, u32::from(port), pe).map_err(e)?;
        }
    }
    world.barrier_all().map_err(e)?;
    let port = base.as_slice().g(0, me).map_err(e)? as u16;
    let mut insts = Vec::new();
    for id in IDS {
        let mut a = Attributes::new(me, n, "tcp://127.0.0.1:0", 2 << 20);
        a.instance_id = id;
        a.port_range = Some(format!("{port}:{}", port + 3));
        insts.push(Instance::init(&a).map_err(e)?);
    }
    let bufs: Vec<SymBuf<u64>> = insts
        .iter()
        .map(|i| i.calloc(2 * BLOCKS as usize))
        .collect::<Result<_, _>>()
        .map_err(e)?;
    let at: Vec<usize> = bufs.iter().map(|b| b.as_ptr() as usize).collect();
    let stream = Stream::new();
    let a1 = at.clone();
    shmem::launch_multi_instance(&stream, "switch_instances", BLOCKS, move |dev| {
        for (k, id) in IDS.into_iter().enumerate() {
            dev.instance_ctx_set(id)?; // before any SHMEM call, in every block
            let (me, n, b) = (dev.my_pe(), dev.n_pes(), dev.block_idx());
            let slot = (a1[k] as *mut u64).wrapping_add(b as usize);
            dev.p(slot, stamp(id, me, b), (me + 1) % n)?;
            dev.barrier_all()?; // every block of every PE of instance `id`
        }
        Ok(())
    })
    .map_err(e)?;
    let a2 = at.clone();
    shmem::launch_multi_instance(&stream, "one_instance_per_block", BLOCKS, move |dev| {
        let b = dev.block_idx();
        let k = b as usize % IDS.len();
        dev.instance_ctx_set(IDS[k])?;
        let (me, n) = (dev.my_pe(), dev.n_pes());
        let slot = (a2[k] as *mut u64).wrapping_add((BLOCKS + b) as usize);
        dev.p(slot, stamp(IDS[k], me, b) | 1 << 63, (me + 1) % n)?;
        dev.quiet()
    })
    .map_err(e)?;
    stream.synchronize().map_err(e)?;
    for i in &insts {
        i.barrier_all().map_err(e)?;
    }
    let prev = (me + n - 1) % n;
    for (k, (id, b)) in IDS.iter().zip(&bufs).enumerate() {
        let got = b.as_slice().to_vec(me).map_err(e)?;
        for blk in 0..BLOCKS {
            if got[blk as usize] != stamp(*id, prev, blk) {
                return Err(format!(
                    "instance {id}, block {blk}: {:#x}",
                    got[blk as usize]
                ));
            }
            let mixed = got[(BLOCKS + blk) as usize];
            let want = if blk as usize % IDS.len() == k {
                stamp(*id, prev, blk) | 1 << 63
            } else {
                0
            };
            if mixed != want {
                return Err(format!("instance {id}, mixed block {blk}: {mixed:#x}"));
            }
        }
    }
    if me == 0 {
        println!(
            "multi_instance_kernel: {BLOCKS} blocks x {n} PEs switched among instances {IDS:?} and mixed them in one launch; every value verified"
        );
    }
    for b in bufs {
        b.free().map_err(e)?;
    }
    for i in insts {
        i.finalize().map_err(e)?;
    }
    base.free().map_err(e)?;
    world.finalize().map_err(e)
}
