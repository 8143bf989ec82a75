//! The static [`Transport`] trait and the types its methods take.

use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::{AmoOp, Pe, Profile, SignalOp, TransportError, Width};

/// What the core asks a transport to open: this PE's segment of `size` bytes in an instance of
/// `n_pes` PEs. Every PE of the instance opens the same size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSpec {
    /// This PE's number inside the instance.
    pub my_pe: Pe,
    /// The number of PEs of the instance.
    pub n_pes: u32,
    /// The bytes each PE exposes to RMA; offsets `0..size` are addressable.
    pub size: usize,
    /// A short label for diagnostics and OS object names (for example `"inst0"`).
    pub label: String,
    /// How long attaching the peers may take once they have all called `open`.
    pub timeout: Duration,
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

    /// The byte range `[lo, hi)` that `nelems` elements of `elem_size` bytes touch, or `None` when
    /// it does not fit in the address space.
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
}

impl Watch {
    /// Every byte of the segment.
    pub const ANY: Watch = Watch {
        offset: 0,
        len: usize::MAX,
    };

    /// The `width` bytes at `offset`.
    pub const fn word(offset: usize, width: crate::Width) -> Watch {
        Watch {
            offset,
            len: width.bytes(),
        }
    }
}

/// How a [`Transport::wait_local`] call may end early: at a deadline, or when the core's liveness
/// check reports that a peer or the job is gone.
pub struct WaitCtl<'a> {
    /// When to give up with [`TransportError::Timeout`]; `None` waits without limit.
    pub deadline: Option<Instant>,
    /// What is being waited for, for the timeout message.
    pub what: &'a str,
    /// Called between sleeps (at least every few milliseconds once the waiter sleeps); an error
    /// ends the wait with that error.
    pub liveness: &'a (dyn Fn() -> Result<(), TransportError> + Sync),
}

impl std::fmt::Debug for WaitCtl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitCtl")
            .field("deadline", &self.deadline)
            .field("what", &self.what)
            .finish()
    }
}

fn always_alive() -> Result<(), TransportError> {
    Ok(())
}

impl<'a> WaitCtl<'a> {
    /// A wait with a deadline and no liveness check.
    pub fn new(deadline: Option<Instant>, what: &'a str) -> WaitCtl<'a> {
        WaitCtl {
            deadline,
            what,
            liveness: &always_alive,
        }
    }
}

/// A transport: the PE-to-PE data movement of one instance, over segments of equal size.
///
/// # Completion and ordering
///
/// Every operation is issued on a *queue* ([`Transport::Queue`], one per SHMEM context).
///
/// - Blocking operations (`put`, `get`, `iput`, `iget`, `atomic`, `signal`, `put_signal`, `fill`)
///   return when the local buffer may be reused (`put`), holds the data (`get`), or holds the
///   fetched value (`atomic`). Their effect at the target is guaranteed visible after
///   [`Transport::quiet`] on the same queue; a transport may make it visible sooner (the
///   simulator does so at once).
/// - Non-blocking operations (`*_nbi`) may read their local source and write their local
///   destination at any time until the next `quiet` on their queue, which completes them. In
///   strict completion mode the simulator delays them as long as that rule allows.
/// - [`Transport::fence`] orders the puts, atomics and signals issued on a queue before it ahead
///   of those issued after it, per target PE. A signal of a `put_signal` is delivered after its
///   data.
/// - Waits ([`Transport::wait_local`]) observe updates made through any queue of any PE.
///
/// # Bounds
///
/// Every access is checked: a PE outside `0..n_pes`, an access that does not lie inside
/// `0..segment_size()`, a local buffer too short for a strided layout, or a misaligned atomic is
/// an error, and nothing is written.
pub trait Transport: Send + Sync + Sized + 'static {
    /// A completion domain for non-blocking operations.
    type Queue: Send + Sync + 'static;

    /// Opens this PE's segment and attaches every peer's, using `exchange` to meet them. All PEs
    /// of the instance call it with the same `spec.size` and `spec.n_pes`.
    fn open(spec: &SegmentSpec, exchange: &mut dyn Exchange) -> Result<Self, TransportError>;

    /// The transport's name, limits and capabilities.
    fn profile(&self) -> &Profile;
    /// This PE's number.
    fn my_pe(&self) -> Pe;
    /// The number of PEs.
    fn n_pes(&self) -> u32;
    /// The addressable bytes of every segment.
    fn segment_size(&self) -> usize;
    /// The load/store address at which `pe`'s segment is mapped in this process, if it is.
    fn segment_ptr(&self, pe: Pe) -> Option<NonNull<u8>>;
    /// A new, empty completion queue.
    fn new_queue(&self) -> Self::Queue;

    /// Copies `src` to offset `dst` of `pe`'s segment.
    fn put(&self, q: &Self::Queue, pe: Pe, dst: usize, src: &[u8]) -> Result<(), TransportError>;
    /// Copies `dst.len()` bytes from offset `src` of `pe`'s segment into `dst`.
    fn get(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError>;
    /// Sets `len` bytes at offset `dst` of `pe`'s segment to `byte`.
    fn fill(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Non-blocking [`Transport::put`].
    ///
    /// # Safety
    ///
    /// `src..src+len` must stay readable, and unchanged if the caller wants its current contents
    /// delivered, until the next [`Transport::quiet`] on `q` returns.
    unsafe fn put_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Non-blocking [`Transport::get`].
    ///
    /// # Safety
    ///
    /// `dst..dst+len` must stay writable, and must not be accessed by the caller, until the next
    /// [`Transport::quiet`] on `q` returns.
    unsafe fn get_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// Copies `nelems` elements of `elem_size` bytes from `src` (laid out by `src_layout`) to
    /// `pe`'s segment (laid out by `dst`).
    #[allow(clippy::too_many_arguments)]
    fn iput(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: Strided,
        src: &[u8],
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    /// Copies `nelems` elements of `elem_size` bytes from `pe`'s segment (laid out by `src`) into
    /// `dst` (laid out by `dst_layout`).
    #[allow(clippy::too_many_arguments)]
    fn iget(
        &self,
        q: &Self::Queue,
        pe: Pe,
        src: Strided,
        dst: &mut [u8],
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    /// Performs `op` atomically on the `width` word at `offset` of `pe`'s segment and returns the
    /// previous value.
    fn atomic(
        &self,
        q: &Self::Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError>;
    /// Non-blocking [`Transport::atomic`]: the previous value is written to `fetch` (`width`
    /// bytes, native byte order) by the time the next `quiet` on `q` returns; `fetch` may be null
    /// when the caller does not want it.
    ///
    /// # Safety
    ///
    /// A non-null `fetch` must stay writable for `width.bytes()` bytes, and must not be accessed
    /// by the caller, until the next [`Transport::quiet`] on `q` returns.
    unsafe fn atomic_nbi(
        &self,
        q: &Self::Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<(), TransportError>;
    /// Updates the signal word `sig` of `pe`.
    fn signal(&self, q: &Self::Queue, pe: Pe, sig: Signal) -> Result<(), TransportError>;
    /// Puts `src` at `dst` of `pe` and then updates its signal word `sig`, which becomes visible
    /// only after the data.
    fn put_signal(
        &self,
        q: &Self::Queue,
        pe: Pe,
        dst: usize,
        src: &[u8],
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
        src: *const u8,
        len: usize,
        sig: Signal,
    ) -> Result<(), TransportError>;
    /// Orders the operations issued on `q` before the call ahead of those issued after it.
    fn fence(&self, q: &Self::Queue) -> Result<(), TransportError>;
    /// Completes every operation issued on `q`.
    fn quiet(&self, q: &Self::Queue) -> Result<(), TransportError>;

    /// Loads the `width` word at `offset` of this PE's own segment (with acquire ordering).
    fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError>;
    /// Blocks until `pred` returns true. `pred` reads the bytes `watch` names of this PE's
    /// segment (typically through [`Transport::load`]); the transport re-evaluates it whenever
    /// a peer may have written to them, and follows its wait policy between evaluations. Bytes
    /// changed by direct stores through [`Transport::segment_ptr`] are noticed within a bounded
    /// time (the simulator re-checks at least every 10 ms).
    fn wait_local(
        &self,
        watch: Watch,
        pred: &mut dyn FnMut() -> bool,
        ctl: &WaitCtl<'_>,
    ) -> Result<(), TransportError>;
}
