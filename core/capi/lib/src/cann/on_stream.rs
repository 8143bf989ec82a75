//! CANN's host calls that take an `aclrtStream` (`aclshmemx_putmem_on_stream`, `getmem`,
//! `signal_op`, `signal_wait_until`, `quiet`, `barrier`, `barrier_all`): each enqueues a 1-block
//! kernel on the stream (NULL: the active instance's default stream), as CANN's do, whose block
//! makes the device call; the caller synchronises the stream. Their arguments are checked when
//! the call is made (a bad one is logged then, and nothing is enqueued); the block reaches
//! device memory as every kernel does (`kernel.rs`).

use std::ffi::{c_int, c_void};

use shmem_capi::cann;
use shmem_core::{Error, Instance, Result};

use super::device;
use super::kernel::{kernel_stream, run_rust_block};
use super::rma::{device_operand, not_symmetric, run};

/// Whether the active instance runs on the hw backend, where these calls go to CANN SHMEM's
/// own `_on_stream` calls with the program's stream (through a context made from it) instead
/// of kernels on the simulator's cores.
fn on_hw() -> bool {
    cann::active().is_ok_and(|i| i.backend_name() == "hw")
}

/// The context of `stream` on the active instance (NULL: the host calls' default context).
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
unsafe fn hw_context(stream: *mut c_void) -> Result<(Instance, shmem_core::Context)> {
    let inst = cann::active()?;
    // SAFETY: forwarded.
    let ctx = unsafe { super::rma::context_for(&inst, stream) }?;
    Ok((inst, ctx))
}

/// An address carried into a kernel (read only by its block).
#[derive(Clone, Copy)]
struct Addr(usize);

impl Addr {
    fn of<T>(p: *const T) -> Addr {
        Addr(p as usize)
    }
    fn ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }
}

/// Enqueues the 1-block kernel `name` acting on `inst` on `stream`: its block runs `body`.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
unsafe fn kernel(
    name: &str,
    inst: &Instance,
    stream: *mut c_void,
    body: impl Fn() + Send + Sync + 'static,
) -> Result<shmem_core::Stream> {
    // SAFETY: forwarded.
    let s = unsafe { kernel_stream(stream) }?;
    shmem_core::launch_starting_on(&s, name, 1, Some(inst.clone()), move |dev| {
        run_rust_block(dev, &body)
    })?;
    Ok(s)
}

/// The active instance and `pe`, checked to be one of its PEs.
fn target(pe: c_int) -> Result<(Instance, c_int)> {
    let inst = cann::active()?;
    if u32::try_from(pe).is_ok_and(|p| p < inst.n_pes()) {
        Ok((inst, pe))
    } else {
        Err(Error::InvalidParam(format!(
            "PE {pe} is not a PE of instance {} ({} PEs)",
            inst.id(),
            inst.n_pes()
        )))
    }
}

/// Checks that `len` bytes at `p` are symmetric memory of `inst`.
fn symmetric(inst: &Instance, p: *const c_void, len: usize, what: &str) -> Result<()> {
    match inst.offset_of(p.cast(), len.max(1)) {
        Some(_) => Ok(()),
        None => Err(not_symmetric(what, p, len)),
    }
}

/// Where the kernel reaches the local operand `p`: symmetric memory, or device memory from
/// `aclrtMalloc` (the runtime's alias); host memory is refused, as on an NPU.
fn local(inst: &Instance, p: *const c_void, len: usize, what: &str) -> Result<Addr> {
    if inst.offset_of(p.cast(), len.max(1)).is_some() {
        return Ok(Addr::of(p));
    }
    device_operand(p, len.max(1), what).map(|a| Addr::of(a.cast_const()))
}

/// A put (`get == 0`) or get of `len` bytes on a stream.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
unsafe fn copy(
    name: &'static str,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    stream: *mut c_void,
) {
    if on_hw() {
        // SAFETY: forwarded; the host RMA takes the same operands on the same stream.
        unsafe {
            match get {
                0 => super::rma::put(name, dst, src, len, pe, stream),
                _ => super::rma::get(name, dst, src.cast_mut(), len, pe, stream),
            }
        }
        return;
    }
    run(name, || {
        let (inst, pe) = target(pe)?;
        if len == 0 {
            return Ok(());
        }
        let (remote, near) = match get {
            0 => (dst.cast_const(), src),
            _ => (src, dst.cast_const()),
        };
        symmetric(
            &inst,
            remote,
            len,
            if get == 0 { "destination" } else { "source" },
        )?;
        let near = local(
            &inst,
            near,
            len,
            if get == 0 { "source" } else { "destination" },
        )?;
        let remote = Addr::of(remote);
        let (d, s) = match get {
            0 => (remote, near),
            _ => (near, remote),
        };
        let body = move || {
            // SAFETY: the operands were checked above; the call's contract keeps them live
            // until the stream is synchronised.
            unsafe { device::copy(name, get, d.ptr(), s.ptr::<c_void>().cast_const(), len, pe) };
        };
        // SAFETY: forwarded.
        unsafe { kernel(name, &inst, stream, body) }.map(drop)
    });
}

/// `aclshmemx_putmem_on_stream`: `elem_size` bytes from `src` (symmetric, or device memory) to
/// PE `pe`'s copy of symmetric `dst`, as a 1-block kernel on `stream` (NULL: the default
/// stream).
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`; the buffers stay live until it is synchronised.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_putmem_on_stream(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
    stream: *mut c_void,
) {
    // SAFETY: forwarded.
    unsafe {
        copy(
            "aclshmemx_putmem_on_stream",
            0,
            dst,
            src,
            elem_size,
            pe,
            stream,
        )
    }
}

/// `aclshmemx_getmem_on_stream`: `elem_size` bytes from PE `pe`'s copy of symmetric `src` to
/// `dst` (symmetric, or device memory), as a 1-block kernel on `stream`.
///
/// # Safety
///
/// As for [`aclshmemx_putmem_on_stream`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_getmem_on_stream(
    dst: *mut c_void,
    src: *mut c_void,
    elem_size: usize,
    pe: i32,
    stream: *mut c_void,
) {
    // SAFETY: forwarded.
    unsafe {
        copy(
            "aclshmemx_getmem_on_stream",
            1,
            dst,
            src,
            elem_size,
            pe,
            stream,
        )
    }
}

/// `aclshmemx_signal_op_on_stream`: SET or ADD on PE `pe`'s copy of the signal word at
/// `sig_addr`, as a 1-block kernel on `stream`.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_signal_op_on_stream(
    sig_addr: *mut i32,
    signal: i32,
    sig_op: c_int,
    pe: c_int,
    stream: *mut c_void,
) {
    let name = "aclshmemx_signal_op_on_stream";
    run(name, || {
        if !matches!(sig_op, 0 | 1) {
            return Err(Error::InvalidParam(format!(
                "{sig_op} is not a signal operation (ACLSHMEM_SIGNAL_SET or _ADD)"
            )));
        }
        if on_hw() {
            let op = shmem_core::SignalOp::from_raw(sig_op).expect("checked above");
            let pe = u32::try_from(pe).map_err(|_| Error::InvalidParam(format!("PE {pe}")))?;
            // SAFETY: forwarded.
            let (_, ctx) = unsafe { hw_context(stream) }?;
            return ctx
                .as_ref()
                .elem_at(sig_addr.cast_const())?
                .signal_op(signal, op, pe);
        }
        let (inst, pe) = target(pe)?;
        symmetric(&inst, sig_addr.cast(), 4, "signal word")?;
        let sig = Addr::of(sig_addr);
        // SAFETY: forwarded.
        unsafe {
            kernel(name, &inst, stream, move || {
                device::aclsimd_signal_op(sig.ptr(), signal, sig_op, pe);
            })
        }
        .map(drop)
    });
}

/// `aclshmemx_signal_wait_until_on_stream`: a 1-block kernel on `stream` that waits until the
/// signal word at `sig_addr` compares `cmp` to `cmp_val`; the host does not wait.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_signal_wait_until_on_stream(
    sig_addr: *mut i32,
    cmp: c_int,
    cmp_val: i32,
    stream: *mut c_void,
) {
    let name = "aclshmemx_signal_wait_until_on_stream";
    run(name, || {
        if !(0..=5).contains(&cmp) {
            return Err(Error::InvalidParam(format!(
                "{cmp} is not a comparison (ACLSHMEM_CMP_EQ to _LE)"
            )));
        }
        if on_hw() {
            let cmp = shmem_core::Cmp::from_raw(cmp).expect("checked above");
            // SAFETY: forwarded.
            let (_, ctx) = unsafe { hw_context(stream) }?;
            let sig = ctx.as_ref().elem_at(sig_addr.cast_const())?;
            // The default stream's calls complete in call order: the host waits there.
            return if stream.is_null() {
                sig.signal_wait_until(cmp, cmp_val).map(drop)
            } else {
                sig.signal_wait_until_on_stream(cmp, cmp_val)
            };
        }
        let inst = cann::active()?;
        symmetric(&inst, sig_addr.cast(), 4, "signal word")?;
        let sig = Addr::of(sig_addr);
        // SAFETY: forwarded.
        unsafe {
            kernel(name, &inst, stream, move || {
                device::wait_until(name, sig.ptr::<c_void>().cast_const(), cmp, cmp_val);
            })
        }
        .map(drop)
    });
}

/// `aclshmemx_quiet_on_stream`: a 1-block kernel on `stream` after which the transfers of the
/// work before it on the stream are complete.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_quiet_on_stream(stream: *mut c_void) {
    let name = "aclshmemx_quiet_on_stream";
    run(name, || {
        if on_hw() {
            // SAFETY: forwarded.
            let (_, ctx) = unsafe { hw_context(stream) }?;
            // On the program's stream CANN's quiet is enqueued (a fence of the stream); the
            // default stream's calls have completed already.
            return if stream.is_null() {
                ctx.quiet()
            } else {
                ctx.fence()
            };
        }
        let inst = cann::active()?;
        // SAFETY: forwarded.
        unsafe { kernel(name, &inst, stream, || device::aclsimd_quiet()) }.map(drop)
    });
}

/// A barrier over team `team` as a 1-block kernel on `stream`; with a NULL stream (ACL's
/// default stream, which this library does not drive) it is complete when the call returns.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
unsafe fn barrier(name: &'static str, team: c_int, stream: *mut c_void) {
    if team == cann::TEAM_INVALID {
        return;
    }
    run(name, || {
        if on_hw() {
            // SAFETY: forwarded.
            let (inst, ctx) = unsafe { hw_context(stream) }?;
            let t = cann::team_of(&inst, team)?;
            return if stream.is_null() {
                t.barrier()
            } else {
                t.barrier_on(&ctx)
            };
        }
        let inst = cann::active()?;
        cann::team_of(&inst, team)?;
        // SAFETY: forwarded.
        let s = unsafe { kernel(name, &inst, stream, move || device::aclsimd_barrier(team)) }?;
        if stream.is_null() {
            s.synchronize()?;
        }
        Ok(())
    });
}

/// `aclshmemx_barrier_on_stream`: `ACLSHMEM_TEAM_INVALID` is a no-op.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_barrier_on_stream(team: c_int, stream: *mut c_void) {
    // SAFETY: forwarded.
    unsafe { barrier("aclshmemx_barrier_on_stream", team, stream) }
}

/// `aclshmemx_barrier_all_on_stream`.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmemx_barrier_all_on_stream(stream: *mut c_void) {
    // SAFETY: forwarded.
    unsafe { barrier("aclshmemx_barrier_all_on_stream", cann::TEAM_WORLD, stream) }
}
