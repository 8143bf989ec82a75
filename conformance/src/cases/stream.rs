//! `stream::` — contexts on streams (CANN's `_on_stream` calls): operations run in stream
//! order and complete when the stream is synchronised; and the local side of an access as this
//! PE's own symmetric memory or registered device memory.

use shmem::{Cmp, Code, DeviceRange, SignalOp, Stream};

use crate::{Case, Ctx, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("stream::put_shows_after_synchronise", put_after_sync),
        Case::new("stream::waits_and_barriers_in_stream_order", stream_order).pes(&[2, 4, 8]),
        Case::new("stream::local_side_segment_or_device", local_side),
        Case::new(
            "stream::nbi_scope_returns_its_closing_quiet_failure",
            nbi_closing_quiet,
        )
        .pes(&[1])
        .env(&[("SHMEM_TIMEOUT", "2")]),
        Case::new(
            "stream::device_operands_in_stream_order",
            device_operands_in_order,
        ),
    ]
}

/// On a stream of the instance's device (`create_stream`: the simulator's executor, or an
/// `aclrtStream` on hw) with device operands only, as CANN's `_on_stream` calls take them: a
/// put from symmetric memory, a fence, a 32-bit signal add, a wait for the neighbour's signal
/// and a world barrier, all enqueued; after the synchronisation every PE has its left
/// neighbour's data and signal.
fn device_operands_in_order(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let src = inst.calloc::<u64>(4)?;
    let dst = inst.calloc::<u64>(4)?;
    let sig = inst.calloc::<i32>(1)?;
    for i in 0..4 {
        src.as_slice().p(i, u64::from(me) * 10 + i as u64, me)?;
    }
    inst.barrier_all()?;
    let stream = inst.create_stream()?;
    let s = inst.stream_ctx(&stream)?;
    dst.as_slice().on(&s).put_from(src.as_slice(), right)?;
    s.fence()?;
    sig.elem(0).on(&s).signal_op(1, SignalOp::Add, right)?;
    sig.elem(0).on(&s).signal_wait_until_on_stream(Cmp::Eq, 1)?;
    inst.team_world().barrier_on(&s)?;
    stream.synchronize()?;
    for i in 0..4 {
        check_eq!(dst.as_slice().g(i, me)?, u64::from(left) * 10 + i as u64);
    }
    check_eq!(sig.as_slice().g(0, me)?, 1);
    inst.barrier_all()?;
    drop(s);
    sig.free()?;
    dst.free()?;
    src.free()?;
    inst.finalize()?;
    Ok(())
}

/// A non-blocking scope on a stream context whose enqueued wait fails (no signal comes, and
/// `SHMEM_TIMEOUT` ends it): the scope's closing quiet synchronises the stream, and the scope
/// returns that failure rather than dropping it.
fn nbi_closing_quiet(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let word = inst.calloc::<u64>(1)?;
    let stream = Stream::new();
    let s = inst.stream_ctx(&stream)?;
    let r = s.nbi(|_| word.elem(0).on(&s).signal_wait_until_on_stream(Cmp::Eq, 1));
    let e = check_code!(r, Code::TimeoutError);
    check!(e.to_string().contains("signal"), "{e}");
    // The failure was reported once: the stream is usable again.
    word.elem(0).on(&s).signal_op(1, SignalOp::Set, ctx.pe)?;
    s.quiet()?;
    check_eq!(word.elem(0).signal_fetch()?, 1);
    word.free()?;
    inst.finalize()?;
    Ok(())
}

/// In strict mode a put on a stream is held until the stream is synchronised (nothing in
/// between waits, which would release it); afterwards every PE sees it.
fn put_after_sync(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let right = (me + 1) % n;
    let buf = inst.calloc::<u64>(2)?;
    let stream = Stream::new();
    let s = inst.stream_ctx(&stream)?;
    check!(s.as_ref().is_stream());
    inst.barrier_all()?;
    let mut value = [u64::from(me) + 100];
    buf.slice(0..1).on(&s).put(&value, me)?;
    // A blocking call's host buffer is free again at once: the stream took a copy.
    value[0] = 0;
    let _ = value;
    check_eq!(
        buf.as_slice().g(0, me)?,
        0,
        "a put on a strict stream was visible before the stream was synchronised"
    );
    buf.slice(1..2).on(&s).put(&[u64::from(me) + 200], right)?;
    stream.synchronize()?;
    check_eq!(buf.as_slice().g(0, me)?, u64::from(me) + 100);
    inst.barrier_all()?;
    let left = (me + n - 1) % n;
    check_eq!(buf.as_slice().g(1, me)?, u64::from(left) + 200);
    // quiet of a stream context synchronises its stream.
    buf.slice(0..1).on(&s).put(&[7], me)?;
    s.quiet()?;
    check_eq!(buf.as_slice().g(0, me)?, 7);
    inst.barrier_all()?;
    buf.free()?;
    inst.finalize()?;
    Ok(())
}

/// A stream barrier, then a stream wait for a signal from the left neighbour, then a put to
/// the right one: the put runs only after the signal came, which the host sends after it
/// enqueued everything.
fn stream_order(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let sig = inst.calloc::<u64>(1)?;
    let data = inst.calloc::<u64>(1)?;
    let stream = Stream::new();
    let s = inst.stream_ctx(&stream)?;
    inst.team_world().barrier_on(&s)?;
    sig.elem(0).on(&s).signal_wait_until_on_stream(Cmp::Eq, 1)?;
    data.as_slice().on(&s).put(&[u64::from(me) + 1], right)?;
    // The wait is enqueued, not run: the host goes on and signals the right neighbour.
    sig.elem(0).signal_op(1, SignalOp::Set, right)?;
    stream.synchronize()?;
    inst.barrier_all()?;
    check_eq!(data.as_slice().g(0, me)?, u64::from(left) + 1);
    // On a context that is not made from a stream, the stream forms are refused.
    check_code!(
        sig.elem(0).signal_wait_until_on_stream(Cmp::Eq, 1),
        Code::InvalidParam
    );
    check_code!(
        inst.team_world()
            .barrier_on(&inst.ctx_create(shmem::CtxOptions::NONE)?),
        Code::InvalidParam
    );
    sig.free()?;
    data.free()?;
    inst.finalize()?;
    Ok(())
}

/// `put_from`/`get_into` move between symmetric views without host buffers, and registered
/// device memory can be either side's local buffer; unregistered ranges are refused.
fn local_side(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let src = inst.calloc::<u32>(64)?;
    let dst = inst.calloc::<u32>(64)?;
    let back = inst.calloc::<u32>(64)?;
    let mine: Vec<u32> = (0..64).map(|i| i * 10 + me).collect();
    src.as_slice().put(&mine, me)?;
    inst.barrier_all()?;
    dst.as_slice().put_from(src.as_slice(), right)?;
    inst.barrier_all()?;
    let from_left: Vec<u32> = (0..64).map(|i| i * 10 + left).collect();
    check_eq!(dst.as_slice().to_vec(me)?, from_left);
    src.as_slice().get_into(back.as_slice(), right)?;
    let of_right: Vec<u32> = (0..64).map(|i| i * 10 + right).collect();
    check_eq!(back.as_slice().to_vec(me)?, of_right);
    check_code!(
        dst.as_slice().put_from(src.slice(0..3), right),
        Code::InvalidParam
    );

    // Simulated device memory: memory of this process, registered with the instance.
    let mut device = vec![0u32; 64];
    let addr = device.as_mut_ptr() as usize as u64;
    let bytes = device.len() * 4;
    device.copy_from_slice(&mine);
    // SAFETY: `device` lives, unmoved, until it is deregistered below.
    let range = unsafe { inst.register_device(addr, bytes) }?;
    check_code!(
        // SAFETY: as above (the call is refused: it overlaps the registration).
        unsafe { inst.register_device(addr + 4, 8) },
        Code::InvalidParam
    );
    inst.barrier_all()?;
    dst.as_slice().put_from_device(range, right)?;
    inst.barrier_all()?;
    check_eq!(dst.as_slice().to_vec(me)?, from_left);
    src.as_slice().get_into_device(range, right)?;
    check_eq!(device, of_right);
    let outside = DeviceRange {
        addr: addr + bytes as u64 - 4,
        len: 8,
    };
    check_code!(
        dst.slice(0..2).put_from_device(outside, right),
        Code::InvalidParam
    );
    inst.deregister_device(addr)?;
    check_code!(
        dst.as_slice().put_from_device(range, right),
        Code::InvalidParam
    );
    check_code!(inst.deregister_device(addr), Code::InvalidParam);
    drop(device);
    inst.barrier_all()?;
    for b in [src, dst, back] {
        b.free()?;
    }
    inst.finalize()?;
    Ok(())
}
