//! The program of the bootstrap security tests (`core/reliability/tests/security.rs`): a PE of a job that
//! meets at an address the user gives, as CANN programs do (`ip_port`, no launcher).
//!
//! `port_job PE N PORT` becomes PE `PE` of `N` at `tcp://127.0.0.1:PORT`, with the secret of
//! `SHMEM_BOOTSTRAP_SECRET` if set (else CANN's fixed magic), then runs a barrier and prints
//! `PE <pe> joined`. It finalizes when its standard input closes, and prints `PE <pe> ok`.
//! A failed init prints `PE <pe> failed: <error>` and exits with 1.

use std::io::Read;
use std::process::ExitCode;

use shmem::{Attributes, Instance};

fn main() -> ExitCode {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("usage: port_job PE N PORT"))
        .collect();
    let [pe, n, port] = args[..] else {
        panic!("usage: port_job PE N PORT");
    };
    let attrs = Attributes::new(pe, n, &format!("tcp://127.0.0.1:{port}"), 2 << 20);
    let inst = match Instance::init(&attrs).and_then(|i| i.barrier_all().map(|()| i)) {
        Ok(i) => i,
        Err(e) => {
            println!("PE {pe} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("PE {pe} joined");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    match inst.finalize() {
        Ok(()) => {
            println!("PE {pe} ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("PE {pe} failed at finalize: {e}");
            ExitCode::FAILURE
        }
    }
}
