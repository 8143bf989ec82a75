//! Handing the instance's memory object to every PE without giving it a name.
//!
//! One memory object holds the segments of all PEs of an instance: PE 0 creates it, and after
//! the core's allgather tells PE 0 where every peer listens, PE 0 sends its descriptor to each
//! peer as `SCM_RIGHTS` ancillary data over Unix datagram sockets bound to random *abstract*
//! addresses (which vanish with the socket, leaving nothing in any filesystem). The kernel
//! attaches the sender's credentials, and a peer accepts the descriptor only from the process
//! that announced itself as PE 0. A job of `n` PEs passes `n - 1` descriptors and each PE maps
//! one object, so start-up grows linearly with the PEs. Sends never block: PE 0 waits for room
//! in its socket's buffer instead.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use shmem_backend::{Exchange, Pe, TransportError};

const VERSION: u32 = 2;
const MAGIC: u32 = 0x5348_4d46; // "SHMF"
/// The PE that creates and hands out the object.
const ROOT: Pe = 0;

/// What each PE tells the others through the allgather: kept small, since every PE receives
/// every announcement.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Announce {
    pe: Pe,
    pid: u32,
    /// Names this PE's socket, with `pid`.
    nonce: u64,
    /// The object's length as this PE computes it.
    object_len: u64,
    /// The running kernel (PE 0's only: the others compare theirs with it).
    boot_id: String,
}

impl Announce {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(30 + self.boot_id.len());
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&self.pe.to_le_bytes());
        v.extend_from_slice(&self.pid.to_le_bytes());
        v.extend_from_slice(&self.nonce.to_le_bytes());
        v.extend_from_slice(&self.object_len.to_le_bytes());
        v.extend_from_slice(&(self.boot_id.len() as u16).to_le_bytes());
        v.extend_from_slice(self.boot_id.as_bytes());
        v
    }

    fn decode(b: &[u8]) -> Option<Announce> {
        let u32_at = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?));
        if u32_at(0)? != VERSION {
            return None;
        }
        let n = u16::from_le_bytes(b.get(28..30)?.try_into().ok()?) as usize;
        if b.len() != 30 + n {
            return None;
        }
        Some(Announce {
            pe: u32_at(4)?,
            pid: u32_at(8)?,
            nonce: u64_at(12)?,
            object_len: u64_at(20)?,
            boot_id: String::from_utf8(b[30..].to_vec()).ok()?,
        })
    }

    /// The abstract name of this PE's socket.
    fn socket_name(&self) -> Vec<u8> {
        format!("shmem-sim.{}.{:016x}.{}", self.pid, self.nonce, self.pe).into_bytes()
    }
}

/// An identifier of the running kernel: PEs that share memory must run under the same one. A
/// failure to read it (for example no descriptor left) is this PE's error, never a mismatch.
fn boot_id() -> Result<String, TransportError> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .map_err(|e| TransportError::os("reading the kernel's boot id", e))
}

fn os(context: impl Into<String>) -> impl FnOnce(Errno) -> TransportError {
    let context = context.into();
    move |e| TransportError::os(context, e)
}

/// Hands `object` (PE 0's; `None` elsewhere), a memory object of `object_len` bytes, to every
/// PE, and returns it. Every PE of the instance must call it at the same point of its `open`.
pub(crate) fn share_object(
    my_pe: Pe,
    n_pes: u32,
    object: Option<OwnedFd>,
    object_len: u64,
    exchange: &mut dyn Exchange,
    timeout: Duration,
) -> Result<OwnedFd, TransportError> {
    assert_eq!(
        object.is_some(),
        my_pe == ROOT,
        "PE 0, and only PE 0, creates the instance's memory object"
    );
    let sock = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(os("creating the descriptor-exchange socket"))?;
    let me = Announce {
        pe: my_pe,
        pid: rustix::process::getpid().as_raw_nonzero().get() as u32,
        nonce: rand::random::<u64>(),
        object_len,
        boot_id: if my_pe == ROOT {
            boot_id()?
        } else {
            String::new()
        },
    };
    if my_pe != ROOT {
        let addr = SocketAddrUnix::new_abstract_name(&me.socket_name())
            .map_err(os("naming the descriptor-exchange socket"))?;
        rustix::net::bind(&sock, &addr).map_err(os("binding the descriptor-exchange socket"))?;
        rustix::net::sockopt::set_socket_passcred(&sock, true)
            .map_err(os("enabling sender credentials"))?;
    }
    let all = exchange.allgather(&me.encode())?;
    if all.len() != n_pes as usize {
        return Err(TransportError::Exchange(format!(
            "the allgather returned {} entries for {n_pes} PEs",
            all.len()
        )));
    }
    let decode = |pe: usize| {
        Announce::decode(&all[pe])
            .filter(|a| a.pe == pe as Pe)
            .ok_or_else(|| {
                TransportError::Attach(format!("PE {pe} sent a malformed segment announcement"))
            })
    };
    let agree = |a: &Announce| {
        if a.object_len == object_len {
            return Ok(());
        }
        Err(TransportError::Attach(format!(
            "PE {} computes a memory object of {} bytes, this PE {object_len}: the PEs disagree about local_mem_size",
            a.pe, a.object_len
        )))
    };
    let deadline = Instant::now() + timeout;
    let root = decode(ROOT as usize)?;
    agree(&root)?;
    match object {
        Some(object) => {
            let peers = (1..n_pes as usize)
                .map(|pe| decode(pe).and_then(|a| agree(&a).map(|()| a)))
                .collect::<Result<Vec<_>, _>>()?;
            hand_out(&sock, &object, &peers, deadline, timeout)?;
            Ok(object)
        }
        None => {
            let mine = boot_id()?;
            if root.boot_id != mine {
                return Err(TransportError::Attach(format!(
                    "PE 0 runs on another host or kernel (boot id {} vs {mine}): the sim transport needs every PE of an instance on one host",
                    root.boot_id
                )));
            }
            receive(&sock, &root, my_pe, deadline, timeout)
        }
    }
}

/// PE 0's side: sends the object to every peer, waiting for room in the socket's buffer.
fn hand_out(
    sock: &OwnedFd,
    object: &OwnedFd,
    peers: &[Announce],
    deadline: Instant,
    timeout: Duration,
) -> Result<(), TransportError> {
    let mut next = 0;
    while next < peers.len() {
        let p = &peers[next];
        match send_object(sock, &p.socket_name(), object) {
            Ok(()) => next += 1,
            Err(Errno::AGAIN | Errno::NOBUFS | Errno::INTR) => {
                if Instant::now() >= deadline {
                    return Err(TransportError::Timeout {
                        what: format!(
                            "handing the instance's memory to PEs {}..{}",
                            p.pe,
                            peers.len()
                        ),
                        seconds: timeout.as_secs_f64(),
                    });
                }
                wait_for(sock, PollFlags::OUT, "waiting to hand out the segments")?;
            }
            Err(e) => {
                return Err(TransportError::Attach(format!(
                    "cannot hand the instance's memory to PE {} ({e}): the PE exited, or runs in another network namespace",
                    p.pe
                )));
            }
        }
    }
    Ok(())
}

/// Waits up to a millisecond for `flags` on `sock`.
fn wait_for(sock: &OwnedFd, flags: PollFlags, what: &str) -> Result<(), TransportError> {
    let mut fds = [PollFd::new(sock, flags)];
    let ts = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    match rustix::event::poll(&mut fds, Some(&ts)) {
        Ok(_) | Err(Errno::INTR) => Ok(()),
        Err(e) => Err(TransportError::os(what, e)),
    }
}

fn send_object(sock: &OwnedFd, to: &[u8], object: &OwnedFd) -> Result<(), Errno> {
    let addr = SocketAddrUnix::new_abstract_name(to)?;
    let mut payload = [0u8; 8];
    payload[..4].copy_from_slice(&MAGIC.to_le_bytes());
    payload[4..].copy_from_slice(&ROOT.to_le_bytes());
    let fds = [object.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    match rustix::net::sendmsg_addr(
        sock,
        &addr,
        &[IoSlice::new(&payload)],
        &mut control,
        SendFlags::DONTWAIT,
    ) {
        Ok(8) => Ok(()),
        Ok(_) => Err(Errno::MSGSIZE),
        Err(e) => Err(e),
    }
}

/// A peer's side: waits for PE 0's descriptor.
fn receive(
    sock: &OwnedFd,
    root: &Announce,
    my_pe: Pe,
    deadline: Instant,
    timeout: Duration,
) -> Result<OwnedFd, TransportError> {
    loop {
        if let Some(fd) = receive_object(sock, root)? {
            return Ok(fd);
        }
        if Instant::now() >= deadline {
            return Err(TransportError::Timeout {
                what: format!("PE 0's memory object (PE {my_pe} received nothing from it)"),
                seconds: timeout.as_secs_f64(),
            });
        }
        wait_for(sock, PollFlags::IN, "waiting for PE 0's memory object")?;
    }
}

/// Receives one pending datagram, if any: the object, when PE 0 sent it.
fn receive_object(sock: &OwnedFd, root: &Announce) -> Result<Option<OwnedFd>, TransportError> {
    let mut payload = [0u8; 16];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2), ScmCredentials(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = match rustix::net::recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut payload)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    ) {
        Ok(m) => m,
        Err(Errno::AGAIN | Errno::INTR) => return Ok(None),
        Err(e) => return Err(TransportError::os("receiving PE 0's memory object", e)),
    };
    let mut fd = None;
    let mut sender = None;
    for m in control.drain() {
        match m {
            RecvAncillaryMessage::ScmRights(mut fds) => {
                fd = fds.next();
                // Extra descriptors (never sent by PE 0) are closed as the iterator drops.
            }
            RecvAncillaryMessage::ScmCredentials(c) => {
                sender = Some((c.pid.as_raw_nonzero().get() as u32, c.uid));
            }
            _ => {}
        }
    }
    let magic = u32::from_le_bytes(payload[..4].try_into().expect("4 bytes"));
    let pe = u32::from_le_bytes(payload[4..8].try_into().expect("4 bytes"));
    let known = msg.bytes == 8 && magic == MAGIC && pe == ROOT;
    let me = rustix::process::getuid();
    match (known, fd, sender) {
        // The kernel vouches for the sender's process and user.
        (true, Some(fd), Some((pid, uid))) if pid == root.pid && uid == me => Ok(Some(fd)),
        _ => {
            // Not from PE 0 of this instance (or malformed): drop it and keep waiting.
            tracing::warn!(
                "ignored a stray datagram on the segment-exchange socket (claimed PE {pe}, sender pid and user {sender:?})"
            );
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announce_round_trips() {
        for boot_id in ["", "abc"] {
            let a = Announce {
                pe: 3,
                pid: 77,
                nonce: 0x1234_5678_9abc_def0,
                object_len: 1 << 30,
                boot_id: boot_id.into(),
            };
            assert_eq!(Announce::decode(&a.encode()), Some(a.clone()));
            assert_eq!(Announce::decode(&a.encode()[..10]), None);
            let mut long = a.encode();
            long.push(0);
            assert_eq!(Announce::decode(&long), None);
        }
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

    /// A PE's exchange socket refuses a memory object sent by a process of another user (here a
    /// forked child of PE 0's process that dropped to `nobody`), and takes PE 0's own.
    #[test]
    #[cfg_attr(
        not_root,
        ignore = "needs root to act as another user (CI runs as root)"
    )]
    fn an_object_from_another_user_is_refused() {
        let dgram = || {
            rustix::net::socket_with(
                AddressFamily::UNIX,
                SocketType::DGRAM,
                SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
                None,
            )
            .unwrap()
        };
        let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
        let announce = |pe| Announce {
            pe,
            pid,
            nonce: rand::random::<u64>(),
            object_len: 4096,
            boot_id: String::new(),
        };
        let (root, peer) = (announce(ROOT), announce(1));
        let sock = dgram();
        let name = peer.socket_name();
        let addr = SocketAddrUnix::new_abstract_name(&name).unwrap();
        rustix::net::bind(&sock, &addr).unwrap();
        rustix::net::sockopt::set_socket_passcred(&sock, true).unwrap();
        let object = rustix::fs::memfd_create(c"test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let sender = dgram();
        let code = as_nobody(|| match send_object(&sender, &name, &object) {
            Ok(()) => 0,
            Err(_) => 1,
        });
        assert_eq!(code, 0, "the other user's process could not even send");
        assert!(
            receive_object(&sock, &root).unwrap().is_none(),
            "an object from another user was taken"
        );
        send_object(&sender, &name, &object).expect("PE 0 sends");
        assert!(
            receive_object(&sock, &root).unwrap().is_some(),
            "PE 0's object was refused"
        );
    }
}
