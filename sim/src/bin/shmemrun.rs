//! `shmemrun`: start a SHMEM job of N PEs on this machine (see `shmem_sim::launcher::cli`).

fn main() {
    shmem_sim::launcher::cli::main()
}
