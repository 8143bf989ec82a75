//! CANN's host put-with-signal and signal calls (`host/data_plane/shmem_host_so.h`): the typed
//! `put_signal` and `put_signal_nbi` for CANN's 11 RMA types, the sized `put<BITS>_signal` (and
//! `_nbi`), `aclshmemx_putmem_signal` (and `_nbi`), and `aclshmemx_signal_op_on_stream`.
//!
//! As CANN's, each is a kernel on the active instance's default stream (or the stream given):
//! it returns at once; in stream order the data is written and then the signal word updated,
//! so a PE that sees the signal sees the data. The signal word is an `int32_t` whatever the
//! pointer's type (the typed forms take `uint8_t *`), and `sig_op` is `ACLSHMEM_SIGNAL_SET` (0)
//! or `ACLSHMEM_SIGNAL_ADD` (1). Data and signal word are symmetric memory of the instance.

use std::ffi::{c_int, c_void};

use bytemuck::Pod;

use super::rma::{context_for, run, target};
use crate::p2p::signal_op;

/// A put of `nelems` elements from symmetric `src` to symmetric `dst` on `pe`, then the update
/// of the signal word at `sig_addr` on `pe`, on `stream` (NULL: the default stream).
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[allow(clippy::too_many_arguments)]
unsafe fn put_signal<T: Pod>(
    name: &str,
    dst: *mut T,
    src: *const T,
    nelems: usize,
    sig_addr: *const i32,
    signal: i32,
    sig_op: c_int,
    pe: c_int,
    stream: *mut c_void,
) {
    run(name, || {
        let op = signal_op(sig_op)?;
        let (inst, pe) = target(pe)?;
        // SAFETY: forwarded.
        let ctx = unsafe { context_for(&inst, stream) }?;
        let c = ctx.as_ref();
        let sig = c.elem_at(sig_addr)?;
        let to = c.view_at(dst.cast_const(), nelems)?;
        let from = c.view_at(src, nelems)?;
        to.put_signal_from(from, sig, signal, op, pe)
    });
}

macro_rules! typed {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("CANN's put-with-signal on `", stringify!($t), "` (`aclshmem_", stringify!($name), "_put_signal*`).")]
        pub mod $name {
            use super::*;

            #[doc = concat!("`aclshmem_", stringify!($name), "_put_signal`: `elem_size` elements, then the signal.")]
            ///
            /// # Safety
            ///
            /// CANN's contract: symmetric addresses.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_put_signal"))]
            pub unsafe extern "C" fn put_signal(dst: *mut $t, src: *mut $t, elem_size: usize, sig_addr: *mut u8, signal: i32, sig_op: c_int, pe: c_int) {
                // SAFETY: the default stream.
                unsafe { super::put_signal(concat!("aclshmem_", stringify!($name), "_put_signal"), dst, src.cast_const(), elem_size, sig_addr.cast_const().cast(), signal, sig_op, pe, std::ptr::null_mut()) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_put_signal_nbi`.")]
            ///
            /// # Safety
            ///
            /// CANN's contract: symmetric addresses.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_put_signal_nbi"))]
            pub unsafe extern "C" fn put_signal_nbi(dst: *mut $t, src: *mut $t, elem_size: usize, sig_addr: *mut u8, signal: i32, sig_op: c_int, pe: c_int) {
                // SAFETY: the default stream.
                unsafe { super::put_signal(concat!("aclshmem_", stringify!($name), "_put_signal_nbi"), dst, src.cast_const(), elem_size, sig_addr.cast_const().cast(), signal, sig_op, pe, std::ptr::null_mut()) }
            }
        }
    )*};
}

rma_types!(typed);

macro_rules! sized {
    ($($bytes:literal: $put:ident, $put_nbi:ident;)*) => {$(
        #[doc = concat!("`", stringify!($put), "`: `nelems` elements of ", stringify!($bytes), " bytes, then the signal.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $put(dst: *mut c_void, src: *mut c_void, nelems: usize, sig_addr: *mut i32, signal: i32, sig_op: c_int, pe: c_int) {
            // SAFETY: the default stream.
            unsafe { put_signal::<[u8; $bytes]>(stringify!($put), dst.cast(), src.cast_const().cast(), nelems, sig_addr.cast_const(), signal, sig_op, pe, std::ptr::null_mut()) }
        }

        #[doc = concat!("`", stringify!($put_nbi), "`.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $put_nbi(dst: *mut c_void, src: *mut c_void, nelems: usize, sig_addr: *mut i32, signal: i32, sig_op: c_int, pe: c_int) {
            // SAFETY: the default stream.
            unsafe { put_signal::<[u8; $bytes]>(stringify!($put_nbi), dst.cast(), src.cast_const().cast(), nelems, sig_addr.cast_const(), signal, sig_op, pe, std::ptr::null_mut()) }
        }
    )*};
}

sized! {
    1: aclshmem_put8_signal, aclshmem_put8_signal_nbi;
    2: aclshmem_put16_signal, aclshmem_put16_signal_nbi;
    4: aclshmem_put32_signal, aclshmem_put32_signal_nbi;
    8: aclshmem_put64_signal, aclshmem_put64_signal_nbi;
    16: aclshmem_put128_signal, aclshmem_put128_signal_nbi;
}

/// `aclshmemx_putmem_signal`: `elem_size` bytes, then the signal.
///
/// # Safety
///
/// CANN's contract: symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_putmem_signal(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    sig_addr: *mut c_void,
    signal: i32,
    sig_op: c_int,
    pe: c_int,
) {
    // SAFETY: the default stream.
    unsafe {
        put_signal::<u8>(
            "aclshmemx_putmem_signal",
            dst.cast(),
            src.cast_const().cast(),
            elem_size,
            sig_addr.cast_const().cast(),
            signal,
            sig_op,
            pe,
            std::ptr::null_mut(),
        )
    }
}

/// `aclshmemx_putmem_signal_nbi`.
///
/// # Safety
///
/// CANN's contract: symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_putmem_signal_nbi(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    sig_addr: *mut c_void,
    signal: i32,
    sig_op: c_int,
    pe: c_int,
) {
    // SAFETY: the default stream.
    unsafe {
        put_signal::<u8>(
            "aclshmemx_putmem_signal_nbi",
            dst.cast(),
            src.cast_const().cast(),
            elem_size,
            sig_addr.cast_const().cast(),
            signal,
            sig_op,
            pe,
            std::ptr::null_mut(),
        )
    }
}
