//! `heap::` — the symmetric heap: CANN's layout, the allocator's rules, and bad requests.

use shmem::Code;

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
        Case::new("heap::stress_no_leak", stress_no_leak),
        Case::new("heap::symmetric_offsets", symmetric_offsets),
    ]
}

fn cann_layout(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    check_eq!(inst.heap_size(), 10 * MIB);
    let a = inst.malloc_raw(100)?;
    check_eq!(a, FIRST_USER, "the first user block");
    // Sizes round up to 16 bytes.
    let b = inst.malloc_raw(1)?;
    check_eq!(b, FIRST_USER + 112);
    let c = inst.malloc_raw(16)?;
    check_eq!(c, b + 16);
    for o in [a, b, c] {
        inst.free_raw(o)?;
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
    let off = inst.calloc_raw(10, 100)?;
    check!(
        inst.view::<u8>(off, 1000)?
            .to_vec(ctx.pe)?
            .iter()
            .all(|&v| v == 0)
    );
    inst.free_raw(off)?;
    inst.finalize()?;
    Ok(())
}

fn bad_requests(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let before = inst.heap_free();
    check_code!(inst.malloc::<u8>(0), Code::InvalidValue);
    check_code!(inst.malloc_raw(inst.heap_size() + 1), Code::MallocFailed);
    check_code!(inst.malloc_raw(inst.heap_size()), Code::MallocFailed); // the reserve is in use
    check_code!(inst.align::<u8>(3, 64), Code::InvalidValue);
    check_code!(inst.align::<u8>(0, 64), Code::InvalidValue);
    check_code!(inst.align_raw(48, 64), Code::InvalidValue);
    check_code!(inst.calloc_raw(usize::MAX / 2, 4), Code::InvalidValue);
    check_code!(inst.malloc::<u64>(usize::MAX / 4), Code::InvalidValue);
    check_eq!(
        inst.heap_free(),
        before,
        "a failed request changed the heap"
    );
    // The heap still works, from the first user offset.
    let ok = inst.malloc_raw(64)?;
    check_eq!(ok, FIRST_USER);
    inst.free_raw(ok)?;
    inst.finalize()?;
    Ok(())
}

fn double_and_interior_free(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let a = inst.malloc_raw(256)?;
    let b = inst.malloc_raw(256)?;
    let free_before = inst.heap_free();
    check_code!(inst.free_raw(a + 16), Code::InvalidParam); // interior pointer
    check_eq!(
        inst.heap_free(),
        free_before,
        "an interior free changed the heap"
    );
    inst.free_raw(a)?;
    let after_one = inst.heap_free();
    check_code!(inst.free_raw(a), Code::InvalidParam); // double free
    check_eq!(
        inst.heap_free(),
        after_one,
        "a double free changed the heap"
    );
    check_code!(inst.free_raw(inst.heap_size() + 4096), Code::InvalidParam); // never allocated
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
    inst.free_raw(b)?;
    inst.finalize()?;
    Ok(())
}

fn cann_free_merge(ctx: &Ctx) -> Outcome {
    // CANN's free_merge test, with local_mem_size = 4 MiB (heap 10 MiB, 0x520200 reserved).
    let inst = ctx.world_with(4 << 20)?;
    let blocks: Vec<usize> = (0..4)
        .map(|_| inst.malloc_raw(MIB))
        .collect::<Result<_, _>>()?;
    check_eq!(blocks[0], FIRST_USER);
    inst.free_raw(blocks[1])?;
    inst.free_raw(blocks[3])?;
    // Two holes of 1 MiB and 1.875 MiB: 2 MiB fits in neither.
    check_code!(inst.malloc_raw(2 * MIB), Code::MallocFailed);
    // Freeing block 2 merges the holes into one of 3.875 MiB: now 3 MiB fits.
    inst.free_raw(blocks[2])?;
    let big = inst.malloc_raw(3 * MIB)?;
    check_eq!(big, blocks[1]);
    inst.free_raw(big)?;
    inst.free_raw(blocks[0])?;
    inst.finalize()?;
    Ok(())
}

fn full_space(ctx: &Ctx) -> Outcome {
    let inst = ctx.world_with(4 << 20)?;
    let room = 10 * MIB - FIRST_USER;
    // local_mem_size itself always fits (the reserve leaves ~0.875 MiB besides).
    let whole = inst.malloc_raw(4 * MIB)?;
    inst.free_raw(whole)?;
    let all = inst.malloc_raw(room)?;
    check_code!(inst.malloc_raw(16), Code::MallocFailed);
    inst.free_raw(all)?;
    check_code!(inst.malloc_raw(room + 1), Code::MallocFailed);
    inst.finalize()?;
    Ok(())
}

fn asymmetric_malloc(ctx: &Ctx) -> Outcome {
    let inst = ctx.world()?;
    let before = inst.heap_free();
    let size = if ctx.pe == 0 { 512 } else { 1024 };
    let e = check_code!(inst.malloc_raw(size), Code::MallocFailed);
    check!(e.to_string().contains("not symmetric"), "{e}");
    check_eq!(inst.heap_free(), before, "the refused allocation was kept");
    // The PEs are still in step: a symmetric allocation works.
    let ok = inst.malloc_raw(64)?;
    inst.free_raw(ok)?;
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
            inst.free_raw(live.swap_remove(k))?;
        } else {
            let size = 16 + (x as usize % 65536);
            let off = if i % 4 == 0 {
                inst.align_raw(4096, size)?
            } else {
                inst.malloc_raw(size)?
            };
            live.push(off);
        }
    }
    for off in live {
        inst.free_raw(off)?;
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
