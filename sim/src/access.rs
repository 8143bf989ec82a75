//! Raw accesses to mapped segment memory: copies, atomics and signal updates.
//!
//! These functions take addresses that the transport has already bounds-checked and aligned;
//! the memory they touch is shared with other processes, so every word that others may read or
//! write concurrently is accessed through atomics, with the orderings of [`ordering`] (the
//! memory model of `docs/architecture.md`, which the loom models of `sim/tests/loom.rs` check).

use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, fence};

use shmem_backend::{AmoOp, SignalOp, Width};

/// Copies `len` bytes of the program's own memory (its static data) word by word, with volatile
/// accesses, so that no `memcpy` runs.
///
/// A copy of a whole data segment spans many of the program's globals and the redzones between
/// them, which AddressSanitizer's `memcpy` interceptor reports as an overflow in a program
/// built with `-fsanitize=address`. This copy is not intercepted, and it runs once per init or
/// fork, so its speed does not matter.
///
/// # Safety
///
/// `src..src + len` is readable and `dst..dst + len` writable, the two do not overlap, both
/// addresses and `len` are multiples of 8, and nothing else writes either range during the
/// call.
pub unsafe fn copy_program_memory(dst: *mut u8, src: *const u8, len: usize) {
    debug_assert!((dst as usize | src as usize | len).is_multiple_of(8));
    let (dst, src) = (dst.cast::<u64>(), src.cast::<u64>());
    for i in 0..len / 8 {
        // SAFETY: word `i` lies inside both ranges, which are aligned (the caller's contract).
        unsafe { dst.add(i).write_volatile(src.add(i).read_volatile()) };
    }
}

/// The memory ordering of each kind of access, for weakly ordered hosts (Ascend servers run
/// aarch64): one constant per role, used by the accesses here and by the loom models of the
/// protocols built on them.
pub mod ordering {
    use std::sync::atomic::Ordering;

    /// The stores of a put, and a `p` of an aligned scalar (one atomic store): relaxed, as
    /// OpenSHMEM orders puts only by fence, quiet or barrier.
    pub const PUT: Ordering = Ordering::Relaxed;
    /// A `g` of an aligned scalar (one atomic load), and the fence after the copy of a get:
    /// acquire, so that what the reader does next sees what was released before the value.
    pub const GET: Ordering = Ordering::Acquire;
    /// `fence` on the issuing PE: a release fence, ahead of the puts that follow.
    pub const FENCE: Ordering = Ordering::Release;
    /// `quiet` (and so the first half of a barrier): a full fence.
    pub const QUIET: Ordering = Ordering::SeqCst;
    /// A signal SET: a release store, so the data of its put is visible first.
    pub const SIGNAL_SET: Ordering = Ordering::Release;
    /// Atomics and signal ADD: sequentially consistent read-modify-writes.
    pub const RMW: Ordering = Ordering::SeqCst;
    /// The loads of waits and tests (`wait_until`, `test`, `signal_wait_until`, barrier words).
    pub const WAIT: Ordering = Ordering::Acquire;
}

/// Copies `len` bytes from `src` to `dst` (which may overlap) with plain accesses: local
/// buffers, and copies within one PE's own memory.
///
/// # Safety
///
/// `src..src+len` must be readable and `dst..dst+len` writable.
#[inline]
pub(crate) unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: guaranteed by the caller; `copy` tolerates overlap.
    unsafe { std::ptr::copy(src, dst, len) }
}

macro_rules! with_atomic {
    ($width:expr, $ptr:expr, |$a:ident, $t:ident| $body:expr) => {
        match $width {
            Width::W8 => {
                #[allow(dead_code)]
                type $t = u8;
                // SAFETY: the caller guarantees an aligned, live, shared word of this width.
                let $a = unsafe { AtomicU8::from_ptr($ptr.cast()) };
                $body
            }
            Width::W16 => {
                #[allow(dead_code)]
                type $t = u16;
                // SAFETY: as above.
                let $a = unsafe { AtomicU16::from_ptr($ptr.cast()) };
                $body
            }
            Width::W32 => {
                #[allow(dead_code)]
                type $t = u32;
                // SAFETY: as above.
                let $a = unsafe { AtomicU32::from_ptr($ptr.cast()) };
                $body
            }
            Width::W64 => {
                #[allow(dead_code)]
                type $t = u64;
                // SAFETY: as above.
                let $a = unsafe { AtomicU64::from_ptr($ptr.cast()) };
                $body
            }
        }
    };
}

/// The width of an access of `len` bytes at `a` and `b` that can be one atomic access: an
/// aligned 1, 2, 4 or 8-byte scalar. An aligned 8 bytes (a `long` or a `double`, the common
/// element) is tested first, in one branch-free expression, so that a length known only at
/// run time reaches its store without the jump table the compiler builds for the others.
#[inline(always)]
fn scalar(len: usize, a: usize, b: usize) -> Option<Width> {
    if (len ^ 8) | ((a | b) & 7) == 0 {
        return Some(Width::W64);
    }
    let w = match len {
        1 => Width::W8,
        2 => Width::W16,
        4 => Width::W32,
        8 => Width::W64,
        _ => return None,
    };
    (a.is_multiple_of(len) && b.is_multiple_of(len)).then_some(w)
}

/// The stores of a put of `len` bytes from local `src` to shared `dst`: an aligned scalar
/// (`p`) is one atomic store, which cannot tear; anything longer is a copy.
///
/// # Safety
///
/// As for [`copy`], and `dst` is shared segment memory.
#[inline]
pub(crate) unsafe fn put(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: guaranteed by the caller.
    if !unsafe { put_scalar(dst, src, len) } {
        // SAFETY: guaranteed by the caller.
        unsafe { copy(dst, src, len) }
    }
}

/// The put of `len` bytes as one atomic store when they are an aligned scalar; `false`, with
/// nothing written, otherwise (the caller then copies).
///
/// # Safety
///
/// As for [`put`].
#[allow(clippy::useless_conversion)]
#[inline(always)]
pub(crate) unsafe fn put_scalar(dst: *mut u8, src: *const u8, len: usize) -> bool {
    match scalar(len, dst as usize, src as usize) {
        Some(width) => {
            with_atomic!(width, dst, |a, T| {
                // SAFETY: `src` is readable and aligned for `T` (checked by `scalar`).
                let v = unsafe { src.cast::<T>().read() };
                a.store(v, ordering::PUT);
            });
            true
        }
        None => false,
    }
}

/// The loads of a get of `len` bytes from shared `src` into local `dst`: an aligned scalar
/// (`g`) is one acquire load; anything longer is a copy followed by an acquire fence.
///
/// # Safety
///
/// As for [`copy`], and `src` is shared segment memory.
#[allow(clippy::useless_conversion)]
#[inline]
pub(crate) unsafe fn get(dst: *mut u8, src: *const u8, len: usize) {
    match scalar(len, dst as usize, src as usize) {
        Some(width) => with_atomic!(width, src.cast_mut(), |a, T| {
            let v: T = a.load(ordering::GET);
            // SAFETY: `dst` is writable and aligned for `T` (checked by `scalar`).
            unsafe { dst.cast::<T>().write(v) };
        }),
        None => {
            // SAFETY: guaranteed by the caller.
            unsafe { copy(dst, src, len) };
            fence(ordering::GET);
        }
    }
}

/// Performs `op` on the word at `ptr` and returns its previous value. Native CPU atomics
/// (`lock xadd`, `lock cmpxchg`, …), never compare-and-swap loops where the CPU has the
/// operation.
///
/// # Safety
///
/// `ptr` must be valid for reads and writes of `width.bytes()` bytes and aligned to that width.
// The W64 arm converts u64 to u64; the others widen.
#[allow(clippy::useless_conversion)]
#[inline(always)]
pub(crate) unsafe fn amo(ptr: *mut u8, width: Width, op: AmoOp) -> u64 {
    with_atomic!(width, ptr, |a, T| {
        let v = |x: u64| x as T;
        let old = match op {
            AmoOp::Fetch => a.load(ordering::RMW),
            AmoOp::Set(x) | AmoOp::Swap(x) => a.swap(v(x), ordering::RMW),
            AmoOp::CompareSwap { cond, value } => {
                match a.compare_exchange(v(cond), v(value), ordering::RMW, ordering::RMW) {
                    Ok(old) | Err(old) => old,
                }
            }
            AmoOp::Add(x) => a.fetch_add(v(x), ordering::RMW),
            AmoOp::And(x) => a.fetch_and(v(x), ordering::RMW),
            AmoOp::Or(x) => a.fetch_or(v(x), ordering::RMW),
            AmoOp::Xor(x) => a.fetch_xor(v(x), ordering::RMW),
        };
        u64::from(old)
    })
}

/// Loads the word at `ptr` with acquire ordering.
///
/// # Safety
///
/// As for [`amo`] (reads only).
#[allow(clippy::useless_conversion)]
#[inline]
pub(crate) unsafe fn load(ptr: *mut u8, width: Width) -> u64 {
    with_atomic!(width, ptr, |a, T| u64::from(a.load(ordering::WAIT)))
}

/// Applies a signal update to the word at `ptr`: a release store for SET (so data written
/// before it is visible first), a sequentially consistent atomic add for ADD. Returns whether
/// the update was a read-modify-write (which orders it before a later check for sleepers
/// without a fence), and the word's new value.
///
/// # Safety
///
/// As for [`amo`].
#[allow(clippy::useless_conversion)]
#[inline]
pub(crate) unsafe fn signal(ptr: *mut u8, width: Width, op: SignalOp, value: u64) -> (bool, u64) {
    with_atomic!(width, ptr, |a, T| match op {
        SignalOp::Set => {
            a.store(value as T, ordering::SIGNAL_SET);
            (false, u64::from(value as T))
        }
        SignalOp::Add => {
            let old = a.fetch_add(value as T, ordering::RMW);
            (true, u64::from(old.wrapping_add(value as T)))
        }
    })
}

/// Writes the low `width` bytes of `value` to `dst` in native byte order.
///
/// # Safety
///
/// `dst` must be valid for writes of `width.bytes()` bytes (any alignment).
#[inline]
pub(crate) unsafe fn write_value(dst: *mut u8, width: Width, value: u64) {
    let bytes = value.to_ne_bytes();
    #[cfg(target_endian = "big")]
    let bytes = &bytes[8 - width.bytes()..];
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, width.bytes()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomics_by_width() {
        let mut w = [0u64; 2];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: `w` is a live, 8-aligned local array.
        unsafe {
            assert_eq!(amo(p, Width::W64, AmoOp::Add(5)), 0);
            assert_eq!(
                amo(p, Width::W64, AmoOp::CompareSwap { cond: 5, value: 9 }),
                5
            );
            assert_eq!(
                amo(p, Width::W64, AmoOp::CompareSwap { cond: 5, value: 1 }),
                9
            );
            assert_eq!(amo(p, Width::W32, AmoOp::Xor(0xff)), 9);
            assert_eq!(load(p, Width::W32), 9 ^ 0xff);
            signal(p, Width::W16, SignalOp::Set, 0x1234);
            signal(p, Width::W16, SignalOp::Add, 1);
            assert_eq!(load(p, Width::W16), 0x1235);
            assert_eq!(amo(p, Width::W8, AmoOp::Swap(0x7f)), 0x35);
            write_value(p.add(8), Width::W32, 0xdead_beef);
            assert_eq!(load(p.add(8), Width::W32), 0xdead_beef);
        }
    }
}
