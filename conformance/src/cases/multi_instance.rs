//! `multi_instance::` — many independent instances per process (CANN's multi-instance design,
//! reference §4 and the CANN tests of §7.2), and the active-instance contract of `shmem_capi::cann`.

use std::time::{Duration, Instant};

use shmem::{Attributes, Code, Instance};
use shmem_capi::cann::{self, INIT_WITH_DEFAULT, InitStatus};

use crate::{Case, Ctx, Failure, MULTI_PES, Outcome, check, check_code, check_eq};

const TWO_FOUR: &[u32] = &[2, 4];

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("multi_instance::single_extra_instance", single_extra)
            .pes(TWO_FOUR)
            .full_pes(&[8]),
        Case::new("multi_instance::malloc_on_a_subset", malloc_on_subset)
            .pes(TWO_FOUR)
            .full_pes(&[8]),
        Case::new("multi_instance::overlapping_membership", overlapping)
            .pes(TWO_FOUR)
            .full_pes(&[3, 8]),
        Case::new("multi_instance::invalid_id_and_port_range", invalid_id).pes(&[1, 2]),
        Case::new("multi_instance::finalize_active", finalize_active).pes(TWO_FOUR),
        Case::new("multi_instance::finalize_nonactive", finalize_nonactive).pes(TWO_FOUR),
        Case::new("multi_instance::finalize_nonexistent", finalize_nonexistent).pes(TWO_FOUR),
        Case::new("multi_instance::duplicate_create", duplicate_create).pes(TWO_FOUR),
        Case::new(
            "multi_instance::concurrent_create_of_one_id",
            concurrent_create,
        )
        .pes(TWO_FOUR),
        Case::new(
            "multi_instance::cann_finalize_releases_team_handles",
            finalize_releases_team_handles,
        )
        .pes(&[1, 2]),
        Case::new("multi_instance::isolation", isolation)
            .pes(TWO_FOUR)
            .full_pes(&[8]),
        Case::new(
            "multi_instance::barrier_never_waits_for_another_instance",
            barrier_independent,
        )
        .pes(&[3, 4]),
        Case::new(
            "multi_instance::two_hundred_fifty_five_live_instances",
            many_instances,
        )
        .pes(TWO_FOUR)
        .timeout(180),
        Case::new(
            "multi_instance::create_finalize_loop_leaks_nothing",
            create_finalize_loop,
        )
        .pes(TWO_FOUR)
        .timeout(180),
        Case::new(
            "multi_instance::threads_drive_their_own_instances",
            threads_own_instances,
        )
        .pes(TWO_FOUR),
        Case::new(
            "multi_instance::cross_instance_dependency_between_threads",
            cross_instance_dependency,
        )
        .pes(&[2]),
        Case::new("multi_instance::limits_are_refused_at_init", limits).pes(&[1]),
        Case::new(
            "multi_instance::under_mpirun_without_mpi_calls",
            under_mpirun,
        )
        .pes(&[4])
        .relaxed()
        .via_mpirun(),
        Case::new(
            "multi_instance::under_mpirun_with_mpi_bootstraps",
            under_mpirun_mpi,
        )
        .pes(&[4])
        .relaxed()
        .via_mpirun(),
    ]
}

/// The attributes of instance `id` on the PEs `members` (in instance-rank order), or `None` if
/// this PE is not a member. The instance's port comes from the trial's port range.
pub(crate) fn attrs_for(ctx: &Ctx, id: u64, members: &[u32]) -> Option<Attributes> {
    let rank = members.iter().position(|&p| p == ctx.pe)?;
    let (first, count) = ctx.ports();
    let mut a = Attributes::new(
        rank as u32,
        members.len() as u32,
        "tcp://127.0.0.1:0",
        2 << 20,
    );
    a.instance_id = id;
    a.port_range = Some(format!("{first}:{}", first + count - 1));
    a.init_timeout = std::time::Duration::from_secs(30);
    a.op_timeout = std::time::Duration::from_secs(30);
    Some(a)
}

fn all(ctx: &Ctx) -> Vec<u32> {
    (0..ctx.n_pes).collect()
}

/// A ring put/get round on `inst`, with a value unique to the instance.
fn ring_check(inst: &Instance, tag: u64) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let buf = inst.calloc::<u64>(8)?;
    let v: Vec<u64> = (0..8).map(|k| tag << 40 | u64::from(me) << 8 | k).collect();
    buf.as_slice().put(&v, (me + 1) % n)?;
    inst.barrier_all()?;
    let left = (me + n - 1) % n;
    let got = buf.as_slice().to_vec(me)?;
    check_eq!(
        got,
        (0..8)
            .map(|k| tag << 40 | u64::from(left) << 8 | k)
            .collect::<Vec<_>>(),
        "instance {}",
        inst.id()
    );
    inst.barrier_all()?;
    buf.free()?;
    Ok(())
}

fn single_extra(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let one = Instance::init(&attrs_for(ctx, 1, &all(ctx)).expect("member"))?;
    check_eq!(one.id(), 1);
    check_eq!(one.my_pe(), ctx.pe);
    ring_check(&one, 1)?;
    ring_check(&world, 0)?;
    one.finalize()?;
    // Instance 0 is undisturbed by instance 1's life.
    ring_check(&world, 0)?;
    world.finalize()?;
    Ok(())
}

fn malloc_on_subset(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let members = [0, ctx.n_pes - 1];
    if let Some(a) = attrs_for(ctx, 3, &members) {
        let sub = Instance::init(&a)?;
        check_eq!(sub.n_pes(), 2);
        let blocks: Vec<_> = (1..=4)
            .map(|k| sub.malloc::<u8>(k * 1000))
            .collect::<Result<_, _>>()?;
        ring_check(&sub, 3)?;
        for b in blocks {
            b.free()?;
        }
        sub.finalize()?;
    }
    // Non-members never took part; everyone meets again on instance 0.
    world.barrier_all()?;
    world.finalize()?;
    Ok(())
}

fn overlapping(ctx: &Ctx) -> Outcome {
    // CANN's Overlap test: the last PE belongs to instances 2 and 4 at once.
    let n = ctx.n_pes;
    let two = [0, n - 1];
    let four = if n > 2 {
        vec![n - 2, n - 1]
    } else {
        vec![1, 0]
    };
    let i2 = attrs_for(ctx, 2, &two)
        .map(|a| Instance::init(&a))
        .transpose()?;
    let i4 = attrs_for(ctx, 4, &four)
        .map(|a| Instance::init(&a))
        .transpose()?;
    if ctx.pe == n - 1 {
        check!(
            i2.is_some() && i4.is_some(),
            "the last PE must be in both instances"
        );
    }
    for inst in i2.iter().chain(i4.iter()) {
        ring_check(inst, inst.id())?;
    }
    let ids = Instance::live_ids();
    for inst in [i2, i4].into_iter().flatten() {
        check!(ids.contains(&inst.id()));
        inst.finalize()?;
    }
    check!(
        Instance::live_ids().is_empty(),
        "instances remain: {:?}",
        Instance::live_ids()
    );
    Ok(())
}

fn invalid_id(ctx: &Ctx) -> Outcome {
    // CANN's InvalidId test: id 1025 with the range 20000:21023; here id 11 with a range that
    // allows ids up to 10.
    let (first, _) = ctx.ports();
    let mut a = attrs_for(ctx, 11, &all(ctx)).expect("member");
    a.port_range = Some(format!("{first}:{}", first + 10));
    let e = check_code!(cann::init_attr(INIT_WITH_DEFAULT, &a), Code::InvalidValue);
    check!(e.to_string().contains("SHMEM_INSTANCE_PORT_RANGE"), "{e}");
    check_eq!(cann::init_status(), InitStatus::NotInitialized);
    check_eq!(
        cann::instance_ctx_get(),
        0,
        "a refused id changed the active instance"
    );
    let bad = |range: Option<&str>, ip: &str| {
        let mut b = attrs_for(ctx, 2, &all(ctx)).expect("member");
        b.port_range = range.map(str::to_string);
        b.ip_port = ip.to_string();
        Instance::init(&b)
    };
    // The range variable is not set in the trial's environment.
    check_code!(bad(None, "tcp://127.0.0.1:0"), Code::InvalidValue);
    check_code!(
        bad(Some("20000-21000"), "tcp://127.0.0.1:0"),
        Code::InvalidValue
    );
    check_code!(
        bad(Some("21000:20000"), "tcp://127.0.0.1:0"),
        Code::InvalidValue
    );
    check_code!(
        bad(Some("x:20000"), "tcp://127.0.0.1:0"),
        Code::InvalidValue
    );
    check_code!(
        bad(
            Some(&format!("{first}:{}", first + 10)),
            "tcp://127.0.0.1:4000"
        ),
        Code::InvalidValue
    );
    check_code!(bad(Some("1:10"), "tcp://127.0.0.1:0"), Code::InvalidParam); // 1 + 2 = port 3 <= 1024
    check!(Instance::live_ids().is_empty());
    Ok(())
}

fn finalize_active(ctx: &Ctx) -> Outcome {
    let world = cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    check_eq!(cann::instance_ctx_get(), 0);
    let one = cann::init_attr(
        INIT_WITH_DEFAULT,
        &attrs_for(ctx, 1, &all(ctx)).expect("member"),
    )?;
    check_eq!(
        cann::instance_ctx_get(),
        1,
        "init makes the new instance active"
    );
    check_eq!(cann::init_status(), InitStatus::IsInitialized);
    check_eq!(cann::active()?.id(), 1);
    cann::finalize()?; // releases the active instance, 1
    check!(!one.is_initialized());
    check_eq!(
        cann::instance_ctx_get(),
        0,
        "after finalizing the active instance, 0 is active"
    );
    check!(world.is_initialized());
    ring_check(&cann::active()?, 0)?;
    cann::finalize()?; // now instance 0
    check_eq!(cann::init_status(), InitStatus::NotInitialized);
    // finalize without any init succeeds, as in CANN.
    cann::finalize()?;
    Ok(())
}

fn finalize_nonactive(ctx: &Ctx) -> Outcome {
    cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    cann::init_attr(
        INIT_WITH_DEFAULT,
        &attrs_for(ctx, 1, &all(ctx)).expect("member"),
    )?;
    cann::init_attr(
        INIT_WITH_DEFAULT,
        &attrs_for(ctx, 2, &all(ctx)).expect("member"),
    )?;
    cann::instance_ctx_set(1)?;
    // finalize(2) while 1 is active: switches to 2, releases it, and leaves 0 active (not 1).
    cann::finalize_instance(2)?;
    check_eq!(
        cann::instance_ctx_get(),
        0,
        "CANN leaves instance 0 active, not the previous one"
    );
    check!(Instance::by_id(2).is_none());
    // Instance 1 still works once selected again, as CANN's test does.
    cann::instance_ctx_set(1)?;
    ring_check(&cann::active()?, 1)?;
    check_code!(cann::instance_ctx_set(2), Code::InnerError);
    cann::finalize_instance(1)?;
    cann::finalize_instance(0)?;
    check!(Instance::live_ids().is_empty());
    Ok(())
}

fn finalize_nonexistent(ctx: &Ctx) -> Outcome {
    cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    cann::init_attr(
        INIT_WITH_DEFAULT,
        &attrs_for(ctx, 1, &all(ctx)).expect("member"),
    )?;
    check_eq!(cann::instance_ctx_get(), 1);
    check_code!(cann::finalize_instance(77), Code::InnerError);
    check_eq!(
        cann::instance_ctx_get(),
        1,
        "a failed finalize changed the active instance"
    );
    ring_check(&cann::active()?, 1)?;
    cann::finalize_instance(1)?;
    cann::finalize()?;
    Ok(())
}

fn duplicate_create(ctx: &Ctx) -> Outcome {
    cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    let a1 = attrs_for(ctx, 1, &all(ctx)).expect("member");
    let a2 = attrs_for(ctx, 2, &all(ctx)).expect("member");
    let one = cann::init_attr(INIT_WITH_DEFAULT, &a1)?;
    cann::init_attr(INIT_WITH_DEFAULT, &a2)?;
    check_eq!(cann::instance_ctx_get(), 2);
    // Creating 1 again: a WARN, nothing created, INNER_ERROR, and CANN leaves 1 active.
    check_code!(cann::init_attr(INIT_WITH_DEFAULT, &a1), Code::InnerError);
    check_eq!(
        cann::instance_ctx_get(),
        1,
        "CANN switches to the duplicate id"
    );
    check!(one.is_initialized(), "the existing instance was harmed");
    ring_check(&one, 1)?;
    // Repeat init of instance 0 is INNER_ERROR too.
    check_code!(
        cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20)),
        Code::InnerError
    );
    for id in [2, 1, 0] {
        cann::finalize_instance(id)?;
    }
    Ok(())
}

/// Two threads of every PE create instance 1 through the CANN layer at the same moment:
/// exactly one succeeds, the other is a duplicate create (`INNER_ERROR`), and the instance's
/// context survives either way (it can be made active, used and finalised).
fn concurrent_create(ctx: &Ctx) -> Outcome {
    cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    let a1 = attrs_for(ctx, 1, &all(ctx)).expect("member");
    for round in 0..ctx.iters(30, 100) {
        let start = std::sync::Barrier::new(2);
        let results: Vec<shmem::Result<Instance>> = std::thread::scope(|s| {
            let go = || {
                start.wait();
                cann::init_attr(INIT_WITH_DEFAULT, &a1)
            };
            let (x, y) = (s.spawn(go), s.spawn(go));
            [x, y].map(|h| h.join().expect("no panic")).into()
        });
        let won: Vec<&Instance> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        check_eq!(won.len(), 1, "round {round}: one create must win");
        let lost = results.iter().find_map(|r| r.as_ref().err());
        check!(
            lost.is_some_and(|e| e.code() == Code::InnerError),
            "round {round}: the other create must be a duplicate: {lost:?}"
        );
        cann::instance_ctx_set(1)
            .map_err(|e| Failure(format!("round {round}: the winner's context is gone: {e}")))?;
        ring_check(won[0], 1)?;
        cann::finalize_instance(1)?;
        check_eq!(cann::instance_ctx_get(), 0);
    }
    cann::finalize_instance(0)?;
    Ok(())
}

/// Whether this process still maps a segment of instance `id`.
fn maps_instance(id: u64) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .is_ok_and(|m| m.contains(&format!("shmem-sim-i{id}-pe")))
}

/// A team split through the CANN layer's integer handles does not keep instance 0 alive once
/// it is finalised: its segments are unmapped, and a new instance 0 works.
fn finalize_releases_team_handles(ctx: &Ctx) -> Outcome {
    for round in 0..2 {
        cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
        check!(
            maps_instance(0),
            "the segments of instance 0 are not mapped"
        );
        let n = ctx.n_pes as i32;
        let h = cann::team_split_strided(cann::TEAM_WORLD, 0, 1, n)?;
        check!(h != cann::TEAM_INVALID, "round {round}: no team");
        cann::barrier(h)?;
        cann::finalize()?;
        check!(
            !maps_instance(0),
            "round {round}: instance 0 is still mapped after its finalize (a team handle holds it)"
        );
    }
    Ok(())
}

fn isolation(ctx: &Ctx) -> Outcome {
    let a = Instance::init(&attrs_for(ctx, 1, &all(ctx)).expect("member"))?;
    let b = Instance::init(&attrs_for(ctx, 2, &all(ctx)).expect("member"))?;
    // The heaps are distinct memory: same offsets, different bytes.
    check!(a.heap_base() != b.heap_base(), "two instances share a heap");
    let xa = a.calloc::<u64>(64)?;
    let xb = b.calloc::<u64>(64)?;
    check_eq!(
        xa.offset(),
        xb.offset(),
        "the first blocks of both heaps sit at the same offset"
    );
    let right = (ctx.pe + 1) % ctx.n_pes;
    xa.as_slice().put(&[0xaaaa; 64], right)?;
    a.barrier_all()?;
    b.barrier_all()?;
    check!(
        xa.as_slice().to_vec(ctx.pe)?.iter().all(|&v| v == 0xaaaa),
        "instance 1's data did not arrive"
    );
    check!(
        xb.as_slice().to_vec(ctx.pe)?.iter().all(|&v| v == 0),
        "data written through instance 1 is visible through instance 2"
    );
    b.barrier_all()?; // every PE has looked before anyone writes through instance 2
    xb.as_slice().put(&[0xbbbb; 64], right)?;
    b.barrier_all()?;
    check!(
        xa.as_slice().to_vec(ctx.pe)?.iter().all(|&v| v == 0xaaaa),
        "instance 2's put changed instance 1's heap"
    );
    check!(
        ctx.pe != 0 || a.ptr(xb.as_ptr().cast(), 0).is_none(),
        "instance 1 translated an address of instance 2's heap"
    );
    xa.free()?;
    xb.free()?;
    a.finalize()?;
    b.finalize()?;
    Ok(())
}

fn barrier_independent(ctx: &Ctx) -> Outcome {
    // PEs 0 and 1 run 200 barriers on their own instance while the last PE, outside it, sleeps
    // in a barrier of the world instance: no barrier of one instance waits for another.
    let world = ctx.world()?;
    let outsider = ctx.n_pes - 1;
    if let Some(a) = attrs_for(ctx, 5, &[0, 1]) {
        let pair = Instance::init(&a)?;
        let t = Instant::now();
        for _ in 0..200 {
            pair.barrier_all()?;
        }
        check!(
            t.elapsed() < Duration::from_secs(10),
            "the pair's barriers took {:?}",
            t.elapsed()
        );
        pair.finalize()?;
    } else if ctx.pe == outsider {
        std::thread::sleep(Duration::from_millis(50));
    }
    world.barrier_all()?;
    world.finalize()?;
    Ok(())
}

/// This process's resident memory (`VmRSS`), in KiB.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// This process's open descriptors.
pub(crate) fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// The threads of this process, apart from the simulated device's AI cores: a pool that grows
/// to the most blocks that ever ran at once and stays, as a device's cores do.
fn threads() -> usize {
    thread_names().iter().filter(|n| *n != "ai-core").count()
}

/// The names of this process's threads, sorted (for a message).
fn thread_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .map(|n| n.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Named shared-memory objects that this library could have made. (The simulator uses
/// anonymous memfds and never names one; other programs, Open MPI among them, do make named
/// objects while tests run beside this one, so only names of ours are counted.)
fn dev_shm() -> usize {
    std::fs::read_dir("/dev/shm").map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("shmem"))
            .count()
    })
}

fn many_instances(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    world.barrier_all()?;
    let (rss0, fds0) = (rss_kib(), open_fds());
    let mut live = Vec::new();
    for id in 1..=255u64 {
        let inst = Instance::init(&attrs_for(ctx, id, &all(ctx)).expect("member"))
            .map_err(|e| Failure(format!("instance {id}: {e}")))?;
        live.push(inst);
    }
    check_eq!(Instance::live_ids().len(), 256);
    // Every instance works, with its own data, while all are live.
    for inst in &live {
        let v = inst.calloc::<u64>(1)?;
        v.as_slice().p(0, inst.id(), (ctx.pe + 1) % ctx.n_pes)?;
        inst.barrier_all()?;
        check_eq!(v.as_slice().g(0, ctx.pe)?, inst.id());
        v.free()?;
    }
    let (rss1, fds1) = (rss_kib(), open_fds());
    eprintln!(
        "PE {}: 255 live instances: RSS {} -> {} KiB (+{} KiB), open fds {fds0} -> {fds1}, threads {}",
        ctx.pe,
        rss0,
        rss1,
        rss1.saturating_sub(rss0),
        threads()
    );
    // Each heap is 8 MiB of address space; untouched reserve costs nothing.
    check!(
        rss1.saturating_sub(rss0) < 64 * 1024,
        "255 instances cost {} KiB of memory",
        rss1 - rss0
    );
    for inst in live {
        inst.finalize()?;
    }
    world.barrier_all()?;
    check!(
        open_fds() <= fds0 + 2,
        "descriptors leaked: {fds0} before, {} after",
        open_fds()
    );
    world.finalize()?;
    Ok(())
}

fn create_finalize_loop(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let members = all(ctx);
    // Warm up once, with the loop's operations, so lazily created process-wide state (the
    // logger, thread-locals, a device runtime's worker threads) is there.
    let warm = Instance::init(&attrs_for(ctx, 1, &members).expect("member"))?;
    let b = warm.malloc::<u64>(512)?;
    b.as_slice().p(0, 0, (ctx.pe + 1) % ctx.n_pes)?;
    warm.barrier_all()?;
    b.free()?;
    warm.finalize()?;
    world.barrier_all()?;
    let (rss0, fds0, threads0, shm0) = (rss_kib(), open_fds(), threads(), dev_shm());
    for round in 0..ctx.iters(100, 300) {
        let id = 1 + (round % 3) as u64;
        let inst = Instance::init(&attrs_for(ctx, id, &members).expect("member"))
            .map_err(|e| Failure(format!("round {round}: {e}")))?;
        let b = inst.malloc::<u64>(512)?;
        b.as_slice().p(0, round as u64, (ctx.pe + 1) % ctx.n_pes)?;
        inst.barrier_all()?;
        b.free()?;
        inst.finalize()?;
    }
    world.barrier_all()?;
    // Server threads end with their instance; give them a moment to be reaped.
    let settle = Instant::now();
    while threads() > threads0 && settle.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (rss1, fds1, threads1, shm1) = (rss_kib(), open_fds(), threads(), dev_shm());
    eprintln!(
        "PE {}: 100 create/finalize rounds: RSS {rss0} -> {rss1} KiB, fds {fds0} -> {fds1}, threads {threads0} -> {threads1}",
        ctx.pe
    );
    check_eq!(fds1, fds0, "file descriptors grew");
    check_eq!(threads1, threads0, "threads grew: {:?}", thread_names());
    check_eq!(shm1, shm0, "shared-memory objects appeared");
    check!(
        rss1 < rss0 + 16 * 1024,
        "memory grew by {} KiB",
        rss1.saturating_sub(rss0)
    );
    // The ports are free again: the last instances' ports can be bound.
    if ctx.pe == 0 {
        let (first, _) = ctx.ports();
        for id in 1..=3u16 {
            std::net::TcpListener::bind(("127.0.0.1", first + id))
                .map_err(|e| Failure(format!("port of instance {id} still taken: {e}")))?;
        }
    }
    world.barrier_all()?;
    world.finalize()?;
    Ok(())
}

fn threads_own_instances(ctx: &Ctx) -> Outcome {
    // Four threads, each driving its own instance through its whole life, concurrently.
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..=4u64)
            .map(|id| {
                s.spawn(move || -> Result<(), String> {
                    let attrs = attrs_for(ctx, id, &all(ctx)).expect("member");
                    let inst =
                        Instance::init(&attrs).map_err(|e| format!("instance {id}: init: {e}"))?;
                    for round in 0..20u64 {
                        ring_check(&inst, id << 8 | round)
                            .map_err(|e| format!("instance {id}: {e}"))?;
                    }
                    inst.finalize()
                        .map_err(|e| format!("instance {id}: finalize: {e}"))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    for r in results {
        r.map_err(Failure)?;
    }
    check!(Instance::live_ids().is_empty());
    Ok(())
}

/// A thread blocked in a wait on instance 1 is released only after the other thread of its
/// process completes a barrier on instance 2 and puts through instance 2; a lock held across
/// the wait would deadlock the job.
fn cross_instance_dependency(ctx: &Ctx) -> Outcome {
    let one = Instance::init(&attrs_for(ctx, 1, &all(ctx)).expect("member"))?;
    let two = Instance::init(&attrs_for(ctx, 2, &all(ctx)).expect("member"))?;
    let w1 = one.calloc::<u64>(1)?; // PE 1 waits on this word of instance 1
    let w2 = two.calloc::<u64>(1)?; // PE 0 waits on this word of instance 2
    if ctx.pe == 1 {
        std::thread::scope(|s| -> Outcome {
            let waiter = s.spawn(|| {
                crate::cases::poll(Duration::from_secs(20), || {
                    (w1.as_slice().g(0, 1).ok()? == 7).then_some(())
                })
            });
            // The other thread: a barrier on instance 2, then a put through instance 2.
            two.barrier_all()?;
            w2.as_slice().p(0, 1, 0)?;
            check!(
                waiter.join().expect("waiter").is_some(),
                "the wait on instance 1 was never released"
            );
            Ok(())
        })?;
    } else {
        two.barrier_all()?;
        crate::cases::poll(Duration::from_secs(20), || {
            (w2.as_slice().g(0, 0).ok()? == 1).then_some(())
        })
        .ok_or_else(|| Failure("PE 1's put through instance 2 never arrived".into()))?;
        w1.as_slice().p(0, 7, 1)?;
    }
    one.barrier_all()?;
    two.barrier_all()?;
    w1.free()?;
    w2.free()?;
    one.finalize()?;
    two.finalize()?;
    Ok(())
}

fn limits(ctx: &Ctx) -> Outcome {
    let mut a = attrs_for(ctx, 1, &all(ctx)).expect("member");
    a.instance_id = 256;
    check_code!(Instance::init(&a), Code::InvalidValue);
    let mut a = attrs_for(ctx, 1, &all(ctx)).expect("member");
    // 2 PEs of 63 GiB? No: 40 GiB is the per-PE limit; 4 PEs x 40 GiB = 4 x 41 GiB slots = 164 GiB > 128 GiB.
    a.n_pes = 4;
    a.local_mem_size = 40 << 30;
    check_code!(Instance::init(&a), Code::InvalidValue);
    a.local_mem_size = 31 << 30; // 4 x 32 GiB = 128 GiB: allowed by validation (not created here)
    check!(
        a.validate().is_ok(),
        "128 GiB of address space must be allowed"
    );
    // 129 PEs of the smallest heap span 129 GiB under CANN's limits: refused, naming the limit
    // and the setting that lifts it; the OpenSHMEM profile has no such limit. Through the CANN
    // layer the limit holds whatever the profile.
    let mut wide = attrs_for(ctx, 1, &all(ctx)).expect("member");
    (wide.n_pes, wide.local_mem_size) = (129, 2 << 20);
    let e = check_code!(Instance::init(&wide), Code::InvalidValue).to_string();
    check!(
        e.contains("129 GiB")
            && e.contains("at most 128 GiB")
            && e.contains("SHMEM_PROFILE=openshmem"),
        "{e}"
    );
    wide.profile = Some(shmem::ApiProfile::OpenShmem);
    check!(
        wide.validate().is_ok(),
        "the OpenSHMEM profile keeps a device-address limit"
    );
    wide.n_pes = 1024;
    check!(
        wide.validate().is_ok(),
        "1024 PEs refused under the OpenSHMEM profile"
    );
    check_code!(
        cann::init_attr(INIT_WITH_DEFAULT, &wide),
        Code::InvalidValue
    );
    let _ = MULTI_PES;
    Ok(())
}

/// Under Open MPI's `mpirun` without any MPI call: ranks come from `OMPI_COMM_WORLD_*`, instance
/// 0 meets through the job-local rendezvous, and instances 1 to 3 (all PEs, the even PEs, the
/// last two PEs) through their ports of the range, as the multi-instance demo does.
fn under_mpirun(ctx: &Ctx) -> Outcome {
    check!(
        std::env::var_os("OMPI_COMM_WORLD_RANK").is_some(),
        "this case must run under mpirun"
    );
    let world = ctx.world()?;
    check_eq!(world.n_pes(), ctx.n_pes);
    ring_check(&world, 0)?;
    let n = ctx.n_pes;
    let evens: Vec<u32> = (0..n).step_by(2).collect();
    let last_two = [n - 2, n - 1];
    let live: Vec<Instance> = [(1, all(ctx)), (2, evens), (3, last_two.to_vec())]
        .into_iter()
        .filter_map(|(id, m)| attrs_for(ctx, id, &m).map(|a| Instance::init(&a)))
        .collect::<Result<_, _>>()?;
    for inst in &live {
        ring_check(inst, inst.id())?;
    }
    for inst in live {
        inst.finalize()?;
    }
    world.barrier_all()?;
    world.finalize()?;
    Ok(())
}

/// PE 0 makes a unique id bound to `port` on loopback (CANN's automatic interface choice skips
/// loopback; tests pin the address, as the reference tests do with SHMEM_UID_SESSION_ID) and
/// sends its bytes to every PE through instance 0.
fn broadcast_uid(world: &Instance, port: u16) -> Result<shmem::UniqueId, Failure> {
    let cell = world.calloc::<u8>(136)?;
    if world.my_pe() == 0 {
        let uid = shmem::UniqueId::with_session(&format!("127.0.0.1:{port}"))
            .map_err(|e| Failure(format!("unique id: {e}")))?;
        for pe in 0..world.n_pes() {
            cell.as_slice().put(&uid.to_bytes(), pe)?;
        }
    }
    world.barrier_all()?;
    let bytes = cell.as_slice().to_vec(world.my_pe())?;
    cell.free()?;
    shmem::UniqueId::from_bytes(&bytes)
        .map_err(|e| Failure(format!("the broadcast unique id is invalid: {e}")))
}

pub(crate) fn uid_cases() -> Vec<Case> {
    vec![
        Case::new("multi_instance::unique_id_instances", unique_id_instances)
            .pes(TWO_FOUR)
            .full_pes(&[8]),
        Case::new(
            "multi_instance::unique_id_from_the_environment",
            unique_id_env,
        )
        .pes(&[2]),
        Case::new(
            "multi_instance::unique_id_through_the_cann_calls",
            unique_id_cann,
        )
        .pes(TWO_FOUR),
    ]
}

fn unique_id_instances(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let (first, _) = ctx.ports();
    // Two instances, each with its own unique id (and so its own port), alive at once.
    let mut live = Vec::new();
    for id in [1u64, 2] {
        let uid = broadcast_uid(&world, first + 100 + id as u16)?;
        let mut a = Attributes::with_unique_id(ctx.pe, ctx.n_pes, 2 << 20, &uid);
        a.instance_id = id;
        a.init_timeout = std::time::Duration::from_secs(30);
        live.push(Instance::init(&a)?);
    }
    for inst in &live {
        ring_check(inst, inst.id())?;
    }
    for inst in live {
        inst.finalize()?;
    }
    world.finalize()?;
    Ok(())
}

fn unique_id_env(ctx: &Ctx) -> Outcome {
    let world = ctx.world()?;
    let (first, _) = ctx.ports();
    let cell = world.calloc::<u8>(136)?;
    if ctx.pe == 0 {
        // SAFETY: this PE has not started any thread of its own that reads the environment;
        // the library's threads (the bootstrap server) do not read it.
        unsafe { std::env::set_var("SHMEM_UID_SESSION_ID", format!("127.0.0.1:{}", first + 150)) };
        let uid = shmem::UniqueId::new().map_err(|e| Failure(format!("UniqueId::new: {e}")))?;
        for pe in 0..ctx.n_pes {
            cell.as_slice().put(&uid.to_bytes(), pe)?;
        }
    }
    world.barrier_all()?;
    let uid = shmem::UniqueId::from_bytes(&cell.as_slice().to_vec(ctx.pe)?)
        .map_err(|e| Failure(e.to_string()))?;
    let mut a = Attributes::with_unique_id(ctx.pe, ctx.n_pes, 2 << 20, &uid);
    a.instance_id = 3;
    let inst = Instance::init(&a)?;
    ring_check(&inst, 3)?;
    inst.finalize()?;
    cell.free()?;
    world.finalize()?;
    Ok(())
}

fn unique_id_cann(ctx: &Ctx) -> Outcome {
    use shmem_capi::cann::{INIT_WITH_UNIQUEID, set_attr_uniqueid_args};
    let world = cann::init_attr(INIT_WITH_DEFAULT, &ctx.attrs(2 << 20))?;
    let (first, _) = ctx.ports();
    // UNIQUEID init of instance 1.
    let uid = broadcast_uid(&world, first + 160)?;
    let mut a = Attributes::new(0, 0, "", 0);
    a.instance_id = 1;
    set_attr_uniqueid_args(ctx.pe as i32, ctx.n_pes as i32, 2 << 20, &uid, &mut a)?;
    let one = cann::init_attr(INIT_WITH_UNIQUEID, &a)?;
    check_eq!(cann::instance_ctx_get(), 1);
    ring_check(&one, 1)?;
    // DEFAULT init with no usable ip_port but a unique id falls back to the id (CANN's
    // RUN_UNIQUEID_WITH_DEFAULT).
    let uid2 = broadcast_uid(&world, first + 161)?;
    let mut b = Attributes::new(0, 0, "", 0);
    b.instance_id = 2;
    set_attr_uniqueid_args(ctx.pe as i32, ctx.n_pes as i32, 2 << 20, &uid2, &mut b)?;
    let two = cann::init_attr(INIT_WITH_DEFAULT, &b)?;
    ring_check(&two, 2)?;
    // The argument checks of aclshmemx_set_attr_uniqueid_args.
    let mut c = Attributes::new(0, 0, "", 0);
    check_code!(
        set_attr_uniqueid_args(0, 16385, 2 << 20, &uid, &mut c),
        Code::InvalidValue
    );
    check_code!(
        set_attr_uniqueid_args(16384, 2, 2 << 20, &uid, &mut c),
        Code::InvalidValue
    );
    check_code!(
        set_attr_uniqueid_args(0, 2, (40 << 30) + 1, &uid, &mut c),
        Code::InvalidValue
    );
    // UNIQUEID with a non-empty ip_port still goes through CANN's port selection: the
    // template port must be 0 and SHMEM_INSTANCE_PORT_RANGE must allow the id.
    let uid3 = broadcast_uid(&world, first + 162)?;
    let mut d = Attributes::new(0, 0, "tcp://127.0.0.1:5555", 0);
    d.instance_id = 3;
    d.port_range = Some(format!("{}:{}", first, first + 7));
    set_attr_uniqueid_args(ctx.pe as i32, ctx.n_pes as i32, 2 << 20, &uid3, &mut d)?;
    let e = check_code!(cann::init_attr(INIT_WITH_UNIQUEID, &d), Code::InvalidValue);
    check!(e.to_string().contains("must be 0"), "{e}");
    d.port_range = Some(format!("{}:{}", first, first + 2));
    d.ip_port = "tcp://127.0.0.1:0".into();
    let e = check_code!(cann::init_attr(INIT_WITH_UNIQUEID, &d), Code::InvalidValue);
    check!(e.to_string().contains("instance id 3 is above 2"), "{e}");
    check_eq!(
        cann::instance_ctx_get(),
        2,
        "a refused port selection changes nothing"
    );
    d.port_range = Some(format!("{}:{}", first, first + 7));
    let three = cann::init_attr(INIT_WITH_UNIQUEID, &d)?;
    ring_check(&three, 3)?;
    cann::finalize_instance(3)?;
    // UNIQUEID flags without an id are refused.
    check_code!(
        cann::init_attr(
            INIT_WITH_UNIQUEID,
            &attrs_for(ctx, 3, &all(ctx)).expect("member")
        ),
        Code::InvalidParam
    );
    for id in [2, 1, 0] {
        cann::finalize_instance(id)?;
    }
    Ok(())
}

/// Under `mpirun` in MPI mode: the program initialises MPI, instance 0 bootstraps over
/// `MPI_COMM_WORLD` (CANN's MPI flag, through `shmem_capi::cann`), instance 1 over the world again
/// (each instance duplicates its communicator) and instance 2 over a split communicator of the
/// even ranks.
fn under_mpirun_mpi(ctx: &Ctx) -> Outcome {
    use shmem::InitMode;
    use shmem::mpi::Mpi;
    let mpi = Mpi::get().map_err(|e| Failure(format!("loading libmpi: {e}")))?;
    mpi.init().map_err(|e| Failure(format!("MPI_Init: {e}")))?;
    let world_comm = mpi.world();
    check_eq!(
        world_comm.rank().map_err(|e| Failure(e.to_string()))?,
        ctx.pe as i32
    );
    let evens = world_comm
        .split(ctx.pe.is_multiple_of(2).then_some(0), ctx.pe as i32)
        .map_err(|e| Failure(e.to_string()))?;
    let base = |id: u64, my_pe: u32, n: u32| {
        let mut a = Attributes::new(my_pe, n, "", 2 << 20);
        a.instance_id = id;
        a
    };
    let world = cann::init_attr(shmem_capi::cann::INIT_WITH_MPI, &base(0, ctx.pe, ctx.n_pes))?;
    ring_check(&world, 0)?;
    let mut a1 = base(1, ctx.pe, ctx.n_pes);
    a1.mode = InitMode::Mpi(Some(world_comm));
    let one = Instance::init(&a1)?;
    let two = match evens {
        Some(c) => {
            let mut a2 = base(2, ctx.pe / 2, ctx.n_pes.div_ceil(2));
            // SAFETY: `c` is freed below, after instance 2 (the only user of the handle, and
            // only during its init) is finalized.
            a2.mode = InitMode::Mpi(Some(unsafe { shmem::mpi::Comm::from_raw(c.as_raw()) }));
            Some((Instance::init(&a2)?, c))
        }
        None => None,
    };
    ring_check(&one, 1)?;
    if let Some((two, _)) = &two {
        ring_check(two, 2)?;
    }
    if let Some((two, c)) = two {
        two.finalize()?;
        c.free().map_err(|e| Failure(e.to_string()))?;
    }
    one.finalize()?;
    cann::finalize()?;
    mpi.finalize()
        .map_err(|e| Failure(format!("MPI_Finalize: {e}")))?;
    Ok(())
}
