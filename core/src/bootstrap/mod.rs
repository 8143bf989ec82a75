//! The bootstrap: how the PEs of one instance meet.
//!
//! PE 0 runs a key-value "config store" server over TCP ([`server`]); every PE, PE 0
//! included, joins it as a client ([`client`]) with a greeting that carries a 16-byte job
//! secret, its rank, the number of PEs and the instance id. Barrier and allgather are
//! coordinated by the server. The store is used at init (to exchange transport attach data),
//! for a few collective control operations, at finalize, to detect a dead peer (a connection
//! that closes without a goodbye) and to propagate `global_exit`.
//!
//! Timeouts are CANN's: `init_timeout` (`shm_init_timeout`) bounds connecting plus the first
//! collective, the init rendezvous, which every PE passes inside [`StoreBootstrap::connect`];
//! `op_timeout` (`control_operation_timeout`) bounds every later operation. Every wait in
//! this module has a bound, and every error names who or what failed.
//!
//! Dropping a [`StoreBootstrap`] without [`Bootstrap::finalize`] is treated like the death
//! of the process: the peers see this PE as lost (and, for PE 0, the server stops at once).

pub(crate) mod client;
pub(crate) mod mpi;
pub(crate) mod rendezvous;
pub(crate) mod server;
pub(crate) mod uid;
pub(crate) mod url;
pub(crate) mod wire;

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub(crate) use url::{BootstrapUrl, UrlError};
pub(crate) use wire::RefuseReason;

use client::Client;
use server::{ServerHandle, ServerParams};

pub(crate) use crate::attr::Secret;

/// Everything a PE needs to join the config store of one instance.
#[derive(Debug)]
pub(crate) struct StoreConfig {
    /// PE 0's address (`tcp://host:port` or `tcp6://[host]:port`).
    pub(crate) url: BootstrapUrl,
    /// This PE's rank.
    pub(crate) my_pe: u32,
    /// Number of PEs in the instance.
    pub(crate) n_pes: u32,
    /// The instance id (only checked for agreement).
    pub(crate) instance_id: u64,
    /// The job secret.
    pub(crate) secret: Secret,
    /// CANN `shm_init_timeout`: connecting plus all PEs arriving at the init rendezvous.
    pub(crate) init_timeout: Duration,
    /// CANN `control_operation_timeout`: every later operation.
    pub(crate) op_timeout: Duration,
    /// A pre-bound (possibly listening) socket for PE 0's server, from a launcher or a
    /// unique id. `None`: PE 0 binds the exact resolved address of `url` itself.
    pub(crate) listener: Option<TcpListener>,
}

/// What can go wrong in the bootstrap. Every message names what or who.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BootstrapError {
    /// PE 0's server could not be reached in time.
    #[error("could not reach the bootstrap server {url} of PE 0 within {}: {detail}", fmt_dur(.after))]
    Connect {
        /// The server's address.
        url: String,
        /// How long this PE tried.
        after: Duration,
        /// The last failure.
        detail: String,
    },
    /// The server refused this PE.
    #[error("the bootstrap server refused this PE: {detail}")]
    Refused {
        /// Why.
        reason: RefuseReason,
        /// The server's explanation.
        detail: String,
    },
    /// A wait expired.
    #[error("timed out after {}: {what}", fmt_dur(.after))]
    Timeout {
        /// What did not happen, naming who.
        what: String,
        /// PEs that did not arrive (empty when not a collective).
        missing: Vec<u32>,
        /// How long was waited.
        after: Duration,
    },
    /// A peer's connection closed without finalize: it died.
    #[error("PE {pe} was lost: {detail}")]
    PeerLost {
        /// The lost PE.
        pe: u32,
        /// How it was lost.
        detail: String,
    },
    /// The connection to PE 0's server broke: PE 0 died (or stopped its server).
    #[error("lost the connection to the bootstrap server of PE 0: {detail}")]
    ServerLost {
        /// What happened.
        detail: String,
    },
    /// A PE called `global_exit`.
    #[error("PE {pe} called global_exit({status}): the job is ending")]
    GlobalExit {
        /// Who.
        pe: u32,
        /// Its status.
        status: i32,
    },
    /// A key is not in the store (get without wait, remove).
    #[error("key {key:?} is not in the bootstrap store")]
    NotFound {
        /// The key.
        key: String,
    },
    /// The PEs disagree about the protocol (collective order, malformed frames, ...).
    #[error("bootstrap protocol error: {0}")]
    Protocol(String),
    /// A bad argument (key too long, payload too large, n_pes 0, ...).
    #[error("invalid bootstrap request: {0}")]
    Invalid(String),
    /// The bootstrap of this PE was finalized already.
    #[error("the bootstrap of PE {pe} was already finalized")]
    Finalized {
        /// This PE.
        pe: u32,
    },
    /// A bad `ip_port` or port range.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// A local I/O failure.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: io::Error,
    },
    /// PE 0 could not bind its server's address.
    #[error("could not bind the bootstrap server to {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: io::Error,
    },
}

/// Formats a duration for messages: "300 ms", "3.0 s", "120 s".
pub(crate) fn fmt_dur(d: &Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 100_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} s", d.as_secs())
    }
}

/// Formats a list of PEs for messages: "PE 3", "PEs 2, 5" (long lists are shortened).
pub(crate) fn fmt_pes(pes: &[u32]) -> String {
    const SHOW: usize = 32;
    let list: Vec<String> = pes.iter().take(SHOW).map(u32::to_string).collect();
    let mut s = match pes.len() {
        0 => return "no PE".to_owned(),
        1 => format!("PE {}", list[0]),
        _ => format!("PEs {}", list.join(", ")),
    };
    if pes.len() > SHOW {
        s.push_str(&format!(" and {} more", pes.len() - SHOW));
    }
    s
}

/// Extra time a client waits beyond the server's own bound before giving up on a reply.
fn reply_grace(t: Duration) -> Duration {
    Duration::from_secs(1) + t / 10
}

/// The operations the rest of the crate needs from a bootstrap.
pub(crate) trait Bootstrap: Send + Sync {
    /// Waits until every PE has entered the barrier (bounded by the operation timeout).
    fn barrier(&self) -> Result<(), BootstrapError>;
    /// Every PE's `mine`, indexed by PE (lengths may differ between PEs).
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError>;
    /// Non-blocking: Err if a peer was lost, the server is gone, or someone called
    /// global_exit. Cheap (an atomic load, plus one non-blocking read when no request is in
    /// flight); safe to call from any thread at any time, also while another thread is
    /// blocked in a request (a request in flight records notices itself).
    fn check_alive(&self) -> Result<(), BootstrapError>;
    /// Tells every PE that this one ends the job with `status`; returns (the caller exits).
    fn global_exit(&self, status: i32);
    /// Collective: a final barrier, then goodbye; PE 0 waits (bounded by the operation
    /// timeout) until all PEs said goodbye, stops and joins its server thread.
    fn finalize(&self) -> Result<(), BootstrapError>;
}

/// A PE's membership in the config store of one instance (PE 0 also owns the server).
pub(crate) struct StoreBootstrap {
    client: Client,
    server: Mutex<Option<ServerHandle>>,
    url: BootstrapUrl,
    my_pe: u32,
    n_pes: u32,
    instance_id: u64,
    op_timeout: Duration,
    finalized: AtomicBool,
}

impl fmt::Debug for StoreBootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreBootstrap")
            .field("url", &self.url.to_string())
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

impl StoreBootstrap {
    /// PE 0 starts the server, then every PE connects (retrying every 1-10 ms until
    /// `init_timeout`) and handshakes, then runs the init rendezvous (the first barrier).
    pub(crate) fn connect(mut cfg: StoreConfig) -> Result<StoreBootstrap, BootstrapError> {
        let start = Instant::now();
        if cfg.n_pes == 0 {
            return Err(BootstrapError::Invalid("n_pes must be at least 1".into()));
        }
        if cfg.my_pe >= cfg.n_pes {
            return Err(BootstrapError::Invalid(format!(
                "PE {} is out of range for {} PEs",
                cfg.my_pe, cfg.n_pes
            )));
        }
        if cfg.init_timeout.is_zero() || cfg.op_timeout.is_zero() {
            return Err(BootstrapError::Invalid(
                "the bootstrap timeouts must not be 0".into(),
            ));
        }
        if cfg.my_pe != 0 && cfg.listener.is_some() {
            return Err(BootstrapError::Invalid(format!(
                "PE {} was given a listening socket, but only PE 0 runs the bootstrap server",
                cfg.my_pe
            )));
        }
        let server = if cfg.my_pe == 0 {
            let listener = match cfg.listener.take() {
                Some(l) => l,
                None => server::bind_listener(&cfg.url)?,
            };
            let params = ServerParams {
                n_pes: cfg.n_pes,
                instance_id: cfg.instance_id,
                secret: cfg.secret,
                init_timeout: cfg.init_timeout,
                op_timeout: cfg.op_timeout,
            };
            Some(ServerHandle::spawn(listener, params)?)
        } else {
            None
        };
        let deadline = start.checked_add(cfg.init_timeout);
        let client = Client::connect(&cfg, deadline)?;
        let me = StoreBootstrap {
            client,
            server: Mutex::new(server),
            url: cfg.url,
            my_pe: cfg.my_pe,
            n_pes: cfg.n_pes,
            instance_id: cfg.instance_id,
            op_timeout: cfg.op_timeout,
            finalized: AtomicBool::new(false),
        };
        // The server bounds the rendezvous by init_timeout from its start, which is no later
        // than our connection; the client bound only guards against a silent server.
        let rendezvous_deadline =
            Instant::now().checked_add(cfg.init_timeout + reply_grace(cfg.init_timeout));
        me.client
            .barrier("the init rendezvous", rendezvous_deadline)?;
        tracing::debug!(
            instance = me.instance_id,
            pe = me.my_pe,
            n_pes = me.n_pes,
            "bootstrap: joined {} in {}",
            me.url,
            fmt_dur(&start.elapsed())
        );
        Ok(me)
    }

    #[cfg(test)]
    /// Where PE 0's server listens (PE 0 only, while it runs).
    pub(crate) fn server_addr(&self) -> Option<SocketAddr> {
        self.server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(ServerHandle::local_addr)
    }

    #[cfg(test)]
    /// Inserts or overwrites a key.
    pub(crate) fn set(&self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        self.client.set(key, value, self.op_deadline())
    }

    #[cfg(test)]
    /// Reads a key; `None` fails at once if it is absent, `Some(d)` waits up to `d` for it.
    pub(crate) fn get(&self, key: &str, wait: Option<Duration>) -> Result<Vec<u8>, BootstrapError> {
        let (wait_ms, deadline) = match wait {
            None => (0, self.op_deadline()),
            Some(d) => {
                let ms = u64::try_from(d.as_millis()).unwrap_or(wire::WAIT_FOREVER);
                let deadline = d
                    .checked_add(reply_grace(self.op_timeout))
                    .and_then(|t| Instant::now().checked_add(t));
                (ms, deadline)
            }
        };
        self.client.get(key, wait_ms, deadline)
    }

    #[cfg(test)]
    /// Adds `delta` to a decimal counter (created at 0) and returns the new value.
    pub(crate) fn add(&self, key: &str, delta: i64) -> Result<i64, BootstrapError> {
        self.client.add(key, delta, self.op_deadline())
    }

    #[cfg(test)]
    /// Deletes a key; `Ok(false)` if it was absent.
    pub(crate) fn remove(&self, key: &str) -> Result<bool, BootstrapError> {
        self.client.remove(key, self.op_deadline())
    }

    fn op_deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.op_timeout + reply_grace(self.op_timeout))
    }

    /// Stops PE 0's server: after it finished on its own within `wait`, or at once (`None`).
    fn stop_server(&self, wait: Option<Duration>) {
        let handle = self
            .server
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut h) = handle {
            if let Some(wait) = wait
                && !h.wait_finished(wait)
            {
                tracing::warn!(
                    instance = self.instance_id,
                    "bootstrap: the server did not finish within {}; stopping it",
                    fmt_dur(&wait)
                );
            }
            h.stop();
        }
    }
}

impl Bootstrap for StoreBootstrap {
    fn barrier(&self) -> Result<(), BootstrapError> {
        self.client.barrier("barrier", self.op_deadline())
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError> {
        self.client.allgather(mine, self.op_deadline())
    }

    fn check_alive(&self) -> Result<(), BootstrapError> {
        self.client.check_alive()
    }

    fn global_exit(&self, status: i32) {
        self.client
            .global_exit(status, Instant::now().checked_add(self.op_timeout));
    }

    fn finalize(&self) -> Result<(), BootstrapError> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let barrier = self
            .client
            .barrier("the finalize barrier", self.op_deadline());
        if let Err(e) = &barrier {
            tracing::warn!(
                instance = self.instance_id,
                pe = self.my_pe,
                "bootstrap: finalize: {e}"
            );
        }
        let bye = self.client.bye(self.op_deadline());
        self.client.close();
        // The server gives the others op_timeout after PE 0's goodbye; wait a little longer.
        self.stop_server(Some(self.op_timeout + Duration::from_secs(1)));
        tracing::debug!(
            instance = self.instance_id,
            pe = self.my_pe,
            "bootstrap: finalized"
        );
        barrier.and(bye)
    }
}

impl Drop for StoreBootstrap {
    fn drop(&mut self) {
        if !self.finalized.load(Ordering::Acquire) {
            tracing::debug!(
                instance = self.instance_id,
                pe = self.my_pe,
                "bootstrap: dropped without finalize; peers will see this PE as lost"
            );
            // Server first: like the death of PE 0's process, the others see the server go
            // (ServerLost), not PE 0's client leave (PeerLost).
            self.stop_server(None);
            self.client.close();
        }
    }
}

#[cfg(test)]
mod tests;
