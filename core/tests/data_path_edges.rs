//! The inline data path (put, get and atomics on the default context, performed at once when
//! the simulator completes them so) and its general path agree at every edge: the last word of
//! the heap is reachable, a byte beyond it, an address below it or in the library's reserved
//! blocks, a PE out of range, a misaligned word or a finalized instance is refused with the
//! error the general path names, and a refused call writes nothing.

use shmem::{AmoOp, Attributes, Error, InitMode, Instance};

/// A job of one PE on instance `id` (each test its own, as they run at once), met through a
/// key of this process alone.
fn one_pe(id: u64) -> Instance {
    let mut attrs = Attributes::new(0, 1, "", 2 << 20);
    attrs.mode = InitMode::JobLocal(format!("data-path-edges:{}", std::process::id()));
    attrs.instance_id = id;
    Instance::init(&attrs).expect("a job of one PE")
}

#[test]
fn the_inline_path_refuses_what_the_general_path_refuses() {
    let inst = one_pe(0);
    let c = inst.default_ctx();
    let (base, size) = (inst.heap_base(), inst.heap_size());
    // Addresses are computed with wrapping arithmetic: the library translates them and never
    // dereferences one outside the heap.
    let last = base.wrapping_add(size - 8);

    // The last word of the heap, by address and by handle.
    c.put_to(last, &7u64.to_ne_bytes(), 0)
        .expect("the last word");
    let mut got = [0u8; 8];
    c.get_from(last, &mut got, 0).expect("the last word back");
    assert_eq!(u64::from_ne_bytes(got), 7);
    assert_eq!(
        c.atomic_at(last.cast::<u64>(), AmoOp::Add(1), 0)
            .expect("an atomic on the last word"),
        7
    );
    let tail = inst
        .view::<u64>(size - 8, 1)
        .expect("a view of the last word");
    tail.put(&[9], 0).expect("a put through the view");
    let mut v = [0u64];
    tail.get(&mut v, 0).expect("a get through the view");
    assert_eq!(v, [9]);
    assert_eq!(tail.elem(0).atomic_fetch_add(1, 0).expect("fetch_add"), 9);
    tail.elem(0).atomic_add(1, 0).expect("add");
    tail.get(&mut v, 0).expect("a get through the view");
    assert_eq!(v, [11]);

    // Four bytes over the end, an address below the heap, one at the top of the address
    // space, and the heap's first words and its synchronisation pool (the library's reserved
    // blocks, which barriers and collectives wait on): not symmetric, and nothing is written.
    let over = base.wrapping_add(size - 4);
    let reserved = [base, base.wrapping_add(0x200)];
    for addr in [over, base.wrapping_sub(8), usize::MAX as *mut u8]
        .into_iter()
        .chain(reserved)
    {
        let e = c.put_to(addr, &[1u8; 8], 0).expect_err("outside the heap");
        assert!(matches!(e, Error::InvalidParam(_)), "{e}");
        let e = c.get_from(addr, &mut got, 0).expect_err("outside the heap");
        assert!(matches!(e, Error::InvalidParam(_)), "{e}");
        let e = c
            .atomic_at(addr.cast::<u64>(), AmoOp::Add(1), 0)
            .expect_err("outside the heap");
        assert!(
            matches!(e, Error::InvalidParam(_) | Error::Misaligned(_)),
            "{e}"
        );
    }
    tail.get(&mut v, 0).expect("a get through the view");
    assert_eq!(v, [11], "a refused call wrote to the heap");

    // A misaligned word.
    let e = c
        .atomic_at(last.wrapping_sub(4).cast::<u64>(), AmoOp::Add(1), 0)
        .expect_err("misaligned");
    assert!(matches!(e, Error::Misaligned(_)), "{e}");

    // A PE out of range, by address and by handle.
    for e in [
        c.put_to(last, &[0u8; 8], 1).expect_err("PE 1 of 1"),
        c.get_from(last, &mut got, 1).expect_err("PE 1 of 1"),
        c.atomic_at(last.cast::<u64>(), AmoOp::Add(1), 1)
            .map(drop)
            .expect_err("PE 1 of 1"),
        tail.put(&[0], 1).expect_err("PE 1 of 1"),
        tail.get(&mut v, 1).expect_err("PE 1 of 1"),
        tail.elem(0).atomic_add(1, 1).expect_err("PE 1 of 1"),
        tail.elem(0)
            .atomic_fetch_add(1, u32::MAX)
            .map(drop)
            .expect_err("PE u32::MAX"),
    ] {
        assert!(
            matches!(
                e,
                Error::InvalidPe {
                    pe: 1 | 4294967295,
                    n_pes: 1
                }
            ),
            "{e}"
        );
    }
    tail.get(&mut v, 0).expect("a get through the view");
    assert_eq!(v, [11], "a refused call wrote to the heap");

    // After finalize, every path names the instance as not initialised.
    inst.finalize().expect("finalize");
    for e in [
        c.put_to(last, &[0u8; 8], 0).expect_err("finalized"),
        c.get_from(last, &mut got, 0).expect_err("finalized"),
        c.atomic_at(last.cast::<u64>(), AmoOp::Add(1), 0)
            .map(drop)
            .expect_err("finalized"),
        tail.put(&[0], 0).expect_err("finalized"),
        tail.elem(0).atomic_add(1, 0).expect_err("finalized"),
        inst.quiet().expect_err("finalized"),
    ] {
        assert!(matches!(e, Error::NotInitialized { .. }), "{e}");
    }
}

#[test]
fn a_lock_word_overwritten_while_held_fails_its_clear_instead_of_waiting_forever() {
    let inst = one_pe(1);
    let lock = inst.calloc::<i64>(1).expect("a lock word");
    let word = lock.elem(0);
    assert!(word.test_lock().expect("test_lock"), "a free lock is taken");
    // A plain put over the held lock (a program error): the tail no longer names its holder.
    lock.as_slice()
        .put(&[0], 0)
        .expect("a put over the lock word");
    let e = word.clear_lock().expect_err("the word is corrupt");
    assert!(e.to_string().contains("corrupt"), "{e}");
    // The lock is this PE's no more, and a fresh one works again.
    word.set_lock().expect("set_lock after the failed clear");
    word.clear_lock().expect("clear_lock");
    lock.free().expect("free");
    inst.finalize().expect("finalize");
}
