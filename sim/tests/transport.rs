//! The simulator transport with several PEs played by threads of one process. The segments,
//! the descriptor exchange and every data path are the real ones; only the bootstrap is an
//! in-process stand-in.
//!
//! The transport trusts its caller (the core validates every access), so every call here is
//! `unsafe` with in-bounds arguments; the core's checks are tested by the conformance suite.

mod common;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{load64, run, run_with, strict};
use shmem_backend::{
    AmoOp, BarrierSpec, Capabilities, Cmp, Deadline, Local, LocalMut, Patient, ScalarKind, Signal,
    SignalOp, Strided, Transport, TransportError, WaitWord, Watch, Watchdog, Width,
};
use shmem_sim::{SimSettings, SimTransport, Stream, WaitPolicy};

#[test]
fn ring_put_get_across_four_pes() {
    run(4, SimSettings::default(), |pe, t, b| {
        let q = t.new_queue();
        let right = (pe + 1) % 4;
        let msg = [pe as u8 + 1; 256];
        let mut got = [0u8; 256];
        // SAFETY: every PE exists and every range lies inside the 1 MiB segment.
        unsafe {
            t.put(&q, right, 4096, Local::Host(&msg)).unwrap();
            t.quiet(&q).unwrap();
            b.wait();
            t.get(&q, pe, 4096, LocalMut::Host(&mut got)).unwrap();
            let left = (pe + 3) % 4;
            assert_eq!(got, [left as u8 + 1; 256]);
            // Read a peer's segment directly too.
            t.get(&q, right, 4096, LocalMut::Host(&mut got)).unwrap();
        }
        assert_eq!(got, [pe as u8 + 1; 256]);
        // The symmetric address and the host mapping are the same place on the simulator.
        let p = t.host_mapping(right).unwrap();
        assert_eq!(p.as_ptr() as u64, t.segment_base(right));
        // SAFETY: offset 4096 lies inside the 1 MiB segment; the value was written above.
        let through_ptr = unsafe { p.as_ptr().add(4096).read_volatile() };
        assert_eq!(through_ptr, pe as u8 + 1);
    });
}

#[test]
fn the_cann_capabilities_hide_the_host_mapping() {
    run_with(
        1,
        SimSettings::default(),
        Capabilities::CANN,
        Arc::new(Patient),
        |_pe, t, _b| {
            let caps = t.profile().caps;
            assert!(!caps.host_atomics && !caps.host_mapping);
            assert!(caps.streams && caps.device_memory);
            assert!(t.host_mapping(0).is_none());
            assert_ne!(t.segment_base(0), 0, "the symmetric address stays");
        },
    );
}

#[test]
fn strided_put_and_get() {
    run(2, SimSettings::default(), |pe, t, b| {
        let q = t.new_queue();
        if pe == 0 {
            let src: Vec<u32> = (0..8).collect();
            // Every other source element, to every third target slot, starting at offset 64.
            // SAFETY: the strided spans lie inside the segment and the source.
            unsafe {
                t.iput(
                    &q,
                    1,
                    Strided {
                        first: 64,
                        stride: 12,
                    },
                    Local::Host(bytemuck_cast(&src)),
                    Strided {
                        first: 0,
                        stride: 8,
                    },
                    4,
                    4,
                )
            }
            .unwrap();
        }
        b.wait();
        if pe == 1 {
            let mut out = [0u8; 16];
            let read = |t: &SimTransport, first, stride, out: &mut [u8; 16]| {
                // SAFETY: the strided span lies inside the segment and the buffer.
                unsafe {
                    t.iget(
                        &q,
                        1,
                        Strided { first, stride },
                        LocalMut::Host(out),
                        Strided::contiguous(0, 4),
                        4,
                        4,
                    )
                }
                .unwrap();
                out.chunks(4)
                    .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
                    .collect::<Vec<u32>>()
            };
            assert_eq!(read(t, 64, 12, &mut out), vec![0, 2, 4, 6]);
            // Negative stride: read them back in reverse.
            assert_eq!(read(t, 64 + 36, -12, &mut out), vec![6, 4, 2, 0]);
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
        run(4, settings, |pe, t, b| {
            let q = t.new_queue();
            // SAFETY: aligned words inside PE 0's segment.
            unsafe {
                for _ in 0..1000 {
                    t.atomic(&q, 0, 128, Width::W64, AmoOp::Add(1)).unwrap();
                    t.atomic(&q, 0, 136, Width::W32, AmoOp::Add(2)).unwrap();
                }
                t.atomic(&q, 0, 144, Width::W64, AmoOp::Or(1 << pe))
                    .unwrap();
            }
            b.wait();
            if pe == 0 {
                assert_eq!(load64(t, 128), 4000);
                // SAFETY: an aligned word inside the segment.
                assert_eq!(unsafe { t.load(136, Width::W32) }.unwrap(), 8000);
                assert_eq!(load64(t, 144), 0b1111);
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
    run(2, settings, |pe, t, _b| {
        let q = t.new_queue();
        let word = |round| WaitWord {
            offset: 512,
            kind: ScalarKind::U32,
            cmp: Cmp::Ge,
            value: round,
            count: false,
        };
        // Ping-pong 200 rounds through 32-bit signal words: each side sleeps on its futex.
        for round in 1..=200u64 {
            // SAFETY: PEs 0 and 1 exist; every word and range lies inside the segment.
            unsafe {
                if pe == 0 {
                    let sig = Signal {
                        offset: 512,
                        width: Width::W32,
                        op: SignalOp::Set,
                        value: round,
                    };
                    t.put_signal(&q, 1, 1024, Local::Host(&round.to_ne_bytes()), sig)
                        .unwrap();
                    assert_eq!(t.wait_until(&q, word(round), &"pong").unwrap(), Some(round));
                } else {
                    t.wait_until(&q, word(round), &"ping").unwrap();
                    // The data of a put_signal is visible once the signal is.
                    assert_eq!(load64(t, 1024), round);
                    let sig = Signal {
                        offset: 512,
                        width: Width::W32,
                        op: SignalOp::Add,
                        value: 1,
                    };
                    t.signal(&q, 0, sig).unwrap();
                }
            }
        }
    });
}

/// A watchdog that reports a lost PE.
struct Lost;

impl Watchdog for Lost {
    fn check(&self, _: Duration, _: &dyn fmt::Display) -> Result<(), TransportError> {
        Err(TransportError::PeerLost {
            pe: 3,
            detail: "test".into(),
        })
    }
}

#[test]
fn the_watchdog_ends_a_wait() {
    let sleep = SimSettings {
        wait_policy: WaitPolicy::Sleep,
        ..SimSettings::default()
    };
    run_with(
        1,
        sleep.clone(),
        Capabilities::ALL,
        Arc::new(Deadline(Duration::from_millis(50))),
        |_pe, t, _b| {
            let start = Instant::now();
            let r = t.wait_local(Watch::ANY, &"nothing", &mut || Ok(false));
            match r {
                Err(TransportError::Timeout { what, .. }) => assert_eq!(what, "nothing"),
                other => panic!("{other:?}"),
            }
            assert!(start.elapsed() < Duration::from_secs(10));
        },
    );
    run_with(1, sleep, Capabilities::ALL, Arc::new(Lost), |_pe, t, _b| {
        let r = t.wait_local(Watch::ANY, &"x", &mut || Ok(false));
        assert!(
            matches!(r, Err(TransportError::PeerLost { pe: 3, .. })),
            "{r:?}"
        );
        // An error from the predicate ends the wait with it.
        let r = t.wait_local(Watch::ANY, &"y", &mut || {
            Err(TransportError::Attach("from the predicate".into()))
        });
        assert!(matches!(r, Err(TransportError::Attach(_))), "{r:?}");
    });
}

#[test]
fn strict_mode_holds_non_blocking_puts_until_quiet() {
    run(2, strict(), |pe, t, b| {
        let q = t.new_queue();
        let value = 0xabcd_u64.to_ne_bytes();
        if pe == 0 {
            // SAFETY: `value` outlives the quiet below; the range is inside the segment.
            unsafe { t.put_nbi(&q, 1, 256, Local::Host(&value)).unwrap() };
        }
        b.wait();
        if pe == 1 {
            assert_eq!(
                load64(t, 256),
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
            assert_eq!(load64(t, 256), 0xabcd);
        }
        b.wait();
        // A get_nbi's destination is filled at quiet, not before.
        if pe == 1 {
            let mut dst = [0u8; 8];
            let p = dst.as_mut_ptr();
            // SAFETY: `dst` is not touched until after the quiet.
            unsafe {
                t.get_nbi(
                    &q,
                    1,
                    256,
                    LocalMut::Host(std::slice::from_raw_parts_mut(p, 8)),
                )
                .unwrap()
            };
            // SAFETY: a read of a local array the held get has not written yet.
            let early = unsafe { p.cast::<[u8; 8]>().read_volatile() };
            t.quiet(&q).unwrap();
            assert_eq!(early, [0u8; 8]);
            assert_eq!(u64::from_ne_bytes(dst), 0xabcd);
        }
    });
}

#[test]
fn strict_mode_keeps_fence_order_for_a_blocking_put() {
    let settings = SimSettings {
        strict_seed: Some(3),
        ..strict()
    };
    run(2, settings, |pe, t, b| {
        let q = t.new_queue();
        if pe == 0 {
            let data = 42u64.to_ne_bytes();
            // SAFETY: `data` outlives the quiet below; the ranges are inside the segment.
            unsafe {
                t.put_nbi(&q, 1, 0, Local::Host(&data)).unwrap();
                t.fence(&q).unwrap();
                t.put(&q, 1, 8, Local::Host(&1u64.to_ne_bytes())).unwrap();
            }
        }
        if pe == 1 {
            // The blocking put arrives without a quiet (strict mode's delivery thread), and
            // once it has, what the fence ordered before it has too.
            let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while load64(t, 8) != 1 {
                assert!(std::time::Instant::now() < end, "the flag never arrived");
                std::thread::yield_now();
            }
            assert_eq!(load64(t, 0), 42);
        }
        b.wait();
        if pe == 0 {
            t.quiet(&q).unwrap();
        }
    });
}

#[test]
fn stream_work_runs_in_order_with_waits_and_barriers() {
    run(2, SimSettings::default(), |pe, t, _b| {
        let stream = Stream::new(false);
        let q = t.stream_queue(&stream).unwrap();
        let plain = t.new_queue();
        let peer = 1 - pe;
        let sig = |value| Signal {
            offset: 64,
            width: Width::W64,
            op: SignalOp::Set,
            value,
        };
        let barrier = |epoch| BarrierSpec {
            start: 0,
            stride: 1,
            size: 2,
            rank: pe,
            arrive: 128,
            release: 192,
            epoch,
            world: true,
        };
        // SAFETY: both PEs exist and every word and range lies inside the segment.
        unsafe {
            // Two puts to one place in stream order: the second wins.
            t.put(&q, peer, 1024, Local::Host(&1u64.to_ne_bytes()))
                .unwrap();
            t.put(&q, peer, 1024, Local::Host(&2u64.to_ne_bytes()))
                .unwrap();
            // A barrier on the stream, then a wait on the stream that a host signal satisfies.
            t.barrier(&q, &barrier(1), &"the stream barrier").unwrap();
            let w = WaitWord {
                offset: 64,
                kind: ScalarKind::U64,
                cmp: Cmp::Eq,
                value: 7,
                count: false,
            };
            assert_eq!(t.wait_until(&q, w, &"the host signal").unwrap(), None);
            // Work after the wait runs only once the signal came.
            t.put(&q, peer, 2048, Local::Host(&3u64.to_ne_bytes()))
                .unwrap();
            t.signal(&plain, peer, sig(7)).unwrap();
            t.quiet(&q).unwrap();
            // A get into host memory on a stream returns with the data.
            let mut back = [0u8; 8];
            t.get(&q, peer, 1024, LocalMut::Host(&mut back)).unwrap();
            assert_eq!(u64::from_ne_bytes(back), 2);
            t.barrier(&plain, &barrier(2), &"the host barrier").unwrap();
        }
        assert_eq!(load64(t, 1024), 2);
        assert_eq!(load64(t, 2048), 3);
    });
}

#[test]
fn the_local_side_can_be_the_own_segment_or_device_memory() {
    run(2, SimSettings::default(), |pe, t, b| {
        let q = t.new_queue();
        let peer = 1 - pe;
        let stream = Stream::new(false);
        let sq = t.stream_queue(&stream).unwrap();
        // Simulated device memory: memory of this process, registered with the transport.
        let mut device = vec![0u8; 4096];
        let addr = device.as_mut_ptr() as usize as u64;
        t.register_device(addr, device.len()).unwrap();
        device[..8].copy_from_slice(&(100 + u64::from(pe)).to_ne_bytes());
        // SAFETY: both PEs exist; every range lies inside the segment or the device buffer.
        unsafe {
            t.put(
                &q,
                pe,
                8192,
                Local::Host(&(10 + u64::from(pe)).to_ne_bytes()),
            )
            .unwrap();
            // Own segment -> peer (CANN's symmetric source), on a plain and a stream queue.
            t.put(
                &q,
                peer,
                16384,
                Local::Segment {
                    offset: 8192,
                    len: 8,
                },
            )
            .unwrap();
            t.put(
                &sq,
                peer,
                16392,
                Local::Segment {
                    offset: 8192,
                    len: 8,
                },
            )
            .unwrap();
            // Device memory -> peer.
            t.put(&q, peer, 16400, Local::Device { addr, len: 8 })
                .unwrap();
            t.put_signal(
                &sq,
                peer,
                16408,
                Local::Device { addr, len: 8 },
                Signal {
                    offset: 16416,
                    width: Width::W64,
                    op: SignalOp::Add,
                    value: 1,
                },
            )
            .unwrap();
            t.quiet(&sq).unwrap();
            t.quiet(&q).unwrap();
        }
        b.wait();
        let other = u64::from(peer);
        assert_eq!(load64(t, 16384), 10 + other);
        assert_eq!(load64(t, 16392), 10 + other);
        assert_eq!(load64(t, 16400), 100 + other);
        assert_eq!(load64(t, 16408), 100 + other);
        assert_eq!(load64(t, 16416), 1);
        b.wait();
        // Peer -> own segment and peer -> device memory.
        // SAFETY: as above.
        unsafe {
            t.get(
                &q,
                peer,
                16384,
                LocalMut::Segment {
                    offset: 32768,
                    len: 8,
                },
            )
            .unwrap();
            t.get(
                &sq,
                peer,
                16400,
                LocalMut::Device {
                    addr: addr + 64,
                    len: 8,
                },
            )
            .unwrap();
            t.quiet(&sq).unwrap();
        }
        assert_eq!(load64(t, 32768), 10 + u64::from(pe));
        assert_eq!(
            u64::from_ne_bytes(device[64..72].try_into().unwrap()),
            100 + u64::from(pe)
        );
        t.deregister_device(addr, device.len()).unwrap();
    });
}
