//! `shmem-calls`: a fixed loop of one operation on a 1-PE instance, for counting the
//! instructions a call costs with `valgrind --tool=callgrind` (counts repeat exactly, unlike
//! times on this VM).
//!
//! ```text
//! cargo build --release -p shmem-benches --bin shmem-calls
//! valgrind --tool=callgrind --callgrind-out-file=put.out target/release/shmem-calls put 100000
//! callgrind_annotate put.out | head     # total Ir; per call: (total - baseline) / count
//! ```
//!
//! The operations: `none` (the baseline: init and finalize only), `put` and `get` of 8 bytes,
//! `p`, `g`, `fetch_add`, `compare_swap` and `add` on an `i64`, `barrier` (of the single PE).
//!
//! With a third argument `time`, the loop runs in 9 timed batches of COUNT calls and prints
//! `RESULT rust_<op> <ns per call> ns` (the median batch): `benches/c/compare.sh` sets it
//! beside the same loop through the C ABI (`benches/c/osh_calls.c`).

use std::process::ExitCode;

use shmem::{Attributes, Instance};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(op), Some(count)) = (args.get(1), args.get(2).and_then(|c| c.parse::<u64>().ok()))
    else {
        eprintln!(
            "usage: shmem-calls none|put|get|p|g|fetch_add|compare_swap|add|barrier COUNT [time]"
        );
        return ExitCode::FAILURE;
    };
    let timed = args.get(3).is_some_and(|a| a == "time");
    match run(op, count, timed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shmem-calls: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(op: &str, count: u64, timed: bool) -> Result<(), shmem::Error> {
    let port = 20000 + (std::process::id() % 20000) as u16;
    let inst = Instance::init(&Attributes::new(
        0,
        1,
        &format!("tcp://127.0.0.1:{port}"),
        2 << 20,
    ))?;
    let buf = inst.calloc::<i64>(1)?;
    let v = buf.as_slice();
    let e = buf.elem(0);
    let mut x = [0i64];
    // The operation is chosen once, so that the loop holds nothing but the call.
    let mut call: Box<dyn FnMut(i64) -> Result<(), shmem::Error>> = match op {
        "none" => Box::new(|_| Ok(())),
        "put" => Box::new(|i| v.put(&[i], 0)),
        "get" => Box::new(|_| v.get(&mut x, 0)),
        "p" => Box::new(|i| v.p(0, i, 0)),
        "g" => Box::new(|_| v.g(0, 0).map(|_| ())),
        "fetch_add" => Box::new(|_| e.atomic_fetch_add(1, 0).map(|_| ())),
        "compare_swap" => Box::new(|i| e.atomic_compare_swap(i, i + 1, 0).map(|_| ())),
        "add" => Box::new(|_| e.atomic_add(1, 0)),
        "barrier" => Box::new(|_| inst.barrier_all()),
        other => {
            return Err(shmem::Error::InvalidParam(format!(
                "unknown operation {other}"
            )));
        }
    };
    let count = if op == "none" { 0 } else { count };
    if timed {
        const BATCHES: usize = 9;
        let mut per_call = Vec::with_capacity(BATCHES);
        for _ in 0..BATCHES {
            let t = std::time::Instant::now();
            for i in 0..count as i64 {
                call(i)?;
            }
            per_call.push(t.elapsed().as_secs_f64() * 1e9 / count.max(1) as f64);
        }
        per_call.sort_by(f64::total_cmp);
        println!("RESULT rust_{op} {:.3} ns", per_call[BATCHES / 2]);
    } else {
        for i in 0..count as i64 {
            call(i)?;
        }
    }
    drop(call);
    std::hint::black_box(x);
    buf.free()?;
    inst.finalize()
}
