//! Tests of the whole bootstrap: PEs as threads of one process, PE 0 on a pre-bound
//! `127.0.0.1:0` socket (or on a port picked the same way) so tests never collide on ports.
//! Every wait is bounded by the short timeouts configured here.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier as StdBarrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::client::Client;
use super::url::parse_url;
use super::wire::{self, FrameBuf, Hello, Request, Response, ServerFrame};
use super::*;

const SECRET: Secret = Secret([0x5A; 16]);
const LONG: Duration = Duration::from_secs(10);

fn prebound() -> (TcpListener, BootstrapUrl) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local_addr").port();
    let url = parse_url(&format!("tcp://127.0.0.1:{port}")).expect("url");
    (l, url)
}

/// A port that was free a moment ago (for tests where PE 0 binds by itself).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind")
        .port()
}

fn config(url: &BootstrapUrl, pe: u32, n: u32) -> StoreConfig {
    StoreConfig {
        url: url.clone(),
        my_pe: pe,
        n_pes: n,
        instance_id: 0,
        secret: SECRET,
        init_timeout: LONG,
        op_timeout: LONG,
        listener: None,
    }
}

fn spawn_pe(cfg: StoreConfig) -> JoinHandle<Result<StoreBootstrap, BootstrapError>> {
    thread::spawn(move || StoreBootstrap::connect(cfg))
}

/// Connects `n` PEs (PE 0 on `listener`, or binding `url` itself when `None`).
fn job(url: &BootstrapUrl, listener: Option<TcpListener>, n: u32) -> Vec<StoreBootstrap> {
    let mut l = listener;
    let handles: Vec<_> = (0..n)
        .map(|pe| {
            let mut c = config(url, pe, n);
            if pe == 0 {
                c.listener = l.take();
            }
            spawn_pe(c)
        })
        .collect();
    handles
        .into_iter()
        .enumerate()
        .map(|(pe, h)| {
            h.join()
                .expect("PE thread")
                .unwrap_or_else(|e| panic!("PE {pe}: {e}"))
        })
        .collect()
}

/// Runs `f` on every PE in its own thread and returns the results in PE order.
fn on_all<T: Send + 'static>(
    pes: Vec<StoreBootstrap>,
    f: impl Fn(&StoreBootstrap) -> T + Send + Sync + 'static,
) -> Vec<(StoreBootstrap, T)> {
    let f = Arc::new(f);
    let hs: Vec<_> = pes
        .into_iter()
        .map(|bs| {
            let f = f.clone();
            thread::spawn(move || {
                let r = f(&bs);
                (bs, r)
            })
        })
        .collect();
    hs.into_iter()
        .map(|h| h.join().expect("PE thread"))
        .collect()
}

fn finalize_all(pes: Vec<StoreBootstrap>) {
    for (bs, r) in on_all(pes, |bs| bs.finalize()) {
        r.unwrap_or_else(|e| panic!("finalize of PE {}: {e}", bs.my_pe));
    }
}

fn payload(pe: u32, round: u32) -> Vec<u8> {
    let len =
        ((pe as usize * 37 + round as usize * 101) % 300) + if round % 7 == 3 { 20_000 } else { 0 };
    (0..len)
        .map(|i| (i as u32 ^ pe.wrapping_mul(31) ^ round) as u8)
        .collect()
}

#[test]
fn barrier_and_allgather_1_2_4_8() {
    for n in [1u32, 2, 4, 8] {
        let t = Instant::now();
        let (l, url) = prebound();
        let pes = job(&url, Some(l), n);
        let rounds = if n == 8 { 25 } else { 40 };
        let results = on_all(pes, move |bs| -> Result<(), String> {
            for round in 0..rounds {
                bs.barrier().map_err(|e| e.to_string())?;
                let all = bs
                    .allgather(&payload(bs.my_pe, round))
                    .map_err(|e| e.to_string())?;
                if all.len() != n as usize {
                    return Err(format!("{} entries", all.len()));
                }
                for (pe, got) in all.iter().enumerate() {
                    if *got != payload(pe as u32, round) {
                        return Err(format!("round {round}: wrong data from PE {pe}"));
                    }
                }
            }
            // One large contribution (1 MiB per PE) and an empty one.
            let big = vec![bs.my_pe as u8; 1 << 20];
            let all = bs.allgather(&big).map_err(|e| e.to_string())?;
            if all
                .iter()
                .enumerate()
                .any(|(pe, v)| v.len() != 1 << 20 || v[0] != pe as u8)
            {
                return Err("wrong large allgather".into());
            }
            let all = bs.allgather(&[]).map_err(|e| e.to_string())?;
            if all.iter().any(|v| !v.is_empty()) {
                return Err("wrong empty allgather".into());
            }
            bs.check_alive().map_err(|e| e.to_string())
        });
        let mut pes = Vec::new();
        for (bs, r) in results {
            r.unwrap_or_else(|e| panic!("n={n} PE {}: {e}", bs.my_pe));
            pes.push(bs);
        }
        finalize_all(pes);
        println!("n={n}: {} rounds in {:?}", rounds, t.elapsed());
    }
}

#[test]
fn key_value_set_get_wait_add_remove() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 3);
    let results = on_all(pes, |bs| -> Result<(), String> {
        let e = |e: BootstrapError| e.to_string();
        let me = bs.my_pe;
        bs.set(&format!("pe{me}"), format!("hello from {me}").as_bytes())
            .map_err(e)?;
        bs.barrier().map_err(e)?;
        for pe in 0..3 {
            let v = bs.get(&format!("pe{pe}"), None).map_err(e)?;
            if v != format!("hello from {pe}").as_bytes() {
                return Err(format!("pe{pe} = {v:?}"));
            }
        }
        // Waiting get: PE 2 sets the key later.
        match me {
            2 => {
                thread::sleep(Duration::from_millis(50));
                bs.set("late", b"there").map_err(e)?;
            }
            _ => {
                let t = Instant::now();
                let v = bs.get("late", Some(Duration::from_secs(5))).map_err(e)?;
                if v != b"there" || t.elapsed() > Duration::from_secs(4) {
                    return Err(format!("late = {v:?} after {:?}", t.elapsed()));
                }
            }
        }
        // Counters from every PE.
        for _ in 0..10 {
            bs.add("ctr", 1).map_err(e)?;
        }
        bs.barrier().map_err(e)?;
        if bs.add("ctr", 0).map_err(e)? != 30 || bs.get("ctr", None).map_err(e)? != b"30" {
            return Err("counter".into());
        }
        bs.barrier().map_err(e)?;
        if me == 0 {
            // Absent key, no wait.
            match bs.get("nope", None) {
                Err(BootstrapError::NotFound { key }) if key == "nope" => {}
                other => return Err(format!("absent get: {other:?}")),
            }
            // Absent key, short wait.
            let t = Instant::now();
            match bs.get("nope", Some(Duration::from_millis(100))) {
                Err(err @ BootstrapError::Timeout { .. }) => {
                    let m = err.to_string();
                    if !m.contains("\"nope\"") || t.elapsed() < Duration::from_millis(90) {
                        return Err(format!("timeout message {m:?} after {:?}", t.elapsed()));
                    }
                }
                other => return Err(format!("waiting get: {other:?}")),
            }
            // Add to a non-number; overflow.
            bs.set("text", b"abc").map_err(e)?;
            if !matches!(bs.add("text", 1), Err(BootstrapError::Invalid(_))) {
                return Err("add to text".into());
            }
            bs.set("max", i64::MAX.to_string().as_bytes()).map_err(e)?;
            if !matches!(bs.add("max", 1), Err(BootstrapError::Invalid(_))) {
                return Err("overflow".into());
            }
            if bs.add("neg", -5).map_err(e)? != -5 {
                return Err("negative add".into());
            }
            // Overwrite, remove.
            bs.set("pe0", b"again").map_err(e)?;
            if bs.get("pe0", None).map_err(e)? != b"again" {
                return Err("overwrite".into());
            }
            if !bs.remove("pe0").map_err(e)? || bs.remove("pe0").map_err(e)? {
                return Err("remove".into());
            }
            // Limits.
            if !matches!(
                bs.set(&"k".repeat(wire::MAX_KEY + 1), b""),
                Err(BootstrapError::Invalid(_))
            ) {
                return Err("long key".into());
            }
            if !matches!(
                bs.set("big", &vec![0; wire::MAX_BODY]),
                Err(BootstrapError::Invalid(_))
            ) {
                return Err("big value".into());
            }
            // Large values pass.
            let big = vec![7u8; 3 << 20];
            bs.set("large", &big).map_err(e)?;
            if bs.get("large", None).map_err(e)? != big {
                return Err("large value".into());
            }
        }
        Ok(())
    });
    let mut pes = Vec::new();
    for (bs, r) in results {
        r.unwrap_or_else(|e| panic!("PE {}: {e}", bs.my_pe));
        pes.push(bs);
    }
    finalize_all(pes);
}

#[test]
fn threads_of_one_pe_share_it() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 2);
    let results = on_all(pes, |bs| {
        thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || -> Result<(), String> {
                        for i in 0..50 {
                            let key = format!("pe{}-t{t}-{i}", bs.my_pe);
                            bs.set(&key, key.as_bytes()).map_err(|e| e.to_string())?;
                            if bs.get(&key, None).map_err(|e| e.to_string())? != key.as_bytes() {
                                return Err(key);
                            }
                            bs.check_alive().map_err(|e| e.to_string())?;
                            bs.add("shared", 1).map_err(|e| e.to_string())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("thread"))
                .collect::<Result<Vec<()>, String>>()
        })?;
        bs.barrier().map_err(|e| e.to_string())?;
        let total = bs.add("shared", 0).map_err(|e| e.to_string())?;
        if total != 400 {
            return Err(format!("shared = {total}"));
        }
        Ok::<(), String>(())
    });
    let mut pes = Vec::new();
    for (bs, r) in results {
        r.unwrap_or_else(|e| panic!("PE {}: {e}", bs.my_pe));
        pes.push(bs);
    }
    finalize_all(pes);
}

#[test]
fn check_alive_does_not_block_behind_a_request() {
    let (l, url) = prebound();
    let mut pes = job(&url, Some(l), 2);
    let pe1 = Arc::new(pes.pop().expect("PE 1"));
    let pe0 = pes.pop().expect("PE 0");
    let waiter = {
        let pe1 = pe1.clone();
        thread::spawn(move || pe1.barrier())
    };
    thread::sleep(Duration::from_millis(50));
    for _ in 0..100 {
        let t = Instant::now();
        pe1.check_alive().expect("alive");
        assert!(
            t.elapsed() < Duration::from_millis(50),
            "check_alive took {:?}",
            t.elapsed()
        );
    }
    assert!(
        !waiter.is_finished(),
        "the barrier cannot complete without PE 0"
    );
    pe0.barrier().expect("PE 0 barrier");
    waiter.join().expect("thread").expect("PE 1 barrier");
    let pe1 = Arc::try_unwrap(pe1).expect("sole owner");
    finalize_all(vec![pe0, pe1]);
}

#[test]
fn handshake_refusals() {
    let (l, url) = prebound();
    let mut c0 = config(&url, 0, 2);
    c0.listener = Some(l);
    let pe0 = spawn_pe(c0);

    let refused = |cfg: StoreConfig| match StoreBootstrap::connect(cfg) {
        Err(BootstrapError::Refused { reason, detail }) => (reason, detail),
        Err(e) => panic!("expected a refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, got a connection"),
    };
    // Another job's secret.
    let mut c = config(&url, 1, 2);
    c.secret = Secret::CANN_MAGIC;
    let (reason, detail) = refused(c);
    assert_eq!(reason, RefuseReason::SecretMismatch);
    assert!(detail.contains("belongs to another job"), "{detail}");
    // n_pes disagrees.
    let (reason, detail) = refused(config(&url, 1, 3));
    assert_eq!(reason, RefuseReason::NPesMismatch);
    assert!(
        detail.contains("3 PEs") && detail.contains("PE 0 says 2"),
        "{detail}"
    );
    // Instance disagrees.
    let mut c = config(&url, 1, 2);
    c.instance_id = 7;
    let (reason, detail) = refused(c);
    assert_eq!(reason, RefuseReason::InstanceMismatch);
    assert!(detail.contains("instance 7"), "{detail}");
    // Rank out of range (a client that skips the local check).
    let c = config(&url, 5, 2);
    match Client::connect(&c, Instant::now().checked_add(LONG)) {
        Err(BootstrapError::Refused {
            reason: RefuseReason::RankOutOfRange,
            detail,
        }) => {
            assert!(
                detail.contains("PE 5") && detail.contains("2 PEs"),
                "{detail}"
            )
        }
        other => panic!("expected RankOutOfRange, got {other:?}"),
    }
    // Another protocol version, spoken by hand.
    let mut s = TcpStream::connect(url.to_string().trim_start_matches("tcp://")).expect("connect");
    s.set_read_timeout(Some(LONG)).expect("timeout");
    let mut out = Vec::new();
    let hello = Hello {
        version: 99,
        secret: SECRET.0,
        rank: 1,
        n_pes: 2,
        instance_id: 0,
    };
    wire::encode_request(&mut out, 1, &Request::Hello(hello)).expect("encode");
    s.write_all(&out).expect("write");
    let mut fb = FrameBuf::new();
    let resp = loop {
        if let Some((h, body)) = fb.next_frame().expect("frame") {
            break wire::decode_server_frame(&h, body).expect("decode");
        }
        assert_ne!(
            fb.read_from(&mut s).expect("read"),
            wire::ReadOutcome::Eof,
            "closed without answer"
        );
    };
    match resp {
        ServerFrame::Response {
            id: 1,
            response: Response::Refuse { reason, message },
        } => {
            assert_eq!(reason, RefuseReason::ProtocolVersion);
            assert!(message.contains("99"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Garbage is dropped without harming the job.
    let mut g = TcpStream::connect(url.to_string().trim_start_matches("tcp://")).expect("connect");
    g.set_read_timeout(Some(LONG)).expect("timeout");
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let mut buf = [0u8; 16];
    assert!(
        matches!(g.read(&mut buf), Ok(0) | Err(_)),
        "the server closes a garbage connection"
    );

    // The real PE 1 still gets in.
    let pe1 = StoreBootstrap::connect(config(&url, 1, 2)).expect("PE 1");
    let pe0 = pe0.join().expect("thread").expect("PE 0");
    finalize_all(vec![pe0, pe1]);
}

#[test]
fn duplicate_rank_is_refused() {
    let (l, url) = prebound();
    let mut c0 = config(&url, 0, 3);
    c0.listener = Some(l);
    let pe0 = spawn_pe(c0);
    // PE 1 greets (but does not enter the rendezvous yet).
    let pe1 = Client::connect(&config(&url, 1, 3), Instant::now().checked_add(LONG))
        .expect("PE 1 greets");
    match StoreBootstrap::connect(config(&url, 1, 3)) {
        Err(
            err @ BootstrapError::Refused {
                reason: RefuseReason::RankAlreadyConnected,
                ..
            },
        ) => {
            let m = err.to_string();
            assert!(
                m.contains("PE 1 is already connected") && m.contains("same PE number"),
                "{m}"
            );
        }
        other => panic!("expected RankAlreadyConnected, got {other:?}"),
    }
    let pe1 = thread::spawn(move || {
        let deadline = Instant::now().checked_add(LONG);
        pe1.barrier("the init rendezvous", deadline).map(|()| pe1)
    });
    let pe2 = StoreBootstrap::connect(config(&url, 2, 3)).expect("PE 2");
    let pe0 = pe0.join().expect("thread").expect("PE 0");
    let pe1 = pe1.join().expect("thread").expect("PE 1 rendezvous");
    let t1 = thread::spawn(move || {
        let d = Instant::now().checked_add(LONG);
        pe1.barrier("finalize", d)
            .and_then(|()| pe1.bye(d))
            .map(|()| pe1.close())
    });
    finalize_all(vec![pe0, pe2]);
    t1.join().expect("thread").expect("PE 1 finalize");
}

#[test]
fn init_timeout_names_the_missing_pes() {
    let (l, url) = prebound();
    let short = Duration::from_millis(300);
    let mk = |pe| {
        let mut c = config(&url, pe, 4);
        c.init_timeout = short;
        c
    };
    let mut c0 = mk(0);
    c0.listener = Some(l);
    let t = Instant::now();
    let pe0 = spawn_pe(c0);
    let pe1 = spawn_pe(mk(1));
    // PE 2 connects but never enters the rendezvous; PE 3 never shows up.
    let pe2 = Client::connect(&mk(2), Instant::now().checked_add(LONG)).expect("PE 2 greets");
    for (pe, h) in [(0, pe0), (1, pe1)] {
        match h.join().expect("thread") {
            Err(err @ BootstrapError::Timeout { .. }) => {
                let m = err.to_string();
                let BootstrapError::Timeout { missing, .. } = &err else {
                    unreachable!()
                };
                assert_eq!(missing, &vec![2, 3], "PE {pe}: {m}");
                assert!(m.contains("PE 3 never connected"), "PE {pe}: {m}");
                assert!(m.contains("PE 2 never arrived"), "PE {pe}: {m}");
                assert!(m.contains("300 ms"), "PE {pe}: {m}");
            }
            Err(e) => panic!("PE {pe}: expected a timeout, got {e}"),
            Ok(_) => panic!("PE {pe}: the rendezvous cannot complete"),
        }
    }
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    drop(pe2);
}

#[test]
fn unreachable_server_is_a_connect_error() {
    let port = free_port();
    let url = parse_url(&format!("tcp://127.0.0.1:{port}")).expect("url");
    let mut c = config(&url, 1, 2);
    c.init_timeout = Duration::from_millis(200);
    let t = Instant::now();
    match StoreBootstrap::connect(c) {
        Err(err @ BootstrapError::Connect { .. }) => {
            let m = err.to_string();
            assert!(
                m.contains(&url.to_string()) && m.contains("of PE 0 within"),
                "{m}"
            );
            assert!(m.to_lowercase().contains("refused"), "{m}");
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
}

#[test]
fn later_collective_timeout_names_the_missing_pes() {
    let (l, url) = prebound();
    let mut l = Some(l);
    let hs: Vec<_> = (0..3)
        .map(|pe| {
            let mut c = config(&url, pe, 3);
            c.op_timeout = Duration::from_millis(300);
            if pe == 0 {
                c.listener = l.take();
            }
            spawn_pe(c)
        })
        .collect();
    let mut pes: Vec<StoreBootstrap> = hs
        .into_iter()
        .map(|h| h.join().expect("thread").expect("PE"))
        .collect();
    let pe2 = pes.pop().expect("PE 2");
    let results = on_all(pes, |bs| bs.barrier());
    for (bs, r) in &results {
        match r {
            Err(err @ BootstrapError::Timeout { missing, .. }) => {
                assert_eq!(missing, &vec![2]);
                let m = err.to_string();
                assert!(
                    m.contains("PE 2 never arrived at barrier #2"),
                    "PE {}: {m}",
                    bs.my_pe
                );
            }
            other => panic!("PE {}: {other:?}", bs.my_pe),
        }
    }
    // The straggler gets the same verdict for the same collective, at once.
    let t = Instant::now();
    assert!(matches!(pe2.barrier(), Err(BootstrapError::Timeout { .. })));
    assert!(t.elapsed() < Duration::from_millis(250));
    // The job goes on.
    let mut pes: Vec<StoreBootstrap> = results.into_iter().map(|(bs, _)| bs).collect();
    pes.push(pe2);
    let mut back = Vec::new();
    for (bs, r) in on_all(pes, |bs| bs.allgather(&[bs.my_pe as u8])) {
        assert_eq!(
            r.expect("allgather"),
            vec![vec![0], vec![1], vec![2]],
            "PE {}",
            bs.my_pe
        );
        back.push(bs);
    }
    finalize_all(back);
}

#[test]
fn mismatched_collectives_are_protocol_errors() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 2);
    let results = on_all(pes, |bs| {
        if bs.my_pe == 0 {
            bs.barrier()
        } else {
            bs.allgather(b"x").map(|_| ())
        }
    });
    for (bs, r) in &results {
        match r {
            Err(BootstrapError::Protocol(m)) => {
                assert!(
                    m.contains("barrier") && m.contains("allgather"),
                    "PE {}: {m}",
                    bs.my_pe
                )
            }
            other => panic!("PE {}: {other:?}", bs.my_pe),
        }
    }
    finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
}

#[test]
fn lost_peer_fails_pending_barrier_and_check_alive() {
    let (l, url) = prebound();
    let mut pes = job(&url, Some(l), 3);
    let pe2 = pes.pop().expect("PE 2");
    let start = Arc::new(StdBarrier::new(2));
    let s2 = start.clone();
    let hs = thread::spawn(move || {
        let f = move |bs: &StoreBootstrap| {
            let r = bs.barrier();
            (r, bs.check_alive(), bs.set("k", b"v"))
        };
        s2.wait();
        on_all(pes, f)
    });
    start.wait();
    thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    drop(pe2); // dies without finalize
    let results = hs.join().expect("thread");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    for (bs, (barrier, alive, later)) in &results {
        for (what, r) in [
            ("barrier", barrier),
            ("check_alive", alive),
            ("later set", later),
        ] {
            match r {
                Err(err @ BootstrapError::PeerLost { pe: 2, .. }) => {
                    let m = err.to_string();
                    assert!(
                        m.starts_with("PE 2 was lost"),
                        "PE {} {what}: {m}",
                        bs.my_pe
                    );
                }
                other => panic!("PE {} {what}: {other:?}", bs.my_pe),
            }
        }
    }
    // Finalize still ends (with the barrier's error) and frees everything.
    let t = Instant::now();
    for (bs, r) in on_all(results.into_iter().map(|(bs, _)| bs).collect(), |bs| {
        bs.finalize()
    }) {
        assert!(
            matches!(r, Err(BootstrapError::PeerLost { pe: 2, .. })),
            "PE {}: {r:?}",
            bs.my_pe
        );
    }
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "finalize took {:?}",
        t.elapsed()
    );
}

#[test]
fn server_death_is_server_lost() {
    let (l, url) = prebound();
    let mut pes = job(&url, Some(l), 3);
    let others = pes.split_off(1);
    let pe0 = pes.pop().expect("PE 0");
    let start = Arc::new(StdBarrier::new(2));
    let s2 = start.clone();
    let hs = thread::spawn(move || {
        s2.wait();
        on_all(others, |bs| {
            (bs.barrier(), bs.check_alive(), bs.get("x", None))
        })
    });
    start.wait();
    thread::sleep(Duration::from_millis(50));
    drop(pe0); // PE 0 dies: its server with it
    for (bs, (barrier, alive, later)) in hs.join().expect("thread") {
        for (what, r) in [("barrier", barrier), ("check_alive", alive)] {
            match r {
                Err(err @ BootstrapError::ServerLost { .. }) => {
                    assert!(
                        err.to_string().contains("PE 0"),
                        "PE {} {what}: {err}",
                        bs.my_pe
                    )
                }
                other => panic!("PE {} {what}: {other:?}", bs.my_pe),
            }
        }
        assert!(
            matches!(later, Err(BootstrapError::ServerLost { .. })),
            "PE {}: {later:?}",
            bs.my_pe
        );
        // Finalize fails fast, it does not hang.
        let t = Instant::now();
        assert!(bs.finalize().is_err());
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}

#[test]
fn global_exit_reaches_the_others() {
    let (l, url) = prebound();
    let mut pes = job(&url, Some(l), 3);
    let pe2 = pes.pop().expect("PE 2");
    let pe1 = Arc::new(pes.pop().expect("PE 1"));
    let pe0 = pes.pop().expect("PE 0");
    let blocked = {
        let pe1 = pe1.clone();
        thread::spawn(move || pe1.barrier())
    };
    thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    pe2.global_exit(7);
    assert!(t.elapsed() < Duration::from_secs(2));
    match blocked.join().expect("thread") {
        Err(BootstrapError::GlobalExit { pe: 2, status: 7 }) => {}
        other => panic!("PE 1's barrier: {other:?}"),
    }
    let t = Instant::now();
    loop {
        match pe0.check_alive() {
            Ok(()) if t.elapsed() < Duration::from_secs(3) => {
                thread::sleep(Duration::from_millis(5))
            }
            Err(err @ BootstrapError::GlobalExit { pe: 2, status: 7 }) => {
                assert_eq!(
                    err.to_string(),
                    "PE 2 called global_exit(7): the job is ending"
                );
                break;
            }
            other => panic!("PE 0 check_alive: {other:?}"),
        }
    }
    assert!(matches!(
        pe1.check_alive(),
        Err(BootstrapError::GlobalExit { pe: 2, status: 7 })
    ));
    // The exiting process goes away: that is not reported as a loss on top.
    drop(pe2);
    thread::sleep(Duration::from_millis(50));
    assert!(matches!(
        pe0.check_alive(),
        Err(BootstrapError::GlobalExit { pe: 2, .. })
    ));
    let pe1 = Arc::try_unwrap(pe1).expect("sole owner");
    for (bs, r) in on_all(vec![pe0, pe1], |bs| bs.finalize()) {
        assert!(
            matches!(r, Err(BootstrapError::GlobalExit { pe: 2, status: 7 })),
            "PE {}: {r:?}",
            bs.my_pe
        );
    }
}

#[test]
fn global_exit_while_this_pe_is_blocked() {
    let (l, url) = prebound();
    let mut pes = job(&url, Some(l), 2);
    let pe1 = Arc::new(pes.pop().expect("PE 1"));
    let pe0 = pes.pop().expect("PE 0");
    let blocked = {
        let pe1 = pe1.clone();
        thread::spawn(move || pe1.barrier())
    };
    thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    pe1.global_exit(3);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "global_exit took {:?}",
        t.elapsed()
    );
    assert!(matches!(
        blocked.join().expect("thread"),
        Err(BootstrapError::GlobalExit { pe: 1, status: 3 })
    ));
    let t = Instant::now();
    while pe0.check_alive().is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "PE 0 never heard of the exit"
        );
        thread::sleep(Duration::from_millis(5));
    }
    assert!(matches!(
        pe0.check_alive(),
        Err(BootstrapError::GlobalExit { pe: 1, status: 3 })
    ));
    assert!(matches!(
        pe0.get("EXIT", None),
        Err(BootstrapError::GlobalExit { .. })
    ));
}

#[test]
fn finalize_then_init_again_on_the_same_port() {
    let port = free_port();
    let url = parse_url(&format!("tcp://127.0.0.1:{port}")).expect("url");
    let t = Instant::now();
    for round in 0..20u8 {
        let pes = job(&url, None, 3);
        let mut back = Vec::new();
        for (bs, r) in on_all(pes, move |bs| bs.allgather(&[round, bs.my_pe as u8])) {
            assert_eq!(
                r.expect("allgather"),
                vec![vec![round, 0], vec![round, 1], vec![round, 2]]
            );
            assert_eq!(bs.server_addr().is_some(), bs.my_pe == 0);
            back.push(bs);
        }
        finalize_all(back);
    }
    println!("20 init/finalize cycles in {:?}", t.elapsed());

    // Same thing on a pre-bound listener re-created from the same port each time.
    for _ in 0..3 {
        let l = TcpListener::bind(("127.0.0.1", port)).expect("rebind");
        let pes = job(&url, Some(l), 2);
        finalize_all(pes);
    }
}

#[test]
fn finalize_is_idempotent_and_ends_the_pe() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 2);
    let results = on_all(pes, |bs| {
        (bs.finalize(), bs.finalize(), bs.barrier(), bs.check_alive())
    });
    for (bs, (f1, f2, b, alive)) in results {
        f1.expect("finalize");
        f2.expect("second finalize is a no-op");
        assert!(
            matches!(b, Err(BootstrapError::Finalized { pe }) if pe == bs.my_pe),
            "{b:?}"
        );
        alive.expect("check_alive after finalize");
        assert!(bs.server_addr().is_none());
    }
}

#[test]
fn ipv6_loopback() {
    let l = match TcpListener::bind("[::1]:0") {
        Ok(l) => l,
        Err(e) => {
            println!("note: skipping the IPv6 test: this machine has no ::1 ({e})");
            return;
        }
    };
    let port = l.local_addr().expect("addr").port();
    let url = parse_url(&format!("tcp6://[::1]:{port}")).expect("url");
    let pes = job(&url, Some(l), 2);
    for (_, r) in on_all(pes, |bs| bs.allgather(b"v6").map(|v| (v, bs.finalize()))) {
        let (v, f) = r.expect("allgather");
        assert_eq!(v, vec![b"v6".to_vec(), b"v6".to_vec()]);
        f.expect("finalize");
    }
    // PE 0 binding the IPv6 address by itself.
    let port = match TcpListener::bind("[::1]:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(_) => return,
    };
    let url = parse_url(&format!("tcp6://[::1]:{port}")).expect("url");
    finalize_all(job(&url, None, 2));
}

#[test]
fn hostname_localhost() {
    let port = free_port();
    let url = parse_url(&format!("tcp://localhost:{port}")).expect("url");
    let pes = job(&url, None, 2);
    for (_, r) in on_all(pes, |bs| bs.barrier().and_then(|()| bs.finalize())) {
        r.expect("barrier and finalize");
    }
}

#[test]
fn bad_configurations_are_rejected() {
    let (_l, url) = prebound();
    let check = |c: StoreConfig, needle: &str| match StoreBootstrap::connect(c) {
        Err(BootstrapError::Invalid(m)) => assert!(m.contains(needle), "{m}"),
        other => panic!("expected Invalid({needle}), got {other:?}"),
    };
    check(config(&url, 0, 0), "n_pes");
    check(config(&url, 2, 2), "out of range");
    let mut c = config(&url, 0, 2);
    c.init_timeout = Duration::ZERO;
    check(c, "timeouts");
    let mut c = config(&url, 0, 2);
    c.op_timeout = Duration::ZERO;
    check(c, "timeouts");
    let mut c = config(&url, 1, 2);
    c.listener = Some(TcpListener::bind("127.0.0.1:0").expect("bind"));
    check(c, "only PE 0");
    // PE 0 cannot bind an address that is not local.
    let far = parse_url("tcp://192.0.2.1:5000").expect("url");
    match StoreBootstrap::connect(config(&far, 0, 1)) {
        Err(err @ BootstrapError::Bind { .. }) => {
            assert!(err.to_string().contains("192.0.2.1:5000"), "{err}")
        }
        other => panic!("expected a bind error, got {other:?}"),
    }
}

#[test]
fn bound_but_not_listening_socket_is_accepted() {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .expect("socket");
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("addr");
    rustix::net::bind(&fd, &any).expect("bind");
    let l = TcpListener::from(fd);
    let port = l.local_addr().expect("addr").port();
    let url = parse_url(&format!("tcp://127.0.0.1:{port}")).expect("url");
    finalize_all(job(&url, Some(l), 2));
}
