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
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use crate::attr::Secret;
use crate::bootstrap::BootstrapError;
use crate::bootstrap::url::{BootstrapUrl, FamilyHint, Host};

const GREETING: &str = "shmem-rendezvous 1";

/// What a PE learns at the rendezvous.
#[derive(Debug)]
pub(crate) struct Meeting {
    /// PE 0's bootstrap address.
    pub url: BootstrapUrl,
    /// The job secret.
    pub secret: Secret,
    /// On PE 0: the socket its server serves on.
    pub listener: Option<TcpListener>,
}

/// A short stable digest of the job key (FNV-1a), for the socket name.
fn digest(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn name(key: &str, instance_id: u64) -> Vec<u8> {
    let uid = rustix::process::getuid().as_raw();
    format!("shmem-rendezvous.{uid}.{:016x}.{instance_id}", digest(key)).into_bytes()
}

fn io_err(context: &str) -> impl FnOnce(Errno) -> BootstrapError + '_ {
    move |e| BootstrapError::Io {
        context: context.to_string(),
        source: e.into(),
    }
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
        .map_err(io_err("naming the rendezvous socket"))?;
    if my_pe == 0 {
        announce(addr, n_pes, timeout)
    } else {
        listen_for(addr, timeout)
    }
}

fn announce(
    addr: SocketAddrUnix,
    n_pes: u32,
    timeout: Duration,
) -> Result<Meeting, BootstrapError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| BootstrapError::Io {
        context: "binding the bootstrap server to 127.0.0.1".into(),
        source: e,
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| BootstrapError::Io {
            context: "reading the server's port".into(),
            source: e,
        })?
        .port();
    let secret = Secret::random();
    let url = BootstrapUrl {
        host: Host::Ipv4(Ipv4Addr::LOCALHOST),
        port,
        family_hint: FamilyHint::Tcp,
    };
    if n_pes > 1 {
        let sock = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(io_err("creating the rendezvous socket"))?;
        // The name may still be held for a moment by this job's previous rendezvous.
        let deadline = Instant::now() + timeout;
        loop {
            match rustix::net::bind(&sock, &addr) {
                Ok(()) => break,
                Err(Errno::ADDRINUSE) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(Errno::ADDRINUSE) => {
                    return Err(BootstrapError::Invalid(
                        "another process of this user holds this job's rendezvous name; is a second job running with the same job key? Set SHMEM_BOOTSTRAP_URL or SHMEM_JOB_KEY".into(),
                    ));
                }
                Err(e) => return Err(io_err("binding the rendezvous socket")(e)),
            }
        }
        rustix::net::listen(&sock, 128).map_err(io_err("listening on the rendezvous socket"))?;
        let message = format!("{GREETING}\n{url}\n{}\n", hex(secret.as_bytes()));
        std::thread::Builder::new()
            .name("shmem-rendezvous".into())
            .stack_size(64 << 10)
            .spawn(move || serve(sock, message, n_pes - 1, deadline))
            .map_err(|e| BootstrapError::Io {
                context: "starting the rendezvous thread".into(),
                source: e,
            })?;
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
                let mut f = std::fs::File::from(conn);
                if f.write_all(message.as_bytes()).is_ok() {
                    served += 1;
                }
            }
            Err(Errno::AGAIN | Errno::INTR) => {
                let mut fds = [rustix::event::PollFd::new(
                    &sock,
                    rustix::event::PollFlags::IN,
                )];
                let ts = rustix::time::Timespec {
                    tv_sec: 0,
                    tv_nsec: 20_000_000,
                };
                let _ = rustix::event::poll(&mut fds, Some(&ts));
            }
            Err(e) => {
                tracing::warn!("rendezvous: accept failed: {e}");
                break;
            }
        }
    }
    if served < count {
        tracing::warn!(
            "rendezvous: only {served} of {count} PEs collected the bootstrap address before the deadline"
        );
    }
}

fn listen_for(addr: SocketAddrUnix, timeout: Duration) -> Result<Meeting, BootstrapError> {
    let deadline = Instant::now() + timeout;
    let start = Instant::now();
    let sock = loop {
        let sock = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(io_err("creating the rendezvous socket"))?;
        match rustix::net::connect(&sock, &addr) {
            Ok(()) => break sock,
            Err(Errno::CONNREFUSED | Errno::NOENT | Errno::AGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                return Err(BootstrapError::Connect {
                    url: "the job-local rendezvous".into(),
                    after: start.elapsed(),
                    detail: format!(
                        "PE 0 never announced its bootstrap address ({e}); is PE 0 running on this host? Otherwise set SHMEM_BOOTSTRAP_URL"
                    ),
                });
            }
        }
    };
    let cred = rustix::net::sockopt::socket_peercred(&sock)
        .map_err(io_err("reading the rendezvous peer's credentials"))?;
    if cred.uid != rustix::process::getuid() {
        return Err(BootstrapError::Invalid(format!(
            "the job's rendezvous name is held by a process of user {}, not this user: refusing its announcement",
            cred.uid.as_raw()
        )));
    }
    let _ = rustix::net::sockopt::set_socket_timeout(
        &sock,
        rustix::net::sockopt::Timeout::Recv,
        Some(
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ),
    );
    let mut text = String::new();
    std::fs::File::from(sock)
        .take(4096)
        .read_to_string(&mut text)
        .map_err(|e| BootstrapError::Io {
            context: "reading the rendezvous announcement".into(),
            source: e,
        })?;
    parse(&text).ok_or_else(|| {
        BootstrapError::Protocol(format!("malformed rendezvous announcement {text:?}"))
    })
}

fn parse(text: &str) -> Option<Meeting> {
    let mut lines = text.lines();
    (lines.next()? == GREETING).then_some(())?;
    let url = crate::bootstrap::url::parse_url(lines.next()?).ok()?;
    let secret = Secret::from_hex(lines.next()?)?;
    Some(Meeting {
        url,
        secret,
        listener: None,
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
        assert!(got[0].listener.is_some());
        for m in &got[1..] {
            assert!(m.listener.is_none());
            assert_eq!(m.url, got[0].url);
            assert_eq!(m.secret, got[0].secret);
        }
        assert_eq!(
            got[0].url.port,
            got[0]
                .listener
                .as_ref()
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        );
    }

    #[test]
    fn a_pe_without_pe_zero_gives_up_with_a_clear_error() {
        let key = format!("lonely-{}", rand::random::<u64>());
        let e = meet(&key, 0, 3, 4, Duration::from_millis(100)).unwrap_err();
        assert!(e.to_string().contains("SHMEM_BOOTSTRAP_URL"), "{e}");
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
    }
}
