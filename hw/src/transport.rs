//! [`HwTransport`]: the [`Transport`] over CANN SHMEM's host calls and the ACL runtime.
//!
//! - **Instance.** One CANN instance per core instance, with the same id, bootstrapped in
//!   unique-id mode: PE 0 makes the 136-byte id and the core's bootstrap carries it to the
//!   others ([`Exchange::allgather`]).
//! - **Segment.** One collective `aclshmem_malloc` of the segment plus this PE's staging area,
//!   so that the segment's offset 0 is the first user allocation of CANN's heap, which CANN
//!   places after its own internal allocations (`docs/hardware.md`).
//! - **Data.** Every operation is enqueued on the transport's data stream with the
//!   `_on_stream` calls. Device operands (the segment, `aclrtMalloc` memory) are passed as
//!   they are; host buffers pass through the staging area (`aclrtMemcpy`), which is reused
//!   only after the stream was synchronised. Blocking operations complete (CANN's
//!   `aclshmemx_quiet_on_stream`, then a synchronisation) before they return, as CANN's host
//!   calls do; non-blocking ones at the next quiet, wait or barrier. A fence is CANN's quiet
//!   enqueued on the stream, which also puts a signal after its data.
//! - **Waits** poll the word with small device-to-host copies, so that the core's watchdog
//!   (timeouts, hang reports, lost peers) is consulted as on the simulator.
//! - **Barriers**: the world through `aclshmemx_barrier_all_on_stream` on a stream of its
//!   own; other teams through a radix-8 tree of 32-bit signal adds and sets (CANN's signals
//!   are 32-bit), compared modulo 2^32 so that counts may wrap.
//! - **Not expressible**: host-issued remote atomics (CANN's host API has none), host
//!   mappings of any heap (device memory), and queues on the program's streams; the profile
//!   says so and the core refuses them before they get here.

use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use shmem_backend::{
    BarrierSpec, Capabilities, Exchange, Limits, Local, LocalMut, Pe, Profile, ScalarKind,
    SegmentSpec, Signal, SignalOp, Strided, Transport, TransportError, WaitWord, Watch, Watchdog,
    Width, sync,
};

use crate::acl::{
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
    AclError,
};
use crate::cann_types::{
    DEFAULT_TIMEOUT, aclshmem_init_optional_attr_t, aclshmemx_init_attr_t, aclshmemx_uniqueid_t,
};
use crate::error::HwError;
use crate::runtime::Runtime;
use crate::stream::DeviceStream;

/// The bytes of device memory each PE stages host buffers through.
pub const STAGE: usize = 1 << 20;
/// The alignment of the segment's start: that of the largest allocation the core's heap
/// aligns (and of CANN's `local_mem_size`).
const SEGMENT_ALIGN: usize = 2 << 20;
/// The granularity of CANN's `local_mem_size`.
const LOCAL_MEM_GRANULARITY: usize = 2 << 20;
/// `ACLSHMEMX_INIT_WITH_UNIQUEID` (`shmem_host_def.h`).
const INIT_WITH_UNIQUEID: u32 = 1 << 3;
/// `data_op_engine_type_t`'s MTE bit.
const ENGINE_MTE: i32 = 1;
/// `ACLSHMEM_SIGNAL_SET`, `ACLSHMEM_SIGNAL_ADD`.
const SIGNAL_SET: i32 = 0;
const SIGNAL_ADD: i32 = 1;
/// How long one slice of a barrier's stream synchronisation lasts before the watchdog is
/// consulted, in milliseconds.
const BARRIER_SLICE_MS: i32 = 100;
/// The fan-out of the tree barrier over teams.
const RADIX: u32 = 8;

/// What the hardware backend can do: queues on the program's streams, device memory, no host
/// atomics and no host mapping; each host call completes in stream order.
pub const CAPABILITIES: Capabilities = Capabilities {
    host_atomics: false,
    host_mapping: false,
    streams: true,
    device_memory: true,
    relaxed_completion: false,
};

/// A completion queue: the transport's own data stream, which every context shares (so a quiet
/// on any of them completes them all, which OpenSHMEM allows), or a program's stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HwQueue {
    /// The transport's data stream, with its staging area; blocking calls complete on return.
    #[default]
    Own,
    /// A program's stream: device operands only (as CANN's `_on_stream` calls take them), and
    /// every operation completes when the program synchronises the stream.
    Stream(DeviceStream),
}

/// Where a local operand lies: host memory (staged), or device memory at an address.
enum Near<T> {
    Host(T),
    Device(u64),
}

/// An `aclrtStream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StreamHandle(usize);

impl StreamHandle {
    fn raw(self) -> *mut c_void {
        self.0 as *mut c_void
    }
}

/// The state of the data path: how much of the staging area enqueued operations still use.
#[derive(Debug, Default)]
struct Io {
    /// Bytes of the staging area in use since the last synchronisation.
    used: usize,
    /// Whether work was enqueued since the last synchronisation.
    pending: bool,
}

/// Where an operation is enqueued: the transport's own data stream with its staging area, or a
/// program's stream (device operands only).
struct Path<'a> {
    io: MutexGuard<'a, Io>,
    stream: StreamHandle,
    own: bool,
}

/// The transport of one instance on an Ascend NPU.
pub struct HwTransport {
    rt: &'static Runtime,
    instance: u64,
    my_pe: Pe,
    n_pes: u32,
    size: usize,
    /// The segment's address on this PE (CANN's symmetric address of it).
    base: u64,
    /// Every PE's segment address, as `aclshmem_ptr` gives it.
    bases: Vec<u64>,
    /// This PE's staging area (device memory, in CANN's heap after the segment).
    stage: u64,
    data: StreamHandle,
    barrier_stream: StreamHandle,
    io: Mutex<Io>,
    /// Whether the CANN instance was finalised.
    ended: AtomicBool,
    profile: Profile,
    watchdog: Arc<dyn Watchdog>,
}

impl fmt::Debug for HwTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HwTransport")
            .field("instance", &self.instance)
            .field("my_pe", &self.my_pe)
            .field("n_pes", &self.n_pes)
            .field("size", &self.size)
            .field("base", &format_args!("{:#x}", self.base))
            .finish_non_exhaustive()
    }
}

impl From<HwError> for TransportError {
    fn from(e: HwError) -> TransportError {
        TransportError::Device(e.to_string())
    }
}

/// The PE's rank on its node: the launcher's or Open MPI's, else its PE number.
fn local_rank(my_pe: Pe) -> u32 {
    [
        "SHMEM_HW_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "SHMEMRUN_PE",
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
    .unwrap_or(my_pe)
}

/// CANN's attributes with its defaults, before `aclshmemx_set_attr_uniqueid_args`.
fn default_attributes() -> aclshmemx_init_attr_t {
    aclshmemx_init_attr_t {
        my_pe: 0,
        n_pes: 0,
        ip_port: [0; crate::cann_types::MAX_IP_PORT_LEN],
        local_mem_size: 0,
        option_attr: aclshmem_init_optional_attr_t {
            version: (1 << 16) + size_of::<aclshmem_init_optional_attr_t>() as i32,
            data_op_engine_type: ENGINE_MTE,
            shm_init_timeout: DEFAULT_TIMEOUT,
            shm_create_timeout: DEFAULT_TIMEOUT,
            control_operation_timeout: DEFAULT_TIMEOUT,
            sock_fd: -1,
        },
        comm_args: std::ptr::null_mut(),
        instance_id: 0,
    }
}

/// The width's value in the first bytes of `b`, in native order.
fn word_of(b: &[u8; 8], width: Width) -> u64 {
    match width {
        Width::W8 => u64::from(b[0]),
        Width::W16 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
        Width::W32 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        Width::W64 => u64::from_ne_bytes(*b),
    }
}

impl HwTransport {
    /// The path of `q`'s operations, on a thread that has the runtime's device set.
    fn path(&self, q: &HwQueue) -> Result<Path<'_>, TransportError> {
        self.rt.bind()?;
        let io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        Ok(match q {
            HwQueue::Own => Path {
                io,
                stream: self.data,
                own: true,
            },
            HwQueue::Stream(s) => Path {
                io,
                stream: StreamHandle(s.stream().raw() as usize),
                own: false,
            },
        })
    }

    /// Waits until the data stream has run everything enqueued, and frees the staging area
    /// (nothing for a program's stream, which completes when the program synchronises it).
    fn sync(&self, p: &mut Path<'_>) -> Result<(), TransportError> {
        if !p.own {
            return Ok(());
        }
        let io = &mut *p.io;
        if io.pending {
            // SAFETY: the transport's own live stream.
            unsafe { self.rt.acl.try_aclrt_synchronize_stream(self.data.raw()) }?;
        }
        io.used = 0;
        io.pending = false;
        Ok(())
    }

    /// Enqueues CANN's quiet, which completes the RMA enqueued before it ahead of what is
    /// enqueued after it (CANN has no fence on a stream); a release without
    /// `aclshmemx_quiet_on_stream` synchronises the stream instead.
    fn order(&self, p: &mut Path<'_>) -> Result<(), TransportError> {
        if p.own && !p.io.pending {
            return Ok(());
        }
        if !self.rt.features.quiet_on_stream {
            if !p.own {
                // SAFETY: a live stream (the queue's contract).
                unsafe { self.rt.acl.try_aclrt_synchronize_stream(p.stream.raw()) }?;
            }
            return self.sync(p);
        }
        let calls = self.rt.cann(self.instance)?;
        let f = calls
            .cann
            .aclshmemx_quiet_on_stream()
            .map_err(HwError::from)?;
        // SAFETY: a live stream: the transport's own, or the program's (the queue's contract).
        unsafe { f(p.stream.raw()) };
        Ok(())
    }

    /// Completes every enqueued operation at its target: CANN's quiet, then a
    /// synchronisation.
    fn complete(&self, p: &mut Path<'_>) -> Result<(), TransportError> {
        self.order(p)?;
        self.sync(p)
    }

    /// Ends a blocking call on `p`: on the transport's own stream it completes what it
    /// enqueued (`complete`: at the target, else until the staging area is free); on a
    /// program's stream nothing waits, and the program's synchronisation completes it.
    fn finish(&self, p: &mut Path<'_>, complete: bool) -> Result<(), TransportError> {
        match (p.own, complete) {
            (false, _) => Ok(()),
            (true, true) => self.complete(p),
            (true, false) => self.sync(p),
        }
    }

    /// Completes every operation enqueued on the transport's own stream (before a wait, so
    /// that nothing this PE issued is held back while it waits for a peer that needs it).
    fn flush(&self) -> Result<(), TransportError> {
        let mut p = self.path(&HwQueue::Own)?;
        self.complete(&mut p)
    }

    /// `n` bytes of the staging area for one enqueued operation (synchronising first when
    /// the area is used up). `n` is at most [`STAGE`].
    fn stage_bytes(&self, p: &mut Path<'_>, n: usize) -> Result<u64, TransportError> {
        if !p.own {
            return Err(self.unsupported(
                "host memory as an operand on a program's stream (CANN's _on_stream calls take device memory)",
            ));
        }
        let n = n.next_multiple_of(32);
        if p.io.used + n > STAGE {
            self.sync(p)?;
        }
        let at = self.stage + p.io.used as u64;
        p.io.used += n;
        Ok(at)
    }

    fn h2d(&self, to: u64, from: &[u8]) -> Result<(), TransportError> {
        // SAFETY: `to` is device memory of at least `from.len()` bytes (a staging slice or the
        // segment), `from` is readable for its length.
        unsafe {
            self.rt.acl.try_aclrt_memcpy(
                to as *mut c_void,
                from.len(),
                from.as_ptr().cast(),
                from.len(),
                ACL_MEMCPY_HOST_TO_DEVICE,
            )
        }?;
        Ok(())
    }

    fn d2h(&self, to: &mut [u8], from: u64) -> Result<(), TransportError> {
        // SAFETY: `from` is device memory of at least `to.len()` bytes, `to` writable.
        unsafe {
            self.rt.acl.try_aclrt_memcpy(
                to.as_mut_ptr().cast(),
                to.len(),
                from as *const c_void,
                to.len(),
                ACL_MEMCPY_DEVICE_TO_HOST,
            )
        }?;
        Ok(())
    }

    /// Enqueues a put of `len` bytes of device memory at `src` to offset `dst` of `pe`.
    fn put_device(
        &self,
        p: &mut Path<'_>,
        pe: Pe,
        dst: usize,
        src: u64,
        len: usize,
    ) -> Result<(), TransportError> {
        self.copy_device(p, false, pe, dst, src, len)
    }

    /// Enqueues a get of `len` bytes at offset `src` of `pe` into device memory at `dst`.
    fn get_device(
        &self,
        p: &mut Path<'_>,
        pe: Pe,
        src: usize,
        dst: u64,
        len: usize,
    ) -> Result<(), TransportError> {
        self.copy_device(p, true, pe, src, dst, len)
    }

    /// Enqueues CANN's `getmem_on_stream` (`get`) or `putmem_on_stream` between offset
    /// `remote` of `pe`'s segment and `len` bytes of device memory at `local`; both calls take
    /// `(dst, src, len, pe, stream)` with the symmetric address as this PE's.
    fn copy_device(
        &self,
        p: &mut Path<'_>,
        get: bool,
        pe: Pe,
        remote: usize,
        local: u64,
        len: usize,
    ) -> Result<(), TransportError> {
        if len == 0 {
            return Ok(());
        }
        let calls = self.rt.cann(self.instance)?;
        let f = if get {
            calls.cann.aclshmemx_getmem_on_stream()
        } else {
            calls.cann.aclshmemx_putmem_on_stream()
        }
        .map_err(HwError::from)?;
        let (remote, local) = (
            (self.base + remote as u64) as *mut c_void,
            local as *mut c_void,
        );
        let (dst, src) = if get {
            (local, remote)
        } else {
            (remote, local)
        };
        // SAFETY: the remote range lies in the segment (the core checked it), `local` is device
        // memory of `len` bytes, `pe` is a PE of the instance, the stream is live.
        unsafe { f(dst, src, len, pe as i32, p.stream.raw()) };
        p.io.pending = true;
        Ok(())
    }

    /// Where a local source lies: host bytes, or device memory at an address (this PE's
    /// segment, or registered device memory).
    fn near<'b>(&self, src: Local<'b>) -> Near<&'b [u8]> {
        match src {
            Local::Host(bytes) => Near::Host(bytes),
            Local::Segment { offset, .. } => Near::Device(self.base + offset as u64),
            Local::Device { addr, .. } => Near::Device(addr),
        }
    }

    /// Where a local destination lies, as [`Self::near`] does for a source.
    fn near_mut<'b>(&self, dst: LocalMut<'b>) -> Near<&'b mut [u8]> {
        match dst {
            LocalMut::Host(bytes) => Near::Host(bytes),
            LocalMut::Segment { offset, .. } => Near::Device(self.base + offset as u64),
            LocalMut::Device { addr, .. } => Near::Device(addr),
        }
    }

    /// Enqueues a put of `src` to offset `dst` of `pe`, staging host bytes.
    fn enqueue_put(
        &self,
        p: &mut Path<'_>,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        let len = src.len();
        match self.near(src) {
            Near::Host(bytes) => {
                for (i, chunk) in bytes.chunks(STAGE).enumerate() {
                    let at = self.stage_bytes(p, chunk.len())?;
                    self.h2d(at, chunk)?;
                    self.put_device(p, pe, dst + i * STAGE, at, chunk.len())?;
                }
                Ok(())
            }
            Near::Device(addr) => self.put_device(p, pe, dst, addr, len),
        }
    }

    /// Gets `dst.len()` bytes at offset `src` of `pe` into `dst`; a host destination holds
    /// them on return, a device one after the next synchronisation.
    fn enqueue_get(
        &self,
        p: &mut Path<'_>,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        let len = dst.len();
        match self.near_mut(dst) {
            Near::Host(bytes) => {
                for (i, chunk) in bytes.chunks_mut(STAGE).enumerate() {
                    let at = self.stage_bytes(p, chunk.len())?;
                    self.get_device(p, pe, src + i * STAGE, at, chunk.len())?;
                    self.sync(p)?;
                    self.d2h(chunk, at)?;
                }
                Ok(())
            }
            Near::Device(addr) => self.get_device(p, pe, src, addr, len),
        }
    }

    /// Enqueues a signal update. A 32-bit word is CANN's signal; a 64-bit set is an 8-byte
    /// put; a 64-bit add is a 32-bit add of the word's low half, exact while the word stays
    /// below 2^32 (CANN's signals are 32-bit; `docs/hardware.md`).
    fn enqueue_signal(&self, p: &mut Path<'_>, pe: Pe, sig: Signal) -> Result<(), TransportError> {
        let (offset, value, op) = match (sig.width, sig.op) {
            (Width::W32, SignalOp::Set) => (sig.offset, sig.value as u32, SIGNAL_SET),
            (Width::W32, SignalOp::Add) => (sig.offset, sig.value as u32, SIGNAL_ADD),
            (Width::W64, SignalOp::Set) => {
                let at = self.stage_bytes(p, 8)?;
                self.h2d(at, &sig.value.to_ne_bytes())?;
                return self.put_device(p, pe, sig.offset, at, 8);
            }
            (Width::W64, SignalOp::Add) => {
                let Ok(v) = u32::try_from(sig.value) else {
                    return Err(self.unsupported(
                        "a 64-bit signal add of 2^32 or more (CANN's signals are 32-bit)",
                    ));
                };
                let low = if cfg!(target_endian = "little") { 0 } else { 4 };
                (sig.offset + low, v, SIGNAL_ADD)
            }
            (w, _) => {
                return Err(self.unsupported(&format!("a {}-byte signal word", w.bytes())));
            }
        };
        let calls = self.rt.cann(self.instance)?;
        let f = calls
            .cann
            .aclshmemx_signal_op_on_stream()
            .map_err(HwError::from)?;
        // SAFETY: the word lies in the segment and is aligned (the core checked it), `pe` is a
        // PE of the instance, the stream is live.
        unsafe {
            f(
                (self.base + offset as u64) as *mut i32,
                value as i32,
                op,
                pe as i32,
                p.stream.raw(),
            )
        };
        p.io.pending = true;
        Ok(())
    }

    /// Completes what is enqueued and finalises the CANN instance, once: at the core's
    /// finalize, under the lock taken collectively through `exchange`; when the transport is
    /// dropped without one, under the lock taken outright.
    fn end_instance(&self, exchange: Option<&mut dyn Exchange>) -> Result<(), TransportError> {
        if self.ended.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let flushed = self.flush();
        for s in [self.data, self.barrier_stream] {
            // SAFETY: the transport's own streams, synchronised and used no more.
            let _ = unsafe { self.rt.acl.try_aclrt_destroy_stream(s.raw()) };
        }
        let calls = match exchange {
            Some(x) => self.rt.cann_collective(x)?,
            None => self.rt.cann_unswitched(),
        };
        if self.rt.features.multi_instance {
            // SAFETY: the instance this transport created; CANN releases its heap with it.
            unsafe { calls.cann.try_aclshmemx_finalize(self.instance) }?;
        } else {
            // SAFETY: as above (a release with one instance finalises the active one).
            unsafe { calls.cann.try_aclshmem_finalize() }?;
        }
        flushed
    }

    /// Waits until the 32-bit word at `offset` has reached `target`, counted modulo 2^32.
    fn wait_reached(
        &self,
        offset: usize,
        target: u32,
        what: &dyn fmt::Display,
    ) -> Result<(), TransportError> {
        self.wait_local(Watch::word(offset, Width::W32), what, &mut || {
            // SAFETY: the core's barrier words are aligned 64-bit words in the segment.
            let seen = unsafe { self.load(offset, Width::W32) }? as u32;
            Ok(seen.wrapping_sub(target) as i32 >= 0)
        })
    }

    /// The world's barrier: CANN's `barrier_all_on_stream`, then a synchronisation in slices
    /// between which the watchdog decides whether the wait may go on.
    fn barrier_all(&self, what: &dyn fmt::Display) -> Result<(), TransportError> {
        {
            let calls = self.rt.cann(self.instance)?;
            let f = calls
                .cann
                .aclshmemx_barrier_all_on_stream()
                .map_err(HwError::from)?;
            // SAFETY: the transport's own live stream.
            unsafe { f(self.barrier_stream.raw()) };
        }
        let start = Instant::now();
        loop {
            // SAFETY: the transport's own live stream.
            let r = unsafe {
                self.rt.acl.try_aclrt_synchronize_stream_with_timeout(
                    self.barrier_stream.raw(),
                    BARRIER_SLICE_MS,
                )
            };
            match r {
                Ok(()) => return Ok(()),
                Err(HwError::Acl {
                    error: AclError(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT),
                    ..
                }) => self.watchdog.check(start.elapsed(), what)?,
                Err(e) => return Err(self.failed_barrier(e, start, what)),
            }
        }
    }

    /// The error of a barrier whose task failed: a barrier task fails most often because a
    /// peer died, and the bootstrap's notice of that may trail the failure by a moment; the
    /// watchdog's account (naming the lost PE) is preferred if it comes within a second.
    #[cold]
    fn failed_barrier(
        &self,
        e: HwError,
        start: Instant,
        what: &dyn fmt::Display,
    ) -> TransportError {
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            if let Err(lost) = self.watchdog.check(start.elapsed(), what) {
                return lost;
            }
            if Instant::now() >= until {
                return e.into();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A barrier over a team that is not the world: a radix-8 tree of 32-bit signal adds (to
    /// the parent's arrival word) and sets (of the children's release words).
    fn tree_barrier(&self, b: &BarrierSpec, what: &dyn fmt::Display) -> Result<(), TransportError> {
        let (n, r, e) = (b.size, b.rank, b.epoch as u32);
        let first_child = r * RADIX + 1;
        let children = if first_child < n {
            (n - first_child).min(RADIX)
        } else {
            0
        };
        if children > 0 {
            self.wait_reached(b.arrive, e.wrapping_mul(children), what)?;
        }
        let send = |pe: Pe, offset: usize, op: SignalOp, value: u32| {
            let mut p = self.path(&HwQueue::Own)?;
            self.enqueue_signal(
                &mut p,
                pe,
                Signal {
                    offset,
                    width: Width::W32,
                    op,
                    value: u64::from(value),
                },
            )?;
            self.complete(&mut p)
        };
        if r != 0 {
            send(b.pe((r - 1) / RADIX), b.arrive, SignalOp::Add, 1)?;
            self.wait_reached(b.release, e, what)?;
        }
        for c in first_child..first_child + children {
            send(b.pe(c), b.release, SignalOp::Set, e)?;
        }
        Ok(())
    }
}

impl Transport for HwTransport {
    type Queue = HwQueue;
    type Stream = DeviceStream;

    fn open(spec: SegmentSpec, exchange: &mut dyn Exchange) -> Result<Self, TransportError> {
        let rt = Runtime::get(local_rank(spec.my_pe)).map_err(|e| match e {
            HwError::Load(e) => TransportError::Unsupported {
                transport: "hw",
                what: format!("{e}; use SHMEM_BACKEND=sim on a machine without CANN"),
            },
            e => e.into(),
        })?;
        rt.bind()?;
        static REPORT: Once = Once::new();
        REPORT.call_once(|| tracing::info!(target: "shmem::hw", "{}", rt.report));
        let unsupported = |what: String| TransportError::Unsupported {
            transport: "hw",
            what,
        };
        rt.features
            .check_instance(spec.instance, rt.shmem_library())
            .map_err(unsupported)?;
        // SAFETY: a plain C struct of bytes, for which all zeroes is a value.
        let mut uid: aclshmemx_uniqueid_t = unsafe { std::mem::zeroed() };
        let id_len = size_of::<aclshmemx_uniqueid_t>();
        let mine = if spec.my_pe == 0 {
            // SAFETY: writes 136 bytes.
            unsafe {
                rt.cann_unswitched()
                    .cann
                    .try_aclshmemx_get_uniqueid(&mut uid)
            }?;
            // SAFETY: the id's bytes, all initialised.
            unsafe { std::slice::from_raw_parts((&raw const uid).cast::<u8>(), id_len) }.to_vec()
        } else {
            Vec::new()
        };
        let all = exchange.allgather(&mine)?;
        let theirs = all
            .first()
            .filter(|b| b.len() == id_len)
            .ok_or_else(|| TransportError::Exchange("PE 0 sent no CANN SHMEM unique id".into()))?;
        // SAFETY: 136 bytes into the 136-byte id.
        unsafe {
            std::ptr::copy_nonoverlapping(theirs.as_ptr(), (&raw mut uid).cast::<u8>(), id_len)
        };
        // CANN places the first user allocation after its own (at 0x520200 of the heap), so
        // the segment starts at the next SEGMENT_ALIGN boundary of an allocation that has
        // room for it: offsets in the segment then have the alignment they have on the
        // simulator, whose segments start on a page.
        let wanted = spec.size + STAGE + SEGMENT_ALIGN;
        let area = spec
            .size
            .checked_add(STAGE + SEGMENT_ALIGN)
            .map(|n| n.next_multiple_of(LOCAL_MEM_GRANULARITY))
            .ok_or_else(|| unsupported(format!("a segment of {} bytes", spec.size)))?;
        let mut attr = default_attributes();
        // Init and the allocation wait for every PE: under the lock taken collectively.
        let calls = rt.cann_collective(exchange)?;
        {
            // SAFETY: `uid` outlives the init below, which reads it through `comm_args`;
            // `attr` is a valid struct.
            unsafe {
                calls.cann.try_aclshmemx_set_attr_uniqueid_args(
                    spec.my_pe as i32,
                    spec.n_pes as i32,
                    area as i64,
                    &mut uid,
                    &mut attr,
                )
            }?;
            attr.instance_id = spec.instance;
            // SAFETY: as above.
            unsafe {
                calls
                    .cann
                    .try_aclshmemx_init_attr(INIT_WITH_UNIQUEID, &mut attr)
            }?;
        }
        let (base, bases) = {
            if rt.features.multi_instance {
                // SAFETY: takes an id; the instance was just created.
                unsafe { calls.cann.try_aclshmemx_instance_ctx_set(spec.instance) }?;
            }
            let malloc = calls.cann.aclshmem_malloc().map_err(HwError::from)?;
            let ptr = calls.cann.aclshmem_ptr().map_err(HwError::from)?;
            // SAFETY: a collective allocation every PE makes with the same size.
            let block = unsafe { malloc(wanted) };
            if block.is_null() {
                return Err(TransportError::Device(format!(
                    "aclshmem_malloc({wanted}) returned NULL: CANN's heap of {area} bytes has no room"
                )));
            }
            let base = (block as u64).next_multiple_of(SEGMENT_ALIGN as u64) as *mut c_void;
            let mut bases = Vec::with_capacity(spec.n_pes as usize);
            for pe in 0..spec.n_pes {
                // SAFETY: `base` is symmetric memory of the active instance.
                let p = unsafe { ptr(base, pe as i32) };
                if p.is_null() {
                    return Err(TransportError::Attach(format!(
                        "CANN SHMEM gives no address of PE {pe}'s heap (aclshmem_ptr)"
                    )));
                }
                bases.push(p as u64);
            }
            (base as u64, bases)
        };
        drop(calls);
        let mut streams = [std::ptr::null_mut::<c_void>(); 2];
        for s in &mut streams {
            // SAFETY: writes one aclrtStream.
            unsafe { rt.acl.try_aclrt_create_stream(s) }?;
        }
        let caps = CAPABILITIES.restrict(spec.caps);
        Ok(HwTransport {
            rt,
            instance: spec.instance,
            my_pe: spec.my_pe,
            n_pes: spec.n_pes,
            size: spec.size,
            base,
            bases,
            stage: base + spec.size as u64,
            data: StreamHandle(streams[0] as usize),
            barrier_stream: StreamHandle(streams[1] as usize),
            io: Mutex::new(Io::default()),
            ended: AtomicBool::new(false),
            profile: Profile {
                name: "hw",
                limits: Limits::CANN,
                caps,
                strict: false,
            },
            watchdog: spec.watchdog,
        })
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn my_pe(&self) -> Pe {
        self.my_pe
    }

    fn n_pes(&self) -> u32 {
        self.n_pes
    }

    fn segment_size(&self) -> usize {
        self.size
    }

    fn segment_base(&self, pe: Pe) -> u64 {
        self.bases[pe as usize]
    }

    fn kernel_mapping(&self, _pe: Pe) -> Option<std::ptr::NonNull<u8>> {
        None
    }

    fn watchdog(&self) -> &dyn Watchdog {
        &*self.watchdog
    }

    fn new_queue(&self) -> HwQueue {
        HwQueue::Own
    }

    fn stream_queue(&self, stream: &DeviceStream) -> Result<HwQueue, TransportError> {
        Ok(HwQueue::Stream(stream.clone()))
    }

    fn register_device(&self, _addr: u64, _len: usize) -> Result<(), TransportError> {
        Ok(())
    }

    fn deregister_device(&self, _addr: u64, _len: usize) -> Result<(), TransportError> {
        Ok(())
    }

    unsafe fn put(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_put(&mut p, pe, dst, src)?;
        self.finish(&mut p, true)
    }

    unsafe fn get(
        &self,
        q: &HwQueue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_get(&mut p, pe, src, dst)?;
        self.finish(&mut p, false)
    }

    unsafe fn put_nbi(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_put(&mut p, pe, dst, src)
    }

    unsafe fn get_nbi(
        &self,
        q: &HwQueue,
        pe: Pe,
        src: usize,
        dst: LocalMut<'_>,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_get(&mut p, pe, src, dst)
    }

    unsafe fn iput(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: Strided,
        src: Local<'_>,
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        let (remote, near) = (|i| dst.at(i), |i| src_layout.at(i));
        match self.near(src) {
            Near::Host(bytes) => {
                // Packed into the staging area, as many elements at a time as fit.
                let per = (STAGE / elem_size.max(1)).max(1);
                let mut packed = Vec::with_capacity(per.min(nelems) * elem_size);
                for first in (0..nelems).step_by(per) {
                    let last = (first + per).min(nelems);
                    packed.clear();
                    for i in first..last {
                        packed.extend_from_slice(&bytes[near(i)..near(i) + elem_size]);
                    }
                    let at = self.stage_bytes(&mut p, packed.len())?;
                    self.h2d(at, &packed)?;
                    for i in first..last {
                        let from = at + ((i - first) * elem_size) as u64;
                        self.put_device(&mut p, pe, remote(i), from, elem_size)?;
                    }
                }
            }
            Near::Device(addr) => {
                for i in 0..nelems {
                    let from = addr + near(i) as u64;
                    self.put_device(&mut p, pe, remote(i), from, elem_size)?;
                }
            }
        }
        self.finish(&mut p, true)
    }

    unsafe fn iget(
        &self,
        q: &HwQueue,
        pe: Pe,
        src: Strided,
        dst: LocalMut<'_>,
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        let (remote, near) = (|i| src.at(i), |i| dst_layout.at(i));
        match self.near_mut(dst) {
            Near::Host(bytes) => {
                let per = (STAGE / elem_size.max(1)).max(1);
                let mut packed = vec![0u8; per.min(nelems) * elem_size];
                for first in (0..nelems).step_by(per) {
                    let last = (first + per).min(nelems);
                    let len = (last - first) * elem_size;
                    let at = self.stage_bytes(&mut p, len)?;
                    for i in first..last {
                        let to = at + ((i - first) * elem_size) as u64;
                        self.get_device(&mut p, pe, remote(i), to, elem_size)?;
                    }
                    self.sync(&mut p)?;
                    self.d2h(&mut packed[..len], at)?;
                    for i in first..last {
                        let k = (i - first) * elem_size;
                        bytes[near(i)..near(i) + elem_size]
                            .copy_from_slice(&packed[k..k + elem_size]);
                    }
                }
            }
            Near::Device(addr) => {
                for i in 0..nelems {
                    self.get_device(&mut p, pe, remote(i), addr + near(i) as u64, elem_size)?;
                }
            }
        }
        self.finish(&mut p, false)
    }

    unsafe fn fill(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        let mut done = 0;
        while done < len {
            let n = (len - done).min(STAGE);
            let at = self.stage_bytes(&mut p, n)?;
            // SAFETY: `n` bytes of the staging area.
            unsafe {
                self.rt
                    .acl
                    .try_aclrt_memset(at as *mut c_void, n, i32::from(byte), n)
            }?;
            self.put_device(&mut p, pe, dst + done, at, n)?;
            done += n;
        }
        self.finish(&mut p, true)
    }

    unsafe fn signal(&self, q: &HwQueue, pe: Pe, sig: Signal) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_signal(&mut p, pe, sig)?;
        self.finish(&mut p, true)
    }

    unsafe fn put_signal(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        // CANN's quiet between them makes the signal arrive after the data.
        self.enqueue_put(&mut p, pe, dst, src)?;
        self.order(&mut p)?;
        self.enqueue_signal(&mut p, pe, sig)?;
        self.finish(&mut p, true)
    }

    unsafe fn put_signal_nbi(
        &self,
        q: &HwQueue,
        pe: Pe,
        dst: usize,
        src: Local<'_>,
        sig: Signal,
    ) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.enqueue_put(&mut p, pe, dst, src)?;
        self.order(&mut p)?;
        self.enqueue_signal(&mut p, pe, sig)
    }

    fn finalize(&self, exchange: &mut dyn Exchange) -> Result<(), TransportError> {
        self.end_instance(Some(exchange))
    }

    fn fence(&self, q: &HwQueue) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        self.order(&mut p)
    }

    fn quiet(&self, q: &HwQueue) -> Result<(), TransportError> {
        let mut p = self.path(q)?;
        if p.own {
            return self.complete(&mut p);
        }
        // A program's stream: CANN's quiet on it, then its synchronisation.
        self.order(&mut p)?;
        // SAFETY: a live stream (the queue's contract).
        unsafe { self.rt.acl.try_aclrt_synchronize_stream(p.stream.raw()) }?;
        Ok(())
    }

    unsafe fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError> {
        if self.ended.load(Ordering::Acquire) {
            // CANN's heap went with its instance.
            return Err(TransportError::Finalized {
                instance: self.instance,
            });
        }
        self.rt.bind()?;
        let mut b = [0u8; 8];
        self.d2h(&mut b[..width.bytes()], self.base + offset as u64)?;
        Ok(word_of(&b, width))
    }

    unsafe fn wait_until(
        &self,
        q: &HwQueue,
        w: WaitWord,
        what: &dyn fmt::Display,
    ) -> Result<Option<u64>, TransportError> {
        let HwQueue::Stream(s) = q else {
            // SAFETY: forwarded from this function's contract.
            return unsafe { sync::wait_word(self, w, what) }.map(Some);
        };
        // Enqueued on the program's stream: CANN's wait takes a 32-bit signal word.
        if !matches!(w.kind, ScalarKind::I32 | ScalarKind::U32) {
            return Err(self.unsupported(&format!(
                "a wait on a program's stream for a {:?} word (CANN's signal words are 32-bit)",
                w.kind
            )));
        }
        self.rt.bind()?;
        let calls = self.rt.cann(self.instance)?;
        let f = calls
            .cann
            .aclshmemx_signal_wait_until_on_stream()
            .map_err(HwError::from)?;
        // SAFETY: an aligned word of the segment (the core checked it), a live stream.
        unsafe {
            f(
                (self.base + w.offset as u64) as *mut i32,
                w.cmp as i32,
                w.value as u32 as i32,
                s.stream().raw(),
            )
        };
        Ok(None)
    }

    fn wait_local(
        &self,
        _watch: Watch,
        what: &dyn fmt::Display,
        pred: &mut dyn FnMut() -> Result<bool, TransportError>,
    ) -> Result<(), TransportError> {
        self.flush()?;
        sync::poll(&*self.watchdog, what, pred)
    }

    unsafe fn barrier(
        &self,
        q: &HwQueue,
        b: &BarrierSpec,
        what: &dyn fmt::Display,
    ) -> Result<(), TransportError> {
        if b.size <= 1 {
            return Ok(());
        }
        if let HwQueue::Stream(s) = q {
            // Enqueued on the program's stream: CANN's barrier of the instance, for the world.
            if !b.world {
                return Err(self.unsupported(
                    "a barrier of a team other than the world on a program's stream",
                ));
            }
            self.rt.bind()?;
            let calls = self.rt.cann(self.instance)?;
            let f = calls
                .cann
                .aclshmemx_barrier_all_on_stream()
                .map_err(HwError::from)?;
            // SAFETY: a live stream (the queue's contract).
            unsafe { f(s.stream().raw()) };
            return Ok(());
        }
        self.flush()?;
        if b.world {
            self.barrier_all(what)
        } else {
            self.tree_barrier(b, what)
        }
    }
}

impl Drop for HwTransport {
    fn drop(&mut self) {
        // Errors cannot be returned from here; the instance is gone either way.
        let _ = self.end_instance(None);
    }
}
