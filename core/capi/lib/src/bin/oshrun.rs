//! `oshrun`: start an OpenSHMEM job of N PEs on this machine (the same launcher as
//! `shmemrun`).

fn main() {
    shmem_sim::launcher::cli::main()
}
