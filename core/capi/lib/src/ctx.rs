//! Contexts from C: `shmem_ctx_t` handles. `SHMEM_CTX_DEFAULT` is the default context of the
//! default instance; a created context is a [`Context`] owned by the handle until
//! `shmem_ctx_destroy`. Handles are checked against the live ones, so a destroyed or made-up
//! handle is an error, not a read of freed memory.

use std::ffi::{c_int, c_long, c_void};

use shmem_core::{Context, CtxOptions, CtxRef, Error, Result};

use crate::boundary::call;
use crate::handles::Handles;
use crate::world::{world, world_if_open};

/// `shmem_ctx_t`.
#[allow(non_camel_case_types)]
pub type shmem_ctx_t = *mut c_void;

/// A handle exported as a C object.
#[repr(transparent)]
#[derive(Debug)]
pub struct Handle(pub *mut c_void);

// SAFETY: the handle is an address used as a name; it is never dereferenced through this type.
unsafe impl Sync for Handle {}

static DEFAULT_MARK: u8 = 0;

/// `SHMEM_CTX_DEFAULT`.
#[unsafe(no_mangle)]
pub static SHMEM_CTX_DEFAULT: Handle = Handle((&raw const DEFAULT_MARK).cast_mut().cast());

/// The created contexts the program holds.
static LIVE: Handles<Context> = Handles::new();

/// The default context's handle.
#[inline]
pub(crate) fn default() -> shmem_ctx_t {
    SHMEM_CTX_DEFAULT.0
}

/// The default instance's default context, when `ctx` names it and `shmem_init` has run
/// (which installed the panic hook): the common case, which the hot routines (RMA, atomics)
/// take inline before their general path.
#[inline(always)]
pub(crate) fn plain_ctx(ctx: shmem_ctx_t) -> Option<CtxRef<'static>> {
    if ctx == default() {
        world_if_open().map(|w| w.default_ctx())
    } else {
        None
    }
}

/// The context a handle names.
#[inline(always)]
pub(crate) fn ctx_ref(ctx: shmem_ctx_t) -> Result<CtxRef<'static>> {
    if ctx == default() {
        return Ok(world()?.default_ctx());
    }
    created(ctx).map(Context::as_ref)
}

/// The context a handle other than `SHMEM_CTX_DEFAULT` names, if it is live.
#[inline(never)]
pub(crate) fn created(ctx: shmem_ctx_t) -> Result<&'static Context> {
    LIVE.get(ctx).ok_or_else(|| {
        Error::InvalidParam(format!(
            "{ctx:p} is not a live context (SHMEM_CTX_INVALID, destroyed, or never created)"
        ))
    })
}

/// Makes a handle of a created context.
pub(crate) fn adopt(c: Context) -> Result<shmem_ctx_t> {
    LIVE.insert(c).ok_or_else(too_many)
}

#[cold]
fn too_many() -> Error {
    Error::InvalidParam("too many live contexts: every handle the process can have is taken".into())
}

fn options(o: c_long) -> Result<CtxOptions> {
    u32::try_from(o)
        .ok()
        .filter(|o| o & !0b111 == 0)
        .map(CtxOptions)
        .ok_or_else(|| {
            Error::InvalidParam(format!(
                "{o:#x} is not a combination of SHMEM_CTX_* options"
            ))
        })
}

/// `shmem_ctx_create`: 0, with `*ctx` set, or non-zero with `*ctx` set to `SHMEM_CTX_INVALID`.
///
/// # Safety
///
/// `ctx` is valid for a write of a handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_create(opts: c_long, ctx: *mut shmem_ctx_t) -> c_int {
    if ctx.is_null() {
        return call("shmem_ctx_create", -1, || {
            Err(Error::InvalidParam("ctx is NULL".into()))
        });
    }
    let made = call("shmem_ctx_create", None, || {
        Ok(Some(adopt(world()?.ctx_create(options(opts)?)?)?))
    });
    // SAFETY: non-null and valid per the contract.
    unsafe { ctx.write(made.unwrap_or(std::ptr::null_mut())) };
    if made.is_some() { 0 } else { -1 }
}

/// `shmem_ctx_destroy`: completes the context's operations and frees it; the default context
/// and `SHMEM_CTX_INVALID` are left alone.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_destroy(ctx: shmem_ctx_t) {
    if ctx.is_null() || ctx == default() {
        return;
    }
    call("shmem_ctx_destroy", (), || {
        LIVE.remove(ctx)
            .ok_or_else(|| Error::InvalidParam(format!("{ctx:p} is not a live context")))?
            .destroy()
    });
}

/// Forgets every created context (the default instance was finalized): their handles are
/// refused from now on, as the specification makes them invalid, and their memory is freed.
pub(crate) fn forget_all() {
    drop(LIVE.take_all());
}

/// `shmem_ctx_quiet`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_quiet(ctx: shmem_ctx_t) {
    call("shmem_ctx_quiet", (), || ctx_ref(ctx)?.quiet());
}

/// `shmem_ctx_fence`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_fence(ctx: shmem_ctx_t) {
    call("shmem_ctx_fence", (), || ctx_ref(ctx)?.fence());
}

/// `shmem_ctx_pe_quiet` (OpenSHMEM 1.6): completes the context's operations to the PEs named;
/// here, all of the context's operations (a stronger completion the specification allows).
///
/// # Safety
///
/// `target_pes` is null or readable for `npes` values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_pe_quiet(
    ctx: shmem_ctx_t,
    target_pes: *const c_int,
    npes: usize,
) {
    // SAFETY: forwarded.
    unsafe { pe_quiet("shmem_ctx_pe_quiet", ctx, target_pes, npes) }
}

/// `shmem_[ctx_]pe_quiet`: every PE of the list checked, then the context's quiet.
///
/// # Safety
///
/// `target_pes` is valid for `npes` reads (or null when `npes` is 0).
unsafe fn pe_quiet(name: &str, ctx: shmem_ctx_t, target_pes: *const c_int, npes: usize) {
    call(name, (), || {
        let c = ctx_ref(ctx)?;
        if npes > 0 && target_pes.is_null() {
            return Err(Error::InvalidParam("target_pes is NULL".into()));
        }
        let pes: &[c_int] = if npes == 0 {
            &[]
        } else {
            // SAFETY: valid for `npes` reads per the contract.
            unsafe { std::slice::from_raw_parts(target_pes, npes) }
        };
        let pes = pes
            .iter()
            .map(|&p| crate::world::pe(p))
            .collect::<Result<Vec<_>>>()?;
        c.pe_quiet(&pes)
    });
}

/// `shmem_pe_quiet` (OpenSHMEM 1.6), on the default context.
///
/// # Safety
///
/// As for [`shmem_ctx_pe_quiet`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_pe_quiet(target_pes: *const c_int, npes: usize) {
    // SAFETY: forwarded.
    unsafe { pe_quiet("shmem_pe_quiet", default(), target_pes, npes) }
}

/// `shmem_ctx_session_start` (OpenSHMEM 1.6): a performance hint, which the simulator, whose
/// operations cost the same either way, takes note of and ignores.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_session_start(
    ctx: shmem_ctx_t,
    options: c_long,
    config: *const c_void,
    mask: c_long,
) {
    let _ = (options, config, mask);
    call("shmem_ctx_session_start", (), || ctx_ref(ctx).map(drop));
}

/// `shmem_ctx_session_stop` (OpenSHMEM 1.6): ends the hinted session; as a session may batch
/// operations, it completes the context's.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_session_stop(ctx: shmem_ctx_t) {
    call("shmem_ctx_session_stop", (), || ctx_ref(ctx)?.quiet());
}
