//! Every PE prints its view of the job: who it is, where its heap is, and what its neighbour
//! put into it.
//!
//! ```text
//! cargo build --example hello && shmemrun -n 4 -- target/debug/examples/hello
//! ```

use shmem::Instance;

fn main() -> Result<(), shmem::Error> {
    let inst = Instance::from_env()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let greeting = inst.calloc::<u8>(64)?;
    let text = format!("hello from PE {me}");
    let mut msg = [0u8; 64];
    msg[..text.len()].copy_from_slice(text.as_bytes());
    greeting.as_slice().put(&msg, (me + 1) % n)?;
    inst.barrier_all()?;
    let got = greeting.as_slice().to_vec(me)?;
    let got = String::from_utf8_lossy(&got)
        .trim_end_matches('\0')
        .to_string();
    println!(
        "PE {me} of {n}: backend {}, heap {} MiB at {:p}; my left neighbour says: \"{got}\"",
        inst.backend_name(),
        inst.heap_size() >> 20,
        inst.heap_base()
    );
    greeting.free()?;
    inst.finalize()
}
