//! `p2p::` — point-to-point synchronisation: `wait_until`, `wait`, `test` and the
//! `_all`/`_any`/`_some` and `_vector` forms over status masks, released by puts, atomics and
//! signals, and their errors (reference: OpenSHMEM §1.2, CANN §1.9).
//!
//! Every case runs on instance 0 and again on instance 1, whose PE numbering is the reverse of
//! the job's (its PE 0 is the job's last PE), so a body that confused the two would fail.

use std::fmt::Debug;

use bytemuck::Pod;
use shmem::{Cmp, Code, Instance, SignalOp};
use shmem_backend::Scalar;

use crate::cases::multi_instance::attrs_for;
use crate::{Case, Ctx, Failure, Outcome, check, check_code, check_eq};

/// Makes the two cases of one body, `<name>` on instance 0 and `<name>_on_instance1`; the
/// tokens after the body are applied to both (`.env(…)`, `.pes(…)`).
macro_rules! both {
    ($name:literal, $body:path $(, $($modify:tt)+)?) => {{
        fn on0(ctx: &$crate::Ctx) -> $crate::Outcome {
            $crate::cases::p2p::run_on(ctx, 0, $body)
        }
        fn on1(ctx: &$crate::Ctx) -> $crate::Outcome {
            $crate::cases::p2p::run_on(ctx, 1, $body)
        }
        [
            $crate::Case::new($name, on0) $($($modify)+)?,
            $crate::Case::new(concat!($name, "_on_instance1"), on1) $($($modify)+)?,
        ]
    }};
}
pub(crate) use both;

pub(crate) fn cases() -> Vec<Case> {
    [
        both!("p2p::ring_every_type_and_cmp", ring_every_type),
        both!("p2p::all_any_some_with_status", sets_with_status),
        both!("p2p::any_does_not_starve", any_rotates),
        both!("p2p::wrong_lengths_are_invalid_param", wrong_lengths),
        both!(
            "p2p::released_by_atomics_and_signals",
            released_by_amo_and_signal
        ),
        both!("p2p::timeout_names_what_it_waited_for", times_out),
        both!(
            "p2p::cann_profile_keeps_every_wait",
            cann_profile,
            .env(&[("SHMEM_PROFILE", "cann")])
        ),
    ]
    .concat()
}

/// Creates instance `id` (0: the trial's world; otherwise over every PE in reverse order),
/// runs `body` on it and finalises it.
pub(crate) fn run_on(ctx: &Ctx, id: u64, body: fn(&Ctx, &Instance) -> Outcome) -> Outcome {
    let inst = if id == 0 {
        ctx.world()?
    } else {
        let members: Vec<u32> = (0..ctx.n_pes).rev().collect();
        let attrs = attrs_for(ctx, id, &members)
            .ok_or_else(|| Failure(format!("PE {} is not a member", ctx.pe)))?;
        Instance::init(&attrs)?
    };
    body(ctx, &inst)?;
    inst.finalize()?;
    Ok(())
}

/// Three values of a type, `LO < MID < HI` in the type's own order, chosen so that comparing
/// them in another order (signed as unsigned, floats as integers) gets some comparison wrong:
/// signed types have negative `LO` and `MID`, unsigned ones a `HI` with the top bit set, floats
/// negative `LO` and `MID`.
trait Values: Scalar + Pod + Debug + PartialEq {
    const LO: Self;
    const MID: Self;
    const HI: Self;
}

macro_rules! values {
    ($($t:ty: $lo:expr, $mid:expr, $hi:expr;)*) => {$(
        impl Values for $t {
            const LO: Self = $lo;
            const MID: Self = $mid;
            const HI: Self = $hi;
        }
    )*};
}

values! {
    i8: -100, -3, 5;
    i16: -30000, -3, 5;
    i32: -2_000_000_000, -3, 5;
    i64: i64::MIN + 1, -3, 5;
    isize: isize::MIN + 1, -3, 5;
    u8: 3, 100, u8::MAX - 1;
    u16: 3, 100, u16::MAX - 1;
    u32: 3, 100, u32::MAX - 1;
    u64: 3, 100, u64::MAX - 1;
    usize: 3, 100, usize::MAX - 1;
    f32: -2.5, -0.5, 0.75;
    f64: -2.5e300, -0.5, 0.75;
}

/// For each comparison: the word's value before, the comparison value, and the value put,
/// such that the condition is false before and true after.
fn plan<T: Values>(cmp: Cmp) -> (T, T, T) {
    let (lo, mid, hi) = (T::LO, T::MID, T::HI);
    match cmp {
        Cmp::Eq => (lo, mid, mid),
        Cmp::Ne => (mid, mid, hi),
        Cmp::Gt => (mid, mid, hi),
        Cmp::Ge => (lo, mid, mid),
        Cmp::Lt => (mid, mid, lo),
        Cmp::Le => (hi, mid, mid),
    }
}

/// A token ring per comparison: PE 0 puts into PE 1 and then waits for PE n-1; every other PE
/// waits for its left neighbour's put before it puts into its right one. Every wait is
/// therefore released by the put, never satisfied before it.
fn ring_one_type<T: Values>(inst: &Instance, what: &str) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let right = (me + 1) % n;
    let words = inst.calloc::<T>(Cmp::ALL.len())?;
    let w = words.as_slice();
    for (k, &cmp) in Cmp::ALL.iter().enumerate() {
        let (before, _, _) = plan::<T>(cmp);
        w.p(k, before, me)?;
    }
    for (k, &cmp) in Cmp::ALL.iter().enumerate() {
        let (_, value, _) = plan::<T>(cmp);
        check!(
            !words.elem(k).test(cmp, value)?,
            "{what} {cmp:?}: test before the put"
        );
    }
    inst.barrier_all()?;
    for (k, &cmp) in Cmp::ALL.iter().enumerate() {
        let (_, value, after) = plan::<T>(cmp);
        let e = words.elem(k);
        if me == 0 {
            w.p(k, after, right)?;
        }
        let got = e.wait_until(cmp, value)?;
        check_eq!(
            got,
            after,
            "{what} {cmp:?}: the value that released the wait"
        );
        if me != 0 {
            w.p(k, after, right)?;
        }
        check!(e.test(cmp, value)?, "{what} {cmp:?}: test after the put");
    }
    inst.barrier_all()?;
    // `wait` is `wait_until(Ne)`: released by a value that differs.
    let e = words.elem(0);
    let (_, _, eq_after) = plan::<T>(Cmp::Eq);
    if me == 0 {
        w.p(0, T::HI, right)?;
    }
    check_eq!(e.wait(eq_after)?, T::HI, "{what}: wait");
    if me != 0 {
        w.p(0, T::HI, right)?;
    }
    inst.barrier_all()?;
    words.free()?;
    Ok(())
}

fn ring_every_type(_ctx: &Ctx, inst: &Instance) -> Outcome {
    ring_one_type::<i8>(inst, "i8")?;
    ring_one_type::<i16>(inst, "i16")?;
    ring_one_type::<i32>(inst, "i32")?;
    ring_one_type::<i64>(inst, "i64")?;
    ring_one_type::<isize>(inst, "isize")?;
    ring_one_type::<u8>(inst, "u8")?;
    ring_one_type::<u16>(inst, "u16")?;
    ring_one_type::<u32>(inst, "u32")?;
    ring_one_type::<u64>(inst, "u64")?;
    ring_one_type::<usize>(inst, "usize")?;
    ring_one_type::<f32>(inst, "f32")?;
    ring_one_type::<f64>(inst, "f64")?;
    Ok(())
}

/// Elements 1, 4 and 6 are excluded.
const STATUS: [i32; 8] = [0, 1, 0, 0, 1, 0, 1, 0];
const INCLUDED: [usize; 5] = [0, 2, 3, 5, 7];

/// The sets, driven step by step by the left neighbour: in each step it updates this PE's
/// `ivars`, this PE checks, then acknowledges into its left neighbour's `ack` so that the next
/// step's updates cannot overtake its checks.
fn sets_with_status(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let ivars = inst.calloc::<i32>(8)?;
    let ack = inst.calloc::<u64>(1)?;
    let iv = ivars.as_slice();
    let s = Some(&STATUS[..]);
    let none = Some(&[1; 8][..]);
    let mut idx = [usize::MAX; 8];

    // Before anything arrives.
    check!(iv.test_all(s, Cmp::Eq, 0)?);
    check!(!iv.test_all(s, Cmp::Ne, 0)?);
    check!(iv.test_all(None, Cmp::Eq, 0)?);
    check_eq!(iv.test_any(s, Cmp::Gt, 0)?, None);
    check_eq!(iv.test_some(&mut idx, s, Cmp::Gt, 0)?, 0);
    // Every element excluded: nothing is waited for.
    check_eq!(iv.wait_until_any(none, Cmp::Eq, 42)?, None);
    check_eq!(iv.wait_until_some(&mut idx, none, Cmp::Eq, 42)?, 0);
    iv.wait_until_all(none, Cmp::Eq, 42)?;
    check!(iv.test_all(none, Cmp::Eq, 42)?);
    check_eq!(iv.test_any(none, Cmp::Eq, 0)?, None);
    check_eq!(iv.wait_until_any_vector(none, Cmp::Eq, &[42; 8])?, None);
    check_eq!(
        iv.wait_until_some_vector(&mut idx, none, Cmp::Eq, &[42; 8])?,
        0
    );
    iv.wait_until_all_vector(none, Cmp::Eq, &[42; 8])?;
    // An empty set: test_all is true (OpenSHMEM 1.6), any finds nothing.
    let empty = ivars.slice(0..0);
    check!(empty.test_all(None, Cmp::Eq, 42)?);
    check_eq!(empty.test_any(None, Cmp::Eq, 0)?, None);
    check_eq!(empty.wait_until_some(&mut [], None, Cmp::Eq, 42)?, 0);
    empty.wait_until_all(None, Cmp::Eq, 42)?;
    inst.barrier_all()?;

    let mut step = 0u64;
    let mut next_step = |writes: &[(usize, i32)]| -> Outcome {
        step += 1;
        if step > 1 {
            // The right neighbour has checked the previous step.
            ack.elem(0).wait_until(Cmp::Ge, step - 1)?;
        }
        // In order: each write is fenced ahead of the next (OpenSHMEM orders puts to a PE
        // only by fence or quiet, and strict mode delivers unfenced ones in any order).
        for &(i, v) in writes {
            iv.p(i, v, right)?;
            inst.fence()?;
        }
        Ok(())
    };
    let acknowledge = |step: u64| ack.as_slice().p(0, step, left);

    // any: the excluded element 4 gets the value first; only 5 may be returned.
    next_step(&[(4, 7), (5, 7)])?;
    check_eq!(iv.wait_until_any(s, Cmp::Eq, 7)?, Some(5));
    check_eq!(iv.test_any(s, Cmp::Eq, 7)?, Some(5));
    check_eq!(iv.test_any(None, Cmp::Eq, 7).map(|i| i.is_some())?, true);
    acknowledge(1)?;

    // some: excluded 1, then 0 and 7 go below zero.
    next_step(&[(1, -3), (0, -3), (7, -3)])?;
    let k = iv.wait_until_some(&mut idx, s, Cmp::Lt, 0)?;
    check!((1..=2).contains(&k), "wait_until_some returned {k}");
    check!(
        idx[..k].iter().all(|i| [0, 7].contains(i)) && idx[..k].is_sorted(),
        "wait_until_some: {:?}",
        &idx[..k]
    );
    // Excluded entries of cmp_values are never compared.
    iv.wait_until_all_vector(s, Cmp::Eq, &[-3, 99, 0, 0, 99, 7, 99, -3])?;
    check_eq!(iv.test_some(&mut idx, s, Cmp::Lt, 0)?, 2);
    check_eq!(idx[..2], [0, 7]);
    check_eq!(iv.test_some(&mut idx, None, Cmp::Lt, 0)?, 3);
    check_eq!(idx[..3], [0, 1, 7]);
    acknowledge(2)?;

    // all: the included elements reach 50 one by one; the excluded ones never do.
    next_step(&[(7, 50), (5, 50), (3, 50), (2, 50), (0, 50)])?;
    iv.wait_until_all(s, Cmp::Ge, 50)?;
    check!(iv.test_all(s, Cmp::Ge, 50)?);
    check!(!iv.test_all(None, Cmp::Ge, 50)?);
    for i in INCLUDED {
        check_eq!(iv.g(i, me)?, 50, "element {i}");
    }
    // The vector forms: excluded entries compare with i32::MIN, which every excluded element
    // would satisfy if the mask were ignored.
    let cv = [50, i32::MIN, 59, 50, i32::MIN, 50, i32::MIN, 50];
    check_eq!(iv.test_any_vector(s, Cmp::Gt, &cv)?, None);
    check!(!iv.test_all_vector(s, Cmp::Gt, &cv)?);
    acknowledge(3)?;

    next_step(&[(2, 60)])?;
    check_eq!(iv.wait_until_any_vector(s, Cmp::Gt, &cv)?, Some(2));
    check_eq!(iv.wait_until_some_vector(&mut idx, s, Cmp::Gt, &cv)?, 1);
    check_eq!(idx[0], 2);
    check_eq!(iv.test_some_vector(&mut idx, s, Cmp::Gt, &cv)?, 1);
    check!(!iv.test_all_vector(s, Cmp::Gt, &cv)?);
    acknowledge(4)?;

    next_step(&[(0, 61), (3, 61), (5, 61), (7, 61)])?;
    iv.wait_until_all_vector(s, Cmp::Gt, &cv)?;
    check!(iv.test_all_vector(s, Cmp::Gt, &cv)?);
    check_eq!(iv.test_some_vector(&mut idx, s, Cmp::Gt, &cv)?, 5);
    check_eq!(idx[..5], INCLUDED);
    check_eq!(iv.test_some_vector(&mut idx, None, Cmp::Gt, &cv)?, 8);
    acknowledge(5)?;

    inst.barrier_all()?;
    ack.free()?;
    ivars.free()?;
    Ok(())
}

/// With every element satisfied, repeated `any` calls return every index in turn, skipping
/// the excluded ones; a fresh view starts at index 0.
fn any_rotates(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let me = inst.my_pe();
    let ivars = inst.malloc::<u32>(8)?;
    let iv = ivars.as_slice();
    iv.put(&[9; 8], me)?;
    let got: Vec<_> = (0..8)
        .map(|_| iv.test_any(None, Cmp::Eq, 9))
        .collect::<Result<_, _>>()?;
    check_eq!(
        got,
        (0..8).map(Some).collect::<Vec<_>>(),
        "test_any in turn"
    );
    let got: Vec<_> = (0..10)
        .map(|_| iv.wait_until_any(Some(&STATUS), Cmp::Eq, 9))
        .collect::<Result<_, _>>()?;
    check_eq!(
        got,
        [0, 2, 3, 5, 7, 0, 2, 3, 5, 7].map(Some).to_vec(),
        "wait_until_any in turn, skipping the excluded"
    );
    // Another view of the same memory has its own turn.
    let tail = ivars.slice(4..8);
    check_eq!(tail.test_any_vector(None, Cmp::Eq, &[9; 4])?, Some(0));
    check_eq!(tail.test_any_vector(None, Cmp::Eq, &[9; 4])?, Some(1));
    inst.barrier_all()?;
    ivars.free()?;
    Ok(())
}

/// `status`, `cmp_values` and `indices` of the wrong length are `INVALID_PARAM`, and nothing
/// is written to `indices`.
fn wrong_lengths(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let ivars = inst.calloc::<i64>(4)?;
    let iv = ivars.as_slice();
    let short = Some(&[0; 3][..]);
    let long = Some(&[0; 5][..]);
    let mut idx = [77usize; 4];
    let mut few = [77usize; 3];
    let inv = Code::InvalidParam;
    for st in [short, long] {
        check_code!(iv.wait_until_all(st, Cmp::Eq, 0), inv);
        check_code!(iv.wait_until_any(st, Cmp::Eq, 0), inv);
        check_code!(iv.wait_until_some(&mut idx, st, Cmp::Eq, 0), inv);
        check_code!(iv.test_all(st, Cmp::Eq, 0), inv);
        check_code!(iv.test_any(st, Cmp::Eq, 0), inv);
        check_code!(iv.test_some(&mut idx, st, Cmp::Eq, 0), inv);
        check_code!(iv.wait_until_all_vector(st, Cmp::Eq, &[0; 4]), inv);
        check_code!(iv.test_any_vector(st, Cmp::Eq, &[0; 4]), inv);
    }
    for cv in [&[0i64; 3][..], &[0; 5][..], &[]] {
        check_code!(iv.wait_until_all_vector(None, Cmp::Eq, cv), inv);
        check_code!(iv.wait_until_any_vector(None, Cmp::Eq, cv), inv);
        check_code!(iv.wait_until_some_vector(&mut idx, None, Cmp::Eq, cv), inv);
        check_code!(iv.test_all_vector(None, Cmp::Eq, cv), inv);
        check_code!(iv.test_any_vector(None, Cmp::Eq, cv), inv);
        check_code!(iv.test_some_vector(&mut idx, None, Cmp::Eq, cv), inv);
    }
    check_code!(iv.wait_until_some(&mut few, None, Cmp::Eq, 0), inv);
    check_code!(iv.test_some(&mut few, None, Cmp::Eq, 0), inv);
    check_code!(
        iv.wait_until_some_vector(&mut few, None, Cmp::Eq, &[0; 4]),
        inv
    );
    check_code!(iv.test_some_vector(&mut few, None, Cmp::Eq, &[0; 4]), inv);
    check_eq!(idx, [77; 4], "indices written by a refused call");
    check_eq!(few, [77; 3], "indices written by a refused call");
    // A longer indices array is fine: only its front is written.
    let mut more = [77usize; 6];
    check_eq!(iv.test_some(&mut more, None, Cmp::Eq, 0)?, 4);
    check_eq!(more, [0, 1, 2, 3, 77, 77]);
    inst.barrier_all()?;
    ivars.free()?;
    Ok(())
}

/// Waits released by a remote atomic, by a put_signal (blocking and non-blocking) and by a
/// signal update: the waiter uses the p2p routines on the words they change.
fn released_by_amo_and_signal(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let counter = inst.calloc::<i64>(1)?;
    let bits = inst.calloc::<u64>(1)?;
    let data = inst.calloc::<u32>(16)?;
    let sig = inst.calloc::<u64>(1)?;
    let sig32 = inst.calloc::<i32>(1)?;
    inst.barrier_all()?;

    // Every PE adds to PE 0's counter; PE 0 waits until all have.
    counter.elem(0).atomic_add(i64::from(me) + 1, 0)?;
    let total = i64::from(n) * (i64::from(n) + 1) / 2;
    if me == 0 {
        check_eq!(counter.elem(0).wait_until(Cmp::Eq, total)?, total);
    }
    // Each PE sets its bit in its right neighbour's word; the wait is for the left one's.
    bits.elem(0).atomic_fetch_or(1 << me, right)?;
    let want = 1u64 << left;
    let got = bits.as_slice().wait_until_any(None, Cmp::Eq, want)?;
    check_eq!(got, Some(0));
    check_eq!(bits.elem(0).wait(0)?, want);

    // put_signal: the data is there once the signal is.
    let payload: Vec<u32> = (0..16).map(|i| me * 1000 + i).collect();
    data.as_slice()
        .put_signal(&payload, sig.elem(0), 1, SignalOp::Set, right)?;
    check_eq!(sig.elem(0).wait_until(Cmp::Eq, 1)?, 1);
    check_eq!(
        data.as_slice().to_vec(me)?,
        (0..16).map(|i| left * 1000 + i).collect::<Vec<_>>(),
        "data of the put_signal"
    );
    inst.barrier_all()?;

    // put_signal_nbi with an ADD, then a signal update alone on a 32-bit word.
    let payload2: Vec<u32> = (0..16).map(|i| me * 2000 + i).collect();
    inst.nbi(|s| {
        s.put_signal_nbi(
            data.as_slice(),
            &payload2,
            sig.elem(0),
            5,
            SignalOp::Add,
            right,
        )
    })??;
    check_eq!(sig.elem(0).wait_until(Cmp::Ge, 6)?, 6);
    check_eq!(
        data.as_slice().to_vec(me)?,
        (0..16).map(|i| left * 2000 + i).collect::<Vec<_>>(),
        "data of the put_signal_nbi"
    );
    sig32.elem(0).signal_op(-4, SignalOp::Set, right)?;
    check_eq!(sig32.elem(0).wait_until(Cmp::Lt, 0)?, -4);
    check!(sig32.elem(0).test(Cmp::Eq, -4)?);
    inst.barrier_all()?;

    for b in [
        counter.free(),
        bits.free(),
        data.free(),
        sig.free(),
        sig32.free(),
    ] {
        b?;
    }
    Ok(())
}

/// An instance whose waits time out after `secs` seconds (the `wait_timeout` attribute,
/// which overrides `SHMEM_TIMEOUT`), beside `inst`, over the same PEs: the short timeout applies
/// to the waits under test alone, never to the case's own barriers on `inst`, so a slow,
/// oversubscribed host cannot make the case fail.
pub(crate) fn with_wait_timeout(
    ctx: &Ctx,
    inst: &Instance,
    secs: f64,
) -> Result<Instance, Failure> {
    let members: Vec<u32> = (0..inst.n_pes()).collect();
    let mut a = attrs_for(ctx, 7 + inst.id(), &members).expect("every PE is a member");
    a.wait_timeout = Some(std::time::Duration::from_secs_f64(secs));
    Ok(Instance::init(&a)?)
}

/// With a wait timeout of 0.5 s, a wait nobody releases fails with `TIMEOUT_ERROR` naming the
/// word and the condition.
fn times_out(ctx: &Ctx, world: &Instance) -> Outcome {
    let inst = &with_wait_timeout(ctx, world, 0.5)?;
    let flags = inst.calloc::<i32>(4)?;
    world.barrier_all()?;
    let start = std::time::Instant::now();
    let e = check_code!(flags.elem(2).wait_until(Cmp::Eq, 5), Code::TimeoutError);
    let took = start.elapsed().as_secs_f64();
    check!(
        (0.4..5.0).contains(&took),
        "the wait timed out after {took:.2} s"
    );
    let msg = e.to_string();
    let offset = format!("{:#x}", flags.elem(2).offset());
    check!(
        msg.contains("wait_until") && msg.contains(&offset) && msg.contains("== 5"),
        "the timeout does not say what it waited for: {msg}"
    );
    let e = check_code!(
        flags
            .as_slice()
            .wait_until_all(Some(&[0, 0, 1, 1]), Cmp::Gt, 0),
        Code::TimeoutError
    )
    .to_string();
    check!(
        e.contains("wait_until_all") && e.contains("2 excluded by status") && e.contains("> 0"),
        "the timeout does not say what it waited for: {e}"
    );
    world.barrier_all()?;
    flags.free()?;
    inst.finalize()?;
    Ok(())
}

/// With the CANN transport's capabilities every p2p routine works: the hardware backend polls
/// the word from the host (CANN's own host API lacks only the non-vector `test_all`, which
/// `docs/api.md` marks).
fn cann_profile(_ctx: &Ctx, inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let ivars = inst.calloc::<i32>(4)?;
    let iv = ivars.as_slice();
    check!(!inst.capabilities().host_atomics);
    check!(iv.test_all(None, Cmp::Eq, 0)?);
    check!(iv.test_all_vector(None, Cmp::Eq, &[0; 4])?);
    inst.barrier_all()?;
    iv.p(1, 8, (me + 1) % n)?;
    check_eq!(ivars.elem(1).wait_until(Cmp::Eq, 8)?, 8);
    check_eq!(iv.wait_until_any(None, Cmp::Ne, 0)?, Some(1));
    iv.wait_until_all_vector(None, Cmp::Eq, &[0, 8, 0, 0])?;
    inst.barrier_all()?;
    ivars.free()?;
    Ok(())
}
