//! The bootstrap of jobs that meet at an address the user gives (issue 14, item 5), with the
//! `port_job` example: two jobs on one port never mix, and `SHMEM_BOOTSTRAP_SECRET` keeps PEs
//! of another job out. (Another user's process is refused at the job-local rendezvous and at
//! the descriptor exchange: unit tests of `bootstrap::rendezvous` and `shmem_sim`'s
//! `fd_exchange`, which need root.)

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../tests/common/mod.rs"]
mod common;

/// A port that was free a moment ago, below the ephemeral range.
fn free_port() -> u16 {
    loop {
        let p = 20_000 + rand_u16() % 10_000;
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
}

fn rand_u16() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish() as u16
}

/// One PE of a `port_job` job, its standard input held open (closing it lets it finalize).
struct Pe {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Pe {
    fn start(pe: u32, n: u32, port: u16, secret: Option<&str>) -> Pe {
        Pe::start_with(pe, n, port, secret, &[])
    }

    /// [`Pe::start`] with more settings in its environment.
    fn start_with(pe: u32, n: u32, port: u16, secret: Option<&str>, vars: &[(&str, String)]) -> Pe {
        let mut cmd = Command::new(common::example("port_job"));
        cmd.args([pe.to_string(), n.to_string(), port.to_string()])
            .env("SHMEM_TIMEOUT", "60")
            .env_remove("SHMEM_BOOTSTRAP_SECRET")
            .env_remove("SHMEM_BOOTSTRAP_TLS_CA")
            .env_remove("SHMEM_BOOTSTRAP_TLS_CERT")
            .env_remove("SHMEM_BOOTSTRAP_TLS_KEY")
            .envs(vars.iter().map(|(k, v)| (*k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for v in shmem_sim::launcher::env::ALL {
            cmd.env_remove(v);
        }
        if let Some(s) = secret {
            cmd.env("SHMEM_BOOTSTRAP_SECRET", s);
        }
        let mut child = cmd.spawn().expect("port_job starts");
        let out = BufReader::new(child.stdout.take().expect("piped"));
        Pe { child, out }
    }

    /// The PE's next line of output.
    fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).expect("reading the PE's output");
        l.trim().to_owned()
    }

    /// Lets the PE finalize, and returns its last line and whether it succeeded.
    fn finish(self) -> (String, bool) {
        finish_all(vec![self]).remove(0)
    }
}

/// Lets every PE of `pes` finalize (their finalize is collective), and returns each one's last
/// line and whether it succeeded.
fn finish_all(mut pes: Vec<Pe>) -> Vec<(String, bool)> {
    for p in &mut pes {
        drop(p.child.stdin.take());
    }
    pes.into_iter()
        .map(|mut p| {
            let last = p.line();
            (last, p.child.wait().expect("the PE ends").success())
        })
        .collect()
}

/// A running 3-PE job on `port`, every PE joined.
fn first_job(port: u16, secret: Option<&str>) -> Vec<Pe> {
    let mut pes: Vec<Pe> = (0..3).map(|pe| Pe::start(pe, 3, port, secret)).collect();
    for (pe, p) in pes.iter_mut().enumerate() {
        assert_eq!(p.line(), format!("PE {pe} joined"));
    }
    pes
}

/// A second job on the same port while the first runs: each of its PEs fails at once (PE 0
/// cannot bind the port, which the error names; the others are refused by the first job's
/// server), and the first job completes.
#[test]
fn a_second_job_on_a_busy_port_fails_at_once_and_never_joins_the_first() {
    for secrets in [(None, None), (Some(SECRET_A), Some(SECRET_B))] {
        let port = free_port();
        let first = first_job(port, secrets.0);
        let start = Instant::now();
        let second: Vec<Pe> = (0..3).map(|pe| Pe::start(pe, 3, port, secrets.1)).collect();
        for (pe, (line, ok)) in finish_all(second).into_iter().enumerate() {
            assert!(!ok, "{secrets:?}: PE {pe} of the second job: {line}");
            assert!(line.starts_with(&format!("PE {pe} failed: ")), "{line}");
            if pe == 0 {
                assert!(
                    line.contains(&format!("127.0.0.1:{port}")) && line.contains("in use"),
                    "{line}"
                );
            } else if secrets.1.is_some() {
                assert!(line.contains("belongs to another job"), "{line}");
            } else {
                // CANN's magic cannot tell the jobs apart, but the first job's PEs hold every
                // PE number.
                assert!(
                    line.contains(&format!("PE {pe} is already connected")),
                    "{line}"
                );
            }
        }
        let took = start.elapsed();
        println!(
            "{secrets:?}: the second job failed in {:.2} s",
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(30), "{took:?}");
        for (pe, (line, ok)) in finish_all(first).into_iter().enumerate() {
            assert!(ok && line == format!("PE {pe} ok"), "{secrets:?}: {line}");
        }
    }
}

const SECRET_A: &str = "0123456789abcdef0123456789abcdef";
const SECRET_B: &str = "fedcba9876543210fedcba9876543210";

/// With `SHMEM_BOOTSTRAP_SECRET`, a PE that brings another secret is refused, and one that
/// brings the job's joins: the job completes.
#[test]
fn the_bootstrap_secret_keeps_out_a_pe_with_another_one() {
    let port = free_port();
    let mut pes = vec![Pe::start(0, 2, port, Some(SECRET_A))];
    let (line, ok) = Pe::start(1, 2, port, Some(SECRET_B)).finish();
    assert!(!ok && line.contains("belongs to another job"), "{line}");
    let (line, ok) = Pe::start(1, 2, port, None).finish();
    assert!(!ok && line.contains("belongs to another job"), "{line}");
    pes.push(Pe::start(1, 2, port, Some(SECRET_A)));
    for (pe, p) in pes.iter_mut().enumerate() {
        assert_eq!(p.line(), format!("PE {pe} joined"));
    }
    for (pe, (line, ok)) in finish_all(pes).into_iter().enumerate() {
        assert!(ok && line == format!("PE {pe} ok"), "{line}");
    }
}

/// An `ip_port` job whose PEs set `SHMEM_BOOTSTRAP_TLS_*` (the library built with the feature
/// `tls`, as the tests build it) meets over TLS with certificates of one authority; a PE that
/// sets only some of the settings fails at once, naming the missing ones.
#[test]
fn a_job_with_tls_settings_meets_over_tls_and_half_settings_are_refused() {
    let pki = common::pki::Pki::new("security");
    let path = |f: &str| pki.path(f);
    let tls = [
        ("SHMEM_BOOTSTRAP_TLS_CA", path("ca.pem")),
        ("SHMEM_BOOTSTRAP_TLS_CERT", path("cert.pem")),
        ("SHMEM_BOOTSTRAP_TLS_KEY", path("key.pem")),
    ];
    let port = free_port();
    let mut pes: Vec<Pe> = (0..3)
        .map(|pe| Pe::start_with(pe, 3, port, None, &tls))
        .collect();
    for (pe, p) in pes.iter_mut().enumerate() {
        assert_eq!(p.line(), format!("PE {pe} joined"));
    }
    for (pe, (line, ok)) in finish_all(pes).into_iter().enumerate() {
        assert!(ok && line == format!("PE {pe} ok"), "{line}");
    }
    let (line, ok) = Pe::start_with(0, 1, free_port(), None, &tls[..1]).finish();
    assert!(
        !ok && line.contains("SHMEM_BOOTSTRAP_TLS_CERT and SHMEM_BOOTSTRAP_TLS_KEY"),
        "{line}"
    );
}
