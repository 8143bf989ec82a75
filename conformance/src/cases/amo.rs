//! `amo::` — remote atomics.

use shmem::{AmoOp, AmoStandard, Code, CtxOptions, Instance};

use crate::cases::on_both_instances;
use crate::{Case, Ctx, Failure, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("amo::fetch_add_and_fetch_inc_from_every_pe", |c| {
            on_both_instances(c, fetch_add_all_types)
        }),
        Case::new("amo::compare_swap_elects_one_winner", |c| {
            on_both_instances(c, compare_swap)
        }),
        Case::new("amo::fetch_set_swap_on_extended_types", |c| {
            on_both_instances(c, extended)
        }),
        Case::new("amo::bitwise_operations", |c| on_both_instances(c, bitwise)),
        Case::new("amo::non_blocking_fetching_forms", |c| {
            on_both_instances(c, non_blocking)
        }),
        Case::new("amo::bad_input_is_refused", |c| {
            on_both_instances(c, bad_input)
        }),
        Case::new("amo::one_operation_enum_by_address", |c| {
            on_both_instances(c, by_address)
        }),
        Case::new("amo::cann_profile_refuses_atomics", cann_profile)
            .pes(&[1, 2])
            .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

/// Every PE adds to PE 0's counter k times with fetch_add (and fetch_inc); the total is exact
/// and the fetched values are exactly {0, 1, …, n·k − 1}.
fn fetch_add_typed<T: AmoStandard + TryFrom<u64> + TryInto<i128>>(
    inst: &Instance,
    what: &str,
) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let k = 50usize;
    let counter = inst.calloc::<T>(1)?;
    let seen = inst.calloc::<u64>(n as usize * k)?;
    let one = T::try_from(1).map_err(|_| Failure("1 does not fit".into()))?;
    let mut mine = Vec::with_capacity(k);
    for j in 0..k {
        let old = if j % 2 == 0 {
            counter.elem(0).atomic_fetch_add(one, 0)?
        } else {
            counter.elem(0).atomic_fetch_inc(0)?
        };
        mine.push(wide(old) as u64);
    }
    seen.slice(me as usize * k..(me as usize + 1) * k)
        .put(&mine, 0)?;
    inst.barrier_all()?;
    if me == 0 {
        let total = wide(counter.elem(0).atomic_fetch(0)?);
        check_eq!(total, (n as usize * k) as i128, "{what}: the counter");
        let mut all = seen.as_slice().to_vec(0)?;
        all.sort_unstable();
        check!(
            all.iter().enumerate().all(|(i, &v)| v == i as u64),
            "{what}: the fetched values are not 0..{}",
            n as usize * k
        );
    }
    inst.barrier_all()?;
    counter.free()?;
    seen.free()?;
    Ok(())
}

/// The value as an i128 (every integer type the tables name fits).
fn wide<T: TryInto<i128>>(v: T) -> i128 {
    v.try_into().unwrap_or(i128::MIN)
}

fn fetch_add_all_types(inst: &Instance) -> Outcome {
    fetch_add_typed::<i32>(inst, "int32")?;
    fetch_add_typed::<i64>(inst, "int64")?;
    fetch_add_typed::<u32>(inst, "uint32")?;
    fetch_add_typed::<u64>(inst, "uint64")?;
    fetch_add_typed::<isize>(inst, "long")?;
    fetch_add_typed::<usize>(inst, "size")?;
    // add and inc (non-fetching) too.
    let c = inst.calloc::<i64>(1)?;
    c.elem(0).atomic_add(-3, 0)?;
    c.elem(0).atomic_inc(0)?;
    inst.barrier_all()?;
    check_eq!(c.elem(0).atomic_fetch(0)?, -2 * i64::from(inst.n_pes()));
    inst.barrier_all()?;
    c.free()?;
    Ok(())
}

fn compare_swap(inst: &Instance) -> Outcome {
    let me = inst.my_pe();
    let word = inst.calloc::<u64>(1)?;
    let won = word.elem(0).atomic_compare_swap(0, u64::from(me) + 1, 0)? == 0;
    let wins = inst.calloc::<u64>(1)?;
    if won {
        wins.elem(0).atomic_add(1, 0)?;
    }
    inst.barrier_all()?;
    if me == 0 {
        check_eq!(
            wins.elem(0).atomic_fetch(0)?,
            1,
            "exactly one PE wins the compare-and-swap"
        );
        check!(word.elem(0).atomic_fetch(0)? >= 1);
    }
    // A failed compare-and-swap changes nothing and returns the current value.
    let cur = word.elem(0).atomic_fetch(0)?;
    check_eq!(word.elem(0).atomic_compare_swap(u64::MAX, 7, 0)?, cur);
    inst.barrier_all()?;
    check_eq!(word.elem(0).atomic_fetch(0)?, cur);
    inst.barrier_all()?;
    word.free()?;
    wins.free()?;
    Ok(())
}

fn extended(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let right = (me + 1) % n;
    let f = inst.calloc::<f32>(1)?;
    let d = inst.calloc::<f64>(1)?;
    let u = inst.calloc::<u32>(1)?;
    f.elem(0).atomic_set(me as f32 + 0.5, right)?;
    d.elem(0).atomic_set(-(me as f64) - 0.25, right)?;
    u.elem(0).atomic_set(me * 10, right)?;
    inst.barrier_all()?;
    let left = (me + n - 1) % n;
    check_eq!(f.elem(0).atomic_fetch(me)?, left as f32 + 0.5);
    check_eq!(d.elem(0).atomic_fetch(me)?, -(left as f64) - 0.25);
    check_eq!(u.elem(0).atomic_fetch(me)?, left * 10);
    inst.barrier_all()?;
    // swap returns what was there and leaves the new value.
    check_eq!(f.elem(0).atomic_swap(1.5, right)?, me as f32 + 0.5);
    check_eq!(d.elem(0).atomic_swap(2.5, right)?, -(me as f64) - 0.25);
    inst.barrier_all()?;
    check_eq!(f.elem(0).atomic_fetch(me)?, 1.5);
    check_eq!(d.elem(0).atomic_fetch(me)?, 2.5);
    inst.barrier_all()?;
    f.free()?;
    d.free()?;
    u.free()?;
    Ok(())
}

fn bitwise(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let w = inst.calloc::<u64>(3)?;
    let old = w.elem(0).atomic_fetch_or(1 << me, 0)?;
    check_eq!(old & (1 << me), 0, "a bit was set before this PE set it");
    w.elem(1).atomic_or(1 << me, 0)?;
    w.elem(2).atomic_xor(0b11 << (2 * me), 0)?;
    inst.barrier_all()?;
    let all = (1u64 << n) - 1;
    if me == 0 {
        check_eq!(w.elem(0).atomic_fetch(0)?, all);
        check_eq!(w.elem(1).atomic_fetch(0)?, all);
    }
    inst.barrier_all()?;
    // and clears this PE's bit; xor toggles the pairs back.
    w.elem(0).atomic_and(!(1 << me), 0)?;
    let before = w.elem(2).atomic_fetch_xor(0b11 << (2 * me), 0)?;
    check_eq!(before & (0b11 << (2 * me)), 0b11 << (2 * me));
    let i = inst.calloc::<i32>(1)?;
    i.elem(0).atomic_fetch_and(-1, 0)?;
    inst.barrier_all()?;
    if me == 0 {
        check_eq!(w.elem(0).atomic_fetch(0)?, 0);
        check_eq!(w.elem(2).atomic_fetch(0)?, 0);
    }
    inst.barrier_all()?;
    w.free()?;
    i.free()?;
    Ok(())
}

/// Every PE adds 2 and then 1 to PE 0's counter with fetching non-blocking atomics, compare-
/// swaps PE 0's second word with a condition that never holds, and swaps a value of its own
/// into its right neighbour's second word. Every fetched value is checked against the model:
/// the 2n fetched counter values, sorted, must chain from 0 by the increments that fetched
/// them up to 3n (each atomic saw exactly the sum of those before it); a swap fetches the 0 its
/// target held, and a failed compare-swap the word as it was, before or after its swap.
fn non_blocking(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let c = inst.calloc::<u64>(2)?;
    let got = inst.calloc::<u64>(2)?;
    let all = inst.calloc::<u64>(2 * n as usize)?;
    let mine = |pe: u32| u64::from(pe + 1) << 8 | 0x5a;
    let (mut a, mut b, mut cs, mut sw) = (u64::MAX, u64::MAX, u64::MAX, u64::MAX);
    inst.nbi(|s| -> shmem::Result<()> {
        s.atomic_fetch_add_nbi(c.elem(0), &mut a, 2, 0)?;
        s.atomic_fetch_inc_nbi(c.elem(0), &mut b, 0)?;
        s.atomic_compare_swap_nbi(c.elem(1), &mut cs, u64::MAX - 1, 9, 0)?;
        s.atomic_swap_nbi(c.elem(1), &mut sw, mine(me), (me + 1) % n)?;
        Ok(())
    })??;
    check_eq!(sw, 0, "a swap fetched what its target did not hold");
    // PE 0's second word is swapped once, by PE n - 1; the compare-swap never writes it.
    check!(
        cs == 0 || cs == mine(n - 1),
        "a failed compare-swap fetched {cs:#x}, which PE 0's word never held"
    );
    got.as_slice().put(&[a, b], me)?;
    inst.barrier_all()?;
    inst.team_world().fcollect(all.as_slice(), got.as_slice())?;
    let fetched = all.as_slice().to_vec(me)?;
    // (fetched value, the increment of the atomic that fetched it), in the order they happened.
    let mut chain: Vec<(u64, u64)> = fetched
        .chunks(2)
        .flat_map(|ab| [(ab[0], 2), (ab[1], 1)])
        .collect();
    chain.sort_unstable();
    let mut sum = 0;
    for &(v, inc) in &chain {
        check_eq!(v, sum, "the fetched values do not chain: {chain:?}");
        sum += inc;
    }
    check_eq!(sum, 3 * u64::from(n));
    check_eq!(c.elem(0).atomic_fetch(0)?, 3 * u64::from(n));
    check_eq!(
        c.as_slice().g(1, me)?,
        mine((me + n - 1) % n),
        "the swap's value"
    );
    inst.barrier_all()?;
    for buf in [c, got, all] {
        buf.free()?;
    }
    Ok(())
}

fn bad_input(inst: &Instance) -> Outcome {
    let n = inst.n_pes();
    let w = inst.calloc::<u64>(2)?;
    check_code!(w.elem(0).atomic_add(1, n), Code::InvalidParam);
    check_code!(inst.view::<u64>(w.offset() + 4, 1), Code::InvalidParam); // misaligned
    // A destroyed context is refused.
    check_code!(
        w.elem(0).on(&destroyed_ctx(inst)?).atomic_fetch(0),
        Code::InvalidParam
    );
    inst.barrier_all()?;
    w.free()?;
    Ok(())
}

fn destroyed_ctx(inst: &Instance) -> Result<shmem::Context, Failure> {
    let c = inst.ctx_create(CtxOptions::NONE)?;
    c.clone().destroy()?;
    Ok(c)
}

fn cann_profile(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    check!(!inst.capabilities().host_atomics);
    let w = inst.calloc::<u64>(1)?;
    check_code!(w.elem(0).atomic_fetch_add(1, 0), Code::NotSupported);
    check_code!(w.elem(0).atomic_fetch(0), Code::NotSupported);
    let mut out = 0u64;
    let r = inst.nbi(|s| s.atomic_fetch_nbi(w.elem(0), &mut out, 0))?;
    check_code!(r, Code::NotSupported);
    // What CANN has still works.
    w.as_slice().p(0, 5, 0)?;
    inst.barrier_all()?;
    w.free()?;
    inst.finalize()?;
    Ok(())
}

/// `CtxRef::atomic_at` and `atomic_post_at` (the C ABI's atomics: one `AmoOp`, the target by
/// symmetric address): every PE adds to PE 0's counter, swaps and compare-swaps; an operation
/// OpenSHMEM does not define on the type, a misaligned or non-symmetric address, is refused.
fn by_address(inst: &Instance) -> Outcome {
    let (me, n) = (inst.my_pe(), inst.n_pes());
    let c = inst.default_ctx();
    let buf = inst.calloc::<u64>(2)?;
    let counter = buf.as_ptr().cast_const();
    inst.barrier_all()?;
    let before = c.atomic_at(counter, AmoOp::Add(u64::from(me) + 1), 0)?;
    check!(before <= u64::from(n) * u64::from(n + 1) / 2);
    c.atomic_post_at(counter.wrapping_add(1), AmoOp::Or(1 << me), 0)?;
    c.quiet()?;
    inst.barrier_all()?;
    check_eq!(
        c.atomic_at(counter, AmoOp::Fetch, 0)?,
        u64::from(n) * u64::from(n + 1) / 2
    );
    check_eq!(
        c.atomic_at(counter.wrapping_add(1), AmoOp::Fetch, 0)?,
        (1u64 << n) - 1
    );
    inst.barrier_all()?;
    let f = inst.calloc::<f64>(1)?;
    check_code!(
        c.atomic_at(f.as_ptr().cast_const(), AmoOp::Add(1.5f64.to_bits()), me),
        Code::InvalidParam
    );
    check_eq!(
        c.atomic_at(f.as_ptr().cast_const(), AmoOp::Swap(2.25f64.to_bits()), me)?,
        0.0
    );
    check_code!(
        c.atomic_at(
            counter.cast::<u8>().wrapping_add(1).cast::<u64>(),
            AmoOp::Fetch,
            me
        ),
        Code::InvalidParam
    );
    let local = 0u64;
    check_code!(
        c.atomic_at(&raw const local, AmoOp::Fetch, me),
        Code::InvalidParam
    );
    inst.barrier_all()?;
    f.free()?;
    buf.free()?;
    Ok(())
}
