//! Checks `shmem::mpi` (Open MPI loaded at run time) on every rank of an MPI job.
//!
//! ```text
//! cargo build -p shmem --examples
//! mpirun -np 4 target/debug/examples/mpi_check     # as root: add --allow-run-as-root
//! ```
//!
//! It initialises MPI, then on MPI_COMM_WORLD and on two communicators split from it (the even
//! ranks, and the odd ranks with reversed keys) checks rank and size, runs many interleaved
//! barriers, frees the splits, and checks that bad arguments are refused (that freed and
//! predefined communicators cannot be used or freed is checked by the compiler). Rank 0
//! prints `mpi_check: ok on N ranks` and every rank exits 0 only if everything held; a failing
//! rank prints what failed and exits 1, which makes mpirun end the job.

use std::process::ExitCode;

use shmem::mpi::{Comm, Mpi, MpiErrorKind};

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what()) }
}

fn check_comm(name: &str, comm: Comm<'_>, rank: i32, size: i32) -> Result<(), String> {
    let r = comm.rank().map_err(|e| format!("{name}: {e}"))?;
    let s = comm.size().map_err(|e| format!("{name}: {e}"))?;
    ensure(r == rank && s == size, || {
        format!("{name}: rank {r} of {s}, expected rank {rank} of {size}")
    })
}

fn run() -> Result<(i32, i32), String> {
    let mpi = Mpi::get().map_err(|e| e.to_string())?;
    ensure(!mpi.is_initialized().map_err(|e| e.to_string())?, || {
        "MPI was initialised before init".into()
    })?;
    mpi.init().map_err(|e| e.to_string())?;
    mpi.init().map_err(|e| format!("a second init: {e}"))?;
    ensure(mpi.is_initialized().map_err(|e| e.to_string())?, || {
        "MPI is not initialised after init".into()
    })?;
    let multiple = mpi.thread_multiple().map_err(|e| e.to_string())?;

    let world = mpi.world();
    let rank = world.rank().map_err(|e| e.to_string())?;
    let size = world.size().map_err(|e| e.to_string())?;
    check_comm("MPI_COMM_SELF", mpi.self_comm(), 0, 1)?;

    // Evens: ranks 0, 2, 4, ... in order. Odds (with reversed keys): the last odd rank first.
    let evens = world
        .split((rank % 2 == 0).then_some(0), rank)
        .map_err(|e| e.to_string())?;
    let odds = world
        .split((rank % 2 == 1).then_some(1), -rank)
        .map_err(|e| e.to_string())?;
    ensure(evens.is_some() == (rank % 2 == 0), || {
        format!("rank {rank}: evens split gave {evens:?}")
    })?;
    ensure(odds.is_some() == (rank % 2 == 1), || {
        format!("rank {rank}: odds split gave {odds:?}")
    })?;
    let n_odds = size / 2;
    if let Some(e) = &evens {
        check_comm("evens", e.comm(), rank / 2, (size + 1) / 2)?;
    }
    if let Some(o) = &odds {
        check_comm("odds", o.comm(), n_odds - 1 - rank / 2, n_odds)?;
    }
    let mine = evens.or(odds).ok_or("rank in neither split")?;
    ensure(mine.comm() != world, || {
        "a split returned MPI_COMM_WORLD".into()
    })?;

    // Interleaved barriers on the parent and on the split communicators.
    for round in 0..300 {
        world
            .barrier()
            .map_err(|e| format!("round {round}: world: {e}"))?;
        mine.comm()
            .barrier()
            .map_err(|e| format!("round {round}: split: {e}"))?;
        if round % 7 == 0 {
            check_comm("world", world, rank, size)?;
        }
    }

    // A second split of the same parent coexists with the first.
    let all = world
        .split(Some(0), 0)
        .map_err(|e| e.to_string())?
        .ok_or("color 0 on every rank gave no communicator")?;
    check_comm("all", all.comm(), rank, size)?;
    for _ in 0..50 {
        all.comm().barrier().map_err(|e| format!("all: {e}"))?;
        mine.comm().barrier().map_err(|e| format!("split: {e}"))?;
    }

    // Bad arguments are refused before they reach MPI.
    all.free().map_err(|e| format!("free: {e}"))?;
    let refused = world.split(Some(-3), 0).err();
    ensure(
        refused.as_ref().map(|e| e.kind()) == Some(MpiErrorKind::Usage),
        || format!("a negative color gave {refused:?}"),
    )?;

    mine.free().map_err(|e| format!("free split: {e}"))?;
    world.barrier().map_err(|e| format!("final barrier: {e}"))?;
    mpi.finalize().map_err(|e| e.to_string())?;
    mpi.finalize()
        .map_err(|e| format!("a second finalize: {e}"))?;
    ensure(!mpi.is_initialized().map_err(|e| e.to_string())?, || {
        "MPI is still initialised after finalize".into()
    })?;
    ensure(mpi.init().is_err(), || {
        "init after finalize was accepted".into()
    })?;
    if rank == 0 && !multiple {
        println!("mpi_check: note: MPI does not provide MPI_THREAD_MULTIPLE");
    }
    Ok((rank, size))
}

fn main() -> ExitCode {
    match run() {
        Ok((rank, size)) => {
            if rank == 0 {
                println!("mpi_check: ok on {size} ranks");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let rank = std::env::var("OMPI_COMM_WORLD_RANK").unwrap_or_else(|_| "?".into());
            eprintln!("mpi_check: rank {rank}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
