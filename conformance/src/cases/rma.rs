//! `rma::` — put, get, their non-blocking, strided and scalar forms, for every CANN host type
//! and size, and the bounds every access is checked against.

use std::fmt::Debug;

use bytemuck::Pod;
use shmem::{Code, Instance};
use shmem_capi::raw;

use crate::{Case, Ctx, Failure, Outcome, check, check_code, check_eq};

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("rma::all_types_and_sizes", all_types),
        Case::new("rma::putmem_getmem_sizes", putmem_sizes),
        Case::new("rma::non_blocking_in_a_scope", non_blocking),
        Case::new("rma::strided", strided),
        Case::new("rma::interleaved_blocks", interleaved_blocks),
        Case::new("rma::bounds_are_errors", bounds),
        Case::new("rma::large_transfers", large)
            .pes(&[2, 4])
            .full_pes(&[8]),
    ]
}

/// A value that differs by PE, element and type.
trait Pattern: Pod + PartialEq + Debug {
    fn make(pe: u32, i: usize) -> Self;
}

macro_rules! pattern_int {
    ($($t:ty),*) => {$(
        impl Pattern for $t {
            fn make(pe: u32, i: usize) -> Self {
                (pe as u64).wrapping_mul(131).wrapping_add(i as u64 * 7 + 1) as $t
            }
        }
    )*};
}
pattern_int!(i8, i16, i32, i64, u8, u16, u32, u64, u128);

impl Pattern for f32 {
    fn make(pe: u32, i: usize) -> Self {
        pe as f32 * 1000.5 + i as f32 * 0.25
    }
}

impl Pattern for f64 {
    fn make(pe: u32, i: usize) -> Self {
        pe as f64 * 1e9 + i as f64 * 0.125
    }
}

/// Ring put, get, p, g and strided forms for one type.
fn exercise<T: Pattern>(inst: &Instance, ctx: &Ctx, what: &str) -> Outcome {
    const N: usize = 37;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let buf = inst.calloc::<T>(N)?;
    let mine: Vec<T> = (0..N).map(|i| T::make(me, i)).collect();
    let theirs: Vec<T> = (0..N).map(|i| T::make(left, i)).collect();

    // put into the right neighbour, then read what the left one put here.
    buf.as_slice().put(&mine, right)?;
    inst.barrier_all()?;
    check_eq!(buf.as_slice().to_vec(me)?, theirs, "{what}: put");
    // get from the right neighbour: it holds what this PE put.
    check_eq!(buf.as_slice().to_vec(right)?, mine, "{what}: get");
    inst.barrier_all()?;

    // p / g on single elements.
    for i in [0, N / 2, N - 1] {
        buf.as_slice().p(i, T::make(me + 100, i), right)?;
    }
    inst.barrier_all()?;
    for i in [0, N / 2, N - 1] {
        check_eq!(
            buf.as_slice().g(i, me)?,
            T::make(left + 100, i),
            "{what}: p/g element {i}"
        );
        check_eq!(
            buf.as_slice().g(i, right)?,
            T::make(me + 100, i),
            "{what}: g from the right"
        );
    }
    inst.barrier_all()?;

    // iput: every 2nd source element to every 3rd destination element.
    let k = 6;
    buf.as_slice().iput(3, &mine, 2, k, right)?;
    inst.barrier_all()?;
    let mut got = vec![T::zeroed(); k];
    buf.as_slice().iget(3, &mut got, 1, k, me)?;
    let want: Vec<T> = (0..k).map(|j| theirs[2 * j]).collect();
    check_eq!(got, want, "{what}: iput/iget");
    inst.barrier_all()?;
    buf.free()?;
    Ok(())
}

fn all_types(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    // The CANN host types: float double int8 int16 int32 int64 uint8 uint16 uint32 uint64 char.
    exercise::<f32>(&inst, ctx, "float")?;
    exercise::<f64>(&inst, ctx, "double")?;
    exercise::<i8>(&inst, ctx, "int8")?;
    exercise::<i16>(&inst, ctx, "int16")?;
    exercise::<i32>(&inst, ctx, "int32")?;
    exercise::<i64>(&inst, ctx, "int64")?;
    exercise::<u8>(&inst, ctx, "uint8")?;
    exercise::<u16>(&inst, ctx, "uint16")?;
    exercise::<u32>(&inst, ctx, "uint32")?;
    exercise::<u64>(&inst, ctx, "uint64")?;
    exercise::<i8>(&inst, ctx, "char")?;
    // The sized forms: 8, 16, 32, 64 and 128 bits.
    exercise::<u128>(&inst, ctx, "128-bit")?;
    inst.finalize()?;
    Ok(())
}

fn putmem_sizes(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let right = (me + 1) % n;
    let max = 256 << 10;
    let area = inst.calloc::<u8>(max + 64)?;
    for len in [0usize, 1, 7, 8, 63, 64, 65, 4095, 4096, 65537, max] {
        for misalign in [0usize, 3] {
            let data: Vec<u8> = (0..len)
                .map(|i| (i as u32 ^ (me << 3) ^ len as u32) as u8)
                .collect();
            raw::putmem(inst.default_ctx(), area.offset() + misalign, &data, right)?;
            inst.barrier_all()?;
            let mut back = vec![0u8; len];
            raw::getmem(inst.default_ctx(), area.offset() + misalign, &mut back, me)?;
            let left = (me + n - 1) % n;
            let want: Vec<u8> = (0..len)
                .map(|i| (i as u32 ^ (left << 3) ^ len as u32) as u8)
                .collect();
            check!(
                back == want,
                "putmem of {len} bytes at +{misalign} arrived wrong"
            );
            inst.barrier_all()?;
        }
    }
    area.free()?;
    inst.finalize()?;
    Ok(())
}

fn non_blocking(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let buf = inst.calloc::<u64>(256)?;
    let src: Vec<u64> = (0..256).map(|i| u64::from(me) << 32 | i).collect();
    inst.nbi(|s| -> Result<(), shmem::Error> {
        // Four puts of 64 elements each; all complete when the scope ends.
        for k in 0..4 {
            s.put_nbi(
                buf.slice(k * 64..(k + 1) * 64),
                &src[k * 64..(k + 1) * 64],
                right,
            )?;
        }
        Ok(())
    })??;
    inst.barrier_all()?;
    let mut from_right = vec![0u64; 256];
    inst.nbi(|s| s.get_nbi(buf.as_slice(), &mut from_right, right))??;
    let want_right: Vec<u64> = (0..256).map(|i| u64::from(me) << 32 | i).collect();
    check_eq!(from_right, want_right, "get_nbi");
    check_eq!(
        buf.as_slice().to_vec(me)?,
        (0..256)
            .map(|i| u64::from(left) << 32 | i)
            .collect::<Vec<_>>(),
        "put_nbi"
    );
    // Mismatched lengths are refused before anything is issued.
    let r = inst.nbi(|s| s.put_nbi(buf.slice(0..2), &src[..3], right))?;
    check_code!(r, Code::InvalidParam);
    inst.barrier_all()?;
    buf.free()?;
    inst.finalize()?;
    Ok(())
}

fn strided(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let right = (me + 1) % n;
    let m = inst.calloc::<i32>(64)?;
    // A 8x8 matrix: put this PE's column `me % 8` of a local matrix into the right neighbour's
    // row 0 (transpose a column), then fetch a column of the neighbour with a strided get.
    let local: Vec<i32> = (0..64).map(|i| i * 10 + me as i32).collect();
    let col = (me % 8) as usize;
    m.as_slice().iput(1, &local[col..], 8, 8, right)?;
    inst.barrier_all()?;
    let left = (me + n - 1) % n;
    let lcol = (left % 8) as usize;
    let row0 = m.slice(0..8).to_vec(me)?;
    check_eq!(
        row0,
        (0..8)
            .map(|r| (r * 8 + lcol as i32) * 10 + left as i32)
            .collect::<Vec<_>>(),
        "iput of a column"
    );
    // Negative destination stride from the view's end reverses the order.
    let mut rev = vec![0i32; 8];
    m.slice(0..8).iget(1, &mut rev, 1, 8, me)?;
    let mut back = vec![0i32; 8];
    raw::iget::<i32>(
        inst.default_ctx(),
        m.offset() + 7 * 4,
        -1,
        &mut back,
        1,
        8,
        me,
    )?;
    rev.reverse();
    check_eq!(back, rev, "negative stride");
    // Zero elements is a no-op; a stride that walks out of the view is refused.
    m.as_slice().iput(5, &local, 1, 0, right)?;
    check_code!(
        m.as_slice().iput(10, &local, 1, 8, right),
        Code::InvalidParam
    );
    inst.barrier_all()?;
    m.free()?;
    inst.finalize()?;
    Ok(())
}

/// OpenSHMEM 1.6's `ibput`/`ibget`: blocks of `bsize` elements at one stride on one side and
/// another on the other; the elements between blocks stay untouched.
fn interleaved_blocks(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let canary = -7i64;
    let v = inst.malloc::<i64>(16)?;
    v.as_slice().put(&[canary; 16], me)?;
    inst.barrier_all()?;
    // 3 blocks of 2, from every 3rd element of the source to every 5th of the right neighbour.
    let src: Vec<i64> = (0..9)
        .map(|i| 0x0123_4567_89AB_CDEF - i - 100 * me as i64)
        .collect();
    v.as_slice().ibput(5, &src, 3, 2, 3, right)?;
    inst.barrier_all()?;
    let got = v.as_slice().to_vec(me)?;
    let mut want = vec![canary; 16];
    let from = |i: i64| 0x0123_4567_89AB_CDEF - i - 100 * left as i64;
    for b in 0..3 {
        for e in 0..2 {
            want[b * 5 + e] = from((b * 3 + e) as i64);
        }
    }
    check_eq!(got, want, "ibput from the left neighbour");
    // Back again with ibget: blocks of 2 at a stride of 5 on the right neighbour, to a stride of
    // 4 locally; the gaps of the local buffer keep their values.
    let mut back = vec![1i64; 12];
    v.as_slice().ibget(5, &mut back, 4, 2, 3, right)?;
    let mine = |i: i64| 0x0123_4567_89AB_CDEF - i - 100 * me as i64;
    let mut expect = vec![1i64; 12];
    for b in 0..3 {
        for e in 0..2 {
            expect[b * 4 + e] = mine((b * 3 + e) as i64);
        }
    }
    check_eq!(back, expect, "ibget of what this PE put");
    // Nothing to move is a no-op; a block past the view, a local buffer too short or a
    // non-positive stride is refused and moves nothing.
    v.as_slice().ibput(5, &src, 3, 0, 3, right)?;
    v.as_slice().ibput(5, &src, 3, 2, 0, right)?;
    check_code!(
        v.as_slice().ibput(5, &src, 3, 2, 4, right),
        Code::InvalidParam
    );
    check_code!(
        v.as_slice().ibput(7, &src, 4, 2, 3, right),
        Code::InvalidParam
    );
    check_code!(
        v.as_slice().ibget(0, &mut back, 4, 2, 3, right),
        Code::InvalidParam
    );
    check_code!(
        v.as_slice().ibget(5, &mut back, -4, 2, 3, right),
        Code::InvalidParam
    );
    check_code!(v.as_slice().ibput(5, &src, 3, 2, 3, n), Code::InvalidParam);
    inst.barrier_all()?;
    check_eq!(
        v.as_slice().to_vec(me)?,
        want,
        "refused calls moved nothing"
    );
    inst.barrier_all()?;
    v.free()?;
    inst.finalize()?;
    Ok(())
}

fn bounds(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let canary = inst.calloc::<u64>(4)?;
    let size = inst.heap_size();
    let me = ctx.pe;
    check_code!(
        raw::putmem(inst.default_ctx(), size - 4, &[1; 8], me),
        Code::InvalidParam
    );
    check_code!(
        raw::putmem(inst.default_ctx(), usize::MAX - 2, &[1; 8], me),
        Code::InvalidParam
    );
    check_code!(
        raw::getmem(inst.default_ctx(), size, &mut [0; 1], me),
        Code::InvalidParam
    );
    check_code!(
        raw::putmem(inst.default_ctx(), canary.offset(), &[1; 8], ctx.n_pes),
        Code::InvalidParam
    );
    check_code!(canary.as_slice().put(&[1, 2, 3], me), Code::InvalidParam);
    check_code!(canary.as_slice().g(4, me), Code::InvalidParam);
    check_code!(
        raw::iput::<u64>(inst.default_ctx(), size - 64, 8, &[0; 8], 1, 2, me),
        Code::InvalidParam
    );
    check_code!(
        raw::iget::<u64>(
            inst.default_ctx(),
            canary.offset(),
            1,
            &mut [0; 2],
            1,
            3,
            me
        ),
        Code::InvalidParam
    );
    // Strides whose byte products overflow are refused, on either side.
    let big = isize::MAX / 4;
    let v = canary.as_slice();
    check_code!(v.iput(big, &[1, 2], 1, 2, me), Code::InvalidParam);
    check_code!(v.iput(1, &[1, 2], big, 2, me), Code::InvalidParam);
    check_code!(v.iget(-big, &mut [0; 2], 1, 2, me), Code::InvalidParam);
    check_code!(
        v.iget(1, &mut [0; 2], isize::MIN, 2, me),
        Code::InvalidParam
    );
    check_code!(
        raw::iput::<u64>(inst.default_ctx(), canary.offset(), big, &[0; 2], 1, 2, me),
        Code::InvalidParam
    );
    check_code!(inst.view::<u64>(size - 8, 2), Code::InvalidParam);
    check_code!(inst.view::<u64>(canary.offset() + 1, 1), Code::InvalidParam);
    // Nothing was written anywhere.
    check!(
        canary.as_slice().to_vec(me)?.iter().all(|&v| v == 0),
        "a refused access wrote data"
    );
    // The last byte of the heap is addressable.
    raw::putmem(inst.default_ctx(), size - 1, &[9], me)?;
    let mut b = [0u8];
    raw::getmem(inst.default_ctx(), size - 1, &mut b, me)?;
    check_eq!(b[0], 9);
    canary.free()?;
    inst.finalize()?;
    Ok(())
}

fn large(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(16 << 20)?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let len = 4 << 20;
    let buf = inst.malloc::<u8>(len)?;
    let data: Vec<u8> = (0..len).map(|i| (i / 4096) as u8 ^ me as u8).collect();
    buf.as_slice().put(&data, (me + 1) % n)?;
    inst.barrier_all()?;
    let left = (me + n - 1) % n;
    let got = buf.as_slice().to_vec(me)?;
    let bad = got
        .iter()
        .enumerate()
        .position(|(i, &b)| b != (i / 4096) as u8 ^ left as u8);
    if let Some(i) = bad {
        return Err(Failure(format!("4 MiB put: byte {i} is wrong")));
    }
    buf.free()?;
    inst.finalize()?;
    Ok(())
}
