//! `heap::` — the symmetric heap: CANN's layout, the allocator's rules, and bad requests.

use shmem::Code;
use shmem_capi::raw;

use crate::{Case, Ctx, Outcome, check, check_code, check_eq};

const MIB: usize = 1 << 20;
/// Where CANN's first user block lands, after its 512 B + 5 MiB + 128 KiB of reserved blocks.
const FIRST_USER: usize = 0x520200;

pub(crate) fn cases() -> Vec<Case> {
    vec![
        Case::new("heap::cann_layout", cann_layout),
        Case::new("heap::malloc_calloc_align_free", malloc_calloc_align_free),
        Case::new("heap::bad_requests_change_nothing", bad_requests),
        Case::new("heap::double_and_interior_free", double_and_interior_free),
        Case::new("heap::cann_free_merge", cann_free_merge)
            .pes(&[1, 2, 4])
            .full_pes(&[8]),
        Case::new("heap::full_space", full_space)
            .pes(&[1, 2, 4])
            .full_pes(&[8]),
        Case::new("heap::asymmetric_malloc_is_refused", asymmetric_malloc)
            .pes(&[2, 4])
            .full_pes(&[3, 8]),
        Case::new(
            "heap::out_of_step_collectives_are_errors",
            out_of_step_collectives,
        )
        .pes(&[2, 4])
        .full_pes(&[3]),
        Case::new("heap::stress_no_leak", stress_no_leak),
        Case::new("heap::symmetric_offsets", symmetric_offsets),
        Case::new("heap::realloc_keeps_contents", realloc_keeps_contents),
        Case::new("heap::realloc_raw_null_and_zero", realloc_raw).pes(&[1, 2]),
        Case::new(
            "heap::hints_accessibility_and_thread_level",
            hints_and_queries,
        )
        .pes(&[1, 2]),
        Case::new(
            "heap::cann_profile_keeps_realloc_and_hints",
            cann_profile_extras,
        )
        .pes(&[1, 2])
        .env(&[("SHMEM_PROFILE", "cann")]),
    ]
}

fn cann_layout(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    check_eq!(inst.heap_size(), 10 * MIB);
    let a = raw::malloc(&inst, 100)?;
    check_eq!(a, FIRST_USER, "the first user block");
    // Sizes round up to 16 bytes.
    let b = raw::malloc(&inst, 1)?;
    check_eq!(b, FIRST_USER + 112);
    let c = raw::malloc(&inst, 16)?;
    check_eq!(c, b + 16);
    for o in [a, b, c] {
        raw::free(&inst, o)?;
    }
    check_eq!(
        inst.heap_free().0,
        10 * MIB - FIRST_USER,
        "everything returned"
    );
    inst.finalize()?;
    Ok(())
}

fn malloc_calloc_align_free(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    for align in [16usize, 64, 4096, MIB, 2 * MIB] {
        let buf = inst.align::<u8>(align, 100)?;
        check!(
            (buf.as_ptr() as usize).is_multiple_of(align),
            "align({align}) gave {:p}",
            buf.as_ptr()
        );
        buf.free()?;
    }
    // Dirty a block, free it, and calloc over the same place: it must read zero.
    let dirty = inst.malloc::<u64>(1024)?;
    dirty.as_slice().put(&vec![u64::MAX; 1024], ctx.pe)?;
    let at = dirty.offset();
    dirty.free()?;
    let clean = inst.calloc::<u64>(1024)?;
    check_eq!(clean.offset(), at, "calloc reuses the freed block");
    check!(
        clean.as_slice().to_vec(ctx.pe)?.iter().all(|&v| v == 0),
        "calloc memory is not zero"
    );
    clean.free()?;
    // Byte-level calloc zeroes too.
    let off = raw::calloc(&inst, 10, 100)?;
    check!(
        inst.view::<u8>(off, 1000)?
            .to_vec(ctx.pe)?
            .iter()
            .all(|&v| v == 0)
    );
    raw::free(&inst, off)?;
    inst.finalize()?;
    Ok(())
}

fn bad_requests(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let before = inst.heap_free();
    check_code!(inst.malloc::<u8>(0), Code::InvalidValue);
    check_code!(raw::malloc(&inst, inst.heap_size() + 1), Code::MallocFailed);
    check_code!(raw::malloc(&inst, inst.heap_size()), Code::MallocFailed); // the reserve is in use
    check_code!(inst.align::<u8>(3, 64), Code::InvalidValue);
    check_code!(inst.align::<u8>(0, 64), Code::InvalidValue);
    check_code!(raw::align(&inst, 48, 64), Code::InvalidValue);
    check_code!(raw::calloc(&inst, usize::MAX / 2, 4), Code::InvalidValue);
    check_code!(inst.malloc::<u64>(usize::MAX / 4), Code::InvalidValue);
    check_eq!(
        inst.heap_free(),
        before,
        "a failed request changed the heap"
    );
    // The heap still works, from the first user offset.
    let ok = raw::malloc(&inst, 64)?;
    check_eq!(ok, FIRST_USER);
    raw::free(&inst, ok)?;
    inst.finalize()?;
    Ok(())
}

fn double_and_interior_free(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let a = raw::malloc(&inst, 256)?;
    let b = raw::malloc(&inst, 256)?;
    let free_before = inst.heap_free();
    check_code!(raw::free(&inst, a + 16), Code::InvalidParam); // interior pointer
    check_eq!(
        inst.heap_free(),
        free_before,
        "an interior free changed the heap"
    );
    raw::free(&inst, a)?;
    let after_one = inst.heap_free();
    check_code!(raw::free(&inst, a), Code::InvalidParam); // double free
    check_eq!(
        inst.heap_free(),
        after_one,
        "a double free changed the heap"
    );
    check_code!(
        raw::free(&inst, inst.heap_size() + 4096),
        Code::InvalidParam
    ); // never allocated
    // b is intact and usable.
    inst.view::<u32>(b, 64)?
        .put(&[7; 64], (ctx.pe + 1) % ctx.n_pes)?;
    inst.barrier_all()?;
    check!(
        inst.view::<u32>(b, 64)?
            .to_vec(ctx.pe)?
            .iter()
            .all(|&v| v == 7)
    );
    raw::free(&inst, b)?;
    inst.finalize()?;
    Ok(())
}

fn cann_free_merge(ctx: &Ctx) -> Outcome {
    // CANN's free_merge test, with local_mem_size = 4 MiB (heap 10 MiB, 0x520200 reserved).
    let inst = ctx.world_with(4 << 20)?;
    let blocks: Vec<usize> = (0..4)
        .map(|_| raw::malloc(&inst, MIB))
        .collect::<Result<_, _>>()?;
    check_eq!(blocks[0], FIRST_USER);
    raw::free(&inst, blocks[1])?;
    raw::free(&inst, blocks[3])?;
    // Two holes of 1 MiB and 1.875 MiB: 2 MiB fits in neither.
    check_code!(raw::malloc(&inst, 2 * MIB), Code::MallocFailed);
    // Freeing block 2 merges the holes into one of 3.875 MiB: now 3 MiB fits.
    raw::free(&inst, blocks[2])?;
    let big = raw::malloc(&inst, 3 * MIB)?;
    check_eq!(big, blocks[1]);
    raw::free(&inst, big)?;
    raw::free(&inst, blocks[0])?;
    inst.finalize()?;
    Ok(())
}

fn full_space(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    let room = 10 * MIB - FIRST_USER;
    // local_mem_size itself always fits (the reserve leaves ~0.875 MiB besides).
    let whole = raw::malloc(&inst, 4 * MIB)?;
    raw::free(&inst, whole)?;
    let all = raw::malloc(&inst, room)?;
    check_code!(raw::malloc(&inst, 16), Code::MallocFailed);
    raw::free(&inst, all)?;
    check_code!(raw::malloc(&inst, room + 1), Code::MallocFailed);
    inst.finalize()?;
    Ok(())
}

fn asymmetric_malloc(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let before = inst.heap_free();
    let size = if ctx.pe == 0 { 512 } else { 1024 };
    let e = check_code!(raw::malloc(&inst, size), Code::InvalidParam);
    let other = if ctx.pe == 0 { 1 } else { 0 };
    let want = format!(
        "collective mismatch: PE {other} called malloc({}) while PE {} called malloc({size})",
        if other == 0 { 512 } else { 1024 },
        ctx.pe
    );
    check!(e.to_string().contains(&want), "{e}");
    check_eq!(inst.heap_free(), before, "the refused allocation was kept");
    // The PEs are still in step: a symmetric allocation works.
    let ok = raw::malloc(&inst, 64)?;
    raw::free(&inst, ok)?;
    inst.finalize()?;
    Ok(())
}

/// PEs out of step in a heap collective: PE 0 allocates while the others free, or reallocate,
/// or allocate with calloc. Every PE gets `INVALID_PARAM` naming a PE whose call differs, both
/// calls, and nothing changes on any heap; the PEs are still in step afterwards.
fn out_of_step_collectives(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let me = ctx.pe;
    let held = raw::malloc(&inst, 256)?;
    let before = inst.heap_free();
    type OtherCall = fn(&shmem::Instance, usize) -> shmem::Result<()>;
    let others: [(&str, OtherCall); 3] = [
        ("free(", |i, off| raw::free(i, off)),
        ("realloc(", |i, off| {
            raw::realloc(i, Some(off), 4096).map(drop)
        }),
        ("calloc(512)", |i, _| raw::calloc(i, 1, 512).map(drop)),
    ];
    for (theirs, call) in others {
        let r = if me == 0 {
            raw::malloc(&inst, 512).map(drop)
        } else {
            call(&inst, held)
        };
        let e = check_code!(r, Code::InvalidParam);
        let msg = e.to_string();
        let (first, second) = if me == 0 {
            (
                format!("PE 1 called {theirs}"),
                "while PE 0 called malloc(512)".to_string(),
            )
        } else {
            (
                "PE 0 called malloc(512)".to_string(),
                format!("while PE {me} called {theirs}"),
            )
        };
        check!(
            msg.contains("collective mismatch: ") && msg.contains(&first) && msg.contains(&second),
            "the message does not name both calls: {msg}"
        );
        check_eq!(inst.heap_free(), before, "after {theirs}: the heap changed");
    }
    // Still in step: the held block is intact and frees collectively.
    let v = inst.view::<u8>(held, 256)?;
    v.put(&[me as u8; 256], me)?;
    inst.barrier_all()?;
    check_eq!(v.to_vec(me)?, vec![me as u8; 256]);
    raw::free(&inst, held)?;
    inst.finalize()?;
    Ok(())
}

fn stress_no_leak(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let before = inst.heap_free();
    let mut live = Vec::new();
    let rounds = ctx.iters(60, 400);
    // The same pseudo-random sequence on every PE (allocation is collective).
    let mut x = 0x9e37_79b9_u64;
    for i in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if live.len() > 8 || (x.is_multiple_of(3) && !live.is_empty()) {
            let k = (x as usize / 3) % live.len();
            raw::free(&inst, live.swap_remove(k))?;
        } else {
            let size = 16 + (x as usize % 65536);
            let off = if i % 4 == 0 {
                raw::align(&inst, 4096, size)?
            } else {
                raw::malloc(&inst, size)?
            };
            live.push(off);
        }
    }
    for off in live {
        raw::free(&inst, off)?;
    }
    check_eq!(inst.heap_free(), before, "memory leaked");
    inst.finalize()?;
    Ok(())
}

fn symmetric_offsets(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let bufs: Vec<_> = [8usize, 100, 4096, 33]
        .iter()
        .map(|&n| inst.malloc::<u8>(n))
        .collect::<Result<_, _>>()?;
    // Every PE got the same offsets: each PE writes its offsets into PE 0's table.
    let table = inst.calloc::<u64>(ctx.n_pes as usize * bufs.len())?;
    let mine: Vec<u64> = bufs.iter().map(|b| b.offset() as u64).collect();
    table
        .slice(ctx.pe as usize * bufs.len()..(ctx.pe as usize + 1) * bufs.len())
        .put(&mine, 0)?;
    inst.barrier_all()?;
    if ctx.pe == 0 {
        let all = table.as_slice().to_vec(0)?;
        for (pe, row) in all.chunks(bufs.len()).enumerate() {
            check_eq!(row, &mine[..], "PE {pe}'s offsets");
        }
    }
    for b in bufs {
        b.free()?;
    }
    table.free()?;
    inst.finalize()?;
    Ok(())
}

/// Growing keeps every PE's own contents (and the new tail is usable); shrinking keeps the
/// prefix; a failed realloc leaves the block and its contents as they were.
fn realloc_keeps_contents(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    let (me, n) = (ctx.pe, ctx.n_pes);
    let (free0, _) = inst.heap_free();
    let mut buf = inst.malloc::<u32>(100)?;
    let mine: Vec<u32> = (0..100).map(|i| me * 1000 + i).collect();
    buf.as_slice().put(&mine, me)?;
    // Another block behind it, so growing cannot stay in place.
    let fence = inst.malloc::<u8>(64)?;
    buf.realloc(5000)?;
    check_eq!(buf.len(), 5000);
    check_eq!(
        buf.slice(..100).to_vec(me)?,
        mine,
        "growing lost this PE's contents"
    );
    // The grown block is symmetric: write the tail of the next PE.
    let next = (me + 1) % n;
    buf.slice(4000..4010).put(&[me; 10], next)?;
    inst.barrier_all()?;
    check_eq!(
        buf.slice(4000..4010).to_vec(me)?,
        vec![(me + n - 1) % n; 10]
    );
    buf.realloc(10)?;
    check_eq!(
        buf.as_slice().to_vec(me)?,
        mine[..10].to_vec(),
        "shrinking lost the prefix"
    );
    let before = buf.offset();
    check_code!(buf.realloc(usize::MAX / 2), Code::InvalidValue);
    check_code!(buf.realloc(64 << 20), Code::MallocFailed);
    check_eq!(buf.offset(), before, "a failed realloc moved the block");
    check_eq!(
        buf.as_slice().to_vec(me)?,
        mine[..10].to_vec(),
        "a failed realloc changed the contents"
    );
    inst.barrier_all()?;
    buf.free()?;
    fence.free()?;
    check_eq!(inst.heap_free().0, free0, "realloc leaked heap space");
    inst.finalize()?;
    Ok(())
}

/// `shmem_realloc(NULL, n)` allocates, `shmem_realloc(p, 0)` frees, and a pointer that is not
/// a block start is refused.
fn realloc_raw(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    let (free0, _) = inst.heap_free();
    let off = raw::realloc(&inst, None, 256)?
        .ok_or_else(|| crate::Failure("realloc(NULL, 256) gave NULL".into()))?;
    check!(
        inst.heap_free().0 < free0,
        "realloc(NULL, n) did not allocate"
    );
    inst.view::<u64>(off, 32)?
        .put(&[u64::from(ctx.pe); 32], ctx.pe)?;
    let moved = raw::realloc(&inst, Some(off), 4096)?
        .ok_or_else(|| crate::Failure("realloc to 4096 gave NULL".into()))?;
    check_eq!(
        inst.view::<u64>(moved, 32)?.to_vec(ctx.pe)?,
        vec![u64::from(ctx.pe); 32]
    );
    check_code!(
        raw::realloc(&inst, Some(moved + 16), 64),
        Code::InvalidParam
    );
    check_eq!(raw::realloc(&inst, Some(moved), 0)?, None);
    check_eq!(inst.heap_free().0, free0, "realloc(p, 0) did not free");
    check_eq!(raw::realloc(&inst, None, 0)?, None);
    inst.finalize()?;
    Ok(())
}

/// Hints (known and unknown bits) allocate like malloc; the accessibility queries answer for
/// heap addresses, other addresses and PEs out of range; the thread level is MULTIPLE.
fn hints_and_queries(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    let n = ctx.n_pes;
    let a = inst.malloc_with_hints::<u64>(16, 1)?; // SHMEM_MALLOC_ATOMICS_REMOTE
    let b = inst.malloc_with_hints::<u64>(16, 1 << 40)?; // an unknown bit: ignored
    check_eq!(
        b.offset(),
        a.offset() + 128,
        "hinted blocks are not placed like plain ones"
    );
    let local = 0u64;
    for pe in 0..n {
        check!(inst.pe_accessible(pe));
        check!(inst.addr_accessible(a.as_ptr().cast(), 128, pe));
        check!(
            !inst.addr_accessible((&raw const local).cast(), 8, pe),
            "a stack address is accessible"
        );
    }
    check!(!inst.pe_accessible(n));
    check!(!inst.addr_accessible(a.as_ptr().cast(), 8, n));
    check!(
        !inst.addr_accessible(inst.heap_base(), inst.heap_size() + 1, 0),
        "a range past the heap end"
    );
    check_eq!(inst.query_thread(), shmem::ThreadLevel::Multiple);
    inst.barrier_all()?;
    a.free()?;
    b.free()?;
    inst.finalize()?;
    check!(
        !inst.pe_accessible(0),
        "a finalized instance reports PEs accessible"
    );
    // init_thread provides MULTIPLE whatever is requested.
    let (again, level) =
        shmem::Instance::init_thread(&ctx.attrs(4 << 20), shmem::ThreadLevel::Single)?;
    check_eq!(level, shmem::ThreadLevel::Multiple);
    again.finalize()?;
    Ok(())
}

/// Realloc and allocation hints are heap bookkeeping, which the CANN transport does not
/// limit (CANN's own host API lacks them, which `docs/api.md` marks).
fn cann_profile_extras(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    check!(!inst.capabilities().host_atomics);
    let mut buf = inst.malloc::<u8>(64)?;
    buf.as_slice().put(&[5; 64], ctx.pe)?;
    buf.realloc(128)?;
    check_eq!(buf.slice(0..64).to_vec(ctx.pe)?, vec![5u8; 64]);
    let off = raw::realloc(&inst, None, 64)?.expect("a block");
    raw::free(&inst, off)?;
    inst.malloc_with_hints::<u8>(64, 0)?.free()?;
    buf.free()?;
    inst.finalize()?;
    Ok(())
}
