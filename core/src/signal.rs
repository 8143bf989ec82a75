//! Signals: a put whose arrival is announced by an update of a signal word at the target, the
//! updates alone, and waiting for a signal word.
//!
//! CANN's signal words are 32-bit (`int32_t *sig_addr`), OpenSHMEM's 64-bit (`uint64_t`):
//! both are [`SignalWord`]s. A signal update is `SET` (store the value) or `ADD` (add it
//! atomically), and it becomes visible only after the data of its put.

use bytemuck::Pod;
use shmem_backend::{Cmp, Local, Pe, Scalar, Signal, SignalOp, WaitWord, Width};

use crate::error::{Error, Result};
use crate::rma::NbiScope;
use crate::sym::{SymElem, SymSlice};

mod sealed {
    pub trait Sealed {}
}

/// A signal word type: `u64` (OpenSHMEM), `i32` and `u32` (CANN).
pub trait SignalWord: Pod + Scalar + sealed::Sealed {
    /// The width of the word.
    const WIDTH: Width;
}

impl sealed::Sealed for u64 {}
impl SignalWord for u64 {
    const WIDTH: Width = Width::W64;
}
impl sealed::Sealed for i32 {}
impl SignalWord for i32 {
    const WIDTH: Width = Width::W32;
}
impl sealed::Sealed for u32 {}
impl SignalWord for u32 {
    const WIDTH: Width = Width::W32;
}

fn signal<S: SignalWord>(sig: &SymElem<'_, S>, value: S, op: SignalOp) -> Signal {
    Signal {
        offset: sig.offset,
        width: S::WIDTH,
        op,
        value: value.to_bits(),
    }
}

impl<T: Pod> SymSlice<'_, T> {
    /// Puts `src` into this view on `pe`, then updates `sig` on `pe` with `op` and `value`;
    /// the signal is visible only after the data (`shmem_put_signal`,
    /// `aclshmem_<T>_put_signal`).
    pub fn put_signal<S: SignalWord>(
        &self,
        src: &[T],
        sig: SymElem<'_, S>,
        value: S,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        let (pe, s) = self.check_put_signal("put_signal", src.len(), &sig, value, op, pe)?;
        let src = Local::Host(bytemuck::cast_slice(src));
        // SAFETY: the PE, the data range and the signal word were checked above.
        unsafe {
            self.ctx
                .inst
                .fabric()
                .put_signal(self.ctx.queue(), pe, self.offset, src, s)
        }
    }

    /// [`SymSlice::put_signal`] from symmetric memory: this PE's copy of `src` goes to PE
    /// `pe`'s copy of this view, read when the operation runs (in stream order on a stream
    /// context), then `sig` is updated (`aclshmem_<T>_put_signal` as CANN programs call it,
    /// whose kernels read global memory).
    pub fn put_signal_from<S: SignalWord>(
        &self,
        src: SymSlice<'_, T>,
        sig: SymElem<'_, S>,
        value: S,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        let (pe, s) = self.check_put_signal("put_signal", src.len, &sig, value, op, pe)?;
        self.ctx.inst.owns(src.home)?;
        self.ctx
            .inst
            .check_view(src.home, src.offset, src.byte_len())?;
        let src = Local::Segment {
            offset: src.offset,
            len: src.byte_len(),
        };
        // SAFETY: the PE, both ranges and the signal word were checked above; a segment source
        // needs no lifetime beyond the instance's.
        unsafe {
            self.ctx
                .inst
                .fabric()
                .put_signal(self.ctx.queue(), pe, self.offset, src, s)
        }
    }

    /// Checks a put-with-signal into this view and returns the instance PE and the signal.
    fn check_put_signal<S: SignalWord>(
        &self,
        what: &str,
        src_len: usize,
        sig: &SymElem<'_, S>,
        value: S,
        op: SignalOp,
        pe: Pe,
    ) -> Result<(Pe, Signal)> {
        if src_len != self.len {
            return Err(Error::InvalidParam(format!(
                "{what}: the source has {src_len} elements, the view {}",
                self.len
            )));
        }
        let pe = self.ctx.target(pe)?;
        self.ctx
            .inst
            .check_view(self.home, self.offset, self.byte_len())?;
        sig.check_word_in(self.ctx.inst, S::WIDTH)?;
        Ok((pe, signal(sig, value, op)))
    }
}

impl<'env> NbiScope<'env> {
    /// Non-blocking [`SymSlice::put_signal`]: `src` may be read until the scope ends.
    pub fn put_signal_nbi<T: Pod, S: SignalWord>(
        &self,
        dst: SymSlice<'_, T>,
        src: &'env [T],
        sig: SymElem<'_, S>,
        value: S,
        op: SignalOp,
        pe: Pe,
    ) -> Result<()> {
        let dst = dst.in_ctx(self.ctx);
        let (pe, s) = dst.check_put_signal("put_signal_nbi", src.len(), &sig, value, op, pe)?;
        let src = Local::Host(bytemuck::cast_slice(src));
        // SAFETY: checked above; `src` is borrowed for 'env, which outlives the scope, and the
        // scope quiets before it ends.
        unsafe {
            self.ctx
                .inst
                .fabric()
                .put_signal_nbi(self.ctx.queue(), pe, dst.offset, src, s)
        }
    }
}

impl<S: SignalWord> SymElem<'_, S> {
    /// Updates this signal word on `pe` with `op` and `value`, without data
    /// (`aclshmemx_signal_op`, OpenSHMEM 1.6's `shmem_signal_set`/`shmem_signal_add`).
    pub fn signal_op(&self, value: S, op: SignalOp, pe: Pe) -> Result<()> {
        let pe = self.ctx.target(pe)?;
        self.check_word(S::WIDTH)?;
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        unsafe {
            self.ctx
                .inst
                .fabric()
                .signal(self.ctx.queue(), pe, signal(self, value, op))
        }
    }

    /// The current value of this PE's signal word (`shmem_signal_fetch`).
    pub fn signal_fetch(&self) -> Result<S> {
        self.ctx.usable()?;
        self.check_word(S::WIDTH)?;
        // SAFETY: an aligned word inside the heap (checked above).
        let v = unsafe { self.ctx.inst.fabric().load(self.offset, S::WIDTH) }?;
        Ok(S::from_bits(v))
    }

    /// Waits on the host until this PE's signal word compares to `value` with `cmp`, and
    /// returns the value that satisfied it (`shmem_signal_wait_until`,
    /// `aclshmem_signal_wait_until`).
    pub fn signal_wait_until(&self, cmp: Cmp, value: S) -> Result<S> {
        self.ctx.usable()?;
        self.check_word(S::WIDTH)?;
        let inst = self.ctx.inst;
        let w = self.wait_word(cmp, value);
        // SAFETY: an aligned word inside the heap (checked above); a plain queue waits here.
        let seen = unsafe {
            inst.fabric()
                .wait_until(&inst.inner.sync_queue, w, &Waiting(&w))
        }
        .map_err(|e| inst.fail(e))?;
        Ok(S::from_bits(seen.unwrap_or(w.value)))
    }

    /// Enqueues a wait until this PE's signal word compares to `value` with `cmp` on the stream
    /// of the element's context: work enqueued after it runs once the signal has come
    /// (`aclshmemx_signal_wait_until_on_stream`). The element's context must be made from a
    /// stream ([`Instance::stream_ctx`](crate::Instance::stream_ctx)).
    pub fn signal_wait_until_on_stream(&self, cmp: Cmp, value: S) -> Result<()> {
        self.ctx.usable()?;
        if !self.ctx.is_stream() {
            return Err(Error::InvalidParam(
                "signal_wait_until_on_stream: the element's context is not made from a stream"
                    .into(),
            ));
        }
        self.check_word(S::WIDTH)?;
        let w = self.wait_word(cmp, value);
        // SAFETY: an aligned word inside the heap (checked above).
        unsafe {
            self.ctx
                .inst
                .fabric()
                .wait_until(self.ctx.queue(), w, &Waiting(&w))
        }
        .map(|_| ())
    }

    fn wait_word(&self, cmp: Cmp, value: S) -> WaitWord {
        WaitWord {
            offset: self.offset,
            kind: S::KIND,
            cmp,
            value: value.to_bits(),
            count: false,
        }
    }
}

/// What a signal wait waits for, for hang reports and timeouts.
struct Waiting<'w>(&'w WaitWord);

impl std::fmt::Display for Waiting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a signal: the {:?} word at heap offset {:#x} to be {:?} {:#x}",
            self.0.kind, self.0.offset, self.0.cmp, self.0.value
        )
    }
}
