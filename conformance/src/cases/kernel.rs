//! `kernel::` — kernels on simulated AI cores calling SHMEM from every block (the Rust device
//! API, `shmem::Device`): an all-gather staged through UB, signals between the blocks of
//! neighbouring PEs, p/g and `ptr`, the barrier across all blocks of all PEs, and the errors
//! that end a launch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use shmem::{Cmp, Instance, SignalOp, Stream};

use crate::cases::on_both_instances;
use crate::{Case, Ctx, Outcome, check, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("kernel::allgather_staged_through_ub_by_8_blocks", |c| {
            on_both_instances(c, allgather)
        }),
        Case::new("kernel::signals_between_blocks_of_neighbours", |c| {
            on_both_instances(c, signals)
        }),
        Case::new(
            "kernel::p_g_ptr_and_barrier_all_across_blocks",
            barrier_rounds,
        ),
        Case::new(
            "kernel::errors_end_the_launch_naming_kernel_block_and_call",
            errors,
        ),
        // Under the CANN profile the heap is device memory that host code faults on; kernels
        // reach it.
        Case::new("kernel::cann_profile_kernels_reach_the_device_heap", |c| {
            on_both_instances(c, allgather)
        })
        .pes(&[2, 4])
        .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

/// `len` u32 per PE gathered by 8 blocks, each moving its share with `putmem` (through UB in
/// chunks of 16 KiB, so a share spans several chunks) to every PE.
fn allgather(inst: &Instance) -> Outcome {
    const LEN: usize = 20_000; // 80,000 bytes per PE: 10,000 per block, not a multiple of a chunk
    const BLOCKS: u32 = 8;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let input = inst.calloc::<u32>(LEN)?;
    let output = inst.calloc::<u32>(LEN * n as usize)?;
    let mine: Vec<u32> = (0..LEN as u32).map(|i| me << 20 | i).collect();
    input.as_slice().put(&mine, me)?;
    inst.barrier_all()?;
    let (src, dst) = (input.as_ptr() as usize, output.as_ptr() as usize);
    let stream = Stream::new();
    inst.launch(&stream, "allgather", BLOCKS, move |dev| {
        let (me, n, b) = (dev.my_pe(), dev.n_pes(), dev.block_idx() as usize);
        let share = LEN / BLOCKS as usize * 4;
        let at = b * share;
        for pe in 0..n {
            let to = dst + (me as usize * LEN) * 4 + at;
            dev.putmem(to as *mut u8, (src + at) as *const u8, share, pe)?;
        }
        dev.barrier_all()
    })?;
    stream.synchronize()?;
    let got = output.as_slice().to_vec(me)?;
    for pe in 0..n as usize {
        for i in 0..LEN {
            check_eq!(
                got[pe * LEN + i],
                (pe as u32) << 20 | i as u32,
                "element {i} of PE {pe}"
            );
        }
    }
    input.free()?;
    output.free()?;
    Ok(())
}

/// Every block puts its word into the next PE's array and adds 1 to that PE's signal; block 0
/// of each PE waits for all of them, which come from the other PE's blocks.
fn signals(inst: &Instance) -> Outcome {
    const BLOCKS: u32 = 16;
    let me = inst.my_pe();
    let words = inst.calloc::<u32>(BLOCKS as usize)?;
    let sig = inst.calloc::<i32>(1)?;
    let seen = Arc::new(AtomicU32::new(0));
    let (w, s, seen2) = (words.as_ptr() as usize, sig.as_ptr() as usize, seen.clone());
    let stream = Stream::new();
    inst.launch(&stream, "signals", BLOCKS, move |dev| {
        let (me, n, b) = (dev.my_pe(), dev.n_pes(), dev.block_idx());
        let next = (me + 1) % n;
        dev.p(
            (w as *mut u32).wrapping_add(b as usize),
            me * 1000 + b,
            next,
        )?;
        dev.fence()?;
        dev.signal_op(s as *mut i32, 1, SignalOp::Add, next)?;
        if b == 0 {
            let v = dev.signal_wait_until(s as *const i32, Cmp::Eq, BLOCKS as i32)?;
            seen2.store(v as u32, Ordering::SeqCst);
        }
        dev.barrier_all()
    })?;
    stream.synchronize()?;
    check_eq!(seen.load(Ordering::SeqCst), BLOCKS);
    let prev = (me + inst.n_pes() - 1) % inst.n_pes();
    let got = words.as_slice().to_vec(me)?;
    check_eq!(
        got,
        (0..BLOCKS).map(|b| prev * 1000 + b).collect::<Vec<_>>()
    );
    words.free()?;
    sig.free()?;
    Ok(())
}

/// Rounds of the ring increment inside one kernel of 48 blocks: block 0 reads its counter with
/// `g`, all blocks meet every PE's blocks, block 0 stores counter + 1 on the next PE with `p`,
/// and every block meets again; `ptr` names the peer's copy.
fn barrier_rounds(c: &Ctx) -> Outcome {
    let inst = c.world()?;
    let counter = inst.calloc::<u64>(1)?;
    let at = counter.as_ptr() as usize;
    let stream = Stream::new();
    let rounds = 5u64;
    inst.launch(&stream, "ring", 48, move |dev| {
        let (me, n) = (dev.my_pe(), dev.n_pes());
        let next = (me + 1) % n;
        let p = at as *mut u64;
        if dev.ptr(p, next).is_none() || dev.ptr(p, n).is_some() {
            return Err(shmem::KernelError::new("check", "aclshmem_ptr"));
        }
        for round in 1..=rounds {
            let v = dev.g(p, me)?;
            dev.barrier_all()?;
            if dev.block_idx() == 0 {
                dev.p(p, v + 1, next)?;
            }
            dev.barrier_all()?;
            let now = dev.g(p, me)?;
            if now != round {
                return Err(shmem::KernelError::new(
                    "check",
                    format!("round {round}: the counter is {now}"),
                ));
            }
            dev.barrier_all()?;
        }
        Ok(())
    })?;
    stream.synchronize()?;
    check_eq!(counter.as_slice().to_vec(inst.my_pe())?, vec![rounds]);
    counter.free()?;
    inst.finalize()?;
    Ok(())
}

/// A call with a bad address, a barrier in a launch of waves, a bad MTE configuration: each ends
/// its launch with the kernel, the block and the call named; the stream goes on.
fn errors(c: &Ctx) -> Outcome {
    let inst = c.world()?;
    let buf = inst.calloc::<u8>(64)?;
    let at = buf.as_ptr() as usize;
    let stream = Stream::new();
    let on_host = Box::leak(Box::new([0u8; 64])).as_ptr() as usize;
    inst.launch(&stream, "bad_address", 2, move |dev| {
        if dev.block_idx() == 1 {
            dev.putmem(at as *mut u8, on_host as *const u8, 64, 0)?;
        }
        Ok(())
    })?;
    let e = stream
        .synchronize()
        .expect_err("a host source is refused")
        .to_string();
    check!(
        e.contains("kernel bad_address, block 1: aclshmem_putmem:"),
        "{e}"
    );
    inst.launch(&stream, "waves", 49, |dev| dev.barrier_all())?;
    let e = stream
        .synchronize()
        .expect_err("no barrier in waves")
        .to_string();
    check!(
        e.contains("kernel waves, block")
            && e.contains("aclshmem_barrier_all")
            && e.contains("49 blocks"),
        "{e}"
    );
    inst.launch(&stream, "mte", 1, |dev| {
        dev.set_mte_config(190 * 1024, 16 * 1024)
    })?;
    let e = stream.synchronize().expect_err("UB overflow").to_string();
    check!(
        e.contains("kernel mte, block 0: aclshmemx_set_mte_config"),
        "{e}"
    );
    // A good launch on the same stream.
    inst.launch(&stream, "fine", 4, move |dev| {
        dev.set_mte_config(1024, 64)?;
        dev.putmem(at as *mut u8, at as *const u8, 64, dev.my_pe())
    })?;
    stream.synchronize()?;
    inst.barrier_all()?;
    buf.free()?;
    inst.finalize()?;
    Ok(())
}
