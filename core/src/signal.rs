//! Signals: a put whose arrival is announced by an update of a signal word at the target, the
//! updates alone, and waiting for a signal word.
//!
//! CANN's signal words are 32-bit (`int32_t *sig_addr`), OpenSHMEM's 64-bit (`uint64_t`):
//! both are [`SignalWord`]s. A signal update is `SET` (store the value) or `ADD` (add it
//! atomically), and it becomes visible only after the data of its put.

use bytemuck::Pod;
use shmem_backend::{Cmp, Pe, Scalar, Signal, SignalOp, Watch, Width};

use crate::error::{Error, Result};
use crate::rma::{NbiScope, logged};
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
        logged(
            "put_signal",
            (|| {
                if src.len() != self.len {
                    return Err(Error::InvalidParam(format!(
                        "put_signal: the source has {} elements, the view {}",
                        src.len(),
                        self.len
                    )));
                }
                let pe = self.ctx.target(pe)?;
                self.ctx
                    .inst
                    .check_heap_range(self.offset, self.byte_len())?;
                let s = signal(&sig, value, op);
                Ok(self.ctx.inst.transport().put_signal(
                    self.ctx.queue(),
                    pe,
                    self.offset,
                    bytemuck::cast_slice(src),
                    s,
                )?)
            })(),
        )
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
        logged(
            "put_signal_nbi",
            (|| {
                if src.len() != dst.len() {
                    return Err(Error::InvalidParam(format!(
                        "put_signal_nbi: the source has {} elements, the view {}",
                        src.len(),
                        dst.len()
                    )));
                }
                let pe = self.ctx.target(pe)?;
                self.ctx.inst.check_heap_range(dst.offset, dst.byte_len())?;
                let bytes: &'env [u8] = bytemuck::cast_slice(src);
                // SAFETY: `src` is borrowed for 'env, which outlives the scope, and the scope quiets
                // before it ends.
                unsafe {
                    self.ctx.inst.transport().put_signal_nbi(
                        self.ctx.queue(),
                        pe,
                        dst.offset,
                        bytes.as_ptr(),
                        bytes.len(),
                        signal(&sig, value, op),
                    )
                }?;
                Ok(())
            })(),
        )
    }
}

impl<S: SignalWord> SymElem<'_, S> {
    /// Updates this signal word on `pe` with `op` and `value`, without data
    /// (`aclshmemx_signal_op`, OpenSHMEM 1.6's `shmem_signal_set`/`shmem_signal_add`).
    pub fn signal_op(&self, value: S, op: SignalOp, pe: Pe) -> Result<()> {
        logged(
            "signal_op",
            (|| {
                let pe = self.ctx.target(pe)?;
                Ok(self.ctx.inst.transport().signal(
                    self.ctx.queue(),
                    pe,
                    signal(self, value, op),
                )?)
            })(),
        )
    }

    /// The current value of this PE's signal word (`shmem_signal_fetch`).
    pub fn signal_fetch(&self) -> Result<S> {
        logged(
            "signal_fetch",
            (|| {
                self.ctx.inst.beyond_cann("signal_fetch")?;
                self.ctx.usable()?;
                Ok(S::from_bits(
                    self.ctx.inst.transport().load(self.offset, S::WIDTH)?,
                ))
            })(),
        )
    }

    /// Waits until this PE's signal word compares to `value` with `cmp`, and returns the value
    /// that satisfied it (`shmem_signal_wait_until`, `aclshmem_signal_wait_until`).
    pub fn signal_wait_until(&self, cmp: Cmp, value: S) -> Result<S> {
        logged(
            "signal_wait_until",
            (|| {
                self.ctx.usable()?;
                let t = self.ctx.inst.transport();
                let mut seen = 0;
                let mut failed = None;
                let off = self.offset;
                let want = value.to_bits();
                self.ctx
                    .inst
                    .with_wait_ctl("a signal", |ctl| {
                        t.wait_local(
                            Watch::word(off, S::WIDTH),
                            &mut || match t.load(off, S::WIDTH) {
                                Ok(v) => {
                                    seen = v;
                                    S::KIND.compare(cmp, v, want)
                                }
                                // Ends the wait; the error is returned below.
                                Err(e) => {
                                    failed = Some(e);
                                    true
                                }
                            },
                            ctl,
                        )
                    })
                    .map_err(|e| self.ctx.inst.fail(e.into()))?;
                if let Some(e) = failed {
                    return Err(e.into());
                }
                Ok(S::from_bits(seen))
            })(),
        )
    }
}
