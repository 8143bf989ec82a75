//! `init::` — attributes, the instance lifecycle and the bootstrap.

use std::time::Duration;

use shmem::{Attributes, Code, Instance, engine};

use crate::cases::{capture_log, logged};
use crate::{Case, Ctx, Expect, Failure, MULTI_PES, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("init::world_basics", world_basics),
        Case::new("init::attribute_codes", attribute_codes).pes(&[1, 2]),
        Case::new("init::repeat_init_is_inner_error", repeat_init),
        Case::new("init::duplicate_id_is_typed_and_silent", duplicate_silent).pes(&[1, 2]),
        Case::new(
            "init::descriptor_limit_raised_only_as_needed",
            descriptor_limit,
        )
        .pes(&[1, 2]),
        Case::new("init::init_finalize_loop", init_finalize_loop)
            .pes(&[1, 2, 4])
            .full_pes(&[8]),
        Case::new("init::use_after_finalize_fails", use_after_finalize).pes(&[1, 2]),
        Case::new("init::missing_pe_is_named", missing_pe_is_named)
            .pes(&[2, 4])
            .full_pes(&[3, 8]),
        Case::new("init::foreign_secret_is_refused", foreign_secret).pes(&[2]),
        Case::new(
            "init::unreachable_address_is_inner_error",
            unreachable_address,
        )
        .pes(&[1]),
        Case::new("init::hostname_addresses", |c| {
            addresses(c, &["tcp://localhost:{}", "tcp://127.0.0.1:{}"])
        })
        .pes(&[1, 2])
        .full_pes(&[4]),
        Case::new("init::ipv6_addresses", |c| {
            addresses(c, &["tcp6://[::1]:{}"])
        })
        .pes(&[1, 2])
        .needs_ipv6(),
        Case::new("init::peer_death_is_detected", peer_death)
            .pes(MULTI_PES)
            .expect(Expect::PeKilled { pe: 1 }),
        Case::new("init::peer_death_ends_a_wait_until", |c| {
            dies_during(c, Blocked::WaitUntil)
        })
        .pes(&[2, 4])
        .expect(Expect::PeKilled { pe: 1 }),
        Case::new("init::peer_death_ends_a_collective", |c| {
            dies_during(c, Blocked::Collective)
        })
        .pes(&[2, 4])
        .expect(Expect::PeKilled { pe: 1 }),
        Case::new("init::peer_death_ends_a_lock_wait", |c| {
            dies_during(c, Blocked::Lock)
        })
        .pes(&[2, 4])
        .expect(Expect::PeKilled { pe: 1 }),
    ]
}

fn world_basics(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    check_eq!(inst.my_pe(), ctx.pe);
    check_eq!(inst.n_pes(), ctx.n_pes);
    check_eq!(inst.id(), 0);
    check!(inst.is_initialized());
    check_eq!(
        inst.heap_size() as u64,
        crate::ctx::CASE_HEAP + shmem::EXTRA_SIZE,
        "heap = local_mem_size + 6 MiB"
    );
    check!(!inst.heap_base().is_null());
    check_eq!(shmem::NAME, "ACLSHMEM v1.1.1");
    check_eq!(shmem::VERSION, (1, 1));
    check_eq!(inst.backend_name(), ctx.backend);
    inst.barrier_all()?;
    inst.finalize()?;
    check!(!inst.is_initialized());
    // A second finalize of the same instance is harmless.
    inst.finalize()?;
    Ok(())
}

fn attribute_codes(ctx: &Ctx) -> Outcome {
    // Validation happens before any communication, so every PE checks on its own.
    let ok = ctx.attrs(2 << 20);
    let cases: Vec<(&str, Attributes, Code)> = vec![
        (
            "n_pes = 0",
            Attributes {
                n_pes: 0,
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "n_pes > 16384",
            Attributes {
                n_pes: 16385,
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "my_pe >= n_pes",
            Attributes {
                my_pe: ok.n_pes,
                ..ok.clone()
            },
            Code::InvalidParam,
        ),
        (
            "local_mem_size = 0",
            Attributes {
                local_mem_size: 0,
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "local_mem_size > 40 GiB",
            Attributes {
                local_mem_size: (40 << 30) + (2 << 20),
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "local_mem_size not 2 MiB",
            Attributes {
                local_mem_size: 3 << 20,
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "instance_id > 255",
            Attributes {
                instance_id: 256,
                ..ok.clone()
            },
            Code::InvalidValue,
        ),
        (
            "bad ip_port",
            Attributes {
                ip_port: "udp://1.2.3.4:5000".into(),
                ..ok.clone()
            },
            Code::InvalidParam,
        ),
        (
            "port <= 1024",
            Attributes {
                ip_port: "tcp://127.0.0.1:1024".into(),
                ..ok.clone()
            },
            Code::InvalidParam,
        ),
    ];
    for (what, attrs, code) in cases {
        match Instance::init(&attrs) {
            Ok(_) => return Err(Failure(format!("{what}: init succeeded"))),
            Err(e) => check_eq!(e.code(), code, "{what}: {e}"),
        }
    }
    let mut timeouts = [ok.clone(), ok.clone(), ok.clone()];
    timeouts[0].init_timeout = std::time::Duration::from_secs(0);
    timeouts[1].op_timeout = std::time::Duration::from_secs(0);
    timeouts[2].engines = 0x10 | engine::MTE;
    for a in &timeouts {
        check_code!(Instance::init(a), Code::InvalidValue);
    }
    // Nothing was created: instance 0 can still be initialised normally.
    let inst = Instance::init(&ok)?;
    inst.finalize()?;
    Ok(())
}

fn repeat_init(ctx: &Ctx) -> Outcome {
    let attrs = ctx.attrs(2 << 20);
    let inst = Instance::init(&attrs)?;
    // A second init of a live instance fails locally, before any communication.
    let e = check_code!(Instance::init(&attrs), Code::InnerError);
    check!(e.to_string().contains("already initialized"), "{e}");
    // The first instance is unharmed.
    inst.barrier_all()?;
    inst.finalize()?;
    // After finalize the id can be initialised again.
    let again = Instance::init(&attrs)?;
    again.barrier_all()?;
    again.finalize()?;
    Ok(())
}

/// A duplicate id through the Rust API is a typed error and logs nothing (the program decides
/// what to report); through the CANN layer it logs CANN's warning, as CANN does.
fn duplicate_silent(ctx: &Ctx) -> Outcome {
    capture_log()?;
    let attrs = ctx.attrs(2 << 20);
    let inst = Instance::init(&attrs)?;
    let _ = logged();
    let e = Instance::init(&attrs).err();
    check!(
        matches!(e, Some(shmem::Error::AlreadyInitialized { instance_id: 0 })),
        "{e:?}"
    );
    let out = logged();
    check!(
        !out.contains("WARN") && !out.contains("ERROR"),
        "the Rust API logged a duplicate init: {out}"
    );
    // The CANN layer warns as CANN does.
    let members: Vec<u32> = (0..ctx.n_pes).collect();
    let a1 = crate::cases::multi_instance::attrs_for(ctx, 1, &members).expect("member");
    let one = shmem_capi::cann::init_attr(shmem_capi::cann::INIT_WITH_DEFAULT, &a1)?;
    let _ = logged();
    check_code!(
        shmem_capi::cann::init_attr(shmem_capi::cann::INIT_WITH_DEFAULT, &a1),
        Code::InnerError
    );
    let out = logged();
    check!(
        out.contains("WARN")
            && out.contains("Instance 1 already exists! Please don't repeat create!"),
        "the CANN layer did not warn: {out}"
    );
    shmem_capi::cann::finalize_instance(1)?;
    drop(one);
    inst.finalize()?;
    Ok(())
}

/// The soft descriptor limit, and the hard one.
fn nofile() -> (Option<u64>, Option<u64>) {
    let l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    (l.current, l.maximum)
}

/// Init raises the soft descriptor limit only when the instance needs more than is left, and
/// then only as far as it needs, not to the hard limit.
fn descriptor_limit(ctx: &Ctx) -> Outcome {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let (_, hard) = nofile();
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let set = |soft: u64| {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(soft),
                maximum: hard,
            },
        )
        .map_err(|e| Failure(format!("setrlimit: {e}")))
    };
    // Plenty left: the limit stays.
    let roomy = open + 512;
    check!(
        hard.is_none_or(|h| h > roomy + 64),
        "the hard limit {hard:?} is too low for the case"
    );
    set(roomy)?;
    let inst = ctx.world()?;
    check_eq!(
        nofile().0,
        Some(roomy),
        "init changed a soft limit that had room"
    );
    inst.finalize()?;
    // Almost nothing left: raised, but only as far as the instance needs.
    set(open + 4)?;
    let inst = ctx.world()?;
    let (soft, _) = nofile();
    check!(
        soft.is_some_and(|s| s > open + 4 && s < open + 512) && soft != hard,
        "the soft limit became {soft:?} (hard {hard:?}, {open} open)"
    );
    inst.barrier_all()?;
    inst.finalize()?;
    Ok(())
}

fn init_finalize_loop(ctx: &Ctx) -> Outcome {
    let attrs = ctx.attrs(2 << 20);
    for round in 0..ctx.iters(10, 50) {
        let inst = Instance::init(&attrs).map_err(|e| Failure(format!("round {round}: {e}")))?;
        let buf = inst.malloc::<u64>(8)?;
        buf.as_slice()
            .p(0, round as u64, (ctx.pe + 1) % ctx.n_pes)?;
        inst.barrier_all()?;
        check_eq!(buf.as_slice().g(0, ctx.pe)?, round as u64);
        buf.free()?;
        inst.finalize()?;
    }
    Ok(())
}

fn use_after_finalize(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let buf = inst.malloc::<u32>(4)?;
    inst.finalize()?;
    check_code!(buf.as_slice().put(&[1, 2, 3, 4], 0), Code::NotInited);
    check_code!(inst.barrier_all(), Code::NotInited);
    check_code!(inst.malloc::<u8>(16), Code::NotInited);
    check!(inst.ptr(buf.as_ptr().cast(), 0).is_none());
    Ok(())
}

fn missing_pe_is_named(ctx: &Ctx) -> Outcome {
    let missing = ctx.n_pes - 1;
    if ctx.pe == missing {
        // This PE never joins.
        std::thread::sleep(Duration::from_millis(100));
        return Ok(());
    }
    let mut attrs = ctx.attrs(2 << 20);
    attrs.init_timeout = std::time::Duration::from_secs(2);
    let start = std::time::Instant::now();
    let e = check_code!(Instance::init(&attrs), Code::InnerError);
    check!(
        start.elapsed() < Duration::from_secs(15),
        "init took {:?} to give up",
        start.elapsed()
    );
    check!(
        e.to_string().contains(&missing.to_string()),
        "the error does not name PE {missing}: {e}"
    );
    Ok(())
}

fn foreign_secret(ctx: &Ctx) -> Outcome {
    let mut attrs = ctx.attrs(2 << 20);
    attrs.init_timeout = std::time::Duration::from_secs(2);
    if ctx.pe == 1 {
        attrs.secret = Some(shmem::Secret([0x5a; 16]));
        let e = check_code!(Instance::init(&attrs), Code::InnerError);
        check!(
            e.to_string().contains("another job"),
            "the refusal does not say why: {e}"
        );
    } else {
        let e = check_code!(Instance::init(&attrs), Code::InnerError);
        check!(
            e.to_string().contains('1'),
            "PE 0's error does not name PE 1: {e}"
        );
    }
    Ok(())
}

fn unreachable_address(ctx: &Ctx) -> Outcome {
    // An address of no interface of this host: PE 0 cannot serve on it (CANN: INNER_ERROR).
    let mut attrs = Attributes::new(0, 1, "tcp://192.0.2.1:20001", 2 << 20);
    attrs.init_timeout = std::time::Duration::from_secs(1);
    let _ = ctx;
    check_code!(Instance::init(&attrs), Code::InnerError);
    Ok(())
}

/// Init with each address template (`{}` is a port of the trial's range), one after the other.
fn addresses(ctx: &Ctx, templates: &[&str]) -> Outcome {
    let (first, _) = ctx.ports();
    for (i, t) in templates.iter().enumerate() {
        let url = t.replace("{}", &(first + 1 + i as u16).to_string());
        let mut attrs = Attributes::new(ctx.pe, ctx.n_pes, &url, 2 << 20);
        attrs.init_timeout = std::time::Duration::from_secs(20);
        let inst = Instance::init(&attrs).map_err(|e| Failure(format!("{url}: {e}")))?;
        inst.barrier_all()?;
        inst.finalize()?;
    }
    Ok(())
}

/// Where the survivors are blocked when PE 1 dies.
#[derive(Clone, Copy, Debug)]
enum Blocked {
    /// Waiting for a word that PE 1 was to set.
    WaitUntil,
    /// In a reduction over the world team, which PE 1 never joins.
    Collective,
    /// Queued for a lock that PE 1 holds.
    Lock,
}

/// PE 1 dies (SIGKILL) while the others are blocked in `how`: each survivor's call fails with
/// `PeerLost` naming PE 1 (the bootstrap notices the death), with no timeout set.
fn dies_during(ctx: &Ctx, how: Blocked) -> Outcome {
    let inst = ctx.world()?;
    let word = inst.calloc::<u64>(1)?;
    let lock = inst.calloc::<i64>(1)?;
    let sum = inst.calloc::<u64>(1)?;
    inst.barrier_all()?;
    if ctx.pe == 1 {
        if let Blocked::Lock = how {
            lock.elem(0).set_lock()?;
        }
        // Give the others time to block (not needed for correctness: blocking after the death
        // fails the same way).
        std::thread::sleep(Duration::from_millis(300));
        crate::cases::kill_self();
    }
    let r = match how {
        Blocked::WaitUntil => word.elem(0).wait_until(shmem::Cmp::Eq, 1).map(drop),
        Blocked::Collective => inst.team_world().sum_reduce(sum.as_slice(), sum.as_slice()),
        Blocked::Lock => {
            // Wait until PE 1 holds it, then queue behind it.
            let deadline = std::time::Instant::now() + ctx.patience();
            while lock
                .elem(0)
                .atomic_fetch(0)
                .map_or(true, |t| t & 0xffff_ffff == 0)
            {
                check!(
                    std::time::Instant::now() < deadline,
                    "PE 1 never took the lock"
                );
                std::thread::yield_now();
            }
            lock.elem(0).set_lock()
        }
    };
    match r {
        Ok(()) => Err(Failure(format!("{how:?} completed although PE 1 is dead"))),
        Err(shmem::Error::PeerLost { pe, detail }) => {
            check!(
                pe == 1,
                "{how:?}: the error names PE {pe} instead of PE 1 ({detail})"
            );
            Ok(())
        }
        Err(e) => Err(Failure(format!(
            "{how:?}: expected PeerLost naming PE 1, got {e}"
        ))),
    }
}

fn peer_death(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    inst.barrier_all()?;
    if ctx.pe == 1 {
        // Die without a word, as a crashing PE does.
        crate::cases::kill_self();
    }
    let start = std::time::Instant::now();
    match inst.barrier_all() {
        Ok(()) => Err(Failure("a barrier completed although PE 1 is dead".into())),
        Err(shmem::Error::PeerLost { pe, detail }) => {
            check!(
                pe == 1,
                "the error names PE {pe} instead of PE 1 ({detail})"
            );
            check!(
                start.elapsed() < Duration::from_secs(10),
                "detection took {:?}",
                start.elapsed()
            );
            Ok(())
        }
        Err(e) => Err(Failure(format!("expected PeerLost naming PE 1, got {e}"))),
    }
}
