//! A PE's membership in the TCP config store of one instance: PE 0 runs the [`server`],
//! every PE (PE 0 included) joins it as a [`client`].
//!
//! [`server`]: super::server
//! [`client`]: super::client

use std::fmt;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::client::Client;
use super::error::BootstrapError;
use super::frames::{Hello, MAGIC, VERSION};
use super::server::{ServerHandle, ServerParams};
use super::url::BootstrapUrl;
use super::{Bootstrap, Secret, fmt_dur};

/// Everything a PE needs to join the config store of one instance.
#[derive(Debug)]
pub(crate) struct StoreConfig {
    /// PE 0's address.
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
pub(crate) struct StoreBootstrap {
    client: Client,
    server: Mutex<Option<ServerHandle>>,
    url: BootstrapUrl,
    my_pe: u32,
    instance_id: u64,
    op_timeout: Duration,
    finalized: AtomicBool,
}

impl fmt::Debug for StoreBootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreBootstrap")
            .field("url", &self.url.to_string())
            .field("my_pe", &self.my_pe)
            .field("instance_id", &self.instance_id)
            .finish_non_exhaustive()
    }
}

impl StoreBootstrap {
    /// PE 0 starts the server, then every PE connects (retrying every 1-10 ms until
    /// `init_timeout`) and greets it, then runs the init rendezvous (the first barrier).
    pub(crate) fn connect(mut cfg: StoreConfig) -> Result<StoreBootstrap, BootstrapError> {
        let start = Instant::now();
        if cfg.my_pe >= cfg.n_pes {
            let m = format!("PE {} is out of range for {} PEs", cfg.my_pe, cfg.n_pes);
            return Err(BootstrapError::invalid(m));
        }
        if cfg.init_timeout.is_zero() || cfg.op_timeout.is_zero() {
            return Err(BootstrapError::invalid(
                "the bootstrap timeouts must not be 0",
            ));
        }
        if cfg.my_pe != 0 && cfg.listener.is_some() {
            return Err(BootstrapError::invalid(format!(
                "PE {} was given a listening socket, but only PE 0 runs the bootstrap server",
                cfg.my_pe
            )));
        }
        let server = if cfg.my_pe == 0 {
            let listener = match cfg.listener.take() {
                Some(l) => l,
                None => cfg.url.bind()?,
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
        let hello = Hello {
            magic: MAGIC,
            version: VERSION,
            secret: cfg.secret.0,
            rank: cfg.my_pe,
            n_pes: cfg.n_pes,
            instance_id: cfg.instance_id,
        };
        let client = Client::connect(
            &cfg.url,
            &hello,
            start.checked_add(cfg.init_timeout),
            cfg.init_timeout,
        )?;
        let me = StoreBootstrap {
            client,
            server: Mutex::new(server),
            url: cfg.url,
            my_pe: cfg.my_pe,
            instance_id: cfg.instance_id,
            op_timeout: cfg.op_timeout,
            finalized: AtomicBool::new(false),
        };
        // The server bounds the rendezvous by init_timeout from its start, which is no later
        // than our connection; this bound only guards against a silent server.
        let deadline = Instant::now().checked_add(cfg.init_timeout + reply_grace(cfg.init_timeout));
        me.client
            .collective("the init rendezvous", None, deadline)?;
        tracing::debug!(
            instance = me.instance_id,
            pe = me.my_pe,
            "bootstrap: joined {} in {}",
            me.url,
            fmt_dur(&start.elapsed())
        );
        Ok(me)
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
            if let Some(wait) = wait {
                h.wait_finished(wait);
            }
            h.stop();
        }
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
        self.client
            .global_exit(status, Instant::now().checked_add(self.op_timeout));
    }

    fn finalize(&self) -> Result<(), BootstrapError> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let barrier = self
            .client
            .collective("the finalize barrier", None, self.op_deadline());
        let bye = self.client.bye(self.op_deadline());
        self.client.close();
        // The server gives the others op_timeout after PE 0's goodbye; wait a little longer.
        self.stop_server(Some(self.op_timeout + Duration::from_secs(1)));
        tracing::debug!(
            instance = self.instance_id,
            pe = self.my_pe,
            "bootstrap: finalized"
        );
        barrier.map(drop).and(bye)
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
