//! [`SimTransport`]: the [`Transport`] of the simulator.

use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{Ordering, fence};

use shmem_backend::{
    AmoOp, Capabilities, Exchange, Limits, Pe, Profile, SegmentSpec, Signal, Strided, Transport,
    TransportError, WaitCtl, Watch, Width,
};

use crate::access;
use crate::fd_exchange::share_objects;
use crate::segment::{Geometry, LocalObject, Segments};
use crate::settings::{SimSettings, WaitPhases, local_pes, usable_cpus};
use crate::strict::{Deferred, StrictQueue};
use crate::wait::wait_until;

/// The shared-memory transport: one process per PE, every segment mapped into every process, so
/// a put is a `memcpy` into the target's mapping and an atomic is a CPU atomic on it.
///
/// ```
/// use shmem_backend::{Exchange, SegmentSpec, Transport, TransportError};
/// use shmem_sim::SimTransport;
///
/// // A single-PE instance needs no peers; its exchange is never called.
/// struct Alone;
/// impl Exchange for Alone {
///     fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>, TransportError> { Ok(vec![mine.to_vec()]) }
///     fn barrier(&mut self) -> Result<(), TransportError> { Ok(()) }
/// }
/// let spec = SegmentSpec { my_pe: 0, n_pes: 1, size: 1 << 20, label: "doc".into(), timeout: std::time::Duration::from_secs(5) };
/// let t = SimTransport::open(&spec, &mut Alone)?;
/// let q = t.new_queue();
/// t.put(&q, 0, 64, b"hello")?;
/// let mut back = [0u8; 5];
/// t.get(&q, 0, 64, &mut back)?;
/// assert_eq!(&back, b"hello");
/// assert!(t.put(&q, 0, (1 << 20) - 2, b"hello").is_err()); // past the end: refused, nothing written
/// # Ok::<(), TransportError>(())
/// ```
#[derive(Debug)]
pub struct SimTransport {
    segments: Segments,
    my_pe: Pe,
    n_pes: u32,
    profile: Profile,
    phases: WaitPhases,
    settings: SimSettings,
    next_queue: std::sync::atomic::AtomicU64,
}

/// A completion queue of the simulator. Outside strict mode every operation completes when it is
/// issued and the queue holds nothing.
#[derive(Debug)]
pub struct SimQueue {
    strict: Option<Mutex<StrictQueue>>,
}

impl SimTransport {
    /// Opens the segment with explicit settings instead of the environment's.
    pub fn open_with(
        spec: &SegmentSpec,
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
        let geometry = Geometry::new(spec.size)?;
        let object = LocalObject::create(&spec.label, &geometry)?;
        let segments = Segments::reserve(geometry, spec.n_pes)?;
        segments.map(spec.my_pe, &object.fd)?;
        if spec.n_pes > 1 {
            let peers = share_objects(
                spec.my_pe,
                spec.n_pes,
                &object.fd,
                geometry.object_len as u64,
                exchange,
                spec.timeout,
            )?;
            for (pe, fd) in peers.into_iter().enumerate() {
                if let Some(fd) = fd {
                    segments.map(pe as Pe, fd)?;
                }
            }
            // Nobody starts using the segments before everyone has mapped them all.
            exchange.barrier()?;
        }
        // The mappings keep the objects alive; no descriptor stays open.
        drop(object);
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
        Ok(SimTransport {
            segments,
            my_pe: spec.my_pe,
            n_pes: spec.n_pes,
            profile: Profile {
                name: "sim",
                limits: Limits::CANN,
                caps: Capabilities {
                    load_store: true,
                    host_atomics: true,
                    strict_completion: settings.strict,
                },
            },
            phases,
            settings,
            next_queue: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The settings the transport was opened with.
    pub fn settings(&self) -> &SimSettings {
        &self.settings
    }

    fn check_pe(&self, pe: Pe) -> Result<(), TransportError> {
        if pe < self.n_pes {
            Ok(())
        } else {
            Err(TransportError::InvalidPe {
                pe,
                n_pes: self.n_pes,
            })
        }
    }

    /// The address of `len` bytes at `offset` of `pe`'s segment, if they lie inside it.
    fn addr(&self, pe: Pe, offset: usize, len: usize) -> Result<*mut u8, TransportError> {
        self.check_pe(pe)?;
        let size = self.segments.geometry().heap;
        match offset.checked_add(len) {
            Some(end) if end <= size => {
                // SAFETY: `offset + len <= size <= stride`, so the address stays inside `pe`'s
                // mapped slot.
                Ok(unsafe { self.segments.slot(pe).as_ptr().add(offset) })
            }
            _ => Err(TransportError::OutOfBounds {
                pe,
                offset: offset as u64,
                len: len as u64,
                size: size as u64,
            }),
        }
    }

    /// The address of an aligned `width` word at `offset` of `pe`'s segment.
    fn word(&self, pe: Pe, offset: usize, width: Width) -> Result<*mut u8, TransportError> {
        if !offset.is_multiple_of(width.bytes()) {
            return Err(TransportError::Misaligned {
                offset: offset as u64,
                width: width.bytes(),
            });
        }
        self.addr(pe, offset, width.bytes())
    }

    /// The address of element 0 of a strided access to `pe`, after checking its whole span.
    fn strided(
        &self,
        pe: Pe,
        at: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<*mut u8, TransportError> {
        self.check_pe(pe)?;
        let size = self.segments.geometry().heap as u64;
        match at.span(elem_size, nelems) {
            Some((lo, hi)) if hi <= size => {
                debug_assert!(lo <= at.first as u64);
                // SAFETY: element 0 starts inside the checked span, which lies in the segment.
                Ok(unsafe { self.segments.slot(pe).as_ptr().add(at.first) })
            }
            span => Err(TransportError::OutOfBounds {
                pe,
                offset: span.map_or(at.first as u64, |s| s.0),
                len: span.map_or(u64::MAX, |(lo, hi)| hi - lo),
                size,
            }),
        }
    }

    fn check_local(
        buf_len: usize,
        at: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        match at.span(elem_size, nelems) {
            Some((_, hi)) if hi <= buf_len as u64 => Ok(()),
            span => Err(TransportError::LocalBuffer {
                len: buf_len,
                needed: span.map_or(u64::MAX, |s| s.1),
            }),
        }
    }

    fn signal_word(&self, pe: Pe, sig: &Signal) -> Result<*mut u8, TransportError> {
        self.word(pe, sig.offset, sig.width)
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
            } => {
                // SAFETY: `dst` was bounds-checked against `pe`'s mapping when the operation was
                // issued; `src` is valid per the issuing call's contract.
                unsafe { access::copy(dst, src, len) };
                let (mut lo, mut hi) = (dst as usize, dst as usize + len);
                if let Some((sig, width, op, value)) = signal {
                    // SAFETY: checked and aligned when issued; the release store orders it
                    // after the data.
                    unsafe { access::signal(sig, width, op, value) };
                    lo = lo.min(sig as usize);
                    hi = hi.max(sig as usize + width.bytes());
                }
                self.notify(pe, lo as *const u8, hi - lo);
            }
            Deferred::Get { dst, src, len } => {
                // SAFETY: `src` was bounds-checked when issued; `dst` is valid per the contract.
                unsafe { access::copy(dst, src, len) };
            }
            Deferred::Amo {
                pe,
                addr,
                width,
                op,
                fetch,
            } => {
                // SAFETY: `addr` was bounds-checked and aligned when issued.
                let old = unsafe { access::amo(addr, width, op) };
                if !fetch.is_null() {
                    // SAFETY: a non-null `fetch` is valid per `atomic_nbi`'s contract.
                    unsafe { access::write_value(fetch, width, old) };
                }
                if op.writes() {
                    self.notify(pe, addr, width.bytes());
                }
            }
        }
    }

    /// Wakes `pe`'s sleepers that watch the `len` bytes at `addr` (an address in its slot).
    #[inline]
    fn notify(&self, pe: Pe, addr: *const u8, len: usize) {
        let offset = addr as usize - self.segments.slot(pe).as_ptr() as usize;
        self.segments.control(pe).notify(offset, len);
    }

    /// Issues a non-blocking operation: performed now, or held in strict mode.
    fn issue(&self, q: &SimQueue, pe: Pe, op: Deferred) {
        match &q.strict {
            None => self.execute(op),
            Some(m) => lock(m).push(pe, op, &mut |d| self.execute(d)),
        }
    }

    /// Before a blocking update or atomic on `pe`: completes what an earlier fence ordered
    /// ahead of it.
    fn before_blocking(&self, q: &SimQueue, pe: Pe) {
        if let Some(m) = &q.strict {
            lock(m).complete_fenced(pe, &mut |d| self.execute(d));
        }
    }
}

fn lock(m: &Mutex<StrictQueue>) -> std::sync::MutexGuard<'_, StrictQueue> {
    // A panic while holding the queue cannot leave it inconsistent enough to matter: continue.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Transport for SimTransport {
    type Queue = SimQueue;

    fn open(spec: &SegmentSpec, exchange: &mut dyn Exchange) -> Result<Self, TransportError> {
        let settings =
            SimSettings::from_env().map_err(|e| TransportError::Attach(e.to_string()))?;
        SimTransport::open_with(spec, exchange, settings)
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
        self.segments.geometry().heap
    }

    fn segment_ptr(&self, pe: Pe) -> Option<NonNull<u8>> {
        (pe < self.n_pes).then(|| self.segments.slot(pe))
    }

    fn new_queue(&self) -> SimQueue {
        let strict = self.settings.strict.then(|| {
            let n = self.next_queue.fetch_add(1, Ordering::Relaxed);
            let seed = match self.settings.strict_seed {
                Some(s) => s ^ (u64::from(self.my_pe) << 32) ^ n,
                None => rand::random(),
            };
            tracing::debug!(pe = self.my_pe, seed, "strict completion queue");
            Mutex::new(StrictQueue::new(seed, self.settings.strict_early))
        });
        SimQueue { strict }
    }

    fn put(&self, q: &SimQueue, pe: Pe, dst: usize, src: &[u8]) -> Result<(), TransportError> {
        let to = self.addr(pe, dst, src.len())?;
        self.before_blocking(q, pe);
        self.execute(Deferred::Put {
            pe,
            dst: to,
            src: src.as_ptr(),
            len: src.len(),
            signal: None,
        });
        Ok(())
    }

    fn get(&self, _q: &SimQueue, pe: Pe, src: usize, dst: &mut [u8]) -> Result<(), TransportError> {
        let from = self.addr(pe, src, dst.len())?;
        self.execute(Deferred::Get {
            dst: dst.as_mut_ptr(),
            src: from,
            len: dst.len(),
        });
        Ok(())
    }

    fn fill(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let to = self.addr(pe, dst, len)?;
        self.before_blocking(q, pe);
        // SAFETY: `to..to+len` was bounds-checked against `pe`'s mapping.
        unsafe { std::ptr::write_bytes(to, byte, len) };
        self.notify(pe, to, len);
        Ok(())
    }

    unsafe fn put_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let to = self.addr(pe, dst, len)?;
        self.issue(
            q,
            pe,
            Deferred::Put {
                pe,
                dst: to,
                src,
                len,
                signal: None,
            },
        );
        Ok(())
    }

    unsafe fn get_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        let from = self.addr(pe, src, len)?;
        self.issue(
            q,
            pe,
            Deferred::Get {
                dst,
                src: from,
                len,
            },
        );
        Ok(())
    }

    fn iput(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: Strided,
        src: &[u8],
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        let to = self.strided(pe, dst, elem_size, nelems)?;
        Self::check_local(src.len(), src_layout, elem_size, nelems)?;
        self.before_blocking(q, pe);
        for i in 0..nelems as isize {
            // SAFETY: both spans were checked, so every element lies inside its mapping/buffer.
            unsafe {
                let d = to.offset(i * dst.stride);
                let s = src
                    .as_ptr()
                    .add(src_layout.first)
                    .offset(i * src_layout.stride);
                access::copy(d, s, elem_size);
            }
        }
        if let Some((lo, hi)) = dst.span(elem_size, nelems) {
            self.segments
                .control(pe)
                .notify(lo as usize, (hi - lo) as usize);
        }
        Ok(())
    }

    fn iget(
        &self,
        _q: &SimQueue,
        pe: Pe,
        src: Strided,
        dst: &mut [u8],
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        let from = self.strided(pe, src, elem_size, nelems)?;
        Self::check_local(dst.len(), dst_layout, elem_size, nelems)?;
        for i in 0..nelems as isize {
            // SAFETY: both spans were checked, so every element lies inside its mapping/buffer.
            unsafe {
                let s = from.offset(i * src.stride);
                let d = dst
                    .as_mut_ptr()
                    .add(dst_layout.first)
                    .offset(i * dst_layout.stride);
                access::copy(d, s, elem_size);
            }
        }
        Ok(())
    }

    fn atomic(
        &self,
        q: &SimQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError> {
        let addr = self.word(pe, offset, width)?;
        // Fence orders every blocking atomic behind the operations before it, the fetch-only
        // ones included (OpenSHMEM's ordering table lists blocking AMOs as fenced).
        self.before_blocking(q, pe);
        // SAFETY: bounds-checked and aligned above.
        let old = unsafe { access::amo(addr, width, op) };
        if op.writes() {
            self.notify(pe, addr, width.bytes());
        }
        Ok(old)
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
        let addr = self.word(pe, offset, width)?;
        self.issue(
            q,
            pe,
            Deferred::Amo {
                pe,
                addr,
                width,
                op,
                fetch,
            },
        );
        Ok(())
    }

    fn signal(&self, q: &SimQueue, pe: Pe, sig: Signal) -> Result<(), TransportError> {
        let addr = self.signal_word(pe, &sig)?;
        self.before_blocking(q, pe);
        // SAFETY: bounds-checked and aligned above.
        unsafe { access::signal(addr, sig.width, sig.op, sig.value) };
        self.notify(pe, addr, sig.width.bytes());
        Ok(())
    }

    fn put_signal(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: &[u8],
        sig: Signal,
    ) -> Result<(), TransportError> {
        let to = self.addr(pe, dst, src.len())?;
        let s = self.signal_word(pe, &sig)?;
        self.before_blocking(q, pe);
        self.execute(Deferred::Put {
            pe,
            dst: to,
            src: src.as_ptr(),
            len: src.len(),
            signal: Some((s, sig.width, sig.op, sig.value)),
        });
        Ok(())
    }

    unsafe fn put_signal_nbi(
        &self,
        q: &SimQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
        sig: Signal,
    ) -> Result<(), TransportError> {
        let to = self.addr(pe, dst, len)?;
        let s = self.signal_word(pe, &sig)?;
        self.issue(
            q,
            pe,
            Deferred::Put {
                pe,
                dst: to,
                src,
                len,
                signal: Some((s, sig.width, sig.op, sig.value)),
            },
        );
        Ok(())
    }

    fn fence(&self, q: &SimQueue) -> Result<(), TransportError> {
        match &q.strict {
            None => fence(Ordering::Release),
            Some(m) => lock(m).fence(),
        }
        Ok(())
    }

    fn quiet(&self, q: &SimQueue) -> Result<(), TransportError> {
        if let Some(m) = &q.strict {
            lock(m).complete_all(&mut |d| self.execute(d));
        }
        fence(Ordering::SeqCst);
        Ok(())
    }

    fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError> {
        let addr = self.word(self.my_pe, offset, width)?;
        // SAFETY: bounds-checked and aligned above.
        Ok(unsafe { access::load(addr, width) })
    }

    fn wait_local(
        &self,
        watch: Watch,
        pred: &mut dyn FnMut() -> bool,
        ctl: &WaitCtl<'_>,
    ) -> Result<(), TransportError> {
        wait_until(
            self.segments.control(self.my_pe),
            watch,
            self.phases,
            pred,
            ctl,
        )
    }
}
