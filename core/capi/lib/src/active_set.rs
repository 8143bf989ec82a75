//! The deprecated active-set collectives (`shmem_barrier`, `shmem_sync`, `shmem_broadcast64`,
//! `shmem_fcollect32`, `shmem_long_sum_to_all`, …), which programs and benchmarks written for
//! OpenSHMEM 1.4 still call.
//!
//! An active set is `PE_size` PEs of the world, `PE_start`, `PE_start + 2^logPE_stride`, …; only
//! its members call, with the same arguments and a symmetric `pSync` array whose every element
//! is `SHMEM_SYNC_VALUE` (0). Unlike the team routines there is no team to hold scratch space,
//! so the routines run on the Rust core's RMA, atomics and waits, with `pSync` as their only
//! shared state:
//!
//! - the barrier counts arrivals in the first member's `pSync[0]` and releases each member
//!   through its `pSync[1]`; every word is back to 0 when the call returns, so the same `pSync`
//!   may serve the next call at once (OpenSHMEM asks only that it be reused after a barrier);
//! - the broadcast is one phase: the root puts into every member's `dest` and sets its
//!   `pSync[2]` after the data, and each member waits for that word and clears it;
//! - the other data routines run between two counted arrivals ([`arrive`]): the first says
//!   every source is ready, the second that nobody reads a source any more. In each, every
//!   member adds one to a word of every other member's `pSync` (`pSync[0]` for the first,
//!   `pSync[1]` for the second) and waits until its own word counts all the others, so the
//!   last to arrive releases everyone at once (the barrier's release passes through its first
//!   member, one more process switch when PEs outnumber the cores). Sets of more than 8
//!   members meet at barriers instead ([`COUNTED_UP_TO`]). Between the two, the routine gets
//!   from the members' sources into this PE's destination;
//! - the reductions (`_to_all`) do a reduce-scatter between the two arrivals: each member gets
//!   its segment of the array from every member's source, combines it and puts the result
//!   into every member's destination;
//! - `collect` publishes each member's element count in its `pSync[2]` too.
//!
//! `pWrk` is not needed (each PE combines the segments it gets in its own memory) and is never
//! touched.

use std::ffi::{c_int, c_long, c_void};

use bytemuck::Pod;
use shmem_core::{Cmp, Error, Instance, ReduceOp, Reducible, Result, SignalOp, SymSlice};

use crate::boundary::call;
use crate::world::{view, world};

use crate::table::PSYNC_WORDS;

/// The members of an active set, and this PE's place among them.
struct ActiveSet {
    start: u32,
    stride: u32,
    size: u32,
    /// This PE's index in the set.
    me: u32,
}

impl ActiveSet {
    /// The set `PE_start, PE_start + 2^logPE_stride, …` of `PE_size` PEs, which must lie in
    /// the world and include this PE.
    fn new(w: &Instance, start: c_int, log_stride: c_int, size: c_int) -> Result<ActiveSet> {
        let bad = |why: String| {
            Error::InvalidParam(format!(
                "active set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}): {why}"
            ))
        };
        let start_ = u32::try_from(start).map_err(|_| bad("PE_start is negative".into()))?;
        let size_ = u32::try_from(size)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| bad("PE_size must be positive".into()))?;
        let stride = u32::try_from(log_stride)
            .ok()
            .and_then(|l| 1u32.checked_shl(l))
            .ok_or_else(|| bad("logPE_stride must lie in 0..32".into()))?;
        let last = u64::from(size_ - 1) * u64::from(stride) + u64::from(start_);
        if last >= u64::from(w.n_pes()) {
            return Err(bad(format!(
                "its last PE {last} is not a PE of the {} in the job",
                w.n_pes()
            )));
        }
        let off = w
            .my_pe()
            .checked_sub(start_)
            .filter(|d| d % stride == 0 && d / stride < size_)
            .ok_or_else(|| bad(format!("PE {} is not a member", w.my_pe())))?;
        Ok(ActiveSet {
            start: start_,
            stride,
            size: size_,
            me: off / stride,
        })
    }

    /// The world PE of member `i`.
    fn pe(&self, i: u32) -> u32 {
        self.start + i * self.stride
    }

    /// The members' world PEs in set order.
    fn members(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.size).map(|i| (i, self.pe(i)))
    }
}

/// The `pSync` words of a call.
fn psync(w: &'static Instance, p: *const c_long) -> Result<SymSlice<'static, i64>> {
    view(w, p.cast::<i64>(), PSYNC_WORDS)
}

/// The barrier over `set` on `pSync` (see the module's description): returns when every member
/// has arrived, with every `pSync` word back to 0.
fn barrier(set: &ActiveSet, sync: SymSlice<'_, i64>) -> Result<()> {
    if set.size == 1 {
        return Ok(());
    }
    let (count, release) = (sync.elem(0), sync.elem(1));
    let me = set.pe(set.me);
    if set.me == 0 {
        count.wait_until(Cmp::Eq, i64::from(set.size - 1))?;
        // A fetching atomic is complete when it returns: the count is 0 before any member is
        // released, so an arrival at the next barrier is never lost or counted twice.
        count.atomic_swap(0, me)?;
        for (_, pe) in set.members().skip(1) {
            release.atomic_set(1, pe)?;
        }
    } else {
        count.atomic_add(1, set.pe(0))?;
        release.wait_until(Cmp::Eq, 1)?;
        release.atomic_swap(0, me)?;
    }
    Ok(())
}

/// The largest set whose data routines meet by counted arrivals. Each member adds to every
/// other member's word, `size * (size - 1)` adds in all, and an add to a member that sleeps
/// wakes it to look again. On 2 CPUs (`benches/c/compare.sh`, `osh_coll` rows, the two builds
/// interleaved) the counted arrivals took 0.75-0.92 of the barriers' time at 4 and 8 PEs, the
/// same at 16, and at 32 and 64 PEs the barriers took 0.98 and 0.94 of theirs (medians).
const COUNTED_UP_TO: u32 = 8;

/// Which counted arrival of a routine: the one before its reads of the members' sources, or the
/// one after them. Each counts in a `pSync` word of its own.
#[derive(Clone, Copy)]
enum Arrival {
    /// Every member's source is ready (`pSync[0]`).
    Ready,
    /// No member reads a source any more (`pSync[1]`).
    Done,
}

/// Counted arrival `which` over `set` on `pSync` (see the module's description): completes
/// this PE's operations, adds one to the word on every other member, completes the adds, waits
/// until this PE's word counts every other member and takes their count off it again.
///
/// A word may hold arrivals of a later call (a member that has finished this call and gone on
/// to the next one with the same `pSync`); only this call's are taken off. They can never stand
/// in for an arrival of this call that is still missing: a member reaches a later call's
/// `Ready` only after this call's `Done`, which no member passes before every member has
/// completed its adds of this call's `Ready` (the adds of each arrival are completed before its
/// wait), and likewise for `Done`. A barrier ([`barrier`]) in between keeps the same order.
///
/// Sets of more than [`COUNTED_UP_TO`] members meet at a [`barrier`] instead.
fn arrive(w: &Instance, set: &ActiveSet, sync: SymSlice<'_, i64>, which: Arrival) -> Result<()> {
    if set.size == 1 {
        return Ok(());
    }
    // What this PE did before (a collect's published count, a reduction's puts into the
    // members' destinations) is complete before any member counts the arrival.
    w.quiet()?;
    if set.size > COUNTED_UP_TO {
        return barrier(set, sync);
    }
    let word = sync.elem(which as usize);
    // Starting after this PE spreads the first adds over the members.
    for k in 1..set.size {
        word.atomic_add(1, set.pe((set.me + k) % set.size))?;
    }
    w.quiet()?;
    let others = i64::from(set.size - 1);
    word.wait_until(Cmp::Ge, others)?;
    // A fetching atomic is complete when it returns: a later wait on this word sees the count
    // without this call's arrivals.
    word.atomic_fetch_add(-others, w.my_pe())?;
    Ok(())
}

/// Runs a void active-set routine: validates the set, then `f`.
fn run(
    name: &str,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    f: impl FnOnce(&'static Instance, &ActiveSet) -> Result<()>,
) {
    call(name, (), || {
        let w = world()?;
        let set = ActiveSet::new(w, start, log_stride, size)?;
        f(w, &set)
    });
}

/// A count from C.
fn count(n: impl TryInto<usize> + Copy + std::fmt::Display) -> Result<usize> {
    n.try_into()
        .map_err(|_| Error::InvalidParam(format!("element count {n} is negative")))
}

/// Elements `n` times `m`, checked.
fn times(n: usize, m: usize) -> Result<usize> {
    n.checked_mul(m)
        .ok_or_else(|| Error::InvalidParam(format!("{n} × {m} elements overflow")))
}

/// The `n` elements of local memory at `p`, as a slice a get may write.
///
/// # Safety
///
/// `p` is valid for `n` elements and not otherwise accessed while the slice lives.
unsafe fn local<'a, T>(p: *mut T, n: usize) -> &'a mut [T] {
    // SAFETY: per the function's contract.
    unsafe { std::slice::from_raw_parts_mut(p, n) }
}

/// `shmem_barrier` (with `quiet`) and `shmem_sync` (without).
pub(crate) fn sync(
    name: &str,
    quiet: bool,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    p_sync: *mut c_long,
) {
    run(name, start, log_stride, size, |w, set| {
        if quiet {
            w.quiet()?;
        }
        barrier(set, psync(w, p_sync)?)
    });
}

/// `shmem_broadcast{32,64}`: `dest` on every member but the root gets the root's `source`.
///
/// One phase, as OpenSHMEM's contract allows (before any member calls, every member's `dest`
/// is ready and its `pSync` no longer in use): the root puts `source` into every other member's
/// symmetric `dest`, each followed by a signal that sets that member's `pSync[2]`, and returns
/// once the data is out; a member waits for its `pSync[2]`, clears it and returns. The barrier's
/// words are not used, so a barrier on the same `pSync` may follow at once.
#[allow(clippy::too_many_arguments)]
pub(crate) fn broadcast<T: Pod>(
    name: &str,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    root: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    p_sync: *mut c_long,
) {
    run(name, start, log_stride, size, |w, set| {
        let root = u32::try_from(root)
            .ok()
            .filter(|&r| r < set.size)
            .ok_or_else(|| {
                Error::InvalidParam(format!(
                    "PE_root {root} is not an index of the {}-PE active set",
                    set.size
                ))
            })?;
        let flag = view(w, p_sync.cast::<u64>(), PSYNC_WORDS)?.elem(2);
        let dst = view(w, dest.cast::<T>(), nelems)?;
        if set.me == root {
            let src = view(w, source.cast::<T>(), nelems)?;
            for (i, pe) in set.members() {
                if i != root {
                    dst.put_signal_from(src, flag, 1, SignalOp::Set, pe)?;
                }
            }
            Ok(())
        } else {
            flag.signal_wait_until(Cmp::Ne, 0)?;
            flag.signal_op(0, SignalOp::Set, w.my_pe())
        }
    });
}

/// `shmem_fcollect{32,64}` (`counts` is `None`) and `shmem_collect{32,64}`: `dest` gets every
/// member's `source` in set order.
///
/// # Safety
///
/// `dest` is writable for the sum of the members' `nelems` elements of `T`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn collect<T: Pod>(
    name: &str,
    fixed: bool,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    p_sync: *mut c_long,
) {
    run(name, start, log_stride, size, |w, set| {
        let sync = psync(w, p_sync)?;
        let n =
            i64::try_from(nelems).map_err(|_| Error::InvalidParam(format!("{nelems} elements")))?;
        if !fixed {
            sync.elem(2).atomic_set(n, w.my_pe())?;
        }
        arrive(w, set, sync, Arrival::Ready)?;
        let mut at = 0usize;
        for (_, pe) in set.members() {
            let theirs = if fixed {
                nelems
            } else {
                count(sync.elem(2).atomic_fetch(pe)?)?
            };
            if theirs > 0 {
                // SAFETY: the C contract: `dest` holds every member's elements.
                let to = unsafe { local(dest.cast::<T>().add(at), theirs) };
                view(w, source.cast::<T>(), theirs)?.get(to, pe)?;
            }
            at = at
                .checked_add(theirs)
                .ok_or_else(|| Error::InvalidParam("the collected elements overflow".into()))?;
        }
        arrive(w, set, sync, Arrival::Done)?;
        if !fixed {
            sync.elem(2).atomic_swap(0, w.my_pe())?;
        }
        Ok(())
    });
}

/// `shmem_alltoall{32,64}` (strides 1) and `shmem_alltoalls{32,64}`: block `i` of `dest` gets
/// block `me` of member `i`'s `source`, elements `dst` and `sst` apart.
///
/// # Safety
///
/// `dest` is writable for `size * nelems` elements `dst` apart.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall<T: Pod>(
    name: &str,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    p_sync: *mut c_long,
) {
    run(name, start, log_stride, size, |w, set| {
        let (dst, sst) = match (usize::try_from(dst), usize::try_from(sst)) {
            (Ok(d), Ok(s)) if d > 0 && s > 0 => (d, s),
            _ => {
                return Err(Error::InvalidParam(format!(
                    "strides {dst} and {sst} must be positive"
                )));
            }
        };
        let sync = psync(w, p_sync)?;
        arrive(w, set, sync, Arrival::Ready)?;
        if nelems > 0 {
            // This PE's block of each member's source: elements me*nelems .. (me+1)*nelems,
            // `sst` apart; the span from its first to its last element is fetched at once.
            let first = times(times(set.me as usize, nelems)?, sst)?;
            let span = times(nelems - 1, sst)? + 1;
            let mut buf = Vec::new();
            for (i, pe) in set.members() {
                let src = view(w, source.cast::<T>().wrapping_add(first), span)?;
                let block = times(i as usize, nelems)?;
                if dst == 1 && sst == 1 {
                    // SAFETY: the C contract: `dest` holds `size * nelems` elements, and
                    // `block + nelems` is at most that.
                    src.get(unsafe { local(dest.cast::<T>().add(block), nelems) }, pe)?;
                    continue;
                }
                buf.resize(span, T::zeroed());
                src.get(&mut buf, pe)?;
                for k in 0..nelems {
                    // SAFETY: the C contract: `dest` holds `size * nelems` elements `dst`
                    // apart, and `block + k` is below `size * nelems`.
                    unsafe { *dest.cast::<T>().add((block + k) * dst) = buf[k * sst] };
                }
            }
        }
        arrive(w, set, sync, Arrival::Done)
    });
}

/// `shmem_TYPENAME_{and,or,xor,max,min,sum,prod}_to_all`: `dest` on every member gets the
/// element-wise combination of the members' `source`s. `dest` and `source` are symmetric and
/// may be the same array; `pWrk` is not used.
///
/// Member `i` of the set owns segment `i` of the array: once every member has arrived, it gets
/// that segment of every member's `source`, combines them in set order and puts the result
/// into every member's `dest`. Segment `i` of a member's arrays is read and written by owner
/// `i` alone, which writes only after it has read it everywhere, so the reduction may be in
/// place; the second barrier keeps every `source` in place until its owners have read it, and
/// every result in place before a member returns. Each member reads the array's length once
/// (every member reading every member's whole `source` took `size` times that).
///
/// # Safety
///
/// `dest` is writable for `nreduce` elements.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn to_all<T: Reducible>(
    name: &str,
    op: ReduceOp,
    dest: *mut T,
    source: *const T,
    nreduce: c_int,
    start: c_int,
    log_stride: c_int,
    size: c_int,
    p_work: *mut T,
    p_sync: *mut c_long,
) {
    let _ = p_work;
    run(name, start, log_stride, size, |w, set| {
        if !T::supports(op) {
            return Err(Error::InvalidParam(format!(
                "{op:?} is not defined for {}",
                std::any::type_name::<T>()
            )));
        }
        let n = count(nreduce)?;
        let sync = psync(w, p_sync)?;
        let src = view(w, source, n)?;
        let dst = view(w, dest.cast_const(), n)?;
        arrive(w, set, sync, Arrival::Ready)?;
        let seg = n.div_ceil(set.size as usize);
        let me = set.me as usize;
        let mine = (me * seg).min(n)..((me + 1) * seg).min(n);
        if !mine.is_empty() {
            let (src, dst) = (src.slice(mine.clone()), dst.slice(mine.clone()));
            let mut acc = vec![T::zeroed(); mine.len()];
            let mut theirs = vec![T::zeroed(); mine.len()];
            for (i, pe) in set.members() {
                if i == 0 {
                    src.get(&mut acc, pe)?;
                } else {
                    src.get(&mut theirs, pe)?;
                    for (a, b) in acc.iter_mut().zip(&theirs) {
                        *a = T::combine(op, *a, *b);
                    }
                }
            }
            for (_, pe) in set.members() {
                dst.put(&acc, pe)?;
            }
        }
        arrive(w, set, sync, Arrival::Done)
    });
}

macro_rules! sized {
    ($($t:ty => $bcast:ident, $collect:ident, $fcollect:ident, $alltoall:ident, $alltoalls:ident;)*) => {$(
        #[doc = concat!("`", stringify!($bcast), "` (deprecated active-set broadcast).")]
        ///
        /// # Safety
        ///
        /// The routine's C contract: every pointer is valid for the elements the call names.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $bcast(
            dest: *mut c_void, source: *const c_void, nelems: usize, pe_root: c_int,
            pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long,
        ) {
            broadcast::<$t>(stringify!($bcast), dest, source, nelems, pe_root, pe_start,
                log_pe_stride, pe_size, p_sync)
        }

        #[doc = concat!("`", stringify!($collect), "` (deprecated active-set collect).")]
        ///
        /// # Safety
        ///
        /// The routine's C contract: every pointer is valid for the elements the call names.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $collect(
            dest: *mut c_void, source: *const c_void, nelems: usize,
            pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the C contract.
            unsafe {
                collect::<$t>(stringify!($collect), false, dest, source, nelems, pe_start,
                    log_pe_stride, pe_size, p_sync)
            }
        }

        #[doc = concat!("`", stringify!($fcollect), "` (deprecated active-set fcollect).")]
        ///
        /// # Safety
        ///
        /// The routine's C contract: every pointer is valid for the elements the call names.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $fcollect(
            dest: *mut c_void, source: *const c_void, nelems: usize,
            pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the C contract.
            unsafe {
                collect::<$t>(stringify!($fcollect), true, dest, source, nelems, pe_start,
                    log_pe_stride, pe_size, p_sync)
            }
        }

        #[doc = concat!("`", stringify!($alltoall), "` (deprecated active-set alltoall).")]
        ///
        /// # Safety
        ///
        /// The routine's C contract: every pointer is valid for the elements the call names.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $alltoall(
            dest: *mut c_void, source: *const c_void, nelems: usize,
            pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the C contract.
            unsafe {
                alltoall::<$t>(stringify!($alltoall), dest, source, 1, 1, nelems, pe_start,
                    log_pe_stride, pe_size, p_sync)
            }
        }

        #[doc = concat!("`", stringify!($alltoalls), "` (deprecated active-set strided alltoall).")]
        ///
        /// # Safety
        ///
        /// The routine's C contract: every pointer is valid for the elements the call names.
        #[unsafe(no_mangle)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $alltoalls(
            dest: *mut c_void, source: *const c_void, dst: isize, sst: isize, nelems: usize,
            pe_start: c_int, log_pe_stride: c_int, pe_size: c_int, p_sync: *mut c_long,
        ) {
            // SAFETY: forwarded from the C contract.
            unsafe {
                alltoall::<$t>(stringify!($alltoalls), dest, source, dst, sst, nelems,
                    pe_start, log_pe_stride, pe_size, p_sync)
            }
        }
    )*};
}

sized! {
    u32 => shmem_broadcast32, shmem_collect32, shmem_fcollect32, shmem_alltoall32, shmem_alltoalls32;
    u64 => shmem_broadcast64, shmem_collect64, shmem_fcollect64, shmem_alltoall64, shmem_alltoalls64;
}

/// `shmem_barrier`: completes this PE's outstanding operations, then waits for every member of
/// the active set.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_barrier(
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    sync(
        "shmem_barrier",
        true,
        pe_start,
        log_pe_stride,
        pe_size,
        p_sync,
    );
}

/// `shmem_sync`: waits for every member of the active set (no completion of operations).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_sync(
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    p_sync: *mut c_long,
) {
    sync(
        "shmem_sync",
        false,
        pe_start,
        log_pe_stride,
        pe_size,
        p_sync,
    );
}
