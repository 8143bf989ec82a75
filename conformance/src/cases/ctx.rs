//! `ctx::` — contexts: completion scoped to a context, team numbering, the PRIVATE and
//! NOSTORE options, destruction and the CANN profile's refusal.

use shmem::{Code, CtxOptions, Instance, SignalOp, TeamConfig};

use crate::cases::{on_both_instances, poll};
use crate::{Case, Ctx, Failure, MULTI_PES, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        // Early completion off: a held operation stays held until its own context's quiet.
        Case::new("ctx::quiet_completes_only_its_own_context", quiet_scope)
            .pes(&[2])
            .env(&[("SHMEM_SIM_STRICT_EARLY", "0")]),
        Case::new(
            "ctx::destroy_completes_outstanding_operations",
            destroy_completes,
        )
        .pes(&[2])
        .env(&[("SHMEM_SIM_STRICT_EARLY", "0")]),
        Case::new("ctx::team_context_numbers_pes_in_the_team", |c| {
            on_both_instances(c, team_numbering)
        })
        .pes(MULTI_PES),
        Case::new("ctx::private_context_refuses_other_threads", |c| {
            on_both_instances(c, private)
        }),
        Case::new("ctx::nostore_context_keeps_every_operation", |c| {
            on_both_instances(c, nostore)
        }),
        Case::new("ctx::options_team_and_bad_input", |c| {
            on_both_instances(c, options)
        }),
        Case::new("ctx::cann_profile_keeps_contexts_and_streams", cann_profile)
            .pes(&[1, 2])
            .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

/// Waits until `probe` holds, for the case's patience.
fn await_cond(ctx: &Ctx, what: &str, mut probe: impl FnMut() -> shmem::Result<bool>) -> Outcome {
    poll(ctx.patience(), || probe().ok().filter(|&b| b))
        .map(|_| ())
        .ok_or_else(|| Failure(format!("{what} never happened")))
}

/// PE 0 issues a non-blocking put on context A and one on context B, quiets A only and raises
/// a flag: PE 1 must see A's data and, in strict mode, not yet B's (B's quiet has not run).
fn quiet_scope(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (a_buf, b_buf) = (inst.calloc::<u64>(8)?, inst.calloc::<u64>(8)?);
    let flag = inst.calloc::<u64>(1)?;
    let ack = inst.calloc::<u64>(1)?;
    let (a, b) = (
        inst.ctx_create(CtxOptions::NONE)?,
        inst.ctx_create(CtxOptions::NONE)?,
    );
    let (va, vb) = ([0xaa_u64; 8], [0xbb_u64; 8]);
    if ctx.pe == 0 {
        // SAFETY: `va` and `vb` outlive the quiets below (b's runs before the barrier).
        unsafe {
            shmem_capi::raw::putmem_nbi(a.as_ref(), a_buf.offset(), va.as_ptr().cast(), 64, 1)?;
            shmem_capi::raw::putmem_nbi(b.as_ref(), b_buf.offset(), vb.as_ptr().cast(), 64, 1)?;
        }
        a.quiet()?;
        flag.as_slice().p(0, 1, 1)?;
        await_cond(ctx, "PE 1's acknowledgement", || {
            Ok(ack.as_slice().g(0, 0)? == 1)
        })?;
        b.quiet()?;
    } else {
        await_cond(ctx, "the flag", || Ok(flag.as_slice().g(0, 1)? == 1))?;
        check_eq!(
            a_buf.as_slice().to_vec(1)?,
            va.to_vec(),
            "context A's quiet did not complete its put"
        );
        check_eq!(
            b_buf.as_slice().to_vec(1)?,
            vec![0; 8],
            "context A's quiet completed context B's put: quiet is not scoped to its context"
        );
        ack.as_slice().p(0, 1, 0)?;
    }
    inst.barrier_all()?;
    if ctx.pe == 1 {
        check_eq!(
            b_buf.as_slice().to_vec(1)?,
            vb.to_vec(),
            "context B's quiet did not complete its put"
        );
    }
    a.destroy()?;
    b.destroy()?;
    inst.barrier_all()?;
    for buf in [a_buf, b_buf, flag, ack] {
        buf.free()?;
    }
    inst.finalize()?;
    Ok(())
}

/// Destroying a context completes what was issued on it; the destroyed context then refuses
/// every operation.
fn destroy_completes(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let data = inst.calloc::<u32>(16)?;
    let v: Vec<u32> = (100..116).collect();
    if ctx.pe == 0 {
        let c = inst.ctx_create(CtxOptions::SERIALIZED)?;
        let other = c.clone();
        // SAFETY: `v` outlives the destroy, which completes the put.
        unsafe {
            shmem_capi::raw::putmem_nbi(c.as_ref(), data.offset(), v.as_ptr().cast(), 64, 1)?
        };
        c.destroy()?;
        check_code!(data.as_slice().on(&other).put(&v, 1), Code::InvalidParam);
        check_code!(data.as_slice().on(&other).to_vec(1), Code::InvalidParam);
        check_code!(other.quiet(), Code::InvalidParam);
    }
    // sync_all completes nothing: only the destroy can have delivered the data.
    inst.sync_all()?;
    if ctx.pe == 1 {
        check_eq!(
            data.as_slice().to_vec(1)?,
            v,
            "the destroy did not complete the context's put"
        );
    }
    inst.barrier_all()?;
    data.free()?;
    inst.finalize()?;
    Ok(())
}

/// A context made from a team names PEs by their team number: the odd team's PE 0 is world PE 1.
fn team_numbering(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let odds = world.split_strided(1, 2, (n / 2) as i32, TeamConfig { num_contexts: 1 })?;
    let buf = inst.calloc::<u32>(n as usize)?;
    if let Some(t) = &odds {
        let c = t.create_ctx(CtxOptions::NONE)?;
        check!(
            c.team() == *t,
            "the context's team is not the team it was made from"
        );
        // Each odd PE writes its world number into slot `me` of the next odd PE, in team numbers.
        let next = (t.my_pe() + 1) % t.n_pes();
        buf.elem(me as usize).on(&c).atomic_set(me, next)?;
        check_code!(
            buf.as_slice().on(&c).put(&vec![0; n as usize], t.n_pes()),
            Code::InvalidParam
        );
        c.quiet()?;
        t.barrier()?;
        let prev_team = (t.my_pe() + t.n_pes() - 1) % t.n_pes();
        let prev_world = t
            .translate_pe(prev_team, &world)
            .ok_or_else(|| Failure("translate failed".into()))?;
        check_eq!(
            buf.elem(prev_world as usize)
                .on(&c)
                .atomic_fetch(t.my_pe())?,
            prev_world
        );
        c.destroy()?;
    }
    world.barrier()?;
    buf.free()?;
    if let Some(t) = odds {
        t.destroy()?;
    }
    Ok(())
}

/// A PRIVATE context works on its creating thread and is refused on another; a SERIALIZED one
/// may move between threads.
fn private(inst: &Instance) -> Outcome {
    let me = inst.my_pe();
    let buf = inst.calloc::<u64>(4)?;
    let p = inst.ctx_create(CtxOptions::PRIVATE)?;
    let s = inst.ctx_create(CtxOptions::SERIALIZED)?;
    buf.as_slice().on(&p).p(0, 7, me)?;
    let (from_other, serialized) = std::thread::scope(|sc| {
        sc.spawn(|| {
            (
                buf.as_slice().on(&p).p(1, 8, me),
                buf.as_slice().on(&s).p(2, 9, me),
            )
        })
        .join()
        .expect("the thread panicked")
    });
    check_code!(from_other, Code::InvalidParam);
    serialized?;
    s.quiet()?;
    check_eq!(buf.as_slice().to_vec(me)?, vec![7, 0, 9, 0]);
    p.destroy()?;
    s.destroy()?;
    inst.barrier_all()?;
    buf.free()?;
    Ok(())
}

/// `NOSTORE` only relaxes what quiet and fence must do for the PE's own memory stores: every
/// operation stays allowed on such a context, and its quiet still completes its operations.
fn nostore(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let peer = (me + 1) % n;
    let buf = inst.calloc::<u64>(4)?;
    let sig = inst.calloc::<u64>(1)?;
    let c = inst.ctx_create(CtxOptions::NOSTORE)?;
    let view = buf.as_slice().on(&c);
    // Updates of one word are ordered by fences (strict mode reorders unfenced ones).
    view.put(&[1, 2, 3, 4], peer)?;
    c.fence()?;
    buf.elem(0).on(&c).atomic_add(10, peer)?;
    view.slice(1..2)
        .put_signal(&[20], sig.elem(0), 1, SignalOp::Add, peer)?;
    let src = [30u64];
    c.nbi(|s| s.put_nbi(view.slice(2..3), &src, peer))??;
    c.quiet()?;
    inst.barrier_all()?;
    check_eq!(buf.as_slice().to_vec(me)?, vec![11, 20, 30, 4]);
    check_eq!(sig.elem(0).signal_fetch()?, 1);
    check_eq!(view.to_vec(peer)?, vec![11, 20, 30, 4]);
    c.destroy()?;
    inst.barrier_all()?;
    buf.free()?;
    sig.free()?;
    Ok(())
}

fn options(inst: &Instance) -> Outcome {
    let c = inst.ctx_create(CtxOptions::SERIALIZED | CtxOptions::NOSTORE)?;
    check_eq!(c.options(), CtxOptions(5));
    check!(c.options().contains(CtxOptions::NOSTORE) && !c.options().contains(CtxOptions::PRIVATE));
    check!(
        c.team() == inst.team_world(),
        "an instance context's team is not the world"
    );
    c.destroy()?;
    check_code!(inst.ctx_create(CtxOptions(8)), Code::InvalidParam);
    // The default context is always usable and quiets like the instance.
    inst.default_ctx().quiet()?;
    inst.default_ctx().fence()?;
    inst.barrier_all()?;
    Ok(())
}

/// With the CANN transport's capabilities contexts stay (on Ascend each is a stream of its
/// own), and so do contexts on a user's stream (CANN's `_on_stream` calls).
fn cann_profile(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    check!(!inst.capabilities().host_atomics && inst.capabilities().streams);
    let right = (ctx.pe + 1) % ctx.n_pes;
    let buf = inst.calloc::<u64>(2)?;
    let c = inst.ctx_create(CtxOptions::NONE)?;
    buf.as_slice().slice(0..1).on(&c).put(&[7], right)?;
    c.destroy()?;
    let stream = shmem::Stream::new();
    let s = inst.stream_ctx(&stream)?;
    buf.as_slice().slice(1..2).on(&s).put(&[8], right)?;
    stream.synchronize()?;
    inst.barrier_all()?;
    check_eq!(buf.as_slice().to_vec(ctx.pe)?, vec![7, 8]);
    inst.default_ctx().quiet()?;
    buf.free()?;
    inst.finalize()?;
    Ok(())
}
