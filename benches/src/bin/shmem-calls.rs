//! `shmem-calls`: a fixed loop of one operation on a 1-PE instance, for counting the
//! instructions a call costs with `valgrind --tool=callgrind` (counts repeat exactly, unlike
//! times on this VM). The loop is the function `shmem_calls::calls`, so callgrind can count it
//! alone:
//!
//! ```text
//! cargo build --release -p shmem-benches --bin shmem-calls
//! valgrind --tool=callgrind --toggle-collect='shmem_calls::calls*' \
//!     --callgrind-out-file=put.out target/release/shmem-calls put 1000
//! callgrind_annotate put.out | head     # total Ir of 1,000 calls
//! ```
//!
//! `benches/tests/instructions.rs` does this for every operation (and for the same loops
//! through the C ABIs, `benches/c/osh_calls.c` and `benches/c/cann_calls.cpp`) and compares
//! the counts with the committed baseline.
//!
//! The operations: `none` (an empty loop), `put` of 8 bytes then `quiet`, `get` of 8 bytes,
//! `p`, `g`, `fetch_add`, `compare_swap` and `add` on an `i64`, `barrier` (of the single PE),
//! `switch` (CANN's active instance, alternately 1 and 2, through `shmem_capi::cann`),
//! `malloc_free` (64 bytes), `team_split` (a 1-PE team split from the world, destroyed) and
//! `lock` (an uncontended `std::sync::Mutex` locked and unlocked: the unit of the switch's
//! target).
//!
//! With a third argument `time`, the loop runs in 9 timed batches of COUNT calls and prints
//! `RESULT rust_<op> <ns per call> ns` (the median batch): `benches/c/compare.sh` sets it
//! beside the same loop through the C ABI (`benches/c/osh_calls.c`).

use std::process::ExitCode;

use shmem::{Attributes, Instance, TeamConfig};
use shmem_benches::harness::free_ports;

type Call<'a> = Box<dyn FnMut(i64) -> Result<(), shmem::Error> + 'a>;

const OPS: &str =
    "none|put|get|p|g|fetch_add|compare_swap|add|barrier|switch|malloc_free|team_split|lock";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(op), Some(count)) = (args.get(1), args.get(2).and_then(|c| c.parse::<u64>().ok()))
    else {
        eprintln!("usage: shmem-calls {OPS} COUNT [time]");
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

/// The measured loop: `count` calls and nothing else.
#[inline(never)]
fn calls(call: &mut Call<'_>, count: u64) -> Result<(), shmem::Error> {
    for i in 0..count as i64 {
        call(i)?;
    }
    Ok(())
}

/// One PE of instance `id`. Instance 0 listens on a port that is free now; the others take
/// theirs from `SHMEM_INSTANCE_PORT_RANGE` (start + id, as CANN's do), else from a free range.
fn attributes(id: u64) -> Attributes {
    if id == 0 {
        let port = free_ports(1);
        return Attributes::new(0, 1, &format!("tcp://127.0.0.1:{port}"), 2 << 20);
    }
    let mut a = Attributes::new(0, 1, "tcp://127.0.0.1:0", 2 << 20);
    a.instance_id = id;
    if std::env::var_os("SHMEM_INSTANCE_PORT_RANGE").is_none() {
        static RANGE: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
        let start = *RANGE.get_or_init(|| free_ports(3));
        a.port_range = Some(format!("{start}:{}", start + 2));
    }
    a
}

fn run(op: &str, count: u64, timed: bool) -> Result<(), shmem::Error> {
    let inst = Instance::init(&attributes(0))?;
    let world = inst.team_world();
    let buf = inst.calloc::<i64>(1)?;
    let v = buf.as_slice();
    let e = buf.elem(0);
    let mut x = [0i64];
    let lock = std::sync::Mutex::new(0u64);
    // Two more instances for `switch`, made through CANN's layer as C programs make them.
    let switched = if op == "switch" {
        let flags = shmem_capi::cann::INIT_WITH_DEFAULT;
        vec![
            shmem_capi::cann::init_attr(flags, &attributes(1))?,
            shmem_capi::cann::init_attr(flags, &attributes(2))?,
        ]
    } else {
        Vec::new()
    };
    // The operation is chosen once, so that the loop holds nothing but the call.
    let mut call: Call<'_> = match op {
        "none" => Box::new(|_| Ok(())),
        "put" => Box::new(|i| {
            v.put(&[i], 0)?;
            inst.quiet()
        }),
        "get" => Box::new(|_| v.get(&mut x, 0)),
        "p" => Box::new(|i| v.p(0, i, 0)),
        "g" => Box::new(|_| v.g(0, 0).map(|_| ())),
        "fetch_add" => Box::new(|_| e.atomic_fetch_add(1, 0).map(|_| ())),
        "compare_swap" => Box::new(|i| e.atomic_compare_swap(i, i + 1, 0).map(|_| ())),
        "add" => Box::new(|_| e.atomic_add(1, 0)),
        "barrier" => Box::new(|_| inst.barrier_all()),
        "switch" => Box::new(|i| shmem_capi::cann::instance_ctx_set(1 + (i as u64 & 1))),
        "lock" => Box::new(|_| {
            *lock.lock().expect("not poisoned") += 1;
            Ok(())
        }),
        "malloc_free" => Box::new(|_| inst.malloc::<u8>(64)?.free()),
        "team_split" => {
            Box::new(
                |_| match world.split_strided(0, 1, 1, TeamConfig::default())? {
                    Some(t) => t.destroy(),
                    None => Err(shmem::Error::Inner("the split left this PE out".into())),
                },
            )
        }
        other => {
            return Err(shmem::Error::InvalidParam(format!(
                "unknown operation {other} (one of {OPS})"
            )));
        }
    };
    if timed {
        const BATCHES: usize = 9;
        let mut per_call = Vec::with_capacity(BATCHES);
        for _ in 0..BATCHES {
            let t = std::time::Instant::now();
            calls(&mut call, count)?;
            per_call.push(t.elapsed().as_secs_f64() * 1e9 / count.max(1) as f64);
        }
        per_call.sort_by(f64::total_cmp);
        println!("RESULT rust_{op} {:.3} ns", per_call[BATCHES / 2]);
    } else {
        calls(&mut call, count)?;
    }
    drop(call);
    std::hint::black_box(x);
    for extra in switched {
        shmem_capi::cann::finalize_instance(extra.id())?;
    }
    buf.free()?;
    inst.finalize()
}
