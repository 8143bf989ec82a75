//! `coll::` — broadcast, collect, fcollect, alltoall(s) and reductions on teams.

use shmem::{Code, Complex64, Instance, ReduceOp, Reducible, Team, TeamConfig};

use crate::cases::on_both_instances;
use crate::{Case, Ctx, Failure, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("coll::broadcast_from_every_root", |c| {
            on_both_instances(c, broadcast)
        }),
        Case::new("coll::broadcasts_in_a_row_with_no_barrier", |c| {
            on_both_instances(c, broadcasts_in_a_row)
        }),
        Case::new("coll::fcollect_and_collect", |c| {
            on_both_instances(c, collects)
        }),
        Case::new("coll::alltoall_and_alltoalls", |c| {
            on_both_instances(c, alltoalls)
        }),
        Case::new("coll::alltoall_blocks_across_2_mib_boundaries", |c| {
            alltoall_across_regions(&c.world()?)
        }),
        Case::new("coll::reductions_every_op_and_type", |c| {
            on_both_instances(c, reductions)
        })
        .timeout(120),
        Case::new("coll::collectives_on_sub_teams", |c| {
            on_both_instances(c, sub_teams)
        }),
        Case::new("coll::back_to_back_collectives_do_not_race", |c| {
            on_both_instances(c, back_to_back)
        }),
        Case::new("coll::sum_scans_inclusive_and_exclusive", |c| {
            on_both_instances(c, scans)
        }),
        Case::new("coll::bad_input_is_refused", |c| {
            on_both_instances(c, bad_input)
        }),
    ]
    .into_iter()
    // Teams of 9 and 17 PEs reach the second level of the radix-8 barrier and reduction
    // trees, and alltoall's large path at every size.
    .map(|c| c.full_pes(WIDE))
    .chain([
        Case::new("coll::cann_profile_runs_collectives", cann_profile)
            .pes(&[2])
            .env(&[("SHMEM_PROFILE", "cann")]),
    ])
    .collect()
}

/// The full tier's extra PE counts for the collective and team cases.
pub(crate) const WIDE: &[u32] = &[3, 5, 9, 17];

/// OpenSHMEM 1.6's prefix sums on the world team and on a strided sub-team, into another
/// array and in place: rank r gets the sum of ranks 0..=r (inclusive) or 0..r (exclusive).
fn scans(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let len = 300usize;
    let src = inst.calloc::<i64>(len)?;
    let dst = inst.calloc::<i64>(len)?;
    let f = inst.calloc::<f64>(2)?;
    let value = |r: u32, i: usize| i64::from(r + 1) * 1000 + i as i64;
    let prefix = |upto: u32, i: usize| (0..upto).map(|r| value(r, i)).sum::<i64>();
    let world = inst.team_world();
    for round in 0..3 {
        src.as_slice()
            .put(&(0..len).map(|i| value(me, i)).collect::<Vec<_>>(), me)?;
        world.sum_inscan(dst.as_slice(), src.as_slice())?;
        let got = dst.as_slice().to_vec(me)?;
        check!(
            (0..len).all(|i| got[i] == prefix(me + 1, i)),
            "round {round}: inscan on rank {me}: {:?}",
            &got[..3]
        );
        world.sum_exscan(dst.as_slice(), src.as_slice())?;
        let got = dst.as_slice().to_vec(me)?;
        check!(
            (0..len).all(|i| got[i] == prefix(me, i)),
            "round {round}: exscan on rank {me}: {:?}",
            &got[..3]
        );
        // In place.
        world.sum_exscan(src.as_slice(), src.as_slice())?;
        let got = src.as_slice().to_vec(me)?;
        check!(
            (0..len).all(|i| got[i] == prefix(me, i)),
            "in-place exscan on rank {me}"
        );
    }
    // Floats, on the odd members of a strided team.
    let odds = world.split_strided(
        1 % n as i32,
        2,
        (n / 2).max(1) as i32,
        TeamConfig::default(),
    );
    if let Ok(Some(t)) = odds {
        let r = t.my_pe();
        f.as_slice().put(&[0.5 * f64::from(r + 1), -1.0], me)?;
        t.sum_inscan(f.as_slice(), f.as_slice())?;
        let got = f.as_slice().to_vec(me)?;
        let want = 0.5 * f64::from((r + 1) * (r + 2) / 2);
        check_eq!(
            got,
            vec![want, -f64::from(r + 1)],
            "float inscan on team rank {r}"
        );
        inst.barrier_all()?;
        t.destroy()?;
    } else {
        odds?;
        inst.barrier_all()?;
    }
    for b in [src, dst] {
        b.free()?;
    }
    f.free()?;
    Ok(())
}

/// 64 broadcasts in a row on one pair of buffers, with rotating roots, sizes from 0 to 8 KiB
/// (the scratch slots' limit) and 8 KiB + 4 (the large path), and no barrier between them:
/// a root that returns early must not overwrite a slot a slow member still copies out of, and
/// a member's `dest` holds each broadcast's data when it returns.
fn broadcasts_in_a_row(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    const MAX: usize = (8 << 10) / 4 + 1;
    let src = inst.calloc::<u32>(MAX)?;
    let dst = inst.calloc::<u32>(MAX)?;
    let sizes = [0usize, 1, 2, 16, 255, MAX - 1, MAX];
    for k in 0..64u32 {
        let root = (k * 7 + 3) % n;
        let len = sizes[k as usize % sizes.len()];
        let value = |i: usize| (k << 24) ^ (me << 16) ^ i as u32;
        src.slice(0..len)
            .put(&(0..len).map(value).collect::<Vec<_>>(), me)?;
        world.broadcast(dst.slice(0..len), src.slice(0..len), root)?;
        let got = dst.slice(0..len).to_vec(me)?;
        let want: Vec<u32> = (0..len)
            .map(|i| (k << 24) ^ (root << 16) ^ i as u32)
            .collect();
        check!(
            got == want,
            "broadcast {k} of {len} elements from root {root}: wrong data"
        );
    }
    src.free()?;
    dst.free()?;
    Ok(())
}

fn broadcast(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    for len in [1usize, 100, 70_000] {
        let src = inst.calloc::<u32>(len)?;
        let dst = inst.calloc::<u32>(len)?;
        for root in 0..n {
            src.as_slice().put(
                &(0..len as u32)
                    .map(|i| i ^ (me << 20) ^ (root << 26))
                    .collect::<Vec<_>>(),
                me,
            )?;
            world.broadcast(dst.as_slice(), src.as_slice(), root)?;
            let got = dst.as_slice().to_vec(me)?;
            check!(
                got.iter()
                    .enumerate()
                    .all(|(i, &v)| v == i as u32 ^ (root << 20) ^ (root << 26)),
                "broadcast of {len} from root {root}: wrong data"
            );
        }
        src.free()?;
        dst.free()?;
    }
    Ok(())
}

fn collects(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    // Large enough for collect's largest contribution, (n_pes) * 37 elements.
    let k = 300usize.max(37 * n as usize);
    let src = inst.calloc::<u64>(k)?;
    let dst = inst.calloc::<u64>(k * n as usize)?;
    src.as_slice().put(
        &(0..k as u64)
            .map(|i| u64::from(me) << 32 | i)
            .collect::<Vec<_>>(),
        me,
    )?;
    world.fcollect(dst.as_slice(), src.as_slice())?;
    let got = dst.as_slice().to_vec(me)?;
    for p in 0..n as usize {
        check!(
            got[p * k..(p + 1) * k]
                .iter()
                .enumerate()
                .all(|(i, &v)| v == (p as u64) << 32 | i as u64),
            "fcollect block {p}"
        );
    }
    // collect: PE p contributes (p + 1) * per elements; with per = 37, 8 PEs gather more than
    // half the gather scratch (the direct path), fewer PEs less (the scratch path).
    for per in [1usize, 37] {
        let total: usize = (1..=n as usize).map(|c| c * per).sum();
        let out = inst.calloc::<u64>(total + 3)?;
        let total_got = world.collect(out.as_slice(), src.slice(0..(me as usize + 1) * per))?;
        check_eq!(total_got, total);
        let got = out.slice(0..total).to_vec(me)?;
        let want: Vec<u64> = (0..n as u64)
            .flat_map(|p| (0..(p + 1) * per as u64).map(move |i| p << 32 | i))
            .collect();
        check_eq!(got, want, "collect of {per} per rank");
        out.free()?;
    }
    for b in [src, dst] {
        b.free()?;
    }
    Ok(())
}

fn alltoalls(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let k = 50usize;
    let nn = n as usize;
    let src = inst.calloc::<i32>(k * nn)?;
    let dst = inst.calloc::<i32>(k * nn)?;
    let val = |from: u32, to: u32, i: usize| (from * 1000 + to * 10) as i32 * 100 + i as i32;
    src.as_slice().put(
        &(0..nn)
            .flat_map(|to| (0..k).map(move |i| val(me, to as u32, i)))
            .collect::<Vec<_>>(),
        me,
    )?;
    world.alltoall(dst.as_slice(), src.as_slice())?;
    let got = dst.as_slice().to_vec(me)?;
    let want: Vec<i32> = (0..n)
        .flat_map(|from| (0..k).map(move |i| val(from, me, i)))
        .collect();
    check_eq!(got, want, "alltoall");
    // A large alltoall (8 KiB blocks): the path through an entry barrier straight into `dest`.
    let big = 2048usize;
    let (bs, bd) = (inst.calloc::<i32>(big * nn)?, inst.calloc::<i32>(big * nn)?);
    bs.as_slice().put(
        &(0..nn)
            .flat_map(|to| (0..big).map(move |i| val(me, to as u32, i)))
            .collect::<Vec<_>>(),
        me,
    )?;
    world.alltoall(bd.as_slice(), bs.as_slice())?;
    let got = bd.as_slice().to_vec(me)?;
    for from in 0..nn {
        for i in (0..big).step_by(97).chain([big - 1]) {
            check_eq!(
                got[from * big + i],
                val(from as u32, me, i),
                "large alltoall from {from}, element {i}"
            );
        }
    }
    bs.free()?;
    bd.free()?;
    // alltoalls with strides 2 (destination) and 3 (source), 4 elements per PE.
    let (dst_s, src_s, m) = (2usize, 3usize, 4usize);
    let s2 = inst.calloc::<i32>((nn * m - 1) * src_s + 1)?;
    let d2 = inst.calloc::<i32>((nn * m - 1) * dst_s + 1)?;
    let mut local = vec![0i32; s2.len()];
    for to in 0..nn {
        for i in 0..m {
            local[(to * m + i) * src_s] = val(me, to as u32, i);
        }
    }
    s2.as_slice().put(&local, me)?;
    world.alltoalls(d2.as_slice(), s2.as_slice(), dst_s, src_s, m)?;
    let got = d2.as_slice().to_vec(me)?;
    for from in 0..nn {
        for i in 0..m {
            check_eq!(
                got[(from * m + i) * dst_s],
                val(from as u32, me, i),
                "alltoalls from {from}, element {i}"
            );
        }
    }
    for b in [src, dst, s2, d2] {
        b.free()?;
    }
    Ok(())
}

/// An alltoall whose source spans more than 2 MiB, so that some member's block crosses a
/// multiple of 2 MiB (where a page-table page ends): that block is pushed to its member by
/// every PE instead of being pulled. Every element of every block is checked.
fn alltoall_across_regions(inst: &Instance) -> Outcome {
    const REGION: usize = 2 << 20;
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let nn = n as usize;
    // A little over 2 MiB / n per block, in 4-byte elements.
    let k = REGION / 4 / nn + 12;
    let src = inst.calloc::<i32>(k * nn)?;
    let dst = inst.calloc::<i32>(k * nn)?;
    let start = src.as_ptr() as usize;
    let crossing: Vec<usize> = (0..nn)
        .filter(|r| {
            let b = start + r * k * 4;
            b / REGION != (b + k * 4 - 1) / REGION
        })
        .collect();
    check!(
        !crossing.is_empty(),
        "no block of the {} bytes at {start:#x} crosses a 2 MiB boundary",
        k * nn * 4
    );
    let val = |from: u32, to: usize, i: usize| (from as i32) << 24 ^ (to as i32) << 20 ^ i as i32;
    src.as_slice().put(
        &(0..nn)
            .flat_map(|to| (0..k).map(move |i| val(me, to, i)))
            .collect::<Vec<_>>(),
        me,
    )?;
    inst.team_world().alltoall(dst.as_slice(), src.as_slice())?;
    let got = dst.as_slice().to_vec(me)?;
    for from in 0..nn {
        for i in 0..k {
            check_eq!(
                got[from * k + i],
                val(from as u32, me as usize, i),
                "block from {from} (crossing: {crossing:?}), element {i}"
            );
        }
    }
    src.free()?;
    dst.free()?;
    Ok(())
}

/// Reduces `len` elements made by `make(team PE, index)` over `team` and checks every result
/// element. Every PE of `inst` calls it (the buffers are allocated on the whole instance);
/// only the members of `team` (`Some`) take part in the reduction.
fn reduce_check<T: Reducible + PartialEq + std::fmt::Debug>(
    inst: &Instance,
    team: Option<&Team>,
    op: ReduceOp,
    len: usize,
    make: impl Fn(u32, usize) -> T,
    in_place: bool,
) -> Outcome {
    let src = inst.calloc::<T>(len)?;
    let dst = if in_place {
        None
    } else {
        Some(inst.calloc::<T>(len)?)
    };
    if let Some(team) = team {
        let (me, n) = (team.my_pe(), team.n_pes());
        src.as_slice().put(
            &(0..len).map(|i| make(me, i)).collect::<Vec<_>>(),
            inst.my_pe(),
        )?;
        let d = dst.as_ref().map_or(src.as_slice(), |d| d.as_slice());
        team.reduce(op, d, src.as_slice())?;
        let got = d.to_vec(inst.my_pe())?;
        for (i, g) in got.iter().enumerate() {
            let want = (1..n).fold(make(0, i), |acc, p| T::combine(op, acc, make(p, i)));
            if *g != want {
                return Err(Failure(format!(
                    "{op:?} of {} over {n} PEs (in place: {in_place}): element {i} is {g:?}, want {want:?}",
                    std::any::type_name::<T>()
                )));
            }
        }
    }
    src.free()?;
    if let Some(d) = dst {
        d.free()?;
    }
    Ok(())
}

fn reductions(inst: &Instance) -> Outcome {
    let world = inst.team_world();
    // 2000 u64 = 16 KB: several chunks of the tree's 6 KiB slots.
    let len = 2000;
    for op in [
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Sum,
        ReduceOp::Prod,
    ] {
        for in_place in [false, true] {
            reduce_check::<u64>(
                inst,
                Some(&world),
                op,
                len,
                |p, i| (i as u64).wrapping_mul(0x9e37_79b9) ^ u64::from(p) << (i % 40),
                in_place,
            )?;
            reduce_check::<i32>(
                inst,
                Some(&world),
                op,
                37,
                |p, i| (i as i32 - 18) * (p as i32 + 1),
                in_place,
            )?;
            reduce_check::<i8>(
                inst,
                Some(&world),
                op,
                300,
                |p, i| (i as i8).wrapping_sub(p as i8),
                in_place,
            )?;
            reduce_check::<u16>(
                inst,
                Some(&world),
                op,
                5,
                |p, i| (i * 7 + p as usize) as u16,
                in_place,
            )?;
        }
    }
    for op in [ReduceOp::Max, ReduceOp::Min, ReduceOp::Sum, ReduceOp::Prod] {
        // Integral values keep floating-point sums exact whatever the combination order.
        reduce_check::<f64>(
            inst,
            Some(&world),
            op,
            1500,
            |p, i| (i % 13) as f64 - p as f64,
            false,
        )?;
        reduce_check::<f32>(
            inst,
            Some(&world),
            op,
            100,
            |p, i| ((i + p as usize) % 5) as f32 - 2.0,
            true,
        )?;
    }
    // Several chunks of the reduce-scatter path, with a short last chunk (empty segments).
    for in_place in [false, true] {
        reduce_check::<u64>(
            inst,
            Some(&world),
            ReduceOp::Sum,
            18_433,
            |p, i| (i as u64) << 8 | u64::from(p),
            in_place,
        )?;
        reduce_check::<i8>(
            inst,
            Some(&world),
            ReduceOp::Max,
            100_001,
            |p, i| (i % 251) as i8 ^ p as i8,
            in_place,
        )?;
    }
    for op in [ReduceOp::Sum, ReduceOp::Prod] {
        reduce_check::<Complex64>(
            inst,
            Some(&world),
            op,
            64,
            |p, i| Complex64 {
                re: (i % 3) as f64,
                im: p as f64 - 1.0,
            },
            false,
        )?;
    }
    Ok(())
}

fn sub_teams(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    // The last ceil(n/2) PEs, strided by 1, and a reduction and fcollect on them.
    let size = n.div_ceil(2);
    let t = world.split_strided((n - size) as i32, 1, size as i32, TeamConfig::default())?;
    reduce_check::<u64>(
        inst,
        t.as_ref(),
        ReduceOp::Sum,
        1000,
        |p, i| u64::from(p) * 1000 + i as u64,
        false,
    )?;
    // Symmetric allocation is collective over the instance: every PE allocates.
    let src = inst.calloc::<u32>(3)?;
    let dst = inst.calloc::<u32>(3 * size as usize)?;
    if let Some(t) = &t {
        src.as_slice().put(&[me; 3], me)?;
        t.fcollect(dst.as_slice(), src.as_slice())?;
        check_eq!(
            dst.as_slice().to_vec(me)?,
            (n - size..n).flat_map(|p| [p; 3]).collect::<Vec<_>>()
        );
        t.broadcast(dst.slice(0..3), src.as_slice(), size - 1)?;
        check_eq!(dst.slice(0..3).to_vec(me)?, vec![n - 1; 3]);
    }
    src.free()?;
    dst.free()?;
    world.barrier()?;
    if let Some(t) = t {
        t.destroy()?;
    }
    Ok(())
}

fn back_to_back(inst: &Instance) -> Outcome {
    // The same buffers through different collectives with no barrier between them: the
    // algorithms' own handshakes must keep a fast PE from overwriting what a slow one reads.
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let world = inst.team_world();
    let a = inst.calloc::<u64>(16 * n as usize)?;
    let b = inst.calloc::<u64>(16)?;
    for round in 0..100u64 {
        b.as_slice().put(&[round * 100 + u64::from(me); 16], me)?;
        world.broadcast(b.as_slice(), b.as_slice(), (round % u64::from(n)) as u32)?;
        let root = round % u64::from(n);
        check_eq!(
            b.as_slice().g(0, me)?,
            round * 100 + root,
            "round {round}: broadcast"
        );
        world.fcollect(a.as_slice(), b.as_slice())?;
        check!(
            a.as_slice()
                .to_vec(me)?
                .iter()
                .all(|&v| v == round * 100 + root),
            "round {round}: fcollect"
        );
        world.sum_reduce(b.as_slice(), b.as_slice())?;
        check_eq!(
            b.as_slice().g(15, me)?,
            u64::from(n) * (round * 100 + root),
            "round {round}: sum"
        );
    }
    a.free()?;
    b.free()?;
    Ok(())
}

fn bad_input(inst: &Instance) -> Outcome {
    let n = inst.n_pes();
    let world = inst.team_world();
    let a = inst.calloc::<u32>(4)?;
    let b = inst.calloc::<u32>(5)?;
    let f = inst.calloc::<f32>(4)?;
    check_code!(
        world.broadcast(a.as_slice(), b.as_slice(), 0),
        Code::InvalidParam
    );
    check_code!(
        world.broadcast(a.as_slice(), a.as_slice(), n),
        Code::InvalidParam
    );
    check_code!(
        world.fcollect(a.as_slice(), b.as_slice()),
        Code::InvalidParam
    );
    check_code!(
        world.reduce(ReduceOp::Sum, a.as_slice(), b.as_slice()),
        Code::InvalidParam
    );
    check_code!(
        world.and_reduce(f.as_slice(), f.as_slice()),
        Code::InvalidParam
    );
    check_code!(
        world.reduce(ReduceOp::Sum, a.slice(0..3), a.slice(1..4)),
        Code::InvalidParam
    ); // partial overlap
    world.barrier()?;
    for x in [a, b] {
        x.free()?;
    }
    f.free()?;
    Ok(())
}

/// The collectives are the core's algorithms over put, signal and wait, which the CANN
/// transport has: they run with its capabilities (CANN's own host API has only barrier and
/// sync, which `docs/api.md` marks).
fn cann_profile(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    check!(!inst.capabilities().host_atomics);
    let world = inst.team_world();
    let a = inst.calloc::<u32>(2)?;
    if ctx.pe == 0 {
        a.as_slice().put(&[3, 4], 0)?;
    }
    world.broadcast(a.as_slice(), a.as_slice(), 0)?;
    check_eq!(a.as_slice().to_vec(ctx.pe)?, vec![3, 4]);
    world.sum_reduce(a.as_slice(), a.as_slice())?;
    let n = ctx.n_pes;
    check_eq!(a.as_slice().to_vec(ctx.pe)?, vec![3 * n, 4 * n]);
    world.barrier()?;
    world.sync()?;
    a.free()?;
    inst.finalize()?;
    Ok(())
}
