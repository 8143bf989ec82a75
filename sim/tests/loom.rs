//! Loom models of the protocols a program builds on the simulator's accesses, with the
//! orderings the accesses use (`shmem_sim::ordering`), on the weak memory model loom explores
//! (as on aarch64, where Ascend hosts run): a put of the data, a fence and a `p` of a flag; a
//! `g` (or a get) of the flag and then of the data; a put-with-signal; a barrier. A plain
//! put's bytes are modelled as relaxed atomic stores and a get's as relaxed loads followed by
//! the get's fence, which is what the simulator's copies guarantee at most.
//!
//! The last model weakens one ordering on purpose and expects loom to find the stale read, so
//! the models are known to be able to fail.

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering, fence};
use loom::thread;
use shmem_sim::ordering::{FENCE, GET, PUT, QUIET, RMW, SIGNAL_SET, WAIT};

/// A put of `v` into a word of the peer's segment (the stores of `access::put`/`copy`).
fn put(word: &AtomicU64, v: u64) {
    word.store(v, PUT);
}

/// A get of a word longer than a scalar: relaxed loads, then the get's fence.
fn get(word: &AtomicU64) -> u64 {
    let v = word.load(Ordering::Relaxed);
    fence(GET);
    v
}

/// A `g` of an aligned scalar: one load.
fn g(word: &AtomicU64) -> u64 {
    word.load(GET)
}

/// Spins (yielding to loom) until `word` reaches `v`, as a wait does.
fn wait_until_ge(word: &AtomicU64, v: u64) {
    while word.load(WAIT) < v {
        thread::yield_now();
    }
}

/// The data word and the flag word of one PE's segment, and a writer PE that puts `value`
/// into the data, fences, and sets the flag with a `p`.
fn fenced_writer(value: u64) -> (Arc<AtomicU64>, Arc<AtomicU64>, thread::JoinHandle<()>) {
    let (data, flag) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (d, f) = (data.clone(), flag.clone());
    let writer = thread::spawn(move || {
        put(&d, value);
        fence(FENCE);
        put(&f, 1); // p of the flag
    });
    (data, flag, writer)
}

#[test]
fn put_fence_p_then_g_sees_the_data() {
    loom::model(|| {
        let (data, flag, writer) = fenced_writer(42);
        if g(&flag) == 1 {
            assert_eq!(g(&data), 42, "the flag overtook the fenced data");
        }
        writer.join().unwrap();
    });
}

#[test]
fn get_of_the_flag_then_get_of_the_data() {
    loom::model(|| {
        let (data, flag, writer) = fenced_writer(7);
        if get(&flag) == 1 {
            assert_eq!(get(&data), 7);
        }
        writer.join().unwrap();
    });
}

#[test]
fn put_with_signal_set_and_add_deliver_the_data_first() {
    for add in [false, true] {
        loom::model(move || {
            let (data, sig) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let (d, s) = (data.clone(), sig.clone());
            let writer = thread::spawn(move || {
                put(&d, 9);
                if add {
                    s.fetch_add(1, RMW);
                } else {
                    s.store(1, SIGNAL_SET);
                }
            });
            wait_until_ge(&sig, 1);
            assert_eq!(get(&data), 9, "the signal overtook its data (add: {add})");
            writer.join().unwrap();
        });
    }
}

#[test]
fn barrier_makes_every_put_before_it_visible_after_it() {
    loom::model(|| {
        // Two PEs: each puts into the other's data word, quiets, signals its arrival to the
        // other, waits for the other's arrival and reads its own data word.
        let data = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        let arrive = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        let pe = |me: usize| {
            let (data, arrive) = (data.clone(), arrive.clone());
            move || {
                let other = 1 - me;
                put(&data[other], 100 + me as u64);
                fence(QUIET);
                arrive[other].fetch_add(1, RMW);
                wait_until_ge(&arrive[me], 1);
                assert_eq!(get(&data[me]), 100 + other as u64);
            }
        };
        let t = thread::spawn(pe(1));
        pe(0)();
        t.join().unwrap();
    });
}

#[test]
#[should_panic(expected = "stale")]
fn a_relaxed_flag_read_is_caught() {
    loom::model(|| {
        let (data, flag, writer) = fenced_writer(42);
        // A `g` without acquire: the data may still be stale, and loom finds the execution.
        if flag.load(Ordering::Relaxed) == 1 {
            assert_eq!(
                data.load(Ordering::Relaxed),
                42,
                "stale data behind the flag"
            );
        }
        writer.join().unwrap();
    });
}
