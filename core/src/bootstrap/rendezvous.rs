//! A job-local rendezvous for PEs started by a launcher that gives them ranks but no address
//! (Open MPI's `mpirun`, Slurm's `srun`, PMI launchers) on one host.
//!
//! PE 0 makes a unique id on `127.0.0.1` (a port the system picks, a random job secret: see
//! [`UniqueId`]) and announces its bytes on an abstract Unix socket whose name is derived from
//! the job's key (the launcher's job id) and the instance id. The other PEs connect to that
//! name (retrying until the init timeout) and read the id. Abstract socket names vanish with
//! their socket, so nothing is left behind; since they carry no permissions, a PE only
//! believes an announcement made by a process of its own user (`SO_PEERCRED`).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

use super::error::{BootstrapError, BootstrapErrorKind};
use super::uid::UniqueId;

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

/// Meets the other PEs of `instance_id` of the job `key`: PE 0 makes the unique id and
/// announces it, the others receive it.
pub(crate) fn meet(
    key: &str,
    instance_id: u64,
    my_pe: u32,
    n_pes: u32,
    timeout: Duration,
) -> Result<UniqueId, BootstrapError> {
    let addr = SocketAddrUnix::new_abstract_name(&name(key, instance_id))
        .map_err(|e| BootstrapError::io("naming the rendezvous socket", e))?;
    let deadline = Instant::now() + timeout;
    if my_pe != 0 {
        return listen_for(&addr, deadline);
    }
    let uid = UniqueId::on_loopback()?;
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
        let message = uid.to_bytes();
        std::thread::Builder::new()
            .name("shmem-rendezvous".into())
            .stack_size(64 << 10)
            .spawn(move || serve(sock, &message, n_pes - 1, deadline))
            .map_err(|e| BootstrapError::thread("starting the rendezvous thread", e))?;
    }
    Ok(uid)
}

/// Hands `message` to `count` PEs, then closes the name (or at the deadline: every wait for
/// the next PE is bounded by the time left, as the socket's receive timeout).
fn serve(sock: OwnedFd, message: &[u8], count: u32, deadline: Instant) {
    let mut served = 0;
    while served < count {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || sockopt::set_socket_timeout(&sock, Timeout::Recv, Some(left)).is_err()
        {
            break;
        }
        match rustix::net::accept_with(&sock, SocketFlags::CLOEXEC) {
            // The announcement holds the job's secret: only a process of this user reads it
            // (abstract names carry no permissions). Another user's connection is closed unread.
            Ok(conn) if !same_user(&conn) => {
                tracing::debug!("rendezvous: refused a connection from another user");
            }
            Ok(conn) => served += u32::from(File::from(conn).write_all(message).is_ok()),
            Err(Errno::AGAIN | Errno::INTR) => {}
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

/// Whether the process at the other end of `conn` runs as this process's user.
fn same_user(conn: &OwnedFd) -> bool {
    sockopt::socket_peercred(conn).is_ok_and(|c| c.uid == rustix::process::getuid())
}

fn listen_for(addr: &SocketAddrUnix, deadline: Instant) -> Result<UniqueId, BootstrapError> {
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
    let cred = sockopt::socket_peercred(&sock)
        .map_err(|e| BootstrapError::io("reading the rendezvous peer's credentials", e))?;
    if cred.uid != rustix::process::getuid() {
        return Err(BootstrapError::invalid(format!(
            "the job's rendezvous name is held by a process of user {}, not this user: refusing its announcement",
            cred.uid.as_raw()
        )));
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let left = left.max(Duration::from_millis(1));
    let _ = sockopt::set_socket_timeout(&sock, Timeout::Recv, Some(left));
    let mut bytes = Vec::new();
    let read = File::from(sock).take(4096).read_to_end(&mut bytes);
    read.map_err(|e| BootstrapError::io("reading the rendezvous announcement", e))?;
    UniqueId::from_bytes(&bytes).map_err(|e| {
        let m = format!("malformed rendezvous announcement of {} bytes", bytes.len());
        BootstrapError::protocol(m).with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::addr::{Host, LOOPBACK};

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
        let got: Vec<UniqueId> = threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        let url = got[0].url().expect("PE 0's id");
        assert_eq!(url.host, Host::Ip(LOOPBACK));
        for m in &got[1..] {
            assert_eq!(
                (m.url().unwrap(), m.secret()),
                (url.clone(), got[0].secret())
            );
        }
        let l = got[0]
            .take_listener()
            .expect("PE 0 serves on the id's socket");
        assert_eq!(l.local_addr().unwrap().port(), url.port);
        assert!(got[1].take_listener().is_none(), "taken once");
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
    fn a_malformed_announcement_is_refused() {
        let key = format!("garbage-{}", rand::random::<u64>());
        let addr = SocketAddrUnix::new_abstract_name(&name(&key, 0)).unwrap();
        let sock = unix_socket().unwrap();
        rustix::net::bind(&sock, &addr).unwrap();
        rustix::net::listen(&sock, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let announcer = std::thread::spawn(move || serve(sock, b"hello\n", 1, deadline));
        let e = meet(&key, 0, 1, 2, Duration::from_secs(10)).unwrap_err();
        assert_eq!(e.kind(), &BootstrapErrorKind::Protocol);
        assert!(
            e.to_string()
                .contains("malformed rendezvous announcement of 6 bytes")
                && std::error::Error::source(&e).is_some(),
            "{e}"
        );
        announcer.join().unwrap();
    }

    /// Runs `f` in a forked child that has become user and group `nobody` (65534), and returns
    /// its exit status. The child makes only system calls (no allocation, no lock).
    fn as_nobody(f: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the child only calls async-signal-safe functions (setgid, setuid, the socket
        // calls of `f`, `_exit`) before it exits; the parent waits for it.
        unsafe {
            match libc::fork() {
                0 => {
                    let code = if libc::setgid(65534) == 0 && libc::setuid(65534) == 0 {
                        f()
                    } else {
                        99
                    };
                    libc::_exit(code)
                }
                -1 => panic!("fork failed"),
                child => {
                    let mut status = 0;
                    assert_eq!(libc::waitpid(child, &mut status, 0), child);
                    assert!(libc::WIFEXITED(status), "the child ended with {status:#x}");
                    libc::WEXITSTATUS(status)
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        not_root,
        ignore = "needs root to act as another user (CI runs as root)"
    )]
    fn another_users_process_is_refused_the_announcement() {
        let key = format!("cross-user-{}", rand::random::<u64>());
        let announced = meet(&key, 9, 0, 2, Duration::from_secs(30)).expect("PE 0 announces");
        let addr = SocketAddrUnix::new_abstract_name(&name(&key, 9)).unwrap();
        let code = as_nobody(|| {
            let Ok(sock) = rustix::net::socket(AddressFamily::UNIX, SocketType::STREAM, None)
            else {
                return 2;
            };
            if rustix::net::connect(&sock, &addr).is_err() {
                return 3;
            }
            let mut buf = [0u8; 256];
            match rustix::io::read(&sock, &mut buf) {
                Ok(0) => 0,
                Ok(_) => 1,
                Err(_) => 4,
            }
        });
        assert_eq!(
            code, 0,
            "another user's process (1: it read the announcement, 2-4: it could not try)"
        );
        // The job's own PE still receives it.
        let got = meet(&key, 9, 1, 2, Duration::from_secs(30)).expect("PE 1 meets PE 0");
        assert_eq!(got.secret(), announced.secret());
    }
}
