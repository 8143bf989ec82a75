//! Remote atomic memory operations on one element of symmetric memory, on PE `pe`.
//!
//! The operations and the types they accept follow OpenSHMEM's tables:
//! - [`AmoType`] (the *extended* types, including `f32` and `f64`): fetch, set, swap;
//! - [`AmoStandard`] (the integer types): also compare-and-swap, fetch-and-increment,
//!   increment, fetch-and-add, add;
//! - [`AmoBitwise`] (the unsigned types and the 32/64-bit signed ones): fetch-and/or/xor and
//!   and/or/xor.
//!
//! On the simulator every operation is a native CPU atomic on the target's mapping (`lock xadd`
//! for add, never a compare-and-swap loop where the CPU has the instruction). CANN's host API
//! has no atomics: a transport without [`Capabilities::host_atomics`](shmem_backend::Capabilities)
//! (the hardware one, and the simulator under `SHMEM_PROFILE=cann`) refuses them with
//! `NOT_SUPPORTED`.
//!
//! ```no_run
//! # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
//! let counter = inst.calloc::<u64>(1)?;
//! let ticket = counter.elem(0).atomic_fetch_inc(0)?;   // on PE 0's copy
//! inst.barrier_all()?;
//! # let _ = ticket; Ok(()) }
//! ```

use bytemuck::Pod;
use shmem_backend::{AmoOp, Pe, Scalar, Width};

use crate::ctx::CtxRef;
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::rma::NbiScope;
use crate::sym::SymElem;

mod sealed {
    pub trait Sealed {}
}

/// A type remote atomics accept (OpenSHMEM's extended AMO types): fetch, set and swap.
pub trait AmoType: Pod + Scalar + sealed::Sealed {
    /// The width of the word.
    const WIDTH: Width;
    /// Whether the type has the standard operations ([`AmoStandard`]).
    const STANDARD: bool;
    /// Whether the type has the bitwise operations ([`AmoBitwise`]).
    const BITWISE: bool;

    /// Whether OpenSHMEM defines `op` on the type.
    #[inline(always)]
    fn allows(op: AmoOp) -> bool {
        match op {
            AmoOp::Fetch | AmoOp::Set(_) | AmoOp::Swap(_) => true,
            AmoOp::CompareSwap { .. } | AmoOp::Add(_) => Self::STANDARD,
            AmoOp::And(_) | AmoOp::Or(_) | AmoOp::Xor(_) => Self::BITWISE,
        }
    }
}

/// An integer type with the standard atomic operations (compare-and-swap, increment, add).
pub trait AmoStandard: AmoType {}

/// A type with the bitwise atomic operations (and, or, xor).
pub trait AmoBitwise: AmoType {}

macro_rules! amo_types {
    ($($t:ty: $w:ident, $standard:literal, $bitwise:literal $(, $extra:ident)*;)*) => {$(
        impl sealed::Sealed for $t {}
        impl AmoType for $t {
            const WIDTH: Width = Width::$w;
            const STANDARD: bool = $standard;
            const BITWISE: bool = $bitwise;
        }
        $(impl $extra for $t {})*
    )*};
}

amo_types! {
    i32: W32, true, true, AmoStandard, AmoBitwise;
    i64: W64, true, true, AmoStandard, AmoBitwise;
    u32: W32, true, true, AmoStandard, AmoBitwise;
    u64: W64, true, true, AmoStandard, AmoBitwise;
    usize: W64, true, true, AmoStandard, AmoBitwise;
    isize: W64, true, false, AmoStandard;
    f32: W32, false, false;
    f64: W64, false, false;
}

impl CtxRef<'_> {
    /// Operation `op` on the element of `T` at the symmetric address `addr` (in the heap, or
    /// in the static data init made symmetric) on PE `pe`, returning the element's previous
    /// value: the C ABI's atomics, which name their target by address, with the address and
    /// the PE checked once. An operation OpenSHMEM does not define on `T` (an add on a
    /// floating-point type) is refused. The typed methods of [`SymElem`] are the same
    /// operations for a target held as a handle.
    #[inline(always)]
    pub fn atomic_at<T: AmoType>(&self, addr: *const T, op: AmoOp, pe: Pe) -> Result<T> {
        if let Some(off) = self.amo_at_once(addr, op, pe) {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            // SAFETY: `amo_at_once` checked the PE and the aligned in-bounds word.
            if let Some(old) = unsafe { f.atomic_at_once(q, pe, off, T::WIDTH, op) } {
                return Ok(T::from_bits(old));
            }
        }
        self.atomic_at_checked(addr, std::hint::black_box(op), pe)
    }

    /// [`CtxRef::atomic_at`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn atomic_at_checked<T: AmoType>(self, addr: *const T, op: AmoOp, pe: Pe) -> Result<T> {
        let (pe, off) = self.amo_target(addr, op, pe)?;
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        let old = unsafe {
            self.inst
                .fabric()
                .atomic(self.queue(), pe, off, T::WIDTH, op)
        }?;
        Ok(T::from_bits(old))
    }

    /// [`CtxRef::atomic_at`] whose previous value is not wanted: it may reach `pe` after it
    /// returns, until the next fence or quiet of the context (as a blocking put).
    #[inline(always)]
    pub fn atomic_post_at<T: AmoType>(&self, addr: *const T, op: AmoOp, pe: Pe) -> Result<()> {
        if let Some(off) = self.amo_at_once(addr, op, pe) {
            let (f, q) = (self.inst.fabric(), self.inst.default_queue());
            // SAFETY: `amo_at_once` checked the PE and the aligned in-bounds word.
            if unsafe { f.atomic_post_at_once(q, pe, off, T::WIDTH, op) } {
                return Ok(());
            }
        }
        self.atomic_post_at_checked(addr, std::hint::black_box(op), pe)
    }

    /// [`CtxRef::atomic_post_at`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn atomic_post_at_checked<T: AmoType>(self, addr: *const T, op: AmoOp, pe: Pe) -> Result<()> {
        let (pe, off) = self.amo_target(addr, op, pe)?;
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        unsafe {
            self.inst
                .fabric()
                .atomic_post(self.queue(), pe, off, T::WIDTH, op)
        }
    }

    /// The heap offset of an atomic's target when the atomic is the common case the data path
    /// handles inline: an operation the type allows, host atomics, the default context of a
    /// live instance, a PE of it, an aligned word in the heap. `None` leaves the call to the
    /// general path, which names what failed.
    #[inline(always)]
    fn amo_at_once<T: AmoType>(&self, addr: *const T, op: AmoOp, pe: Pe) -> Option<usize> {
        let w = T::WIDTH.bytes();
        if !(T::allows(op) && self.inst.inner.hot.caps.host_atomics && self.is_plain_target(pe)) {
            return None;
        }
        self.inst
            .heap_offset_of(addr.cast(), w)
            .filter(|off| off.is_multiple_of(w))
    }

    /// The instance PE and the segment offset of an atomic's target, checked.
    #[inline(always)]
    fn amo_target<T: AmoType>(&self, addr: *const T, op: AmoOp, pe: Pe) -> Result<(Pe, usize)> {
        if !T::allows(op) {
            return Err(undefined_op::<T>(op));
        }
        self.inst
            .require(|c| c.host_atomics, "remote atomics issued by the host")?;
        let pe = self.target(pe)?;
        let w = T::WIDTH.bytes();
        let off = self
            .inst
            .offset_of(addr.cast(), w)
            .ok_or_else(|| crate::sym::not_symmetric(addr.cast(), w))?;
        if !off.is_multiple_of(w) {
            return Err(misaligned(off, w));
        }
        Ok((pe, off))
    }
}

#[cold]
fn undefined_op<T>(op: AmoOp) -> Error {
    Error::InvalidParam(format!(
        "OpenSHMEM defines no atomic {op:?} on {}",
        std::any::type_name::<T>()
    ))
}

const _: () = assert!(
    std::mem::size_of::<usize>() == 8,
    "the AMO width table assumes a 64-bit target"
);

impl<T> SymElem<'_, T> {
    /// Checks that the element is an aligned word of `width` inside the heap of its context's
    /// instance.
    #[inline(always)]
    pub(crate) fn check_word(&self, width: Width) -> Result<()> {
        self.check_word_in(self.ctx.inst, width)
    }

    /// Checks that the element is an aligned word of `width` that may be accessed through
    /// `inst` (the element's own instance, and inside its heap).
    #[inline(always)]
    pub(crate) fn check_word_in(&self, inst: &Instance, width: Width) -> Result<()> {
        let w = width.bytes();
        if !self.offset.is_multiple_of(w) {
            return Err(misaligned(self.offset, w));
        }
        inst.check_view(self.home, self.offset, w)
    }
}

#[cold]
fn misaligned(offset: usize, w: usize) -> Error {
    Error::Misaligned(format!(
        "heap offset {offset:#x} is not aligned to the {w}-byte width of the operation"
    ))
}

impl<T: AmoType> SymElem<'_, T> {
    // Always inlined: the operation is a constant at every call site, so the transport's
    // `match` on it folds away.
    #[inline(always)]
    fn amo(&self, pe: Pe, op: AmoOp) -> Result<T> {
        if self.at_once(pe) {
            let (f, q) = (self.ctx.inst.fabric(), self.ctx.inst.default_queue());
            // SAFETY: `at_once` checked the PE and the aligned in-bounds word.
            let old = unsafe { f.atomic_at_once(q, pe, self.offset, T::WIDTH, op) };
            if let Some(old) = old {
                return Ok(T::from_bits(old));
            }
        }
        self.amo_checked(pe, std::hint::black_box(op))
    }

    /// Whether an atomic on the element at `pe` is the common case the data path handles
    /// inline: host atomics, the default context of a live instance, a PE of it, an aligned
    /// word of the element's own instance inside its heap. Anything else takes the general
    /// path, which checks each condition and names the one that failed.
    #[inline(always)]
    fn at_once(&self, pe: Pe) -> bool {
        let inst = self.ctx.inst;
        inst.inner.hot.caps.host_atomics
            && self.ctx.is_plain_target(pe)
            && self.offset.is_multiple_of(T::WIDTH.bytes())
            && inst.holds(self.home, self.offset, T::WIDTH.bytes())
    }

    /// [`SymElem::amo`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn amo_checked(&self, pe: Pe, op: AmoOp) -> Result<T> {
        self.ctx
            .inst
            .require(|c| c.host_atomics, "remote atomics issued by the host")?;
        let pe = self.ctx.target(pe)?;
        self.check_word(T::WIDTH)?;
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        let old = unsafe {
            self.ctx
                .inst
                .fabric()
                .atomic(self.ctx.queue(), pe, self.offset, T::WIDTH, op)
        }?;
        Ok(T::from_bits(old))
    }

    /// A blocking atomic whose previous value is not wanted: it may reach `pe` after it
    /// returns, until the next fence or quiet of the context (as a blocking put).
    #[inline(always)]
    fn amo_post(&self, pe: Pe, op: AmoOp) -> Result<()> {
        if self.at_once(pe) {
            let (f, q) = (self.ctx.inst.fabric(), self.ctx.inst.default_queue());
            // SAFETY: `at_once` checked the PE and the aligned in-bounds word.
            if unsafe { f.atomic_post_at_once(q, pe, self.offset, T::WIDTH, op) } {
                return Ok(());
            }
        }
        self.amo_post_checked(pe, std::hint::black_box(op))
    }

    /// [`SymElem::amo_post`] checked step by step, on any queue.
    #[cold]
    #[inline(never)]
    fn amo_post_checked(&self, pe: Pe, op: AmoOp) -> Result<()> {
        self.ctx
            .inst
            .require(|c| c.host_atomics, "remote atomics issued by the host")?;
        let pe = self.ctx.target(pe)?;
        self.check_word(T::WIDTH)?;
        // SAFETY: the PE and the aligned in-bounds word were checked above.
        unsafe {
            self.ctx
                .inst
                .fabric()
                .atomic_post(self.ctx.queue(), pe, self.offset, T::WIDTH, op)
        }
    }

    /// The value of the element on `pe` (`shmem_atomic_fetch`).
    pub fn atomic_fetch(&self, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Fetch)
    }

    /// Sets the element on `pe` (`shmem_atomic_set`).
    pub fn atomic_set(&self, value: T, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::Set(value.to_bits()))
    }

    /// Sets the element on `pe` and returns its previous value (`shmem_atomic_swap`).
    pub fn atomic_swap(&self, value: T, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Swap(value.to_bits()))
    }
}

impl<T: AmoStandard> SymElem<'_, T> {
    /// Sets the element on `pe` to `value` if it equals `cond`; returns the previous value
    /// (`shmem_atomic_compare_swap`).
    pub fn atomic_compare_swap(&self, cond: T, value: T, pe: Pe) -> Result<T> {
        self.amo(
            pe,
            AmoOp::CompareSwap {
                cond: cond.to_bits(),
                value: value.to_bits(),
            },
        )
    }

    /// Adds one to the element on `pe` and returns its previous value (`shmem_atomic_fetch_inc`).
    pub fn atomic_fetch_inc(&self, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Add(1))
    }

    /// Adds one to the element on `pe` (`shmem_atomic_inc`).
    pub fn atomic_inc(&self, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::Add(1))
    }

    /// Adds `value` to the element on `pe` and returns its previous value
    /// (`shmem_atomic_fetch_add`).
    pub fn atomic_fetch_add(&self, value: T, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Add(value.to_bits()))
    }

    /// Adds `value` to the element on `pe` (`shmem_atomic_add`).
    pub fn atomic_add(&self, value: T, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::Add(value.to_bits()))
    }
}

impl<T: AmoBitwise> SymElem<'_, T> {
    /// Bitwise-ands the element on `pe` with `value`; returns the previous value.
    pub fn atomic_fetch_and(&self, value: T, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::And(value.to_bits()))
    }

    /// Bitwise-ands the element on `pe` with `value`.
    pub fn atomic_and(&self, value: T, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::And(value.to_bits()))
    }

    /// Bitwise-ors the element on `pe` with `value`; returns the previous value.
    pub fn atomic_fetch_or(&self, value: T, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Or(value.to_bits()))
    }

    /// Bitwise-ors the element on `pe` with `value`.
    pub fn atomic_or(&self, value: T, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::Or(value.to_bits()))
    }

    /// Bitwise-xors the element on `pe` with `value`; returns the previous value.
    pub fn atomic_fetch_xor(&self, value: T, pe: Pe) -> Result<T> {
        self.amo(pe, AmoOp::Xor(value.to_bits()))
    }

    /// Bitwise-xors the element on `pe` with `value`.
    pub fn atomic_xor(&self, value: T, pe: Pe) -> Result<()> {
        self.amo_post(pe, AmoOp::Xor(value.to_bits()))
    }
}

impl<'env> NbiScope<'env> {
    fn amo_nbi<T: AmoType>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        pe: Pe,
        op: AmoOp,
    ) -> Result<()> {
        self.ctx
            .inst
            .require(|c| c.host_atomics, "remote atomics issued by the host")?;
        let pe = self.ctx.target(pe)?;
        target.check_word_in(self.ctx.inst, T::WIDTH)?;
        let fetch: *mut u8 = bytemuck::bytes_of_mut(fetch).as_mut_ptr();
        // SAFETY: the PE and the word were checked above; `fetch` is mutably borrowed for 'env,
        // which outlives the scope, and the scope quiets before it ends, so the caller cannot
        // touch it before then.
        unsafe {
            self.ctx.inst.fabric().atomic_nbi(
                self.ctx.queue(),
                pe,
                target.offset,
                T::WIDTH,
                op,
                fetch,
            )
        }
    }

    /// Non-blocking [`SymElem::atomic_fetch`]: `fetch` holds the value once the scope ends.
    pub fn atomic_fetch_nbi<T: AmoType>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Fetch)
    }

    /// Non-blocking [`SymElem::atomic_swap`].
    pub fn atomic_swap_nbi<T: AmoType>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Swap(value.to_bits()))
    }

    /// Non-blocking [`SymElem::atomic_compare_swap`].
    pub fn atomic_compare_swap_nbi<T: AmoStandard>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        cond: T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(
            target,
            fetch,
            pe,
            AmoOp::CompareSwap {
                cond: cond.to_bits(),
                value: value.to_bits(),
            },
        )
    }

    /// Non-blocking [`SymElem::atomic_fetch_inc`].
    pub fn atomic_fetch_inc_nbi<T: AmoStandard>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Add(1))
    }

    /// Non-blocking [`SymElem::atomic_fetch_add`].
    pub fn atomic_fetch_add_nbi<T: AmoStandard>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Add(value.to_bits()))
    }

    /// Non-blocking [`SymElem::atomic_fetch_and`].
    pub fn atomic_fetch_and_nbi<T: AmoBitwise>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::And(value.to_bits()))
    }

    /// Non-blocking [`SymElem::atomic_fetch_or`].
    pub fn atomic_fetch_or_nbi<T: AmoBitwise>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Or(value.to_bits()))
    }

    /// Non-blocking [`SymElem::atomic_fetch_xor`].
    pub fn atomic_fetch_xor_nbi<T: AmoBitwise>(
        &self,
        target: SymElem<'_, T>,
        fetch: &'env mut T,
        value: T,
        pe: Pe,
    ) -> Result<()> {
        self.amo_nbi(target, fetch, pe, AmoOp::Xor(value.to_bits()))
    }
}
