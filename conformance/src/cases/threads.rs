//! `threads::` — collectives from several threads of one PE (`THREAD_MULTIPLE`): collectives on
//! different teams, and on different instances, proceed independently, whatever order the
//! threads reach them in on each PE.

use std::time::Duration;

use shmem::{Instance, Team, TeamConfig, ThreadLevel};

use crate::cases::multi_instance::attrs_for;
use crate::{Case, Ctx, Failure, Outcome, check, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "threads::splits_of_two_parents_in_opposite_orders",
            opposite_splits,
        )
        .pes(&[2, 4])
        .full_pes(&[3]),
        Case::new(
            "threads::barriers_and_reductions_on_two_teams",
            two_team_collectives,
        )
        .pes(&[2, 4])
        .full_pes(&[3]),
        Case::new(
            "threads::collectives_on_two_instances_in_opposite_orders",
            two_instance_collectives,
        )
        .pes(&[2, 4]),
    ]
}

/// Instance 0 with `THREAD_MULTIPLE`.
fn world_multiple(ctx: &Ctx) -> Result<Instance, Failure> {
    let (inst, level) = Instance::init_thread(&ctx.attrs(crate::CASE_HEAP), ThreadLevel::Multiple)?;
    check_eq!(level, ThreadLevel::Multiple);
    Ok(inst)
}

/// The pause before the second thread starts, on PEs where `second` is that thread: even PEs
/// start thread 0 first, odd PEs thread 1, so the two PEs' threads meet in opposite orders.
fn stagger(me: u32, thread: u32, round: usize) {
    if (me + thread) % 2 == 1 {
        std::thread::sleep(Duration::from_millis(2 + (round % 3) as u64));
    }
}

/// Runs `body(0)` and `body(1)` on two threads and returns the first failure.
fn two_threads(body: impl Fn(u32) -> Outcome + Sync) -> Outcome {
    std::thread::scope(|s| {
        let handles = [0, 1].map(|t| {
            let body = &body;
            s.spawn(move || body(t))
        });
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(Failure("a thread panicked".into())))
        })
    })
}

/// Thread 0 splits the world team, thread 1 the shared team, started in opposite orders on
/// neighbouring PEs; each uses and destroys its new team. With a per-PE lock held across the
/// index agreement, the two PEs would each wait inside one split for the other.
fn opposite_splits(ctx: &Ctx) -> Outcome {
    let inst = world_multiple(ctx)?;
    let n = inst.n_pes() as i32;
    let rounds = ctx.iters(12, 40);
    for round in 0..rounds {
        let made: [std::sync::Mutex<Option<u32>>; 2] = Default::default();
        // Both new teams stay live until both exist, so their indices must differ.
        let both = std::sync::Barrier::new(2);
        two_threads(|t| {
            stagger(ctx.pe, t, round);
            let parent = if t == 0 {
                inst.team_world()
            } else {
                inst.team_shared()
            };
            let team = parent
                .split_strided(0, 1, n, TeamConfig::default())?
                .ok_or_else(|| Failure("a PE is not in a split of all PEs".into()))?;
            check_eq!(team.n_pes(), n as u32);
            *made[t as usize].lock().unwrap() = Some(team.index());
            both.wait();
            team.barrier()?;
            team.destroy()?;
            Ok(())
        })?;
        let (a, b) = (*made[0].lock().unwrap(), *made[1].lock().unwrap());
        check!(
            a.is_some() && a != b,
            "round {round}: two live teams share index {a:?} on PE {}",
            ctx.pe
        );
    }
    inst.barrier_all()?;
    inst.finalize()?;
    Ok(())
}

/// Sums over `team` into a buffer of its own, `iters` times, checking each result.
fn reductions(inst: &Instance, team: &Team, tag: u64, iters: usize) -> Outcome {
    let buf = inst.calloc::<u64>(4)?;
    let (me, n) = (team.my_pe(), team.n_pes());
    for i in 0..iters as u64 {
        let mine = [tag + i, u64::from(me), 1, tag];
        buf.as_slice().put(&mine, inst.my_pe())?;
        team.sum_reduce(buf.as_slice(), buf.as_slice())?;
        let want = [
            (tag + i) * u64::from(n),
            u64::from(n * (n - 1) / 2),
            u64::from(n),
            tag * u64::from(n),
        ];
        check_eq!(buf.as_slice().to_vec(inst.my_pe())?, want, "iteration {i}");
        team.barrier()?;
    }
    buf.free()?;
    Ok(())
}

/// Two duplicates of the world team; thread 0 runs barriers and reductions on one while thread
/// 1 runs them on the other, started in opposite orders on neighbouring PEs.
fn two_team_collectives(ctx: &Ctx) -> Outcome {
    let inst = world_multiple(ctx)?;
    let n = inst.n_pes() as i32;
    let world = inst.team_world();
    let teams = [
        world.split_strided(0, 1, n, TeamConfig::default())?,
        world.split_strided(0, 1, n, TeamConfig::default())?,
    ]
    .map(|t| t.expect("every PE is in a split of all PEs"));
    // Buffers are allocated collectively on the world, before the threads start.
    let rounds = ctx.iters(10, 30);
    for round in 0..rounds {
        two_threads(|t| {
            stagger(ctx.pe, t, round);
            let team = &teams[t as usize];
            for _ in 0..5 {
                team.barrier()?;
            }
            Ok(())
        })?;
    }
    let bufs = [inst.calloc::<u64>(4)?, inst.calloc::<u64>(4)?];
    for round in 0..rounds {
        two_threads(|t| {
            stagger(ctx.pe, t, round);
            let (team, buf) = (&teams[t as usize], &bufs[t as usize]);
            let (me, tn) = (team.my_pe(), team.n_pes());
            for i in 0..5u64 {
                let tag = u64::from(t + 1) << 20 | (round as u64) << 8 | i;
                buf.as_slice()
                    .put(&[tag, u64::from(me), 1, tag], inst.my_pe())?;
                team.sum_reduce(buf.as_slice(), buf.as_slice())?;
                let want = [
                    tag * u64::from(tn),
                    u64::from(tn * (tn - 1) / 2),
                    u64::from(tn),
                    tag * u64::from(tn),
                ];
                check_eq!(buf.as_slice().to_vec(inst.my_pe())?, want);
                team.barrier()?;
            }
            Ok(())
        })?;
    }
    let [a, b] = bufs;
    a.free()?;
    b.free()?;
    let [x, y] = teams;
    x.destroy()?;
    y.destroy()?;
    inst.finalize()?;
    Ok(())
}

/// Instance 0 and instance 1 over every PE; thread 0 runs reductions on instance 0's world
/// team while thread 1 runs them on instance 1's, started in opposite orders.
fn two_instance_collectives(ctx: &Ctx) -> Outcome {
    let a = world_multiple(ctx)?;
    let members: Vec<u32> = (0..ctx.n_pes).collect();
    let b = Instance::init(&attrs_for(ctx, 1, &members).expect("every PE is a member"))?;
    let insts = [&a, &b];
    let rounds = ctx.iters(6, 20);
    for round in 0..rounds {
        two_threads(|t| {
            stagger(ctx.pe, t, round);
            let inst = insts[t as usize];
            // Allocation is collective over each instance, and each instance is driven by one
            // thread, so the threads' allocations do not need to agree with each other.
            reductions(inst, &inst.team_world(), u64::from(t + 1) << 32, 4)
        })?;
    }
    b.finalize()?;
    a.finalize()?;
    Ok(())
}
