//! The conformance suite on the simulator backend.

fn main() {
    shmem_conformance::runner::main("sim")
}
