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
//!   later requests fail naming it and every other member is sent a notice;
//! * global exit: an Exit request is announced to all other members and fails pending and
//!   later requests;
//! * shutdown: after PE 0's Bye the listener is closed and the server ends once no member
//!   connection is left, or `op_timeout` later; or at once when its handle is stopped.

use std::collections::VecDeque;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::SendFlags;

use super::error::{BootstrapError, BootstrapErrorKind as Kind, RefuseReason as Refuse};
use super::frames::{self, Blob, FrameBuf, Hello, MAGIC, MAX_FRAME, Reply, Request, VERSION};
use super::tls::{ServerSide, Tls};
use super::{Secret, fmt_dur, fmt_pes};

/// A connection with more queued reply bytes than this is not reading; it is dropped.
const MAX_QUEUED: usize = 4 * MAX_FRAME;
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
    /// TLS on every connection, if the job asks for it.
    pub(crate) tls: Option<Arc<Tls>>,
}

/// Owner's handle on a running server thread. Dropping it stops the server.
#[derive(Debug)]
pub(crate) struct ServerHandle {
    /// Write end of the stop pipe; closing it wakes the loop with a hang-up.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    /// Disconnected when the server thread ends (its sender drops with the thread's closure).
    ended: Receiver<()>,
}

/// A failure of the server's setup: `what` went wrong.
fn setup<E: Into<io::Error>>(what: &'static str) -> impl FnOnce(E) -> BootstrapError {
    move |e| BootstrapError::io(format!("the bootstrap server {what}"), e)
}

impl ServerHandle {
    /// Starts the server thread on `listener`, which is bound and possibly listening (a
    /// socket handed over by a launcher or a unique id is made to listen here).
    pub(crate) fn spawn(l: TcpListener, p: ServerParams) -> Result<ServerHandle, BootstrapError> {
        let listening = rustix::net::sockopt::socket_acceptconn(&l);
        if !listening.map_err(setup("socket is not a socket"))? {
            rustix::net::listen(&l, super::addr::BACKLOG).map_err(setup("cannot listen"))?;
        }
        l.set_nonblocking(true)
            .map_err(setup("cannot be made non-blocking"))?;
        let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
        let (stop_rx, stop_tx) = rustix::pipe::pipe_with(flags).map_err(setup("has no pipe"))?;
        let spare = spare_descriptor().map_err(setup("has no spare descriptor"))?;
        let (ending, ended) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("shmem-bootstrap-{}", p.instance_id))
            .stack_size(256 << 10)
            .spawn(move || {
                let _ending = ending;
                Server::new(l, stop_rx, spare, p).run()
            })
            .map_err(|e| BootstrapError::thread("the bootstrap server thread cannot start", e))?;
        let (stop, thread) = (Some(stop_tx), Some(thread));
        Ok(ServerHandle {
            stop,
            thread,
            ended,
        })
    }

    /// Gives the server up to `grace` to end on its own, then stops it (closing every
    /// connection and the listener) and joins its thread. True if it ended on its own.
    pub(crate) fn stop(&mut self, grace: Duration) -> bool {
        // The channel disconnects as the thread ends (its sender drops), which ends the wait.
        let ended = self.thread.is_none()
            || matches!(
                self.ended.recv_timeout(grace),
                Err(RecvTimeoutError::Disconnected)
            );
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        ended
    }
}

#[cfg(feature = "fuzzing")]
impl ServerHandle {
    /// Stops the server at once and joins its thread, passing on a panic of the thread.
    pub(crate) fn stop_checked(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take()
            && let Err(p) = t.join()
        {
            std::panic::resume_unwind(p);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop(Duration::ZERO);
    }
}

/// A failure as the reply that tells a PE (its kind and message; the source stays here).
fn failed(e: &BootstrapError) -> Reply {
    Reply::Failed(e.kind().clone(), e.message().to_owned())
}

#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    rbuf: FrameBuf,
    wq: VecDeque<Rc<Vec<u8>>>,
    /// Bytes of the front chunk already sent, and of all chunks queued.
    sent: usize,
    queued: usize,
    /// `None` until the greeting is accepted, which must happen before `deadline`.
    rank: Option<u32>,
    deadline: Instant,
    /// Refused: closes once the refusal is sent.
    refused: bool,
    /// Set when the connection must be closed: the reason (for the log, and the loss).
    close: Option<String>,
    /// The TLS session, in a job with TLS: `wq` holds plaintext, which it encrypts.
    tls: Option<ServerSide>,
}

impl Conn {
    /// One read of what the socket has into `rbuf` (decrypted, under TLS): `Ok(0)` when the
    /// peer closed.
    fn read_in(&mut self) -> io::Result<usize> {
        match &mut self.tls {
            Some(t) => t.read_into(&self.stream, &mut self.rbuf),
            None => self.rbuf.read_from(&mut &self.stream),
        }
    }

    /// Sends what the socket takes now of `bytes`; under TLS, takes them all and encrypts.
    fn send_out(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match &mut self.tls {
            Some(t) => t.send(&self.stream, bytes),
            None => rustix::net::send(&self.stream, bytes, SendFlags::NOSIGNAL).map_err(Into::into),
        }
    }

    /// Whether the connection has bytes to send when the socket has room.
    fn wants_write(&self) -> bool {
        !self.wq.is_empty() || self.tls.as_ref().is_some_and(ServerSide::wants_write)
    }
}

/// A rank's standing in the job. The connected states hold the connection's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Vacant,
    Connected(usize),
    /// Said goodbye on this connection; its close is not a loss.
    Leaving(usize),
    /// Sent Exit on this connection; its close is not a loss.
    Exiting(usize),
    /// Said goodbye, then closed.
    Departed,
    /// Lost its connection, or exited: it cannot rejoin.
    Gone,
}

impl Slot {
    fn conn(self) -> Option<usize> {
        match self {
            Slot::Connected(i) | Slot::Leaving(i) | Slot::Exiting(i) => Some(i),
            _ => None,
        }
    }
}

/// The current collective: per rank, the request id and the contribution of its arrival.
#[derive(Debug, Default)]
struct Round {
    seq: u64,
    /// `Some(true)` for an allgather, `Some(false)` for a barrier, once someone arrived.
    gather: Option<bool>,
    arrivals: Vec<Option<(u64, Vec<u8>)>>,
    first_arrival: Option<Instant>,
}

fn op_name(gather: bool) -> &'static str {
    if gather { "allgather" } else { "barrier" }
}

struct Server {
    p: ServerParams,
    listener: Option<TcpListener>,
    stop_rx: OwnedFd,
    conns: Vec<Option<Conn>>,
    slots: Vec<Slot>,
    round: Round,
    last_failed: Option<(u64, BootstrapError)>,
    /// Why every request fails now: a global exit, else a lost rank.
    broken: Option<BootstrapError>,
    started: Instant,
    grace_deadline: Option<Instant>,
    accept_pause: Option<Instant>,
    /// A descriptor held in reserve: when the process has none left, closing it makes room to
    /// accept a waiting connection and tell it why the job fails (see [`Server::shed_one`]).
    spare: Option<OwnedFd>,
}

/// A descriptor to hold in reserve (`/dev/null`, close-on-exec).
fn spare_descriptor() -> rustix::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
}

impl Server {
    fn new(listener: TcpListener, stop_rx: OwnedFd, spare: OwnedFd, p: ServerParams) -> Server {
        let slots = vec![Slot::Vacant; p.n_pes as usize];
        let mut s = Server {
            p,
            listener: Some(listener),
            stop_rx,
            conns: Vec::new(),
            slots,
            round: Round::default(),
            last_failed: None,
            broken: None,
            started: Instant::now(),
            grace_deadline: None,
            accept_pause: None,
            spare: Some(spare),
        };
        s.next_round();
        s
    }

    fn inst(&self) -> String {
        match self.p.instance_id {
            0 => String::new(),
            id => format!(" of instance {id}"),
        }
    }

    fn run(mut self) {
        loop {
            let now = Instant::now();
            self.expire(now);
            self.flush_all();
            while self.reap() {
                self.flush_all();
            }
            if self.finished(now) {
                break;
            }
            let left = |d: Instant| d.saturating_duration_since(now);
            let wait = self.next_deadline().map(left);
            let ts = Timespec::try_from(wait.unwrap_or(Duration::MAX).min(Duration::from_secs(5)));
            let mut fds = vec![PollFd::new(&self.stop_rx, PollFlags::IN)];
            let paused = self.accept_pause.is_some();
            let listener = self.listener.as_ref().filter(|_| !paused);
            fds.extend(listener.map(|l| PollFd::new(l, PollFlags::IN)));
            let first = fds.len();
            let mut index = Vec::new();
            for (i, c) in self.conns.iter().enumerate() {
                if let Some(c) = c {
                    let mut f = PollFlags::IN;
                    f.set(PollFlags::OUT, c.wants_write());
                    fds.push(PollFd::new(&c.stream, f));
                    index.push(i);
                }
            }
            if let Err(e) = rustix::event::poll(&mut fds, ts.ok().as_ref()) {
                if e == Errno::INTR {
                    continue;
                }
                tracing::debug!("bootstrap: the server's poll failed: {e}");
                break;
            }
            let events = fds[first..].iter().map(PollFd::revents);
            let ready: Vec<(usize, PollFlags)> = index.into_iter().zip(events).collect();
            let (stop, accept) = (fds[0].revents(), fds.get(1).filter(|_| first == 2));
            let accept = accept.is_some_and(|f| !f.revents().is_empty());
            drop(fds);
            if !stop.is_empty() {
                break;
            }
            if accept {
                self.accept_all();
            }
            for (i, r) in ready {
                if r.contains(PollFlags::OUT) {
                    self.flush(i);
                }
                if !(r - PollFlags::OUT).is_empty() {
                    self.read(i);
                }
            }
        }
        // Last chance for queued replies (e.g. a timeout just sent to everyone).
        self.flush_all();
        for c in self.conns.iter().flatten() {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
        }
        let up = fmt_dur(&self.started.elapsed());
        tracing::debug!("bootstrap: the server{} stopped after {up}", self.inst());
    }

    fn finished(&self, now: Instant) -> bool {
        let connected = self.slots.iter().any(|s| s.conn().is_some());
        self.grace_deadline.is_some_and(|g| !connected || now >= g)
    }

    /// When the current collective's clock started (for the init rendezvous, with the
    /// server; else at the first arrival) and how long it may take.
    fn round_bounds(&self) -> (Option<Instant>, Duration) {
        match self.round.seq {
            1 => (Some(self.started), self.p.init_timeout),
            _ => (self.round.first_arrival, self.p.op_timeout),
        }
    }

    fn round_deadline(&self) -> Option<Instant> {
        let (start, limit) = self.round_bounds();
        self.round.first_arrival?;
        start?.checked_add(limit)
    }

    fn next_deadline(&self) -> Option<Instant> {
        let (grace, pause) = (self.grace_deadline, self.accept_pause);
        let own = [self.round_deadline(), grace, pause];
        let greeting = |c: &Conn| c.rank.is_none().then_some(c.deadline);
        let greetings = self.conns.iter().flatten().filter_map(greeting);
        own.into_iter().flatten().chain(greetings).min()
    }

    fn expire(&mut self, now: Instant) {
        if self.accept_pause.is_some_and(|t| now >= t) {
            self.accept_pause = None;
        }
        if self.round_deadline().is_some_and(|t| now >= t) {
            let e = self.round_timeout();
            self.fail_round(&e);
        }
        let limit = fmt_dur(&self.p.init_timeout.min(HELLO_TIMEOUT_MAX));
        let late = |c: &&mut Conn| c.rank.is_none() && now >= c.deadline;
        for c in self.conns.iter_mut().flatten().filter(late) {
            let why = format!("sent no greeting within {limit}");
            c.close.get_or_insert(why);
        }
    }

    fn round_timeout(&self) -> BootstrapError {
        let r = &self.round;
        let missing: Vec<u32> = (0..self.p.n_pes)
            .filter(|&p| r.arrivals[p as usize].is_none())
            .collect();
        let vacant = |p: &&u32| self.slots[**p as usize] == Slot::Vacant;
        let (never, late): (Vec<u32>, Vec<u32>) = missing.iter().partition(vacant);
        let (seq, inst) = (r.seq, self.inst());
        let (never, late) = (fmt_pes(&never), fmt_pes(&late));
        let what = match (seq, never.as_str(), late.as_str()) {
            (1, "no PE", _) => {
                format!("{late} connected but never arrived at the init rendezvous{inst}")
            }
            (1, _, "no PE") => format!("{never} never connected to the bootstrap server{inst}"),
            (1, ..) => format!(
                "{never} never connected and {late} never arrived at the init rendezvous{inst}"
            ),
            _ => {
                let op = r.gather.map_or("collective", op_name);
                format!("{} never arrived at {op} #{seq}{inst}", fmt_pes(&missing))
            }
        };
        let after = fmt_dur(&self.round_bounds().1);
        BootstrapError::timeout(missing, format!("timed out after {after}: {what}"))
    }

    // ------------------------------------------------------------------ connections

    fn accept_all(&mut self) {
        let mut open = self.conns.iter().flatten().count();
        while let Some(l) = self.listener.as_ref() {
            let (stream, peer) = match l.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    tracing::debug!("bootstrap: the server's accept failed: {e}");
                    let e = BootstrapError::io("PE 0's bootstrap server cannot accept a PE", e);
                    let limit = *e.kind() == Kind::Limit;
                    // Without descriptors the PEs still to come can never join: the job fails
                    // now, naming the limit, rather than when the init timeout ends.
                    let joining = self.slots.contains(&Slot::Vacant);
                    if limit && joining && self.broken.is_none() {
                        self.break_job(e.at_init(), self.p.n_pes);
                    }
                    // The waiting connections (PE 0's own among them) learn it one by one.
                    if limit && self.shed_one() {
                        continue;
                    }
                    // Out of memory, or no room made: do not spin on a readable listener.
                    self.accept_pause = Instant::now().checked_add(Duration::from_millis(10));
                    return;
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if open >= self.p.n_pes as usize + EXTRA_CONNECTIONS {
                // Full: the oldest connection that has not greeted makes room. A PE greets at
                // once, so connections left idle (a slow-loris attack) cannot keep PEs out.
                match self.oldest_stranger() {
                    Some(i) => {
                        self.conns[i].as_mut().expect("live").close = Some(
                            "was dropped for a newer connection: too many have not greeted".into(),
                        );
                        self.close_conn(i);
                    }
                    None => continue,
                }
            } else {
                open += 1;
            }
            let _ = stream.set_nodelay(true);
            let tls = match self.p.tls.as_deref().map(ServerSide::new).transpose() {
                Ok(tls) => tls,
                Err(e) => {
                    tracing::debug!("bootstrap: no TLS session for {peer}: {e}");
                    continue;
                }
            };
            let greeting = self.p.init_timeout.min(HELLO_TIMEOUT_MAX);
            let conn = Conn {
                stream,
                peer,
                rbuf: FrameBuf::default(),
                wq: VecDeque::new(),
                sent: 0,
                queued: 0,
                rank: None,
                deadline: Instant::now() + greeting,
                refused: false,
                close: None,
                tls,
            };
            match self.conns.iter().position(Option::is_none) {
                Some(i) => self.conns[i] = Some(conn),
                None => self.conns.push(Some(conn)),
            }
        }
    }

    /// With no descriptor left in the process: gives up the spare one to accept a waiting
    /// connection, sends it why the job failed (if it did), closes it and takes the spare back.
    /// False if nothing was accepted or the spare could not be taken back.
    fn shed_one(&mut self) -> bool {
        let Some(l) = self.listener.as_ref() else {
            return false;
        };
        if self.spare.take().is_none() {
            return false;
        }
        let accepted = l.accept();
        let shed = accepted.is_ok();
        if let Ok((stream, _)) = &accepted {
            // Under TLS a plaintext notice would not be understood: the PE is only closed.
            let notice = self
                .broken
                .as_ref()
                .filter(|_| self.p.tls.is_none())
                .map(failed);
            let frame = notice.and_then(|n| frames::encode(frames::NOTICE, &n).ok());
            if stream.set_nonblocking(true).is_ok()
                && let Some(frame) = frame
            {
                // Best effort: a small frame fits an empty socket buffer. Reading what the
                // peer sent before closing keeps the close a FIN, not a reset that could
                // discard the notice; a peer that misses it reconnects and is told again.
                let _ = rustix::net::send(stream, &frame, SendFlags::NOSIGNAL);
                let _ = stream.shutdown(std::net::Shutdown::Write);
                let _ = rustix::net::recv(stream, &mut [0; 512], rustix::net::RecvFlags::empty());
            }
        }
        drop(accepted);
        self.spare = spare_descriptor().ok();
        shed && self.spare.is_some()
    }

    /// The connection that has waited longest without greeting.
    fn oldest_stranger(&self) -> Option<usize> {
        let stranger = |(i, c): (usize, &Option<Conn>)| {
            c.as_ref()
                .filter(|c| c.rank.is_none())
                .map(|c| (c.deadline, i))
        };
        self.conns
            .iter()
            .enumerate()
            .filter_map(stranger)
            .min()
            .map(|(_, i)| i)
    }

    fn read(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut().filter(|c| c.close.is_none()) else {
            return;
        };
        match c.read_in() {
            Ok(0) => c.close = Some(CLOSED.into()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) => c.close = Some(format!("lost its connection: {e}")),
        }
        while self.next_frame(i) {}
    }

    /// Handles the next complete frame of connection `i`; false if there is none (or the
    /// connection is being closed).
    fn next_frame(&mut self, i: usize) -> bool {
        let Some(c) = self.conns[i].as_mut().filter(|c| !c.refused) else {
            return false;
        };
        // Until it has greeted, a connection is a stranger: it gets no large buffer.
        let max = if c.rank.is_some() {
            MAX_FRAME
        } else {
            frames::MAX_GREETING
        };
        let frame = match c.rbuf.next_frame_within(max) {
            Ok(Some(f)) => f,
            Ok(None) => return false,
            Err(e) => {
                c.close = Some(format!("is not a SHMEM bootstrap client ({e})"));
                return false;
            }
        };
        if let Some(rank) = c.rank {
            match frames::decode::<Request>(frame) {
                Ok((id, req)) => self.on_request(i, rank, id, req),
                Err(e) => c.close = Some(format!("sent a malformed frame: {e}")),
            }
            return true;
        }
        match frames::peek_hello(frame) {
            Some((_, h)) if h.magic != MAGIC => {
                c.close = Some("is not a SHMEM bootstrap client (wrong protocol magic)".into());
            }
            Some((id, h)) if h.version != VERSION => {
                let v = h.version;
                let m = format!(
                    "the PE speaks bootstrap protocol version {v}, PE 0's server version {VERSION}: \
                     mixed SHMEM builds in one job"
                );
                self.refuse(i, id, Refuse::ProtocolVersion, m);
            }
            _ => match frames::decode::<Hello>(frame) {
                Ok((id, hello)) => self.on_hello(i, id, hello),
                Err(e) => c.close = Some(format!("sent a malformed greeting: {e}")),
            },
        }
        true
    }

    /// Queues bytes on connection `i`.
    fn queue(&mut self, i: usize, chunk: Rc<Vec<u8>>) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        c.queued += chunk.len();
        c.wq.push_back(chunk);
        if c.queued > MAX_QUEUED {
            let why = format!("does not read its replies ({} bytes queued)", c.queued);
            c.close.get_or_insert(why);
        }
    }

    fn flush(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else {
            return;
        };
        while let Some(front) = c.wq.front().cloned() {
            match c.send_out(&front[c.sent..]) {
                Ok(n) if c.sent + n == front.len() => {
                    c.queued -= n;
                    c.sent = 0;
                    c.wq.pop_front();
                }
                Ok(n) => (c.sent, c.queued) = (c.sent + n, c.queued - n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let why = format!("lost its connection while being sent a reply: {e}");
                    c.close.get_or_insert(why);
                    c.wq.clear();
                }
            }
        }
        // The TLS session's own records (its handshake) go out with the replies.
        if let Some(t) = c.tls.as_mut().filter(|t| t.wants_write())
            && let Err(e) = t.flush(&c.stream)
        {
            c.close.get_or_insert(format!("lost its connection: {e}"));
        }
        if c.wq.is_empty() && c.refused {
            c.close.get_or_insert_with(|| "was refused".into());
        }
    }

    fn flush_all(&mut self) {
        for i in 0..self.conns.len() {
            self.flush(i);
        }
    }

    /// Closes every connection marked for closing; true if any was.
    fn reap(&mut self) -> bool {
        let marked = |i: &usize| self.conns[*i].as_ref().is_some_and(|c| c.close.is_some());
        let marked: Vec<usize> = (0..self.conns.len()).filter(marked).collect();
        for &i in &marked {
            self.close_conn(i);
        }
        !marked.is_empty()
    }

    /// Tells `shmemrun` that PE `rank` was lost, before the other PEs hear of it (and may exit
    /// because of it), so that the launcher blames that PE. Only the server of the launcher's
    /// own job (instance 0 with the job's secret) numbers the PEs as the launcher does.
    fn tell_launcher(&self, rank: u32) {
        use shmem_sim::launcher::env as launcher;
        let ours = self.p.instance_id == 0
            && std::env::var(launcher::SECRET)
                .ok()
                .and_then(|s| Secret::from_hex(&s))
                .is_some_and(|s| s == self.p.secret);
        if ours && let Err(e) = launcher::report_lost(rank) {
            tracing::debug!("bootstrap: could not tell the launcher PE {rank} was lost: {e}");
        }
    }

    fn close_conn(&mut self, i: usize) {
        let Some(c) = self.conns[i].take() else {
            return;
        };
        let reason = c.close.unwrap_or_default();
        let Some(rank) = c.rank.filter(|&r| self.slots[r as usize].conn() == Some(i)) else {
            tracing::trace!("bootstrap: a connection from {} {reason}", c.peer);
            return;
        };
        self.slots[rank as usize] = match self.slots[rank as usize] {
            Slot::Leaving(_) => Slot::Departed,
            Slot::Exiting(_) => Slot::Gone,
            _ => {
                let hint = match reason == CLOSED {
                    true => ": the process died or dropped its bootstrap without finalize",
                    false => "",
                };
                let peer = c.peer;
                let m = format!("PE {rank} was lost: it {reason} (connection from {peer}){hint}");
                tracing::debug!("bootstrap: {m}");
                self.tell_launcher(rank);
                self.break_job(BootstrapError::new(Kind::PeerLost { pe: rank }, m), rank);
                Slot::Gone
            }
        };
    }

    // ------------------------------------------------------------------ greeting

    fn refuse(&mut self, i: usize, id: u64, reason: Refuse, message: String) {
        tracing::debug!("bootstrap: the server refuses a PE: {message}");
        self.send(i, id, &Reply::Refuse(reason, message));
        if let Some(c) = self.conns[i].as_mut() {
            c.refused = true;
        }
    }

    fn on_hello(&mut self, i: usize, id: u64, h: Hello) {
        let (n, r, inst) = (self.p.n_pes, h.rank, self.inst());
        let (wanted, served) = (h.instance_id, self.p.instance_id);
        let (reason, m) = if !self.p.secret.ct_eq(&h.secret) {
            let m =
                format!("PE {r} belongs to another job: its job secret is not this server's{inst}");
            (Refuse::SecretMismatch, m)
        } else if wanted != served {
            let m = format!(
                "PE {r} asked for instance {wanted}, but this server serves instance {served}"
            );
            (Refuse::InstanceMismatch, m)
        } else if h.n_pes != n {
            let m = format!("PE {r} says the job has {} PEs, but PE 0 says {n}", h.n_pes);
            (Refuse::NPesMismatch, m)
        } else if r >= n {
            let m = format!(
                "PE {r} is out of range: the job has {n} PEs (0..={})",
                n - 1
            );
            (Refuse::RankOutOfRange, m)
        } else if self.grace_deadline.is_some() {
            let m = "this job's bootstrap server is shutting down (PE 0 finalized)";
            (Refuse::ShuttingDown, m.to_owned())
        } else {
            match self.slots[r as usize] {
                Slot::Vacant => {
                    self.slots[r as usize] = Slot::Connected(i);
                    if let Some(c) = self.conns[i].as_mut() {
                        c.rank = Some(r);
                    }
                    return self.send(i, id, &Reply::Accept);
                }
                Slot::Connected(other) => {
                    let from = self.conns[other].as_ref().map(|c| c.peer);
                    let from = from.map_or(String::new(), |p| format!(" (from {p})"));
                    let m = format!(
                        "PE {r} is already connected{from}: two processes claim the same PE number"
                    );
                    (Refuse::RankAlreadyConnected, m)
                }
                Slot::Leaving(_) | Slot::Departed => {
                    let m =
                        format!("PE {r} already finalized in this job, whose server is finishing");
                    (Refuse::ShuttingDown, m)
                }
                Slot::Exiting(_) | Slot::Gone => {
                    let m = format!("PE {r} was lost or exited in this job and cannot rejoin it");
                    (Refuse::RankGone, m)
                }
            }
        };
        self.refuse(i, id, reason, m);
    }

    // ------------------------------------------------------------------ replies

    fn send(&mut self, i: usize, id: u64, reply: &Reply) {
        let failed = |e| Reply::Failed(Kind::Invalid, format!("the reply cannot be sent: {e}"));
        let frame = frames::encode(id, reply).or_else(|e| frames::encode(id, &failed(e)));
        if let Ok(f) = frame {
            self.queue(i, Rc::new(f));
        }
    }

    fn reply(&mut self, rank: u32, id: u64, reply: &Reply) {
        if let Some(i) = self.slots[rank as usize].conn() {
            self.send(i, id, reply);
        }
    }

    /// Fails the current and all later requests with `e`, and tells every member but
    /// `rank` (who lost its connection or exited) with a notice.
    fn break_job(&mut self, e: BootstrapError, rank: u32) {
        let is_exit = |e: &BootstrapError| matches!(e.kind(), Kind::GlobalExit { .. });
        // A global exit replaces a loss as the reason: it says why the job ends.
        let replaces = |b: &BootstrapError| is_exit(&e) && !is_exit(b);
        if self.broken.as_ref().is_none_or(replaces) {
            self.broken = Some(e.clone());
        }
        self.fail_round(&e);
        let Ok(notice) = frames::encode(frames::NOTICE, &failed(&e)) else {
            return;
        };
        let notice = Rc::new(notice);
        for r in (0..self.p.n_pes).filter(|&r| r != rank) {
            if let Slot::Connected(i) | Slot::Exiting(i) = self.slots[r as usize] {
                self.queue(i, notice.clone());
            }
        }
    }

    // ------------------------------------------------------------------ requests

    fn on_request(&mut self, i: usize, rank: u32, id: u64, req: Request) {
        let slot = &mut self.slots[rank as usize];
        match req {
            Request::Bye => {
                *slot = Slot::Leaving(i);
                self.send(i, id, &Reply::Done);
                if rank == 0 && self.grace_deadline.is_none() {
                    // No one joins a finishing job; the port is free for the next one.
                    self.listener = None;
                    self.grace_deadline = Instant::now().checked_add(self.p.op_timeout);
                }
            }
            Request::Exit(status) => {
                *slot = Slot::Exiting(i);
                self.send(i, id, &Reply::Done);
                self.break_job(BootstrapError::global_exit(rank, status), rank);
            }
            _ if matches!(slot, Slot::Leaving(_)) => {
                let m = format!("PE {rank} sent a request after its goodbye");
                self.send(i, id, &failed(&BootstrapError::protocol(m)));
            }
            _ if self.broken.is_some() => {
                let reply = self.broken.as_ref().map(failed).expect("checked");
                self.send(i, id, &reply);
            }
            Request::Barrier(seq) => self.arrive(rank, id, seq, None),
            Request::Allgather(seq, data) => self.arrive(rank, id, seq, Some(data.0)),
        }
    }

    // ------------------------------------------------------------------ collectives

    fn arrive(&mut self, rank: u32, id: u64, seq: u64, data: Option<Vec<u8>>) {
        let (gather, r, op) = (data.is_some(), &self.round, op_name(data.is_some()));
        let at = r.seq;
        let arrived: Vec<u32> = (0..self.p.n_pes)
            .filter(|&p| r.arrivals[p as usize].is_some())
            .collect();
        let failure = if seq != at {
            let m = format!(
                "PE {rank} entered collective #{seq} ({op}) while the job is at collective #{at}: \
                 the PEs do not call barrier/allgather the same number of times"
            );
            let remembered = self.last_failed.as_ref().filter(|(s, _)| *s == seq);
            Some(remembered.map_or_else(|| BootstrapError::protocol(m), |(_, e)| e.clone()))
        } else if arrived.contains(&rank) {
            let m = format!("PE {rank} entered collective #{seq} twice");
            Some(BootstrapError::protocol(m))
        } else if let Some(other) = r.gather.filter(|&g| g != gather).map(op_name) {
            let them = fmt_pes(&arrived);
            let m =
                format!("PE {rank} called {op} as collective #{seq} while {them} called {other}");
            let e = BootstrapError::protocol(m);
            self.fail_round(&e);
            Some(e)
        } else {
            None
        };
        if let Some(e) = failure {
            return self.reply(rank, id, &failed(&e));
        }
        let r = &mut self.round;
        r.gather = Some(gather);
        r.first_arrival.get_or_insert_with(Instant::now);
        r.arrivals[rank as usize] = Some((id, data.unwrap_or_default()));
        if arrived.len() + 1 == self.p.n_pes as usize {
            self.complete_round();
        }
    }

    /// Starts the next collective and returns the current one.
    fn next_round(&mut self) -> Round {
        let next = Round {
            seq: self.round.seq + 1,
            arrivals: vec![None; self.p.n_pes as usize],
            ..Round::default()
        };
        std::mem::replace(&mut self.round, next)
    }

    fn complete_round(&mut self) {
        let round = self.next_round();
        let arrivals = round.arrivals.into_iter().map(|a| a.unwrap_or_default());
        let (ids, parts): (Vec<u64>, Vec<Vec<u8>>) = arrivals.unzip();
        let reply = match round.gather {
            Some(true) => Reply::Gathered(parts.into_iter().map(Blob).collect()),
            _ => Reply::Done,
        };
        // Encoded once, shared by every rank's reply behind its own head.
        let body = frames::body(&reply)
            .ok()
            .filter(|b| b.len() + 10 <= MAX_FRAME);
        let body = body.map(Rc::new);
        for (rank, id) in (0..self.p.n_pes).zip(ids) {
            let head = body.as_ref().and_then(|b| frames::head(id, b.len()).ok());
            match (head, &body, self.slots[rank as usize].conn()) {
                (Some(head), Some(body), Some(i)) => {
                    self.queue(i, Rc::new(head));
                    self.queue(i, body.clone());
                }
                (None, ..) => {
                    let m = format!(
                        "allgather #{} would return more than {MAX_FRAME} bytes",
                        round.seq
                    );
                    self.reply(rank, id, &failed(&BootstrapError::invalid(m)));
                }
                _ => {}
            }
        }
    }

    /// Fails the current round (if anyone is waiting in it) and remembers the failure for
    /// the ranks that arrive at it later.
    fn fail_round(&mut self, e: &BootstrapError) {
        if self.round.first_arrival.is_none() {
            return;
        }
        let round = self.next_round();
        for (rank, a) in (0..self.p.n_pes).zip(round.arrivals) {
            if let Some((id, _)) = a {
                self.reply(rank, id, &failed(e));
            }
        }
        self.last_failed = Some((round.seq, e.clone()));
    }
}
