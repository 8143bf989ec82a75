//! A PE's membership in the TCP config store of one instance: PE 0 runs the [`server`],
//! every PE (PE 0 included) joins it as a [`client`].
//!
//! [`server`]: super::server
//! [`client`]: super::client

use std::net::TcpListener;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::client::Client;
use super::error::BootstrapError;
use super::frames::{Hello, MAGIC, VERSION};
use super::server::{ServerHandle, ServerParams};
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

/// A PE's membership in the config store of one instance (PE 0 also owns the server).
///
/// Dropping it without [`Bootstrap::finalize`] is treated like the death of the process: the
/// peers see this PE as lost (and, for PE 0, the server stops at once).
#[derive(Debug)]
pub(crate) struct StoreBootstrap {
    client: Client,
    server: Mutex<Option<ServerHandle>>,
    my_pe: u32,
    op_timeout: Duration,
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
        let client = Client::connect(&cfg.url, &hello, deadline, job.init_timeout)?;
        let b = StoreBootstrap {
            client,
            server: Mutex::new(server),
            my_pe: me,
            op_timeout: job.op_timeout,
            finalized: AtomicBool::new(false),
        };
        // The server bounds the rendezvous by init_timeout from its start, which is no later
        // than our connection; this bound only guards against a silent server.
        let deadline = Instant::now().checked_add(job.init_timeout + reply_grace(job.init_timeout));
        b.client.collective("the init rendezvous", None, deadline)?;
        let took = fmt_dur(&start.elapsed());
        tracing::debug!("bootstrap: PE {me} joined {} in {took}", cfg.url);
        Ok(b)
    }

    fn op_deadline(&self) -> Option<Instant> {
        Instant::now().checked_add(self.op_timeout + reply_grace(self.op_timeout))
    }
}

impl Bootstrap for StoreBootstrap {
    fn barrier(&self) -> Result<(), BootstrapError> {
        self.client
            .collective("barrier", None, self.op_deadline())
            .map(drop)
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError> {
        self.client
            .collective("allgather", Some(mine), self.op_deadline())
    }

    fn check_alive(&self) -> Result<(), BootstrapError> {
        self.client.check_alive()
    }

    fn global_exit(&self, status: i32) {
        let deadline = Instant::now().checked_add(self.op_timeout);
        self.client.global_exit(status, deadline);
    }

    fn finalize(&self) -> Result<(), BootstrapError> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let deadline = self.op_deadline();
        let barrier = self
            .client
            .collective("the finalize barrier", None, deadline);
        let bye = self.client.bye(self.op_deadline());
        self.client.close();
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
            self.client.close();
        }
    }
}
