//! CANN's host RMA (`host/data_plane/shmem_host_rma.h`): the typed `put`, `put_nbi`, `get`,
//! `get_nbi`, `p` and `g` for CANN's 11 RMA types, `putmem`/`getmem` (and `_nbi`), their
//! `_on_stream` forms and `aclshmemx_quiet_on_stream`.
//!
//! As in CANN, a host RMA call is a kernel launched on a stream (the active instance's default
//! stream, or the one given): it returns at once and completes asynchronously, in stream order;
//! no host RMA call synchronises the stream. The barriers do (`team.rs`), and so does
//! `aclrtSynchronizeStream` for a given stream. `aclshmem_<T>_g` is a synchronous read of the
//! peer's memory, not ordered after queued puts, as in CANN. Under the simulator's strict mode
//! (`SHMEM_SIM_STRICT=1`) queued work runs only when the stream is synchronised, so a result read
//! before a barrier is stale every time, as it can be on an NPU.
//!
//! The remote side of a put or get is symmetric memory of the instance (the heap); the local side
//! is symmetric memory or device memory from `aclrtMalloc` (global memory, which CANN's kernels
//! read and write). Host memory is refused with `INVALID_PARAM`, as it cannot work on an NPU. The
//! strided and signal forms take symmetric memory on both sides.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use shmem_capi::cann;
use shmem_core::{Context, Error, Instance, Result, Stream};

use super::failed;

/// The active instance's default stream and the context whose work runs on it.
struct DefaultStream {
    stream: Stream,
    ctx: Context,
}

/// The default stream of each instance that has one (made at its first RMA call).
static DEFAULTS: Mutex<BTreeMap<u64, Arc<DefaultStream>>> = Mutex::new(BTreeMap::new());

fn defaults() -> std::sync::MutexGuard<'static, BTreeMap<u64, Arc<DefaultStream>>> {
    DEFAULTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The default stream of `inst`.
fn default_stream(inst: &Instance) -> Result<Arc<DefaultStream>> {
    let mut all = defaults();
    if let Some(d) = all.get(&inst.id()) {
        return Ok(d.clone());
    }
    let stream = Stream::new();
    let ctx = if inst.backend_name() == "sim" {
        inst.stream_ctx(&stream)?
    } else {
        // The hw backend runs every host call on a stream of its own, in call order.
        inst.ctx_create(shmem_core::CtxOptions::default())?
    };
    let d = Arc::new(DefaultStream { stream, ctx });
    all.insert(inst.id(), d.clone());
    Ok(d)
}

/// Completes the work queued on the active instance's default stream (before a barrier).
pub(crate) fn synchronize_default() -> Result<()> {
    let Ok(inst) = cann::active() else {
        return Ok(());
    };
    let d = defaults().get(&inst.id()).cloned();
    match d {
        Some(d) => d.stream.synchronize(),
        None => Ok(()),
    }
}

/// The default stream of `inst` (that of its host calls with no stream).
pub(crate) fn default_stream_of(inst: &Instance) -> Result<Stream> {
    Ok(default_stream(inst)?.stream.clone())
}

/// Completes and forgets instance `id`'s default stream (at its finalize).
pub(crate) fn forget(id: u64) {
    if let Some(d) = defaults().remove(&id) {
        let _ = d.stream.synchronize();
    }
}

/// The stream an `aclrtStream` names: NULL is the default stream.
///
/// # Safety
///
/// `stream` is NULL or a live stream of the ACL runtime stand-in (`aclrtCreateStream`), which
/// is a handle of the simulator's stream executor.
pub(crate) unsafe fn context_for(inst: &Instance, stream: *mut c_void) -> Result<Context> {
    if stream.is_null() {
        if inst.backend_name() != "sim" {
            // The hw backend runs every host call on a stream of its own, in call order.
            return inst.ctx_create(shmem_core::CtxOptions::default());
        }
        // A context of its own on the default stream: the same stream, so the same order.
        return inst.stream_ctx(&default_stream(inst)?.stream);
    }
    #[cfg(not(feature = "stand-in"))]
    if inst.backend_name() == "hw" {
        // SAFETY: a live `aclrtStream` of the runtime the hw backend drives (the contract).
        let lent = unsafe { shmem_hw::AclStream::from_raw(stream) };
        return inst.stream_ctx(&Stream::Acl(shmem_hw::DeviceStream::lent(lent)));
    }
    // SAFETY: a live `aclrtStream` is a pointer from `shmem_sim::Stream::into_raw`.
    let s = unsafe { shmem_sim::Stream::from_raw(stream) };
    inst.stream_ctx(&Stream::Sim(s))
}

/// The heap view of `len` bytes at symmetric address `p` of `inst`, on `ctx`.
fn symmetric<'a>(
    ctx: &'a Context,
    p: *const c_void,
    len: usize,
    what: &str,
) -> Result<shmem_core::SymSlice<'a, u8>> {
    ctx.as_ref()
        .view_at(p.cast::<u8>(), len)
        .map_err(|_| not_symmetric(what, p, len))
}

/// The refusal of `len` bytes at `p` as the `what` operand: not symmetric memory.
pub(crate) fn not_symmetric(what: &str, p: *const c_void, len: usize) -> Error {
    Error::InvalidParam(format!(
        "the {what} ({len} bytes at {p:p}) is not symmetric memory of the instance"
    ))
}

/// Where the ACL runtime reaches `len` bytes of device memory at `p` (from `aclrtMalloc`), or
/// the refusal of them as the `what` operand: host memory is `INVALID_PARAM`, as on an NPU.
pub(crate) fn device_operand(p: *const c_void, len: usize, what: &str) -> Result<*mut u8> {
    super::acl::device_alias(p, len).ok_or_else(|| {
        Error::InvalidParam(format!(
            "the {what} ({len} bytes at {p:p}) is neither symmetric memory of the instance nor device memory from aclrtMalloc"
        ))
    })
}

/// Serialises the short registrations of device operands (two calls on one buffer must not
/// register it twice).
static DEVICE_OPERANDS: Mutex<()> = Mutex::new(());

/// Runs `f` with `len` bytes of device memory at `p` (from `aclrtMalloc`) registered with
/// `inst` as the range the simulator reaches through the runtime's alias; host memory is
/// `INVALID_PARAM`. Queued stream work reads or writes the alias when it runs: the program
/// keeps the buffer until it synchronises the stream, as on an NPU.
fn with_device(
    inst: &Instance,
    p: *const c_void,
    len: usize,
    what: &str,
    f: impl FnOnce(shmem_core::DeviceRange) -> Result<()>,
) -> Result<()> {
    // The simulator reaches device memory through the runtime stand-in's alias of it; the hw
    // backend hands the device address itself to CANN SHMEM, after the same check where the
    // loaded runtime can tell device memory (the stand-in can; CANN's runtime checks it then).
    let alias = match device_operand(p, len, what) {
        Ok(alias) if inst.backend_name() == "sim" => alias,
        Ok(_) => p.cast_mut().cast(),
        Err(e) if inst.backend_name() == "sim" || super::acl::tells_device_memory() => {
            return Err(e);
        }
        Err(_) => p.cast_mut().cast(),
    };
    let _one = DEVICE_OPERANDS.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the runtime's alias of a live allocation stays mapped while the program keeps the
    // allocation, which it must while the operation may run (CANN's contract).
    let range = unsafe { inst.register_device(alias as u64, len) }?;
    let r = f(range);
    let _ = inst.deregister_device(range.addr);
    r
}

/// The active instance and PE `pe` as an unsigned number (the core checks it is one of the
/// instance's).
pub(crate) fn target(pe: c_int) -> Result<(Instance, u32)> {
    let inst = cann::active()?;
    let pe = u32::try_from(pe).map_err(|_| Error::InvalidParam(format!("PE {pe}")))?;
    Ok((inst, pe))
}

/// Runs a void RMA call, logging a failure.
pub(crate) fn run(name: &str, f: impl FnOnce() -> Result<()>) {
    crate::boundary::enter();
    if let Err(e) = f() {
        failed(name, &e);
    }
}

/// A put of `len` bytes from symmetric `src` to symmetric `dst` on `pe`, on `stream` (NULL:
/// the default stream).
///
/// # Safety
///
/// As for [`context_for`].
pub(crate) unsafe fn put(
    name: &str,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    run(name, || {
        if len == 0 {
            return Ok(());
        }
        let (inst, pe) = target(pe)?;
        // SAFETY: forwarded.
        let ctx = unsafe { context_for(&inst, stream) }?;
        let to = symmetric(&ctx, dst, len, "destination")?;
        match ctx.as_ref().view_at(src.cast::<u8>(), len) {
            Ok(from) => to.put_from(from, pe),
            Err(_) => with_device(&inst, src, len, "source", |d| to.put_from_device(d, pe)),
        }
    });
}

/// A get of `len` bytes from symmetric `src` on `pe` into symmetric `dst`, on `stream`.
///
/// # Safety
///
/// As for [`context_for`].
pub(crate) unsafe fn get(
    name: &str,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    run(name, || {
        if len == 0 {
            return Ok(());
        }
        let (inst, pe) = target(pe)?;
        // SAFETY: forwarded.
        let ctx = unsafe { context_for(&inst, stream) }?;
        let from = symmetric(&ctx, src, len, "source")?;
        match ctx.as_ref().view_at(dst.cast_const().cast::<u8>(), len) {
            Ok(to) => from.get_into(to, pe),
            Err(_) => with_device(&inst, dst, len, "destination", |d| {
                from.get_into_device(d, pe)
            }),
        }
    });
}

/// `aclshmem_<T>_p`: the value, copied now, put on `pe` in stream order.
pub(crate) fn p<T: bytemuck::Pod>(name: &str, dst: *mut T, value: T, pe: c_int) {
    run(name, || {
        let (inst, pe) = target(pe)?;
        let d = default_stream(&inst)?;
        let to = d.ctx.as_ref().view_at(dst.cast_const(), 1)?;
        to.p(0, value, pe)
    });
}

/// `aclshmem_<T>_g`: a synchronous read of `pe`'s element, not ordered after queued puts.
pub(crate) fn g<T: bytemuck::Pod + Default>(name: &str, src: *const T, pe: c_int) -> T {
    crate::boundary::enter();
    let r = (|| {
        let (inst, pe) = target(pe)?;
        inst.default_ctx().view_at(src, 1)?.g(0, pe)
    })();
    r.unwrap_or_else(|e| {
        failed(name, &e);
        T::default()
    })
}

macro_rules! typed {
    ($($name:ident: $t:ty;)*) => {$(
        paste_typed!($name, $t);
    )*};
}

macro_rules! paste_typed {
    ($name:ident, $t:ty) => {
        #[doc = concat!("CANN's RMA on `", stringify!($t), "` (`aclshmem_", stringify!($name), "_*`).")]
        pub mod $name {
            use super::*;

            #[doc = concat!("`aclshmem_", stringify!($name), "_put`: `nelems` elements, on the default stream.")]
            ///
            /// # Safety
            ///
            /// CANN's contract: both are symmetric addresses.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_put"))]
            pub unsafe extern "C" fn put(dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int) {
                let len = nelems.saturating_mul(size_of::<$t>());
                // SAFETY: the default stream.
                unsafe { super::put(concat!("aclshmem_", stringify!($name), "_put"), dest.cast(), source.cast_const().cast(), len, pe, std::ptr::null_mut()) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_put_nbi`.")]
            ///
            /// # Safety
            ///
            /// As for the blocking form.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_put_nbi"))]
            pub unsafe extern "C" fn put_nbi(dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int) {
                let len = nelems.saturating_mul(size_of::<$t>());
                // SAFETY: the default stream.
                unsafe { super::put(concat!("aclshmem_", stringify!($name), "_put_nbi"), dest.cast(), source.cast_const().cast(), len, pe, std::ptr::null_mut()) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_get`.")]
            ///
            /// # Safety
            ///
            /// CANN's contract: both are symmetric addresses.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_get"))]
            pub unsafe extern "C" fn get(dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int) {
                let len = nelems.saturating_mul(size_of::<$t>());
                // SAFETY: the default stream.
                unsafe { super::get(concat!("aclshmem_", stringify!($name), "_get"), dest.cast(), source.cast_const().cast(), len, pe, std::ptr::null_mut()) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_get_nbi`.")]
            ///
            /// # Safety
            ///
            /// As for the blocking form.
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_get_nbi"))]
            pub unsafe extern "C" fn get_nbi(dest: *mut $t, source: *mut $t, nelems: usize, pe: c_int) {
                let len = nelems.saturating_mul(size_of::<$t>());
                // SAFETY: the default stream.
                unsafe { super::get(concat!("aclshmem_", stringify!($name), "_get_nbi"), dest.cast(), source.cast_const().cast(), len, pe, std::ptr::null_mut()) }
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_p`.")]
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_p"))]
            pub extern "C" fn p(dst: *mut $t, value: $t, pe: c_int) {
                super::p(concat!("aclshmem_", stringify!($name), "_p"), dst, value, pe)
            }

            #[doc = concat!("`aclshmem_", stringify!($name), "_g`.")]
            #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_g"))]
            pub extern "C" fn g(src: *mut $t, pe: i32) -> $t {
                super::g(concat!("aclshmem_", stringify!($name), "_g"), src.cast_const(), pe)
            }
        }
    };
}

rma_types!(typed);

/// `aclshmem_putmem`: `elem_size` bytes, on the default stream.
///
/// # Safety
///
/// CANN's contract: both are symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_putmem(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the default stream.
    unsafe {
        put(
            "aclshmem_putmem",
            dst,
            src,
            elem_size,
            pe,
            std::ptr::null_mut(),
        )
    }
}

/// `aclshmem_getmem`.
///
/// # Safety
///
/// CANN's contract: both are symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_getmem(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the default stream.
    unsafe {
        get(
            "aclshmem_getmem",
            dst,
            src,
            elem_size,
            pe,
            std::ptr::null_mut(),
        )
    }
}

/// `aclshmem_putmem_nbi`.
///
/// # Safety
///
/// CANN's contract: both are symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_putmem_nbi(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the default stream.
    unsafe {
        put(
            "aclshmem_putmem_nbi",
            dst,
            src,
            elem_size,
            pe,
            std::ptr::null_mut(),
        )
    }
}

/// `aclshmem_getmem_nbi`.
///
/// # Safety
///
/// CANN's contract: both are symmetric addresses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_getmem_nbi(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
) {
    // SAFETY: the default stream.
    unsafe {
        get(
            "aclshmem_getmem_nbi",
            dst,
            src,
            elem_size,
            pe,
            std::ptr::null_mut(),
        )
    }
}

macro_rules! sized {
    ($($bits:literal: $put:ident, $put_nbi:ident, $get:ident, $get_nbi:ident;)*) => {$(
        #[doc = concat!("`", stringify!($put), "`: `elem_size` elements of ", stringify!($bits), " bits, on the default stream.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $put(dst: *mut c_void, src: *mut c_void, elem_size: u32, pe: i32) {
            let len = (elem_size as usize).saturating_mul($bits / 8);
            // SAFETY: the default stream.
            unsafe { put(stringify!($put), dst, src, len, pe, std::ptr::null_mut()) }
        }

        #[doc = concat!("`", stringify!($put_nbi), "`.")]
        ///
        /// # Safety
        ///
        /// As for the blocking form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $put_nbi(dst: *mut c_void, src: *mut c_void, elem_size: u32, pe: i32) {
            let len = (elem_size as usize).saturating_mul($bits / 8);
            // SAFETY: the default stream.
            unsafe { put(stringify!($put_nbi), dst, src, len, pe, std::ptr::null_mut()) }
        }

        #[doc = concat!("`", stringify!($get), "`.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(dst: *mut c_void, src: *mut c_void, elem_size: u32, pe: i32) {
            let len = (elem_size as usize).saturating_mul($bits / 8);
            // SAFETY: the default stream.
            unsafe { get(stringify!($get), dst, src, len, pe, std::ptr::null_mut()) }
        }

        #[doc = concat!("`", stringify!($get_nbi), "`.")]
        ///
        /// # Safety
        ///
        /// As for the blocking form.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get_nbi(dst: *mut c_void, src: *mut c_void, elem_size: u32, pe: i32) {
            let len = (elem_size as usize).saturating_mul($bits / 8);
            // SAFETY: the default stream.
            unsafe { get(stringify!($get_nbi), dst, src, len, pe, std::ptr::null_mut()) }
        }
    )*};
}

sized! {
    8: aclshmem_put8, aclshmem_put8_nbi, aclshmem_get8, aclshmem_get8_nbi;
    16: aclshmem_put16, aclshmem_put16_nbi, aclshmem_get16, aclshmem_get16_nbi;
    32: aclshmem_put32, aclshmem_put32_nbi, aclshmem_get32, aclshmem_get32_nbi;
    64: aclshmem_put64, aclshmem_put64_nbi, aclshmem_get64, aclshmem_get64_nbi;
    128: aclshmem_put128, aclshmem_put128_nbi, aclshmem_get128, aclshmem_get128_nbi;
}

/// The engines' UB staging configurations: the simulator moves data without staging, so a
/// configuration changes nothing, but it is checked as CANN checks it (the RDMA and UDMA
/// staging buffers need at least 128 bytes) and then accepted.
fn engine_config(name: &str, ub_size: u32, min: u32) -> c_int {
    super::code(name, || {
        cann::active()?;
        if ub_size < min {
            return Err(Error::InvalidValue(format!(
                "ub_size {ub_size} is below the engine's minimum of {min} bytes"
            )));
        }
        Ok(())
    })
}

/// `aclshmemx_set_mte_config`: the UB buffer through which the active instance's kernels
/// stage their transfers (kernels launched later read it, as CANN's read the device state).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_mte_config(offset: u64, ub_size: u32, sync_id: u32) -> c_int {
    let rc = engine_config("aclshmemx_set_mte_config", ub_size, 0);
    if rc == 0
        && let Ok(inst) = cann::active()
    {
        super::device_state::set_mte_config(inst.id(), offset, ub_size, sync_id);
    }
    rc
}

/// `aclshmemx_set_sdma_config`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_sdma_config(offset: u64, ub_size: u32, sync_id: u32) -> c_int {
    let _ = (offset, sync_id);
    engine_config("aclshmemx_set_sdma_config", ub_size, 0)
}

/// `aclshmemx_set_rdma_config`: `ub_size` below 128 is `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_rdma_config(offset: u64, ub_size: u32, sync_id: u32) -> c_int {
    let _ = (offset, sync_id);
    engine_config("aclshmemx_set_rdma_config", ub_size, 128)
}

/// `aclshmemx_set_udma_config`: `ub_size` below 128 is `INVALID_VALUE`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmemx_set_udma_config(offset: u64, ub_size: u32, sync_id: u32) -> c_int {
    let _ = (offset, sync_id);
    engine_config("aclshmemx_set_udma_config", ub_size, 128)
}

/// The number of elements a strided access of `nelems` elements, `stride` apart, spans from its
/// first one. CANN's strides are positive element counts (`ptrdiff_t`); 0 repeats an element.
fn strided_len(what: &str, stride: isize, nelems: usize) -> Result<usize> {
    let stride = usize::try_from(stride).map_err(|_| {
        Error::InvalidParam(format!(
            "the {what} stride {stride} is negative; CANN's strides are element counts of 0 or more"
        ))
    })?;
    (nelems - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(1))
        .ok_or_else(|| Error::InvalidParam(format!("{nelems} elements {stride} apart overflow")))
}

/// The direction of a strided call.
#[derive(Clone, Copy)]
enum Dir {
    /// `iput`: from this PE's `source` to `dest` on the PE.
    Put,
    /// `iget`: from `source` on the PE to this PE's `dest`.
    Get,
}

/// `aclshmem_<T>_iput`/`_iget` and `aclshmem_iput<BITS>`/`iget<BITS>`: element `i * sst` of
/// symmetric `source` goes to element `i * dst` of symmetric `dest`, the remote side on `pe`
/// (`dest` for a put, `source` for a get), on the default stream.
///
/// # Safety
///
/// CANN's contract: both are symmetric addresses.
#[allow(clippy::too_many_arguments)]
unsafe fn strided<T: bytemuck::Pod>(
    name: &str,
    dir: Dir,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    nelems: usize,
    pe: c_int,
) {
    run(name, || {
        if nelems == 0 {
            return Ok(());
        }
        let (inst, pe) = target(pe)?;
        // SAFETY: the default stream.
        let ctx = unsafe { context_for(&inst, std::ptr::null_mut()) }?;
        let to = ctx
            .as_ref()
            .view_at(dest.cast_const(), strided_len("destination", dst, nelems)?)?;
        let from = ctx
            .as_ref()
            .view_at(source, strided_len("source", sst, nelems)?)?;
        match dir {
            Dir::Put => to.iput_from(dst, from, sst, nelems, pe),
            Dir::Get => from.iget_into(sst, to, dst, nelems, pe),
        }
    });
}

macro_rules! strided_typed {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("`aclshmem_", stringify!($name), "_iput`: strided, on the default stream.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_iput"))]
        pub unsafe extern "C" fn $name(dest: *mut $t, source: *mut $t, dst: isize, sst: isize, nelems: usize, pe: c_int) {
            // SAFETY: forwarded.
            unsafe { strided(concat!("aclshmem_", stringify!($name), "_iput"), Dir::Put, dest, source.cast_const(), dst, sst, nelems, pe) }
        }
    )*};
}

macro_rules! strided_get_typed {
    ($($name:ident: $t:ty;)*) => {$(
        #[doc = concat!("`aclshmem_", stringify!($name), "_iget`: strided, on the default stream.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(export_name = concat!("aclshmem_", stringify!($name), "_iget"))]
        pub unsafe extern "C" fn $name(dest: *mut $t, source: *mut $t, dst: isize, sst: isize, nelems: usize, pe: c_int) {
            // SAFETY: forwarded.
            unsafe { strided(concat!("aclshmem_", stringify!($name), "_iget"), Dir::Get, dest, source.cast_const(), dst, sst, nelems, pe) }
        }
    )*};
}

/// CANN's strided puts, one per RMA type (`aclshmem_<T>_iput`).
pub mod iput_typed {
    use super::*;
    rma_types!(strided_typed);
}

/// CANN's strided gets, one per RMA type (`aclshmem_<T>_iget`).
pub mod iget_typed {
    use super::*;
    rma_types!(strided_get_typed);
}

macro_rules! strided_sized {
    ($($bytes:literal: $iput:ident, $iget:ident;)*) => {$(
        #[doc = concat!("`", stringify!($iput), "`: strided elements of ", stringify!($bytes), " bytes, on the default stream.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $iput(dest: *mut c_void, source: *mut c_void, dst: isize, sst: isize, nelems: usize, pe: c_int) {
            // SAFETY: forwarded.
            unsafe { strided::<[u8; $bytes]>(stringify!($iput), Dir::Put, dest.cast(), source.cast_const().cast(), dst, sst, nelems, pe) }
        }

        #[doc = concat!("`", stringify!($iget), "`: strided elements of ", stringify!($bytes), " bytes, on the default stream.")]
        ///
        /// # Safety
        ///
        /// CANN's contract: both are symmetric addresses.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $iget(dest: *mut c_void, source: *mut c_void, dst: isize, sst: isize, nelems: usize, pe: c_int) {
            // SAFETY: forwarded.
            unsafe { strided::<[u8; $bytes]>(stringify!($iget), Dir::Get, dest.cast(), source.cast_const().cast(), dst, sst, nelems, pe) }
        }
    )*};
}

strided_sized! {
    1: aclshmem_iput8, aclshmem_iget8;
    2: aclshmem_iput16, aclshmem_iget16;
    4: aclshmem_iput32, aclshmem_iget32;
    8: aclshmem_iput64, aclshmem_iget64;
    16: aclshmem_iput128, aclshmem_iget128;
}
