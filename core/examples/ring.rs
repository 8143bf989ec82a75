//! A ring: every iteration each PE puts a value into its right neighbour's heap, then
//! `barrier_all`, then checks what its left neighbour sent. Exits non-zero on any mismatch.
//!
//! ```text
//! cargo build --release --example ring && shmemrun -n 8 -- target/release/examples/ring 1000
//! ```

use std::process::ExitCode;
use std::time::Instant;

use shmem::Instance;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ring: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, shmem::Error> {
    let iters: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 100,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: ring [ITERATIONS]");
            return Ok(false);
        }
    };
    let inst = Instance::from_env()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    // Two slots, used alternately, so that a fast PE writing round i + 1 cannot overwrite the
    // value its slower neighbour has not checked for round i.
    let slots = inst.calloc::<u64>(2 * 8)?;
    let start = Instant::now();
    let mut ok = true;
    for i in 0..iters {
        let slot = (i % 2) as usize * 8;
        let payload: [u64; 8] =
            std::array::from_fn(|k| (i << 20) ^ (u64::from(me) << 8) ^ k as u64);
        slots.slice(slot..slot + 8).put(&payload, right)?;
        inst.barrier_all()?;
        let got = slots.slice(slot..slot + 8).to_vec(me)?;
        let want: Vec<u64> = (0..8)
            .map(|k| (i << 20) ^ (u64::from(left) << 8) ^ k as u64)
            .collect();
        if got != want {
            eprintln!(
                "ring: PE {me}, iteration {i}: expected {want:?} from PE {left}, got {got:?}"
            );
            ok = false;
            break;
        }
    }
    let elapsed = start.elapsed();
    inst.barrier_all()?;
    if me == 0 && ok {
        println!(
            "ring: {n} PEs, {iters} iterations in {:.3} s ({:.2} us per iteration)",
            elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1e6 / iters.max(1) as f64
        );
    }
    slots.free()?;
    inst.finalize()?;
    Ok(ok)
}
