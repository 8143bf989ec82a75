//! A job-local rendezvous for PEs started by a launcher that gives them ranks but no address
//! (Open MPI's `mpirun`, Slurm's `srun`, PMI launchers) on one host.
//!
//! PE 0 binds its bootstrap server to `127.0.0.1` on a port the system picks, makes a random
//! job secret, and announces both on an abstract Unix socket whose name is derived from the
//! job's key (the launcher's job id) and the instance id. The other PEs connect to that name
//! (retrying until the init timeout) and read the address and the secret. Abstract socket
//! names vanish with their socket, so nothing is left behind; since they carry no permissions,
//! a PE only believes an announcement made by a process of its own user (`SO_PEERCRED`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use super::addr::{self, LOOPBACK};
use super::error::{BootstrapError, BootstrapErrorKind};
use super::url::{BootstrapUrl, parse_url};
use crate::attr::Secret;

const GREETING: &str = "shmem-rendezvous 1";

/// What a PE learns at the rendezvous.
#[derive(Debug)]
pub(crate) struct Meeting {
    /// PE 0's bootstrap address.
    pub(crate) url: BootstrapUrl,
    /// The job secret.
    pub(crate) secret: Secret,
    /// On PE 0: the socket its server serves on.
    pub(crate) listener: Option<TcpListener>,
}

/// The socket's name: this user, a short stable digest of the job key (FNV-1a), the instance.
fn name(key: &str, instance_id: u64) -> Vec<u8> {
    let digest = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let uid = rustix::process::getuid().as_raw();
    format!("shmem-rendezvous.{uid}.{digest:016x}.{instance_id}").into_bytes()
}

fn unix_socket() -> Result<OwnedFd, BootstrapError> {
    rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| BootstrapError::io("creating the rendezvous socket", e))
}

/// Meets the other PEs of `instance_id` of the job `key`: PE 0 announces, the others listen.
pub(crate) fn meet(
    key: &str,
    instance_id: u64,
    my_pe: u32,
    n_pes: u32,
    timeout: Duration,
) -> Result<Meeting, BootstrapError> {
    let addr = SocketAddrUnix::new_abstract_name(&name(key, instance_id))
        .map_err(|e| BootstrapError::io("naming the rendezvous socket", e))?;
    let deadline = Instant::now() + timeout;
    if my_pe != 0 {
        return listen_for(&addr, deadline);
    }
    let listener = addr::bind(SocketAddr::new(LOOPBACK, 0), true)
        .map_err(|e| BootstrapError::io("binding the bootstrap server to 127.0.0.1", e))?;
    let url = BootstrapUrl::of(
        listener
            .local_addr()
            .map_err(|e| BootstrapError::io("reading the server's port", e))?,
    );
    let secret = Secret::random();
    if n_pes > 1 {
        let sock = unix_socket()?;
        // The name may still be held for a moment by this job's previous rendezvous.
        loop {
            match rustix::net::bind(&sock, &addr) {
                Ok(()) => break,
                Err(Errno::ADDRINUSE) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(Errno::ADDRINUSE) => {
                    return Err(BootstrapError::invalid(
                        "another process of this user holds this job's rendezvous name; is a second job running \
                         with the same job key? Set SHMEM_BOOTSTRAP_URL or SHMEM_JOB_KEY",
                    ));
                }
                Err(e) => return Err(BootstrapError::io("binding the rendezvous socket", e)),
            }
        }
        rustix::net::listen(&sock, 128)
            .map_err(|e| BootstrapError::io("listening on the rendezvous socket", e))?;
        let message = format!(
            "{GREETING}\n{url}\n{}\n",
            secret
                .0
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect::<String>()
        );
        std::thread::Builder::new()
            .name("shmem-rendezvous".into())
            .stack_size(64 << 10)
            .spawn(move || serve(sock, message, n_pes - 1, deadline))
            .map_err(|e| BootstrapError::io("starting the rendezvous thread", e))?;
    }
    Ok(Meeting {
        url,
        secret,
        listener: Some(listener),
    })
}

/// Hands `message` to `count` PEs, then closes the name (or at the deadline).
fn serve(sock: OwnedFd, message: String, count: u32, deadline: Instant) {
    let mut served = 0;
    let _ = rustix::io::ioctl_fionbio(&sock, true);
    while served < count && Instant::now() < deadline {
        match rustix::net::accept_with(&sock, SocketFlags::CLOEXEC) {
            Ok(conn) => {
                served += u32::from(
                    std::fs::File::from(conn)
                        .write_all(message.as_bytes())
                        .is_ok(),
                )
            }
            Err(Errno::AGAIN | Errno::INTR) => {
                let ts = Timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                };
                let _ = rustix::event::poll(&mut [PollFd::new(&sock, PollFlags::IN)], Some(&ts));
            }
            Err(e) => {
                tracing::debug!("rendezvous: accept failed: {e}");
                break;
            }
        }
    }
    if served < count {
        tracing::debug!(
            "rendezvous: only {served} of {count} PEs collected the bootstrap address before the deadline"
        );
    }
}

fn listen_for(addr: &SocketAddrUnix, deadline: Instant) -> Result<Meeting, BootstrapError> {
    let start = Instant::now();
    let sock = loop {
        let sock = unix_socket()?;
        match rustix::net::connect(&sock, addr) {
            Ok(()) => break sock,
            Err(Errno::CONNREFUSED | Errno::NOENT | Errno::AGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                let m = format!(
                    "PE 0 never announced its bootstrap address at the job-local rendezvous within {:.1} s; is PE 0 \
                     running on this host? Otherwise set SHMEM_BOOTSTRAP_URL",
                    start.elapsed().as_secs_f64()
                );
                return Err(BootstrapError::new(BootstrapErrorKind::Connect, m)
                    .with_source(std::io::Error::from(e)));
            }
        }
    };
    let cred = rustix::net::sockopt::socket_peercred(&sock)
        .map_err(|e| BootstrapError::io("reading the rendezvous peer's credentials", e))?;
    if cred.uid != rustix::process::getuid() {
        return Err(BootstrapError::invalid(format!(
            "the job's rendezvous name is held by a process of user {}, not this user: refusing its announcement",
            cred.uid.as_raw()
        )));
    }
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let _ = rustix::net::sockopt::set_socket_timeout(
        &sock,
        rustix::net::sockopt::Timeout::Recv,
        Some(left),
    );
    let mut text = String::new();
    std::fs::File::from(sock)
        .take(4096)
        .read_to_string(&mut text)
        .map_err(|e| BootstrapError::io("reading the rendezvous announcement", e))?;
    parse(&text).ok_or_else(|| {
        BootstrapError::protocol(format!("malformed rendezvous announcement {text:?}"))
    })
}

fn parse(text: &str) -> Option<Meeting> {
    let mut lines = text.lines();
    (lines.next()? == GREETING).then_some(())?;
    let url = parse_url(lines.next()?).ok()?;
    let secret = Secret::from_hex(lines.next()?)?;
    Some(Meeting {
        url,
        secret,
        listener: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pes_meet_and_agree() {
        let key = format!("test-{}-{}", std::process::id(), rand::random::<u32>());
        let n = 4;
        let threads: Vec<_> = (0..n)
            .map(|pe| {
                let key = key.clone();
                std::thread::spawn(move || meet(&key, 7, pe, n, Duration::from_secs(10)))
            })
            .collect();
        let got: Vec<Meeting> = threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        let port = got[0]
            .listener
            .as_ref()
            .expect("PE 0 serves")
            .local_addr()
            .unwrap()
            .port();
        assert_eq!(got[0].url.port, port);
        for m in &got[1..] {
            assert!(m.listener.is_none());
            assert_eq!((&m.url, m.secret), (&got[0].url, got[0].secret));
        }
    }

    #[test]
    fn a_pe_without_pe_zero_gives_up_with_a_clear_error() {
        let key = format!("lonely-{}", rand::random::<u64>());
        let t = Instant::now();
        let e = meet(&key, 0, 3, 4, Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), &BootstrapErrorKind::Connect);
        assert!(e.to_string().contains("SHMEM_BOOTSTRAP_URL"), "{e}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "took {:?}",
            t.elapsed()
        );
    }

    #[test]
    fn announcements_parse() {
        let m = parse(&format!(
            "{GREETING}\ntcp://127.0.0.1:40000\n{}\n",
            "ab".repeat(16)
        ))
        .unwrap();
        assert_eq!(m.url.port, 40000);
        assert!(parse("hello\n").is_none());
        assert!(parse(&format!("{GREETING}\ntcp://127.0.0.1:40000\nzz\n")).is_none());
    }
}
