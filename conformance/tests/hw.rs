//! The conformance suite on the hw backend, through the project's ABI-compatible stand-ins of
//! the ACL runtime and CANN SHMEM (`docs/hardware.md`).

fn main() {
    shmem_conformance::runner::main("hw")
}
