//! `aclrtMemcpy[Async]` and `aclrtMemset[Async]`, with ACL's checks: a null pointer or a bad
//! kind is 100000; a count of 0, or above the destination's capacity, is 107000; a side that
//! the kind says is device memory and is not (or the reverse) is 107000, as the runtime refuses
//! an address it does not know. Device memory is reached through the runtime's alias.

use std::ffi::c_void;

use shmem_backend::TransportError;

use crate::memory;
use crate::state::{AclResult, INVALID_PARAM, RT_PARAM_INVALID, fail, null};
use crate::streams;

/// Where a copy's side is, as the kind says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Host,
    Device,
    Either,
}

fn sides(kind: i32) -> AclResult<(Side, Side)> {
    use Side::*;
    Ok(match kind {
        0 => (Host, Host),
        1 | 5 => (Host, Device),
        2 => (Device, Host),
        3 => (Device, Device),
        4 => (Either, Either),
        k => return fail(INVALID_PARAM, format!("memcpy kind {k} is not supported")),
    })
}

/// The host address of `len` bytes at `p` on a side: the alias for device memory.
fn reach(p: *const u8, len: usize, side: Side, what: &str) -> AclResult<*mut u8> {
    match memory::alias(p, len) {
        Some(_) if side == Side::Host => fail(
            RT_PARAM_INVALID,
            format!("the {what} {p:p} is device memory, but the copy's kind says host"),
        ),
        Some(a) => Ok(a),
        None if memory::is_device(p) => fail(
            RT_PARAM_INVALID,
            format!("the {what} {p:p} ({len} bytes) runs past its device allocation"),
        ),
        None if side == Side::Device => fail(
            RT_PARAM_INVALID,
            format!("the {what} {p:p} is not device memory from aclrtMalloc"),
        ),
        None => Ok(p.cast_mut()),
    }
}

/// Checks a copy and returns the host addresses of its destination and source.
fn check_copy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> AclResult<(usize, usize)> {
    if dst.is_null() {
        return null("dst");
    }
    if src.is_null() {
        return null("src");
    }
    let (s, d) = sides(kind)?;
    if count == 0 || dest_max == 0 {
        return fail(RT_PARAM_INVALID, "count and destMax must not be 0");
    }
    if count > dest_max {
        return fail(
            RT_PARAM_INVALID,
            format!("count {count} exceeds destMax {dest_max}"),
        );
    }
    let to = reach(dst.cast(), count, d, "destination")?;
    let from = reach(src.cast(), count, s, "source")?;
    Ok((to as usize, from as usize))
}

/// `aclrtMemcpy`: synchronous.
pub(crate) fn memcpy(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
) -> AclResult<()> {
    if dst.cast_const() == src && !dst.is_null() {
        return Ok(()); // ACL copies nothing
    }
    let (to, from) = check_copy(dst, dest_max, src, count, kind)?;
    // SAFETY: both sides were resolved to host-accessible memory of `count` bytes (the
    // program's own host buffers, or the runtime's alias of its device memory).
    unsafe { copy_bytes(to as *mut u8, from as *const u8, count) };
    Ok(())
}

/// Copies `count` bytes (the two ranges may overlap). An aligned 2, 4 or 8-byte scalar is one
/// load and one store, so that a word of device memory that a PE writes meanwhile is read
/// whole, as a device copy engine reads it: libc's `memmove` reads a 2- or 3-byte copy's last
/// byte a second time, which tore a 16-bit word a waiting PE polled (0xff64 read between 0x0064
/// and 0xfffe).
///
/// # Safety
///
/// `from..from + count` is readable and `to..to + count` writable.
unsafe fn copy_bytes(to: *mut u8, from: *const u8, count: usize) {
    use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering::Acquire};
    let aligned = |size: usize| (to as usize | from as usize).is_multiple_of(size);
    // SAFETY: in each arm, `count` bytes at both addresses are valid (the caller's contract), and
    // the arm's alignment was checked; the source may be shared, so it is read atomically.
    unsafe {
        match count {
            2 if aligned(2) => to
                .cast::<u16>()
                .write(AtomicU16::from_ptr(from.cast_mut().cast()).load(Acquire)),
            4 if aligned(4) => to
                .cast::<u32>()
                .write(AtomicU32::from_ptr(from.cast_mut().cast()).load(Acquire)),
            8 if aligned(8) => to
                .cast::<u64>()
                .write(AtomicU64::from_ptr(from.cast_mut().cast()).load(Acquire)),
            _ => std::ptr::copy(from, to, count),
        }
    }
}

/// `aclrtMemcpyAsync`: checked now, copied in stream order.
pub(crate) fn memcpy_async(
    dst: *mut c_void,
    dest_max: usize,
    src: *const c_void,
    count: usize,
    kind: i32,
    stream: *mut c_void,
) -> AclResult<()> {
    let s = streams::resolve(stream)?;
    let (to, from) = check_copy(dst, dest_max, src, count, kind)?;
    s.enqueue(move || {
        // SAFETY: checked at enqueue; the program keeps host buffers and device memory alive
        // until the stream is synchronised (ACL's contract).
        unsafe { copy_bytes(to as *mut u8, from as *const u8, count) };
        Ok::<(), TransportError>(())
    });
    Ok(())
}

fn check_set(p: *mut c_void, max: usize, count: usize) -> AclResult<usize> {
    if p.is_null() {
        return null("devPtr");
    }
    if count == 0 {
        return fail(RT_PARAM_INVALID, "count is 0");
    }
    if count > max {
        return fail(
            RT_PARAM_INVALID,
            format!("count {count} exceeds maxCount {max}"),
        );
    }
    Ok(reach(p.cast(), count, Side::Device, "devPtr")? as usize)
}

/// `aclrtMemset`: synchronous, on device memory.
pub(crate) fn memset(p: *mut c_void, max: usize, value: i32, count: usize) -> AclResult<()> {
    let to = check_set(p, max, count)?;
    // SAFETY: resolved to the runtime's alias of `count` bytes of device memory.
    unsafe { std::ptr::write_bytes(to as *mut u8, value as u8, count) };
    Ok(())
}

/// `aclrtMemsetAsync`.
pub(crate) fn memset_async(
    p: *mut c_void,
    max: usize,
    value: i32,
    count: usize,
    stream: *mut c_void,
) -> AclResult<()> {
    let s = streams::resolve(stream)?;
    let to = check_set(p, max, count)?;
    s.enqueue(move || {
        // SAFETY: checked at enqueue; the device memory stays allocated until the stream is
        // synchronised (ACL's contract).
        unsafe { std::ptr::write_bytes(to as *mut u8, value as u8, count) };
        Ok::<(), TransportError>(())
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::copy_bytes;
    use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};

    /// A 16-bit word that another thread flips between two values is always read as one of
    /// them (libc's memmove could read 0xff64 between 0x0064 and 0xfffe).
    #[test]
    fn a_scalar_another_thread_writes_is_copied_whole() {
        let word = AtomicU16::new(0x0064);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    word.store(0xfffe, Ordering::Relaxed);
                    word.store(0x0064, Ordering::Relaxed);
                }
            });
            let torn = (0..200_000).find_map(|_| {
                let mut got = 0u16;
                // SAFETY: two readable bytes, two writable.
                unsafe { copy_bytes((&raw mut got).cast(), word.as_ptr().cast(), 2) };
                (got != 0x0064 && got != 0xfffe).then_some(got)
            });
            done.store(true, Ordering::Relaxed);
            assert_eq!(torn, None, "a torn read");
        });
    }
}
