//! `signal::` — put-with-signal, signal updates and waiting for signals, on CANN's 32-bit and
//! OpenSHMEM's 64-bit signal words.

use shmem::{Cmp, Code, Instance, SignalOp, SignalWord};

use crate::cases::on_both_instances;
use crate::{Case, Ctx, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("signal::put_signal_set_releases_the_data", |c| {
            on_both_instances(c, put_signal_ring)
        }),
        Case::new("signal::signal_add_counts_every_pe", |c| {
            on_both_instances(c, signal_add)
        }),
        Case::new("signal::wait_until_with_every_comparison", |c| {
            on_both_instances(c, every_cmp)
        }),
        Case::new("signal::put_signal_nbi_in_a_scope", |c| {
            on_both_instances(c, nbi)
        }),
        Case::new("signal::signal_fetch_and_bad_input", |c| {
            on_both_instances(c, fetch_and_bad)
        }),
        Case::new("signal::cann_profile_keeps_cann_signals", cann_profile)
            .pes(&[2])
            .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

fn ring_for<S: SignalWord + From<u8> + PartialEq + std::fmt::Debug>(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let data = inst.calloc::<u32>(256)?;
    let sig = inst.calloc::<S>(1)?;
    for round in 1..=20u8 {
        let payload: Vec<u32> = (0..256)
            .map(|i| u32::from(round) << 24 | me << 12 | i)
            .collect();
        data.as_slice()
            .put_signal(&payload, sig.elem(0), S::from(round), SignalOp::Set, right)?;
        let got = sig.elem(0).signal_wait_until(Cmp::Eq, S::from(round))?;
        check_eq!(got, S::from(round));
        // The signal is visible only after the data.
        let v = data.as_slice().to_vec(me)?;
        check!(
            v.iter()
                .enumerate()
                .all(|(i, &x)| x == u32::from(round) << 24 | left << 12 | i as u32),
            "round {round}: data behind the signal is stale"
        );
        inst.barrier_all()?;
    }
    data.free()?;
    sig.free()?;
    Ok(())
}

fn put_signal_ring(inst: &Instance) -> Outcome {
    ring_for::<u64>(inst)?;
    ring_for::<i32>(inst)?;
    ring_for::<u32>(inst)
}

fn signal_add(inst: &Instance) -> Outcome {
    let n = inst.n_pes();
    let c64 = inst.calloc::<u64>(1)?;
    let c32 = inst.calloc::<i32>(1)?;
    for _ in 0..10 {
        c64.elem(0).signal_op(3, SignalOp::Add, 0)?;
        c32.elem(0).signal_op(-1, SignalOp::Add, 0)?;
    }
    if inst.my_pe() == 0 {
        check_eq!(
            c64.elem(0).signal_wait_until(Cmp::Ge, 30 * u64::from(n))?,
            30 * u64::from(n)
        );
        check_eq!(
            c32.elem(0).signal_wait_until(Cmp::Le, -10 * n as i32)?,
            -10 * n as i32
        );
    }
    inst.barrier_all()?;
    c64.free()?;
    c32.free()?;
    Ok(())
}

fn every_cmp(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let sig = inst.calloc::<i32>(6)?;
    // The left neighbour sets word k to the value that makes comparison k true; the
    // comparison was false before (every word starts at 0).
    let plan: [(Cmp, i32, i32); 6] = [
        (Cmp::Eq, 5, 5),
        (Cmp::Ne, 0, 4),
        (Cmp::Gt, 2, 3),
        (Cmp::Ge, 3, 3),
        (Cmp::Lt, -1, -2),
        (Cmp::Le, -2, -2),
    ];
    for (k, (_, _, value)) in plan.iter().enumerate() {
        sig.elem(k).signal_op(*value, SignalOp::Set, right)?;
    }
    for (k, (cmp, against, value)) in plan.iter().enumerate() {
        let got = sig.elem(k).signal_wait_until(*cmp, *against)?;
        check_eq!(got, *value, "{cmp:?} {against}: from PE {left}");
    }
    inst.barrier_all()?;
    sig.free()?;
    Ok(())
}

fn nbi(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let right = (me + 1) % n;
    let data = inst.calloc::<u64>(64)?;
    let sig = inst.calloc::<u64>(1)?;
    let payload: Vec<u64> = (0..64).map(|i| i * 1000 + u64::from(me)).collect();
    inst.nbi(|s| {
        s.put_signal_nbi(
            data.as_slice(),
            &payload,
            sig.elem(0),
            1,
            SignalOp::Add,
            right,
        )
    })??;
    sig.elem(0).signal_wait_until(Cmp::Eq, 1)?;
    let left = (me + n - 1) % n;
    check_eq!(
        data.as_slice().to_vec(me)?,
        (0..64)
            .map(|i| i * 1000 + u64::from(left))
            .collect::<Vec<_>>()
    );
    inst.barrier_all()?;
    data.free()?;
    sig.free()?;
    Ok(())
}

fn fetch_and_bad(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let sig = inst.calloc::<u64>(1)?;
    check_eq!(sig.elem(0).signal_fetch()?, 0);
    sig.elem(0).signal_op(42, SignalOp::Set, me)?;
    check_eq!(sig.elem(0).signal_fetch()?, 42);
    let data = inst.calloc::<u8>(8)?;
    check_code!(
        data.as_slice()
            .put_signal(&[1; 7], sig.elem(0), 1, SignalOp::Set, me),
        Code::InvalidParam
    );
    check_code!(
        data.as_slice()
            .put_signal(&[1; 8], sig.elem(0), 1, SignalOp::Set, n),
        Code::InvalidParam
    );
    check_code!(
        sig.elem(0).signal_op(1, SignalOp::Add, n + 3),
        Code::InvalidParam
    );
    inst.barrier_all()?;
    data.free()?;
    sig.free()?;
    Ok(())
}

fn cann_profile(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let sig = inst.calloc::<i32>(1)?;
    let data = inst.calloc::<u8>(16)?;
    // CANN has put_signal, signal_op and signal_wait_until on int32 words; the hardware
    // backend reads a word for signal_fetch from the host.
    data.as_slice().put_signal(
        &[7; 16],
        sig.elem(0),
        1,
        SignalOp::Set,
        (ctx.pe + 1) % ctx.n_pes,
    )?;
    sig.elem(0).signal_wait_until(Cmp::Eq, 1)?;
    check_eq!(sig.elem(0).signal_fetch()?, 1);
    inst.barrier_all()?;
    data.free()?;
    sig.free()?;
    inst.finalize()?;
    Ok(())
}
