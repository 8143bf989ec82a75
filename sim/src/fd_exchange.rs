//! Handing each PE's memory object to its peers without giving it a name.
//!
//! After the core's allgather tells every PE where its peers listen, each PE sends its `memfd`
//! to every peer as `SCM_RIGHTS` ancillary data over Unix datagram sockets bound to random
//! *abstract* addresses (which vanish with the socket, leaving nothing in any filesystem). The
//! kernel attaches the sender's credentials, and a descriptor is accepted only from the process
//! that announced itself as that PE. Sends never block, so PEs that exchange with each other
//! cannot deadlock on full queues (`net.unix.max_dgram_qlen` is often 10).

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use shmem_backend::{Exchange, Pe, TransportError};

const VERSION: u32 = 1;
const MAGIC: u32 = 0x5348_4d46; // "SHMF"

/// What each PE tells the others through the allgather.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Announce {
    pe: Pe,
    pid: u32,
    object_len: u64,
    boot_id: String,
    socket: Vec<u8>,
}

impl Announce {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32 + self.boot_id.len() + self.socket.len());
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&self.pe.to_le_bytes());
        v.extend_from_slice(&self.pid.to_le_bytes());
        v.extend_from_slice(&self.object_len.to_le_bytes());
        for part in [self.boot_id.as_bytes(), &self.socket] {
            v.extend_from_slice(&(part.len() as u16).to_le_bytes());
            v.extend_from_slice(part);
        }
        v
    }

    fn decode(b: &[u8]) -> Option<Announce> {
        let u32_at = |i: usize| Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?));
        if u32_at(0)? != VERSION {
            return None;
        }
        let pe = u32_at(4)?;
        let pid = u32_at(8)?;
        let object_len = u64::from_le_bytes(b.get(12..20)?.try_into().ok()?);
        let mut at = 20;
        let mut part = || {
            let n = u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize;
            let p = b.get(at + 2..at + 2 + n)?.to_vec();
            at += 2 + n;
            Some(p)
        };
        let boot_id = String::from_utf8(part()?).ok()?;
        let socket = part()?;
        Some(Announce {
            pe,
            pid,
            object_len,
            boot_id,
            socket,
        })
    }
}

/// An identifier of the running kernel: PEs that share memory must run under the same one.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn os(context: impl Into<String>) -> impl FnOnce(Errno) -> TransportError {
    let context = context.into();
    move |e| TransportError::os(context, e)
}

/// Sends `object` to every peer and returns the peers' objects, indexed by PE (`None` at
/// `my_pe`). Every PE of the instance must call it at the same point of its `open`.
pub(crate) fn share_objects(
    my_pe: Pe,
    n_pes: u32,
    object: &OwnedFd,
    object_len: u64,
    exchange: &mut dyn Exchange,
    timeout: Duration,
) -> Result<Vec<Option<OwnedFd>>, TransportError> {
    let sock = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(os("creating the descriptor-exchange socket"))?;
    let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
    let name = format!("shmem-sim.{pid}.{:016x}.{my_pe}", rand::random::<u64>()).into_bytes();
    let addr = SocketAddrUnix::new_abstract_name(&name)
        .map_err(os("naming the descriptor-exchange socket"))?;
    rustix::net::bind(&sock, &addr).map_err(os("binding the descriptor-exchange socket"))?;
    rustix::net::sockopt::set_socket_passcred(&sock, true)
        .map_err(os("enabling sender credentials"))?;

    let me = Announce {
        pe: my_pe,
        pid,
        object_len,
        boot_id: boot_id(),
        socket: name,
    };
    let all = exchange.allgather(&me.encode())?;
    if all.len() != n_pes as usize {
        return Err(TransportError::Exchange(format!(
            "the allgather returned {} entries for {n_pes} PEs",
            all.len()
        )));
    }
    let mut peers = Vec::with_capacity(all.len());
    for (pe, raw) in all.iter().enumerate() {
        let a = Announce::decode(raw)
            .filter(|a| a.pe == pe as Pe)
            .ok_or_else(|| {
                TransportError::Attach(format!("PE {pe} sent a malformed segment announcement"))
            })?;
        if a.boot_id != me.boot_id {
            return Err(TransportError::Attach(format!(
                "PE {pe} runs on another host or kernel (boot id {} vs {}): the sim transport needs every PE of an instance on one host",
                a.boot_id, me.boot_id
            )));
        }
        if a.object_len != object_len {
            return Err(TransportError::Attach(format!(
                "PE {pe} opened a segment of {} bytes, this PE {object_len}: the PEs disagree about local_mem_size",
                a.object_len
            )));
        }
        peers.push(a);
    }

    let deadline = Instant::now() + timeout;
    let mut to_send: Vec<Pe> = (0..n_pes).filter(|&p| p != my_pe).collect();
    let mut received: Vec<Option<OwnedFd>> = (0..n_pes).map(|_| None).collect();
    let mut missing = n_pes as usize - 1;
    while !to_send.is_empty() || missing > 0 {
        let mut unreachable = None;
        to_send.retain(
            |&p| match send_object(&sock, &peers[p as usize].socket, my_pe, object) {
                Ok(()) => false,
                Err(Errno::AGAIN | Errno::NOBUFS | Errno::INTR) => true,
                Err(e) => {
                    unreachable.get_or_insert((p, e));
                    true
                }
            },
        );
        if let Some((p, e)) = unreachable {
            return Err(TransportError::Attach(format!(
                "cannot hand this PE's segment to PE {p} ({e}): the PE exited, or runs in another network namespace"
            )));
        }
        while let Some((pe, fd)) = receive_object(&sock, &peers, my_pe)? {
            if received[pe as usize].replace(fd).is_some() {
                return Err(TransportError::Attach(format!(
                    "PE {pe} sent its segment twice"
                )));
            }
            missing -= 1;
        }
        if to_send.is_empty() && missing == 0 {
            break;
        }
        if Instant::now() >= deadline {
            let absent: Vec<String> = (0..n_pes)
                .filter(|&p| p != my_pe && received[p as usize].is_none())
                .map(|p| p.to_string())
                .collect();
            return Err(TransportError::Timeout {
                what: format!(
                    "the peers' segments (not received from PEs {}; not delivered to PEs {})",
                    if absent.is_empty() {
                        "-".into()
                    } else {
                        absent.join(", ")
                    },
                    if to_send.is_empty() {
                        "-".into()
                    } else {
                        to_send
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
                seconds: timeout.as_secs_f64(),
            });
        }
        let mut fds = [rustix::event::PollFd::new(
            &sock,
            rustix::event::PollFlags::IN,
        )];
        let ts = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(TransportError::os("waiting for the peers' segments", e)),
        }
    }
    Ok(received)
}

fn send_object(sock: &OwnedFd, to: &[u8], my_pe: Pe, object: &OwnedFd) -> Result<(), Errno> {
    let addr = SocketAddrUnix::new_abstract_name(to)?;
    let mut payload = [0u8; 8];
    payload[..4].copy_from_slice(&MAGIC.to_le_bytes());
    payload[4..].copy_from_slice(&my_pe.to_le_bytes());
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

/// Receives one pending descriptor, if any.
fn receive_object(
    sock: &OwnedFd,
    peers: &[Announce],
    my_pe: Pe,
) -> Result<Option<(Pe, OwnedFd)>, TransportError> {
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
        Err(e) => return Err(TransportError::os("receiving a peer's segment", e)),
    };
    let mut fd = None;
    let mut sender_pid = None;
    for m in control.drain() {
        match m {
            RecvAncillaryMessage::ScmRights(mut fds) => {
                fd = fds.next();
                // Extra descriptors (never sent by a PE) are closed as the iterator drops.
            }
            RecvAncillaryMessage::ScmCredentials(c) => {
                sender_pid = Some(c.pid.as_raw_nonzero().get() as u32)
            }
            _ => {}
        }
    }
    let magic = u32::from_le_bytes(payload[..4].try_into().expect("4 bytes"));
    let pe = u32::from_le_bytes(payload[4..8].try_into().expect("4 bytes"));
    let known = msg.bytes == 8 && magic == MAGIC && pe != my_pe && (pe as usize) < peers.len();
    match (known, fd, sender_pid) {
        (true, Some(fd), Some(pid)) if pid == peers[pe as usize].pid => Ok(Some((pe, fd))),
        _ => {
            // Not from a peer of this exchange (or malformed): drop it and keep waiting.
            tracing::warn!(
                "ignored a stray datagram on the segment-exchange socket (claimed PE {pe}, sender pid {sender_pid:?})"
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
        let a = Announce {
            pe: 3,
            pid: 77,
            object_len: 1 << 30,
            boot_id: "abc".into(),
            socket: b"x.y".to_vec(),
        };
        assert_eq!(Announce::decode(&a.encode()), Some(a.clone()));
        assert_eq!(Announce::decode(&a.encode()[..10]), None);
    }
}
