//! `order::` — quiet and fence ordering, and the simulator's strict completion mode catching a
//! missing quiet.

use std::time::Duration;

use crate::cases::poll;
use crate::{Case, Ctx, Failure, Outcome, check, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("order::quiet_orders_stores", |c| ordered(c, Sep::Quiet))
            .pes(&[2, 4])
            .full_pes(&[3, 8]),
        Case::new("order::fence_orders_stores", |c| ordered(c, Sep::Fence))
            .pes(&[2, 4])
            .full_pes(&[3, 8]),
        Case::new("order::strict_mode_catches_a_missing_quiet", missing_quiet)
            .pes(&[2])
            .env(&[("SHMEM_SIM_STRICT_EARLY", "0")]),
        Case::new("order::missing_fence_before_a_put_flag", |c| {
            missing_fence(c, Flag::Put)
        })
        .pes(&[2]),
        Case::new("order::missing_fence_before_a_p_flag", |c| {
            missing_fence(c, Flag::P)
        })
        .pes(&[2]),
        Case::new("order::missing_fence_before_an_amo_flag", |c| {
            missing_fence(c, Flag::Amo)
        })
        .pes(&[2]),
        Case::new("order::missing_fence_before_a_signal_flag", |c| {
            missing_fence(c, Flag::Signal)
        })
        .pes(&[2]),
        Case::new("order::cann_profile_keeps_host_stream_order", |c| {
            flag_rounds(c, Flag::P, false).and_then(|stale| {
                check_eq!(stale, 0, "a CANN host call completed after the next one");
                Ok(())
            })
        })
        .pes(&[2])
        .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

/// How the writer raises the flag after its blocking put of the data.
#[derive(Clone, Copy, Debug)]
enum Flag {
    Put,
    P,
    Amo,
    Signal,
}

/// The most common ordering bug: a blocking put of the data, then a flag, with no fence
/// between them; the reader waits for the flag and reads the data. OpenSHMEM does not order
/// the two without a fence, and strict mode delivers the flag first: some round must see
/// stale data. With the fence, no round may.
fn missing_fence(ctx: &Ctx, flag: Flag) -> Outcome {
    let stale = flag_rounds(ctx, flag, false)?;
    check!(
        ctx.pe != 1 || stale > 0,
        "strict mode never delivered the unfenced flag ({flag:?}) before the data"
    );
    let stale = flag_rounds(ctx, flag, true)?;
    check_eq!(stale, 0, "a fenced flag ({flag:?}) overtook the data");
    Ok(())
}

/// Runs the data-then-flag rounds from PE 0 to PE 1 and returns, on PE 1, how many rounds saw
/// the flag before the data (0 on PE 0).
fn flag_rounds(ctx: &Ctx, flag: Flag, fenced: bool) -> Result<u32, Failure> {
    const ROUNDS: u64 = 8;
    let inst = ctx.world()?;
    let data = inst.calloc::<u64>(16)?;
    let word = inst.calloc::<u64>(1)?;
    let ack = inst.calloc::<u64>(1)?;
    let mut stale = 0;
    for r in 1..=ROUNDS {
        if ctx.pe == 0 {
            data.as_slice().put(&[r; 16], 1)?;
            if fenced {
                inst.fence()?;
            }
            match flag {
                Flag::Put => word.as_slice().put(&[r], 1)?,
                Flag::P => word.as_slice().p(0, r, 1)?,
                Flag::Amo => word.elem(0).atomic_set(r, 1)?,
                Flag::Signal => word.elem(0).signal_op(r, shmem::SignalOp::Set, 1)?,
            }
            // No quiet until the reader has looked: it acknowledges each round.
            ack.elem(0).wait_until(shmem::Cmp::Ge, r)?;
        } else if ctx.pe == 1 {
            word.elem(0).wait_until(shmem::Cmp::Ge, r)?;
            if data.as_slice().to_vec(1)? != [r; 16] {
                stale += 1;
            }
            ack.elem(0)
                .atomic_set(r, 0)
                .or_else(|_| ack.as_slice().p(0, r, 0))?;
        }
    }
    inst.barrier_all()?;
    // Fenced, the rounds' puts of the data arrive in order; unfenced they may not (strict
    // mode reorders puts to one address too).
    if fenced && ctx.pe == 1 {
        check_eq!(data.as_slice().to_vec(1)?, [ROUNDS; 16]);
    }
    inst.finalize()?;
    Ok(stale)
}

#[derive(Clone, Copy, Debug)]
enum Sep {
    Quiet,
    Fence,
}

/// CANN's order test: PE 0 stores A (non-blocking), separates, stores the flag B; PE 1 waits
/// until it sees B and must then see A.
fn ordered(ctx: &Ctx, sep: Sep) -> Outcome {
    let inst = ctx.world()?;
    let data = inst.calloc::<u64>(64)?;
    let flag = inst.calloc::<u64>(1)?;
    let rounds = ctx.iters(50, 500) as u64;
    let payload: Vec<u64> = (0..64).collect();
    for r in 1..=rounds {
        if ctx.pe == 0 {
            let round_data: Vec<u64> = payload.iter().map(|v| v + r * 1000).collect();
            // SAFETY: `round_data` lives until the barrier at the end of the round.
            unsafe {
                shmem_capi::raw::putmem_nbi(
                    inst.default_ctx(),
                    data.offset(),
                    round_data.as_ptr().cast(),
                    64 * 8,
                    1,
                )?
            };
            match sep {
                Sep::Quiet => inst.quiet()?,
                Sep::Fence => inst.fence()?,
            }
            flag.as_slice().p(0, r, 1)?;
            inst.barrier_all()?;
        } else if ctx.pe == 1 {
            poll(ctx.patience(), || {
                (flag.as_slice().g(0, 1).ok()? == r).then_some(())
            })
            .ok_or_else(|| Failure(format!("round {r}: the flag never arrived")))?;
            let got = data.as_slice().to_vec(1)?;
            check!(
                got.iter()
                    .enumerate()
                    .all(|(i, &v)| v == i as u64 + r * 1000),
                "round {r} ({sep:?}): the flag overtook the data: {:?}",
                &got[..4]
            );
            inst.barrier_all()?;
        } else {
            inst.barrier_all()?;
        }
    }
    data.free()?;
    flag.free()?;
    inst.finalize()?;
    Ok(())
}

/// A program that signals with a blocking put right after a non-blocking put, with no quiet or
/// fence between them, is wrong: the data may arrive after the flag. In strict mode the
/// simulator holds the data back until a quiet, so the reader sees the flag and stale data,
/// every time, as a device whose engines complete out of order may show it.
fn missing_quiet(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let data = inst.calloc::<u64>(1)?;
    let flag = inst.calloc::<u64>(1)?;
    let ack = inst.calloc::<u64>(1)?;
    let value = [0xdada_u64];
    if ctx.pe == 0 {
        // SAFETY: `value` lives until after the barrier below, which completes the put.
        unsafe {
            shmem_capi::raw::putmem_nbi(
                inst.default_ctx(),
                data.offset(),
                value.as_ptr().cast(),
                8,
                1,
            )?
        };
        flag.as_slice().p(0, 1, 1)?; // the bug: no quiet/fence before the flag
        // Stay out of any quiet (the barrier quiets) until PE 1 has looked.
        poll(ctx.patience(), || {
            (ack.as_slice().g(0, 0).ok()? == 1).then_some(())
        })
        .ok_or_else(|| Failure("PE 1 never acknowledged".into()))?;
    } else {
        poll(ctx.patience(), || {
            (flag.as_slice().g(0, 1).ok()? == 1).then_some(())
        })
        .ok_or_else(|| Failure("the flag never arrived".into()))?;
        let seen = data.as_slice().g(0, 1)?;
        check_eq!(
            seen,
            0,
            "strict mode delivered the unquieted put before the flag: the missing quiet went unnoticed"
        );
        std::thread::sleep(Duration::from_millis(20));
        check_eq!(
            data.as_slice().g(0, 1)?,
            0,
            "the held put completed without a quiet"
        );
        ack.as_slice().p(0, 1, 0)?;
    }
    // The barrier quiets PE 0: now the data is there.
    inst.barrier_all()?;
    if ctx.pe == 1 {
        check_eq!(
            data.as_slice().g(0, 1)?,
            0xdada,
            "the barrier did not complete the held put"
        );
    }
    inst.barrier_all()?;
    ack.free()?;
    data.free()?;
    flag.free()?;
    inst.finalize()?;
    Ok(())
}
