//! [`SimTransport`]: the [`Transport`] of the simulator.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::sync::{Arc, Mutex};

use shmem_backend::{
    AmoOp, BarrierSpec, Capabilities, Exchange, Limits, Local, LocalMut, Pe, Profile, SegmentSpec,
    Signal, Strided, Transport, TransportError, WaitWord, Watch, Watchdog, Width, sync,
};

use crate::access::{self, ordering};
use crate::control::{CONTROL_SIZE, Control};
use crate::delivery::{self, Strict};
use crate::device_window::DeviceWindow;
use crate::fd_exchange::share_object;
use crate::segment::{Geometry, Segments, create_object};
use crate::settings::{SimSettings, WaitPhases, local_pes, usable_cpus};
use crate::stream::Stream;
use crate::strict::{Deferred, StrictQueue};
use crate::wait::{Sleep, wait_until};

/// The shared-memory transport: one process per PE, every segment mapped into every process, so
/// a put is a `memcpy` into the target's mapping and an atomic is a CPU atomic on it.
///
/// It is a cheap handle (cloning shares the mappings), so that work enqueued on a stream can
/// carry one.
///
/// ```
/// use shmem_backend::{Capabilities, Exchange, Local, LocalMut, Patient, SegmentSpec, Transport, TransportError};
/// use shmem_sim::SimTransport;
///
/// // A single-PE instance needs no peers; its exchange is never called.
/// struct Alone;
/// impl Exchange for Alone {
///     fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> { Ok(vec![mine.to_vec()]) }
///     fn barrier(&mut self) -> Result<(), TransportError> { Ok(()) }
/// }
/// let spec = SegmentSpec {
///     instance: 0, my_pe: 0, n_pes: 1, size: 1 << 20, label: "doc".into(),
///     attach_timeout: std::time::Duration::from_secs(5),
///     caps: Capabilities::ALL, watchdog: std::sync::Arc::new(Patient), device_memory: false,
/// };
/// let t = SimTransport::open(spec, &mut Alone)?;
/// let q = t.new_queue();
/// let mut back = [0u8; 5];
/// // SAFETY: PE 0 exists and both ranges lie inside the 1 MiB segment.
/// unsafe {
///     t.put(&q, 0, 64, Local::Host(b"hello"))?;
///     t.get(&q, 0, 64, LocalMut::Host(&mut back))?;
/// }
/// assert_eq!(&back, b"hello");
/// # Ok::<(), TransportError>(())
/// ```
#[derive(Clone)]
pub struct SimTransport {
    shared: Arc<Shared>,
    /// Slot 0 of the reservation; PE `i`'s segment starts `i * stride` bytes further.
    base: NonNull<u8>,
    stride: usize,
    heap: usize,
    /// The PEs' control blocks, one after another.
    controls: NonNull<u8>,
    my_pe: Pe,
    n_pes: u32,
}

// SAFETY: the raw base pointer is an address inside the mappings that `shared` keeps alive;
// every access through it is a byte copy or an atomic that tolerates concurrent writers (the
// memory is shared with other processes by design).
unsafe impl Send for SimTransport {}
// SAFETY: as above; `&SimTransport` gives no access that needs exclusive ownership.
unsafe impl Sync for SimTransport {}

struct Shared {
    /// The symmetric addresses of a heap that is device memory (dropped first: its
    /// registration with the ACL runtime ends before the mappings go).
    window: Option<DeviceWindow>,
    /// Owns the reservation and the mappings that `SimTransport::base` points into.
    _mappings: Segments,
    /// This PE's memory object (its segment).
    object: std::os::fd::OwnedFd,
    profile: Profile,
    phases: WaitPhases,
    settings: SimSettings,
    watchdog: Arc<dyn Watchdog>,
    next_queue: AtomicU64,
}

impl fmt::Debug for SimTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimTransport")
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .field("segment_size", &self.heap)
            .field("profile", &self.shared.profile)
            .field("phases", &self.shared.phases)
            .finish_non_exhaustive()
    }
}

/// A completion queue of the simulator: a plain one (outside strict mode every operation
/// completes when it is issued and the queue holds nothing), or one made from a [`Stream`].
#[derive(Debug)]
pub struct SimQueue {
    kind: Kind,
    /// `kind` is `Plain(None)`: kept beside it so that the data path tests one byte.
    immediate: bool,
}

#[derive(Debug)]
enum Kind {
    /// Outside strict mode, `None`: every operation completes when it is issued.
    Plain(Option<Arc<Strict>>),
    Stream(Stream),
}

impl SimQueue {
    const fn new(kind: Kind) -> SimQueue {
        let immediate = matches!(kind, Kind::Plain(None));
        SimQueue { kind, immediate }
    }

    /// Whether operations on the queue are performed when they are issued, with nothing held:
    /// a plain queue outside strict mode. The data path tests this once and leaves every other
    /// queue to functions out of line, so that the common call stays short.
    #[inline(always)]
    fn immediate(&self) -> bool {
        self.immediate
    }
}

/// Where operations run inside stream work: at once, in order.
static IMMEDIATE: SimQueue = SimQueue::new(Kind::Plain(None));

/// The source of a put carried by stream work: host bytes are copied when the work is
/// enqueued (the caller's buffer is free again when a blocking call returns), or, for
/// non-blocking calls, read when it runs.
enum TaskSrc {
    Bytes(Vec<u8>),
    Raw(*const u8, usize),
    Segment(usize, usize),
    Device(u64, usize),
}

// SAFETY: a `Raw` source is valid until the stream is synchronised (the non-blocking call's
// contract), and the stream's worker is the only thread that reads it.
unsafe impl Send for TaskSrc {}

impl TaskSrc {
    fn copied(src: Local<'_>) -> TaskSrc {
        match src {
            Local::Host(b) => TaskSrc::Bytes(b.to_vec()),
            Local::Segment { offset, len } => TaskSrc::Segment(offset, len),
            Local::Device { addr, len } => TaskSrc::Device(addr, len),
        }
    }

    fn borrowed(src: Local<'_>) -> TaskSrc {
        match src {
            Local::Host(b) => TaskSrc::Raw(b.as_ptr(), b.len()),
            other => TaskSrc::copied(other),
        }
    }

    /// # Safety
    ///
    /// A `Raw` source is still valid.
    unsafe fn local(&self) -> Local<'_> {
        match self {
            TaskSrc::Bytes(v) => Local::Host(v),
            // SAFETY: guaranteed by the caller.
            TaskSrc::Raw(p, len) => Local::Host(unsafe { std::slice::from_raw_parts(*p, *len) }),
            TaskSrc::Segment(offset, len) => Local::Segment {
                offset: *offset,
                len: *len,
            },
            TaskSrc::Device(addr, len) => Local::Device {
                addr: *addr,
                len: *len,
            },
        }
    }
}

/// The destination of a get carried by stream work.
enum TaskDst {
    Raw(*mut u8, usize),
    Segment(usize, usize),
    Device(u64, usize),
}

// SAFETY: a `Raw` destination stays valid and untouched until the work has run (the caller
// waits for it, or the non-blocking call's contract holds it until the stream is
// synchronised); only the stream's worker writes it.
unsafe impl Send for TaskDst {}

impl TaskDst {
    fn new(dst: LocalMut<'_>) -> TaskDst {
        match dst {
            LocalMut::Host(b) => TaskDst::Raw(b.as_mut_ptr(), b.len()),
            LocalMut::Segment { offset, len } => TaskDst::Segment(offset, len),
            LocalMut::Device { addr, len } => TaskDst::Device(addr, len),
        }
    }

    fn is_host(&self) -> bool {
        matches!(self, TaskDst::Raw(..))
    }

    /// # Safety
    ///
    /// A `Raw` destination is still valid and not accessed by anyone else.
    unsafe fn local(&mut self) -> LocalMut<'_> {
        match self {
            TaskDst::Raw(p, len) => {
                // SAFETY: guaranteed by the caller.
                LocalMut::Host(unsafe { std::slice::from_raw_parts_mut(*p, *len) })
            }
            TaskDst::Segment(offset, len) => LocalMut::Segment {
                offset: *offset,
                len: *len,
            },
            TaskDst::Device(addr, len) => LocalMut::Device {
                addr: *addr,
                len: *len,
            },
        }
    }
}

/// A raw fetch address carried by stream work.
struct FetchPtr(*mut u8);

// SAFETY: the non-blocking atomic's contract keeps the address valid and untouched until the
// stream is synchronised; only the stream's worker writes it.
unsafe impl Send for FetchPtr {}

impl SimTransport {
    /// Opens the segment with explicit settings instead of the environment's.
    pub fn open_with(
        spec: SegmentSpec,
        exchange: &mut dyn Exchange,
        settings: SimSettings,
    ) -> Result<Self, TransportError> {
        if spec.n_pes == 0 || spec.my_pe >= spec.n_pes {
            return Err(TransportError::InvalidPe {
                pe: spec.my_pe,
                n_pes: spec.n_pes,
            });
        }
        if spec.size == 0 {
            return Err(TransportError::Attach(
                "a segment must have at least one byte".into(),
            ));
        }
        let geometry = Geometry::new(spec.size, spec.n_pes)?;
        let segments = Segments::reserve(geometry)?;
        let host_access = settings.device_host_access;
        let mut window = match spec.device_memory {
            true => Some(DeviceWindow::reserve(geometry)?),
            false => None,
        };
        let object = match spec.my_pe {
            0 => Some(create_object(&spec.label, &geometry)?),
            _ => None,
        };
        let object = match (spec.n_pes, object) {
            (1, Some(object)) => object,
            (_, object) => share_object(
                spec.my_pe,
                spec.n_pes,
                object,
                geometry.total as u64,
                exchange,
                spec.attach_timeout,
            )?,
        };
        segments.map(&object, spec.instance)?;
        if let Some(w) = window.as_ref().filter(|_| host_access) {
            w.map(&object, spec.instance)?;
        }
        // SAFETY: the control table holds one `Control` (all atomics) per PE, line aligned, in
        // the mapping just made; line `my_pe` is this PE's.
        let mine = unsafe {
            &*segments
                .controls()
                .as_ptr()
                .add(spec.my_pe as usize * CONTROL_SIZE)
                .cast::<crate::control::Control>()
        };
        mine.set_pid(rustix::process::getpid().as_raw_nonzero().get() as u32);
        if spec.n_pes > 1 {
            // Nobody starts using the segments before everyone has mapped them.
            exchange.barrier()?;
        }
        // The mapping keeps the object alive; its descriptor stays open too, to map parts of
        // this PE's segment elsewhere (`alias_local`).
        let phases = settings
            .wait_policy
            .phases(local_pes(spec.n_pes), usable_cpus());
        tracing::debug!(
            pe = spec.my_pe,
            n_pes = spec.n_pes,
            size = spec.size,
            ?phases,
            strict = settings.strict,
            "sim segment attached"
        );
        let base = segments.slot(0);
        if let Some(w) = window.as_mut() {
            let stride = geometry.stride;
            // SAFETY: the segments' mappings live in `shared` beside the window, which is
            // dropped first.
            unsafe {
                w.register(spec.n_pes, geometry.heap, |pe| {
                    base.as_ptr().wrapping_add(pe as usize * stride)
                })
            }?;
        }
        let mut caps = Capabilities::ALL.restrict(spec.caps);
        // A device heap is mapped for no host.
        caps.host_mapping &= window.is_none();
        Ok(SimTransport {
            base,
            stride: geometry.stride,
            heap: geometry.heap,
            controls: segments.controls(),
            my_pe: spec.my_pe,
            n_pes: spec.n_pes,
            shared: Arc::new(Shared {
                window,
                _mappings: segments,
                object,
                profile: Profile {
                    name: "sim",
                    limits: Limits::CANN,
                    caps,
                    strict: settings.strict,
                },
                phases,
                settings,
                watchdog: spec.watchdog,
                next_queue: AtomicU64::new(0),
            }),
        })
    }

    /// The settings the transport was opened with.
    pub fn settings(&self) -> &SimSettings {
        &self.shared.settings
    }

    /// The start of `pe`'s segment.
    #[inline]
    fn slot(&self, pe: Pe) -> *mut u8 {
        debug_assert!(pe < self.n_pes);
        // SAFETY: `pe < n_pes` (the caller's precondition), so the offset stays inside the
        // reservation of `n_pes * stride` bytes.
        unsafe { self.base.as_ptr().add(pe as usize * self.stride) }
    }

    /// The address of byte `offset` of `pe`'s segment.
    #[inline]
    fn at(&self, pe: Pe, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.heap);
        // SAFETY: `offset <= heap <= stride` (the data path's precondition).
        unsafe { self.slot(pe).add(offset) }
    }

    /// `pe`'s control block.
    #[inline]
    fn control(&self, pe: Pe) -> &Control {
        debug_assert!(pe < self.n_pes);
        // SAFETY: line `pe` of the mapped control table holds PE `pe`'s `Control` (all atomics,
        // valid for any bit pattern including the initial zeros), it is line aligned, and
        // `shared` keeps the mapping alive as long as `self`.
        unsafe {
            &*self
                .controls
                .as_ptr()
                .add(pe as usize * CONTROL_SIZE)
                .cast::<Control>()
        }
    }

    /// Where the bytes of `src` are.
    #[inline]
    fn src_ptr(&self, src: &Local<'_>) -> *const u8 {
        match *src {
            Local::Host(b) => b.as_ptr(),
            Local::Segment { offset, .. } => self.at(self.my_pe, offset),
            Local::Device { addr, .. } => addr as usize as *const u8,
        }
    }

    /// Where the bytes of `dst` are.
    #[inline]
    fn dst_ptr(&self, dst: &mut LocalMut<'_>) -> *mut u8 {
        match dst {
            LocalMut::Host(b) => b.as_mut_ptr(),
            LocalMut::Segment { offset, .. } => self.at(self.my_pe, *offset),
            LocalMut::Device { addr, .. } => *addr as usize as *mut u8,
        }
    }

    /// Wakes `pe`'s sleepers that watch the `len` bytes at segment offset `offset`, after plain
    /// stores.
    #[inline]
    fn notify(&self, pe: Pe, offset: usize, len: usize) {
        self.control(pe).notify(offset, len);
    }

    /// [`Transport::put`] of `len` bytes at `src` performed at once when `q` is immediate (a
    /// plain queue outside strict mode), else `false` with nothing done: the inline case of
    /// the data path, which the core tries before the general call.
    ///
    /// # Safety
    ///
    /// [`Transport::put`]'s, with `src` readable for `len` bytes.
    #[inline(always)]
    pub unsafe fn put_at_once(&self, q: &SimQueue, pe: Pe, dst: usize, src: &[u8]) -> bool {
        if !q.immediate() {
            return false;
        }
        // SAFETY: forwarded.
        unsafe { self.put_now_plain(pe, dst, src.as_ptr(), src.len()) };
        true
    }

    /// [`Transport::get`] into `len` bytes at `dst` performed at once when `q` is immediate,
    /// else `false` with nothing done (as [`SimTransport::put_at_once`]).
    ///
    /// # Safety
    ///
    /// [`Transport::get`]'s, with `dst` writable for `len` bytes.
    #[inline(always)]
    pub unsafe fn get_at_once(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> bool {
        if !q.immediate() {
            return false;
        }
        // SAFETY: `src..src+len` lies in `pe`'s segment and `dst` is writable (the data-path
        // preconditions).
        unsafe { access::get(dst, self.at(pe, src), len) };
        true
    }

    /// [`Transport::quiet`] performed at once when `q` is immediate, where it is a fence; else
    /// `false` with nothing done.
    #[inline(always)]
    pub fn quiet_at_once(&self, q: &SimQueue) -> bool {
        if !q.immediate() {
            return false;
        }
        fence(ordering::QUIET);
        true
    }

    /// A put on an immediate queue: the copy, then the wake-up of whoever watches the bytes.
    ///
    /// # Safety
    ///
    /// `dst..dst + len` lies in `pe`'s segment and `src` is readable for `len` bytes.
    #[inline(always)]
    unsafe fn put_now_plain(&self, pe: Pe, dst: usize, src: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        if unsafe { access::put_scalar(self.at(pe, dst), src, len) } {
            self.notify(pe, dst, len);
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.put_copy(pe, dst, src, len) }
        }
    }

    /// [`SimTransport::put_now_plain`] beyond a scalar: the copy and the wake-up, out of line,
    /// so that the inline scalar put keeps nothing across a call.
    ///
    /// # Safety
    ///
    /// As for [`SimTransport::put_now_plain`].
    #[inline(never)]
    unsafe fn put_copy(&self, pe: Pe, dst: usize, src: *const u8, len: usize) {
        // SAFETY: the caller's contract.
        unsafe { access::copy(self.at(pe, dst), src, len) };
        self.notify(pe, dst, len);
    }

    /// [`Transport::atomic`] performed at once when `q` is immediate (a plain queue outside
    /// strict mode), else `None` with nothing done: the inline case of the data path, which the
    /// core tries before the general call.
    ///
    /// # Safety
    ///
    /// [`Transport::atomic`]'s.
    #[inline(always)]
    pub unsafe fn atomic_at_once(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Option<u64> {
        // SAFETY: an aligned word inside `pe`'s segment (the caller's contract).
        q.immediate()
            .then(|| unsafe { self.amo_now(pe, offset, width, op) })
    }

    /// [`Transport::atomic_post`] performed at once when `q` is immediate; `false`, with
    /// nothing done, otherwise (as [`SimTransport::atomic_at_once`]).
    ///
    /// # Safety
    ///
    /// [`Transport::atomic_post`]'s.
    #[inline(always)]
    pub unsafe fn atomic_post_at_once(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> bool {
        if !q.immediate() {
            return false;
        }
        // SAFETY: an aligned word inside `pe`'s segment (the caller's contract). The old value
        // is not wanted, so the compiler drops the fetch.
        unsafe { self.amo_now(pe, offset, width, op) };
        true
    }

    /// [`Transport::put`] on a stream's queue or in strict mode.
    ///
    /// # Safety
    ///
    /// [`Transport::put`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn put_queued(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.put_now(strict, pe, dst, &src, None);
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, src) = (self.clone(), TaskSrc::copied(src));
                // SAFETY: the core validated the put; the source is owned by the task.
                s.enqueue(move || unsafe { t.put(&IMMEDIATE, pe, dst, src.local()) });
                Ok(())
            }
        }
    }

    /// [`Transport::get`] on a stream's queue or in strict mode.
    ///
    /// # Safety
    ///
    /// [`Transport::get`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn get_queued(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: usize,
        mut dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.before_read(strict, pe);
                // SAFETY: `src..src+len` lies in `pe`'s segment and `dst` is writable (the
                // data-path preconditions).
                unsafe { access::get(self.dst_ptr(&mut dst), self.at(pe, src), dst.len()) };
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, mut dst) = (self.clone(), TaskDst::new(dst));
                let host = dst.is_host();
                // SAFETY: the core validated the get; a host destination is waited for below.
                let task = move || unsafe { t.get(&IMMEDIATE, pe, src, dst.local()) };
                if host {
                    s.call(task)
                } else {
                    s.enqueue(task);
                    Ok(())
                }
            }
        }
    }

    /// [`Transport::atomic`] on a stream's queue or in strict mode.
    ///
    /// # Safety
    ///
    /// [`Transport::atomic`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn atomic_queued(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                // A fetching atomic reads `pe`: everything held for it completes first, which
                // also keeps fence order (OpenSHMEM's ordering table lists blocking AMOs as
                // fenced).
                self.before_read(strict, pe);
                // SAFETY: an aligned word inside `pe`'s segment (checked by the core).
                Ok(unsafe { self.amo_now(pe, offset, width, op) })
            }
            Kind::Stream(s) => {
                let t = self.clone();
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                s.call(move || {
                    // SAFETY: validated by the core.
                    let old = unsafe { t.atomic(&IMMEDIATE, pe, offset, width, op) }?;
                    let _ = tx.send(old);
                    Ok(())
                })?;
                rx.recv().map_err(|_| {
                    TransportError::Attach("a stream atomic ended without a result".into())
                })
            }
        }
    }

    /// [`Transport::atomic_post`] on a stream's queue or in strict mode.
    ///
    /// # Safety
    ///
    /// [`Transport::atomic_post`]'s.
    #[cold]
    #[inline(never)]
    unsafe fn atomic_post_queued(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                if let Some(st) = self.holding(strict, pe) {
                    let held = Deferred::Amo {
                        pe,
                        offset,
                        width,
                        op,
                        fetch: std::ptr::null_mut(),
                    };
                    self.hold_blocking(&st, pe, held);
                    return Ok(());
                }
                self.before_blocking(strict, pe);
                // SAFETY: an aligned word inside `pe`'s segment (checked by the core).
                unsafe { self.amo_now(pe, offset, width, op) };
                Ok(())
            }
            Kind::Stream(s) => {
                let t = self.clone();
                // SAFETY: validated by the core.
                s.enqueue(move || unsafe { t.atomic_post(&IMMEDIATE, pe, offset, width, op) });
                Ok(())
            }
        }
    }

    /// Completes what a stream's queue or a strict one holds (the part of a quiet that is not
    /// the fence).
    #[cold]
    #[inline(never)]
    fn complete_queue(&self, q: &SimQueue) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                if let Some(st) = strict {
                    st.lock().complete_all(&mut |d| self.execute_held(d));
                }
                Ok(())
            }
            Kind::Stream(s) => s.synchronize(),
        }
    }

    /// Performs an operation a strict queue held: after a release fence, so that whatever the
    /// issuing thread (or an earlier fence epoch) wrote before is visible first, whichever
    /// thread performs it.
    pub(crate) fn execute_held(&self, op: Deferred) {
        fence(ordering::FENCE);
        self.execute(op);
    }

    /// Performs a validated operation now.
    fn execute(&self, op: Deferred) {
        match op {
            Deferred::Put {
                pe,
                dst,
                src,
                len,
                signal,
                owned,
            } => {
                if len > 0 {
                    // SAFETY: `dst` lies in `pe`'s mapping and `src` is readable (the issuing
                    // call's contract, or `owned`, which `src` points into).
                    unsafe { access::put(dst, src, len) };
                }
                drop(owned);
                let off = dst as usize - self.slot(pe) as usize;
                match signal {
                    None => self.notify(pe, off, len),
                    Some(sig) => self.signal_after(pe, off, len, sig),
                }
            }
            Deferred::Get { dst, src, len } => {
                // SAFETY: `src` lies in a mapping and `dst` is writable (the contract).
                unsafe { access::get(dst, src, len) };
            }
            Deferred::Amo {
                pe,
                offset,
                width,
                op,
                fetch,
            } => {
                // SAFETY: an aligned word inside `pe`'s segment.
                let old = unsafe { self.amo_now(pe, offset, width, op) };
                if !fetch.is_null() {
                    // SAFETY: a non-null `fetch` is valid per `atomic_nbi`'s contract.
                    unsafe { access::write_value(fetch, width, old) };
                }
            }
        }
    }

    /// Performs atomic `op` on the word at `offset` of `pe`'s segment and wakes whoever it
    /// concerns; returns the old value.
    ///
    /// # Safety
    ///
    /// The word is aligned to `width` and lies inside `pe`'s segment.
    #[inline(always)]
    unsafe fn amo_now(&self, pe: Pe, offset: usize, width: Width, op: AmoOp) -> u64 {
        // SAFETY: guaranteed by the caller.
        let old = unsafe { access::amo(self.at(pe, offset), width, op) };
        if op.writes() {
            // The sequentially consistent read-modify-write orders the update before the check
            // for sleepers. (The core's counts that sleepers watch for a value are updated by
            // signals, which wake precisely; an atomic wakes whoever watches the word.)
            self.control(pe).notify_rmw(offset, width.bytes());
        }
        old
    }

    /// Before a blocking update or atomic performed at once on a plain queue, in strict mode:
    /// completes what an earlier fence ordered ahead of it.
    #[inline]
    fn before_blocking(&self, strict: &Option<Arc<Strict>>, pe: Pe) {
        if let Some(st) = strict {
            self.complete_held(st, pe, false);
        }
    }

    /// Before a read from `pe` on a plain queue, in strict mode: completes every operation held
    /// for `pe`, so that a PE reads its own writes.
    #[inline]
    fn before_read(&self, strict: &Option<Arc<Strict>>, pe: Pe) {
        if let Some(st) = strict {
            self.complete_held(st, pe, true);
        }
    }

    /// Completes the operations `st` holds for `pe`: all of them, or those before the latest
    /// fence.
    #[cold]
    fn complete_held(&self, st: &Strict, pe: Pe, all: bool) {
        let mut q = st.lock();
        let exec = &mut |d| self.execute_held(d);
        if all {
            q.complete_to(pe, exec);
        } else {
            q.complete_fenced(pe, exec);
        }
    }

    /// The strict queue, when it holds blocking operations to `pe` back: not to this PE
    /// itself, where a put is a local copy that every implementation completes at once (and
    /// that programs use as one, before a collective reads the data).
    #[inline]
    fn holding(&self, strict: &Option<Arc<Strict>>, pe: Pe) -> Option<Arc<Strict>> {
        strict
            .as_ref()
            .filter(|st| st.hold_blocking && pe != self.my_pe)
            .cloned()
    }

    /// A barrier over `b`'s members, performed now: a central counter in the first member's
    /// segment, whatever the team's size. Every member fetch-adds one to the first member's
    /// arrival word and waits until the word reaches `epoch * size`; the last arrival is the
    /// release. One cache line goes around, no member waits for another to be scheduled to
    /// pass the release on, and, with PEs beyond the CPUs, every member sleeps at most once
    /// and is woken by one `futex` wake of them all (a tree costs a trip through the scheduler
    /// per level and phase). Counts only grow, so a member still waiting when the next
    /// barrier's arrivals begin sees its own target passed. The first member's release word,
    /// unused by this barrier, counts the sleepers, so that the last arrival makes the wake
    /// call only when someone sleeps.
    ///
    /// # Safety
    ///
    /// [`Transport::barrier`]'s.
    #[inline]
    unsafe fn barrier_now(
        &self,
        q: &SimQueue,
        b: &BarrierSpec,
        what: &dyn fmt::Display,
    ) -> Result<(), TransportError> {
        let n = b.size;
        if n <= 1 {
            return Ok(());
        }
        let (first, target) = (b.pe(0), b.epoch * u64::from(n));
        let word = self.at(first, b.arrive);
        // SAFETY: the arrival and release words are aligned 64-bit words of a mapped segment
        // (checked by the core), and accessed only atomically.
        let (count, sleepers) = unsafe {
            (
                &*word.cast::<AtomicU64>(),
                &*self.at(first, b.release).cast::<AtomicU64>(),
            )
        };
        // The low half of the count: a futex word that changes with every arrival.
        let low = if cfg!(target_endian = "little") {
            word
        } else {
            word.wrapping_add(4)
        };
        // SAFETY: as above; 4-byte aligned inside the word.
        let low = unsafe { &*low.cast::<AtomicU32>() };
        let before = if q.immediate() {
            // No one sleeps on the control block for this word (the barrier's waiters sleep on
            // its futex), so the add needs no wake-up check of its own.
            count.fetch_add(1, Ordering::SeqCst)
        } else {
            // SAFETY: the first member is a PE of the instance; the word is aligned and in
            // bounds.
            unsafe { self.atomic(q, first, b.arrive, Width::W64, AmoOp::Add(1)) }?
        };
        if before + 1 >= target {
            if before + 1 == target && sleepers.load(Ordering::SeqCst) != 0 {
                // `i32::MAX`, not `u32::MAX`: the kernel reads the count as a signed int.
                let _ = rustix::thread::futex::wake(
                    low,
                    rustix::thread::futex::Flags::empty(),
                    i32::MAX as u32,
                );
            }
            return Ok(());
        }
        wait_until(
            Sleep::Futex {
                word: low,
                sleepers,
            },
            self.shared.phases,
            &*self.shared.watchdog,
            what,
            &mut || Ok(count.load(Ordering::SeqCst) >= target),
        )
    }

    /// Holds blocking `op` to `pe` (strict mode with relaxed completion).
    #[cold]
    fn hold_blocking(&self, st: &Strict, pe: Pe, op: Deferred) {
        st.lock()
            .push_blocking(pe, op, &mut |d| self.execute_held(d));
        delivery::kick();
    }

    /// A held copy of a blocking put's source: the caller may reuse its buffer at return.
    fn owned_put(&self, pe: Pe, dst: usize, src: &Local<'_>, signal: Option<Signal>) -> Deferred {
        // SAFETY: `src` is readable for its length (the data-path preconditions).
        let bytes: Box<[u8]> =
            unsafe { std::slice::from_raw_parts(self.src_ptr(src), src.len()) }.into();
        Deferred::Put {
            pe,
            dst: self.at(pe, dst),
            src: bytes.as_ptr(),
            len: bytes.len(),
            signal,
            owned: Some(bytes),
        }
    }

    /// A blocking put (with a signal) on a plain queue.
    #[inline]
    fn put_now(
        &self,
        strict: &Option<Arc<Strict>>,
        pe: Pe,
        dst: usize,
        src: &Local<'_>,
        signal: Option<Signal>,
    ) {
        if let Some(st) = self.holding(strict, pe) {
            return self.hold_blocking(&st, pe, self.owned_put(pe, dst, src, signal));
        }
        self.before_blocking(strict, pe);
        let len = src.len();
        // SAFETY: `dst..dst+len` lies in `pe`'s segment and `src` is readable (the data-path
        // preconditions).
        unsafe { access::put(self.at(pe, dst), self.src_ptr(src), len) };
        match signal {
            None => self.notify(pe, dst, len),
            Some(sig) => self.signal_after(pe, dst, len, sig),
        }
    }

    /// Applies the signal of a put-with-signal whose data is in place, and wakes the sleepers.
    #[inline]
    fn signal_after(&self, pe: Pe, dst: usize, len: usize, sig: Signal) {
        let addr = self.at(pe, sig.offset);
        // SAFETY: an aligned signal word inside the segment; its update comes after the data
        // (release, or a sequentially consistent add).
        let (rmw, now) = unsafe { access::signal(addr, sig.width, sig.op, sig.value) };
        let data = (len > 0).then_some((dst, len));
        self.control(pe)
            .notify_word(data, sig.offset, sig.width.bytes(), now, rmw);
    }

    /// A non-blocking operation on a plain queue: performed now, or held in strict mode.
    #[inline]
    fn issue(&self, strict: &Option<Arc<Strict>>, pe: Pe, op: Deferred) {
        match strict {
            None => self.execute(op),
            Some(st) => st.lock().push(pe, op, &mut |d| self.execute_held(d)),
        }
    }

    fn put_op(&self, pe: Pe, dst: usize, src: &Local<'_>, signal: Option<Signal>) -> Deferred {
        Deferred::Put {
            pe,
            dst: self.at(pe, dst),
            src: self.src_ptr(src),
            len: src.len(),
            signal,
            owned: None,
        }
    }

    /// A plain queue: in strict mode with its queue of held operations, which holds blocking
    /// operations too unless `internal` (the core's own protocols) or the profile wants each
    /// call complete before the next (CANN's host stream order).
    fn plain_queue(&self, internal: bool) -> SimQueue {
        let s = &self.shared.settings;
        let strict = s.strict.then(|| {
            let n = self.shared.next_queue.fetch_add(1, Ordering::Relaxed);
            let seed = crate::settings::strict_seed(s) ^ (u64::from(self.my_pe) << 32) ^ n;
            tracing::debug!(pe = self.my_pe, seed, "strict completion queue");
            let hold_blocking = !internal && self.shared.profile.caps.relaxed_completion;
            let st = Arc::new(Strict {
                queue: Mutex::new(StrictQueue::new(seed, s.strict_early)),
                hold_blocking,
                transport: self.clone(),
            });
            if hold_blocking {
                delivery::enlist(&st);
            }
            st
        });
        SimQueue::new(Kind::Plain(strict))
    }
}

impl Transport for SimTransport {
    type Queue = SimQueue;
    type Stream = Stream;

    fn open(spec: SegmentSpec, exchange: &mut dyn Exchange) -> Result<Self, TransportError> {
        let settings =
            SimSettings::from_env().map_err(|e| TransportError::Attach(e.to_string()))?;
        SimTransport::open_with(spec, exchange, settings)
    }

    fn profile(&self) -> &Profile {
        &self.shared.profile
    }

    fn my_pe(&self) -> Pe {
        self.my_pe
    }

    fn n_pes(&self) -> u32 {
        self.n_pes
    }

    fn segment_size(&self) -> usize {
        self.heap
    }

    fn segment_base(&self, pe: Pe) -> u64 {
        match &self.shared.window {
            Some(w) => w.slot(pe).as_ptr() as usize as u64,
            None => self.slot(pe) as usize as u64,
        }
    }

    fn host_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        (self.shared.profile.caps.host_mapping && pe < self.n_pes)
            .then(|| NonNull::new(self.slot(pe)).expect("a mapping is never null"))
    }

    fn peer_pid(&self, pe: Pe) -> Option<u32> {
        (pe < self.n_pes).then(|| self.control(pe).pid()).flatten()
    }

    fn kernel_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        // The transport's own mapping of every segment, also of a device heap.
        (pe < self.n_pes).then(|| NonNull::new(self.slot(pe)).expect("a mapping is never null"))
    }

    fn watchdog(&self) -> &dyn Watchdog {
        &*self.shared.watchdog
    }

    fn new_queue(&self) -> SimQueue {
        self.plain_queue(false)
    }

    fn new_internal_queue(&self) -> SimQueue {
        self.plain_queue(true)
    }

    fn stream_queue(&self, stream: &Stream) -> Result<SimQueue, TransportError> {
        Ok(SimQueue::new(Kind::Stream(stream.clone())))
    }

    fn register_device(&self, _addr: u64, _len: usize) -> Result<(), TransportError> {
        // Simulated device memory is memory of this process: nothing to pin or map.
        Ok(())
    }

    fn deregister_device(&self, _addr: u64, _len: usize) -> Result<(), TransportError> {
        Ok(())
    }

    unsafe fn alias_local(
        &self,
        offset: usize,
        at: NonNull<u8>,
        len: usize,
    ) -> Result<(), TransportError> {
        let page = crate::page_size();
        if offset.checked_add(len).is_none_or(|end| end > self.heap) {
            return Err(TransportError::OutOfBounds {
                pe: self.my_pe,
                offset: offset as u64,
                len: len as u64,
                size: self.heap as u64,
            });
        }
        if !(offset | len | at.as_ptr() as usize).is_multiple_of(page) {
            return Err(TransportError::Misaligned {
                offset: offset as u64,
                width: page,
            });
        }
        if len == 0 {
            return Ok(());
        }
        let seg = self.at(self.my_pe, offset);
        // SAFETY: the caller keeps `at..at + len` readable and unwritten during the call; the
        // segment bytes lie inside this PE's mapped segment (checked above) and no PE accesses
        // them yet; both are page-aligned. (Not `memcpy`: see `copy_program_memory`.)
        unsafe { crate::access::copy_program_memory(seg, at.as_ptr(), len) };
        // SAFETY: maps bytes `offset..offset + len` of this PE's segment (page-aligned, inside
        // the instance's object) over `at..at + len`, which the caller says holds no Rust
        // object.
        unsafe {
            rustix::mm::mmap(
                at.as_ptr().cast(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED | rustix::mm::MapFlags::FIXED,
                &self.shared.object,
                (seg as usize - self.controls.as_ptr() as usize) as u64,
            )
        }
        .map_err(|e| TransportError::os("mapping the segment over static data", e))?;
        Ok(())
    }

    #[inline(always)]
    unsafe fn put(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        if q.immediate() {
            let len = src.len();
            // SAFETY: `dst..dst+len` lies in `pe`'s segment and `src` is readable (the
            // data-path preconditions).
            unsafe { self.put_now_plain(pe, dst, self.src_ptr(&src), len) };
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.put_queued(q, pe, dst, src) }
    }

    #[inline(always)]
    unsafe fn get(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: usize,
        mut dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        // SAFETY: forwarded.
        if unsafe { self.get_at_once(q, pe, src, self.dst_ptr(&mut dst), dst.len()) } {
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.get_queued(q, pe, src, dst) }
    }

    #[inline]
    unsafe fn put_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.issue(strict, pe, self.put_op(pe, dst, &src, None));
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, src) = (self.clone(), TaskSrc::borrowed(src));
                // SAFETY: validated by the core; a host source lives until the stream is
                // synchronised (this call's contract).
                s.enqueue(move || unsafe { t.put(&IMMEDIATE, pe, dst, src.local()) });
                Ok(())
            }
        }
    }

    #[inline]
    unsafe fn get_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: usize,
        mut dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                let op = Deferred::Get {
                    dst: self.dst_ptr(&mut dst),
                    src: self.at(pe, src),
                    len: dst.len(),
                };
                self.issue(strict, pe, op);
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, mut dst) = (self.clone(), TaskDst::new(dst));
                // SAFETY: validated by the core; a host destination lives until the stream is
                // synchronised (this call's contract).
                s.enqueue(move || unsafe { t.get(&IMMEDIATE, pe, src, dst.local()) });
                Ok(())
            }
        }
    }

    unsafe fn iput(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: Strided,
        src: Local<'_>,
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        let strict = match &q.kind {
            Kind::Plain(strict) => strict,
            Kind::Stream(s) => {
                let (t, src) = (self.clone(), TaskSrc::copied(src));
                s.enqueue(move || {
                    // SAFETY: validated by the core; the source is owned by the task.
                    unsafe {
                        t.iput(
                            &IMMEDIATE,
                            pe,
                            dst,
                            src.local(),
                            src_layout,
                            elem_size,
                            nelems,
                        )
                    }
                });
                return Ok(());
            }
        };
        if let Some(st) = self.holding(strict, pe) {
            for i in 0..nelems {
                let (d, s) = (dst.at(i), src_layout.at(i));
                // SAFETY: both spans were checked by the core, so every element lies inside its
                // segment or buffer.
                let elem = unsafe { self.src_ptr(&src).add(s) };
                // SAFETY: as above.
                let one = Local::Host(unsafe { std::slice::from_raw_parts(elem, elem_size) });
                let op = self.owned_put(pe, d, &one, None);
                self.hold_blocking(&st, pe, op);
            }
            return Ok(());
        }
        self.before_blocking(strict, pe);
        let (to, from) = (self.at(pe, dst.first), self.src_ptr(&src));
        for i in 0..nelems as isize {
            // SAFETY: both spans were checked by the core, so every element lies inside its
            // segment or buffer.
            unsafe {
                let d = to.offset(i * dst.stride);
                let s = from.add(src_layout.first).offset(i * src_layout.stride);
                access::put(d, s, elem_size);
            }
        }
        if let Some((lo, hi)) = dst.span(elem_size, nelems) {
            self.notify(pe, lo as usize, (hi - lo) as usize);
        }
        Ok(())
    }

    unsafe fn iget(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: Strided,
        mut dst: LocalMut<'_>,
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        if let Kind::Stream(s) = &q.kind {
            let (t, mut dst) = (self.clone(), TaskDst::new(dst));
            let host = dst.is_host();
            let task = move || {
                // SAFETY: validated by the core; a host destination is waited for below.
                unsafe {
                    t.iget(
                        &IMMEDIATE,
                        pe,
                        src,
                        dst.local(),
                        dst_layout,
                        elem_size,
                        nelems,
                    )
                }
            };
            if host {
                return s.call(task);
            }
            s.enqueue(task);
            return Ok(());
        }
        if let Kind::Plain(strict) = &q.kind {
            self.before_read(strict, pe);
        }
        let (from, to) = (self.at(pe, src.first), self.dst_ptr(&mut dst));
        for i in 0..nelems as isize {
            // SAFETY: both spans were checked by the core, so every element lies inside its
            // segment or buffer.
            unsafe {
                let s = from.offset(i * src.stride);
                let d = to.add(dst_layout.first).offset(i * dst_layout.stride);
                access::get(d, s, elem_size);
            }
        }
        Ok(())
    }

    unsafe fn fill(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.before_blocking(strict, pe);
                // SAFETY: `dst..dst+len` lies inside `pe`'s segment (checked by the core).
                unsafe { std::ptr::write_bytes(self.at(pe, dst), byte, len) };
                self.notify(pe, dst, len);
                Ok(())
            }
            Kind::Stream(s) => {
                let t = self.clone();
                // SAFETY: validated by the core.
                s.enqueue(move || unsafe { t.fill(&IMMEDIATE, pe, dst, byte, len) });
                Ok(())
            }
        }
    }

    #[inline(always)]
    unsafe fn atomic(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError> {
        // SAFETY: forwarded.
        match unsafe { self.atomic_at_once(q, pe, offset, width, op) } {
            Some(old) => Ok(old),
            // SAFETY: forwarded.
            None => unsafe { self.atomic_queued(q, pe, offset, width, std::hint::black_box(op)) },
        }
    }

    #[inline(always)]
    unsafe fn atomic_post(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<(), TransportError> {
        // SAFETY: forwarded.
        if unsafe { self.atomic_post_at_once(q, pe, offset, width, op) } {
            return Ok(());
        }
        // SAFETY: forwarded.
        unsafe { self.atomic_post_queued(q, pe, offset, width, std::hint::black_box(op)) }
    }

    unsafe fn atomic_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                let op = Deferred::Amo {
                    pe,
                    offset,
                    width,
                    op,
                    fetch,
                };
                self.issue(strict, pe, op);
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, fetch) = (self.clone(), FetchPtr(fetch));
                s.enqueue(move || {
                    let fetch = fetch;
                    // SAFETY: validated by the core; `fetch` is valid per this call's contract.
                    unsafe { t.atomic_nbi(&IMMEDIATE, pe, offset, width, op, fetch.0) }
                });
                Ok(())
            }
        }
    }

    #[inline]
    unsafe fn signal(&self, q: &SimQueue, pe: Pe, sig: Signal) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                if let Some(st) = self.holding(strict, pe) {
                    let held = Deferred::Put {
                        pe,
                        dst: self.at(pe, sig.offset),
                        src: std::ptr::null(),
                        len: 0,
                        signal: Some(sig),
                        owned: None,
                    };
                    self.hold_blocking(&st, pe, held);
                    return Ok(());
                }
                self.before_blocking(strict, pe);
                // SAFETY: an aligned signal word inside `pe`'s segment (checked by the core).
                self.signal_after(pe, 0, 0, sig);
                Ok(())
            }
            Kind::Stream(s) => {
                let t = self.clone();
                // SAFETY: validated by the core.
                s.enqueue(move || unsafe { t.signal(&IMMEDIATE, pe, sig) });
                Ok(())
            }
        }
    }

    #[inline]
    unsafe fn put_signal(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.put_now(strict, pe, dst, &src, Some(sig));
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, src) = (self.clone(), TaskSrc::copied(src));
                // SAFETY: validated by the core; the source is owned by the task.
                s.enqueue(move || unsafe { t.put_signal(&IMMEDIATE, pe, dst, src.local(), sig) });
                Ok(())
            }
        }
    }

    unsafe fn put_signal_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(strict) => {
                self.issue(strict, pe, self.put_op(pe, dst, &src, Some(sig)));
                Ok(())
            }
            Kind::Stream(s) => {
                let (t, src) = (self.clone(), TaskSrc::borrowed(src));
                // SAFETY: validated by the core; a host source lives until the stream is
                // synchronised (this call's contract).
                s.enqueue(move || unsafe { t.put_signal(&IMMEDIATE, pe, dst, src.local(), sig) });
                Ok(())
            }
        }
    }

    #[inline]
    fn fence(&self, q: &SimQueue) -> Result<(), TransportError> {
        match &q.kind {
            Kind::Plain(None) => fence(ordering::FENCE),
            Kind::Plain(Some(st)) => st.lock().fence(),
            // A stream runs its work in order: it is fenced already.
            Kind::Stream(_) => {}
        }
        Ok(())
    }

    #[inline(always)]
    fn quiet(&self, q: &SimQueue) -> Result<(), TransportError> {
        if !self.quiet_at_once(q) {
            self.complete_queue(q)?;
            fence(ordering::QUIET);
        }
        Ok(())
    }

    /// Completes what strict mode holds (or the stream), without the fence: every barrier of
    /// the simulator begins with a sequentially consistent atomic add to another member's word
    /// or a release store after waits (the counter and the tree), which the other members'
    /// waits acquire, so this PE's earlier stores are visible to each of them when it returns.
    #[inline]
    fn quiet_before_barrier(&self, q: &SimQueue) -> Result<(), TransportError> {
        if q.immediate() {
            return Ok(());
        }
        self.complete_queue(q)
    }

    #[inline]
    unsafe fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError> {
        // SAFETY: an aligned word inside this PE's segment (the caller's contract).
        Ok(unsafe { access::load(self.at(self.my_pe, offset), width) })
    }

    fn wait_local(
        &self,
        watch: Watch,
        what: &dyn fmt::Display,
        pred: &mut dyn FnMut() -> Result<bool, TransportError>,
    ) -> Result<(), TransportError> {
        wait_until(
            Sleep::Control(self.control(self.my_pe), watch),
            self.shared.phases,
            &*self.shared.watchdog,
            what,
            pred,
        )
    }

    unsafe fn wait_until(
        &self,
        q: &SimQueue,
        w: WaitWord,
        what: &dyn fmt::Display,
    ) -> Result<Option<u64>, TransportError> {
        match &q.kind {
            Kind::Plain(_) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { sync::wait_word(self, w, what) }.map(Some)
            }
            Kind::Stream(s) => {
                let (t, what) = (self.clone(), what.to_string());
                // SAFETY: forwarded from this function's contract.
                s.enqueue(move || unsafe { sync::wait_word(&t, w, &what) }.map(|_| ()));
                Ok(None)
            }
        }
    }

    #[inline]
    unsafe fn barrier(
        &self,
        q: &SimQueue,
        b: &BarrierSpec,
        what: &dyn fmt::Display,
    ) -> Result<(), TransportError> {
        match &q.kind {
            // SAFETY: forwarded from this function's contract.
            Kind::Plain(_) => unsafe { self.barrier_now(q, b, what) },
            Kind::Stream(s) => {
                let (t, b, what) = (self.clone(), *b, what.to_string());
                // SAFETY: forwarded from this function's contract.
                s.enqueue(move || unsafe { t.barrier_now(&IMMEDIATE, &b, &what) });
                Ok(())
            }
        }
    }
}
