//! [`Instance`]: one SHMEM instance, owning its bootstrap, transport, heap and teams.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use shmem_backend::{Capabilities, Exchange, Limits, Pe, SegmentSpec, TransportError};

use crate::attr::{Attributes, Backend};
use crate::bootstrap::{self, Bootstrap};
use crate::error::{Error, Result};
use crate::fabric::{Fabric, Queue};
use crate::heap::Heap;
use crate::registry::{Claim, Registry};
use crate::settings;
use crate::statics::{StaticRange, Window};

/// The first heap offset of the program's part: the ones below are the library's reserved
/// blocks (CANN's signal area and the barriers' and collectives' synchronisation words).
pub(crate) const RESERVED: usize = crate::heap::layout::FIRST_USER_OFFSET as usize;
use crate::team::state::{MAX_TEAMS, SCRATCH_PER_TEAM, Teams};
use crate::watchdog::InstanceWatchdog;

/// This process's live instances, by id.
static INSTANCES: Registry<Inner> = Registry::new();

/// The instance is usable.
pub(crate) const LIVE: u8 = 1;
const FINALIZED: u8 = 2;

/// The state of one instance, shared by every handle to it.
pub(crate) struct Inner {
    pub(crate) id: u64,
    pub(crate) my_pe: u32,
    /// The process that created the instance; in a forked child it is not the PE.
    owner_pid: i32,
    pub(crate) attrs: Attributes,
    pub(crate) boot: Arc<dyn Bootstrap>,
    /// The bootstrap's [`Bootstrap::alarm`].
    alarm: Arc<std::sync::atomic::AtomicBool>,
    pub(crate) heap: Heap,
    /// This PE's segment base (`heap_base`), constant for the instance's life.
    pub(crate) heap_base: usize,
    /// Where the heap's part for the program begins (past the library's reserved blocks), and
    /// its length: what an address of the program is checked against.
    program_base: usize,
    program_len: usize,
    /// Where the host loads and stores this PE's own segment, if it can (the transport's host
    /// mapping of this PE), for the core's bookkeeping words.
    pub(crate) own_mapping: Option<usize>,
    /// The program's static data, when init made it symmetric.
    pub(crate) statics: Option<Window>,
    pub(crate) teams: Teams,
    /// The queue of the library's own synchronisation traffic.
    pub(crate) sync_queue: Queue,
    /// The profile the instance runs under.
    pub(crate) profile: settings::ApiProfile,
    /// The limits of the instance's profile.
    pub(crate) limits: Limits,
    /// Device memory registered with the instance: start address and length, by start.
    pub(crate) devices: Mutex<std::collections::BTreeMap<u64, usize>>,
    /// The instance's state as its watchdog reads it (`LIVE` or `FINALIZED`): the watchdog is
    /// made before the instance, with the transport, and ends the waits of other threads once
    /// finalize has stored `FINALIZED` here after [`Hot::state`].
    watched: Arc<AtomicU8>,
    // Declared last: its transport is dropped after everything that might still use the
    // mappings.
    pub(crate) hot: Hot,
}

/// The instance's fields every put, get and atomic reads, together in one cache line.
///
/// A copy that fills the L1 data cache (a 16 KiB put on a host with 32 KiB of L1d: source and
/// destination take every way of every set) loses some of its lines to each other line the call
/// reads, and the next copy reads them again from L2 (`docs/performance.md`, "Bandwidth
/// against memcpy on the same mapping"). Besides the caller's handle and stack, a put then
/// reads three lines: this one, the transport's ([`Fabric`] is aligned to one) and the
/// target's control block. (They were seven: the fields lay across four lines of `Inner`, the
/// state in an allocation of its own.)
#[repr(C, align(64))]
pub(crate) struct Hot {
    pub(crate) n_pes: u32,
    /// `LIVE` or `FINALIZED`: what every operation checks.
    state: AtomicU8,
    /// The transport's capabilities (an atomic asks for host atomics).
    pub(crate) caps: Capabilities,
    /// The heap's size in bytes, constant for the instance's life.
    heap_size: usize,
    /// The default context's completion queue (dropped before the transport).
    pub(crate) queue: Queue,
    /// The transport, in an allocation of its own aligned to a cache line (its fields a put
    /// reads share one). Work on streams and kernels reach it through the instance.
    pub(crate) fabric: Arc<Fabric>,
}

// The data path's fields fit the one line `Hot` is aligned to.
const _: () = assert!(std::mem::size_of::<Hot>() == 64);

impl Drop for Inner {
    fn drop(&mut self) {
        if self.owner_pid != crate::exit::pid() {
            // A forked child holds copies of the parent's sockets and mappings: closing the
            // bootstrap would shut down the parent's connection (a socket shutdown acts on the
            // shared connection) and stop PE 0's server. The child leaks them instead.
            std::mem::forget(Arc::clone(&self.boot));
            std::mem::forget(Arc::clone(&self.hot.fabric));
            return;
        }
        if self.hot.state.load(Ordering::Acquire) == LIVE {
            self.unpoison_heap();
            tracing::warn!(
                "the last handle to instance {} on PE {} was dropped without finalize: its peers will see this PE as gone",
                self.id,
                self.my_pe
            );
            INSTANCES.release(self.id);
        }
    }
}

impl Inner {
    /// Where AddressSanitizer sees this PE's heap: its own mapping, when the program's
    /// symmetric addresses are that mapping (not for a device heap).
    pub(crate) fn asan_base(&self) -> Option<usize> {
        self.own_mapping.filter(|&m| m == self.heap_base)
    }

    /// Makes the user part of the heap addressable again for AddressSanitizer, before the
    /// mapping may go: stale poison would be reported against whatever is mapped there next.
    fn unpoison_heap(&self) {
        let user = self.heap.user_space();
        crate::heap::poison::unpoison(self.asan_base(), user.start, user.end - user.start);
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance")
            .field("id", &self.id)
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.hot.n_pes)
            .field("backend", &self.hot.fabric.profile().name)
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
        crate::diag::warn(format_args!(
            "PE {pe} called global_exit({status}); ending this PE with status {status}"
        ));
        crate::exit::exit_without_finalize(status);
    }
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
        Self::init_inner(attrs, None)
    }

    /// [`Instance::init`], making `statics` symmetric too: once it returns, the memory of the
    /// range is shared with the instance's segment, so RMA, atomics, waits and `ptr` accept
    /// addresses inside it as they accept heap addresses (a C program's `.data` and `.bss`,
    /// which the C ABI finds in the executable). The range stays shared after finalize, with
    /// the contents it had. On a transport that cannot map its segment over host memory the
    /// range stays private and the instance has only its heap.
    ///
    /// # Safety
    ///
    /// `statics` is page-aligned, mapped readable and writable, holds no Rust object (its
    /// pages are replaced while init runs), and no other thread writes it during the call.
    /// Every PE passes a range of the same length: the same memory of the same executable.
    pub unsafe fn init_with_static_data(
        attrs: &Attributes,
        statics: StaticRange,
    ) -> Result<Instance> {
        Self::init_inner(attrs, Some(statics))
    }

    fn init_inner(attrs: &Attributes, statics: Option<StaticRange>) -> Result<Instance> {
        // Every setting is checked before any collective work, so that a PE with a bad one
        // fails before its peers map its memory.
        let profile = match attrs.profile {
            Some(p) => p,
            None => settings::ApiProfile::from_env()?,
        };
        let limits = profile.limits();
        attrs.validate_against(&limits)?;
        let backend = Backend::choose(attrs.backend)?;
        let caps = profile.capabilities();
        let timeout = match attrs.wait_timeout {
            Some(t) => Some(t),
            None => settings::wait_timeout()?,
        };
        let hang_report = settings::hang_report()?;
        crate::rlimit::check_mappings(attrs.n_pes)?;
        let heap_size = attrs.heap_size();
        // The heap, then the teams' collective scratch areas (never addressable by users).
        let size = usize::try_from(heap_size)
            .ok()
            .and_then(|h| h.checked_add(MAX_TEAMS * SCRATCH_PER_TEAM))
            .ok_or_else(|| Error::InvalidValue("the heap does not fit in memory".into()))?;
        // Then the program's static data, at the next page.
        let statics_at = size.next_multiple_of(shmem_sim::page_size());
        let size = match statics {
            Some(r) => statics_at
                .checked_add(r.len)
                .ok_or_else(|| Error::InvalidValue("the static data does not fit".into()))?,
            None => size,
        };
        let heap = Heap::new(heap_size).map_err(|e| Error::Memory(e.to_string()))?;
        crate::rlimit::ensure_descriptors(attrs.n_pes);
        let claim: Claim<'_, Inner> = INSTANCES.claim(attrs.instance_id)?;
        let (my_pe, n_pes) = (attrs.my_pe, attrs.n_pes);
        let boot: Arc<dyn Bootstrap> = bootstrap::join(attrs)?.into();
        tracing::debug!(
            instance = attrs.instance_id,
            pe = my_pe,
            n_pes,
            "bootstrap joined"
        );
        crate::fault::point("init.after_connect", my_pe, attrs.instance_id);
        let watched = Arc::new(AtomicU8::new(LIVE));
        let spec = SegmentSpec {
            instance: attrs.instance_id,
            my_pe,
            n_pes,
            size,
            label: format!("i{}-pe{}", attrs.instance_id, my_pe),
            attach_timeout: attrs.op_timeout,
            caps,
            watchdog: Arc::new(InstanceWatchdog {
                boot: boot.clone(),
                timeout,
                hang_report,
                state: watched.clone(),
                instance: attrs.instance_id,
                my_pe,
            }),
            // CANN's heaps are device memory (under SHMEM_PROFILE=cann too).
            device_memory: attrs.device_heap || profile == settings::ApiProfile::Cann,
        };
        // The transport returns once every PE has attached every segment: from then on the
        // instance is usable everywhere.
        let fabric = Fabric::open(backend, spec, &mut BootExchange(&*boot))?;
        let statics = match statics {
            // SAFETY: the caller's contract; the window lies inside this PE's segment, which no
            // PE accesses before the barrier below.
            Some(r) => match unsafe { fabric.alias_local(statics_at, r.addr, r.len) } {
                Ok(()) => Some(Window::new(r, statics_at)),
                Err(Error::NotSupported(_)) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let teams = Teams::new(
            n_pes,
            my_pe,
            heap.reserved(),
            heap_size as usize,
            fabric.profile().caps.host_mapping,
        );
        let inner = Arc::new(Inner {
            id: attrs.instance_id,
            my_pe,
            owner_pid: crate::exit::pid(),
            attrs: attrs.clone(),
            heap_base: fabric.segment_base(my_pe) as usize,
            program_base: fabric.segment_base(my_pe) as usize + RESERVED,
            program_len: (heap_size as usize).saturating_sub(RESERVED),
            own_mapping: fabric.host_mapping(my_pe).map(|p| p.as_ptr() as usize),
            statics,
            teams,
            sync_queue: fabric.new_internal_queue(),
            devices: Mutex::new(Default::default()),
            profile,
            limits,
            watched,
            alarm: boot.alarm(),
            boot,
            hot: Hot {
                n_pes,
                state: AtomicU8::new(LIVE),
                caps: fabric.profile().caps,
                heap_size: heap.size() as usize,
                queue: fabric.new_queue(),
                fabric: Arc::new(fabric),
            },
            heap,
        });
        claim.commit(&inner);
        let user = inner.heap.user_space();
        crate::heap::poison::poison(inner.asan_base(), user.start, user.end - user.start);
        crate::exit::arm();
        // A PE of shmemrun's job ends with the launcher, also when it is not its child.
        shmem_sim::launcher::env::watch_lifeline();
        let inst = Instance { inner };
        if inst.inner.statics.is_some() {
            // No PE reaches another's static data before its owner has shared it.
            inst.sync_all()?;
        }
        tracing::debug!(
            instance = attrs.instance_id,
            pe = my_pe,
            n_pes,
            heap_size,
            "instance initialised"
        );
        Ok(inst)
    }

    /// Whether `other` is a handle to this same instance (not merely one with the same id: an
    /// id finalised and created again names a new instance).
    #[inline]
    pub fn same(&self, other: &Instance) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
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
        self.inner.hot.n_pes
    }

    /// The attributes the instance was created with.
    pub fn attributes(&self) -> &Attributes {
        &self.inner.attrs
    }

    /// The name of the transport (`"sim"` or `"hw"`).
    pub fn backend_name(&self) -> &'static str {
        self.inner.hot.fabric.profile().name
    }

    /// What the instance's transport can do. Under `SHMEM_PROFILE=cann` these are the CANN
    /// transport's ([`Capabilities::CANN`]): no remote atomics issued by the host (and so no
    /// locks), and no host mapping of peers' heaps.
    pub fn capabilities(&self) -> Capabilities {
        self.inner.hot.fabric.profile().caps
    }

    /// Whether the instance is initialised (not yet finalised).
    #[inline]
    pub fn is_initialized(&self) -> bool {
        self.inner.hot.state.load(Ordering::Acquire) == LIVE
    }

    /// The process that created the instance (a forked child is not its PE).
    pub(crate) fn owner_pid(&self) -> i32 {
        self.inner.owner_pid
    }

    #[inline]
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
    #[inline]
    pub(crate) fn check_pe(&self, pe: Pe) -> Result<()> {
        if pe < self.inner.hot.n_pes {
            Ok(())
        } else {
            Err(Error::InvalidPe {
                pe: i64::from(pe),
                n_pes: self.inner.hot.n_pes,
            })
        }
    }

    #[inline]
    pub(crate) fn fabric(&self) -> &Fabric {
        &self.inner.hot.fabric
    }

    /// The queue of the default context.
    #[inline(always)]
    pub(crate) fn default_queue(&self) -> &Queue {
        &self.inner.hot.queue
    }

    /// Fails at once, naming the lost PE, once the bootstrap has told this PE of a lost peer or
    /// of the job's end. Every barrier, collective, wait and lock asks before it starts: a PE
    /// that learnt of a failure must not arrive at another barrier or send another collective's
    /// signal, which the waiting survivors would count in place of the lost PE's.
    #[inline]
    pub(crate) fn check_peers(&self) -> Result<()> {
        if self.inner.alarm.load(Ordering::Acquire) {
            return self.peers_lost();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn peers_lost(&self) -> Result<()> {
        self.inner
            .boot
            .check_alive()
            .map_err(|e| self.fail(Error::from(e)))
    }

    /// Maps an error from a blocking operation, ending this PE if another PE ended the job.
    pub(crate) fn fail(&self, e: Error) -> Error {
        exit_if_job_ended(&e);
        e
    }

    /// Fails with `NOT_SUPPORTED` when the transport lacks the capability `has` picks from its
    /// [`Capabilities`] (under `SHMEM_PROFILE=cann`, the CANN transport's).
    #[inline]
    pub(crate) fn require(&self, has: fn(&Capabilities) -> bool, what: &str) -> Result<()> {
        if has(&self.inner.hot.caps) {
            Ok(())
        } else {
            Err(self.unsupported(what))
        }
    }

    #[cold]
    fn unsupported(&self, what: &str) -> Error {
        let p = self.inner.hot.fabric.profile();
        Error::NotSupported(format!(
            "{what}: the {} transport{} cannot do this",
            p.name,
            if p.name == "sim" && p.caps == p.caps.restrict(Capabilities::CANN) {
                " (with the CANN transport's capabilities, SHMEM_PROFILE=cann)"
            } else {
                ""
            }
        ))
    }

    /// Completes every operation issued on the default context.
    #[inline]
    pub fn quiet(&self) -> Result<()> {
        if self.is_initialized() && self.fabric().quiet_at_once(&self.inner.hot.queue) {
            return Ok(());
        }
        self.quiet_checked()
    }

    #[cold]
    #[inline(never)]
    fn quiet_checked(&self) -> Result<()> {
        self.check_live()?;
        self.fabric().quiet(&self.inner.hot.queue)
    }

    /// Orders the puts, atomics and signals issued on the default context before the call ahead
    /// of those issued after it, per target PE.
    pub fn fence(&self) -> Result<()> {
        self.check_live()?;
        self.fabric().fence(&self.inner.hot.queue)
    }

    /// Completes this PE's outstanding operations and waits for every PE of the instance
    /// (`barrier_all`).
    pub fn barrier_all(&self) -> Result<()> {
        self.check_live()?;
        self.fabric().quiet_before_barrier(&self.inner.hot.queue)?;
        self.world_barrier("barrier_all")
    }

    /// Waits for every PE of the instance, without completing outstanding operations
    /// (`sync_all`). (CANN's `sync_all` is its barrier; on the simulator the only difference is
    /// that strict mode keeps held non-blocking operations pending across a sync.)
    pub fn sync_all(&self) -> Result<()> {
        self.check_live()?;
        self.world_barrier("sync_all")
    }

    /// A barrier over the world team on the internal queue, named `call` in hang reports and
    /// timeouts ([`Team::run_barrier`]'s, without making a team handle).
    fn world_barrier(&self, call: &str) -> Result<()> {
        let what = crate::team::hang::WorldWait {
            inst: self,
            what: call,
        };
        crate::team::barrier_over(self, &self.inner.teams.world, &self.inner.sync_queue, &what)
    }

    /// The symmetric address of the start of this PE's heap (`aclshmemx_get_heap_base`): on
    /// the simulator it is also where the host can load and store the heap; on Ascend it is a
    /// device address.
    #[inline]
    pub fn heap_base(&self) -> *mut u8 {
        self.inner.heap_base as *mut u8
    }

    /// The bytes of symmetric heap per PE (`local_mem_size` + 6 MiB).
    #[inline]
    pub fn heap_size(&self) -> usize {
        self.inner.hot.heap_size
    }

    /// The segment offset of the symmetric address `addr`, if `len` bytes from it lie in the
    /// heap's part for the program (where the offset is the heap offset) or in the static data
    /// init made symmetric ([`Instance::init_with_static_data`]). The heap's first bytes are
    /// the library's own (CANN's reserved blocks: the signal area and the barriers' and
    /// collectives' synchronisation words) and are never a program's symmetric memory.
    #[inline(always)]
    pub fn offset_of(&self, addr: *const u8, len: usize) -> Option<usize> {
        match (self.heap_offset_of(addr, len), &self.inner.statics) {
            (Some(off), _) => Some(off),
            (None, Some(w)) => w.offset_of(addr as usize, len),
            (None, None) => None,
        }
    }

    /// [`Instance::offset_of`] for address arithmetic alone (`peer_addr`, `ptr`), where the
    /// library's reserved blocks count as heap too: CANN's `aclshmem_ptr` of the heap base is a
    /// peer's heap base, which the device state's table holds.
    fn address_offset_of(&self, addr: *const u8, len: usize) -> Option<usize> {
        let off = (addr as usize).wrapping_sub(self.heap_base() as usize);
        let size = self.heap_size();
        if off <= size && len <= size - off {
            return Some(off);
        }
        self.inner
            .statics
            .and_then(|w| w.offset_of(addr as usize, len))
    }

    /// The heap offset of the symmetric address `addr`, if `len` bytes from it lie in the
    /// heap's part for the program (past the library's reserved blocks, where a put would
    /// corrupt the words barriers and collectives wait on).
    #[inline(always)]
    pub(crate) fn heap_offset_of(&self, addr: *const u8, len: usize) -> Option<usize> {
        // An address below the program's part wraps to an offset beyond it.
        let off = (addr as usize).wrapping_sub(self.inner.program_base);
        let room = self.inner.program_len;
        if off <= room && len <= room - off {
            Some(off + RESERVED)
        } else {
            None
        }
    }

    /// Whether segment offsets `lo..hi` lie in the program's symmetric static data.
    #[inline]
    pub(crate) fn in_statics(&self, lo: u64, hi: u64) -> bool {
        self.inner.statics.is_some_and(|w| w.holds(lo, hi))
    }

    /// The symmetric address of PE `pe`'s copy of the object at the symmetric address `addr`
    /// (CANN's `aclshmem_ptr`, which device code dereferences), or `None` when `addr` is
    /// outside the heap or `pe` is not a PE of the instance. For `pe == my_pe()` it is `addr`.
    pub fn peer_addr(&self, addr: *const u8, pe: Pe) -> Option<std::ptr::NonNull<u8>> {
        if !self.is_initialized() || pe >= self.inner.hot.n_pes {
            return None;
        }
        let off = self.address_offset_of(addr, 1)?;
        if pe == self.inner.my_pe {
            return std::ptr::NonNull::new(addr.cast_mut());
        }
        let base = self.inner.hot.fabric.segment_base(pe) as usize;
        std::ptr::NonNull::new((base + off) as *mut u8)
    }

    /// The address at which this PE's host code can load and store PE `pe`'s copy of the
    /// symmetric object at `addr` (OpenSHMEM's `shmem_ptr`), or `None` when `addr` is outside
    /// the heap, `pe` is not a PE of the instance, or the transport does not map peers' heaps
    /// for the host (on Ascend, and under `SHMEM_PROFILE=cann`).
    pub fn ptr(&self, addr: *const u8, pe: Pe) -> Option<std::ptr::NonNull<u8>> {
        if !self.is_initialized() || pe >= self.inner.hot.n_pes {
            return None;
        }
        let off = self.address_offset_of(addr, 1)?;
        let base = self.inner.hot.fabric.host_mapping(pe)?;
        if pe == self.inner.my_pe {
            // The object itself (static data is also mapped in the segment, elsewhere).
            return std::ptr::NonNull::new(addr.cast_mut());
        }
        // SAFETY: `off` is inside the heap or the static data, inside `pe`'s mapped segment.
        Some(unsafe { base.add(off) })
    }

    /// Ends the instance. Collective over its PEs: completes outstanding operations, waits for
    /// every PE, and closes the bootstrap. Handles that remain valid memory-wise (no use after
    /// free is possible) but every operation on them fails with `NotInitialized`. Finalising a
    /// finalised instance succeeds and does nothing.
    ///
    /// An instance still live when its process exits with status 0 (`std::process::exit(0)`,
    /// or a C program returning 0 from `main`) is finalized then; a non-zero status, or
    /// dropping the last handle, makes the PE leave without finalize, and its peers see it as
    /// gone. A forked child never finalizes its parent's instances.
    pub fn finalize(&self) -> Result<()> {
        if self
            .inner
            .hot
            .state
            .compare_exchange(LIVE, FINALIZED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(());
        }
        self.inner.watched.store(FINALIZED, Ordering::Release);
        crate::fault::point("finalize.entered", self.my_pe(), self.id());
        self.inner.unpoison_heap();
        let r = (|| {
            self.fabric().quiet(&self.inner.hot.queue)?;
            self.fabric()
                .finalize(&mut BootExchange(&*self.inner.boot))?;
            self.inner.boot.finalize().map_err(Error::from)
        })();
        INSTANCES.release(self.inner.id);
        r
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
        crate::exit::exit_without_finalize(status)
    }
}

impl Instance {
    /// Looks up a live instance of this process by id (the handle the CANN-compatible layer and
    /// the C ABI use).
    pub fn by_id(id: u64) -> Option<Instance> {
        INSTANCES.lookup(id).map(|inner| Instance { inner })
    }

    /// The ids of this process's live instances.
    pub fn live_ids() -> Vec<u64> {
        INSTANCES.live_ids()
    }

    /// Where instance id `id` stands in this process.
    pub fn id_state(id: u64) -> IdState {
        if INSTANCES.lookup(id).is_some() {
            IdState::Live
        } else if INSTANCES.is_creating(id) {
            IdState::Initializing
        } else {
            IdState::Free
        }
    }
}

/// Where an instance id stands in a process ([`Instance::id_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IdState {
    /// No instance has the id.
    Free,
    /// `init` of the id is running.
    Initializing,
    /// The instance with the id is initialised.
    Live,
}

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
