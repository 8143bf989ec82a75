//! `ptr::` — peer address translation (`aclshmem_ptr`).

use crate::{Case, Ctx, Outcome, check, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("ptr::arithmetic_and_bounds", arithmetic_and_bounds),
        Case::new("ptr::load_store_through_ptr", load_store),
        Case::new("ptr::team_context_view_numbers_pes_in_the_team", team_ptr)
            .pes(&[2, 4])
            .full_pes(&[3, 5]),
    ]
}

/// On a view issued through a team's context, `ptr(r)` is team rank `r`'s copy
/// (`shmem_team_ptr`), not instance PE `r`'s; ranks beyond the team give none.
fn team_ptr(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let buf = inst.calloc::<u64>(1)?;
    // The PEs from 1 on, every other one: team rank r is instance PE 1 + 2r.
    let size = ctx.n_pes / 2;
    let team = inst
        .team_world()
        .split_strided(1, 2, size as i32, shmem::TeamConfig::default())?;
    if let Some(team) = team {
        let tctx = team.create_ctx(shmem::CtxOptions::NONE)?;
        let v = buf.as_slice().on(&tctx);
        for r in 0..size {
            check_eq!(
                v.ptr(r).map(|q| q.as_ptr() as usize),
                buf.as_slice().ptr(1 + 2 * r).map(|q| q.as_ptr() as usize),
                "team rank {r}"
            );
        }
        check!(v.ptr(size).is_none(), "a rank beyond the team translated");
        tctx.destroy()?;
        inst.barrier_all()?;
        team.destroy()?;
    } else {
        inst.barrier_all()?;
    }
    buf.free()?;
    inst.finalize()?;
    Ok(())
}

fn arithmetic_and_bounds(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let buf = inst.malloc::<u8>(64)?;
    let p = buf.as_ptr().cast_const();
    // For this PE the address itself.
    check_eq!(
        inst.ptr(p, ctx.pe).map(|q| q.as_ptr().cast_const()),
        Some(p)
    );
    for pe in 0..ctx.n_pes {
        let a = inst.ptr(p, pe).expect("the simulator maps every peer");
        let b = inst.ptr(p.wrapping_add(1), pe).expect("inside the heap");
        check_eq!(
            b.as_ptr() as usize - a.as_ptr() as usize,
            1,
            "ptr(p+1) - ptr(p) on PE {pe}"
        );
        check_eq!(
            buf.as_slice().ptr(pe).map(|q| q.as_ptr() as usize),
            Some(a.as_ptr() as usize)
        );
    }
    // A bad PE, or an address outside the heap, gives none.
    check!(inst.ptr(p, ctx.n_pes).is_none());
    check!(inst.ptr(p, u32::MAX).is_none());
    let local = 0u64;
    check!(
        inst.ptr((&local as *const u64).cast(), 0).is_none(),
        "a stack address translated"
    );
    check!(
        inst.ptr(inst.heap_base().wrapping_add(inst.heap_size()), 0)
            .is_none(),
        "the end of the heap translated"
    );
    check!(
        inst.ptr(inst.heap_base().wrapping_add(inst.heap_size() - 1), 0)
            .is_some(),
        "the last heap byte did not translate"
    );
    buf.free()?;
    inst.finalize()?;
    Ok(())
}

fn load_store(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let buf = inst.calloc::<u64>(ctx.n_pes as usize)?;
    let right = (ctx.pe + 1) % ctx.n_pes;
    let q = buf.as_slice().ptr(right).expect("mapped");
    // SAFETY: `q` is PE `right`'s copy of this PE's slot of `buf`, which only this PE writes;
    // the barrier below orders the store before the peer reads it.
    unsafe {
        q.as_ptr()
            .add(ctx.pe as usize)
            .write_volatile(0xfeed_0000 + u64::from(ctx.pe))
    };
    inst.barrier_all()?;
    let left = (ctx.pe + ctx.n_pes - 1) % ctx.n_pes;
    check_eq!(
        buf.as_slice().g(left as usize, ctx.pe)?,
        0xfeed_0000 + u64::from(left)
    );
    buf.free()?;
    inst.finalize()?;
    Ok(())
}
