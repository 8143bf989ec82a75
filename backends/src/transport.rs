//! The [`Transport`] trait and the types its methods take.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    AmoOp, Capabilities, Cmp, Local, LocalMut, Pe, Profile, ScalarKind, SignalOp, TransportError,
    Width, sync,
};

/// What the core asks a transport to open: this PE's segment of `size` bytes in an instance of
/// `n_pes` PEs. Every PE of the instance opens the same size.
#[derive(Clone)]
pub struct SegmentSpec {
    /// The instance's id (CANN's `instance_id`), which a transport over a vendor library
    /// that has instances of its own passes on.
    pub instance: u64,
    /// This PE's number inside the instance.
    pub my_pe: Pe,
    /// The number of PEs of the instance.
    pub n_pes: u32,
    /// The bytes each PE exposes to RMA; offsets `0..size` are addressable.
    pub size: usize,
    /// A short label for diagnostics and OS object names (for example `"i0-pe3"`).
    pub label: String,
    /// How long attaching the peers may take once they have all called `open`.
    pub attach_timeout: Duration,
    /// The most the transport may report in its [`Profile::caps`] (the core's profile, for
    /// example [`Capabilities::CANN`] under `SHMEM_PROFILE=cann`).
    pub caps: Capabilities,
    /// Consulted by every wait of the transport between two sleeps.
    pub watchdog: Arc<dyn Watchdog>,
    /// The heap is device memory, as CANN's heaps are on an NPU: host code must not load or
    /// store it at its symmetric addresses ([`Transport::segment_base`]), which only the
    /// transport itself and the device runtime reach, through their own mappings; there is no
    /// host mapping of any PE's heap. On Ascend every heap is device memory.
    pub device_memory: bool,
}

impl fmt::Debug for SegmentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentSpec")
            .field("instance", &self.instance)
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .field("size", &self.size)
            .field("label", &self.label)
            .field("attach_timeout", &self.attach_timeout)
            .field("caps", &self.caps)
            .field("device_memory", &self.device_memory)
            .finish_non_exhaustive()
    }
}

/// The core's say in a wait: called between the sleeps of every wait a transport runs (at
/// least every few milliseconds once the waiter sleeps), with how long the wait has lasted and
/// what it waits for. An error ends the wait with that error: a lost peer, the job ending, a
/// timeout the core imposes.
pub trait Watchdog: Send + Sync {
    /// Whether the wait may go on.
    fn check(&self, waited: Duration, what: &dyn fmt::Display) -> Result<(), TransportError>;
}

/// A [`Watchdog`] that never ends a wait (tests, and transports used without a core).
#[derive(Clone, Copy, Debug, Default)]
pub struct Patient;

impl Watchdog for Patient {
    fn check(&self, _: Duration, _: &dyn fmt::Display) -> Result<(), TransportError> {
        Ok(())
    }
}

/// A [`Watchdog`] that ends a wait after a fixed time with [`TransportError::Timeout`].
#[derive(Clone, Copy, Debug)]
pub struct Deadline(pub Duration);

impl Watchdog for Deadline {
    fn check(&self, waited: Duration, what: &dyn fmt::Display) -> Result<(), TransportError> {
        if waited >= self.0 {
            Err(TransportError::Timeout {
                what: what.to_string(),
                seconds: waited.as_secs_f64(),
            })
        } else {
            Ok(())
        }
    }
}

/// The collective exchange the core provides to [`Transport::open`]: an allgather and a barrier
/// over the instance's bootstrap, across exactly the PEs of the segment being opened.
pub trait Exchange {
    /// Contributes `mine` and returns every PE's contribution, indexed by PE.
    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError>;
    /// Returns once every PE has called it.
    fn barrier(&mut self) -> Result<(), TransportError>;
}

/// A signal update that accompanies, or stands alone from, a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signal {
    /// The offset of the signal word in the target's segment.
    pub offset: usize,
    /// The width of the signal word (CANN: 32 bits; OpenSHMEM: 64 bits).
    pub width: Width,
    /// How the word is updated.
    pub op: SignalOp,
    /// The operand.
    pub value: u64,
}

/// Where the elements of a strided access lie: element `i` starts `first + i * stride` bytes into
/// the segment (remote side) or into the local buffer (local side). Strides may be zero or
/// negative; every element must still lie inside its segment or buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strided {
    /// The byte offset of element 0.
    pub first: usize,
    /// The distance in bytes from one element to the next.
    pub stride: isize,
}

impl Strided {
    /// Contiguous elements of `elem_size` bytes starting at `first`.
    pub fn contiguous(first: usize, elem_size: usize) -> Strided {
        Strided {
            first,
            stride: elem_size as isize,
        }
    }

    /// Where element `i` starts: `first + i * stride` bytes (inside the span the core checked).
    ///
    /// ```
    /// use shmem_backend::Strided;
    /// assert_eq!(Strided { first: 100, stride: -8 }.at(3), 76);
    /// ```
    pub fn at(&self, i: usize) -> usize {
        (self.first as isize + i as isize * self.stride) as usize
    }

    /// The byte range `[lo, hi)` that `nelems` elements of `elem_size` bytes touch, or `None` when
    /// it does not fit in the address space.
    ///
    /// ```
    /// use shmem_backend::Strided;
    /// assert_eq!(Strided { first: 100, stride: -8 }.span(4, 3), Some((84, 104)));
    /// assert_eq!(Strided { first: 4, stride: -8 }.span(4, 2), None);
    /// ```
    pub fn span(&self, elem_size: usize, nelems: usize) -> Option<(u64, u64)> {
        if nelems == 0 {
            return Some((self.first as u64, self.first as u64));
        }
        let last = i128::try_from(nelems - 1).ok()? * self.stride as i128 + self.first as i128;
        let lo = (self.first as i128).min(last);
        let hi = (self.first as i128).max(last) + elem_size as i128;
        (lo >= 0 && hi <= u64::MAX as i128).then_some((lo as u64, hi as u64))
    }
}

/// The bytes of this PE's segment that a wait's predicate reads: writers to other bytes need
/// not wake the waiter. [`Watch::ANY`] makes every write to the segment wake it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The first byte read.
    pub offset: usize,
    /// How many bytes, from `offset`, are read.
    pub len: usize,
    /// For a 64-bit count that grows by small steps (a [`WaitWord::count`]): the value waited
    /// for. A transport may then wake the waiter only when an update brings the count there.
    pub at_least: Option<u64>,
}

impl Watch {
    /// Every byte of the segment.
    pub const ANY: Watch = Watch {
        offset: 0,
        len: usize::MAX,
        at_least: None,
    };

    /// The `width` bytes at `offset`.
    pub const fn word(offset: usize, width: Width) -> Watch {
        Watch {
            offset,
            len: width.bytes(),
            at_least: None,
        }
    }

    /// The `len` bytes at `offset`.
    pub const fn bytes(offset: usize, len: usize) -> Watch {
        Watch {
            offset,
            len,
            at_least: None,
        }
    }
}

/// A typed word of this PE's own segment that a wait compares: CANN's `wait_until` and
/// `signal_wait_until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitWord {
    /// The offset of the word in the segment (aligned to its width).
    pub offset: usize,
    /// How its bits are read and ordered.
    pub kind: ScalarKind,
    /// The comparison.
    pub cmp: Cmp,
    /// The value compared with (a bit pattern of `kind`).
    pub value: u64,
    /// Whether the word is a count that only grows, by small steps, such as the core's
    /// barrier and collective counters (never a user's word, which may jump anywhere): a
    /// transport may then wake the waiter only once an update brings it to `value`.
    pub count: bool,
}

impl WaitWord {
    /// A wait for the 64-bit count at `offset` to reach `value`.
    pub const fn count(offset: usize, value: u64) -> WaitWord {
        WaitWord {
            offset,
            kind: ScalarKind::U64,
            cmp: Cmp::Ge,
            value,
            count: true,
        }
    }
}

/// One barrier over a team: the members are the PEs `start + rank * stride` for `rank <
/// size`; every member has a 64-bit arrival word and a 64-bit release word at the same offsets
/// of its segment, whose counts only grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierSpec {
    /// The first member.
    pub start: Pe,
    /// The distance between consecutive members (negative for a team in reverse order).
    pub stride: i32,
    /// The number of members.
    pub size: u32,
    /// This PE's rank among them.
    pub rank: u32,
    /// The offset of the arrival word.
    pub arrive: usize,
    /// The offset of the release word.
    pub release: usize,
    /// This barrier's number on the team: 1 for the first one.
    pub epoch: u64,
    /// Whether the team is the instance's world team (whose barriers a program makes one at a
    /// time on each PE, as every team's), which a transport may serve with a barrier of the
    /// whole instance.
    pub world: bool,
}

impl BarrierSpec {
    /// The PE of rank `rank`.
    pub fn pe(&self, rank: u32) -> Pe {
        (i64::from(self.start) + i64::from(rank) * i64::from(self.stride)) as Pe
    }
}

/// A transport: the PE-to-PE data movement of one instance, over segments of equal size.
///
/// The core validates, the transport does not (as wgpu-core and wgpu-hal divide the work):
/// the data-path methods are `unsafe` and state in `# Safety` what the core has checked, so
/// that no check runs twice on the way from the Rust API to the copy. What a transport cannot
/// do is the trait's default method, which returns [`TransportError::Unsupported`]; its
/// [`Profile::caps`] say so, and the core refuses the call before it gets here.
///
/// # Completion and ordering
///
/// Every operation is issued on a *queue* ([`Transport::Queue`]: one per SHMEM context, or one
/// made from a stream).
///
/// - Blocking operations (`put`, `get`, `iput`, `iget`, `atomic`, `signal`, `put_signal`, `fill`)
///   return when the local buffer may be reused (`put`), holds the data (`get`), or holds the
///   fetched value (`atomic`). Their effect at the target is guaranteed visible after
///   [`Transport::quiet`] on the same queue; a transport may make it visible sooner (the
///   simulator does so at once outside strict mode).
/// - Non-blocking operations (`*_nbi`) may read their local source and write their local
///   destination at any time until the next `quiet` on their queue, which completes them.
/// - [`Transport::fence`] orders the puts, atomics and signals issued on a queue before it ahead
///   of those issued after it, per target PE. A signal of a `put_signal` is delivered after its
///   data.
/// - On a stream queue every operation, blocking or not, runs in stream order (first in, first
///   out) and completes when the stream is synchronised; `quiet` synchronises the stream.
/// - Waits observe updates made through any queue of any PE.
///
/// # Safety of the data path
///
/// Every `unsafe` data-path method requires what the core checks before calling it: `pe` is
/// below [`Transport::n_pes`]; every remote byte range (a strided one by its whole
/// [`Strided::span`]) lies inside `0..segment_size()`; a [`Local::Segment`] lies inside this
/// PE's segment, a [`Local::Device`] inside device memory registered with the instance, and a
/// strided local layout inside its buffer; an atomic, a signal word or a loaded word is aligned
/// to its width; and the queue was made by this transport.
pub trait Transport: Send + Sync + Sized + 'static {
    /// A completion domain for operations.
    type Queue: Send + Sync + 'static;
    /// An in-order stream of work that queues can be made from (the simulator's executor, an
    /// `aclrtStream` on Ascend).
    type Stream: Send + Sync + 'static;

    /// Opens this PE's segment and attaches every peer's, using `exchange` to meet them. All PEs
    /// of the instance call it with the same `spec.size` and `spec.n_pes`.
    fn open(spec: SegmentSpec, exchange: &mut dyn Exchange) -> Result<Self, TransportError>;

    /// The transport's name, limits and capabilities.
    fn profile(&self) -> &Profile;
    /// This PE's number.
    fn my_pe(&self) -> Pe;
    /// The number of PEs.
    fn n_pes(&self) -> u32;
    /// The addressable bytes of every segment.
    fn segment_size(&self) -> usize;
    /// The symmetric virtual address of `pe`'s segment: what `heap_base` and CANN's
    /// `aclshmem_ptr` compute (on Ascend a device address, on the simulator the mapping).
    fn segment_base(&self, pe: Pe) -> u64;
    /// Where `pe`'s segment is mapped for loads and stores by this process's host code, if it
    /// is (OpenSHMEM's `shmem_ptr`).
    fn host_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        let _ = pe;
        None
    }
    /// Where kernels running in this process (simulated AI cores) load and store `pe`'s
    /// segment: the host mapping where there is one, and for a heap of device memory, which
    /// host code cannot touch, a mapping of the transport's own that only kernels are given.
    /// `None` where kernels do not run in this process (an NPU runs them).
    fn kernel_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        self.host_mapping(pe)
    }
    /// The process id of PE `pe`, where the transport knows it (its PEs share this host), for
    /// hang reports that say what state a PE that does not arrive is in. `None` by default.
    fn peer_pid(&self, pe: Pe) -> Option<u32> {
        let _ = pe;
        None
    }
    /// The watchdog the transport was opened with, which its waits consult.
    fn watchdog(&self) -> &dyn Watchdog;

    /// A new, empty completion queue.
    fn new_queue(&self) -> Self::Queue;
    /// A queue for the core's own protocols (barriers, collectives, allocation, team splits),
    /// whose blocking operations complete before they return: the core orders them itself,
    /// and a transport's deliberately late completion (the simulator's strict mode) is for
    /// the program's operations.
    fn new_internal_queue(&self) -> Self::Queue {
        self.new_queue()
    }
    /// A queue whose operations run on `stream`, in stream order (CANN's `_on_stream` calls).
    fn stream_queue(&self, stream: &Self::Stream) -> Result<Self::Queue, TransportError> {
        let _ = stream;
        Err(self.unsupported("queues on streams"))
    }
    /// Prepares `len` bytes of device memory at `addr` to be the local side of operations (the
    /// core keeps the registry it validates against; a transport that must pin or map device
    /// memory does it here).
    fn register_device(&self, addr: u64, len: usize) -> Result<(), TransportError> {
        let _ = (addr, len);
        Err(self.unsupported("device memory"))
    }
    /// Makes the `len` bytes at local address `at` symmetric: copies them into bytes
    /// `offset..offset + len` of this PE's segment, then maps those segment bytes over `at`, so
    /// that loads and stores at `at` and the transport's accesses to `offset` on this PE see
    /// the same memory (a C program's static data, which OpenSHMEM makes symmetric). A
    /// transport that cannot map its segment into the host's address space does not support it.
    ///
    /// # Safety
    ///
    /// `at`, `offset` and `len` are multiples of the page size; `at..at + len` is mapped,
    /// readable and writable, holds no Rust object, and nothing else writes it during the call
    /// (a write between the copy and the mapping would be lost). The segment bytes are not yet
    /// accessed by any PE.
    unsafe fn alias_local(
        &self,
        offset: usize,
        at: NonNull<u8>,
        len: usize,
    ) -> Result<(), TransportError> {
        let _ = (offset, at, len);
        Err(self.unsupported("symmetric static data"))
    }
    /// Undoes [`Transport::register_device`].
    fn deregister_device(&self, addr: u64, len: usize) -> Result<(), TransportError> {
        let _ = (addr, len);
        Err(self.unsupported("device memory"))
    }

    /// Copies `src` to offset `dst` of `pe`'s segment.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn put(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError>;
    /// Copies `dst.len()` bytes from offset `src` of `pe`'s segment into `dst`.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn get(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<(), TransportError>;
    /// Non-blocking [`Transport::put`].
    ///
    /// # Safety
    ///
    /// The data-path preconditions, and a [`Local::Host`] source stays readable, and unchanged
    /// if its current contents are to be delivered, until the next [`Transport::quiet`] on `q`
    /// returns (the slice's lifetime does not say so).
    unsafe fn put_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError>;
    /// Non-blocking [`Transport::get`].
    ///
    /// # Safety
    ///
    /// The data-path preconditions, and a [`LocalMut::Host`] destination stays writable, and is
    /// not accessed by the caller, until the next [`Transport::quiet`] on `q` returns.
    unsafe fn get_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<(), TransportError>;
    /// Copies `nelems` elements of `elem_size` bytes from `src` (laid out by `src_layout`) to
    /// `pe`'s segment (laid out by `dst`).
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    #[allow(clippy::too_many_arguments)]
    unsafe fn iput(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: Strided,
        src: Local<'_>,
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    /// Copies `nelems` elements of `elem_size` bytes from `pe`'s segment (laid out by `src`) into
    /// `dst` (laid out by `dst_layout`).
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    #[allow(clippy::too_many_arguments)]
    unsafe fn iget(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: Strided,
        dst: LocalMut<'_>,
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    /// Sets `len` bytes at offset `dst` of `pe`'s segment to `byte`.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn fill(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Performs `op` atomically on the `width` word at `offset` of `pe`'s segment and returns the
    /// previous value. Without [`Capabilities::host_atomics`]: unsupported.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn atomic(
        &self,
        q: &Self::Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError> {
        let _ = (q, pe, offset, width, op);
        Err(self.unsupported("remote atomics issued by the host"))
    }
    /// A blocking atomic whose previous value is not wanted (`atomic_add`, `atomic_set`, …):
    /// like a blocking put, it may reach the target after it returns, until the next fence or
    /// quiet on `q`. The default performs it as [`Transport::atomic`].
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn atomic_post(
        &self,
        q: &Self::Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<(), TransportError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.atomic(q, pe, offset, width, op) }.map(drop)
    }
    /// Non-blocking [`Transport::atomic`]: the previous value is written to `fetch` (`width`
    /// bytes, native byte order) by the time the next `quiet` on `q` returns; `fetch` may be null
    /// when the caller does not want it.
    ///
    /// # Safety
    ///
    /// The data-path preconditions, and a non-null `fetch` stays writable for `width.bytes()`
    /// bytes, and is not accessed by the caller, until the next [`Transport::quiet`] on `q`
    /// returns.
    unsafe fn atomic_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<(), TransportError> {
        let _ = (q, pe, offset, width, op, fetch);
        Err(self.unsupported("remote atomics issued by the host"))
    }
    /// Updates the signal word `sig` of `pe`.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn signal(&self, q: &Self::Queue, pe: Pe, sig: Signal) -> Result<(), TransportError>;
    /// Puts `src` at `dst` of `pe` and then updates its signal word `sig`, which becomes visible
    /// only after the data.
    ///
    /// # Safety
    ///
    /// The data-path preconditions of the trait documentation.
    unsafe fn put_signal(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError>;
    /// Non-blocking [`Transport::put_signal`].
    ///
    /// # Safety
    ///
    /// As for [`Transport::put_nbi`].
    unsafe fn put_signal_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError>;
    /// Orders the operations issued on `q` before the call ahead of those issued after it.
    fn fence(&self, q: &Self::Queue) -> Result<(), TransportError>;
    /// Completes every operation issued on `q` (for a stream queue: synchronises the stream).
    fn quiet(&self, q: &Self::Queue) -> Result<(), TransportError>;
    /// The quiet of `barrier_all`: completes every operation issued on `q` just before a
    /// [`Transport::barrier`] of this PE. The default is [`Transport::quiet`]; a transport
    /// whose barriers order this PE's earlier stores before every other member's return (a
    /// release or sequentially consistent update that the others' waits acquire) may leave out
    /// the fence that a quiet followed by anything else needs.
    fn quiet_before_barrier(&self, q: &Self::Queue) -> Result<(), TransportError> {
        self.quiet(q)
    }

    /// Loads the `width` word at `offset` of this PE's own segment, with acquire ordering.
    ///
    /// # Safety
    ///
    /// `offset` is aligned to `width` and the word lies inside the segment.
    unsafe fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError>;
    /// Blocks until `pred` returns true (or an error, which ends the wait with it). `pred`
    /// reads the bytes `watch` names of this PE's segment (typically through
    /// [`Transport::load`]); the transport re-evaluates it whenever a peer may have written to
    /// them and consults its [`Watchdog`] between sleeps, with `what` for its messages.
    ///
    /// The default polls: it yields, then sleeps for growing intervals of up to a millisecond.
    /// A transport that can sleep until a peer writes (the simulator's futexes) overrides it.
    fn wait_local(
        &self,
        watch: Watch,
        what: &dyn fmt::Display,
        pred: &mut dyn FnMut() -> Result<bool, TransportError>,
    ) -> Result<(), TransportError> {
        let _ = watch;
        sync::poll(self.watchdog(), what, pred)
    }
    /// Waits until this PE's word `w` compares true, and returns the value that did; on a stream
    /// queue the wait is enqueued instead and `None` returned (CANN's
    /// `signal_wait_until_on_stream`).
    ///
    /// The default waits on the host with [`Transport::wait_local`].
    ///
    /// # Safety
    ///
    /// The word is aligned to its width and lies inside the segment.
    unsafe fn wait_until(
        &self,
        q: &Self::Queue,
        w: WaitWord,
        what: &dyn fmt::Display,
    ) -> Result<Option<u64>, TransportError> {
        let _ = q;
        // SAFETY: forwarded from this function's contract.
        unsafe { sync::wait_word(self, w, what) }.map(Some)
    }
    /// Waits for every member of a team (a barrier without the quiet: the core quiets first).
    /// On a stream queue the barrier is enqueued instead (CANN's `barrier_on_stream`).
    ///
    /// The default is the core's radix-8 tree of signal-adds and signal-sets
    /// ([`sync::tree_barrier`]), which runs on any transport with signals and waits; a
    /// transport with a barrier of its own overrides it.
    ///
    /// # Safety
    ///
    /// Every member of `b` is below [`Transport::n_pes`], and its arrival and release words are
    /// aligned 64-bit words inside the segment.
    unsafe fn barrier(
        &self,
        q: &Self::Queue,
        b: &BarrierSpec,
        what: &dyn fmt::Display,
    ) -> Result<(), TransportError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { sync::tree_barrier(self, q, b, what) }
    }

    /// Releases what the transport holds apart from memory, when the instance is finalised
    /// (every PE calls it, after its last quiet and before the bootstrap closes, so `exchange`
    /// still reaches the peers): a transport over a vendor library ends the vendor's instance
    /// here, so that the id can be created again while handles to the finalised instance live
    /// on. The default holds nothing.
    fn finalize(&self, exchange: &mut dyn Exchange) -> Result<(), TransportError> {
        let _ = exchange;
        Ok(())
    }

    /// The error of an operation this transport does not provide.
    fn unsupported(&self, what: &str) -> TransportError {
        TransportError::Unsupported {
            transport: self.profile().name,
            what: what.to_string(),
        }
    }
}
