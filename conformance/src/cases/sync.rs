//! `sync::` — barriers.

use std::time::Duration;

use shmem::{Cmp, Code};

use crate::cases::{capture_log, logged};
use crate::{Case, Ctx, Failure, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("sync::barrier_ring_increment", ring_increment),
        Case::new("sync::barrier_completes_puts", barrier_completes_puts),
        Case::new("sync::many_barriers", many_barriers),
        Case::new("sync::sync_all", sync_all),
        Case::new("sync::a_long_wait_reports_the_pes_not_arrived", hang_report)
            .pes(&[2, 4])
            .env(&[("SHMEM_HANG_REPORT", "1")]),
        Case::new(
            "sync::a_wait_on_a_finalized_instance_fails_at_once",
            finalized_under_a_waiter,
        )
        .pes(&[1, 2]),
    ]
}

/// The odd PEs reach `barrier_all` 3.5 s late. The others wait without a timeout, and report
/// the suspected hang after 1 s (`SHMEM_HANG_REPORT=1`) and again after 2 s, naming the call,
/// the instance and team, and the PEs not arrived; then the barrier completes.
fn hang_report(ctx: &Ctx) -> Outcome {
    capture_log()?;
    let inst = ctx.world()?;
    inst.barrier_all()?;
    let _ = logged();
    let late: Vec<u32> = (0..ctx.n_pes).filter(|p| p % 2 == 1).collect();
    if late.contains(&ctx.pe) {
        std::thread::sleep(Duration::from_millis(3500));
    }
    inst.barrier_all()?;
    let out = logged();
    if late.contains(&ctx.pe) {
        check!(!out.contains("hang?"), "a late PE reported a hang: {out}");
    } else {
        let names: Vec<String> = late.iter().map(|p| format!("PE {p}")).collect();
        for secs in [1, 2] {
            let line = format!(
                "hang? PE {} has waited {secs} s in barrier_all (instance 0, team world) for {}",
                ctx.pe,
                names.join(", ")
            );
            check!(
                out.lines()
                    .any(|l| l.contains("WARN") && l.ends_with(&line)),
                "no WARN report `{line}` in:\n{out}"
            );
        }
        check_eq!(out.matches("hang?").count(), 2, "reports: {out}");
    }
    inst.finalize()?;
    Ok(())
}

/// A thread waiting on an instance that another thread finalises fails at once with
/// `NOT_INITED`, not when a timeout ends it.
fn finalized_under_a_waiter(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let word = inst.calloc::<u64>(1)?;
    let started = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        let waiter = s.spawn(|| word.elem(0).wait_until(Cmp::Eq, 1).map(drop));
        std::thread::sleep(Duration::from_millis(200));
        inst.finalize()?;
        waiter
            .join()
            .map_err(|_| Failure("the waiter panicked".into()))
    })?;
    let e = check_code!(r, Code::NotInited);
    check!(e.to_string().contains("instance 0"), "{e}");
    check!(
        started.elapsed() < Duration::from_secs(20),
        "the waiter ended only after {:?}",
        started.elapsed()
    );
    drop(word);
    Ok(())
}

/// CANN's barrier test: each PE reads its value, barrier, stores value + 1 into the right
/// neighbour, barrier; after round i every PE holds i.
fn ring_increment(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let v = inst.calloc::<i32>(1)?;
    let right = (ctx.pe + 1) % ctx.n_pes;
    for round in 1..=ctx.iters(3, 100) as i32 {
        let cur = v.as_slice().g(0, ctx.pe)?;
        inst.barrier_all()?;
        v.as_slice().p(0, cur + 1, right)?;
        inst.barrier_all()?;
        check_eq!(v.as_slice().g(0, ctx.pe)?, round, "after round {round}");
    }
    v.free()?;
    inst.finalize()?;
    Ok(())
}

/// In strict mode non-blocking puts are held back; the barrier must complete them.
fn barrier_completes_puts(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let n = ctx.n_pes as usize;
    let table = inst.calloc::<u32>(n)?;
    let vals: Vec<u32> = vec![ctx.pe + 1000];
    for round in 0..ctx.iters(5, 50) as u32 {
        let vals: Vec<u32> = vals.iter().map(|v| v + round).collect();
        for pe in 0..ctx.n_pes {
            // SAFETY: `vals` lives until after the barrier, which completes the put.
            unsafe {
                shmem_capi::raw::putmem_nbi(
                    inst.default_ctx(),
                    table.offset() + ctx.pe as usize * 4,
                    vals.as_ptr().cast(),
                    4,
                    pe,
                )?
            };
        }
        inst.barrier_all()?;
        let got = table.as_slice().to_vec(ctx.pe)?;
        check_eq!(
            got,
            (0..ctx.n_pes).map(|p| p + 1000 + round).collect::<Vec<_>>(),
            "round {round}"
        );
        inst.barrier_all()?;
    }
    table.free()?;
    inst.finalize()?;
    Ok(())
}

fn many_barriers(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let counter = inst.calloc::<u64>(1)?;
    let rounds = ctx.iters(300, 3000) as u64;
    for r in 1..=rounds {
        // PE r % n writes the round into PE 0; after the barrier everyone reads it.
        if u64::from(ctx.pe) == r % u64::from(ctx.n_pes) {
            counter.as_slice().p(0, r, 0)?;
        }
        inst.barrier_all()?;
        check_eq!(counter.as_slice().g(0, 0)?, r, "round {r}");
        inst.barrier_all()?;
    }
    counter.free()?;
    inst.finalize()?;
    Ok(())
}

fn sync_all(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let v = inst.calloc::<u32>(1)?;
    for round in 1..=ctx.iters(20, 200) as u32 {
        // sync_all does not complete operations (OpenSHMEM): quiet first, then synchronise.
        v.as_slice().p(0, round, (ctx.pe + 1) % ctx.n_pes)?;
        inst.quiet()?;
        inst.sync_all()?;
        check_eq!(v.as_slice().g(0, ctx.pe)?, round);
        inst.sync_all()?;
    }
    v.free()?;
    inst.finalize()?;
    Ok(())
}
