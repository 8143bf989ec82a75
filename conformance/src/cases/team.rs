//! `team::` — splitting teams, translating PEs, team barriers and the CANN team layer.

use shmem::{Code, Instance, Team, TeamConfig};
use shmem_capi::cann::{self, INIT_WITH_DEFAULT};

use crate::cases::multi_instance::attrs_for;
use crate::cases::on_both_instances;
use crate::{Case, Ctx, Failure, MULTI_PES, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("team::split_strided_odd_and_even", |c| {
            on_both_instances(c, odd_even)
        }),
        Case::new("team::split_2d_grid", |c| on_both_instances(c, grid)),
        Case::new("team::split_2d_takes_one_index_per_axis", |c| {
            on_both_instances(c, grid_indices)
        })
        .pes(&[2, 4, 8]),
        Case::new("team::different_split_histories_agree", |c| {
            on_both_instances(c, histories)
        })
        .pes(&[4, 8]),
        Case::new("team::failure_matrix", |c| on_both_instances(c, failures)),
        Case::new("team::barrier_ring_increment_on_a_sub_team", |c| {
            on_both_instances(c, sub_team_barrier)
        })
        .pes(MULTI_PES),
        Case::new("team::create_and_destroy_reuses_indices", |c| {
            on_both_instances(c, reuse)
        })
        .pes(&[2, 4]),
        Case::new("team::shared_team_is_the_world", |c| {
            on_both_instances(c, shared)
        }),
    ]
    .into_iter()
    // Teams of 9 and 17 PEs in the full tier: the second level of the barrier tree.
    .map(|c| c.full_pes(crate::cases::coll::WIDE))
    .chain([
        Case::new("team::too_many_teams_is_a_clean_error", too_many).pes(&[1, 2]),
        Case::new("team::cann_layer_handles_and_not_supported", cann_layer).pes(&[2, 4]),
        Case::new("team::cann_profile_splits_on_every_instance", cann_profile)
            .pes(&[2])
            .env(&[("SHMEM_PROFILE", "cann")]),
        Case::new(
            "team::openshmem_1_6_reverse_and_one_pe_splits",
            reverse_splits,
        )
        .pes(&[1, 2, 4, 5])
        .env(&[("SHMEM_PROFILE", "openshmem")]),
    ])
    .collect()
}

/// The rows of a 2-D split are disjoint, and so are its columns: each axis takes one team
/// index, so 63 splits into single-PE rows fit in the 126 indices an instance has besides the
/// world and shared teams, whatever the PE count (one index per row would run out at once).
fn grid_indices(inst: &Instance) -> Outcome {
    let world = inst.team_world();
    let mut live = Vec::new();
    for round in 0..(shmem::MAX_TEAMS - 2) / 2 {
        let (x, y) = world
            .split_2d(1, TeamConfig::default(), TeamConfig::default())
            .map_err(|e| Failure(format!("split_2d number {round}: {e}")))?;
        let (x, y) = (x.expect("every PE has a row"), y.expect("and a column"));
        check_eq!((x.n_pes(), y.n_pes()), (1, inst.n_pes()));
        check!(x.index() != y.index(), "a row and a column share an index");
        live.push((x, y));
    }
    // Every index is now taken: one more split fails cleanly.
    check_code!(
        world.split_2d(1, TeamConfig::default(), TeamConfig::default()),
        Code::InnerError
    );
    for (x, y) in live.into_iter().rev() {
        x.destroy()?;
        y.destroy()?;
    }
    inst.barrier_all()?;
    Ok(())
}

fn odd_even(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let evens = world.split_strided(0, 2, n.div_ceil(2) as i32, TeamConfig::default())?;
    let odds = if n > 1 {
        world.split_strided(1, 2, (n / 2) as i32, TeamConfig { num_contexts: 2 })?
    } else {
        None
    };
    let mine = if me % 2 == 0 { &evens } else { &odds };
    let other = if me % 2 == 0 { &odds } else { &evens };
    let t = mine
        .as_ref()
        .ok_or_else(|| Failure("this PE got no team".into()))?;
    check!(other.is_none(), "a PE got a team it is not a member of");
    check_eq!(t.my_pe(), me / 2);
    check_eq!(t.n_pes(), if me % 2 == 0 { n.div_ceil(2) } else { n / 2 });
    // Translations round-trip through the world.
    for r in 0..t.n_pes() {
        let w = t
            .translate_pe(r, &world)
            .ok_or_else(|| Failure("translate to the world failed".into()))?;
        check_eq!(w, 2 * r + me % 2);
        check_eq!(world.translate_pe(w, t), Some(r));
    }
    // Translating to a team the PE is not in, or out of range, gives none.
    check_eq!(t.translate_pe(t.n_pes(), &world), None);
    // A neighbour of the other parity (with an odd count, the last PE's right neighbour
    // would wrap to PE 0, of the same parity).
    let other = me ^ 1;
    if other < n {
        check_eq!(world.translate_pe(other, t), None);
    }
    check_eq!(t.config().num_contexts, if me % 2 == 0 { 0 } else { 2 });
    t.barrier()?;
    for team in [evens, odds].into_iter().flatten() {
        team.destroy()?;
    }
    Ok(())
}

fn grid(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let (x, y) = world.split_2d(2, TeamConfig::default(), TeamConfig::default())?;
    let (x, y) = (
        x.ok_or_else(|| Failure("no row team".into()))?,
        y.ok_or_else(|| Failure("no column team".into()))?,
    );
    // Rows of 2 consecutive PEs (the last may be shorter), columns of same position.
    check_eq!(
        x.n_pes(),
        if me / 2 == (n - 1) / 2 && n % 2 == 1 {
            1
        } else {
            2.min(n)
        }
    );
    check_eq!(x.my_pe(), me % 2);
    check_eq!(y.my_pe(), me / 2);
    check_eq!(y.n_pes(), n / 2 + u32::from(me % 2 < n % 2));
    check_eq!(x.translate_pe(0, &world), Some(me - me % 2));
    check_eq!(y.translate_pe(0, &world), Some(me % 2));
    // An xrange above the size is clamped: one row of everyone.
    let (all, col) = world.split_2d(i32::MAX, TeamConfig::default(), TeamConfig::default())?;
    let all = all.ok_or_else(|| Failure("no clamped row".into()))?;
    check_eq!(all.n_pes(), n);
    check_eq!(col.map(|c| c.n_pes()), Some(1));
    for t in [x, y, all] {
        t.destroy()?;
    }
    Ok(())
}

fn histories(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let half = world.split_strided(0, 1, (n / 2) as i32, TeamConfig::default())?;
    // Only the first half splits again: its members now use one more index than the others.
    let extra = match &half {
        Some(h) => h.split_strided(0, 1, 1, TeamConfig::default())?,
        None => None,
    };
    check_eq!(extra.is_some(), me == 0);
    // A team common to everyone must still get one index that all members agree on.
    let common = world
        .split_strided(0, 1, n as i32, TeamConfig::default())?
        .ok_or_else(|| Failure("no common team".into()))?;
    let idx = inst.calloc::<u32>(n as usize)?;
    for pe in 0..n {
        idx.as_slice().p(me as usize, common.index(), pe)?;
    }
    common.barrier()?;
    let all = idx.as_slice().to_vec(me)?;
    check!(
        all.iter().all(|&i| i == all[0]),
        "members disagree about the common team's index: {all:?}"
    );
    // And it works: a ring increment over it.
    let v = inst.calloc::<u32>(1)?;
    v.as_slice().p(0, 1, (me + 1) % n)?;
    common.barrier()?;
    check_eq!(v.as_slice().g(0, me)?, 1);
    for t in [extra, half, Some(common)].into_iter().flatten() {
        t.destroy()?;
    }
    idx.free()?;
    v.free()?;
    Ok(())
}

fn failures(inst: &Instance) -> Outcome {
    let n = inst.n_pes() as i32;
    let world = inst.team_world();
    let cfg = TeamConfig::default();
    // CANN's failure matrix (all INVALID_PARAM).
    check_code!(world.split_strided(n, 1, 1, cfg), Code::InvalidParam); // start beyond the parent
    check_code!(world.split_strided(-1, 1, 1, cfg), Code::InvalidParam);
    check_code!(world.split_strided(0, 1, 0, cfg), Code::InvalidParam); // empty
    check_code!(world.split_strided(0, 1, n + 1, cfg), Code::InvalidParam); // larger than the parent
    check_code!(world.split_strided(0, 0, 1, cfg), Code::InvalidParam); // stride 0
    check_code!(world.split_strided(0, -1, 1, cfg), Code::InvalidParam);
    check_code!(world.split_strided(0, 1, 16385, cfg), Code::InvalidParam);
    if n > 1 {
        check_code!(world.split_strided(1, 1, n, cfg), Code::InvalidParam); // runs past the end
    }
    check_code!(world.split_2d(0, cfg, cfg), Code::InvalidParam);
    check_code!(world.split_2d(-2, cfg, cfg), Code::InvalidParam);
    // The predefined teams cannot be destroyed (CANN destroys the world, breaking later calls).
    check_code!(world.clone().destroy(), Code::InvalidParam);
    check_code!(inst.team_shared().destroy(), Code::InvalidParam);
    // Non-members get no team, and success.
    if n > 1 {
        let only0 = world.split_strided(0, 1, 1, cfg)?;
        check_eq!(only0.is_some(), inst.my_pe() == 0);
        if let Some(t) = only0 {
            t.destroy()?;
        }
    }
    // A destroyed team is refused everywhere.
    let t = world
        .split_strided(0, 1, n, cfg)?
        .expect("everyone is a member");
    let copy = t.clone();
    t.destroy()?;
    check_code!(copy.barrier(), Code::InvalidParam);
    check_code!(copy.split_strided(0, 1, 1, cfg), Code::InvalidParam);
    check_eq!(copy.translate_pe(0, &world), None);
    world.barrier()?;
    Ok(())
}

fn sub_team_barrier(inst: &Instance) -> Outcome {
    // CANN's odd-team barrier variant: the odd PEs form a team, ring-increment within it.
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let odds = inst
        .team_world()
        .split_strided(1, 2, (n / 2) as i32, TeamConfig::default())?;
    let v = inst.calloc::<i32>(1)?;
    if let Some(t) = &odds {
        let (r, size) = (t.my_pe(), t.n_pes());
        let next = t
            .translate_pe((r + 1) % size, &inst.team_world())
            .expect("member");
        for round in 1..=20 {
            let cur = v.as_slice().g(0, me)?;
            t.barrier()?;
            v.as_slice().p(0, cur + 1, next)?;
            t.barrier()?;
            check_eq!(v.as_slice().g(0, me)?, round);
        }
    }
    inst.barrier_all()?;
    if let Some(t) = odds {
        t.destroy()?;
    }
    v.free()?;
    Ok(())
}

fn reuse(inst: &Instance) -> Outcome {
    let n = inst.n_pes() as i32;
    let world = inst.team_world();
    let v = inst.calloc::<u64>(1)?;
    for round in 0..100u64 {
        let t = world
            .split_strided(0, 1, n, TeamConfig::default())?
            .expect("member");
        // Stale counts from an earlier team with the same index would let this barrier pass
        // early and the value would be missing.
        v.as_slice().p(0, round, (t.my_pe() + 1) % t.n_pes())?;
        t.barrier()?;
        check_eq!(
            v.as_slice().g(0, t.my_pe())?,
            round,
            "round {round}, team index {}",
            t.index()
        );
        t.barrier()?;
        t.destroy()?;
    }
    v.free()?;
    Ok(())
}

fn too_many(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let world = inst.team_world();
    let mut live: Vec<Team> = Vec::new();
    let e = loop {
        match world.split_strided(0, 1, ctx.n_pes as i32, TeamConfig::default()) {
            Ok(t) => live.push(t.expect("member")),
            Err(e) => break e,
        }
        if live.len() > shmem::MAX_TEAMS {
            return Err(Failure("more teams than MAX_TEAMS were created".into()));
        }
    };
    check_eq!(e.code(), Code::InnerError);
    check_eq!(
        live.len(),
        shmem::MAX_TEAMS - 2,
        "the world and shared teams take two indices"
    );
    for t in live {
        t.destroy()?;
    }
    // Everything works again.
    world
        .split_strided(0, 1, 1, TeamConfig::default())?
        .map(Team::destroy)
        .transpose()?;
    inst.finalize()?;
    Ok(())
}

fn shared(inst: &Instance) -> Outcome {
    let s = inst.team_shared();
    check_eq!(s.n_pes(), inst.n_pes());
    check_eq!(s.my_pe(), inst.my_pe());
    check_eq!(s.translate_pe(0, &inst.team_world()), Some(0));
    s.barrier()?;
    Ok(())
}

fn cann_layer(ctx: &Ctx) -> Outcome {
    cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    let n = ctx.n_pes as i32;
    check_eq!(cann::team_my_pe(cann::TEAM_WORLD), ctx.pe as i32);
    check_eq!(cann::team_n_pes(cann::TEAM_WORLD), n);
    check_eq!(cann::team_my_pe(99), -1);
    let h = cann::team_split_strided(cann::TEAM_WORLD, 1, 1, n - 1)?;
    if ctx.pe == 0 {
        check_eq!(h, cann::TEAM_INVALID, "a non-member gets the invalid team");
    } else {
        check!(h > 1);
        check_eq!(cann::team_my_pe(h), ctx.pe as i32 - 1);
        check_eq!(cann::team_translate_pe(h, 0, cann::TEAM_WORLD), 1);
        check_eq!(cann::team_get_config(h)?.num_contexts, 0);
        cann::barrier(h)?;
    }
    cann::barrier(cann::TEAM_INVALID)?; // a no-op
    check_code!(
        cann::team_split_strided(cann::TEAM_INVALID, 0, 1, 1),
        Code::InvalidParam
    );
    check_code!(cann::team_get_config(55), Code::InvalidParam);
    if h != cann::TEAM_INVALID {
        cann::team_destroy(h);
    }
    cann::barrier_all()?;
    // On instance 1, CANN's team calls are not supported.
    cann::init_attr(
        INIT_WITH_DEFAULT,
        &attrs_for(ctx, 1, &(0..ctx.n_pes).collect::<Vec<_>>()).expect("member"),
    )?;
    check_eq!(cann::instance_ctx_get(), 1);
    check_code!(
        cann::team_split_strided(cann::TEAM_WORLD, 0, 1, 1),
        Code::NotSupported
    );
    check_code!(cann::team_split_2d(cann::TEAM_WORLD, 1), Code::NotSupported);
    check_code!(cann::team_get_config(cann::TEAM_WORLD), Code::NotSupported);
    check_eq!(cann::team_my_pe(cann::TEAM_WORLD), -100);
    check_eq!(cann::team_n_pes(cann::TEAM_WORLD), -100);
    check_eq!(
        cann::team_translate_pe(cann::TEAM_WORLD, 0, cann::TEAM_WORLD),
        -100
    );
    // The world barrier still works there.
    cann::barrier(cann::TEAM_WORLD)?;
    cann::finalize_instance(1)?;
    cann::finalize()?;
    Ok(())
}

/// Teams are the core's, over the transport's put, signal and wait: with the CANN transport's
/// capabilities they exist on every instance of the Rust API (CANN's own layer refuses them on
/// instances other than 0: `team::cann_layer_*`). Without a host mapping of peers' heaps the
/// shared team is this PE alone, as OpenSHMEM defines it.
fn cann_profile(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    check!(!world.capabilities().host_mapping);
    check_eq!(world.team_shared().n_pes(), 1);
    check_eq!(world.team_shared().my_pe(), 0);
    world
        .team_world()
        .split_strided(0, 1, 1, TeamConfig::default())?
        .map(Team::destroy)
        .transpose()?;
    let one = Instance::init(&attrs_for(ctx, 1, &[0, 1]).expect("member"))?;
    let t = one
        .team_world()
        .split_strided(1, 1, 1, TeamConfig::default())?;
    check_eq!(t.is_some(), ctx.pe == 1);
    if let Some(t) = t {
        t.barrier()?;
        t.destroy()?;
    }
    one.team_world().barrier()?;
    one.finalize()?;
    world.finalize()?;
    Ok(())
}

/// OpenSHMEM 1.6's triplets (OpenSHMEM profile): a negative stride makes a team in reverse
/// order, from `start` down; a team of one PE takes any stride, 0 included; a triplet that
/// would run below PE 0, or a stride of 0 for more than one PE, is refused.
fn reverse_splits(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let cfg = TeamConfig::default();
    // The world backwards: rank r is world PE n-1-r.
    let rev = world
        .split_strided(n as i32 - 1, -1, n as i32, cfg)?
        .ok_or_else(|| Failure("every PE is in the reversed world".into()))?;
    check_eq!(rev.my_pe(), n - 1 - me);
    check_eq!(rev.n_pes(), n);
    for r in 0..n {
        check_eq!(rev.translate_pe(r, &world), Some(n - 1 - r));
    }
    // A collective on it: rank 0 (world PE n-1) broadcasts.
    let buf = inst.calloc::<u64>(2)?;
    let src = inst.calloc::<u64>(2)?;
    src.as_slice().put(&[u64::from(me) << 40, 7], me)?;
    rev.barrier()?;
    rev.broadcast(buf.as_slice(), src.as_slice(), 0)?;
    check_eq!(buf.as_slice().to_vec(me)?, vec![u64::from(n - 1) << 40, 7]);
    // Every other PE from the last down, as a sub-team of the reversed world (ranks 0, 2, …
    // of it): world PEs n-1, n-3, …
    let size = n.div_ceil(2) as i32;
    let sub = rev.split_strided(0, 2, size, cfg)?;
    check_eq!(sub.is_some(), (n - 1 - me) % 2 == 0);
    if let Some(t) = &sub {
        check_eq!(t.my_pe(), (n - 1 - me) / 2);
        check_eq!(t.translate_pe(0, &world), Some(n - 1));
        t.barrier()?;
    }
    // The same PEs from the other end of the reversed world: a negative stride in a team with
    // a negative stride gives the world's order back.
    let fwd = rev
        .split_strided(n as i32 - 1, -1, n as i32, cfg)?
        .expect("member");
    check_eq!(fwd.my_pe(), me);
    // One PE, any stride.
    for stride in [0, -3, 5] {
        let one = world.split_strided(n as i32 - 1, stride, 1, cfg)?;
        check_eq!(one.is_some(), me == n - 1);
        if let Some(t) = one {
            check_eq!(t.n_pes(), 1);
            t.destroy()?;
        }
    }
    // Invalid triplets: below PE 0, or a stride of 0 for two PEs.
    check_code!(world.split_strided(0, -1, 2, cfg), Code::InvalidParam);
    if n > 1 {
        check_code!(world.split_strided(1, 0, 2, cfg), Code::InvalidParam);
    }
    for t in [sub, Some(fwd), Some(rev)].into_iter().flatten() {
        t.destroy()?;
    }
    buf.free()?;
    src.free()?;
    world.barrier()?;
    inst.finalize()?;
    Ok(())
}
