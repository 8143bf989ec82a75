//! The PE side of the config store: one TCP connection to PE 0's server.
//!
//! Requests are serialised by a mutex that also owns the read side of the connection, so a
//! thread waiting for its reply is the only reader; it records server notices (a lost peer,
//! a global exit) as it meets them. [`Client::check_alive`] never blocks behind a request:
//! it reads the recorded alarm and, only if no request is in flight, drains the socket
//! without waiting. Writes take a second, short-lived mutex so that `global_exit` can send
//! while another thread of the PE is blocked in a barrier (the server then fails that
//! barrier, which frees the reader).
//!
//! The socket is non-blocking; every wait is a `poll` with a deadline, and writes use
//! `MSG_NOSIGNAL` so a dead server is an error value, never a `SIGPIPE`.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::SendFlags;

use super::url::resolve;
use super::wire::{
    self, FrameBuf, Hello, Notice, PROTOCOL_VERSION, ReadOutcome, Request, Response, ServerFrame,
};
use super::{BootstrapError, StoreConfig, fmt_dur};

/// A fatal condition seen on the connection, kept for [`Client::check_alive`] (first wins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Alarm {
    /// A peer's connection closed without goodbye.
    PeerLost {
        /// The peer.
        pe: u32,
        /// How.
        detail: String,
    },
    /// A PE called global_exit.
    GlobalExit {
        /// Who.
        pe: u32,
        /// Its status.
        status: i32,
    },
    /// The connection to the server broke.
    ServerLost {
        /// How.
        detail: String,
    },
}

impl Alarm {
    /// The error this alarm stands for.
    pub(crate) fn to_error(&self) -> BootstrapError {
        match self {
            Alarm::PeerLost { pe, detail } => BootstrapError::PeerLost {
                pe: *pe,
                detail: detail.clone(),
            },
            Alarm::GlobalExit { pe, status } => BootstrapError::GlobalExit {
                pe: *pe,
                status: *status,
            },
            Alarm::ServerLost { detail } => BootstrapError::ServerLost {
                detail: detail.clone(),
            },
        }
    }
}

/// State owned by the thread that is running a request.
#[derive(Debug)]
struct OpState {
    rbuf: FrameBuf,
    /// This PE's count of collective calls (1 = the init rendezvous).
    seq: u64,
}

/// One PE's connection to the config store.
#[derive(Debug)]
pub(crate) struct Client {
    stream: TcpStream,
    url: String,
    my_pe: u32,
    n_pes: u32,
    op: Mutex<OpState>,
    wr: Mutex<()>,
    alarm: OnceLock<Alarm>,
    /// Set once the byte stream is unusable (closed, failed, desynchronised).
    broken: OnceLock<String>,
    next_id: AtomicU64,
    exit_id: AtomicU64,
    exit_acked: AtomicBool,
    closed: AtomicBool,
}

/// Outcome of one connection attempt.
enum Attempt {
    /// Give up: the server answered and refused.
    Fatal(BootstrapError),
    /// Try again until the init deadline.
    Retry(String),
}

/// Retry pause bounds while the server is not reachable yet.
const RETRY_MIN: Duration = Duration::from_millis(1);
const RETRY_MAX: Duration = Duration::from_millis(10);
/// Longest single connect() attempt, so that a list of addresses is worked through.
const CONNECT_ATTEMPT_MAX: Duration = Duration::from_secs(2);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

impl Client {
    /// Connects to the server of `cfg.url` and handshakes, retrying until `deadline`.
    pub(crate) fn connect(
        cfg: &StoreConfig,
        deadline: Option<Instant>,
    ) -> Result<Client, BootstrapError> {
        let started = Instant::now();
        let url = cfg.url.to_string();
        let hello = Hello {
            version: PROTOCOL_VERSION,
            secret: *cfg.secret.as_bytes(),
            rank: cfg.my_pe,
            n_pes: cfg.n_pes,
            instance_id: cfg.instance_id,
        };
        let mut pause = RETRY_MIN;
        let mut last = String::from("no connection attempt was made");
        let mut attempts: u64 = 0;
        loop {
            match resolve(&cfg.url) {
                Err(e) => last = format!("cannot resolve {}: {e}", cfg.url.host),
                Ok(addrs) => {
                    for addr in addrs {
                        let left = remaining(deadline).unwrap_or(CONNECT_ATTEMPT_MAX);
                        if left.is_zero() {
                            break;
                        }
                        attempts += 1;
                        match TcpStream::connect_timeout(&addr, left.min(CONNECT_ATTEMPT_MAX)) {
                            Err(e) => last = format!("{addr}: {e}"),
                            Ok(stream) => {
                                match Self::handshake(stream, addr, &url, &hello, cfg, deadline) {
                                    Ok(c) => {
                                        tracing::debug!(
                                            instance = cfg.instance_id,
                                            pe = cfg.my_pe,
                                            "bootstrap: connected to {url} ({addr}) after {attempts} attempt(s), {}",
                                            fmt_dur(&started.elapsed())
                                        );
                                        return Ok(c);
                                    }
                                    Err(Attempt::Fatal(e)) => return Err(e),
                                    Err(Attempt::Retry(why)) => last = why,
                                }
                            }
                        }
                    }
                }
            }
            let left = remaining(deadline).unwrap_or(pause);
            if left.is_zero() {
                return Err(BootstrapError::Connect {
                    url,
                    after: cfg.init_timeout,
                    detail: last,
                });
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(RETRY_MAX);
        }
    }

    fn handshake(
        stream: TcpStream,
        addr: SocketAddr,
        url: &str,
        hello: &Hello,
        cfg: &StoreConfig,
        deadline: Option<Instant>,
    ) -> Result<Client, Attempt> {
        let io_err = |what: &str, e: io::Error| {
            Attempt::Fatal(BootstrapError::Io {
                context: format!("{what} the connection to {addr}"),
                source: e,
            })
        };
        stream
            .set_nonblocking(true)
            .map_err(|e| io_err("cannot configure", e))?;
        // Best effort: small request/response frames must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let client = Client {
            stream,
            url: url.to_owned(),
            my_pe: cfg.my_pe,
            n_pes: cfg.n_pes,
            op: Mutex::new(OpState {
                rbuf: FrameBuf::new(),
                seq: 0,
            }),
            wr: Mutex::new(()),
            alarm: OnceLock::new(),
            broken: OnceLock::new(),
            next_id: AtomicU64::new(1),
            exit_id: AtomicU64::new(0),
            exit_acked: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        };
        let resp = {
            let mut op = lock(&client.op);
            client.request_locked(
                &mut op,
                &Request::Hello(hello.clone()),
                "the greeting",
                deadline,
            )
        };
        match resp {
            Ok(Response::Accept { version }) => {
                tracing::trace!(version, "bootstrap: greeting accepted by {addr}");
                Ok(client)
            }
            Ok(Response::Refuse { reason, message }) => {
                if reason.is_retryable() {
                    Err(Attempt::Retry(format!("{addr}: {message}")))
                } else {
                    Err(Attempt::Fatal(BootstrapError::Refused {
                        reason,
                        detail: message,
                    }))
                }
            }
            Ok(other) => Err(Attempt::Fatal(BootstrapError::Protocol(format!(
                "{addr} answered the greeting with {other:?}"
            )))),
            // The server closed or reset the link before answering: it may be an old
            // incarnation shutting down, or its accept queue overflowed. Try again.
            Err(BootstrapError::ServerLost { detail }) => {
                Err(Attempt::Retry(format!("{addr}: {detail}")))
            }
            Err(BootstrapError::Timeout { .. }) => Err(Attempt::Retry(format!(
                "{addr} accepted the connection but did not answer the greeting"
            ))),
            Err(BootstrapError::Protocol(m)) => Err(Attempt::Fatal(BootstrapError::Protocol(
                format!("{addr} does not speak the SHMEM bootstrap protocol: {m}"),
            ))),
            Err(e) => Err(Attempt::Fatal(e)),
        }
    }

    fn raise(&self, a: Alarm) {
        if self.alarm.set(a.clone()).is_ok() {
            match &a {
                Alarm::ServerLost { detail } => {
                    tracing::warn!(
                        pe = self.my_pe,
                        "bootstrap: lost the server {}: {detail}",
                        self.url
                    )
                }
                Alarm::PeerLost { pe, detail } => {
                    tracing::warn!(pe = self.my_pe, "bootstrap: PE {pe} was lost: {detail}")
                }
                Alarm::GlobalExit { pe, status } => {
                    tracing::info!(
                        pe = self.my_pe,
                        "bootstrap: PE {pe} called global_exit({status})"
                    )
                }
            }
        }
    }

    fn mark_broken(&self, detail: String) -> BootstrapError {
        let _ = self.broken.set(detail.clone());
        self.raise(Alarm::ServerLost {
            detail: detail.clone(),
        });
        BootstrapError::ServerLost { detail }
    }

    fn broken_error(&self) -> Option<BootstrapError> {
        if self.closed.load(Ordering::Acquire) {
            return Some(BootstrapError::Finalized { pe: self.my_pe });
        }
        self.broken
            .get()
            .map(|d| BootstrapError::ServerLost { detail: d.clone() })
    }

    /// Waits until the socket is ready for `flags`; `Ok(false)` when the deadline passed.
    fn wait_fd(&self, flags: PollFlags, deadline: Option<Instant>) -> io::Result<bool> {
        loop {
            let left = remaining(deadline);
            if left == Some(Duration::ZERO) {
                return Ok(false);
            }
            // Cap each poll so that a deadline far away is re-checked now and then.
            let ts = left
                .map(|d| d.min(Duration::from_secs(3600)))
                .and_then(|d| Timespec::try_from(d).ok());
            let mut fds = [PollFd::new(&self.stream, flags)];
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(0) => continue,
                Ok(_) => return Ok(true),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Writes a whole frame, waiting for socket space until `deadline`.
    fn send_bytes(
        &self,
        buf: &[u8],
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<(), BootstrapError> {
        let _w = lock(&self.wr);
        let started = Instant::now();
        let mut off = 0;
        while off < buf.len() {
            match rustix::net::send(&self.stream, &buf[off..], SendFlags::NOSIGNAL) {
                Ok(n) => off += n,
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => match self.wait_fd(PollFlags::OUT, deadline) {
                    Ok(true) => {}
                    Ok(false) => {
                        // A partial frame leaves the stream unusable.
                        self.mark_broken(format!("sending {what} to {} timed out", self.url));
                        return Err(BootstrapError::Timeout {
                            what: format!("the bootstrap server {} did not take {what}", self.url),
                            missing: Vec::new(),
                            after: started.elapsed(),
                        });
                    }
                    Err(e) => {
                        return Err(
                            self.mark_broken(format!("waiting to send to {}: {e}", self.url))
                        );
                    }
                },
                Err(e) => {
                    return Err(self.mark_broken(format!(
                        "sending {what} to {} failed: {} (PE 0 exited, failed or finalized)",
                        self.url,
                        io::Error::from(e)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Sends `req` and waits for its response. The caller holds the op lock.
    fn request_locked(
        &self,
        op: &mut OpState,
        req: &Request,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<Response, BootstrapError> {
        if let Some(e) = self.broken_error() {
            return Err(e);
        }
        let started = Instant::now();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut buf = Vec::new();
        wire::encode_request(&mut buf, id, req)
            .map_err(|e| BootstrapError::Invalid(format!("{what}: {e}")))?;
        self.send_bytes(&buf, what, deadline)?;
        loop {
            while let Some(frame) = self.next_frame(op)? {
                match frame {
                    ServerFrame::Response { id: rid, response } if rid == id => {
                        return Ok(response);
                    }
                    ServerFrame::Response { id: rid, .. } => self.stray_response(rid),
                    ServerFrame::Notice(n) => self.on_notice(n),
                }
            }
            if self.read_some(op)? {
                continue;
            }
            match self.wait_fd(PollFlags::IN, deadline) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(BootstrapError::Timeout {
                        what: format!("no reply from the bootstrap server {} to {what}", self.url),
                        missing: Vec::new(),
                        after: started.elapsed(),
                    });
                }
                Err(e) => return Err(self.mark_broken(format!("waiting for {}: {e}", self.url))),
            }
        }
    }

    fn stray_response(&self, rid: u64) {
        if rid == self.exit_id.load(Ordering::Acquire) {
            self.exit_acked.store(true, Ordering::Release);
        } else {
            tracing::debug!(
                pe = self.my_pe,
                "bootstrap: discarding a late reply to request {rid}"
            );
        }
    }

    fn on_notice(&self, n: Notice) {
        match n {
            Notice::PeerLost { rank, reason } => self.raise(Alarm::PeerLost {
                pe: rank,
                detail: reason,
            }),
            Notice::Exit { rank, status } => self.raise(Alarm::GlobalExit { pe: rank, status }),
        }
    }

    /// The next buffered server frame.
    fn next_frame(&self, op: &mut OpState) -> Result<Option<ServerFrame>, BootstrapError> {
        let decoded = match op.rbuf.next_frame() {
            Ok(None) => return Ok(None),
            Ok(Some((h, body))) => wire::decode_server_frame(&h, body),
            Err(e) => Err(e),
        };
        match decoded {
            Ok(f) => Ok(Some(f)),
            Err(e) => {
                let msg = format!(
                    "the bootstrap server {} sent a malformed frame: {e}",
                    self.url
                );
                self.mark_broken(msg.clone());
                Err(BootstrapError::Protocol(msg))
            }
        }
    }

    /// One non-blocking read; `Ok(false)` if nothing was available.
    fn read_some(&self, op: &mut OpState) -> Result<bool, BootstrapError> {
        match op.rbuf.read_from(&mut &self.stream) {
            Ok(ReadOutcome::Data(_)) => Ok(true),
            Ok(ReadOutcome::Eof) => Err(self.mark_broken(format!(
                "{} closed the connection (PE 0 exited, failed or finalized)",
                self.url
            ))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(self.mark_broken(format!("the connection to {} failed: {e}", self.url))),
        }
    }

    /// Reads whatever is available without waiting and handles it (notices, stray replies).
    fn drain(&self, op: &mut OpState) {
        for _ in 0..64 {
            loop {
                match self.next_frame(op) {
                    Ok(Some(ServerFrame::Notice(n))) => self.on_notice(n),
                    Ok(Some(ServerFrame::Response { id, .. })) => self.stray_response(id),
                    Ok(None) | Err(_) => break,
                }
            }
            if self.broken.get().is_some() {
                return;
            }
            match self.read_some(op) {
                Ok(true) => {}
                Ok(false) | Err(_) => return,
            }
        }
    }

    fn failure(&self, f: wire::Failure) -> BootstrapError {
        use wire::Failure as F;
        match f {
            F::NotFound { key } => BootstrapError::NotFound { key },
            F::Timeout {
                what,
                after_ms,
                missing,
            } => BootstrapError::Timeout {
                what,
                missing,
                after: Duration::from_millis(after_ms),
            },
            F::PeerLost { rank, detail } => {
                self.raise(Alarm::PeerLost {
                    pe: rank,
                    detail: detail.clone(),
                });
                BootstrapError::PeerLost { pe: rank, detail }
            }
            F::GlobalExit { rank, status } => {
                self.raise(Alarm::GlobalExit { pe: rank, status });
                BootstrapError::GlobalExit { pe: rank, status }
            }
            F::Protocol { message } => BootstrapError::Protocol(message),
            F::Invalid { message } => BootstrapError::Invalid(message),
        }
    }

    fn unexpected(&self, what: &str, r: &Response) -> BootstrapError {
        BootstrapError::Protocol(format!(
            "unexpected reply to {what} from {}: {r:?}",
            self.url
        ))
    }

    fn request(
        &self,
        req: &Request,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<Response, BootstrapError> {
        if let Some(e) = self.broken_error() {
            return Err(e);
        }
        let mut op = lock(&self.op);
        match self.request_locked(&mut op, req, what, deadline)? {
            Response::Failed(f) => Err(self.failure(f)),
            r => Ok(r),
        }
    }

    /// The next collective of this PE, a barrier; `what` names it in messages.
    pub(crate) fn barrier(
        &self,
        what: &str,
        deadline: Option<Instant>,
    ) -> Result<(), BootstrapError> {
        if let Some(e) = self.broken_error() {
            return Err(e);
        }
        let mut op = lock(&self.op);
        op.seq += 1;
        let seq = op.seq;
        let what = if seq == 1 {
            what.to_owned()
        } else {
            format!("{what} (collective #{seq})")
        };
        match self.request_locked(&mut op, &Request::Barrier { seq }, &what, deadline)? {
            Response::Done => Ok(()),
            Response::Failed(f) => Err(self.failure(f)),
            r => Err(self.unexpected(&what, &r)),
        }
    }

    /// The next collective of this PE, an allgather.
    pub(crate) fn allgather(
        &self,
        mine: &[u8],
        deadline: Option<Instant>,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        if let Some(e) = self.broken_error() {
            return Err(e);
        }
        if mine.len() > wire::MAX_BODY - 64 {
            return Err(BootstrapError::Invalid(format!(
                "an allgather contribution of {} bytes exceeds the limit of {} bytes",
                mine.len(),
                wire::MAX_BODY - 64
            )));
        }
        let mut op = lock(&self.op);
        op.seq += 1;
        let seq = op.seq;
        let what = format!("allgather (collective #{seq})");
        let req = Request::Allgather {
            seq,
            data: mine.to_vec(),
        };
        match self.request_locked(&mut op, &req, &what, deadline)? {
            Response::Gathered(parts) if parts.len() == self.n_pes as usize => Ok(parts),
            Response::Gathered(parts) => Err(BootstrapError::Protocol(format!(
                "{what} returned {} contributions for {} PEs",
                parts.len(),
                self.n_pes
            ))),
            Response::Failed(f) => Err(self.failure(f)),
            r => Err(self.unexpected(&what, &r)),
        }
    }

    #[cfg(test)]
    fn check_key(key: &str) -> Result<(), BootstrapError> {
        if key.len() > wire::MAX_KEY {
            return Err(BootstrapError::Invalid(format!(
                "a key of {} bytes exceeds the limit of {} bytes",
                key.len(),
                wire::MAX_KEY
            )));
        }
        Ok(())
    }

    #[cfg(test)]
    /// Inserts or overwrites a key.
    pub(crate) fn set(
        &self,
        key: &str,
        value: &[u8],
        deadline: Option<Instant>,
    ) -> Result<(), BootstrapError> {
        Self::check_key(key)?;
        if value.len() > wire::MAX_BODY - wire::MAX_KEY - 64 {
            return Err(BootstrapError::Invalid(format!(
                "a value of {} bytes for key {key:?} exceeds the limit of {} bytes",
                value.len(),
                wire::MAX_BODY - wire::MAX_KEY - 64
            )));
        }
        let what = format!("set of key {key:?}");
        let req = Request::Set {
            key: key.to_owned(),
            value: value.to_vec(),
        };
        match self.request(&req, &what, deadline)? {
            Response::Done => Ok(()),
            r => Err(self.unexpected(&what, &r)),
        }
    }

    #[cfg(test)]
    /// Reads a key; `wait_ms` as in the wire protocol.
    pub(crate) fn get(
        &self,
        key: &str,
        wait_ms: u64,
        deadline: Option<Instant>,
    ) -> Result<Vec<u8>, BootstrapError> {
        Self::check_key(key)?;
        let what = format!("get of key {key:?}");
        match self.request(
            &Request::Get {
                key: key.to_owned(),
                wait_ms,
            },
            &what,
            deadline,
        )? {
            Response::Value(v) => Ok(v),
            r => Err(self.unexpected(&what, &r)),
        }
    }

    #[cfg(test)]
    /// Adds to a counter.
    pub(crate) fn add(
        &self,
        key: &str,
        delta: i64,
        deadline: Option<Instant>,
    ) -> Result<i64, BootstrapError> {
        Self::check_key(key)?;
        let what = format!("add to key {key:?}");
        match self.request(
            &Request::Add {
                key: key.to_owned(),
                delta,
            },
            &what,
            deadline,
        )? {
            Response::Counter(c) => Ok(c),
            r => Err(self.unexpected(&what, &r)),
        }
    }

    #[cfg(test)]
    /// Deletes a key; `Ok(false)` if it was absent.
    pub(crate) fn remove(
        &self,
        key: &str,
        deadline: Option<Instant>,
    ) -> Result<bool, BootstrapError> {
        Self::check_key(key)?;
        let what = format!("remove of key {key:?}");
        match self.request(
            &Request::Remove {
                key: key.to_owned(),
            },
            &what,
            deadline,
        ) {
            Ok(Response::Done) => Ok(true),
            Err(BootstrapError::NotFound { .. }) => Ok(false),
            Ok(r) => Err(self.unexpected(&what, &r)),
            Err(e) => Err(e),
        }
    }

    /// Says goodbye: the next close of this connection is not a loss.
    pub(crate) fn bye(&self, deadline: Option<Instant>) -> Result<(), BootstrapError> {
        match self.request(&Request::Bye, "goodbye", deadline)? {
            Response::Done => Ok(()),
            r => Err(self.unexpected("goodbye", &r)),
        }
    }

    /// See [`super::Bootstrap::check_alive`].
    pub(crate) fn check_alive(&self) -> Result<(), BootstrapError> {
        if let Some(a) = self.alarm.get() {
            return Err(a.to_error());
        }
        if self.closed.load(Ordering::Acquire) || self.broken.get().is_some() {
            return Ok(());
        }
        match self.op.try_lock() {
            Ok(mut op) => self.drain(&mut op),
            Err(TryLockError::Poisoned(p)) => self.drain(&mut p.into_inner()),
            // A request is in flight; its thread records notices as they arrive.
            Err(TryLockError::WouldBlock) => {}
        }
        match self.alarm.get() {
            Some(a) => Err(a.to_error()),
            None => Ok(()),
        }
    }

    /// Sends Exit{status} and waits (until `deadline`) for the server to take it. Works
    /// while another thread of this PE is blocked in a request.
    pub(crate) fn global_exit(&self, status: i32, deadline: Option<Instant>) {
        if self.broken_error().is_some() {
            tracing::warn!(
                pe = self.my_pe,
                "bootstrap: global_exit({status}) cannot reach the server: connection gone"
            );
            self.raise(Alarm::GlobalExit {
                pe: self.my_pe,
                status,
            });
            return;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.exit_acked.store(false, Ordering::Release);
        self.exit_id.store(id, Ordering::Release);
        let mut buf = Vec::new();
        if let Err(e) = wire::encode_request(&mut buf, id, &Request::Exit { status }) {
            tracing::error!("bootstrap: cannot encode global_exit: {e}");
            return;
        }
        match self.send_bytes(&buf, "global_exit", deadline) {
            Err(e) => tracing::warn!(pe = self.my_pe, "bootstrap: global_exit({status}): {e}"),
            Ok(()) => loop {
                if self.exit_acked.load(Ordering::Acquire) || self.broken.get().is_some() {
                    break;
                }
                if remaining(deadline) == Some(Duration::ZERO) {
                    tracing::warn!(
                        pe = self.my_pe,
                        "bootstrap: global_exit({status}) was not acknowledged in time"
                    );
                    break;
                }
                let guard = match self.op.try_lock() {
                    Ok(g) => Some(g),
                    Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                    Err(TryLockError::WouldBlock) => None,
                };
                match guard {
                    Some(mut op) => {
                        self.drain(&mut op);
                        if !self.exit_acked.load(Ordering::Acquire) && self.broken.get().is_none() {
                            let short = Instant::now().checked_add(Duration::from_millis(10));
                            let until = match (short, deadline) {
                                (Some(a), Some(b)) => Some(a.min(b)),
                                (a, b) => a.or(b),
                            };
                            let _ = self.wait_fd(PollFlags::IN, until);
                        }
                    }
                    // Another thread is reading; the server fails its request at once.
                    None => std::thread::sleep(Duration::from_millis(1)),
                }
            },
        }
        self.raise(Alarm::GlobalExit {
            pe: self.my_pe,
            status,
        });
    }

    /// Closes the connection; later requests fail with [`BootstrapError::Finalized`].
    pub(crate) fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }
}
