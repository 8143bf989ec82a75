//! `lock::` — OpenSHMEM's distributed locks: mutual exclusion, FIFO fairness, `test_lock`,
//! the guard, a `set_lock` that timed out, and the CANN profile's refusal.
//!
//! Like the `p2p::` cases, every case runs on instance 0 and on instance 1, whose PE 0 (the
//! lock's home) is the job's last PE.

use shmem::{Cmp, Code, Instance};

use crate::cases::p2p::both;
use crate::cases::poll;
use crate::{Case, Ctx, Failure, MULTI_PES, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    [
        both!("lock::mutual_exclusion", mutual_exclusion),
        both!("lock::fifo_order", fifo_order),
        both!("lock::test_lock", test_lock),
        both!("lock::guard", guard),
        both!(
            "lock::timed_out_set_lock_resumes",
            timed_out_resumes,
            .pes(MULTI_PES)
        ),
        both!(
            "lock::cann_profile_refuses",
            cann_profile,
            .env(&[("SHMEM_PROFILE", "cann")])
        ),
    ]
    .concat()
}

/// Every PE increments a counter on PE 0 non-atomically (get, +1, put) inside the lock. Half
/// the puts are non-blocking and left to `clear_lock` to complete: in strict mode a release
/// without a quiet would let the next holder read a stale count.
fn mutual_exclusion(ctx: &Ctx, inst: &Instance) -> Outcome {
    let n = inst.n_pes();
    let lock = inst.calloc::<i64>(1)?;
    let counter = inst.calloc::<u64>(1)?;
    let rounds = ctx.iters(30, 300) as u64;
    inst.barrier_all()?;
    let l = lock.elem(0);
    let c = counter.as_slice();
    for r in 0..rounds {
        l.set_lock()?;
        let next = [c.g(0, 0)? + 1];
        if r % 2 == 0 {
            c.put(&next, 0)?;
        } else {
            // SAFETY: `next` lives until after clear_lock, whose quiet completes the put.
            unsafe {
                shmem_capi::raw::putmem_nbi(
                    inst.default_ctx(),
                    counter.offset(),
                    next.as_ptr().cast(),
                    8,
                    0,
                )?
            };
        }
        l.clear_lock()?;
    }
    inst.barrier_all()?;
    check_eq!(c.g(0, 0)?, u64::from(n) * rounds, "the total");
    inst.barrier_all()?;
    lock.free()?;
    counter.free()?;
    Ok(())
}

/// The queue's tail, in the low half of PE 0's lock word: the last PE queued + 1.
fn tail(l: shmem::SymElem<'_, i64>) -> Option<u64> {
    l.atomic_fetch(0).ok().map(|w| w as u64 & 0xffff_ffff)
}

/// PE 0 holds the lock; PE 1 queues, then PE 2 once PE 1 is in the queue, and so on (each
/// watches the tail on PE 0). When the last one is queued PE 0 releases, and the PEs must
/// acquire in queue order: their tickets, taken inside the lock, are their PE numbers.
fn fifo_order(ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let lock = inst.calloc::<i64>(1)?;
    let ticket = inst.calloc::<u64>(1)?;
    let l = lock.elem(0);
    inst.barrier_all()?;
    if me == 0 {
        l.set_lock()?;
    }
    inst.barrier_all()?;
    // Wait until the PE just before this one (for PE 0: the last PE) is the tail.
    let ahead = if me == 0 { n } else { me };
    let queued = poll(ctx.patience(), || {
        (tail(l) == Some(u64::from(ahead))).then_some(())
    });
    check!(
        queued.is_some(),
        "PE {} never appeared in the queue (tail {:?})",
        ahead - 1,
        tail(l)
    );
    if me != 0 {
        l.set_lock()?;
    }
    let t = ticket.elem(0).atomic_fetch_inc(0)?;
    l.clear_lock()?;
    check_eq!(t, u64::from(me), "the order of acquisition");
    inst.barrier_all()?;
    check_eq!(ticket.elem(0).atomic_fetch(0)?, u64::from(n));
    check_eq!(tail(l), Some(0), "the lock is free at the end");
    inst.barrier_all()?;
    lock.free()?;
    ticket.free()?;
    Ok(())
}

/// `test_lock` acquires a free lock and refuses a held one; a held lock cannot be set again,
/// nor a free one cleared. Then every PE takes the lock with `test_lock` alone.
fn test_lock(ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let lock = inst.calloc::<i64>(1)?;
    let counter = inst.calloc::<u32>(1)?;
    let l = lock.elem(0);
    inst.barrier_all()?;
    check_code!(l.clear_lock(), Code::InvalidParam);
    inst.barrier_all()?;
    for turn in 0..n {
        if me == turn {
            check!(l.test_lock()?, "PE {me}: test_lock of a free lock");
            check!(!l.test_lock()?, "PE {me}: test_lock of a lock it holds");
            check_code!(l.set_lock(), Code::InvalidParam);
        }
        inst.barrier_all()?;
        if me != turn {
            check!(
                !l.test_lock()?,
                "PE {me}: test_lock of a lock PE {turn} holds"
            );
        }
        inst.barrier_all()?;
        if me == turn {
            l.clear_lock()?;
            check_code!(l.clear_lock(), Code::InvalidParam);
        }
        inst.barrier_all()?;
    }
    // Contention through test_lock only.
    let got = poll(ctx.patience(), || l.test_lock().ok().filter(|&b| b));
    check!(
        got.is_some(),
        "PE {me} never acquired the lock with test_lock"
    );
    let c = counter.as_slice();
    c.p(0, c.g(0, 0)? + 1, 0)?;
    l.clear_lock()?;
    inst.barrier_all()?;
    check_eq!(c.g(0, 0)?, n);
    inst.barrier_all()?;
    lock.free()?;
    counter.free()?;
    Ok(())
}

/// The guard clears the lock when dropped, or when `unlock` is called.
fn guard(ctx: &Ctx, inst: &Instance) -> Outcome {
    let n = inst.n_pes();
    let lock = inst.calloc::<i64>(1)?;
    let counter = inst.calloc::<u64>(1)?;
    let rounds = ctx.iters(20, 200) as u64;
    let c = counter.as_slice();
    inst.barrier_all()?;
    for r in 0..rounds {
        let g = lock.elem(0).lock()?;
        c.p(0, c.g(0, 0)? + 1, 0)?;
        if r % 2 == 0 {
            drop(g);
        } else {
            g.unlock()?;
        }
    }
    inst.barrier_all()?;
    check_eq!(c.g(0, 0)?, u64::from(n) * rounds);
    if inst.my_pe() == 0 {
        // Free after every guard is gone.
        check!(lock.elem(0).test_lock()?);
        lock.elem(0).clear_lock()?;
    }
    inst.barrier_all()?;
    lock.free()?;
    counter.free()?;
    Ok(())
}

/// Polls this PE's `flags[i]` until it is non-zero.
fn await_flag(ctx: &Ctx, flags: &shmem::SymBuf<i32>, i: usize) -> Outcome {
    poll(ctx.patience(), || {
        flags.elem(i).test(Cmp::Ne, 0).ok().filter(|&b| b)
    })
    .map(|_| ())
    .ok_or_else(|| Failure(format!("flag {i} was never set")))
}

/// The lock lives in an instance whose waits time out after 0.3 s (the case's barriers and
/// flags stay on `inst`): PE 1's `set_lock` times out while PE 0 holds the lock; called again
/// it resumes its place in the queue, as often as it times out, and gets the lock once PE 0
/// releases it, however slowly PE 0 gets to that.
fn timed_out_resumes(ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let short = crate::cases::p2p::with_wait_timeout(ctx, inst, 0.3)?;
    let lock = short.calloc::<i64>(1)?;
    // 0: PE 0 holds the lock; 1: PE 1 timed out; 2: done.
    let flags = inst.calloc::<i32>(3)?;
    let l = lock.elem(0);
    let f = flags.as_slice();
    inst.barrier_all()?;
    match me {
        0 => {
            l.set_lock()?;
            f.p(0, 1, 1)?;
            await_flag(ctx, &flags, 1)?;
            l.clear_lock()?;
        }
        1 => {
            await_flag(ctx, &flags, 0)?;
            let e = check_code!(l.set_lock(), Code::TimeoutError);
            check!(e.to_string().contains("set_lock"), "{e}");
            check!(!l.test_lock()?, "test_lock while queued behind PE 0");
            f.p(1, 1, 0)?;
            let patience = std::time::Instant::now() + ctx.patience();
            loop {
                match l.set_lock() {
                    Ok(()) => break,
                    Err(e) if e.code() == Code::TimeoutError => {
                        check!(std::time::Instant::now() < patience, "PE 0 never released")
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            l.clear_lock()?;
            for pe in 0..n {
                f.p(2, 1, pe)?;
            }
        }
        _ => {}
    }
    await_flag(ctx, &flags, 2)?;
    inst.barrier_all()?;
    check_eq!(tail(l), Some(0), "the lock is free at the end");
    inst.barrier_all()?;
    lock.free()?;
    flags.free()?;
    short.finalize()?;
    Ok(())
}

/// Locks need remote atomics issued by the host, which the CANN transport lacks.
fn cann_profile(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let lock = inst.calloc::<i64>(1)?;
    let l = lock.elem(0);
    check!(!inst.capabilities().host_atomics);
    check_code!(l.set_lock(), Code::NotSupported);
    check_code!(l.test_lock(), Code::NotSupported);
    check_code!(l.clear_lock(), Code::NotSupported);
    check_code!(l.lock(), Code::NotSupported);
    inst.barrier_all()?;
    lock.free()?;
    Ok(())
}
