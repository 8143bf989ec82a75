//! `kernel::` — kernels on simulated AI cores calling SHMEM from every block (the Rust device
//! API, `shmem::Device`): an all-gather staged through UB, signals between the blocks of
//! neighbouring PEs, p/g and `ptr`, the barrier across all blocks of all PEs, and the errors
//! that end a launch.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use shmem::{Cmp, Instance, NonContiguousCopyParam, SignalOp, Stream};

use crate::cases::{multi_instance, on_both_instances};
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
        Case::new(
            "kernel::multi_instance_kernels_switch_and_mix_instances",
            multi_instance,
        ),
        Case::new("kernel::device_atomics_from_every_block", atomics),
        Case::new(
            "kernel::team_barrier_and_pe_mapping_in_a_kernel",
            team_barrier,
        ),
        // The CANN transport has no host atomics; its AI cores have.
        Case::new("kernel::cann_profile_keeps_device_atomics", atomics)
            .pes(&[2, 4])
            .env(&[("SHMEM_PROFILE", "cann")]),
        Case::new("kernel::every_transfer_form_and_the_wait_family", |c| {
            on_both_instances(c, transfer_forms)
        }),
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
    inst.launch(&stream, "event", 1, move |dev| {
        dev.mte_put_nbi(at as *mut u8, at as *const u8, 0, 64, 64, 0, 8)
    })?;
    let e = stream.synchronize().expect_err("sync_id 8").to_string();
    check!(
        e.contains("kernel event, block 0: aclshmemx_mte_put_nbi: sync_id 8"),
        "{e}"
    );
    inst.launch(&stream, "unaligned", 1, move |dev| {
        dev.put_from_ub(at as *mut u8, 3, 8, 0)
    })?;
    let e = stream.synchronize().expect_err("UB offset 3").to_string();
    check!(
        e.contains("kernel unaligned, block 0: aclshmem_put_nbi (ub2gm)"),
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

/// Typed put and get (and `_nbi`), a strided put of rows, the MTE engine's own put through a
/// 64-byte UB buffer, ub2gm put and get, put with signal, and the wait family on the words
/// (`view`): each moves the next PE's data to the right elements and nothing else.
fn transfer_forms(inst: &Instance) -> Outcome {
    const N: usize = 64;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let prev = (me + n - 1) % n;
    let src = inst.calloc::<i64>(N)?;
    let typed = inst.calloc::<i64>(N)?;
    let strided = inst.calloc::<i64>(N)?;
    let mte = inst.calloc::<i64>(N)?;
    let ub2gm = inst.calloc::<i64>(N)?;
    let got = inst.calloc::<i64>(N)?;
    let sig = inst.calloc::<i32>(1)?;
    let mine: Vec<i64> = (0..N as i64).map(|i| -(i64::from(me) << 40) - i).collect();
    src.as_slice().put(&mine, me)?;
    // The guard value every element not written keeps.
    for b in [&typed, &strided, &mte, &ub2gm] {
        b.as_slice().put(&[0x5A5A_5A5A_5A5A_5A5A; N], me)?;
    }
    inst.barrier_all()?;
    let a = |b: &shmem::SymBuf<i64>| b.as_ptr() as usize;
    let (s, t, st, m, u, g, sg) = (
        a(&src),
        a(&typed),
        a(&strided),
        a(&mte),
        a(&ub2gm),
        a(&got),
        sig.as_ptr() as usize,
    );
    let stream = Stream::new();
    inst.launch(&stream, "forms", 1, move |dev| {
        let (me, n) = (dev.my_pe(), dev.n_pes());
        let next = (me + 1) % n;
        let p = |x: usize| x as *mut i64;
        // Typed: elements 1..9 to the next PE's typed[2..10]; then a get back of its src[0..2].
        dev.put(p(t).wrapping_add(2), p(s).wrapping_add(1), 8, next)?;
        dev.put_nbi(p(t).wrapping_add(20), p(s), 1, next)?;
        dev.get_nbi(p(g), p(s), 2, next)?;
        // Strided: 4 rows of 3 elements, source rows 5 apart, destination rows 8 apart.
        let param = NonContiguousCopyParam {
            repeat: 4,
            length: 3,
            src_ld: 5,
            dst_ld: 8,
        };
        dev.put_strided(p(st), p(s), param, next)?;
        // The MTE engine through a 64-byte buffer (8 elements a chunk) at UB offset 4096.
        dev.mte_put_nbi(p(m), p(s), 4096, 64, 40, next, 3)?;
        // ub2gm: fill UB at 1024 with 4 values, put them; get 2 of the next PE's back to UB.
        for (i, v) in [7i64, 8, 9, 10].iter().enumerate() {
            dev.ub()[1024 + i * 8..1032 + i * 8].copy_from_slice(&v.to_ne_bytes());
        }
        dev.put_from_ub(p(u).wrapping_add(4), 1024, 4, next)?;
        dev.get_to_ub(2048, p(s).wrapping_add(3), 2, next)?;
        let back = i64::from_ne_bytes(dev.ub()[2048..2056].try_into().expect("8 bytes"));
        if back != -(i64::from(next) << 40) - 3 {
            return Err(shmem::KernelError::new(
                "check",
                format!("get_to_ub gave {back}"),
            ));
        }
        dev.quiet()?;
        // Put with signal of src[60..64] to got[60..64], then wait for the previous PE's.
        dev.putmem_signal(
            p(g).wrapping_add(60).cast(),
            p(s).wrapping_add(60).cast(),
            32,
            sg as *mut i32,
            1,
            SignalOp::Add,
            next,
        )?;
        let words = dev.view(sg as *const i32, 1)?;
        words
            .wait_until_all(None, Cmp::Ge, 1)
            .map_err(|e| shmem::KernelError::new("wait_until_all", e.to_string()))?;
        dev.barrier_all()
    })?;
    stream.synchronize()?;
    let guard = 0x5A5A_5A5A_5A5A_5A5Ai64;
    let theirs = |i: i64| -(i64::from(prev) << 40) - i;
    let t = typed.as_slice().to_vec(me)?;
    for (i, &v) in t.iter().enumerate() {
        let want = match i {
            2..=9 => theirs(i as i64 - 1),
            20 => theirs(0),
            _ => guard,
        };
        check_eq!(v, want, "typed[{i}]");
    }
    let g = got.as_slice().to_vec(me)?;
    let next = (me + 1) % n;
    check_eq!(g[0], -(i64::from(next) << 40), "get_nbi");
    check_eq!(g[1], -(i64::from(next) << 40) - 1, "get_nbi");
    for (i, &v) in g.iter().enumerate().skip(60) {
        check_eq!(v, theirs(i as i64), "put_signal data {i}");
    }
    let st = strided.as_slice().to_vec(me)?;
    for (i, &v) in st.iter().enumerate() {
        let (row, col) = (i / 8, i % 8);
        let want = if row < 4 && col < 3 {
            theirs((row * 5 + col) as i64)
        } else {
            guard
        };
        check_eq!(v, want, "strided[{i}]");
    }
    let m = mte.as_slice().to_vec(me)?;
    for (i, &v) in m.iter().enumerate() {
        check_eq!(v, if i < 40 { theirs(i as i64) } else { guard }, "mte[{i}]");
    }
    let u = ub2gm.as_slice().to_vec(me)?;
    for (i, &v) in u.iter().enumerate() {
        check_eq!(
            v,
            if (4..8).contains(&i) {
                i as i64 + 3
            } else {
                guard
            },
            "ub2gm[{i}]"
        );
    }
    for b in [src, typed, strided, mte, ub2gm, got] {
        b.free()?;
    }
    sig.free()?;
    Ok(())
}

/// CANN's multi-instance kernel: instances 1 to 3 over all PEs. One launch of 4 blocks switches
/// every block through the three instances, putting into each one's buffer on the next PE and
/// meeting its PEs; a second launch has block `b` on instance `1 + b % 3` throughout. A call
/// before any selection, or the selection of an instance that does not exist, fails the launch
/// naming kernel, block and call.
fn multi_instance(c: &Ctx) -> Outcome {
    let members: Vec<u32> = (0..c.n_pes).collect();
    let mut insts = Vec::new();
    for id in 1..=3u64 {
        let a = multi_instance::attrs_for(c, id, &members).expect("every PE is a member");
        insts.push(Instance::init(&a)?);
    }
    let bufs = insts
        .iter()
        .map(|i| i.calloc::<u64>(8))
        .collect::<shmem::Result<Vec<_>>>()?;
    let at: Vec<usize> = bufs.iter().map(|b| b.as_ptr() as usize).collect();
    let stream = Stream::new();
    let at2 = at.clone();
    shmem::launch_multi_instance(&stream, "switch", 4, move |dev| {
        for id in 1..=3u64 {
            dev.instance_ctx_set(id)?;
            if dev.instance_ctx_get()? != id {
                return Err(shmem::KernelError::new("check", "instance_ctx_get"));
            }
            let (me, n, b) = (dev.my_pe(), dev.n_pes(), dev.block_idx() as usize);
            let p = (at2[id as usize - 1] as *mut u64).wrapping_add(b);
            dev.p(p, id << 32 | u64::from(me) << 8 | b as u64, (me + 1) % n)?;
            dev.barrier_all()?;
        }
        Ok(())
    })?;
    let at3 = at.clone();
    shmem::launch_multi_instance(&stream, "mixed", 3, move |dev| {
        let b = dev.block_idx() as usize;
        let id = 1 + (b % 3) as u64;
        dev.instance_ctx_set(id)?;
        let (me, n) = (dev.my_pe(), dev.n_pes());
        let p = (at3[id as usize - 1] as *mut u64).wrapping_add(4 + b);
        dev.p(p, 0xAB00 | b as u64, (me + 1) % n)?;
        dev.quiet()
    })?;
    stream.synchronize()?;
    let (me, n) = (insts[0].my_pe(), insts[0].n_pes());
    let prev = u64::from((me + n - 1) % n);
    for i in &insts {
        i.barrier_all()?;
    }
    for (k, b) in bufs.iter().enumerate() {
        let id = k as u64 + 1;
        let got = b.as_slice().to_vec(me)?;
        for (blk, &v) in got.iter().take(4).enumerate() {
            check_eq!(
                v,
                id << 32 | prev << 8 | blk as u64,
                "instance {id}, block {blk}"
            );
        }
        // Block `k` of the mixed launch used instance `k + 1`.
        check_eq!(got[4 + k], 0xAB00 | k as u64, "mixed, instance {id}");
    }
    // The routing rules.
    shmem::launch_multi_instance(&stream, "unselected", 2, |dev| {
        dev.quiet()?;
        Ok(())
    })?;
    let e = stream
        .synchronize()
        .expect_err("no instance selected")
        .to_string();
    check!(
        e.contains("kernel unselected, block 0: aclshmem_quiet: no instance is selected"),
        "{e}"
    );
    shmem::launch_multi_instance(&stream, "unselected_pe", 1, |dev| {
        let _ = dev.my_pe();
        Ok(())
    })?;
    let e = stream.synchronize().expect_err("my_pe panics").to_string();
    check!(e.contains("aclshmem_my_pe: no instance is selected"), "{e}");
    shmem::launch_multi_instance(&stream, "unknown", 1, |dev| dev.instance_ctx_set(99))?;
    let e = stream
        .synchronize()
        .expect_err("no instance 99")
        .to_string();
    check!(
        e.contains(
            "kernel unknown, block 0: aclshmemx_instance_ctx_set: instance 99 is not initialised"
        ),
        "{e}"
    );
    for b in bufs {
        b.free()?;
    }
    for i in insts {
        i.finalize()?;
    }
    Ok(())
}

/// 16 blocks of every PE add to PE 0's words: a u64 fetch-add, and the float adds CANN's cores
/// make (f32, half, bfloat16, all exact at these sums); one compare-swap per PE wins a slot.
fn atomics(c: &Ctx) -> Outcome {
    const BLOCKS: u32 = 16;
    let inst = c.world()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let count = inst.calloc::<u64>(1)?;
    let sum32 = inst.calloc::<f32>(1)?;
    let halves = inst.calloc::<shmem::f16>(2)?;
    let slots = inst.calloc::<u32>(8)?;
    inst.barrier_all()?;
    let (c0, f0, h0, s0) = (
        count.as_ptr() as usize,
        sum32.as_ptr() as usize,
        halves.as_ptr() as usize,
        slots.as_ptr() as usize,
    );
    let stream = Stream::new();
    inst.launch(&stream, "atomics", BLOCKS, move |dev| {
        let me = dev.my_pe();
        dev.atomic(c0 as *mut u64, shmem::AmoOp::Add(1), 0)?;
        dev.atomic_add_float(f0 as *mut f32, 1.5, 0)?;
        dev.atomic_add_float(h0 as *mut shmem::f16, shmem::f16::from_f32(1.0), 0)?;
        dev.atomic_add_float((h0 + 2) as *mut shmem::bf16, shmem::bf16::from_f32(1.0), 0)?;
        // Slot `me` of PE 0 goes to the first block of this PE that swaps it from 0.
        let b = dev.block_idx() + 1;
        let slot = (s0 as *mut u32).wrapping_add(me as usize % 8);
        dev.atomic(
            slot,
            shmem::AmoOp::CompareSwap {
                cond: 0,
                value: u64::from(b),
            },
            0,
        )?;
        // An add on a float through the integer path is refused.
        if dev.atomic(f0 as *mut f32, shmem::AmoOp::Add(1), 0).is_ok() {
            return Err(shmem::KernelError::new("check", "integer add on f32"));
        }
        dev.barrier_all()
    })?;
    stream.synchronize()?;
    if me == 0 {
        let total = u64::from(BLOCKS * n);
        check_eq!(count.as_slice().to_vec(0)?, vec![total]);
        check_eq!(sum32.as_slice().to_vec(0)?, vec![1.5 * total as f32]);
        let h = halves.as_slice().to_vec(0)?;
        check_eq!(h[0].to_f32(), total as f32, "half");
        let bf = shmem::bf16::from_bits(h[1].to_bits());
        check_eq!(bf.to_f32(), total as f32, "bfloat16");
        let s = slots.as_slice().to_vec(0)?;
        for (pe, &v) in s.iter().enumerate().take(n.min(8) as usize) {
            check!((1..=BLOCKS).contains(&v), "slot {pe} holds {v}");
        }
    }
    inst.barrier_all()?;
    count.free()?;
    sum32.free()?;
    halves.free()?;
    slots.free()?;
    inst.finalize()?;
    Ok(())
}

/// The even PEs' team inside a kernel of 8 blocks: `team_pe_mapping` names its members, and
/// rounds of a counter passed around the team with `p` and `barrier(team)` stay in step.
fn team_barrier(c: &Ctx) -> Outcome {
    let inst = c.world()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let evens = inst.team_world().split_strided(
        0,
        2,
        n.div_ceil(2) as i32,
        shmem::TeamConfig::default(),
    )?;
    let counter = inst.calloc::<u64>(1)?;
    let at = counter.as_ptr() as usize;
    if let Some(team) = evens {
        let stream = Stream::new();
        let t = team.clone();
        inst.launch(&stream, "team", 8, move |dev| {
            dev.util_set_ffts_config(0x1234);
            let (tn, tme) = (t.n_pes(), t.my_pe());
            for k in 0..tn {
                if dev.team_pe_mapping(&t, k) != 2 * k as i32 {
                    return Err(shmem::KernelError::new("check", "pe_mapping"));
                }
            }
            if dev.team_pe_mapping(&t, tn) != -1 {
                return Err(shmem::KernelError::new(
                    "check",
                    "pe_mapping beyond the team",
                ));
            }
            let p = at as *mut u64;
            for round in 1..=4u64 {
                let v = dev.g(p, dev.my_pe())?;
                dev.barrier(&t)?;
                if dev.block_idx() == 0 {
                    let next = dev.team_pe_mapping(&t, (tme + 1) % tn) as u32;
                    dev.p(p, v + 1, next)?;
                }
                dev.barrier(&t)?;
                let now = dev.g(p, dev.my_pe())?;
                if now != round {
                    return Err(shmem::KernelError::new(
                        "check",
                        format!("round {round}: {now}"),
                    ));
                }
                dev.barrier(&t)?;
            }
            Ok(())
        })?;
        stream.synchronize()?;
        check_eq!(counter.as_slice().to_vec(me)?, vec![4u64]);
        team.destroy()?;
    } else {
        check!(me % 2 == 1, "PE {me} is even but not in the team");
    }
    inst.barrier_all()?;
    counter.free()?;
    inst.finalize()?;
    Ok(())
}
