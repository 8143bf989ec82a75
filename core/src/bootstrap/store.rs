//! A PE's membership in the TCP config store of one instance: PE 0 runs the [`server`],
//! every PE (PE 0 included) joins it over one TCP connection.
//!
//! A reader thread owns the read side: it files each reply under its request id and records
//! notices (a lost peer, a global exit) as the PE's alarm, so `check_alive` is a look at a
//! mutex-guarded field and never waits behind a request in flight. Requests write their
//! frame (under a short write lock) and wait on a condition variable, with a deadline, for
//! their reply. Collectives are serialised per PE (one in flight, so that their sequence
//! numbers arrive in order); `global_exit` is not, so it works while another thread of the PE
//! is blocked in a barrier (the server then fails that barrier).
//!
//! Writes use `MSG_NOSIGNAL` and a send timeout, so a dead server is an error value, never a
//! `SIGPIPE` or a hang.
//!
//! [`server`]: super::server

use std::collections::HashMap;
use std::fmt;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::net::SendFlags;
use serde::Serialize;

use super::error::{BootstrapError, BootstrapErrorKind as Kind};
use super::frames::{
    self, Blob, FrameBuf, Hello, MAGIC, MAX_FRAME, NOTICE, Reply, Request, VERSION,
};
use super::server::{ServerHandle, ServerParams};
use super::tls::{ClientSide, Tls};
use super::url::BootstrapUrl;
use super::{Bootstrap, fmt_dur, lock};

/// Everything a PE needs to join the config store of one instance.
#[derive(Debug)]
pub(crate) struct StoreConfig {
    /// PE 0's address.
    pub(crate) url: BootstrapUrl,
    /// This PE's rank.
    pub(crate) my_pe: u32,
    /// What PE 0's server enforces, and every PE presents: the number of PEs, the instance,
    /// the job secret and the timeouts (CANN's `shm_init_timeout` bounds connecting plus the
    /// init rendezvous, `control_operation_timeout` every later operation).
    pub(crate) job: ServerParams,
    /// A bound (possibly listening) socket for PE 0's server, from a launcher or a unique
    /// id. `None`: PE 0 binds the exact resolved address of `url` itself.
    pub(crate) listener: Option<TcpListener>,
}

/// Extra time a PE waits beyond the server's own bound before giving up on a reply.
fn reply_grace(t: Duration) -> Duration {
    Duration::from_secs(1) + t / 10
}

/// Retry pause bounds while the server is not reachable yet (a refused loopback connect costs
/// microseconds, so the first retries come soon: PE 0 usually listens within a millisecond).
const RETRY_MIN: Duration = Duration::from_micros(100);
const RETRY_MAX: Duration = Duration::from_millis(10);
/// Longest single connect() attempt, so that a list of addresses is worked through.
const CONNECT_ATTEMPT_MAX: Duration = Duration::from_secs(2);

fn refused(e: &BootstrapError) -> bool {
    matches!(e.kind(), Kind::Refused(_))
}

/// `s`, unless it is connected to itself: dialling a loopback port nobody listens on yet, the
/// kernel can pick that very port as the source, and TCP's simultaneous open connects the
/// socket to itself. Such a stream is reset (linger 0, so that no `TIME_WAIT` keeps PE 0 from
/// binding the port) and counted as a refused connection, which the dial retries.
pub(super) fn not_self_connected(s: TcpStream, addr: SocketAddr) -> std::io::Result<TcpStream> {
    if s.local_addr()? != addr {
        return Ok(s);
    }
    rustix::net::sockopt::set_socket_linger(&s, Some(Duration::ZERO))?;
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "the connection reached its own socket: nobody listens there yet",
    ))
}

/// What the reader thread and the requests share.
#[derive(Debug, Default)]
struct State {
    /// Replies that arrived, by request id, for the requests that wait for them.
    replies: HashMap<u64, Option<Reply>>,
    /// The first fatal condition seen: a lost peer, a global exit, the server gone.
    alarm: Option<BootstrapError>,
    /// Set once the connection is unusable (closed, failed, desynchronised).
    broken: Option<BootstrapError>,
    next_id: u64,
}

impl State {
    /// Why the connection is unusable, if it is: the first fatal condition seen, which may
    /// precede the break (a peer lost, and then PE 0, noticing it, gone too).
    fn cause(&self) -> Option<BootstrapError> {
        self.broken.as_ref()?;
        self.alarm.clone().or_else(|| self.broken.clone())
    }
}

#[derive(Debug)]
struct Shared {
    stream: TcpStream,
    /// The TLS session over `stream`, in a job with TLS.
    tls: Option<ClientSide>,
    url: String,
    state: Mutex<State>,
    arrived: Condvar,
    /// Whether `state.alarm` is set: lets `check_alive` answer without the lock, so every
    /// barrier and wait can ask before it arrives.
    alarmed: Arc<AtomicBool>,
}

/// Writes all of `buf` to the blocking `stream` (within its send timeout).
fn send_all(stream: &TcpStream, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        match rustix::net::send(stream, buf, SendFlags::NOSIGNAL) {
            Ok(n) => buf = &buf[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl Shared {
    /// Marks the connection unusable (unless it is closed already) and raises the alarm.
    fn fail(&self, e: BootstrapError) {
        let mut s = lock(&self.state);
        if s.broken.is_none() {
            self.sound(&mut s, || e.clone());
            s.broken = Some(e);
        }
        self.arrived.notify_all();
    }

    /// Raises the alarm (the first one raised stays).
    fn raise(&self, e: &BootstrapError) {
        self.sound(&mut lock(&self.state), || e.clone());
    }

    /// Sets the alarm of `s` (the state, locked) to `e()` unless one is set.
    fn sound(&self, s: &mut State, e: impl FnOnce() -> BootstrapError) {
        s.alarm.get_or_insert_with(e);
        self.alarmed.store(true, Ordering::Release);
    }

    fn server_lost(&self, what: &str) -> BootstrapError {
        let url = &self.url;
        let m = format!("lost the connection to the bootstrap server {url} of PE 0: {what}");
        BootstrapError::new(Kind::ServerLost, m)
    }

    /// The reader thread: files replies and notices until the connection ends.
    fn read_all(&self) {
        let mut rbuf = FrameBuf::default();
        loop {
            let read = match &self.tls {
                Some(t) => t.read_into(&self.stream, &mut rbuf),
                None => rbuf.read_from(&mut &self.stream),
            };
            match read {
                Ok(0) => return self.fail(self.server_lost("PE 0 exited, failed or finalized")),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A TLS session that failed (the server refused this PE's certificate) fails
                // again on the next try: not a loss to retry.
                Err(e) if self.tls.is_some() && e.kind() == std::io::ErrorKind::InvalidData => {
                    let url = &self.url;
                    let m = format!("the TLS session with the bootstrap server {url} failed: {e}");
                    return self.fail(BootstrapError::invalid(m));
                }
                Err(e) => return self.fail(self.server_lost(&e.to_string())),
            }
            loop {
                let frame = rbuf.next_frame();
                let (id, reply) = match frame.and_then(|f| f.map(frames::decode).transpose()) {
                    Ok(Some(f)) => f,
                    Ok(None) => break,
                    Err(e) => {
                        let url = &self.url;
                        let m = format!(
                            "the bootstrap server {url} sent a frame this PE cannot read: {e}"
                        );
                        let _ = self.stream.shutdown(Shutdown::Both);
                        return self.fail(BootstrapError::protocol(m).with_source(e));
                    }
                };
                let mut s = lock(&self.state);
                match (id, reply) {
                    (NOTICE, Reply::Failed(kind, m)) => {
                        self.sound(&mut s, || BootstrapError::new(kind, m));
                    }
                    // Only requests still waiting keep their reply.
                    (id, reply) => {
                        s.replies.entry(id).and_modify(|slot| *slot = Some(reply));
                    }
                }
                self.arrived.notify_all();
            }
        }
    }
}

/// A PE's membership in the config store of one instance: its connection to PE 0's server
/// (PE 0 also owns the server).
///
/// Dropping it without [`Bootstrap::finalize`] is treated like the death of the process: the
/// peers see this PE as lost (and, for PE 0, the server stops at once).
#[derive(Debug)]
pub(crate) struct StoreBootstrap {
    shared: Arc<Shared>,
    my_pe: u32,
    n_pes: u32,
    /// CANN's `control_operation_timeout`: the bound of every operation after init.
    op_timeout: Duration,
    /// This PE's count of collective calls (1 = the init rendezvous), held while one runs.
    seq: Mutex<u64>,
    write: Mutex<()>,
    reader: Mutex<Option<JoinHandle<()>>>,
    /// PE 0's server.
    server: Mutex<Option<ServerHandle>>,
    finalized: AtomicBool,
}

impl StoreBootstrap {
    /// PE 0 starts the server, then every PE connects (retrying every 1-10 ms until
    /// `init_timeout`) and greets it, then runs the init rendezvous (the first barrier).
    pub(crate) fn connect(cfg: StoreConfig) -> Result<StoreBootstrap, BootstrapError> {
        let start = Instant::now();
        let (me, job) = (cfg.my_pe, cfg.job);
        let problem = if me >= job.n_pes {
            Some(format!("PE {me} is out of range for {} PEs", job.n_pes))
        } else if job.init_timeout.is_zero() || job.op_timeout.is_zero() {
            Some("the bootstrap timeouts must not be 0".to_owned())
        } else if me != 0 && cfg.listener.is_some() {
            Some(format!(
                "PE {me} was given a socket, but only PE 0 runs the bootstrap server"
            ))
        } else {
            None
        };
        if let Some(m) = problem {
            return Err(BootstrapError::invalid(m));
        }
        let server = match (me, cfg.listener) {
            (0, Some(l)) => Some(ServerHandle::spawn(l, job.clone())?),
            (0, None) => Some(ServerHandle::spawn(cfg.url.bind()?, job.clone())?),
            _ => None,
        };
        let hello = Hello {
            magic: MAGIC,
            version: VERSION,
            secret: job.secret.0,
            rank: me,
            n_pes: job.n_pes,
            instance_id: job.instance_id,
        };
        let deadline = start.checked_add(job.init_timeout);
        let tls = job.tls.as_deref();
        let mut b = StoreBootstrap::dial(&cfg.url, &hello, tls, deadline, job.init_timeout)?;
        b.server = Mutex::new(server);
        b.op_timeout = job.op_timeout;
        // The server bounds the rendezvous by init_timeout from its start, which is no later
        // than our connection; this bound only guards against a silent server.
        let deadline = Instant::now().checked_add(job.init_timeout + reply_grace(job.init_timeout));
        b.collective("the init rendezvous", None, deadline)?;
        let took = fmt_dur(&start.elapsed());
        tracing::debug!("bootstrap: PE {me} joined {} in {took}", cfg.url);
        Ok(b)
    }

    /// Connects to the server at `url` and greets it with `hello`, retrying until `deadline`
    /// (`after` is how long that is, for the message; it also bounds every send, and, until
    /// `connect` sets `op_timeout`, every operation).
    pub(crate) fn dial(
        url: &BootstrapUrl,
        hello: &Hello,
        tls: Option<&Tls>,
        deadline: Option<Instant>,
        after: Duration,
    ) -> Result<StoreBootstrap, BootstrapError> {
        let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut pause = RETRY_MIN;
        let mut last = BootstrapError::new(Kind::Connect, "no connection attempt was made");
        loop {
            let addrs = url.resolve().unwrap_or_else(|e| {
                last = e;
                Vec::new()
            });
            for addr in addrs {
                let attempt = left().map_or(CONNECT_ATTEMPT_MAX, |l| l.min(CONNECT_ATTEMPT_MAX));
                if attempt.is_zero() {
                    break;
                }
                let greeted = TcpStream::connect_timeout(&addr, attempt)
                    .and_then(|s| not_self_connected(s, addr))
                    .map_err(|e| BootstrapError::io(format!("connecting to {addr}"), e))
                    .and_then(|s| StoreBootstrap::greet(s, url, hello, tls, deadline, after));
                match greeted {
                    Ok(c) => return Ok(c),
                    // A refusal says more than an attempt cut short by the deadline.
                    Err(e) if StoreBootstrap::retry(&e) => {
                        if !refused(&last) || refused(&e) {
                            last = e;
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            let left = left().unwrap_or(pause);
            if left.is_zero() {
                let m = format!(
                    "could not reach the bootstrap server {url} of PE 0 within {} (last attempt: {last})",
                    fmt_dur(&after)
                );
                return Err(BootstrapError::new(Kind::Connect, m).with_source(last));
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(RETRY_MAX);
        }
    }

    /// Whether a failed attempt is worth another: nobody listens yet, the server refused with
    /// a retryable reason, closed the link before answering (an old incarnation shutting down,
    /// or a full accept queue), or did not answer in time.
    fn retry(e: &BootstrapError) -> bool {
        match e.kind() {
            Kind::Refused(r) => r.is_retryable(),
            Kind::ServerLost | Kind::Timeout { .. } | Kind::Io => true,
            _ => false,
        }
    }

    fn greet(
        stream: TcpStream,
        url: &BootstrapUrl,
        hello: &Hello,
        tls: Option<&Tls>,
        deadline: Option<Instant>,
        send_timeout: Duration,
    ) -> Result<StoreBootstrap, BootstrapError> {
        let setup = |e| BootstrapError::io(format!("configuring the connection to {url}"), e);
        stream
            .set_write_timeout(Some(send_timeout))
            .map_err(setup)?;
        // Best effort: small request/response frames must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let tls = match tls {
            Some(t) => {
                let server = stream.peer_addr().map_err(setup)?.ip();
                Some(ClientSide::handshake(t, &stream, server, send_timeout)?)
            }
            None => None,
        };
        let shared = Arc::new(Shared {
            stream,
            tls,
            url: url.to_string(),
            state: Mutex::default(),
            arrived: Condvar::new(),
            alarmed: Arc::default(),
        });
        let reader = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("shmem-bootstrap-client".into())
                .stack_size(128 << 10)
                .spawn(move || shared.read_all())
                .map_err(|e| {
                    BootstrapError::thread("cannot start the bootstrap client's reader", e)
                })?
        };
        let client = StoreBootstrap {
            shared,
            my_pe: hello.rank,
            n_pes: hello.n_pes,
            op_timeout: send_timeout,
            seq: Mutex::new(0),
            write: Mutex::new(()),
            reader: Mutex::new(Some(reader)),
            server: Mutex::new(None),
            finalized: AtomicBool::new(false),
        };
        match client.request(hello, &"the greeting", deadline)? {
            Reply::Accept => Ok(client),
            Reply::Refuse(reason, m) => {
                let m = format!("the bootstrap server {url} refused this PE: {m}");
                Err(BootstrapError::new(Kind::Refused(reason), m))
            }
            other => Err(client.unexpected(&"the greeting", &other)),
        }
    }

    /// Sends `msg` and waits until `deadline` for its reply. A `Failed` reply is returned as
    /// the error, and raises the alarm if it says the job is broken.
    fn request(
        &self,
        msg: &impl Serialize,
        what: &dyn fmt::Display,
        deadline: Option<Instant>,
    ) -> Result<Reply, BootstrapError> {
        let started = Instant::now();
        let id = {
            let mut s = lock(&self.shared.state);
            if let Some(e) = s.cause() {
                return Err(e);
            }
            s.next_id += 1;
            let id = s.next_id;
            s.replies.insert(id, None);
            id
        };
        let sent = frames::encode(id, msg).and_then(|f| self.send(&f, what));
        let mut s = lock(&self.shared.state);
        if sent.is_ok() {
            let until = |d: Instant| d.saturating_duration_since(Instant::now());
            let left = deadline.map_or(Duration::MAX, until);
            let waiting = |s: &mut State| s.broken.is_none() && s.replies.get(&id) == Some(&None);
            let woken = self.shared.arrived.wait_timeout_while(s, left, waiting);
            s = woken.unwrap_or_else(PoisonError::into_inner).0;
        }
        let result = match (sent, s.replies.remove(&id).flatten()) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(reply)) => Ok(reply),
            (Ok(()), None) => Err(s.cause().unwrap_or_else(|| {
                let (took, url) = (fmt_dur(&started.elapsed()), &self.shared.url);
                let m = format!(
                    "timed out after {took}: no reply from the bootstrap server {url} to {what}"
                );
                BootstrapError::timeout(Vec::new(), m)
            })),
        };
        drop(s);
        match result? {
            Reply::Failed(kind, m) => {
                let e = BootstrapError::new(kind, m);
                if matches!(e.kind(), Kind::PeerLost { .. } | Kind::GlobalExit { .. }) {
                    self.shared.raise(&e);
                }
                Err(e)
            }
            reply => Ok(reply),
        }
    }

    /// Writes a whole frame; a failure or the send timeout leaves the connection unusable.
    fn send(&self, buf: &[u8], what: &dyn fmt::Display) -> Result<(), BootstrapError> {
        let _w = lock(&self.write);
        let stream = &self.shared.stream;
        let sent = match &self.shared.tls {
            Some(t) => t.send(stream, buf),
            None => send_all(stream, buf),
        };
        sent.map_err(|e| {
            let e = self
                .shared
                .server_lost(&format!("sending {what} failed: {e}"));
            self.shared.fail(e.clone());
            e
        })
    }

    fn unexpected(&self, what: &dyn fmt::Display, r: &Reply) -> BootstrapError {
        let url = &self.shared.url;
        BootstrapError::protocol(format!("unexpected reply to {what} from {url}: {r:?}"))
    }

    /// The next collective of this PE: a barrier (`data == None`, `what` names it) or an
    /// allgather of `data`.
    pub(crate) fn collective(
        &self,
        what: &str,
        data: Option<&[u8]>,
        deadline: Option<Instant>,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        const LIMIT: usize = MAX_FRAME - 64;
        if let Some(n) = data.map(<[u8]>::len).filter(|&n| n > LIMIT) {
            let m = format!(
                "an allgather contribution of {n} bytes exceeds the limit of {LIMIT} bytes"
            );
            return Err(BootstrapError::invalid(m));
        }
        let mut seq = lock(&self.seq);
        *seq += 1;
        if self.n_pes == 1 {
            // Nothing to meet: the PE's own contribution is the whole result.
            return Ok(data.map(|d| vec![d.to_vec()]).unwrap_or_default());
        }
        // Named in errors only, so formatted only for them.
        let what = Numbered { what, seq: *seq };
        let req = match data {
            None => Request::Barrier(*seq),
            Some(d) => Request::Allgather(*seq, Blob(d.to_vec())),
        };
        match (self.request(&req, &what, deadline)?, data) {
            (Reply::Done, None) => Ok(Vec::new()),
            (Reply::Gathered(parts), Some(_)) if parts.len() == self.n_pes as usize => {
                Ok(parts.into_iter().map(|b| b.0).collect())
            }
            (r, _) => Err(self.unexpected(&what, &r)),
        }
    }

    /// Says goodbye: the next close of this connection is not a loss.
    pub(crate) fn bye(&self, deadline: Option<Instant>) -> Result<(), BootstrapError> {
        let _seq = lock(&self.seq);
        match self.request(&Request::Bye, &"goodbye", deadline)? {
            Reply::Done => Ok(()),
            r => Err(self.unexpected(&"goodbye", &r)),
        }
    }

    /// Closes the connection and joins the reader; later requests fail as finalized.
    pub(crate) fn close(&self) {
        let finalized = BootstrapError::finalized(self.my_pe);
        lock(&self.shared.state).broken.get_or_insert(finalized);
        let _ = self.shared.stream.shutdown(Shutdown::Both);
        if let Some(t) = lock(&self.reader).take() {
            let _ = t.join();
        }
    }

    fn op_deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.op_timeout + reply_grace(self.op_timeout))
    }
}

impl Bootstrap for StoreBootstrap {
    fn barrier(&self) -> Result<(), BootstrapError> {
        self.collective("barrier", None, self.op_deadline())
            .map(drop)
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError> {
        self.collective("allgather", Some(mine), self.op_deadline())
    }

    fn check_alive(&self) -> Result<(), BootstrapError> {
        if !self.shared.alarmed.load(Ordering::Acquire) {
            return Ok(());
        }
        lock(&self.shared.state).alarm.clone().map_or(Ok(()), Err)
    }

    fn alarm(&self) -> Arc<AtomicBool> {
        self.shared.alarmed.clone()
    }

    /// Sends Exit{status} and waits (up to `op_timeout`) for the server to take it. Works
    /// while another thread of this PE is blocked in a request.
    fn global_exit(&self, status: i32) {
        let (pe, deadline) = (self.my_pe, Instant::now().checked_add(self.op_timeout));
        if let Err(e) = self.request(&Request::Exit(status), &"global_exit", deadline) {
            tracing::debug!(
                pe,
                "bootstrap: global_exit({status}) did not reach the server: {e}"
            );
        }
        self.shared.raise(&BootstrapError::global_exit(pe, status));
    }

    fn finalize(&self) -> Result<(), BootstrapError> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let barrier = self.collective("the finalize barrier", None, self.op_deadline());
        let bye = self.bye(self.op_deadline());
        self.close();
        // The server gives the others op_timeout after PE 0's goodbye; wait a little longer.
        if let Some(mut server) = lock(&self.server).take() {
            server.stop(self.op_timeout + Duration::from_secs(1));
        }
        barrier.map(drop).and(bye)
    }
}

impl Drop for StoreBootstrap {
    fn drop(&mut self) {
        if !self.finalized.load(Ordering::Acquire) {
            tracing::debug!("bootstrap: PE {} dropped without finalize", self.my_pe);
            // Server first: like the death of PE 0's process, the others see the server go
            // (ServerLost), not PE 0's client leave (PeerLost).
            drop(lock(&self.server).take());
        }
        self.close();
    }
}

/// A collective as errors name it: `what`, with its number in this PE's sequence after the
/// first.
struct Numbered<'a> {
    what: &'a str,
    seq: u64,
}

impl fmt::Display for Numbered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.seq {
            1 => f.write_str(self.what),
            n => write!(f, "{} (collective #{n})", self.what),
        }
    }
}
