//! The transport of an instance, chosen at run time among the backends of this build.
//!
//! [`Fabric`] is an enum over the transports and [`Queue`] over their queues, so a call is a
//! `match` on a discriminant the branch predictor always gets right, followed by a static call
//! of the [`Transport`] method: no virtual call, no downcast, and the methods inline. A queue
//! only ever meets the transport that made it (both live in one instance), so the pair always
//! matches.
//!
//! The data-path methods are the transport's own `unsafe` methods: the core validates every
//! access before it calls them (see [`Transport`]'s safety section), and nothing is checked
//! twice.

use std::fmt;
use std::ptr::NonNull;

use shmem_backend::{
    AmoOp, BarrierSpec, Exchange, Local, LocalMut, Pe, Profile, SegmentSpec, Signal, Strided,
    Transport, TransportError, WaitWord, Watch, Width,
};
use shmem_sim::SimTransport;

use crate::attr::Backend;
use crate::error::{Error, Result};

/// An instance's transport. Aligned to a cache line, so that the fields a put reads share one
/// ([`crate::instance::Hot`] says why).
#[derive(Debug)]
#[repr(align(64))]
pub(crate) enum Fabric {
    /// The multi-process shared-memory simulator.
    Sim(SimTransport),
    /// Ascend NPUs through the ACL runtime and CANN SHMEM (not in a stand-in build, which
    /// plays the hardware itself).
    #[cfg(not(feature = "stand-in"))]
    Hw(shmem_hw::HwTransport),
}

/// A completion queue of a [`Fabric`].
#[derive(Debug)]
pub(crate) enum Queue {
    /// A queue of the simulator.
    Sim(shmem_sim::SimQueue),
    /// A queue of the hardware backend.
    #[cfg(not(feature = "stand-in"))]
    Hw(shmem_hw::HwQueue),
}

/// An in-order stream of work on the device of this PE, that contexts can be made from
/// (CANN's `aclrtStream` and its `_on_stream` calls): every operation issued on such a context
/// runs in stream order and completes when the stream is synchronised.
///
/// ```
/// let stream = shmem::Stream::new();
/// stream.synchronize()?; // nothing enqueued yet
/// # Ok::<(), shmem::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum Stream {
    /// A stream of the simulator's executor.
    Sim(shmem_sim::Stream),
    /// An `aclrtStream` of the ACL runtime the hw backend drives (a C program's stream, given
    /// to CANN's `_on_stream` calls).
    #[cfg(not(feature = "stand-in"))]
    Acl(shmem_hw::DeviceStream),
}

impl Stream {
    /// A new stream of the simulator; it holds its work back until it is synchronised when
    /// the simulator's strict completion mode is on (`SHMEM_SIM_STRICT`).
    pub fn new() -> Stream {
        let strict = shmem_sim::SimSettings::from_env().is_ok_and(|s| s.strict);
        Stream::Sim(shmem_sim::Stream::new(strict))
    }

    /// Waits until everything enqueued on the stream so far has run, and returns the first
    /// failure since the last synchronisation (`aclrtSynchronizeStream`).
    pub fn synchronize(&self) -> Result<()> {
        match self {
            Stream::Sim(s) => s.synchronize().map_err(Error::from),
            #[cfg(not(feature = "stand-in"))]
            Stream::Acl(s) => s
                .stream()
                .synchronize()
                .map_err(|e| Error::from(TransportError::from(e))),
        }
    }

    /// The simulator's stream, which kernels on simulated cores are launched on.
    #[cfg_attr(feature = "stand-in", allow(unused_variables))]
    pub(crate) fn simulated(&self, kernel: &str) -> Result<&shmem_sim::Stream> {
        match self {
            Stream::Sim(s) => Ok(s),
            #[cfg(not(feature = "stand-in"))]
            Stream::Acl(_) => Err(Error::NotSupported(format!(
                "kernel {kernel}: kernels on the simulator's cores are launched on its streams, not on an aclrtStream of the hw backend"
            ))),
        }
    }
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

/// `match` over the transport (and, with a queue, the pair).
macro_rules! on {
    ($fabric:expr, |$t:ident| $body:expr) => {
        match $fabric {
            Fabric::Sim($t) => $body,
            #[cfg(not(feature = "stand-in"))]
            Fabric::Hw($t) => $body,
        }
    };
    ($fabric:expr, $queue:expr, |$t:ident, $q:ident| $body:expr) => {
        match ($fabric, $queue) {
            (Fabric::Sim($t), Queue::Sim($q)) => $body,
            #[cfg(not(feature = "stand-in"))]
            (Fabric::Hw($t), Queue::Hw($q)) => $body,
            #[cfg(not(feature = "stand-in"))]
            _ => unreachable!("a queue only meets the transport that made it"),
        }
    };
}

/// `$body` on the simulator's transport and queue, `$other` on any other: the inline data
/// path, which only the simulator completes at once.
macro_rules! on_sim {
    ($fabric:expr, $queue:expr, |$t:ident, $q:ident| $body:expr, else $other:expr) => {
        match ($fabric, $queue) {
            (Fabric::Sim($t), Queue::Sim($q)) => $body,
            #[cfg(not(feature = "stand-in"))]
            _ => $other,
        }
    };
}

/// The hardware backend's transport, or why it cannot be had: the vendor libraries are
/// missing (`NotSupported`, naming each and every place looked), or a call failed.
#[cfg(not(feature = "stand-in"))]
fn open_hw(spec: SegmentSpec, exchange: &mut dyn Exchange) -> Result<Fabric> {
    use shmem_backend::Transport as _;
    match shmem_hw::HwTransport::open(spec, exchange) {
        Ok(t) => Ok(Fabric::Hw(t)),
        // What the loaded libraries cannot do says it all (the libraries, the release).
        Err(TransportError::Unsupported { what, .. }) => Err(Error::NotSupported(what)),
        Err(e) => Err(e.into()),
    }
}

/// A stand-in build plays the hardware: its instances run on the simulator with heaps of
/// device memory, whatever backend is asked for, and it never loads a vendor library.
#[cfg(feature = "stand-in")]
fn open_hw(mut spec: SegmentSpec, exchange: &mut dyn Exchange) -> Result<Fabric> {
    spec.device_memory = true;
    Ok(Fabric::Sim(SimTransport::open(spec, exchange)?))
}

impl Fabric {
    /// Opens `backend`'s segment for `spec`, meeting the peers through `exchange`.
    pub(crate) fn open(
        backend: Backend,
        spec: SegmentSpec,
        exchange: &mut dyn Exchange,
    ) -> Result<Fabric> {
        match backend {
            Backend::Sim => Ok(Fabric::Sim(SimTransport::open(spec, exchange)?)),
            Backend::Hw => open_hw(spec, exchange),
        }
    }

    pub(crate) fn profile(&self) -> &Profile {
        on!(self, |t| t.profile())
    }

    pub(crate) fn segment_base(&self, pe: Pe) -> u64 {
        on!(self, |t| t.segment_base(pe))
    }

    pub(crate) fn host_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        on!(self, |t| t.host_mapping(pe))
    }

    /// [`Transport::peer_pid`](shmem_backend::Transport::peer_pid).
    pub(crate) fn peer_pid(&self, pe: Pe) -> Option<u32> {
        on!(self, |t| t.peer_pid(pe))
    }

    pub(crate) fn segment_size(&self) -> usize {
        on!(self, |t| t.segment_size())
    }

    pub(crate) fn kernel_mapping(&self, pe: Pe) -> Option<NonNull<u8>> {
        on!(self, |t| t.kernel_mapping(pe))
    }

    pub(crate) fn new_queue(&self) -> Queue {
        match self {
            Fabric::Sim(t) => Queue::Sim(t.new_queue()),
            #[cfg(not(feature = "stand-in"))]
            Fabric::Hw(t) => Queue::Hw(t.new_queue()),
        }
    }

    /// A queue for the core's own protocols (see [`Transport::new_internal_queue`]).
    pub(crate) fn new_internal_queue(&self) -> Queue {
        match self {
            Fabric::Sim(t) => Queue::Sim(t.new_internal_queue()),
            #[cfg(not(feature = "stand-in"))]
            Fabric::Hw(t) => Queue::Hw(t.new_internal_queue()),
        }
    }

    /// A new stream of the transport's device.
    pub(crate) fn new_stream(&self) -> Result<Stream> {
        match self {
            Fabric::Sim(_) => Ok(Stream::new()),
            #[cfg(not(feature = "stand-in"))]
            Fabric::Hw(_) => shmem_hw::DeviceStream::create()
                .map(Stream::Acl)
                .map_err(|e| Error::from(TransportError::from(e))),
        }
    }

    pub(crate) fn stream_queue(&self, stream: &Stream) -> Result<Queue> {
        match (self, stream) {
            (Fabric::Sim(t), Stream::Sim(s)) => Ok(Queue::Sim(t.stream_queue(s)?)),
            #[cfg(not(feature = "stand-in"))]
            (Fabric::Hw(t), Stream::Acl(s)) => Ok(Queue::Hw(t.stream_queue(s)?)),
            #[cfg(not(feature = "stand-in"))]
            (Fabric::Hw(t), Stream::Sim(_)) => Err(t
                .unsupported("queues on the simulator's streams (on hw a stream is an aclrtStream)")
                .into()),
            #[cfg(not(feature = "stand-in"))]
            (Fabric::Sim(t), Stream::Acl(_)) => Err(t
                .unsupported("queues on an aclrtStream of the hw backend")
                .into()),
        }
    }

    pub(crate) fn register_device(&self, addr: u64, len: usize) -> Result<()> {
        Ok(on!(self, |t| t.register_device(addr, len))?)
    }

    /// # Safety
    ///
    /// As [`Transport::alias_local`].
    pub(crate) unsafe fn alias_local(
        &self,
        offset: usize,
        at: NonNull<u8>,
        len: usize,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        Ok(on!(self, |t| unsafe { t.alias_local(offset, at, len) })?)
    }

    pub(crate) fn deregister_device(&self, addr: u64, len: usize) -> Result<()> {
        Ok(on!(self, |t| t.deregister_device(addr, len))?)
    }

    /// # Safety
    ///
    /// [`Transport::put`]'s.
    #[inline]
    pub(crate) unsafe fn put(&self, q: &Queue, pe: Pe, dst: usize, src: Local<'_>) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.put(q, pe, dst, src) })?)
    }

    /// # Safety
    ///
    /// [`Transport::get`]'s.
    #[inline]
    pub(crate) unsafe fn get(
        &self,
        q: &Queue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.get(q, pe, src, dst) })?)
    }

    /// # Safety
    ///
    /// [`Transport::put_nbi`]'s.
    #[inline]
    pub(crate) unsafe fn put_nbi(
        &self,
        q: &Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.put_nbi(q, pe, dst, src) })?)
    }

    /// # Safety
    ///
    /// [`Transport::get_nbi`]'s.
    #[inline]
    pub(crate) unsafe fn get_nbi(
        &self,
        q: &Queue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.get_nbi(q, pe, src, dst) })?)
    }

    /// # Safety
    ///
    /// [`Transport::iput`]'s.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn iput(
        &self,
        q: &Queue,
        pe: Pe,
        dst: Strided,
        src: Local<'_>,
        src_layout: Strided,
        elem: usize,
        nelems: usize,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.iput(q, pe, dst, src, src_layout, elem, nelems)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::iget`]'s.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn iget(
        &self,
        q: &Queue,
        pe: Pe,
        src: Strided,
        dst: LocalMut<'_>,
        dst_layout: Strided,
        elem: usize,
        nelems: usize,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.iget(q, pe, src, dst, dst_layout, elem, nelems)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::fill`]'s.
    pub(crate) unsafe fn fill(
        &self,
        q: &Queue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.fill(q, pe, dst, byte, len)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::atomic`]'s.
    #[inline(always)]
    pub(crate) unsafe fn atomic(
        &self,
        q: &Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.atomic(q, pe, offset, width, op)
        })?)
    }

    /// A put of host bytes performed inline when the transport can complete it at once on `q`
    /// (the simulator's plain queues outside strict mode); `false`, with nothing done,
    /// otherwise.
    ///
    /// # Safety
    ///
    /// [`Transport::put`]'s.
    #[inline(always)]
    pub(crate) unsafe fn put_at_once(&self, q: &Queue, pe: Pe, dst: usize, src: &[u8]) -> bool {
        // SAFETY: forwarded.
        on_sim!(self, q, |t, q| unsafe { t.put_at_once(q, pe, dst, src) }, else false)
    }

    /// A get into `len` host bytes at `dst` performed inline, as [`Fabric::put_at_once`].
    ///
    /// # Safety
    ///
    /// [`Transport::get`]'s, with `dst..dst + len` writable.
    #[inline(always)]
    pub(crate) unsafe fn get_at_once(
        &self,
        q: &Queue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> bool {
        // SAFETY: forwarded.
        on_sim!(self, q, |t, q| unsafe { t.get_at_once(q, pe, src, dst, len) }, else false)
    }

    /// The quiet performed inline when the transport completes it with a fence on `q`;
    /// `false`, with nothing done, otherwise.
    #[inline(always)]
    pub(crate) fn quiet_at_once(&self, q: &Queue) -> bool {
        on_sim!(self, q, |t, q| t.quiet_at_once(q), else false)
    }

    /// The atomic performed inline when the transport can complete it at once on `q` (the
    /// simulator's plain queues outside strict mode), else `None` with nothing done.
    ///
    /// # Safety
    ///
    /// [`Transport::atomic`]'s.
    #[inline(always)]
    pub(crate) unsafe fn atomic_at_once(
        &self,
        q: &Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Option<u64> {
        // SAFETY: forwarded.
        on_sim!(self, q, |t, q| unsafe { t.atomic_at_once(q, pe, offset, width, op) }, else None)
    }

    /// [`Fabric::atomic_at_once`] for an atomic whose old value is not wanted: `false` when
    /// nothing was done.
    ///
    /// # Safety
    ///
    /// [`Transport::atomic_post`]'s.
    #[inline(always)]
    pub(crate) unsafe fn atomic_post_at_once(
        &self,
        q: &Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> bool {
        // SAFETY: forwarded.
        on_sim!(self, q, |t, q| unsafe { t.atomic_post_at_once(q, pe, offset, width, op) }, else false)
    }

    /// # Safety
    ///
    /// [`Transport::atomic_post`]'s.
    #[inline(always)]
    pub(crate) unsafe fn atomic_post(
        &self,
        q: &Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.atomic_post(q, pe, offset, width, op)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::atomic_nbi`]'s.
    pub(crate) unsafe fn atomic_nbi(
        &self,
        q: &Queue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.atomic_nbi(q, pe, offset, width, op, fetch)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::signal`]'s.
    #[inline]
    pub(crate) unsafe fn signal(&self, q: &Queue, pe: Pe, sig: Signal) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.signal(q, pe, sig) })?)
    }

    /// # Safety
    ///
    /// [`Transport::put_signal`]'s.
    #[inline]
    pub(crate) unsafe fn put_signal(
        &self,
        q: &Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.put_signal(q, pe, dst, src, sig)
        })?)
    }

    /// # Safety
    ///
    /// [`Transport::put_signal_nbi`]'s.
    pub(crate) unsafe fn put_signal_nbi(
        &self,
        q: &Queue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe {
            t.put_signal_nbi(q, pe, dst, src, sig)
        })?)
    }

    #[inline]
    pub(crate) fn fence(&self, q: &Queue) -> Result<()> {
        Ok(on!(self, q, |t, q| t.fence(q))?)
    }

    #[inline]
    pub(crate) fn finalize(&self, exchange: &mut dyn Exchange) -> Result<()> {
        Ok(on!(self, |t| t.finalize(exchange))?)
    }

    /// Completes the operations on `q`: on the simulator a fence (and, in strict mode, the
    /// held operations), inlined into the caller; on the hardware a call out of line.
    #[inline]
    pub(crate) fn quiet(&self, q: &Queue) -> Result<()> {
        on_sim!(self, q, |t, q| Ok(t.quiet(q)?), else self.quiet_out_of_line(q))
    }

    /// The quiet of `barrier_all` ([`Transport::quiet_before_barrier`]).
    #[inline]
    pub(crate) fn quiet_before_barrier(&self, q: &Queue) -> Result<()> {
        Ok(on!(self, q, |t, q| t.quiet_before_barrier(q))?)
    }

    #[cfg(not(feature = "stand-in"))]
    #[inline(never)]
    fn quiet_out_of_line(&self, q: &Queue) -> Result<()> {
        Ok(on!(self, q, |t, q| t.quiet(q))?)
    }

    /// # Safety
    ///
    /// [`Transport::load`]'s.
    #[inline]
    pub(crate) unsafe fn load(&self, offset: usize, width: Width) -> Result<u64> {
        // SAFETY: forwarded.
        Ok(on!(self, |t| unsafe { t.load(offset, width) })?)
    }

    /// Waits until `pred` holds; an error from `pred` ends the wait with it.
    pub(crate) fn wait_local(
        &self,
        watch: Watch,
        what: &dyn fmt::Display,
        pred: &mut dyn FnMut() -> Result<bool>,
    ) -> Result<()> {
        let mut failed = None;
        let mut p = || -> std::result::Result<bool, TransportError> {
            match pred() {
                Ok(done) => Ok(done),
                Err(e) => {
                    failed = Some(e);
                    Ok(true)
                }
            }
        };
        let r = on!(self, |t| t.wait_local(watch, what, &mut p));
        match failed {
            Some(e) => Err(e),
            None => Ok(r?),
        }
    }

    /// # Safety
    ///
    /// [`Transport::wait_until`]'s.
    pub(crate) unsafe fn wait_until(
        &self,
        q: &Queue,
        w: WaitWord,
        what: &dyn fmt::Display,
    ) -> Result<Option<u64>> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.wait_until(q, w, what) })?)
    }

    /// # Safety
    ///
    /// [`Transport::barrier`]'s.
    #[inline]
    pub(crate) unsafe fn barrier(
        &self,
        q: &Queue,
        b: &BarrierSpec,
        what: &dyn fmt::Display,
    ) -> Result<()> {
        // SAFETY: forwarded.
        Ok(on!(self, q, |t, q| unsafe { t.barrier(q, b, what) })?)
    }
}
