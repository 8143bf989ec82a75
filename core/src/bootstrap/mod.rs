//! The bootstrap: how the PEs of one instance meet, and the few collectives they run outside
//! the symmetric heap.
//!
//! [`join`] is the one entry point: it meets the instance's other PEs as the attributes'
//! mode says and returns a [`Bootstrap`]:
//! * DEFAULT and unique-id mode, and the job-local rendezvous of launchers without an
//!   address: PE 0 runs a TCP config store ([`server`]); every PE, PE 0 included, joins it as
//!   a client ([`store`]) with a greeting that carries a 16-byte job secret, its
//!   rank, the number of PEs, the instance id and the protocol version. Barrier and allgather
//!   are coordinated by the server. The address comes from CANN's `ip_port` ([`url`]), a
//!   unique id ([`uid`]) or the rendezvous ([`rendezvous`]); with the cargo feature `tls` and
//!   the job's certificates, every connection to the server is TLS ([`tls`]);
//! * MPI mode: a duplicate of an MPI communicator ([`mpi`]).
//!
//! Timeouts are CANN's: `init_timeout` (`shm_init_timeout`) bounds connecting plus the first
//! collective, the init rendezvous, which every PE passes inside [`join`]; `op_timeout`
//! (`control_operation_timeout`) bounds every later operation. Every wait has a bound, and
//! every error is a [`BootstrapError`] that names who or what failed.

pub(crate) mod addr;
pub(crate) mod error;
pub(crate) mod frames;
pub(crate) mod interfaces;
pub(crate) mod mpi;
pub(crate) mod rendezvous;
pub(crate) mod server;
pub(crate) mod store;
pub(crate) mod tls;
pub(crate) mod uid;
pub(crate) mod url;

use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytemuck::Pod;

pub use error::{BootstrapError, BootstrapErrorKind, RefuseReason};
pub use uid::UniqueId;

pub(crate) use crate::attr::Secret;
use crate::attr::{Attributes, InitMode, Listener};
use server::ServerParams;
use store::{StoreBootstrap, StoreConfig};

/// The operations the rest of the crate needs from a bootstrap.
pub(crate) trait Bootstrap: Send + Sync + std::fmt::Debug {
    /// Waits until every PE has entered the barrier (bounded by the operation timeout).
    fn barrier(&self) -> Result<(), BootstrapError>;
    /// Every PE's `mine`, indexed by PE (lengths may differ between PEs).
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError>;
    /// Non-blocking: Err if a peer was lost, the server is gone, or someone called
    /// global_exit. Cheap (a look at what the connection's reader recorded); safe to call
    /// from any thread at any time, also while another thread is blocked in a request.
    fn check_alive(&self) -> Result<(), BootstrapError>;
    /// A flag that is set once [`Bootstrap::check_alive`] fails, so that a caller on a hot
    /// path can skip the call while it is clear.
    fn alarm(&self) -> Arc<AtomicBool>;
    /// Tells every PE that this one ends the job with `status`; returns (the caller exits).
    fn global_exit(&self, status: i32);
    /// Collective: a final barrier, then goodbye; PE 0 waits (bounded by the operation
    /// timeout) until all PEs said goodbye, stops and joins its server thread.
    fn finalize(&self) -> Result<(), BootstrapError>;
}

/// Every PE's `mine`, indexed by PE: the one binary format of the library's own allgathers
/// (the MPI membership check, the allocation records of the heap, ...). A record is the
/// `Pod`'s bytes in this machine's layout; one of another size (a PE of another build) fails
/// the whole call with a `Protocol` error naming that PE.
///
/// A crate-private function, so the sketch is not compiled:
///
/// ```text
/// #[repr(C)]
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// struct Block { offset: u64, size: u64 }
/// let all: Vec<Block> = allgather_records(&*boot, &Block { offset, size })?;
/// ```
pub(crate) fn allgather_records<T: Pod>(
    b: &dyn Bootstrap,
    mine: &T,
) -> Result<Vec<T>, BootstrapError> {
    let all = b.allgather(bytemuck::bytes_of(mine))?;
    let record = |(pe, r): (usize, &Vec<u8>)| {
        bytemuck::try_pod_read_unaligned(r).map_err(|_| {
            let (got, want) = (r.len(), size_of::<T>());
            let m = format!("PE {pe} sent a record of {got} bytes where {want} were expected: the PEs run different builds");
            BootstrapError::protocol(m)
        })
    };
    all.iter().enumerate().map(record).collect()
}

/// Meets the other PEs of instance `attrs.instance_id` as `attrs.mode` says (the attributes
/// are validated already). Failures to meet are marked [`BootstrapError::during_init`];
/// a bad address, unique id or `sock_fd` is not.
pub(crate) fn join(attrs: &Attributes) -> Result<Box<dyn Bootstrap>, BootstrapError> {
    let (my_pe, n_pes, id) = (attrs.my_pe, attrs.n_pes, attrs.instance_id);
    let (init_timeout, op_timeout) = (attrs.init_timeout, attrs.op_timeout);
    // PE 0 serves on the id's socket, if this process made the id.
    let from_uid = |uid: &UniqueId| {
        let listener = (my_pe == 0).then(|| uid.take_listener()).flatten();
        Ok::<_, BootstrapError>((uid.url()?, listener, uid.secret()))
    };
    let (url, listener, secret) = match &attrs.mode {
        InitMode::Mpi(comm) => {
            let joined = mpi::MpiBootstrap::new(*comm, my_pe, n_pes, id);
            return Ok(Box::new(joined.map_err(BootstrapError::at_init)?));
        }
        InitMode::Default => {
            let url = url::default_address(attrs)?;
            let listener = match &attrs.listener {
                Some(l) if my_pe == 0 => Some(prebound_listener(l, url.port)?),
                _ => None,
            };
            let from_env =
                crate::settings::bootstrap_secret(std::env::var("SHMEM_BOOTSTRAP_SECRET").ok())
                    .map_err(|e| BootstrapError::invalid(e.to_string()))?;
            let secret = attrs.secret.or(from_env).unwrap_or(Secret::CANN_MAGIC);
            (url, listener, secret)
        }
        InitMode::UniqueId(uid) => from_uid(uid)?,
        InitMode::JobLocal(key) => {
            let met = rendezvous::meet(key, id, my_pe, n_pes, init_timeout);
            from_uid(&met.map_err(BootstrapError::at_init)?)?
        }
    };
    let job = ServerParams {
        n_pes,
        instance_id: id,
        secret,
        init_timeout,
        op_timeout,
        tls: tls::from_env()?,
    };
    let cfg = StoreConfig {
        url,
        my_pe,
        job,
        listener,
    };
    let joined = StoreBootstrap::connect(cfg).map_err(BootstrapError::at_init)?;
    Ok(Box::new(joined))
}

/// A socket of its own on the pre-bound `listener` PE 0 serves on, after checking that it is
/// a TCP socket bound to `port`.
fn prebound_listener(listener: &Listener, port: u16) -> Result<TcpListener, BootstrapError> {
    let bad = |why: String| BootstrapError::invalid(format!("the pre-bound socket {why}"));
    let socket = listener.socket();
    let socket = socket.map_err(|e| match crate::rlimit::limit_reached(&e) {
        Some(_) => BootstrapError::io("duplicating the pre-bound socket", e),
        None => bad(format!("cannot be duplicated: {e}")),
    })?;
    let bound = socket.local_addr();
    let bound = bound
        .map_err(|e| bad(format!("is not a TCP socket: {e}")))?
        .port();
    if bound != port {
        let m = format!("is bound to port {bound}, but ip_port names port {port}");
        return Err(bad(m));
    }
    Ok(socket)
}

/// Locks `m`, also if a thread panicked while holding it (the bootstrap's state stays
/// consistent across a panic: every critical section is a few assignments).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Formats a duration for messages: "300 ms", "3.0 s", "120 s".
pub(crate) fn fmt_dur(d: &Duration) -> String {
    match d.as_millis() {
        ms @ 0..1000 => format!("{ms} ms"),
        1000..100_000 => format!("{:.1} s", d.as_secs_f64()),
        _ => format!("{} s", d.as_secs()),
    }
}

/// Formats a list of PEs for messages: "PE 3", "PEs 2, 5" (long lists are shortened).
pub(crate) fn fmt_pes(pes: &[u32]) -> String {
    const SHOW: usize = 32;
    let list: Vec<String> = pes.iter().take(SHOW).map(u32::to_string).collect();
    let more = match pes.len().saturating_sub(SHOW) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    match pes.len() {
        0 => "no PE".to_owned(),
        1 => format!("PE {}", list[0]),
        _ => format!("PEs {}{more}", list.join(", ")),
    }
}

#[cfg(test)]
pub(crate) mod tests;
