//! [`Instance`]: one SHMEM instance, owning its bootstrap, transport, heap and teams.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use shmem_backend::{
    DynQueue, DynTransport, Exchange, Pe, SegmentSpec, Transport, TransportError, WaitCtl,
};
use shmem_sim::SimTransport;

use crate::attr::{Attributes, Backend};
use crate::bootstrap::{self, Bootstrap};
use crate::error::{Error, Result};
use crate::heap::Heap;
use crate::heap::allocator::AllocError;
use crate::registry::{self, Claim};
use crate::settings;
use crate::team::{MAX_TEAMS, SCRATCH_PER_TEAM, Teams};

const LIVE: u8 = 1;
const FINALIZED: u8 = 2;

/// The state of one instance, shared by every handle to it.
pub(crate) struct Inner {
    pub(crate) id: u64,
    pub(crate) my_pe: u32,
    pub(crate) n_pes: u32,
    pub(crate) attrs: Attributes,
    pub(crate) boot: Box<dyn Bootstrap>,
    pub(crate) heap: Heap,
    pub(crate) teams: Teams,
    /// The CANN-portability profile is on: calls CANN's host API lacks fail.
    pub(crate) cann_profile: bool,
    pub(crate) wait_timeout: Option<Duration>,
    /// The default context's completion queue.
    pub(crate) queue: Box<dyn DynQueue>,
    /// The queue of the library's own synchronisation traffic.
    pub(crate) sync_queue: Box<dyn DynQueue>,
    state: AtomicU8,
    // Declared last: dropped after everything that might still use the mappings.
    pub(crate) transport: Box<dyn DynTransport>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.state.load(Ordering::Acquire) == LIVE {
            tracing::warn!(
                "the last handle to instance {} on PE {} was dropped without finalize: its peers will see this PE as gone",
                self.id,
                self.my_pe
            );
            registry::release(self.id);
        }
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("id", &self.id)
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .field("backend", &self.transport.profile().name)
            .field("heap_size", &self.heap.size())
            .finish()
    }
}

/// A handle to one SHMEM instance: its own team world, symmetric heap, synchronisation
/// resources and bootstrap. Handles are cheap to clone and may be used from several threads;
/// instances never share state, so threads driving different instances never wait for each
/// other.
///
/// Create one with [`Instance::init`] (explicit attributes, as CANN programs pass them) or
/// [`Instance::from_env`] (inside a job started by `shmemrun`); end it with the collective
/// [`Instance::finalize`].
#[derive(Clone, Debug)]
pub struct Instance {
    pub(crate) inner: Arc<Inner>,
}

/// The allgather and barrier a transport uses to attach its peers, over the bootstrap.
struct BootExchange<'a>(&'a dyn Bootstrap);

impl Exchange for BootExchange<'_> {
    fn allgather(&mut self, mine: &[u8]) -> std::result::Result<Vec<Vec<u8>>, TransportError> {
        self.0.allgather(mine).map_err(TransportError::from)
    }
    fn barrier(&mut self) -> std::result::Result<(), TransportError> {
        self.0.barrier().map_err(TransportError::from)
    }
}

/// When another PE ended the job with `global_exit(status)`, this PE ends too, with that
/// status, as OpenSHMEM specifies.
pub(crate) fn exit_if_job_ended(e: &Error) {
    if let Error::JobEnding { pe, status } = *e {
        tracing::error!(
            "PE {pe} called global_exit({status}); ending this PE with status {status}"
        );
        std::process::exit(status);
    }
}

/// Raises this process's soft descriptor limit to its hard limit, once. Every live instance
/// holds a few descriptors (PE 0 of an instance one per peer), so many instances need more
/// than the usual soft limit of 1024; the hard limit is the administrator's choice.
fn raise_descriptor_limit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let l = getrlimit(Resource::Nofile);
        if let (Some(cur), max) = (l.current, l.maximum)
            && max.is_none_or(|m| m > cur)
        {
            let wanted = max.unwrap_or(1 << 20).min(1 << 20);
            if let Err(e) = setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: Some(wanted),
                    maximum: max,
                },
            ) {
                tracing::debug!("could not raise the descriptor limit from {cur} to {wanted}: {e}");
            }
        }
    });
}

impl Instance {
    /// Creates and initialises instance `attrs.instance_id`. Collective over the instance's PEs:
    /// every PE calls it with its own `my_pe` and the same `n_pes`, `ip_port` and
    /// `local_mem_size`.
    ///
    /// Errors carry CANN's codes ([`Error::code`]): invalid attributes give `INVALID_VALUE` or
    /// `INVALID_PARAM` exactly as CANN's `check_attr`, an id that is already live gives
    /// `INNER_ERROR`, and so does a bootstrap that cannot meet its peers.
    pub fn init(attrs: &Attributes) -> Result<Instance> {
        crate::log::init();
        Instance::create(attrs).inspect_err(|e| {
            tracing::error!(
                "init of instance {} (PE {} of {}) failed: {e:#}",
                attrs.instance_id,
                attrs.my_pe,
                attrs.n_pes
            );
        })
    }

    fn create(attrs: &Attributes) -> Result<Instance> {
        attrs.validate()?;
        raise_descriptor_limit();
        let backend = Backend::choose(attrs.backend)?;
        let claim: Claim = registry::claim(attrs.instance_id)?;
        let (my_pe, n_pes) = (attrs.my_pe as u32, attrs.n_pes as u32);
        let boot = bootstrap::join(attrs)?;
        let heap_size = attrs.heap_size();
        let heap = Heap::new(heap_size).map_err(|e| Error::Memory(e.to_string()))?;
        let spec = SegmentSpec {
            my_pe,
            n_pes,
            // The heap, then the teams' collective scratch areas (never addressable by users).
            size: usize::try_from(heap_size)
                .ok()
                .and_then(|h| h.checked_add(MAX_TEAMS * SCRATCH_PER_TEAM))
                .ok_or_else(|| Error::InvalidValue("the heap does not fit in memory".into()))?,
            label: format!("i{}-pe{}", attrs.instance_id, my_pe),
            timeout: attrs.op_timeout(),
        };
        let transport: Box<dyn DynTransport> = match backend {
            Backend::Sim => {
                Box::new(SimTransport::open(&spec, &mut BootExchange(&*boot)).map_err(Error::from)?)
            }
            Backend::Hw => {
                return Err(Error::NotSupported(
                    "the hw backend (Ascend NPUs) is not part of this build yet; use SHMEM_BACKEND=sim".into(),
                ));
            }
        };
        let teams = Teams::new(n_pes, my_pe, heap.reserved(), heap_size as usize);
        let inner = Arc::new(Inner {
            id: attrs.instance_id,
            my_pe,
            n_pes,
            attrs: attrs.clone(),
            heap,
            teams,
            cann_profile: settings::cann_profile()?,
            wait_timeout: settings::wait_timeout()?,
            queue: transport.new_queue(),
            sync_queue: transport.new_queue(),
            state: AtomicU8::new(LIVE),
            boot,
            transport,
        });
        // Nobody uses the instance before every PE has it.
        inner.boot.barrier().map_err(|e| Error::from(e.at_init()))?;
        claim.commit(&inner);
        tracing::debug!(
            instance = attrs.instance_id,
            pe = my_pe,
            n_pes,
            heap_size,
            "instance initialised"
        );
        Ok(Instance { inner })
    }

    /// This instance's id.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// This PE's number in the instance.
    pub fn my_pe(&self) -> u32 {
        self.inner.my_pe
    }

    /// The number of PEs of the instance.
    pub fn n_pes(&self) -> u32 {
        self.inner.n_pes
    }

    /// The attributes the instance was created with.
    pub fn attributes(&self) -> &Attributes {
        &self.inner.attrs
    }

    /// The name of the transport (`"sim"` or `"hw"`).
    pub fn backend_name(&self) -> &'static str {
        self.inner.transport.profile().name
    }

    /// Whether the instance is initialised (not yet finalised).
    pub fn is_initialized(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == LIVE
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.is_initialized() {
            Ok(())
        } else {
            Err(Error::NotInitialized {
                instance_id: self.inner.id,
            })
        }
    }

    /// Checks that `pe` is a PE of the instance.
    pub(crate) fn check_pe(&self, pe: Pe) -> Result<()> {
        if pe < self.inner.n_pes {
            Ok(())
        } else {
            Err(Error::InvalidPe {
                pe: i64::from(pe),
                n_pes: self.inner.n_pes,
            })
        }
    }

    pub(crate) fn transport(&self) -> &dyn DynTransport {
        &*self.inner.transport
    }

    /// Runs `f` with the wait control of this instance: its timeout, and a liveness check that
    /// fails the wait when a peer dies or the job ends.
    pub(crate) fn with_wait_ctl<R>(&self, what: &str, f: impl FnOnce(&WaitCtl<'_>) -> R) -> R {
        let boot = &*self.inner.boot;
        let liveness = move || boot.check_alive().map_err(TransportError::from);
        let ctl = WaitCtl {
            deadline: self.inner.wait_timeout.map(|t| Instant::now() + t),
            what,
            liveness: &liveness,
        };
        f(&ctl)
    }

    /// Maps an error from a blocking operation, ending this PE if another PE ended the job.
    pub(crate) fn fail(&self, mut e: Error) -> Error {
        // A wait that the liveness check ended reports the end of the job as the transport's
        // text; the bootstrap keeps who ended it and the status.
        if matches!(e, Error::Transport(TransportError::JobEnding { .. }))
            && let Err(b) = self.inner.boot.check_alive()
        {
            e = Error::from(b);
        }
        exit_if_job_ended(&e);
        e
    }

    /// Fails with `NOT_SUPPORTED` under the CANN-portability profile (`SHMEM_PROFILE=cann`):
    /// for calls that CANN SHMEM's host API does not have, so a program can check on the
    /// simulator that it will port.
    pub(crate) fn require_beyond_cann(&self, what: &str) -> Result<()> {
        self.beyond_cann(what)
            .inspect_err(|e| tracing::error!("{e}"))
    }

    /// [`Instance::require_beyond_cann`] without the log, for calls that log their own errors.
    pub(crate) fn beyond_cann(&self, what: &str) -> Result<()> {
        if self.inner.cann_profile {
            Err(Error::NotSupported(format!(
                "{what}: not part of CANN SHMEM's host API (SHMEM_PROFILE=cann)"
            )))
        } else {
            Ok(())
        }
    }

    /// Team operations beyond the world team exist on every instance here, but CANN has them
    /// only on instance 0: refused for other instances under the CANN-portability profile.
    pub(crate) fn require_teams(&self, what: &str) -> Result<()> {
        if self.inner.cann_profile && self.inner.id != 0 {
            Err(Error::NotSupported(format!(
                "{what} on instance {}: CANN supports teams only on instance 0 (SHMEM_PROFILE=cann)",
                self.inner.id
            )))
        } else {
            Ok(())
        }
    }

    /// Whether the CANN-portability profile is on for this instance.
    pub fn cann_profile(&self) -> bool {
        self.inner.cann_profile
    }

    /// Completes every operation issued on the default context.
    pub fn quiet(&self) -> Result<()> {
        self.check_live()?;
        self.transport()
            .quiet(&*self.inner.queue)
            .map_err(Error::from)
    }

    /// Orders the puts, atomics and signals issued on the default context before the call ahead
    /// of those issued after it, per target PE.
    pub fn fence(&self) -> Result<()> {
        self.check_live()?;
        self.transport()
            .fence(&*self.inner.queue)
            .map_err(Error::from)
    }

    /// Completes this PE's outstanding operations and waits for every PE of the instance
    /// (`barrier_all`).
    pub fn barrier_all(&self) -> Result<()> {
        self.check_live()?;
        self.transport().quiet(&*self.inner.queue)?;
        self.world_barrier()
    }

    /// Waits for every PE of the instance, without completing outstanding operations
    /// (`sync_all`). (CANN's `sync_all` is its barrier; on the simulator the only difference is
    /// that strict mode keeps held non-blocking operations pending across a sync.)
    pub fn sync_all(&self) -> Result<()> {
        self.check_live()?;
        self.world_barrier()
    }

    pub(crate) fn world_barrier(&self) -> Result<()> {
        let t = self.transport();
        self.with_wait_ctl("barrier of the world team", |ctl| {
            self.inner
                .teams
                .world
                .barrier(t, &*self.inner.sync_queue, ctl)
        })
        .map_err(|e| self.fail(e))
    }

    /// The local address of the start of this PE's symmetric heap.
    pub fn heap_base(&self) -> *mut u8 {
        self.transport()
            .segment_ptr(self.inner.my_pe)
            .map_or(std::ptr::null_mut(), |p| p.as_ptr())
    }

    /// The bytes of symmetric heap per PE (`local_mem_size` + 6 MiB).
    pub fn heap_size(&self) -> usize {
        self.inner.heap.size() as usize
    }

    /// The heap offset of the local address `addr`, if `len` bytes from it lie in the heap.
    pub fn offset_of(&self, addr: *const u8, len: usize) -> Option<usize> {
        let off = (addr as usize).checked_sub(self.heap_base() as usize)?;
        (off.checked_add(len)? <= self.heap_size()).then_some(off)
    }

    /// The address at which PE `pe`'s copy of the symmetric object at local address `addr` can
    /// be loaded and stored, or `None` when `addr` is outside the heap, `pe` is not a PE of the
    /// instance, or the transport cannot map peers (`aclshmem_ptr`). For `pe == my_pe()` it is
    /// `addr` itself.
    pub fn ptr(&self, addr: *const u8, pe: Pe) -> Option<std::ptr::NonNull<u8>> {
        if !self.is_initialized() || pe >= self.inner.n_pes {
            return None;
        }
        let off = self.offset_of(addr, 0).filter(|&o| o < self.heap_size())?;
        let base = self.transport().segment_ptr(pe)?;
        // SAFETY: `off` is inside the heap, which lies inside `pe`'s mapped segment.
        Some(unsafe { base.add(off) })
    }

    /// Collectively allocates `size` bytes (aligned to `align`, and zeroed if asked) at the
    /// same offset on every PE. Every PE learns whether every other PE succeeded and whether
    /// they all asked for the same thing; on any disagreement every PE releases its block and
    /// reports which PE differed.
    pub(crate) fn alloc_collective(
        &self,
        size: u64,
        align: Option<u64>,
        zero: bool,
    ) -> Result<u64> {
        self.check_live()?;
        let local = self.inner.heap.allocate(size, align);
        if let Ok(off) = &local
            && zero
        {
            self.transport().fill(
                &*self.inner.sync_queue,
                self.inner.my_pe,
                *off as usize,
                0,
                size as usize,
            )?;
        }
        let mut msg = [0u8; 24];
        msg[0] = match &local {
            Ok(_) => 0,
            Err(AllocError::Zero | AllocError::NotPowerOfTwo { .. }) => 1,
            Err(_) => 2,
        };
        msg[8..16].copy_from_slice(&local.as_ref().copied().unwrap_or(u64::MAX).to_le_bytes());
        msg[16..24].copy_from_slice(&size.to_le_bytes());
        let all = self.inner.boot.allgather(&msg);
        let undo = |heap: &Heap| {
            if let Ok(off) = local {
                let _ = heap.release(off);
            }
        };
        let all = match all {
            Ok(a) => a,
            Err(e) => {
                undo(&self.inner.heap);
                return Err(self.fail(Error::from(e)));
            }
        };
        if let Err(e) = &local {
            let err = match e {
                AllocError::Zero | AllocError::NotPowerOfTwo { .. } => {
                    Error::InvalidValue(e.to_string())
                }
                _ => Error::OutOfMemory {
                    requested: size,
                    detail: e.to_string(),
                },
            };
            return Err(err);
        }
        for (pe, m) in all.iter().enumerate() {
            let (status, off, sz) = (
                m[0],
                u64::from_le_bytes(m[8..16].try_into().expect("8")),
                u64::from_le_bytes(m[16..24].try_into().expect("8")),
            );
            let problem = if status != 0 {
                Some(format!("the allocation failed on PE {pe}"))
            } else if sz != size {
                Some(format!(
                    "the allocation is not symmetric: PE {pe} asked for {sz} bytes, this PE for {size}"
                ))
            } else if Ok(off) != local {
                Some(format!(
                    "PE {pe} placed the block at offset {off:#x}, this PE elsewhere: the PEs' heaps have diverged"
                ))
            } else {
                None
            };
            if let Some(detail) = problem {
                undo(&self.inner.heap);
                return Err(Error::OutOfMemory {
                    requested: size,
                    detail,
                });
            }
        }
        Ok(local.expect("checked"))
    }

    /// Collectively moves the block at `off` (of `old` bytes) to a new block of `new` bytes,
    /// copying this PE's contents up to the smaller size, and frees the old block. On failure
    /// the old block is unchanged.
    pub(crate) fn realloc_collective(
        &self,
        off: u64,
        old: u64,
        new: u64,
        align: usize,
    ) -> Result<u64> {
        let align = (align > 16).then_some(align as u64);
        let to = self.alloc_collective(new, align, false)?;
        let keep = old.min(new) as usize;
        let mut data = vec![0u8; keep];
        let q = &*self.inner.sync_queue;
        let copy = self
            .transport()
            .get(q, self.inner.my_pe, off as usize, &mut data)
            .and_then(|()| {
                self.transport()
                    .put(q, self.inner.my_pe, to as usize, &data)
            });
        if let Err(e) = copy {
            let _ = self.free_collective(to);
            return Err(e.into());
        }
        self.free_collective(off)?;
        Ok(to)
    }

    /// Collectively releases the block at heap offset `off`.
    pub(crate) fn free_collective(&self, off: u64) -> Result<()> {
        self.check_live()?;
        let all = self
            .inner
            .boot
            .allgather(&off.to_le_bytes())
            .map_err(|e| self.fail(Error::from(e)))?;
        if let Some((pe, other)) = all
            .iter()
            .enumerate()
            .map(|(pe, m)| (pe, u64::from_le_bytes(m[..8].try_into().expect("8"))))
            .find(|(_, o)| *o != off)
        {
            return Err(Error::InvalidParam(format!(
                "free is not symmetric: PE {pe} frees offset {other:#x}, this PE {off:#x}; nothing was freed"
            )));
        }
        self.inner
            .heap
            .release(off)
            .map(|_| ())
            .map_err(|e| Error::InvalidParam(e.to_string()))
    }

    /// Ends the instance. Collective over its PEs: completes outstanding operations, waits for
    /// every PE, and closes the bootstrap. Handles that remain valid memory-wise (no use after
    /// free is possible) but every operation on them fails with `NotInitialized`. Finalising a
    /// finalised instance succeeds and does nothing.
    pub fn finalize(&self) -> Result<()> {
        if self
            .inner
            .state
            .compare_exchange(LIVE, FINALIZED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(());
        }
        let r = (|| {
            self.transport().quiet(&*self.inner.queue)?;
            self.inner.boot.finalize().map_err(Error::from)
        })();
        registry::release(self.inner.id);
        r.inspect_err(|e| {
            tracing::error!(
                "finalize of instance {} on PE {}: {e}",
                self.inner.id,
                self.inner.my_pe
            )
        })
    }

    /// Ends the whole job with `status`: every PE of this instance is told to exit with it (and
    /// a launcher stops all PEs), then this process exits.
    pub fn global_exit(&self, status: i32) -> ! {
        tracing::warn!(
            "PE {} of instance {} calls global_exit({status})",
            self.inner.my_pe,
            self.inner.id
        );
        let _ = shmem_sim::launcher::env::request_global_exit(status);
        self.inner.boot.global_exit(status);
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        std::process::exit(status)
    }
}

impl Instance {
    /// Looks up a live instance of this process by id (the handle the CANN-compatible layer and
    /// the C ABI use).
    pub fn by_id(id: u64) -> Option<Instance> {
        registry::lookup(id).map(|inner| Instance { inner })
    }

    /// The ids of this process's live instances.
    pub fn live_ids() -> Vec<u64> {
        registry::live_ids()
    }
}

// `SimTransport` is the default transport; keep the static trait in view for readers.
const _: fn() = || {
    fn is_transport<T: Transport>() {}
    is_transport::<SimTransport>();
};

/// The levels of thread support (`SHMEM_THREAD_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum ThreadLevel {
    /// `SHMEM_THREAD_SINGLE`: one thread.
    Single = 0,
    /// `SHMEM_THREAD_FUNNELED`: several threads, only the initialising one calls the library.
    Funneled = 1,
    /// `SHMEM_THREAD_SERIALIZED`: several threads, one at a time.
    Serialized = 2,
    /// `SHMEM_THREAD_MULTIPLE`: several threads at once, without restriction.
    Multiple = 3,
}

impl Instance {
    /// Initialises with a requested level of thread support (`shmem_init_thread`). The library
    /// is thread safe throughout, so it always provides [`ThreadLevel::Multiple`].
    pub fn init_thread(
        attrs: &Attributes,
        requested: ThreadLevel,
    ) -> Result<(Instance, ThreadLevel)> {
        let _ = requested;
        Instance::init(attrs).map(|i| (i, ThreadLevel::Multiple))
    }

    /// The level of thread support provided (`shmem_query_thread`): always
    /// [`ThreadLevel::Multiple`].
    pub fn query_thread(&self) -> ThreadLevel {
        ThreadLevel::Multiple
    }
}
