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
}

/// An integer type with the standard atomic operations (compare-and-swap, increment, add).
pub trait AmoStandard: AmoType {}

/// A type with the bitwise atomic operations (and, or, xor).
pub trait AmoBitwise: AmoType {}

macro_rules! amo_types {
    ($($t:ty: $w:ident $(, $extra:ident)*;)*) => {$(
        impl sealed::Sealed for $t {}
        impl AmoType for $t {
            const WIDTH: Width = Width::$w;
        }
        $(impl $extra for $t {})*
    )*};
}

amo_types! {
    i32: W32, AmoStandard, AmoBitwise;
    i64: W64, AmoStandard, AmoBitwise;
    u32: W32, AmoStandard, AmoBitwise;
    u64: W64, AmoStandard, AmoBitwise;
    usize: W64, AmoStandard, AmoBitwise;
    isize: W64, AmoStandard;
    f32: W32;
    f64: W64;
}

const _: () = assert!(
    std::mem::size_of::<usize>() == 8,
    "the AMO width table assumes a 64-bit target"
);

impl<T> SymElem<'_, T> {
    /// Checks that the element is an aligned word of `width` inside the heap of its context's
    /// instance.
    #[inline]
    pub(crate) fn check_word(&self, width: Width) -> Result<()> {
        self.check_word_in(self.ctx.inst, width)
    }

    /// Checks that the element is an aligned word of `width` that may be accessed through
    /// `inst` (the element's own instance, and inside its heap).
    #[inline]
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
