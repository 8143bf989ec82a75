//! The simulator transport with several PEs played by threads of one process. The segments,
//! the descriptor exchange and every data path are the real ones; only the bootstrap is an
//! in-process stand-in.

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use shmem_backend::{
    AmoOp, Cmp, Exchange, Pe, ScalarKind, SegmentSpec, Signal, SignalOp, Strided, Transport,
    TransportError, WaitCtl, Watch, Width,
};
use shmem_sim::{SimSettings, SimTransport, WaitPolicy};

/// An allgather/barrier between threads.
struct ThreadExchange {
    pe: usize,
    slots: Arc<Mutex<Vec<Vec<u8>>>>,
    barrier: Arc<Barrier>,
}

impl Exchange for ThreadExchange {
    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> {
        self.slots.lock().unwrap()[self.pe] = mine.to_vec();
        self.barrier.wait();
        let all = self.slots.lock().unwrap().clone();
        self.barrier.wait();
        Ok(all)
    }
    fn barrier(&mut self) -> Result<(), TransportError> {
        self.barrier.wait();
        Ok(())
    }
}

/// Runs `body(pe, transport, barrier)` on `n` threads, each with its own transport.
fn run<F>(n: u32, size: usize, settings: SimSettings, body: F)
where
    F: Fn(Pe, &SimTransport, &Barrier) + Send + Sync + 'static,
{
    let slots = Arc::new(Mutex::new(vec![Vec::new(); n as usize]));
    let barrier = Arc::new(Barrier::new(n as usize));
    let body = Arc::new(body);
    let threads: Vec<_> = (0..n)
        .map(|pe| {
            let (slots, barrier, body, settings) = (
                slots.clone(),
                barrier.clone(),
                body.clone(),
                settings.clone(),
            );
            std::thread::spawn(move || {
                let spec = SegmentSpec {
                    my_pe: pe,
                    n_pes: n,
                    size,
                    label: "test".into(),
                    timeout: Duration::from_secs(10),
                };
                let mut ex = ThreadExchange {
                    pe: pe as usize,
                    slots,
                    barrier: barrier.clone(),
                };
                let t = SimTransport::open_with(&spec, &mut ex, settings).expect("open");
                body(pe, &t, &barrier);
                barrier.wait();
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a PE thread panicked");
    }
}

fn ctl(what: &str) -> WaitCtl<'_> {
    WaitCtl::new(Some(Instant::now() + Duration::from_secs(10)), what)
}

#[test]
fn ring_put_get_across_four_pes() {
    run(4, 1 << 20, SimSettings::default(), |pe, t, b| {
        let q = t.new_queue();
        let right = (pe + 1) % 4;
        let msg = [pe as u8 + 1; 256];
        t.put(&q, right, 4096, &msg).unwrap();
        t.quiet(&q).unwrap();
        b.wait();
        let mut got = [0u8; 256];
        t.get(&q, pe, 4096, &mut got).unwrap();
        let left = (pe + 3) % 4;
        assert_eq!(got, [left as u8 + 1; 256]);
        // Read a peer's segment directly too.
        t.get(&q, right, 4096, &mut got).unwrap();
        assert_eq!(got, [pe as u8 + 1; 256]);
        // Load/store address translation: the same bytes through the mapping.
        let p = t.segment_ptr(right).unwrap();
        // SAFETY: offset 4096 lies inside the 1 MiB segment; the value was written above.
        let through_ptr = unsafe { p.as_ptr().add(4096).read_volatile() };
        assert_eq!(through_ptr, pe as u8 + 1);
    });
}

#[test]
fn bounds_and_alignment_are_errors() {
    run(2, 1 << 20, SimSettings::default(), |_pe, t, _b| {
        let q = t.new_queue();
        let size = t.segment_size();
        assert!(matches!(
            t.put(&q, 2, 0, b"x"),
            Err(TransportError::InvalidPe { pe: 2, n_pes: 2 })
        ));
        assert!(matches!(
            t.put(&q, 1, size - 1, b"xy"),
            Err(TransportError::OutOfBounds { .. })
        ));
        assert!(matches!(
            t.put(&q, 1, usize::MAX, b"xy"),
            Err(TransportError::OutOfBounds { .. })
        ));
        assert!(matches!(
            t.atomic(&q, 1, 4, Width::W64, AmoOp::Fetch),
            Err(TransportError::Misaligned { .. })
        ));
        let mut buf = [0u8; 8];
        let r = t.iget(
            &q,
            1,
            Strided {
                first: 0,
                stride: 16,
            },
            &mut buf,
            Strided::contiguous(0, 4),
            4,
            4,
        );
        assert!(matches!(r, Err(TransportError::LocalBuffer { .. })));
        let r = t.iput(
            &q,
            1,
            Strided {
                first: size - 8,
                stride: 8,
            },
            &[0u8; 16],
            Strided::contiguous(0, 8),
            8,
            2,
        );
        assert!(matches!(r, Err(TransportError::OutOfBounds { .. })));
        t.put(&q, 1, size - 2, b"ok").unwrap();
    });
}

#[test]
fn strided_put_and_get() {
    run(2, 1 << 20, SimSettings::default(), |pe, t, b| {
        let q = t.new_queue();
        if pe == 0 {
            let src: Vec<u32> = (0..8).collect();
            let bytes: &[u8] = bytemuck_cast(&src);
            // Every other source element, to every third target slot, starting at offset 64.
            t.iput(
                &q,
                1,
                Strided {
                    first: 64,
                    stride: 12,
                },
                bytes,
                Strided {
                    first: 0,
                    stride: 8,
                },
                4,
                4,
            )
            .unwrap();
        }
        b.wait();
        if pe == 1 {
            let mut out = [0u8; 16];
            t.iget(
                &q,
                1,
                Strided {
                    first: 64,
                    stride: 12,
                },
                &mut out,
                Strided::contiguous(0, 4),
                4,
                4,
            )
            .unwrap();
            let vals: Vec<u32> = out
                .chunks(4)
                .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(vals, vec![0, 2, 4, 6]);
            // Negative stride: read them back in reverse.
            t.iget(
                &q,
                1,
                Strided {
                    first: 64 + 36,
                    stride: -12,
                },
                &mut out,
                Strided::contiguous(0, 4),
                4,
                4,
            )
            .unwrap();
            let vals: Vec<u32> = out
                .chunks(4)
                .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(vals, vec![6, 4, 2, 0]);
        }
    });
}

fn bytemuck_cast(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len() * 4) }
}

#[test]
fn atomics_from_every_pe_add_up() {
    for policy in [WaitPolicy::Adaptive, WaitPolicy::Sleep, WaitPolicy::Yield] {
        let settings = SimSettings {
            wait_policy: policy,
            ..SimSettings::default()
        };
        run(4, 1 << 20, settings, |pe, t, b| {
            let q = t.new_queue();
            for _ in 0..1000 {
                t.atomic(&q, 0, 128, Width::W64, AmoOp::Add(1)).unwrap();
                t.atomic(&q, 0, 136, Width::W32, AmoOp::Add(2)).unwrap();
            }
            t.atomic(&q, 0, 144, Width::W64, AmoOp::Or(1 << pe))
                .unwrap();
            b.wait();
            if pe == 0 {
                assert_eq!(t.load(128, Width::W64).unwrap(), 4000);
                assert_eq!(t.load(136, Width::W32).unwrap(), 8000);
                assert_eq!(t.load(144, Width::W64).unwrap(), 0b1111);
            }
        });
    }
}

#[test]
fn signals_wake_a_sleeping_waiter() {
    let settings = SimSettings {
        wait_policy: WaitPolicy::Sleep,
        ..SimSettings::default()
    };
    run(2, 1 << 20, settings, |pe, t, _b| {
        let q = t.new_queue();
        // Ping-pong 200 rounds through 32-bit signal words: each side sleeps on its futex.
        for round in 1..=200u64 {
            if pe == 0 {
                t.put_signal(
                    &q,
                    1,
                    1024,
                    &round.to_ne_bytes(),
                    Signal {
                        offset: 512,
                        width: Width::W32,
                        op: SignalOp::Set,
                        value: round,
                    },
                )
                .unwrap();
                t.wait_local(
                    Watch::word(512, Width::W32),
                    &mut || {
                        ScalarKind::U32.compare(Cmp::Ge, t.load(512, Width::W32).unwrap(), round)
                    },
                    &ctl("pong"),
                )
                .unwrap();
            } else {
                t.wait_local(
                    Watch::word(512, Width::W32),
                    &mut || {
                        ScalarKind::U32.compare(Cmp::Ge, t.load(512, Width::W32).unwrap(), round)
                    },
                    &ctl("ping"),
                )
                .unwrap();
                // The data of a put_signal is visible once the signal is.
                let mut data = [0u8; 8];
                t.get(&q, 1, 1024, &mut data).unwrap();
                assert_eq!(u64::from_ne_bytes(data), round);
                t.signal(
                    &q,
                    0,
                    Signal {
                        offset: 512,
                        width: Width::W32,
                        op: SignalOp::Add,
                        value: 1,
                    },
                )
                .unwrap();
            }
        }
    });
}

#[test]
fn a_wait_times_out_and_a_liveness_failure_ends_it() {
    run(
        1,
        1 << 20,
        SimSettings {
            wait_policy: WaitPolicy::Sleep,
            ..SimSettings::default()
        },
        |_pe, t, _b| {
            let start = Instant::now();
            let r = t.wait_local(
                Watch::ANY,
                &mut || false,
                &WaitCtl::new(Some(Instant::now() + Duration::from_millis(50)), "nothing"),
            );
            assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
            assert!(start.elapsed() < Duration::from_secs(2));
            let dead = || {
                Err(TransportError::PeerLost {
                    pe: 3,
                    detail: "test".into(),
                })
            };
            let r = t.wait_local(
                Watch::ANY,
                &mut || false,
                &WaitCtl {
                    deadline: None,
                    what: "x",
                    liveness: &dead,
                },
            );
            assert!(
                matches!(r, Err(TransportError::PeerLost { pe: 3, .. })),
                "{r:?}"
            );
        },
    );
}

#[test]
fn strict_mode_holds_non_blocking_puts_until_quiet() {
    let settings = SimSettings {
        strict: true,
        strict_seed: Some(7),
        strict_early: 0.0,
        ..SimSettings::default()
    };
    run(2, 1 << 20, settings, |pe, t, b| {
        let q = t.new_queue();
        let value = 0xabcd_u64.to_ne_bytes();
        if pe == 0 {
            // SAFETY: `value` outlives the quiet below.
            unsafe { t.put_nbi(&q, 1, 256, value.as_ptr(), 8).unwrap() };
        }
        b.wait();
        if pe == 1 {
            assert_eq!(
                t.load(256, Width::W64).unwrap(),
                0,
                "a non-blocking put completed before quiet in strict mode"
            );
        }
        b.wait();
        if pe == 0 {
            t.quiet(&q).unwrap();
        }
        b.wait();
        if pe == 1 {
            assert_eq!(t.load(256, Width::W64).unwrap(), 0xabcd);
        }
        b.wait();
        // A get_nbi's destination is filled at quiet, not before.
        if pe == 1 {
            let mut dst = [0u8; 8];
            // SAFETY: `dst` is not touched until after the quiet.
            unsafe { t.get_nbi(&q, 1, 256, dst.as_mut_ptr(), 8).unwrap() };
            let early = dst;
            t.quiet(&q).unwrap();
            assert_eq!(early, [0u8; 8]);
            assert_eq!(u64::from_ne_bytes(dst), 0xabcd);
        }
    });
}

#[test]
fn strict_mode_keeps_fence_order_for_a_blocking_put() {
    let settings = SimSettings {
        strict: true,
        strict_seed: Some(3),
        strict_early: 0.0,
        ..SimSettings::default()
    };
    run(2, 1 << 20, settings, |pe, t, b| {
        let q = t.new_queue();
        if pe == 0 {
            let data = 42u64.to_ne_bytes();
            // SAFETY: `data` outlives the quiet below.
            unsafe { t.put_nbi(&q, 1, 0, data.as_ptr(), 8).unwrap() };
            t.fence(&q).unwrap();
            t.put(&q, 1, 8, &1u64.to_ne_bytes()).unwrap();
        }
        b.wait();
        if pe == 1 {
            // The flag arrived, so what the fence ordered before it has too.
            assert_eq!(t.load(8, Width::W64).unwrap(), 1);
            assert_eq!(t.load(0, Width::W64).unwrap(), 42);
        }
        b.wait();
        if pe == 0 {
            t.quiet(&q).unwrap();
        }
    });
}
