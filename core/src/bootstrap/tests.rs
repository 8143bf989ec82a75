//! Tests of the whole bootstrap: PEs as threads of one process, PE 0 on a pre-bound
//! `127.0.0.1:0` socket (or on a port picked the same way) so tests never collide on ports.
//! Every wait is bounded by the timeouts configured here, none below one second.

use std::error::Error as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Barrier as StdBarrier};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bytemuck::{Pod, Zeroable};

use super::BootstrapErrorKind as Kind;
use super::frames::{Hello, MAGIC, Reply, VERSION};
use super::server::{ServerHandle, ServerParams};
use super::store::{StoreBootstrap, StoreConfig};
use super::url::{BootstrapUrl, parse_url};
use super::*;

const SECRET: Secret = Secret([0x5A; 16]);
const LONG: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_secs(2);

fn prebound() -> (TcpListener, BootstrapUrl) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = BootstrapUrl::of(l.local_addr().expect("local_addr"));
    (l, url)
}

/// A port that was free a moment ago (for tests where PE 0 binds by itself).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind")
        .port()
}

/// A TCP socket connected to itself (TCP's simultaneous open: bound to a free loopback port
/// and connected to that same port), and its address.
pub(crate) fn self_connected_socket() -> (TcpStream, std::net::SocketAddr) {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let at: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let fd = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .expect("socket");
    rustix::net::bind(&fd, &at).expect("bind the free port");
    rustix::net::connect(&fd, &at).expect("connect to itself");
    let s = TcpStream::from(fd);
    assert_eq!(s.peer_addr().expect("peer"), at, "connected to itself");
    (s, at)
}

#[test]
fn a_dial_that_reaches_its_own_socket_resets_it_and_counts_a_refusal() {
    let (s, at) = self_connected_socket();
    let e = super::store::not_self_connected(s, at).expect_err("a self-connection");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    // Reset, not closed into TIME_WAIT: PE 0 can bind the port at once.
    addr::bind(at, true).expect("the port is free again");
    // A connection to a listener is kept.
    let (l, url) = prebound();
    let to = l.local_addr().expect("local_addr");
    let c = TcpStream::connect(to).expect("connect");
    assert!(super::store::not_self_connected(c, to).is_ok(), "{url}");
}

fn params(n: u32) -> ServerParams {
    ServerParams {
        n_pes: n,
        instance_id: 0,
        secret: SECRET,
        init_timeout: LONG,
        op_timeout: LONG,
        tls: None,
    }
}

fn config(url: &BootstrapUrl, pe: u32, n: u32) -> StoreConfig {
    StoreConfig {
        url: url.clone(),
        my_pe: pe,
        job: params(n),
        listener: None,
    }
}

/// `config` with other timeouts.
fn timed(url: &BootstrapUrl, pe: u32, n: u32, init: Duration, op: Duration) -> StoreConfig {
    let mut c = config(url, pe, n);
    (c.job.init_timeout, c.job.op_timeout) = (init, op);
    c
}

fn hello(pe: u32, n: u32) -> Hello {
    Hello {
        magic: MAGIC,
        version: VERSION,
        secret: SECRET.0,
        rank: pe,
        n_pes: n,
        instance_id: 0,
    }
}

/// A PE that greets the server but does nothing else unless the test says so.
fn raw_client(
    url: &BootstrapUrl,
    pe: u32,
    n: u32,
    within: Duration,
) -> Result<StoreBootstrap, BootstrapError> {
    StoreBootstrap::dial(
        url,
        &hello(pe, n),
        None,
        Instant::now().checked_add(within),
        within,
    )
}

fn spawn_pe(cfg: StoreConfig) -> JoinHandle<Result<StoreBootstrap, BootstrapError>> {
    thread::spawn(move || StoreBootstrap::connect(cfg))
}

/// Connects `n` PEs (PE 0 on `listener`, or binding `url` itself when `None`).
fn job(url: &BootstrapUrl, mut listener: Option<TcpListener>, n: u32) -> Vec<StoreBootstrap> {
    let handles: Vec<_> = (0..n)
        .map(|pe| {
            let mut c = config(url, pe, n);
            c.listener = if pe == 0 { listener.take() } else { None };
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
    f: impl Fn(usize, &StoreBootstrap) -> T + Send + Sync + 'static,
) -> Vec<(StoreBootstrap, T)> {
    let f = Arc::new(f);
    let hs: Vec<_> = pes
        .into_iter()
        .enumerate()
        .map(|(pe, bs)| {
            let f = f.clone();
            thread::spawn(move || {
                let r = f(pe, &bs);
                (bs, r)
            })
        })
        .collect();
    hs.into_iter()
        .map(|h| h.join().expect("PE thread"))
        .collect()
}

fn finalize_all(pes: Vec<StoreBootstrap>) {
    for (pe, (_, r)) in on_all(pes, |_, bs| bs.finalize()).into_iter().enumerate() {
        r.unwrap_or_else(|e| panic!("finalize of PE {pe}: {e}"));
    }
}

/// The error's message with every source's, as a log line shows it.
fn chain(e: &BootstrapError) -> String {
    format!("{e:#}")
}

fn payload(pe: usize, round: u32) -> Vec<u8> {
    let len = ((pe * 37 + round as usize * 101) % 300) + if round % 7 == 3 { 20_000 } else { 0 };
    (0..len)
        .map(|i| (i ^ pe.wrapping_mul(31) ^ round as usize) as u8)
        .collect()
}

#[test]
fn barrier_and_allgather_1_2_4_8() {
    for n in [1u32, 2, 4, 8] {
        let (l, url) = prebound();
        let pes = job(&url, Some(l), n);
        let rounds = if n == 8 { 25 } else { 40 };
        let results = on_all(pes, move |me, bs| exchanges(bs, me, n, rounds));
        finalize_all(passed(results, &format!("n={n}")));
    }
}

/// `rounds` barriers and allgathers of varied sizes on PE `me` of `n`, each checked, then one
/// large contribution (1 MiB per PE), an empty one and a liveness check.
fn exchanges(bs: &StoreBootstrap, me: usize, n: u32, rounds: u32) -> Result<(), String> {
    for round in 0..rounds {
        bs.barrier().map_err(|e| e.to_string())?;
        let all = bs
            .allgather(&payload(me, round))
            .map_err(|e| e.to_string())?;
        if all.len() != n as usize
            || all
                .iter()
                .enumerate()
                .any(|(pe, got)| *got != payload(pe, round))
        {
            return Err(format!("round {round}: wrong data"));
        }
    }
    let all = bs
        .allgather(&vec![me as u8; 1 << 20])
        .map_err(|e| e.to_string())?;
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
}

/// The PEs of `results`, each of whose work must have passed (`what` names the job).
fn passed(results: Vec<(StoreBootstrap, Result<(), String>)>, what: &str) -> Vec<StoreBootstrap> {
    results
        .into_iter()
        .enumerate()
        .map(|(pe, (bs, r))| {
            r.unwrap_or_else(|e| panic!("{what} PE {pe}: {e}"));
            bs
        })
        .collect()
}

#[test]
fn records_are_checked_for_size() {
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
    struct Rec {
        a: u32,
        b: u32,
        c: u64,
    }
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 3);
    let results = on_all(pes, |pe, bs| {
        let all = allgather_records(
            bs,
            &Rec {
                a: pe as u32,
                b: 7,
                c: u64::MAX - pe as u64,
            },
        );
        // A PE of "another build" sends a shorter record.
        let odd = if pe == 1 {
            bs.allgather(&[1, 2, 3]).map(drop)
        } else {
            allgather_records(bs, &0u64).map(drop)
        };
        (all, odd)
    });
    for (pe, (_, (all, odd))) in results.iter().enumerate() {
        let want: Vec<Rec> = (0..3)
            .map(|p| Rec {
                a: p,
                b: 7,
                c: u64::MAX - u64::from(p),
            })
            .collect();
        assert_eq!(all.as_ref().expect("records"), &want, "PE {pe}");
        if pe != 1 {
            let e = odd.as_ref().unwrap_err();
            assert_eq!(e.kind(), &Kind::Protocol);
            assert!(
                e.to_string()
                    .contains("PE 1 sent a record of 3 bytes where 8 were expected"),
                "{e}"
            );
        }
    }
    finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
}

#[test]
fn threads_of_one_pe_share_it() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 2);
    let results = on_all(pes, |_, bs| {
        thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..25 {
                            bs.barrier()?;
                            bs.check_alive()?;
                        }
                        Ok::<(), BootstrapError>(())
                    })
                })
                .collect();
            hs.into_iter().try_for_each(|h| h.join().expect("thread"))
        })
    });
    for (pe, (_, r)) in results.iter().enumerate() {
        r.as_ref().unwrap_or_else(|e| panic!("PE {pe}: {e}"));
    }
    finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
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
    let t = Instant::now();
    for _ in 0..100 {
        pe1.check_alive().expect("alive");
    }
    assert!(
        t.elapsed() < SHORT,
        "100 check_alive calls took {:?}",
        t.elapsed()
    );
    assert!(
        !waiter.is_finished(),
        "the barrier cannot complete without PE 0"
    );
    pe0.barrier().expect("PE 0 barrier");
    waiter.join().expect("thread").expect("PE 1 barrier");
    finalize_all(vec![pe0, Arc::try_unwrap(pe1).expect("sole owner")]);
}

fn refusal(r: Result<StoreBootstrap, BootstrapError>) -> (RefuseReason, String) {
    match r {
        Err(e) => match e.kind() {
            Kind::Refused(reason) => (*reason, e.to_string()),
            _ => panic!("expected a refusal, got {e}"),
        },
        Ok(_) => panic!("expected a refusal, got a connection"),
    }
}

#[test]
fn handshake_refusals() {
    let (l, url) = prebound();
    let mut server = ServerHandle::spawn(l, params(3)).expect("server");
    let greet =
        |h: Hello| StoreBootstrap::dial(&url, &h, None, Instant::now().checked_add(LONG), LONG);
    let (reason, m) = refusal(greet(Hello {
        secret: [1; 16],
        ..hello(1, 3)
    }));
    assert_eq!(reason, RefuseReason::SecretMismatch);
    assert!(m.contains("belongs to another job"), "{m}");
    let (reason, m) = refusal(greet(hello(1, 4)));
    assert_eq!(reason, RefuseReason::NPesMismatch);
    assert!(m.contains("4 PEs") && m.contains("PE 0 says 3"), "{m}");
    let (reason, m) = refusal(greet(Hello {
        instance_id: 7,
        ..hello(1, 3)
    }));
    assert_eq!(reason, RefuseReason::InstanceMismatch);
    assert!(m.contains("instance 7"), "{m}");
    let (reason, m) = refusal(greet(hello(5, 3)));
    assert_eq!(reason, RefuseReason::RankOutOfRange);
    assert!(m.contains("PE 5") && m.contains("3 PEs"), "{m}");
    let (reason, m) = refusal(greet(Hello {
        version: 99,
        ..hello(1, 3)
    }));
    assert_eq!(reason, RefuseReason::ProtocolVersion);
    assert!(m.contains("version 99"), "{m}");
    // Garbage is dropped without harming the job.
    let mut g = TcpStream::connect(url.resolve().unwrap()[0]).expect("connect");
    g.set_read_timeout(Some(LONG)).expect("timeout");
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    assert!(
        matches!(g.read(&mut [0u8; 16]), Ok(0) | Err(_)),
        "the server closes a garbage connection"
    );
    // A PE that is lost cannot rejoin.
    drop(raw_client(&url, 2, 3, LONG).expect("PE 2 greets"));
    let t = Instant::now();
    let (reason, m) = loop {
        match greet(hello(2, 3)) {
            // Until the server has seen the first connection close.
            Err(e)
                if e.kind() == &Kind::Refused(RefuseReason::RankAlreadyConnected)
                    && t.elapsed() < LONG =>
            {
                thread::sleep(Duration::from_millis(20))
            }
            r => break refusal(r),
        }
    };
    assert_eq!(reason, RefuseReason::RankGone);
    assert!(m.contains("PE 2 was lost"), "{m}");
    assert!(!server.stop(Duration::ZERO), "PEs 0 and 1 never left");
}

#[test]
fn a_finishing_job_refuses_with_a_retryable_reason() {
    let (l, url) = prebound();
    let mut server = ServerHandle::spawn(l, params(2)).expect("server");
    let d = || Instant::now().checked_add(LONG);
    let pe0 = raw_client(&url, 0, 2, LONG).expect("PE 0 greets");
    let pe1 = raw_client(&url, 1, 2, LONG).expect("PE 1 greets");
    let t0 = thread::spawn(move || {
        pe0.collective("the init rendezvous", None, d())
            .map(|_| pe0)
    });
    pe1.collective("the init rendezvous", None, d())
        .expect("rendezvous");
    let pe0 = t0.join().expect("thread").expect("PE 0 rendezvous");
    // PE 1 finalizes first; a process claiming PE 1 again meets a job that only finishes.
    pe1.bye(d()).expect("bye");
    pe1.close();
    let e = raw_client(&url, 1, 2, SHORT).expect_err("nobody rejoins a finishing job");
    assert_eq!(
        e.kind(),
        &Kind::Connect,
        "retried until the init timeout: {e}"
    );
    let last = e
        .source()
        .and_then(|s| s.downcast_ref::<BootstrapError>())
        .expect("the last refusal");
    assert_eq!(
        last.kind(),
        &Kind::Refused(RefuseReason::ShuttingDown),
        "{last}"
    );
    assert!(RefuseReason::ShuttingDown.is_retryable() && !RefuseReason::RankGone.is_retryable());
    pe0.bye(d()).expect("PE 0's bye");
    pe0.close();
    assert!(server.stop(LONG), "the server ends once every PE left");
}

#[test]
fn duplicate_rank_is_refused() {
    let (l, url) = prebound();
    let mut c0 = config(&url, 0, 3);
    c0.listener = Some(l);
    let pe0 = spawn_pe(c0);
    let pe1 = raw_client(&url, 1, 3, LONG).expect("PE 1 greets");
    let (reason, m) = refusal(raw_client(&url, 1, 3, LONG));
    assert_eq!(reason, RefuseReason::RankAlreadyConnected);
    assert!(
        m.contains("PE 1 is already connected") && m.contains("same PE number"),
        "{m}"
    );
    let d = || Instant::now().checked_add(LONG);
    let pe1 = thread::spawn(move || {
        pe1.collective("the init rendezvous", None, d())
            .map(|_| pe1)
    });
    let pe2 = StoreBootstrap::connect(config(&url, 2, 3)).expect("PE 2");
    let pe0 = pe0.join().expect("thread").expect("PE 0");
    let pe1 = pe1.join().expect("thread").expect("PE 1 rendezvous");
    let t1 = thread::spawn(move || {
        pe1.collective("finalize", None, d())?;
        pe1.bye(d()).map(|()| pe1.close())
    });
    finalize_all(vec![pe0, pe2]);
    t1.join().expect("thread").expect("PE 1 finalize");
}

#[test]
fn init_timeout_names_the_missing_pes() {
    let (l, url) = prebound();
    let mk = |pe| timed(&url, pe, 4, SHORT, LONG);
    let t = Instant::now();
    let pe0 = spawn_pe(StoreConfig {
        listener: Some(l),
        ..mk(0)
    });
    let pe1 = spawn_pe(mk(1));
    // PE 2 connects but never enters the rendezvous; PE 3 never shows up.
    let pe2 = raw_client(&url, 2, 4, LONG).expect("PE 2 greets");
    for (pe, h) in [(0, pe0), (1, pe1)] {
        let e = h
            .join()
            .expect("thread")
            .err()
            .unwrap_or_else(|| panic!("PE {pe}: the rendezvous cannot complete"));
        let m = e.to_string();
        assert_eq!(
            e.kind(),
            &Kind::Timeout {
                missing: vec![2, 3]
            },
            "PE {pe}: {m}"
        );
        assert!(
            m.contains("PE 3 never connected and PE 2 never arrived at the init rendezvous"),
            "PE {pe}: {m}"
        );
        assert!(m.contains("2.0 s"), "PE {pe}: {m}");
    }
    assert!(t.elapsed() < LONG, "took {:?}", t.elapsed());
    drop(pe2);
}

#[test]
fn unreachable_server_is_a_connect_error() {
    let url = parse_url(&format!("tcp://127.0.0.1:{}", free_port())).expect("url");
    let t = Instant::now();
    let e = StoreBootstrap::connect(timed(&url, 1, 2, SHORT, LONG)).unwrap_err();
    assert_eq!(e.kind(), &Kind::Connect);
    let m = chain(&e);
    assert!(
        m.contains(&url.to_string()) && m.contains("of PE 0 within 2.0 s"),
        "{m}"
    );
    assert!(
        !e.to_string().to_lowercase().contains("refused"),
        "{{}} is the message alone"
    );
    assert!(
        m.to_lowercase().contains("refused"),
        "the cause is kept as the source: {m}"
    );
    assert!(t.elapsed() < LONG, "took {:?}", t.elapsed());
}

#[test]
fn a_server_that_sends_garbage_is_left() {
    let fake = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = BootstrapUrl::of(fake.local_addr().unwrap());
    let server = thread::spawn(move || {
        let (mut s, _) = fake.accept().expect("accept");
        s.write_all(&u32::MAX.to_le_bytes()).expect("write");
        // Read until the client leaves: closing with its greeting unread would reset the
        // connection, and the client could see the reset before the garbage.
        let _ = std::io::copy(&mut s, &mut std::io::sink());
    });
    let e = raw_client(&url, 0, 1, SHORT).expect_err("a garbage server");
    assert_eq!(e.kind(), &Kind::Protocol);
    assert!(
        e.to_string().contains("cannot read") && e.to_string().contains("above the limit"),
        "{e}"
    );
    server.join().expect("fake server");
}

#[test]
fn later_collective_timeout_names_the_missing_pes() {
    let (l, url) = prebound();
    let mut l = Some(l);
    let hs: Vec<_> = (0..3)
        .map(|pe| {
            spawn_pe(StoreConfig {
                listener: l.take().filter(|_| pe == 0),
                ..timed(&url, pe, 3, LONG, SHORT)
            })
        })
        .collect();
    let mut pes: Vec<StoreBootstrap> = hs
        .into_iter()
        .map(|h| h.join().expect("thread").expect("PE"))
        .collect();
    let pe2 = pes.pop().expect("PE 2");
    let results = on_all(pes, |_, bs| bs.barrier());
    for (pe, (_, r)) in results.iter().enumerate() {
        let e = r.as_ref().unwrap_err();
        assert_eq!(
            e.kind(),
            &Kind::Timeout { missing: vec![2] },
            "PE {pe}: {e}"
        );
        assert!(
            e.to_string().contains("PE 2 never arrived at barrier #2"),
            "PE {pe}: {e}"
        );
    }
    // The straggler gets the same verdict for the same collective.
    assert_eq!(
        pe2.barrier().unwrap_err().kind(),
        &Kind::Timeout { missing: vec![2] }
    );
    // The job goes on.
    let mut pes: Vec<StoreBootstrap> = results.into_iter().map(|(bs, _)| bs).collect();
    pes.push(pe2);
    let results = on_all(pes, |pe, bs| bs.allgather(&[pe as u8]));
    for (pe, (_, r)) in results.iter().enumerate() {
        assert_eq!(
            r.as_ref().expect("allgather"),
            &vec![vec![0], vec![1], vec![2]],
            "PE {pe}"
        );
    }
    finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
}

#[test]
fn mismatched_collectives_are_protocol_errors() {
    let (l, url) = prebound();
    let pes = job(&url, Some(l), 2);
    let results = on_all(pes, |pe, bs| {
        if pe == 0 {
            bs.barrier()
        } else {
            bs.allgather(b"x").map(drop)
        }
    });
    for (pe, (_, r)) in results.iter().enumerate() {
        let e = r.as_ref().unwrap_err();
        let m = e.to_string();
        assert_eq!(e.kind(), &Kind::Protocol, "PE {pe}: {m}");
        // Whoever came second is named with what it called, beside the first.
        for needle in ["PE 0", "PE 1", "barrier", "allgather", "collective #2"] {
            assert!(m.contains(needle), "PE {pe}: {needle:?} missing in {m}");
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
        s2.wait();
        on_all(pes, |_, bs| (bs.barrier(), bs.check_alive(), bs.barrier()))
    });
    start.wait();
    thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    drop(pe2); // dies without finalize
    let results = hs.join().expect("thread");
    assert!(t.elapsed() < LONG, "took {:?}", t.elapsed());
    for (pe, (_, (barrier, alive, later))) in results.iter().enumerate() {
        for (what, r) in [
            ("barrier", barrier),
            ("check_alive", alive),
            ("later barrier", later),
        ] {
            let e = r.as_ref().unwrap_err();
            assert_eq!(e.kind(), &Kind::PeerLost { pe: 2 }, "PE {pe} {what}: {e}");
            assert!(
                e.to_string().starts_with("PE 2 was lost"),
                "PE {pe} {what}: {e}"
            );
        }
    }
    // Finalize still ends (with the barrier's error) and frees everything.
    let t = Instant::now();
    for (pe, (_, r)) in on_all(results.into_iter().map(|(bs, _)| bs).collect(), |_, bs| {
        bs.finalize()
    })
    .iter()
    .enumerate()
    {
        assert_eq!(
            r.as_ref().unwrap_err().kind(),
            &Kind::PeerLost { pe: 2 },
            "PE {pe}"
        );
    }
    assert!(t.elapsed() < LONG, "finalize took {:?}", t.elapsed());
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
        on_all(others, |_, bs| {
            (bs.barrier(), bs.check_alive(), bs.barrier())
        })
    });
    start.wait();
    thread::sleep(Duration::from_millis(50));
    drop(pe0); // PE 0 dies: its server with it
    for (bs, (barrier, alive, later)) in hs.join().expect("thread") {
        for (what, r) in [
            ("barrier", barrier),
            ("check_alive", alive),
            ("later barrier", later),
        ] {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), &Kind::ServerLost, "{what}: {e}");
            assert!(e.to_string().contains("PE 0"), "{what}: {e}");
        }
        // Finalize fails fast, it does not hang.
        let t = Instant::now();
        assert!(bs.finalize().is_err());
        assert!(t.elapsed() < SHORT, "finalize took {:?}", t.elapsed());
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
    pe2.global_exit(7);
    let exit = Kind::GlobalExit { pe: 2, status: 7 };
    assert_eq!(
        blocked.join().expect("thread").unwrap_err().kind(),
        &exit,
        "PE 1's barrier"
    );
    let t = Instant::now();
    let e = loop {
        match pe0.check_alive() {
            Ok(()) if t.elapsed() < LONG => thread::sleep(Duration::from_millis(5)),
            r => break r.unwrap_err(),
        }
    };
    assert_eq!(e.kind(), &exit);
    assert_eq!(
        e.to_string(),
        "PE 2 called global_exit(7): the job is ending"
    );
    assert_eq!(pe1.check_alive().unwrap_err().kind(), &exit);
    // The exiting process goes away: that is not reported as a loss on top.
    drop(pe2);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(pe0.check_alive().unwrap_err().kind(), &exit);
    let pe1 = Arc::try_unwrap(pe1).expect("sole owner");
    for (pe, (_, r)) in on_all(vec![pe0, pe1], |_, bs| bs.finalize())
        .iter()
        .enumerate()
    {
        assert_eq!(r.as_ref().unwrap_err().kind(), &exit, "PE {pe}");
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
    assert!(t.elapsed() < LONG, "global_exit took {:?}", t.elapsed());
    let exit = Kind::GlobalExit { pe: 1, status: 3 };
    assert_eq!(blocked.join().expect("thread").unwrap_err().kind(), &exit);
    let t = Instant::now();
    while pe0.check_alive().is_ok() {
        assert!(t.elapsed() < LONG, "PE 0 never heard of the exit");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pe0.check_alive().unwrap_err().kind(), &exit);
    assert_eq!(pe0.barrier().unwrap_err().kind(), &exit);
}

#[test]
fn finalize_then_init_again_on_the_same_port() {
    let port = free_port();
    let url = parse_url(&format!("tcp://127.0.0.1:{port}")).expect("url");
    for round in 0..20u8 {
        let pes = job(&url, None, 3);
        let results = on_all(pes, move |pe, bs| bs.allgather(&[round, pe as u8]));
        for (_, r) in &results {
            assert_eq!(
                r.as_ref().expect("allgather"),
                &vec![vec![round, 0], vec![round, 1], vec![round, 2]]
            );
        }
        finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
    }
    // Same thing on a pre-bound listener re-created from the same port each time.
    for _ in 0..3 {
        let l =
            TcpListener::bind(("127.0.0.1", port)).expect("rebind: the server closed its listener");
        finalize_all(job(&url, Some(l), 2));
    }
}

#[test]
fn finalize_is_idempotent_and_ends_the_pe() {
    let (l, url) = prebound();
    let port = url.port;
    let pes = job(&url, Some(l), 2);
    for (pe, (_, (f1, f2, b, alive))) in on_all(pes, |_, bs| {
        (bs.finalize(), bs.finalize(), bs.barrier(), bs.check_alive())
    })
    .into_iter()
    .enumerate()
    {
        f1.expect("finalize");
        f2.expect("second finalize is a no-op");
        let e = b.unwrap_err();
        assert_eq!(e.kind(), &Kind::Finalized);
        assert!(e.to_string().contains(&format!("PE {pe}")), "{e}");
        alive.expect("check_alive after finalize");
    }
    // PE 0 stopped and joined its server: the port is free.
    TcpListener::bind(("127.0.0.1", port)).expect("the server's port is free after finalize");
}

#[test]
#[cfg_attr(no_ipv6_loopback, ignore = "this machine has no IPv6 loopback (::1)")]
fn ipv6_loopback() {
    let l = TcpListener::bind("[::1]:0").expect("::1 (probed at build time)");
    let url = parse_url(&format!("tcp6://[::1]:{}", l.local_addr().unwrap().port())).expect("url");
    let results = on_all(job(&url, Some(l), 2), |_, bs| bs.allgather(b"v6"));
    for (_, r) in &results {
        assert_eq!(
            r.as_ref().expect("allgather"),
            &vec![b"v6".to_vec(), b"v6".to_vec()]
        );
    }
    finalize_all(results.into_iter().map(|(bs, _)| bs).collect());
    // PE 0 binding the IPv6 address by itself.
    let port = TcpListener::bind("[::1]:0")
        .and_then(|l| l.local_addr())
        .expect("::1")
        .port();
    finalize_all(job(
        &parse_url(&format!("tcp6://[::1]:{port}")).expect("url"),
        None,
        2,
    ));
}

#[test]
fn hostname_localhost() {
    let url = parse_url(&format!("tcp://localhost:{}", free_port())).expect("url");
    for (_, r) in on_all(job(&url, None, 2), |_, bs| {
        bs.barrier().and_then(|()| bs.finalize())
    }) {
        r.expect("barrier and finalize");
    }
}

#[test]
fn bad_configurations_are_rejected() {
    let (_l, url) = prebound();
    let check = |c: StoreConfig, needle: &str| {
        let e = StoreBootstrap::connect(c).unwrap_err();
        assert_eq!(e.kind(), &Kind::Invalid, "{e}");
        assert!(e.to_string().contains(needle), "{e}");
    };
    check(config(&url, 0, 0), "out of range for 0 PEs");
    check(config(&url, 2, 2), "out of range");
    check(timed(&url, 0, 2, Duration::ZERO, LONG), "timeouts");
    check(timed(&url, 0, 2, LONG, Duration::ZERO), "timeouts");
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    check(
        StoreConfig {
            listener: Some(l),
            ..config(&url, 1, 2)
        },
        "only PE 0 runs",
    );
    // PE 0 cannot bind an address that is not local.
    let far = parse_url("tcp://192.0.2.1:5000").expect("url");
    let e = StoreBootstrap::connect(config(&far, 0, 1)).unwrap_err();
    assert_eq!(e.kind(), &Kind::Io);
    assert!(
        e.to_string().contains("192.0.2.1:5000") && e.source().is_some(),
        "{e}"
    );
}

#[test]
fn bound_but_not_listening_socket_is_accepted() {
    let l = addr::bind("127.0.0.1:0".parse().unwrap(), false).expect("bind");
    let url = BootstrapUrl::of(l.local_addr().unwrap());
    finalize_all(job(&url, Some(l), 2));
}

#[test]
fn join_dispatches_on_the_mode_and_marks_failures_to_meet() {
    // DEFAULT: one PE on ip_port.
    let mut a = Attributes::new(0, 1, &format!("tcp://127.0.0.1:{}", free_port()), 2 << 20);
    a.init_timeout = Duration::from_secs(2);
    join(&a)
        .expect("a job of one")
        .finalize()
        .expect("finalize");
    // A bad address or sock_fd is the caller's mistake, not a failure to meet.
    let bad = Attributes {
        ip_port: "tcp://127.0.0.1:80".into(),
        ..a.clone()
    };
    let e = join(&bad).expect_err("port 80");
    assert!(e.kind() == &Kind::Address && !e.during_init(), "{e}");
    let mut fd = a.clone();
    let elsewhere = addr::bind("127.0.0.1:0".parse().unwrap(), false).expect("bind");
    fd.listener = Some(crate::Listener::new(elsewhere));
    let e = join(&fd).expect_err("a socket on another port");
    assert!(
        e.kind() == &Kind::Invalid && !e.during_init() && e.to_string().contains("port"),
        "{e}"
    );
    // Nobody serves PE 1's job: it cannot meet its peers.
    let lonely = Attributes {
        my_pe: 1,
        n_pes: 2,
        ..a.clone()
    };
    let e = join(&lonely).expect_err("no PE 0");
    assert!(e.kind() == &Kind::Connect && e.during_init(), "{e}");
    // Unique-id mode: PE 0 serves on the id's socket.
    let uid = UniqueId::with_session(&format!("127.0.0.1:{}", free_port())).expect("uid");
    let mut u = Attributes::with_unique_id(0, 1, 2 << 20, &uid);
    u.init_timeout = Duration::from_secs(2);
    join(&u)
        .expect("unique-id job of one")
        .finalize()
        .expect("finalize");
    assert!(uid.take_listener().is_none(), "init took the socket");
    // The job-local rendezvous.
    let j = Attributes {
        mode: InitMode::JobLocal(format!("join-test-{}", rand::random::<u64>())),
        ..a
    };
    join(&j)
        .expect("job-local job of one")
        .finalize()
        .expect("finalize");
}

#[test]
fn errors_map_to_canns_codes() {
    use crate::{Code, Error};
    let code = |e: BootstrapError| Error::from(e).code();
    assert_eq!(
        code(BootstrapError::new(Kind::Timeout { missing: vec![1] }, "t")),
        Code::TimeoutError
    );
    assert_eq!(
        code(BootstrapError::new(Kind::Timeout { missing: vec![1] }, "t").at_init()),
        Code::InnerError
    );
    assert_eq!(
        code(BootstrapError::new(Kind::Connect, "c").at_init()),
        Code::InnerError
    );
    assert_eq!(
        code(BootstrapError::new(Kind::PeerLost { pe: 3 }, "p")),
        Code::BootstrapError
    );
    assert_eq!(
        code(BootstrapError::new(Kind::ServerLost, "s")),
        Code::BootstrapError
    );
    assert_eq!(code(BootstrapError::address("a")), Code::InvalidParam);
    assert_eq!(code(BootstrapError::invalid("v")), Code::InvalidValue);
    assert_eq!(code(BootstrapError::protocol("p")), Code::InnerError);
    let e = Error::from(BootstrapError::new(
        Kind::GlobalExit { pe: 2, status: 9 },
        "x",
    ));
    assert!(matches!(e, Error::JobEnding { pe: 2, status: 9 }), "{e}");
    assert_eq!(e.code(), Code::BootstrapError);
    assert!(matches!(
        Error::from(BootstrapError::new(Kind::PeerLost { pe: 3 }, "p")),
        Error::PeerLost { pe: 3, .. }
    ));
    // The source survives the conversion.
    let io = BootstrapError::io(
        "binding",
        std::io::Error::from(std::io::ErrorKind::AddrInUse),
    );
    assert!(Error::from(io).source().is_some());
    // What the transport sees.
    let t =
        shmem_backend::TransportError::from(BootstrapError::new(Kind::PeerLost { pe: 4 }, "gone"));
    assert!(matches!(
        t,
        shmem_backend::TransportError::PeerLost { pe: 4, .. }
    ));
}

/// Addresses the library chooses are loopback (a unique id made for a job-local rendezvous);
/// an address the user gives is bound exactly as given, never widened to the wildcard.
#[test]
fn chosen_addresses_are_loopback_and_given_ones_are_bound_exactly() {
    let uid = uid::UniqueId::on_loopback().expect("a unique id");
    let l = uid.take_listener().expect("the id's socket");
    assert_eq!(
        l.local_addr().unwrap().ip(),
        std::net::IpAddr::from([127, 0, 0, 1])
    );
    for ip in ["127.0.0.1", "127.0.0.2", "::1"] {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        match addr::bind(std::net::SocketAddr::new(ip, 0), true) {
            Ok(l) => assert_eq!(l.local_addr().unwrap().ip(), ip),
            // A machine without IPv6 loopback (see `no_ipv6_loopback`).
            Err(_) if ip.is_ipv6() && cfg!(no_ipv6_loopback) => {}
            Err(e) => panic!("{ip}: {e}"),
        }
    }
}

/// A connection that has not greeted is not trusted with a large buffer: announcing a frame
/// above `MAX_GREETING` gets it dropped before its body is read, and the job still forms.
#[test]
fn a_stranger_announcing_a_large_greeting_is_dropped_before_its_body() {
    let (l, url) = prebound();
    let mut g = TcpStream::connect(url.resolve().unwrap()[0]).expect("connect");
    // Half the greeting deadline (init_timeout, LONG), after which any silent connection is
    // closed: a close before then is the limit's doing.
    g.set_read_timeout(Some(LONG / 2)).expect("timeout");
    let len = (frames::MAX_GREETING + 1) as u32;
    g.write_all(&len.to_le_bytes()).expect("write");
    let _ = g.write_all(&[0u8; 1024]);
    let pes = thread::spawn(move || job(&url, Some(l), 2));
    // Closed, not merely silent until the read timeout.
    let r = g.read(&mut [0u8; 16]);
    assert!(
        matches!(&r, Ok(0))
            || r.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "the server keeps the stranger's connection: {r:?}"
    );
    finalize_all(pes.join().expect("the job forms"));
}

/// One hostile client of kind `k % 5`: a truncated greeting, an oversized one, a wrong protocol
/// magic, a wrong secret, or random bytes. Returns the frames it was sent back.
fn hostile(addr: std::net::SocketAddr, k: u64) -> Vec<Reply> {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(LONG));
    let good = frames::encode(1, &hello(1, 4)).expect("a greeting");
    let mut x = k.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut random = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    };
    let (bytes, read) = match k % 5 {
        0 => (good[..good.len() / 2].to_vec(), false),
        1 => {
            let mut b = ((frames::MAX_GREETING as u32) * 4).to_le_bytes().to_vec();
            b.extend_from_slice(&[0xAB; 256]);
            (b, true)
        }
        2 => {
            let h = Hello {
                magic: *b"EVIL",
                ..hello(1, 4)
            };
            (frames::encode(1, &h).expect("a greeting"), true)
        }
        3 => {
            let h = Hello {
                secret: [!SECRET.0[0]; 16],
                ..hello(1 + (k % 3) as u32, 4)
            };
            (frames::encode(1, &h).expect("a greeting"), true)
        }
        _ => {
            let len = 1 + usize::from(random()) % 200;
            ((0..len).map(|_| random()).collect(), false)
        }
    };
    let _ = s.write_all(&bytes);
    let mut got = Vec::new();
    if read {
        let _ = s.read_to_end(&mut got);
    }
    let mut fb = frames::FrameBuf::default();
    let _ = fb.read_from(&mut got.as_slice());
    let mut replies = Vec::new();
    while let Ok(Some(f)) = fb.next_frame() {
        if let Ok((_, r)) = frames::decode::<Reply>(f) {
            replies.push(r);
        }
    }
    replies
}

/// 10 000 hostile connections (truncated, oversized, wrong magic, wrong secret, random bytes)
/// while a 4-PE job forms and runs 200 barriers: the job is unharmed, and a client with a
/// wrong secret reads nothing but its refusal.
#[test]
fn ten_thousand_hostile_connections_do_not_harm_a_job() {
    let (l, url) = prebound();
    let addr = url.resolve().unwrap()[0];
    let start = Instant::now();
    let flood = thread::spawn(move || {
        let mut refusals = 0;
        for k in 0..10_000u64 {
            for r in hostile(addr, k) {
                match r {
                    Reply::Refuse(RefuseReason::SecretMismatch, _) if k % 5 == 3 => refusals += 1,
                    other => panic!("hostile client {k} (kind {}) read {other:?}", k % 5),
                }
            }
        }
        refusals
    });
    let pes = job(&url, Some(l), 4);
    let results = on_all(pes, |_, bs| (0..200).try_for_each(|_| bs.barrier()));
    let refusals = flood.join().expect("the flood");
    println!(
        "10 000 hostile connections and the job in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(refusals, 2_000, "every wrong-secret client is refused once");
    let pes = results
        .into_iter()
        .enumerate()
        .map(|(pe, (bs, r))| {
            r.unwrap_or_else(|e| panic!("PE {pe}: {e}"));
            bs
        })
        .collect();
    finalize_all(pes);
}

/// A slow-loris attack: 300 connections opened before the PEs (after PE 0's server started)
/// and left idle, more than the server holds beyond the PEs. The oldest idle ones make room for
/// the PEs, which form the job long before the idle ones' greeting deadline.
#[test]
fn three_hundred_idle_connections_opened_first_do_not_keep_a_job_out() {
    let (l, url) = prebound();
    let addr = url.resolve().unwrap()[0];
    let init = Duration::from_secs(30);
    let mut c = timed(&url, 0, 4, init, LONG);
    c.listener = Some(l);
    let pe0 = spawn_pe(c);
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect_timeout(&addr, LONG).expect("an idle connection"))
        .collect();
    // Every idle connection is accepted (or dropped) before the other PEs come.
    thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let others: Vec<_> = (1..4)
        .map(|pe| spawn_pe(timed(&url, pe, 4, init, LONG)))
        .collect();
    let pes: Vec<StoreBootstrap> = std::iter::once(pe0)
        .chain(others)
        .enumerate()
        .map(|(pe, h)| {
            h.join()
                .expect("PE thread")
                .unwrap_or_else(|e| panic!("PE {pe}: {e}"))
        })
        .collect();
    let took = start.elapsed();
    println!(
        "PEs 1-3 joined in {:.2} s despite 300 idle connections",
        took.as_secs_f64()
    );
    // The idle connections' greeting deadline is the init timeout: PEs that had to wait for
    // them would join no earlier than that.
    assert!(took < init / 2, "the PEs joined only after {took:?}");
    finalize_all(pes);
    drop(idle);
}

#[cfg(feature = "tls")]
#[path = "../../tests/common/pki.rs"]
mod pki;

/// TLS on the bootstrap's connections (`tls.rs`): certificates made by rcgen for the test, the
/// server's naming 127.0.0.1, and a job of PEs as threads.
#[cfg(feature = "tls")]
mod over_tls {
    use super::*;
    use crate::bootstrap::tls::Tls;

    use super::pki::Pki;

    /// The configuration of a PE that trusts `trust`'s authority and shows `mine`'s
    /// certificate.
    fn tls_of(mine: &Pki, trust: &Pki) -> Arc<Tls> {
        let (ca, cert, key) = (
            trust.path("ca.pem"),
            mine.path("cert.pem"),
            mine.path("key.pem"),
        );
        Arc::new(Tls::load(&ca, &cert, &key).expect("the test's certificates load"))
    }

    fn tls_config(url: &BootstrapUrl, pe: u32, n: u32, tls: &Arc<Tls>) -> StoreConfig {
        let mut c = config(url, pe, n);
        c.job.tls = Some(tls.clone());
        c
    }

    #[test]
    fn a_job_meets_over_tls_and_a_plaintext_stranger_gets_no_reply() {
        let pki = Pki::new("job");
        let tls = tls_of(&pki, &pki);
        let (l, url) = prebound();
        let n = 4;
        let mut listener = Some(l);
        let handles: Vec<_> = (0..n)
            .map(|pe| {
                let mut c = tls_config(&url, pe, n, &tls);
                c.listener = if pe == 0 { listener.take() } else { None };
                spawn_pe(c)
            })
            .collect();
        let pes: Vec<StoreBootstrap> = handles
            .into_iter()
            .map(|h| h.join().expect("PE thread").expect("the PE joins over TLS"))
            .collect();
        // A stranger speaking the bootstrap's plaintext protocol: the server's TLS session
        // rejects its first bytes, so no frame of the bootstrap ever comes back.
        let addr = url.resolve().expect("the address resolves")[0];
        let mut stranger = TcpStream::connect(addr).expect("connects");
        let frame = frames::encode(1, &hello(1, n)).expect("a frame");
        stranger.write_all(&frame).expect("writes");
        stranger.set_read_timeout(Some(LONG)).expect("timeout");
        let mut got = Vec::new();
        let _ = stranger.read_to_end(&mut got);
        assert!(
            got.is_empty() || got[0] == 0x15,
            "the stranger read {} bytes that are not a TLS alert: {got:?}",
            got.len()
        );
        let results = on_all(pes, move |me, bs| exchanges(bs, me, n, 20));
        let pes = passed(results, "over TLS");
        finalize_all(pes);
    }

    #[test]
    fn a_pe_with_another_authoritys_certificate_is_refused_at_once() {
        let (job, other) = (Pki::new("job"), Pki::new("other"));
        let (l, url) = prebound();
        let pe0 = spawn_pe(StoreConfig {
            listener: Some(l),
            ..tls_config(&url, 0, 2, &tls_of(&job, &job))
        });
        let start = Instant::now();
        // Trusts the job's authority, shows a certificate the job's authority did not sign.
        let stranger = StoreBootstrap::connect(tls_config(&url, 1, 2, &tls_of(&other, &job)));
        let e = stranger.expect_err("the server refuses a certificate it cannot verify");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}: {e}",
            start.elapsed()
        );
        assert!(chain(&e).contains("TLS"), "{}", chain(&e));
        // Trusts another authority: the server's certificate does not verify.
        let start = Instant::now();
        let doubter = StoreBootstrap::connect(tls_config(&url, 1, 2, &tls_of(&job, &other)));
        let e = doubter.expect_err("the PE refuses a server it cannot verify");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}: {e}",
            start.elapsed()
        );
        let text = chain(&e);
        assert!(
            text.contains("TLS handshake") && text.contains("certificate"),
            "{text}"
        );
        // The job still forms with a PE that has the right certificate.
        let pe1 = spawn_pe(tls_config(&url, 1, 2, &tls_of(&job, &job)));
        let pes = vec![
            pe0.join().expect("PE 0").expect("PE 0 joins"),
            pe1.join().expect("PE 1").expect("PE 1 joins"),
        ];
        finalize_all(pes);
    }

    #[test]
    fn settings_name_what_is_missing_and_bad_files() {
        let pki = Pki::new("settings");
        let get = |set: &[(&str, String)]| {
            let set: Vec<(String, String)> = set
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect();
            move |k: &str| set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        use crate::bootstrap::tls::from_vars;
        assert!(from_vars(get(&[])).expect("none set").is_none());
        let e = from_vars(get(&[("SHMEM_BOOTSTRAP_TLS_CA", pki.path("ca.pem"))]))
            .expect_err("two missing");
        let m = e.to_string();
        assert!(
            m.contains("SHMEM_BOOTSTRAP_TLS_CERT and SHMEM_BOOTSTRAP_TLS_KEY"),
            "{m}"
        );
        let all = |key: String| {
            get(&[
                ("SHMEM_BOOTSTRAP_TLS_CA", pki.path("ca.pem")),
                ("SHMEM_BOOTSTRAP_TLS_CERT", pki.path("cert.pem")),
                ("SHMEM_BOOTSTRAP_TLS_KEY", key),
            ])
        };
        assert!(
            from_vars(all(pki.path("key.pem")))
                .expect("valid")
                .is_some()
        );
        // The certificate given as the key.
        let e = from_vars(all(pki.path("cert.pem"))).expect_err("no key there");
        assert!(e.to_string().contains("no private key in"), "{e}");
        let e = from_vars(all(pki.path("missing.pem"))).expect_err("no file");
        assert!(e.to_string().contains("missing.pem"), "{e}");
    }
}
