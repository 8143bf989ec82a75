//! Point-to-point synchronisation: waiting for, and testing, words of this PE's own symmetric
//! memory that peers change with puts, atomics and signals.
//!
//! These are OpenSHMEM's `shmem_<T>_wait_until`, `shmem_<T>_test` and their `_all`, `_any`,
//! `_some` and `_vector` forms, and CANN's `aclshmem_<T>_wait_until` family (reference §1.9):
//! - on a [`SymElem`]: [`wait_until`](SymElem::wait_until), [`wait`](SymElem::wait) (until the
//!   word differs from a value) and [`test`](SymElem::test);
//! - on a [`SymSlice`], the *ivars* array: `wait_until_{all,any,some}`, `test_{all,any,some}`
//!   and their `_vector` forms, which compare element `i` with `cmp_values[i]` instead of one
//!   value.
//!
//! The words read are always this PE's own copy. They are read with acquire loads of their
//! natural width, so data a peer put before it updated the word (with a `fence`, or in the
//! same `put_signal`) is visible once the wait returns. Signed integers compare with their
//! sign and floats as floats (a NaN satisfies only `Ne`). A wait sleeps only on the bytes of
//! its own view: writes to other words do not wake it. Every wait ends, at the latest, after
//! `SHMEM_TIMEOUT` seconds with a `TIMEOUT_ERROR` that says what it waited for, or as soon as a
//! peer it might depend on dies.
//!
//! # Status masks and the sets' rules
//!
//! `status`, when given, has one entry per element; a non-zero entry excludes its element,
//! which then never satisfies anything. `cmp_values` has one entry per element too, and
//! `indices` at least one. Any other length is `INVALID_PARAM`, and nothing is read.
//! - `all` waits until every included element has been seen satisfying the condition (each is
//!   checked until it does, then left alone; for flags that only move forward, the usual case,
//!   that means all at once). With no element included it returns at once; `test_all` is then
//!   true (OpenSHMEM 1.6).
//! - `any` returns the index of one included element that satisfies the condition, or `None`
//!   (OpenSHMEM's `SIZE_MAX`) at once when no element is included. It does not starve
//!   elements: each thread remembers, per view, the index its last `any` returned, and the next
//!   scan starts just after it and wraps around. An element that stays satisfied is therefore
//!   returned within `len` calls on the same view; the first call on a view starts at 0.
//! - `some` waits until at least one included element satisfies the condition, then writes
//!   the indices of all that do, in ascending order, to the front of `indices` and returns
//!   their number; 0 at once when no element is included.
//!
//! The `test` forms evaluate the same condition once, without waiting.
//!
//! CANN's host API has all of these but the non-vector `test_all`.
//!
//! ```no_run
//! # fn demo(inst: &shmem::Instance) -> shmem::Result<()> {
//! use shmem::Cmp;
//! let (me, n) = (inst.my_pe(), inst.n_pes());
//! let flags = inst.calloc::<i32>(n as usize)?;
//! inst.barrier_all()?;
//! // Tell every PE that this one is ready: element `me` of their flags.
//! for pe in 0..n {
//!     flags.as_slice().p(me as usize, 1, pe)?;
//! }
//! // Wait for all PEs but this one.
//! let mut status = vec![0; n as usize];
//! status[me as usize] = 1;
//! flags.as_slice().wait_until_all(Some(&status), Cmp::Eq, 1)?;
//! let first = flags.elem(0).wait_until(Cmp::Ge, 1)?;
//! # let _ = first; Ok(()) }
//! ```

use std::cell::RefCell;
use std::sync::Arc;

use bytemuck::Pod;
use shmem_backend::{Cmp, Scalar, ScalarKind, Watch};

use crate::ctx::CtxRef;
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::sym::{SymElem, SymSlice};

/// What the elements compare with: one value for all, or one per element.
#[derive(Clone, Copy)]
enum Rhs<'v, T> {
    One(T),
    Each(&'v [T]),
}

impl<T: Scalar> Rhs<'_, T> {
    fn bits(&self, i: usize) -> u64 {
        match self {
            Rhs::One(v) => v.to_bits(),
            Rhs::Each(vs) => vs[i].to_bits(),
        }
    }
}

fn symbol(cmp: Cmp) -> &'static str {
    match cmp {
        Cmp::Eq => "==",
        Cmp::Ne => "!=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
        Cmp::Lt => "<",
        Cmp::Le => "<=",
    }
}

/// A bit pattern of `kind`, written as the value it is.
fn show(kind: ScalarKind, bits: u64) -> String {
    match kind {
        ScalarKind::I8 => (bits as u8 as i8).to_string(),
        ScalarKind::I16 => (bits as u16 as i16).to_string(),
        ScalarKind::I32 => (bits as u32 as i32).to_string(),
        ScalarKind::I64 => (bits as i64).to_string(),
        ScalarKind::U8 => (bits as u8).to_string(),
        ScalarKind::U16 => (bits as u16).to_string(),
        ScalarKind::U32 => (bits as u32).to_string(),
        ScalarKind::U64 => bits.to_string(),
        ScalarKind::F32 => f32::from_bits(bits as u32).to_string(),
        ScalarKind::F64 => f64::from_bits(bits).to_string(),
    }
}

/// A wait set's description, formatted only when a message needs it.
struct Describe<'s, 'v, 'a, T>(&'s WaitSet<'v, 'a, T>, &'s str);

impl<T: Scalar + Pod> std::fmt::Display for Describe<'_, '_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.describe(self.1, f)
    }
}

/// Where the next `any` scan of a view starts, per thread.
struct Cursor {
    inst: usize,
    offset: usize,
    len: usize,
    next: usize,
}

/// How many views a thread remembers an `any` cursor for.
const CURSORS_KEPT: usize = 16;

thread_local! {
    static CURSORS: RefCell<Vec<Cursor>> = const { RefCell::new(Vec::new()) };
}

/// A wait set: `len` elements of `T` at heap offset `offset` of this PE, a status mask and a
/// condition.
struct WaitSet<'v, 'a, T> {
    ctx: CtxRef<'a>,
    offset: usize,
    len: usize,
    status: Option<&'v [i32]>,
    cmp: Cmp,
    rhs: Rhs<'v, T>,
}

impl<'v, 'a, T: Scalar + Pod> WaitSet<'v, 'a, T> {
    /// Checks the context and every argument's length before anything is read. `indices` is
    /// the length of the `some` forms' output array.
    #[allow(clippy::too_many_arguments)]
    fn new(
        ctx: CtxRef<'a>,
        home: &Instance,
        offset: usize,
        len: usize,
        status: Option<&'v [i32]>,
        cmp: Cmp,
        rhs: Rhs<'v, T>,
        indices: Option<usize>,
    ) -> Result<Self> {
        ctx.usable()?;
        let size = std::mem::size_of::<T>();
        if size != T::KIND.width().bytes() {
            return Err(Error::InvalidParam(format!(
                "{} is {size} bytes, but compares as a {:?} of {} bytes",
                std::any::type_name::<T>(),
                T::KIND,
                T::KIND.width().bytes()
            )));
        }
        if let Some(s) = status
            && s.len() != len
        {
            return Err(Error::InvalidParam(format!(
                "the status array has {} entries for {len} elements",
                s.len()
            )));
        }
        if let Rhs::Each(v) = rhs
            && v.len() != len
        {
            return Err(Error::InvalidParam(format!(
                "cmp_values has {} entries for {len} elements",
                v.len()
            )));
        }
        if let Some(n) = indices
            && n < len
        {
            return Err(Error::InvalidParam(format!(
                "the indices array has {n} entries for {len} elements"
            )));
        }
        let bytes = len
            .checked_mul(size)
            .ok_or_else(|| Error::InvalidParam(format!("{len} elements overflow")))?;
        ctx.inst.check_view(home, offset, bytes)?;
        if !offset.is_multiple_of(size) {
            return Err(Error::Misaligned(format!(
                "heap offset {offset:#x} is not aligned to the {size}-byte elements of a wait"
            )));
        }
        Ok(WaitSet {
            ctx,
            offset,
            len,
            status,
            cmp,
            rhs,
        })
    }

    fn included(&self, i: usize) -> bool {
        self.status.is_none_or(|s| s[i] == 0)
    }

    fn none_included(&self) -> bool {
        (0..self.len).all(|i| !self.included(i))
    }

    /// The current bits of element `i`.
    fn load(&self, i: usize) -> Result<u64> {
        let off = self.offset + i * std::mem::size_of::<T>();
        // SAFETY: `new` checked that the elements are aligned words inside the heap.
        unsafe { self.ctx.inst.fabric().load(off, T::KIND.width()) }
    }

    /// Whether element `i` satisfies the condition now (whatever its status).
    fn holds(&self, i: usize) -> Result<bool> {
        let v = self.load(i)?;
        Ok(T::KIND.compare(self.cmp, v, self.rhs.bits(i)))
    }

    /// What a wait is for, for its timeout message.
    fn describe(&self, what: &str, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ty = std::any::type_name::<T>();
        write!(f, "{what}: ")?;
        if self.len == 1 && self.status.is_none() {
            write!(f, "the {ty} at heap offset {:#x}", self.offset)?;
        } else {
            let excluded = (0..self.len).filter(|&i| !self.included(i)).count();
            write!(
                f,
                "{} {ty} elements at heap offset {:#x}",
                self.len, self.offset
            )?;
            if excluded > 0 {
                write!(f, ", {excluded} excluded by status")?;
            }
            f.write_str(",")?;
        }
        write!(f, " to be {} ", symbol(self.cmp))?;
        match self.rhs {
            Rhs::One(v) => f.write_str(&show(T::KIND, v.to_bits())),
            Rhs::Each(_) => f.write_str("their cmp_values"),
        }
    }

    /// Blocks until `pred` holds: a local wait on the set's bytes. An error from `pred` ends the
    /// wait with that error.
    fn block(&self, what: &str, mut pred: impl FnMut() -> Result<bool>) -> Result<()> {
        let inst = self.ctx.inst;
        crate::fault::point("wait_until.waiting", inst.my_pe(), inst.id());
        inst.check_peers()?;
        let watch = Watch::bytes(self.offset, self.len * std::mem::size_of::<T>());
        inst.fabric()
            .wait_local(watch, &Describe(self, what), &mut pred)
            .map_err(|e| inst.fail(e))
    }

    /// Advances `*from` past every element that is excluded or satisfies the condition; true
    /// once it reaches the end.
    fn scan_all(&self, from: &mut usize) -> Result<bool> {
        while *from < self.len {
            if self.included(*from) && !self.holds(*from)? {
                return Ok(false);
            }
            *from += 1;
        }
        Ok(true)
    }

    /// The first included element at or after `start` (wrapping around) that satisfies the
    /// condition.
    fn scan_any(&self, start: usize) -> Result<Option<usize>> {
        for k in 0..self.len {
            let i = (start + k) % self.len;
            if self.included(i) && self.holds(i)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Writes the indices of the included elements that satisfy the condition to the front of
    /// `indices` (which is at least `len` long) and returns how many there are.
    fn scan_some(&self, indices: &mut [usize]) -> Result<usize> {
        let mut count = 0;
        for i in 0..self.len {
            if self.included(i) && self.holds(i)? {
                indices[count] = i;
                count += 1;
            }
        }
        Ok(count)
    }

    fn cursor_key(&self) -> usize {
        Arc::as_ptr(&self.ctx.inst.inner) as usize
    }

    /// Where this thread's next `any` scan of this view starts.
    fn any_start(&self) -> usize {
        let key = self.cursor_key();
        CURSORS.with_borrow(|cs| {
            cs.iter()
                .find(|c| c.inst == key && c.offset == self.offset && c.len == self.len)
                .map_or(0, |c| c.next % self.len.max(1))
        })
    }

    /// Records that `any` returned `found`: the next scan starts after it.
    fn any_returned(&self, found: usize) {
        let key = self.cursor_key();
        let next = (found + 1) % self.len.max(1);
        CURSORS.with_borrow_mut(|cs| {
            match cs
                .iter_mut()
                .find(|c| c.inst == key && c.offset == self.offset && c.len == self.len)
            {
                Some(c) => c.next = next,
                None => {
                    if cs.len() >= CURSORS_KEPT {
                        cs.remove(0);
                    }
                    cs.push(Cursor {
                        inst: key,
                        offset: self.offset,
                        len: self.len,
                        next,
                    });
                }
            }
        });
    }

    fn wait_all(&self, what: &str) -> Result<()> {
        if self.none_included() {
            return Ok(());
        }
        let mut from = 0;
        self.block(what, || self.scan_all(&mut from))
    }

    fn wait_any(&self, what: &str) -> Result<Option<usize>> {
        if self.none_included() {
            return Ok(None);
        }
        let start = self.any_start();
        let mut found = None;
        self.block(what, || {
            found = self.scan_any(start)?;
            Ok(found.is_some())
        })?;
        if let Some(i) = found {
            self.any_returned(i);
        }
        Ok(found)
    }

    fn wait_some(&self, what: &str, indices: &mut [usize]) -> Result<usize> {
        if self.none_included() {
            return Ok(0);
        }
        let mut count = 0;
        self.block(what, || {
            count = self.scan_some(indices)?;
            Ok(count > 0)
        })?;
        Ok(count)
    }

    fn test_all(&self) -> Result<bool> {
        self.scan_all(&mut 0)
    }

    fn test_any(&self) -> Result<Option<usize>> {
        if self.none_included() {
            return Ok(None);
        }
        let found = self.scan_any(self.any_start())?;
        if let Some(i) = found {
            self.any_returned(i);
        }
        Ok(found)
    }

    fn test_some(&self, indices: &mut [usize]) -> Result<usize> {
        self.scan_some(indices)
    }
}

impl<'a, T: Scalar + Pod> SymElem<'a, T> {
    fn set<'v>(&self, cmp: Cmp, value: T) -> Result<WaitSet<'v, 'a, T>> {
        WaitSet::new(
            self.ctx,
            self.home,
            self.offset,
            1,
            None,
            cmp,
            Rhs::One(value),
            None,
        )
    }

    /// Waits until this PE's copy of the element compares to `value` with `cmp`, and returns
    /// the value that satisfied it (`shmem_<T>_wait_until`, `aclshmem_<T>_wait_until`).
    pub fn wait_until(&self, cmp: Cmp, value: T) -> Result<T> {
        let set = self.set(cmp, value)?;
        let mut seen = 0;
        set.block("wait_until", || {
            seen = set.load(0)?;
            Ok(T::KIND.compare(cmp, seen, value.to_bits()))
        })?;
        Ok(T::from_bits(seen))
    }

    /// Waits until this PE's copy of the element differs from `value`, and returns the value
    /// it then holds (CANN's `aclshmem_<T>_wait`, OpenSHMEM's deprecated `shmem_<T>_wait`):
    /// [`SymElem::wait_until`] with [`Cmp::Ne`].
    pub fn wait(&self, value: T) -> Result<T> {
        self.wait_until(Cmp::Ne, value)
    }

    /// Whether this PE's copy of the element compares to `value` with `cmp` now
    /// (`shmem_<T>_test`, `aclshmem_<T>_test`).
    pub fn test(&self, cmp: Cmp, value: T) -> Result<bool> {
        self.set(cmp, value).and_then(|s| s.holds(0))
    }
}

impl<'a, T: Scalar + Pod> SymSlice<'a, T> {
    fn set<'v>(
        &self,
        status: Option<&'v [i32]>,
        cmp: Cmp,
        rhs: Rhs<'v, T>,
        indices: Option<usize>,
    ) -> Result<WaitSet<'v, 'a, T>> {
        WaitSet::new(
            self.ctx,
            self.home,
            self.offset,
            self.len,
            status,
            cmp,
            rhs,
            indices,
        )
    }

    /// Waits until every element not excluded by `status` compares to `value` with `cmp`
    /// (`shmem_<T>_wait_until_all`, `aclshmem_<T>_wait_until_all`).
    pub fn wait_until_all(&self, status: Option<&[i32]>, cmp: Cmp, value: T) -> Result<()> {
        const WHAT: &str = "wait_until_all";
        self.set(status, cmp, Rhs::One(value), None)
            .and_then(|s| s.wait_all(WHAT))
    }

    /// Waits until some element not excluded by `status` compares to `value` with `cmp`, and
    /// returns its index; `None` at once when `status` excludes every element
    /// (`shmem_<T>_wait_until_any`, which returns `SIZE_MAX` there).
    pub fn wait_until_any(
        &self,
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<Option<usize>> {
        const WHAT: &str = "wait_until_any";
        self.set(status, cmp, Rhs::One(value), None)
            .and_then(|s| s.wait_any(WHAT))
    }

    /// Waits until at least one element not excluded by `status` compares to `value` with
    /// `cmp`; writes the indices of all that then do to the front of `indices` (at least
    /// `len` entries) and returns their number; 0 at once when `status` excludes every element
    /// (`shmem_<T>_wait_until_some`).
    pub fn wait_until_some(
        &self,
        indices: &mut [usize],
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<usize> {
        const WHAT: &str = "wait_until_some";
        self.set(status, cmp, Rhs::One(value), Some(indices.len()))
            .and_then(|s| s.wait_some(WHAT, indices))
    }

    /// [`SymSlice::wait_until_all`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_wait_until_all_vector`).
    pub fn wait_until_all_vector(
        &self,
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<()> {
        const WHAT: &str = "wait_until_all_vector";
        self.set(status, cmp, Rhs::Each(cmp_values), None)
            .and_then(|s| s.wait_all(WHAT))
    }

    /// [`SymSlice::wait_until_any`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_wait_until_any_vector`).
    pub fn wait_until_any_vector(
        &self,
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<Option<usize>> {
        const WHAT: &str = "wait_until_any_vector";
        self.set(status, cmp, Rhs::Each(cmp_values), None)
            .and_then(|s| s.wait_any(WHAT))
    }

    /// [`SymSlice::wait_until_some`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_wait_until_some_vector`).
    pub fn wait_until_some_vector(
        &self,
        indices: &mut [usize],
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<usize> {
        const WHAT: &str = "wait_until_some_vector";
        self.set(status, cmp, Rhs::Each(cmp_values), Some(indices.len()))
            .and_then(|s| s.wait_some(WHAT, indices))
    }

    /// Whether every element not excluded by `status` compares to `value` with `cmp` now; true
    /// when none is included (`shmem_<T>_test_all`; CANN's host API has only the vector form).
    pub fn test_all(&self, status: Option<&[i32]>, cmp: Cmp, value: T) -> Result<bool> {
        self.set(status, cmp, Rhs::One(value), None)?.test_all()
    }

    /// Some element not excluded by `status` that compares to `value` with `cmp` now, if there
    /// is one (`shmem_<T>_test_any`, which returns `SIZE_MAX` for `None`).
    pub fn test_any(&self, status: Option<&[i32]>, cmp: Cmp, value: T) -> Result<Option<usize>> {
        self.set(status, cmp, Rhs::One(value), None)
            .and_then(|s| s.test_any())
    }

    /// Writes the indices of the elements not excluded by `status` that compare to `value` with
    /// `cmp` now to the front of `indices` (at least `len` entries), and returns their number
    /// (`shmem_<T>_test_some`).
    pub fn test_some(
        &self,
        indices: &mut [usize],
        status: Option<&[i32]>,
        cmp: Cmp,
        value: T,
    ) -> Result<usize> {
        self.set(status, cmp, Rhs::One(value), Some(indices.len()))
            .and_then(|s| s.test_some(indices))
    }

    /// [`SymSlice::test_all`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_test_all_vector`, `aclshmem_<T>_test_all_vector`).
    pub fn test_all_vector(
        &self,
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<bool> {
        self.set(status, cmp, Rhs::Each(cmp_values), None)
            .and_then(|s| s.test_all())
    }

    /// [`SymSlice::test_any`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_test_any_vector`).
    pub fn test_any_vector(
        &self,
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<Option<usize>> {
        self.set(status, cmp, Rhs::Each(cmp_values), None)
            .and_then(|s| s.test_any())
    }

    /// [`SymSlice::test_some`], comparing element `i` with `cmp_values[i]`
    /// (`shmem_<T>_test_some_vector`).
    pub fn test_some_vector(
        &self,
        indices: &mut [usize],
        status: Option<&[i32]>,
        cmp: Cmp,
        cmp_values: &[T],
    ) -> Result<usize> {
        self.set(status, cmp, Rhs::Each(cmp_values), Some(indices.len()))
            .and_then(|s| s.test_some(indices))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_show_as_their_kind() {
        assert_eq!(show(ScalarKind::I8, (-3i8).to_bits()), "-3");
        assert_eq!(show(ScalarKind::U8, (-3i8).to_bits()), "253");
        assert_eq!(show(ScalarKind::F64, (-0.5f64).to_bits()), "-0.5");
        assert_eq!(show(ScalarKind::I64, (-7i64).to_bits()), "-7");
        assert_eq!(symbol(Cmp::Le), "<=");
    }
}
