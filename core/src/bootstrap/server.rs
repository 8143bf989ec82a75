//! The config-store server that PE 0 runs for one instance.
//!
//! One thread per server, with a small stack, runs a single `poll()` loop over a stop pipe,
//! the listener and every connection; sockets are non-blocking and each connection has its
//! own bounded read buffer and write queue. A process may host one server per instance (up to
//! 255 at once), so nothing here spawns per-connection threads.
//!
//! What the server decides:
//! * who may join (secret, rank range, duplicates, n_pes and instance agreement, version);
//! * collectives: the k-th Barrier/Allgather of every rank belong together, checked by the
//!   sequence number in the request. The first one is the init rendezvous, bounded by
//!   `init_timeout` from the server's start; later ones by `op_timeout` from their first
//!   arrival. On expiry the waiting ranks get an error naming the ranks that are missing;
//! * loss: a member connection that closes without Bye marks its rank lost: pending and
//!   later requests fail with PeerLost naming it and every other member is sent a notice;
//! * global exit: an Exit request is announced to all other members, sets key `EXIT` (as
//!   CANN does) and fails pending and later requests with GlobalExit;
//! * shutdown: after PE 0's Bye the listener is closed and the server ends once no member
//!   connection is left, or `op_timeout` later; or at once when its handle is stopped.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SendFlags, SocketFlags, SocketType};

use super::url::{BootstrapUrl, resolve};
use super::wire::{
    self, Failure, FrameBuf, Header, HelloDecode, MAX_BODY, MAX_KEY, Notice, PROTOCOL_VERSION,
    ReadOutcome, RefuseReason, Request, Response, WAIT_FOREVER, kind,
};
use super::{BootstrapError, Secret, fmt_dur, fmt_pes};

/// Stack of a server thread: the loop keeps its data on the heap.
const SERVER_STACK: usize = 256 << 10;
/// listen() backlog (the kernel caps it at somaxconn).
const BACKLOG: i32 = 4096;
/// Reads per connection per loop turn, so that one busy client cannot starve the others.
const READS_PER_TURN: usize = 16;
/// A connection with more queued reply bytes than this is not reading; it is dropped.
const MAX_QUEUED: usize = 4 * MAX_BODY;
/// Connections beyond n_pes that may be open at once (handshakes, strays).
const EXTRA_CONNECTIONS: usize = 256;
/// Why a connection that ended by EOF is closed.
const CLOSED: &str = "closed its connection";
/// Longest time a connection may take to send its greeting.
const HELLO_TIMEOUT_MAX: Duration = Duration::from_secs(60);

/// What the server enforces.
#[derive(Clone, Debug)]
pub(crate) struct ServerParams {
    /// Number of PEs.
    pub(crate) n_pes: u32,
    /// Instance served.
    pub(crate) instance_id: u64,
    /// Job secret.
    pub(crate) secret: Secret,
    /// Bound of the init rendezvous, from the server's start.
    pub(crate) init_timeout: Duration,
    /// Bound of every later collective, from its first arrival; also the finalize grace.
    pub(crate) op_timeout: Duration,
}

/// Creates PE 0's listening socket on the exact resolved address of `url` (never the
/// wildcard address), with `SO_REUSEADDR` so a finalize→init loop can reuse the port.
pub(crate) fn bind_listener(url: &BootstrapUrl) -> Result<TcpListener, BootstrapError> {
    let addrs = resolve(url).map_err(|e| BootstrapError::Io {
        context: format!("could not resolve the bootstrap address {url}"),
        source: e,
    })?;
    let mut last = None;
    for addr in addrs {
        match bind_one(addr) {
            Ok(l) => {
                tracing::debug!("bootstrap: bound {addr} for {url}");
                return Ok(l);
            }
            Err(e) => last = Some(BootstrapError::Bind { addr, source: e }),
        }
    }
    Err(last.unwrap_or_else(|| BootstrapError::Io {
        context: format!("could not bind the bootstrap address {url}"),
        source: io::Error::new(io::ErrorKind::NotFound, "no address"),
    }))
}

fn bind_one(addr: SocketAddr) -> io::Result<TcpListener> {
    let family = if addr.is_ipv6() {
        AddressFamily::INET6
    } else {
        AddressFamily::INET
    };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&fd, true)?;
    rustix::net::bind(&fd, &addr)?;
    rustix::net::listen(&fd, BACKLOG)?;
    Ok(TcpListener::from(fd))
}

/// Makes a handed-over socket usable: listening (listen() is called if it is only bound)
/// and non-blocking.
fn prepare_listener(l: &TcpListener) -> Result<(), BootstrapError> {
    let ctx = |what: &str, e: io::Error| BootstrapError::Io {
        context: format!("the socket handed to the bootstrap server {what}"),
        source: e,
    };
    let listening =
        rustix::net::sockopt::socket_acceptconn(l).map_err(|e| ctx("is not a socket", e.into()))?;
    if !listening {
        rustix::net::listen(l, BACKLOG).map_err(|e| ctx("cannot listen", e.into()))?;
    }
    l.set_nonblocking(true)
        .map_err(|e| ctx("cannot be made non-blocking", e))?;
    Ok(())
}

/// Owner's handle on a running server thread. Dropping it stops the server.
#[derive(Debug)]
pub(crate) struct ServerHandle {
    #[cfg_attr(not(test), allow(dead_code))]
    addr: SocketAddr,
    instance_id: u64,
    /// Write end of the stop pipe; closing it wakes the loop with a hang-up.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// Starts the server thread on `listener`.
    pub(crate) fn spawn(
        listener: TcpListener,
        p: ServerParams,
    ) -> Result<ServerHandle, BootstrapError> {
        prepare_listener(&listener)?;
        let addr = listener.local_addr().map_err(|e| BootstrapError::Io {
            context: "cannot read the address of the bootstrap listener".into(),
            source: e,
        })?;
        let (stop_rx, stop_tx) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )
        .map_err(|e| BootstrapError::Io {
            context: "cannot create the bootstrap server's stop pipe".into(),
            source: e.into(),
        })?;
        let instance_id = p.instance_id;
        let thread = std::thread::Builder::new()
            .name(format!("shmem-bootstrap-{instance_id}"))
            .stack_size(SERVER_STACK)
            .spawn(move || Server::new(listener, stop_rx, p).run())
            .map_err(|e| BootstrapError::Io {
                context: "cannot start the bootstrap server thread".into(),
                source: e,
            })?;
        tracing::info!(
            instance = instance_id,
            "bootstrap: server listening on {addr}"
        );
        Ok(ServerHandle {
            addr,
            instance_id,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    #[cfg(test)]
    /// The address the server listens on.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the server thread has ended.
    pub(crate) fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits up to `timeout` for the server to end on its own; true if it did.
    pub(crate) fn wait_finished(&self, timeout: Duration) -> bool {
        let start = Instant::now();
        let mut pause = Duration::from_micros(200);
        while !self.is_finished() {
            if start.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
        true
    }

    /// Stops the server (closing every connection and the listener) and joins its thread.
    pub(crate) fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::error!(
                instance = self.instance_id,
                "bootstrap: the server thread panicked"
            );
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------------

/// A reply chunk: owned, or shared between the replies of one allgather.
#[derive(Debug)]
enum Chunk {
    Owned(Vec<u8>),
    Shared(Rc<Vec<u8>>),
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Owned(v) => v,
            Chunk::Shared(v) => v,
        }
    }
}

#[derive(Debug)]
enum ConnState {
    /// Accepted; waiting for Hello.
    Greeting { deadline: Instant },
    /// Refused; closes once the refusal is sent.
    Refused,
    /// A member of the job.
    Member { rank: u32 },
}

#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    rbuf: FrameBuf,
    wq: VecDeque<Chunk>,
    /// Bytes of the front chunk already sent.
    front_off: usize,
    queued: usize,
    state: ConnState,
    /// Set when the connection must be closed; the reason for the log (and the loss).
    close: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Vacant,
    Connected(usize),
    Departed,
    Lost,
    Exited,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Barrier,
    Allgather,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Allgather => "allgather",
        }
    }
}

#[derive(Debug)]
struct Arrival {
    id: u64,
    data: Vec<u8>,
}

#[derive(Debug)]
struct Round {
    seq: u64,
    kind: Option<Kind>,
    arrivals: Vec<Option<Arrival>>,
    count: u32,
    first_arrival: Option<Instant>,
}

impl Round {
    fn new(seq: u64, n: u32) -> Round {
        Round {
            seq,
            kind: None,
            arrivals: (0..n).map(|_| None).collect(),
            count: 0,
            first_arrival: None,
        }
    }
}

#[derive(Debug)]
struct Waiter {
    rank: u32,
    id: u64,
    key: String,
    wait_ms: u64,
    deadline: Option<Instant>,
}

struct Server {
    p: ServerParams,
    listener: Option<TcpListener>,
    stop_rx: OwnedFd,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    slots: Vec<Slot>,
    /// Per rank: said Bye on its current connection.
    said_bye: Vec<bool>,
    /// Per rank: sent Exit.
    exited: Vec<bool>,
    kv: HashMap<String, Vec<u8>>,
    waiters: Vec<Waiter>,
    round: Round,
    last_failed: Option<(u64, Failure)>,
    lost: Option<(u32, String)>,
    exit: Option<(u32, i32)>,
    started: Instant,
    init_deadline: Option<Instant>,
    grace_deadline: Option<Instant>,
    accept_pause: Option<Instant>,
    connected_once: u32,
}

fn to_timespec(d: Duration) -> Option<Timespec> {
    Timespec::try_from(d).ok()
}

impl Server {
    fn new(listener: TcpListener, stop_rx: OwnedFd, p: ServerParams) -> Server {
        let started = Instant::now();
        let n = p.n_pes;
        Server {
            init_deadline: started.checked_add(p.init_timeout),
            p,
            listener: Some(listener),
            stop_rx,
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            slots: vec![Slot::Vacant; n as usize],
            said_bye: vec![false; n as usize],
            exited: vec![false; n as usize],
            kv: HashMap::new(),
            waiters: Vec::new(),
            round: Round::new(1, n),
            last_failed: None,
            lost: None,
            exit: None,
            started,
            grace_deadline: None,
            accept_pause: None,
            connected_once: 0,
        }
    }

    fn inst(&self) -> String {
        if self.p.instance_id == 0 {
            String::new()
        } else {
            format!(" of instance {}", self.p.instance_id)
        }
    }

    fn run(mut self) {
        let mut events: Vec<(usize, PollFlags)> = Vec::new();
        loop {
            let now = Instant::now();
            self.expire(now);
            loop {
                self.flush_all();
                if !self.reap() {
                    break;
                }
            }
            if self.finished(now) {
                break;
            }
            let timeout = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(now));
            let ts = timeout
                .map(|d| d.min(Duration::from_secs(5)))
                .and_then(to_timespec);
            let (stop, accept) = {
                let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(2 + self.open);
                let mut index: Vec<usize> = Vec::with_capacity(self.open);
                fds.push(PollFd::new(&self.stop_rx, PollFlags::IN));
                let listening = match (&self.listener, self.accept_pause) {
                    (Some(l), None) => {
                        fds.push(PollFd::new(l, PollFlags::IN));
                        true
                    }
                    _ => false,
                };
                for (i, c) in self.conns.iter().enumerate() {
                    if let Some(c) = c {
                        let mut f = PollFlags::IN;
                        if !c.wq.is_empty() {
                            f |= PollFlags::OUT;
                        }
                        fds.push(PollFd::new(&c.stream, f));
                        index.push(i);
                    }
                }
                match rustix::event::poll(&mut fds, ts.as_ref()) {
                    Ok(_) => {}
                    Err(Errno::INTR) => continue,
                    Err(e) => {
                        tracing::error!(
                            instance = self.p.instance_id,
                            "bootstrap: server poll failed: {e}; stopping"
                        );
                        break;
                    }
                }
                let base = if listening { 2 } else { 1 };
                events.clear();
                for (k, &i) in index.iter().enumerate() {
                    let r = fds[base + k].revents();
                    if !r.is_empty() {
                        events.push((i, r));
                    }
                }
                (
                    !fds[0].revents().is_empty(),
                    listening && !fds[1].revents().is_empty(),
                )
            };
            if stop {
                tracing::debug!(
                    instance = self.p.instance_id,
                    "bootstrap: server stop requested"
                );
                break;
            }
            if accept {
                self.accept_all();
            }
            for &(i, r) in &events {
                if r.contains(PollFlags::OUT) {
                    self.flush(i);
                }
                if r.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
                    self.read(i);
                }
            }
        }
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // Last chance for queued replies (e.g. a timeout just sent to everyone).
        self.flush_all();
        let still: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Connected(_)))
            .map(|(r, _)| r as u32)
            .collect();
        if !still.is_empty() {
            tracing::info!(
                instance = self.p.instance_id,
                "bootstrap: server stopping while {} still connected",
                fmt_pes(&still)
            );
        }
        for c in self.conns.iter_mut().flatten() {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        self.conns.clear();
        self.listener = None;
        tracing::info!(
            instance = self.p.instance_id,
            "bootstrap: server stopped after {}",
            fmt_dur(&self.started.elapsed())
        );
    }

    fn finished(&self, now: Instant) -> bool {
        let Some(grace) = self.grace_deadline else {
            return false;
        };
        let connected: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Connected(_)))
            .map(|(r, _)| r as u32)
            .collect();
        if connected.is_empty() {
            return true;
        }
        if now >= grace {
            tracing::warn!(
                instance = self.p.instance_id,
                "bootstrap: {} did not finalize within {} of PE 0; stopping the server",
                fmt_pes(&connected),
                fmt_dur(&self.p.op_timeout)
            );
            return true;
        }
        false
    }

    fn round_deadline(&self) -> Option<Instant> {
        if self.round.count == 0 {
            return None;
        }
        if self.round.seq == 1 {
            self.init_deadline
        } else {
            self.round
                .first_arrival
                .and_then(|t| t.checked_add(self.p.op_timeout))
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut d: Option<Instant> = None;
        let mut take = |t: Option<Instant>| {
            if let Some(t) = t {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        };
        take(self.round_deadline());
        take(self.grace_deadline);
        take(self.accept_pause);
        for w in &self.waiters {
            take(w.deadline);
        }
        for c in self.conns.iter().flatten() {
            if let ConnState::Greeting { deadline } = c.state {
                take(Some(deadline));
            }
        }
        d
    }

    // ------------------------------------------------------------------ timeouts

    fn expire(&mut self, now: Instant) {
        if self.accept_pause.is_some_and(|t| now >= t) {
            self.accept_pause = None;
        }
        if self.round_deadline().is_some_and(|t| now >= t) {
            let f = self.round_timeout();
            self.fail_round(f);
        }
        if self
            .waiters
            .iter()
            .any(|w| w.deadline.is_some_and(|t| now >= t))
        {
            let (expired, kept): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(&mut self.waiters)
                .into_iter()
                .partition(|w| w.deadline.is_some_and(|t| now >= t));
            self.waiters = kept;
            for w in expired {
                let f = Failure::Timeout {
                    what: format!("key {:?} was not set in the bootstrap store", w.key),
                    after_ms: w.wait_ms,
                    missing: Vec::new(),
                };
                self.reply(w.rank, w.id, &Response::Failed(f));
            }
        }
        let hello_limit = self.p.init_timeout.min(HELLO_TIMEOUT_MAX);
        for c in self.conns.iter_mut().flatten() {
            if let ConnState::Greeting { deadline } = c.state
                && now >= deadline
                && c.close.is_none()
            {
                c.close = Some(format!("sent no greeting within {}", fmt_dur(&hello_limit)));
            }
        }
    }

    fn round_timeout(&self) -> Failure {
        let mut never_connected = Vec::new();
        let mut not_arrived = Vec::new();
        for (r, a) in self.round.arrivals.iter().enumerate() {
            if a.is_none() {
                if self.slots[r] == Slot::Vacant {
                    never_connected.push(r as u32);
                } else {
                    not_arrived.push(r as u32);
                }
            }
        }
        let mut missing: Vec<u32> = never_connected
            .iter()
            .chain(&not_arrived)
            .copied()
            .collect();
        missing.sort_unstable();
        let seq = self.round.seq;
        if seq == 1 {
            let what = match (never_connected.is_empty(), not_arrived.is_empty()) {
                (false, false) => format!(
                    "{} never connected and {} never arrived at the init rendezvous{}",
                    fmt_pes(&never_connected),
                    fmt_pes(&not_arrived),
                    self.inst()
                ),
                (false, true) => format!(
                    "{} never connected to the bootstrap server (init rendezvous{})",
                    fmt_pes(&never_connected),
                    self.inst()
                ),
                _ => format!(
                    "{} connected but never arrived at the init rendezvous{}",
                    fmt_pes(&not_arrived),
                    self.inst()
                ),
            };
            Failure::Timeout {
                what,
                after_ms: self.p.init_timeout.as_millis() as u64,
                missing,
            }
        } else {
            let kind = self.round.kind.map_or("collective", Kind::name);
            Failure::Timeout {
                what: format!(
                    "{} never arrived at {kind} #{seq}{}",
                    fmt_pes(&missing),
                    self.inst()
                ),
                after_ms: self.p.op_timeout.as_millis() as u64,
                missing,
            }
        }
    }

    // ------------------------------------------------------------------ connections

    fn accept_all(&mut self) {
        loop {
            let Some(l) = &self.listener else { return };
            match l.accept() {
                Ok((stream, peer)) => {
                    if self.open >= self.p.n_pes as usize + EXTRA_CONNECTIONS {
                        tracing::warn!(
                            instance = self.p.instance_id,
                            "bootstrap: refusing a connection from {peer}: {} connections are open already",
                            self.open
                        );
                        continue;
                    }
                    if let Err(e) = stream.set_nonblocking(true) {
                        tracing::warn!("bootstrap: dropping a connection from {peer}: {e}");
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    let deadline = Instant::now() + self.p.init_timeout.min(HELLO_TIMEOUT_MAX);
                    tracing::trace!(instance = self.p.instance_id, "bootstrap: accepted {peer}");
                    let conn = Conn {
                        stream,
                        peer,
                        rbuf: FrameBuf::new(),
                        wq: VecDeque::new(),
                        front_off: 0,
                        queued: 0,
                        state: ConnState::Greeting { deadline },
                        close: None,
                    };
                    match self.free.pop() {
                        Some(i) => self.conns[i] = Some(conn),
                        None => self.conns.push(Some(conn)),
                    }
                    self.open += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // Out of descriptors or memory: do not spin on a readable listener.
                    tracing::warn!(
                        instance = self.p.instance_id,
                        "bootstrap: accept failed: {e}"
                    );
                    self.accept_pause = Instant::now().checked_add(Duration::from_millis(10));
                    return;
                }
            }
        }
    }

    fn read(&mut self, i: usize) {
        for _ in 0..READS_PER_TURN {
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            if c.close.is_some() || matches!(c.state, ConnState::Refused) {
                return;
            }
            let res = c.rbuf.read_from(&mut &c.stream);
            match res {
                Ok(ReadOutcome::Data(_)) => self.process_frames(i),
                Ok(ReadOutcome::Eof) => {
                    self.process_frames(i);
                    if let Some(c) = self.conns[i].as_mut()
                        && c.close.is_none()
                    {
                        c.close = Some(CLOSED.into());
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    c.close = Some(format!("lost its connection: {e}"));
                    return;
                }
            }
        }
    }

    fn process_frames(&mut self, i: usize) {
        loop {
            let Some(c) = self.conns[i].as_mut() else {
                return;
            };
            if c.close.is_some() || matches!(c.state, ConnState::Refused) {
                return;
            }
            let greeting = matches!(c.state, ConnState::Greeting { .. });
            let item = match c.rbuf.next_frame() {
                Ok(None) => return,
                Ok(Some((h, body))) => {
                    if greeting {
                        if h.kind != kind::HELLO || h.request_id == wire::NOTICE_ID {
                            Err(format!(
                                "sent frame kind {:#06x} (request id {}) instead of a greeting",
                                h.kind, h.request_id
                            ))
                        } else {
                            wire::decode_hello(body)
                                .map(|d| (h, Err(d)))
                                .map_err(|e| format!("sent a malformed greeting: {e}"))
                        }
                    } else {
                        wire::decode_request(&h, body)
                            .map(|r| (h, Ok(r)))
                            .map_err(|e| format!("sent a malformed frame: {e}"))
                    }
                }
                Err(e) => Err(if greeting {
                    format!("is not a SHMEM bootstrap client ({e})")
                } else {
                    format!("sent a malformed frame: {e}")
                }),
            };
            match item {
                Err(reason) => {
                    c.close = Some(reason);
                    return;
                }
                Ok((h, Err(hello))) => self.on_hello(i, h.request_id, hello),
                Ok((h, Ok(req))) => self.on_request(i, h, req),
            }
        }
    }

    /// Queues bytes on connection `i`.
    fn queue(&mut self, i: usize, chunk: Chunk) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        c.queued += chunk.bytes().len();
        c.wq.push_back(chunk);
        if c.queued > MAX_QUEUED && c.close.is_none() {
            c.close = Some(format!(
                "does not read its replies ({} bytes queued)",
                c.queued
            ));
        }
    }

    fn flush(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        while let Some(front) = c.wq.front() {
            let data = &front.bytes()[c.front_off..];
            match rustix::net::send(&c.stream, data, SendFlags::NOSIGNAL) {
                Ok(n) => {
                    c.front_off += n;
                    c.queued -= n;
                    if c.front_off == front.bytes().len() {
                        c.wq.pop_front();
                        c.front_off = 0;
                    }
                }
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => {}
                Err(e) => {
                    if c.close.is_none() {
                        c.close = Some(format!(
                            "lost its connection while being sent a reply: {}",
                            io::Error::from(e)
                        ));
                    }
                    c.wq.clear();
                    c.queued = 0;
                    break;
                }
            }
        }
        if c.wq.is_empty() && matches!(c.state, ConnState::Refused) && c.close.is_none() {
            c.close = Some("was refused".into());
        }
    }

    fn flush_all(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i]
                .as_ref()
                .is_some_and(|c| !c.wq.is_empty() || matches!(c.state, ConnState::Refused))
            {
                self.flush(i);
            }
        }
    }

    /// Closes every connection marked for closing; true if any was.
    fn reap(&mut self) -> bool {
        let marked: Vec<usize> = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.as_ref().is_some_and(|c| c.close.is_some()))
            .map(|(i, _)| i)
            .collect();
        for &i in &marked {
            self.close_conn(i);
        }
        !marked.is_empty()
    }

    fn close_conn(&mut self, i: usize) {
        let Some(c) = self.conns[i].take() else {
            return;
        };
        self.free.push(i);
        self.open -= 1;
        let reason = c.close.clone().unwrap_or_default();
        let peer = c.peer;
        let member = match c.state {
            ConnState::Member { rank } => Some(rank),
            _ => None,
        };
        drop(c);
        let Some(rank) = member.filter(|r| self.slots[*r as usize] == Slot::Connected(i)) else {
            tracing::debug!(
                instance = self.p.instance_id,
                "bootstrap: connection from {peer} {reason}"
            );
            return;
        };
        if self.said_bye[rank as usize] {
            self.slots[rank as usize] = Slot::Departed;
            tracing::debug!(instance = self.p.instance_id, "bootstrap: PE {rank} left");
        } else if self.exited[rank as usize] {
            self.slots[rank as usize] = Slot::Exited;
            tracing::debug!(
                instance = self.p.instance_id,
                "bootstrap: PE {rank} left after global_exit"
            );
        } else {
            self.slots[rank as usize] = Slot::Lost;
            let hint = if reason == CLOSED {
                ": the process died or dropped its bootstrap without finalize"
            } else {
                ""
            };
            let detail = format!("it {reason} (connection from {peer}){hint}");
            self.on_loss(rank, detail);
        }
    }

    // ------------------------------------------------------------------ greeting

    fn refuse(&mut self, i: usize, id: u64, reason: RefuseReason, message: String) {
        let peer = self.conns[i].as_ref().map(|c| c.peer);
        if reason.is_retryable() {
            tracing::debug!(
                instance = self.p.instance_id,
                "bootstrap: refusing {peer:?}: {message}"
            );
        } else {
            tracing::warn!(
                instance = self.p.instance_id,
                "bootstrap: refusing {peer:?}: {message}"
            );
        }
        self.send_conn(i, id, &Response::Refuse { reason, message });
        if let Some(c) = self.conns[i].as_mut() {
            c.state = ConnState::Refused;
        }
    }

    fn on_hello(&mut self, i: usize, id: u64, hello: HelloDecode) {
        let n = self.p.n_pes;
        let h = match hello {
            HelloDecode::NotOurs => {
                if let Some(c) = self.conns[i].as_mut() {
                    c.close = Some("is not a SHMEM bootstrap client (wrong protocol magic)".into());
                }
                return;
            }
            HelloDecode::OtherVersion(v) => {
                let m = format!(
                    "the client speaks bootstrap protocol version {v}, PE 0's server version {PROTOCOL_VERSION}: mixed SHMEM builds in one job"
                );
                return self.refuse(i, id, RefuseReason::ProtocolVersion, m);
            }
            HelloDecode::Ok(h) => h,
        };
        let r = h.rank;
        if !self.p.secret.ct_eq(&h.secret) {
            let m = format!(
                "PE {r} belongs to another job: its job secret differs from the one of this server{}",
                self.inst()
            );
            return self.refuse(i, id, RefuseReason::SecretMismatch, m);
        }
        if h.instance_id != self.p.instance_id {
            let m = format!(
                "PE {r} asked for instance {}, but this server serves instance {}",
                h.instance_id, self.p.instance_id
            );
            return self.refuse(i, id, RefuseReason::InstanceMismatch, m);
        }
        if h.n_pes != n {
            let m = format!("PE {r} says the job has {} PEs, but PE 0 says {n}", h.n_pes);
            return self.refuse(i, id, RefuseReason::NPesMismatch, m);
        }
        if r >= n {
            let m = format!(
                "PE {r} is out of range: the job has {n} PEs (0..={})",
                n - 1
            );
            return self.refuse(i, id, RefuseReason::RankOutOfRange, m);
        }
        if self.grace_deadline.is_some() {
            let m = "this job's bootstrap server is shutting down (PE 0 finalized)".to_owned();
            return self.refuse(i, id, RefuseReason::ShuttingDown, m);
        }
        match self.slots[r as usize] {
            Slot::Vacant => {}
            Slot::Connected(other) => {
                let other_peer = self.conns[other].as_ref().map(|c| c.peer);
                if self.said_bye[r as usize] {
                    let m = format!("PE {r}'s previous connection of this job is closing");
                    return self.refuse(i, id, RefuseReason::ShuttingDown, m);
                }
                let from = other_peer.map_or(String::new(), |p| format!(" (from {p})"));
                let m = format!(
                    "PE {r} is already connected{from}: two processes claim the same PE number"
                );
                return self.refuse(i, id, RefuseReason::RankAlreadyConnected, m);
            }
            Slot::Departed => {
                let m = format!("PE {r} already finalized in this job, whose server is finishing");
                return self.refuse(i, id, RefuseReason::ShuttingDown, m);
            }
            Slot::Lost | Slot::Exited => {
                let m = format!("PE {r} was lost or exited in this job and cannot rejoin it");
                return self.refuse(i, id, RefuseReason::RankGone, m);
            }
        }
        self.slots[r as usize] = Slot::Connected(i);
        self.said_bye[r as usize] = false;
        let peer = match self.conns[i].as_mut() {
            Some(c) => {
                c.state = ConnState::Member { rank: r };
                c.peer
            }
            None => return,
        };
        self.connected_once += 1;
        tracing::debug!(
            instance = self.p.instance_id,
            "bootstrap: PE {r} joined from {peer}"
        );
        if self.connected_once == n {
            tracing::debug!(
                instance = self.p.instance_id,
                "bootstrap: all {n} PEs connected after {}",
                fmt_dur(&self.started.elapsed())
            );
        }
        self.send_conn(
            i,
            id,
            &Response::Accept {
                version: PROTOCOL_VERSION,
            },
        );
    }

    // ------------------------------------------------------------------ replies

    fn send_conn(&mut self, i: usize, id: u64, resp: &Response) {
        let mut out = Vec::new();
        if let Err(e) = wire::encode_response(&mut out, id, resp) {
            out.clear();
            let f = Failure::Invalid {
                message: format!("the reply cannot be sent: {e}"),
            };
            if wire::encode_response(&mut out, id, &Response::Failed(f)).is_err() {
                return;
            }
        }
        self.queue(i, Chunk::Owned(out));
    }

    fn conn_of(&self, rank: u32) -> Option<usize> {
        match self.slots.get(rank as usize) {
            Some(Slot::Connected(i)) => Some(*i),
            _ => None,
        }
    }

    fn reply(&mut self, rank: u32, id: u64, resp: &Response) {
        if let Some(i) = self.conn_of(rank) {
            self.send_conn(i, id, resp);
        }
    }

    fn notify_members(&mut self, except: u32, n: &Notice) {
        let mut out = Vec::new();
        if wire::encode_notice(&mut out, n).is_err() {
            return;
        }
        let shared = Rc::new(out);
        for r in 0..self.p.n_pes {
            if r == except || self.said_bye[r as usize] {
                continue;
            }
            if let Some(i) = self.conn_of(r) {
                self.queue(i, Chunk::Shared(shared.clone()));
            }
        }
    }

    // ------------------------------------------------------------------ requests

    /// Why a request must fail now that the job is broken, if it is.
    fn gate(&self) -> Option<Failure> {
        if let Some((rank, status)) = self.exit {
            return Some(Failure::GlobalExit { rank, status });
        }
        self.lost.as_ref().map(|(rank, detail)| Failure::PeerLost {
            rank: *rank,
            detail: detail.clone(),
        })
    }

    fn on_request(&mut self, i: usize, h: Header, req: Request) {
        let id = h.request_id;
        let Some(&ConnState::Member { rank }) = self.conns[i].as_ref().map(|c| &c.state) else {
            return;
        };
        let said_bye = self.said_bye[rank as usize];
        let now = Instant::now();
        match req {
            Request::Hello(_) => {
                let f = Failure::Protocol {
                    message: format!("PE {rank} greeted twice"),
                };
                self.send_conn(i, id, &Response::Failed(f));
            }
            Request::Bye => {
                self.said_bye[rank as usize] = true;
                self.send_conn(i, id, &Response::Done);
                tracing::debug!(
                    instance = self.p.instance_id,
                    "bootstrap: PE {rank} said goodbye"
                );
                if rank == 0 && self.grace_deadline.is_none() {
                    // No one joins a finishing job; the port is free for the next one.
                    self.listener = None;
                    self.grace_deadline = Some(now.checked_add(self.p.op_timeout).unwrap_or(now));
                }
            }
            Request::Exit { status } => self.on_exit(i, rank, id, status),
            _ if said_bye => {
                let f = Failure::Protocol {
                    message: format!("PE {rank} sent a request after its goodbye"),
                };
                self.send_conn(i, id, &Response::Failed(f));
            }
            _ if self.gate().is_some() => {
                if let Some(f) = self.gate() {
                    self.send_conn(i, id, &Response::Failed(f));
                }
            }
            Request::Set { key, value } => {
                if let Some(f) = Self::check_key(&key) {
                    return self.send_conn(i, id, &Response::Failed(f));
                }
                self.kv.insert(key.clone(), value);
                self.wake(&key);
                self.send_conn(i, id, &Response::Done);
            }
            Request::Get { key, wait_ms } => {
                if let Some(f) = Self::check_key(&key) {
                    return self.send_conn(i, id, &Response::Failed(f));
                }
                if let Some(v) = self.kv.get(&key) {
                    let r = Response::Value(v.clone());
                    self.send_conn(i, id, &r);
                } else if wait_ms == 0 {
                    self.send_conn(i, id, &Response::Failed(Failure::NotFound { key }));
                } else {
                    let deadline = if wait_ms == WAIT_FOREVER {
                        None
                    } else {
                        now.checked_add(Duration::from_millis(wait_ms))
                    };
                    self.waiters.push(Waiter {
                        rank,
                        id,
                        key,
                        wait_ms,
                        deadline,
                    });
                }
            }
            Request::Add { key, delta } => {
                if let Some(f) = Self::check_key(&key) {
                    return self.send_conn(i, id, &Response::Failed(f));
                }
                let old = match self.kv.get(&key) {
                    None => Ok(0i64),
                    Some(v) => std::str::from_utf8(v)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                        .ok_or(()),
                };
                let resp = match old {
                    Err(()) => Response::Failed(Failure::Invalid {
                        message: format!(
                            "key {key:?} does not hold a decimal integer; cannot add to it"
                        ),
                    }),
                    Ok(old) => match old.checked_add(delta) {
                        None => Response::Failed(Failure::Invalid {
                            message: format!(
                                "adding {delta} to key {key:?} (value {old}) overflows i64"
                            ),
                        }),
                        Some(new) => {
                            self.kv.insert(key.clone(), new.to_string().into_bytes());
                            self.wake(&key);
                            Response::Counter(new)
                        }
                    },
                };
                self.send_conn(i, id, &resp);
            }
            Request::Remove { key } => {
                let resp = if self.kv.remove(&key).is_some() {
                    Response::Done
                } else {
                    Response::Failed(Failure::NotFound { key })
                };
                self.send_conn(i, id, &resp);
            }
            Request::Barrier { seq } => self.arrive(rank, id, seq, Kind::Barrier, Vec::new(), now),
            Request::Allgather { seq, data } => {
                self.arrive(rank, id, seq, Kind::Allgather, data, now)
            }
        }
    }

    fn check_key(key: &str) -> Option<Failure> {
        (key.len() > MAX_KEY).then(|| Failure::Invalid {
            message: format!(
                "a key of {} bytes exceeds the limit of {MAX_KEY} bytes",
                key.len()
            ),
        })
    }

    /// Answers the Get waiters of a key that now has a value.
    fn wake(&mut self, key: &str) {
        if !self.waiters.iter().any(|w| w.key == key) {
            return;
        }
        let Some(v) = self.kv.get(key).cloned() else {
            return;
        };
        let (ready, kept): (Vec<Waiter>, Vec<Waiter>) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|w| w.key == key);
        self.waiters = kept;
        let resp = Response::Value(v);
        for w in ready {
            self.reply(w.rank, w.id, &resp);
        }
    }

    fn fail_waiters(&mut self, f: &Failure) {
        let resp = Response::Failed(f.clone());
        for w in std::mem::take(&mut self.waiters) {
            self.reply(w.rank, w.id, &resp);
        }
    }

    // ------------------------------------------------------------------ collectives

    fn arrive(&mut self, rank: u32, id: u64, seq: u64, kind: Kind, data: Vec<u8>, now: Instant) {
        if seq != self.round.seq {
            let f = match &self.last_failed {
                Some((s, f)) if *s == seq => f.clone(),
                _ => Failure::Protocol {
                    message: format!(
                        "PE {rank} entered collective #{seq} ({}) while the job is at collective #{}: the PEs do not call barrier/allgather the same number of times",
                        kind.name(),
                        self.round.seq
                    ),
                },
            };
            return self.reply(rank, id, &Response::Failed(f));
        }
        if let Some(k) = self.round.kind
            && k != kind
        {
            let others: Vec<u32> = (0..self.p.n_pes)
                .filter(|r| self.round.arrivals[*r as usize].is_some())
                .collect();
            let f = Failure::Protocol {
                message: format!(
                    "PE {rank} called {} as collective #{seq} while {} called {}",
                    kind.name(),
                    fmt_pes(&others),
                    k.name()
                ),
            };
            self.reply(rank, id, &Response::Failed(f.clone()));
            return self.fail_round(f);
        }
        if self.round.arrivals[rank as usize].is_some() {
            let f = Failure::Protocol {
                message: format!("PE {rank} entered collective #{seq} twice"),
            };
            return self.reply(rank, id, &Response::Failed(f));
        }
        self.round.kind = Some(kind);
        self.round.first_arrival.get_or_insert(now);
        self.round.arrivals[rank as usize] = Some(Arrival { id, data });
        self.round.count += 1;
        if self.round.count == self.p.n_pes {
            self.complete_round();
        }
    }

    fn next_round(&mut self) -> Round {
        let next = Round::new(self.round.seq + 1, self.p.n_pes);
        std::mem::replace(&mut self.round, next)
    }

    fn complete_round(&mut self) {
        let round = self.next_round();
        let kind = round.kind.unwrap_or(Kind::Barrier);
        tracing::trace!(
            instance = self.p.instance_id,
            "bootstrap: collective #{} ({}) complete",
            round.seq,
            kind.name()
        );
        match kind {
            Kind::Barrier => {
                for (r, a) in round.arrivals.iter().enumerate() {
                    if let Some(a) = a {
                        self.reply(r as u32, a.id, &Response::Done);
                    }
                }
            }
            Kind::Allgather => {
                let body = wire::gathered_body(
                    round
                        .arrivals
                        .iter()
                        .map(|a| a.as_ref().map_or(&[][..], |a| &a.data)),
                );
                let body = match body {
                    Ok(b) => Rc::new(b),
                    Err(_) => {
                        let total: usize =
                            round.arrivals.iter().flatten().map(|a| a.data.len()).sum();
                        let f = Failure::Invalid {
                            message: format!(
                                "allgather #{} would return {total} bytes, above the limit of {MAX_BODY} bytes",
                                round.seq
                            ),
                        };
                        let resp = Response::Failed(f);
                        for (r, a) in round.arrivals.iter().enumerate() {
                            if let Some(a) = a {
                                self.reply(r as u32, a.id, &resp);
                            }
                        }
                        return;
                    }
                };
                for (r, a) in round.arrivals.iter().enumerate() {
                    let (Some(a), Some(i)) = (a, self.conn_of(r as u32)) else {
                        continue;
                    };
                    let h = Header {
                        kind: kind::GATHERED,
                        len: body.len() as u32,
                        request_id: a.id,
                    };
                    self.queue(i, Chunk::Owned(h.encode().to_vec()));
                    self.queue(i, Chunk::Shared(body.clone()));
                }
            }
        }
    }

    /// Fails the current round (if anyone is waiting in it) and remembers the failure for
    /// the ranks that arrive at it later.
    fn fail_round(&mut self, f: Failure) {
        if self.round.count == 0 {
            return;
        }
        let round = self.next_round();
        if let Failure::Timeout { what, .. } = &f {
            tracing::warn!(
                instance = self.p.instance_id,
                "bootstrap: collective #{} timed out: {what}",
                round.seq
            );
        }
        let resp = Response::Failed(f.clone());
        for (r, a) in round.arrivals.iter().enumerate() {
            if let Some(a) = a {
                self.reply(r as u32, a.id, &resp);
            }
        }
        self.last_failed = Some((round.seq, f));
    }

    // ------------------------------------------------------------------ loss and exit

    fn on_loss(&mut self, rank: u32, detail: String) {
        tracing::warn!(
            instance = self.p.instance_id,
            "bootstrap: PE {rank} was lost: {detail}"
        );
        if self.lost.is_none() {
            self.lost = Some((rank, detail.clone()));
        }
        let f = Failure::PeerLost {
            rank,
            detail: detail.clone(),
        };
        self.fail_round(f.clone());
        self.fail_waiters(&f);
        self.notify_members(
            rank,
            &Notice::PeerLost {
                rank,
                reason: detail,
            },
        );
    }

    fn on_exit(&mut self, i: usize, rank: u32, id: u64, status: i32) {
        tracing::warn!(
            instance = self.p.instance_id,
            "bootstrap: PE {rank} called global_exit({status})"
        );
        self.kv
            .insert("EXIT".to_owned(), status.to_string().into_bytes());
        self.exited[rank as usize] = true;
        if self.exit.is_none() {
            self.exit = Some((rank, status));
        }
        self.send_conn(i, id, &Response::Done);
        let f = Failure::GlobalExit { rank, status };
        self.fail_round(f.clone());
        self.fail_waiters(&f);
        self.notify_members(rank, &Notice::Exit { rank, status });
    }
}
