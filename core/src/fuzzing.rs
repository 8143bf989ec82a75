//! The entry points of the fuzz targets (`core/fuzz/`) and of the tests that replay their
//! corpora (`core/reliability/tests/fuzz_corpora.rs`), behind the cargo feature `fuzzing`. Each takes
//! arbitrary bytes, runs one parser, decoder or state machine of the library on them, and must
//! return without panicking and without hanging, whatever the bytes.

use std::collections::HashMap;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use crate::attr::{Attributes, Secret};
use crate::bootstrap::frames::{FrameBuf, Hello, Reply, Request, decode};
use crate::bootstrap::server::{ServerHandle, ServerParams};
use crate::bootstrap::uid::UniqueId;
use crate::bootstrap::{addr, url};

/// A target: it runs the library on arbitrary bytes.
pub type Target = fn(&[u8]);

/// The targets, by name: the name is the fuzz target's and its corpus directory's.
pub const TARGETS: &[(&str, Target)] = &[
    ("frames", frames),
    ("bootstrap_url", bootstrap_url),
    ("unique_id", unique_id),
    ("environment", environment),
    ("server_session", server_session),
];

/// The bootstrap's frame decoder: the bytes as a stream, read in chunks whose sizes the first
/// byte chooses, each complete frame decoded as every message type.
pub fn frames(data: &[u8]) {
    let (chunk, mut rest) = match data.split_first() {
        Some((&c, rest)) => (usize::from(c).max(1), rest),
        None => return,
    };
    let mut fb = FrameBuf::default();
    loop {
        let take = chunk.min(rest.len());
        let mut piece = &rest[..take];
        rest = &rest[take..];
        if matches!(fb.read_from(&mut piece), Ok(0) | Err(_)) {
            return;
        }
        loop {
            match fb.next_frame() {
                Ok(Some(f)) => {
                    let _ = decode::<Hello>(f);
                    let _ = decode::<Request>(f);
                    let _ = decode::<Reply>(f);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

/// The `ip_port` and host:port parsers.
pub fn bootstrap_url(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = url::parse_url(s);
    let _ = addr::parse_host_port(s, "address", "[::1]:2000");
}

/// The unique-id decoder (CANN's 136-byte `aclshmemx_uniqueid_t`).
pub fn unique_id(data: &[u8]) {
    if let Ok(u) = UniqueId::from_bytes(data) {
        let _ = u.url();
        let _ = u.to_bytes();
    }
}

/// The launcher-environment parser (`Attributes::from_env` and the settings it reads): the
/// bytes are `KEY=VALUE` lines. An inherited descriptor number is never used.
pub fn environment(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let vars: HashMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.ends_with("_FD"))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let _ = Attributes::from_launcher_env(&|k: &str| vars.get(k).cloned());
    let get = |k: &str| vars.get(k).cloned();
    let _ = crate::settings::symmetric_size(get("SHMEM_SYMMETRIC_SIZE"));
    let _ = crate::settings::bootstrap_secret(get("SHMEM_BOOTSTRAP_SECRET"));
    let _ = crate::settings::seconds_or_off("SHMEM_TIMEOUT", get("SHMEM_TIMEOUT"), None);
}

/// The bootstrap server's state machine: a fresh server of a 2-PE job, and two connections
/// that send it the bytes (split where the first byte says) and close their sending side. Each
/// then reads until the server closes the connection, which it does once it has handled all
/// the bytes and seen the end (or sooner, refusing them). The server must survive whatever
/// they send, and stop when told.
pub fn server_session(data: &[u8]) {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let (a, b) = rest.split_at(usize::from(cut).min(rest.len()));
    let Ok(l) = TcpListener::bind("127.0.0.1:0") else {
        return;
    };
    let Ok(at) = l.local_addr() else {
        return;
    };
    let params = ServerParams {
        n_pes: 2,
        instance_id: 0,
        secret: Secret([7; 16]),
        init_timeout: Duration::from_secs(5),
        op_timeout: Duration::from_secs(5),
        tls: None,
    };
    let mut server = ServerHandle::spawn(l, params).expect("a server starts");
    let clients: Vec<TcpStream> = [a, b]
        .into_iter()
        .filter_map(|bytes| {
            let mut s = TcpStream::connect(at).ok()?;
            let _ = s.write_all(bytes);
            let _ = s.shutdown(std::net::Shutdown::Write);
            Some(s)
        })
        .collect();
    for mut c in clients {
        // A bound, so that a server that never closes shows as a slow input, not a hang.
        let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = std::io::Read::read_to_end(&mut c, &mut Vec::new());
    }
    server.stop_checked();
}

/// Well-formed inputs of every target, from which the corpora grew (and which the replay test
/// also runs): frames of each message type, addresses of each form, a real unique id, the
/// environment of each launcher, and two PEs that join the job and run a barrier.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    use crate::bootstrap::frames::{Blob, MAGIC, VERSION, encode};

    let hello = |rank, secret| Hello {
        magic: MAGIC,
        version: VERSION,
        secret,
        rank,
        n_pes: 2,
        instance_id: 0,
    };
    fn frame(id: u64, m: &impl serde::Serialize) -> Vec<u8> {
        encode(id, m).expect("a seed message encodes")
    }
    let requests = [
        Request::Barrier(1),
        Request::Allgather(2, Blob(vec![1, 2, 3])),
        Request::Bye,
        Request::Exit(7),
    ];
    let mut out = Vec::new();
    let mut stream = vec![5u8];
    stream.extend(frame(1, &hello(1, [7; 16])));
    for (k, r) in requests.iter().enumerate() {
        stream.extend(frame(k as u64 + 2, r));
    }
    stream.extend(frame(
        9,
        &Reply::Gathered(vec![Blob(vec![4]), Blob(vec![])]),
    ));
    out.push(("frames", stream));
    for s in [
        "tcp://127.0.0.1:2000",
        "tcp6://[::1]:3000",
        "tcp://localhost:65535",
        "tcp6://[fe80::1%lo]:5",
        "10.0.0.1:80",
    ] {
        out.push(("bootstrap_url", s.as_bytes().to_vec()));
    }
    if let Ok(uid) = UniqueId::on_loopback() {
        out.push(("unique_id", uid.to_bytes().to_vec()));
    }
    for env in [
        "SHMEMRUN_PE=1\nSHMEMRUN_NPES=4\nSHMEMRUN_BOOTSTRAP=tcp://127.0.0.1:4000\nSHMEMRUN_SECRET=00112233445566778899aabbccddeeff\nSHMEM_SYMMETRIC_SIZE=64M",
        "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nSHMEM_BOOTSTRAP_URL=tcp://10.1.2.3:7000\nSHMEM_JOB_SECRET=ffeeddccbbaa99887766554433221100",
        "SLURM_PROCID=3\nSLURM_NTASKS=8\nSLURM_JOB_ID=17\nSLURM_STEP_ID=0\nSHMEM_TIMEOUT=2.5",
        "PMI_RANK=0\nPMI_SIZE=1\nSHMEM_BOOTSTRAP_SECRET=0123456789abcdef0123456789abcdef",
    ] {
        out.push(("environment", env.as_bytes().to_vec()));
    }
    let pe = |rank| {
        let mut b = frame(1, &hello(rank, [7; 16]));
        b.extend(frame(2, &Request::Barrier(1)));
        b.extend(frame(3, &Request::Barrier(2)));
        b.extend(frame(4, &Request::Bye));
        b
    };
    let (a, b) = (pe(0), pe(1));
    let mut session = vec![a.len() as u8];
    session.extend(a);
    session.extend(b);
    out.push(("server_session", session));
    let mut wrong = vec![40u8];
    wrong.extend(frame(1, &hello(0, [8; 16])));
    out.push(("server_session", wrong));
    out
}
