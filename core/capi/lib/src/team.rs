//! Teams from C: `shmem_team_t` handles. `SHMEM_TEAM_WORLD` and `SHMEM_TEAM_SHARED` name the
//! default instance's world and shared teams; a split team is a [`Team`] owned by its handle
//! until `shmem_team_destroy`. Handles are checked against the live ones.

use std::ffi::{c_int, c_long, c_void};

use shmem_core::{CtxOptions, Error, Result, Team, TeamConfig};

use crate::boundary::call;
use crate::ctx::{Handle, shmem_ctx_t};
use crate::handles::Handles;
use crate::world::{predefined_teams, world};

/// `shmem_team_t`.
#[allow(non_camel_case_types)]
pub type shmem_team_t = *mut c_void;

/// `shmem_team_config_t` (OpenSHMEM 1.5).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(non_camel_case_types)]
pub struct shmem_team_config_t {
    /// The number of contexts the program will create from the team.
    pub num_contexts: c_int,
}

/// `SHMEM_TEAM_NUM_CONTEXTS`, the mask bit of `num_contexts`.
const NUM_CONTEXTS: c_long = 1;

static WORLD_MARK: u8 = 0;
static SHARED_MARK: u8 = 0;

/// `SHMEM_TEAM_WORLD`.
#[unsafe(no_mangle)]
pub static SHMEM_TEAM_WORLD: Handle = Handle((&raw const WORLD_MARK).cast_mut().cast());
/// `SHMEM_TEAM_SHARED`.
#[unsafe(no_mangle)]
pub static SHMEM_TEAM_SHARED: Handle = Handle((&raw const SHARED_MARK).cast_mut().cast());

/// The split teams the program holds.
static LIVE: Handles<Team> = Handles::new();

/// The team a handle names.
pub(crate) fn team(t: shmem_team_t) -> Result<&'static Team> {
    let (world, shared) = predefined_teams()?;
    if t == SHMEM_TEAM_WORLD.0 {
        return Ok(world);
    }
    if t == SHMEM_TEAM_SHARED.0 {
        return Ok(shared);
    }
    LIVE.get(t).ok_or_else(|| {
        Error::InvalidParam(format!(
            "{t:p} is not a live team (SHMEM_TEAM_INVALID, destroyed, or never created)"
        ))
    })
}

fn adopt(t: Option<Team>) -> Result<shmem_team_t> {
    match t {
        None => Ok(std::ptr::null_mut()),
        Some(t) => LIVE.insert(t).ok_or_else(|| {
            Error::InvalidParam(
                "too many live teams: every handle the process can have is taken".into(),
            )
        }),
    }
}

/// The handle the program holds for team `t`: a predefined one, or the live handle of the
/// split that made it.
fn handle_of(t: &Team) -> Result<shmem_team_t> {
    let (world, shared) = predefined_teams()?;
    if t.index() == world.index() {
        return Ok(SHMEM_TEAM_WORLD.0);
    }
    if t.index() == shared.index() {
        return Ok(SHMEM_TEAM_SHARED.0);
    }
    LIVE.find(|h| h.index() == t.index())
        .ok_or_else(|| Error::InvalidParam("the context's team has been destroyed".into()))
}

fn config(c: *const shmem_team_config_t, mask: c_long) -> TeamConfig {
    let mut out = TeamConfig::default();
    if !c.is_null() && mask & NUM_CONTEXTS != 0 {
        // SAFETY: non-null, valid per the C contract.
        out.num_contexts = unsafe { (*c).num_contexts };
    }
    out
}

/// `shmem_team_my_pe`: -1 for an invalid team.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_my_pe(t: shmem_team_t) -> c_int {
    team(t).map_or(-1, |t| t.my_pe() as c_int)
}

/// `shmem_team_n_pes`: -1 for an invalid team.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_n_pes(t: shmem_team_t) -> c_int {
    team(t).map_or(-1, |t| t.n_pes() as c_int)
}

/// `shmem_team_get_config`: 0, or non-zero for an invalid team.
///
/// # Safety
///
/// `config` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_get_config(
    t: shmem_team_t,
    mask: c_long,
    config: *mut shmem_team_config_t,
) -> c_int {
    call("shmem_team_get_config", -1, || {
        let c = team(t)?.config();
        if !config.is_null() && mask & NUM_CONTEXTS != 0 {
            // SAFETY: non-null, valid per the contract.
            unsafe { (*config).num_contexts = c.num_contexts };
        }
        Ok(0)
    })
}

/// `shmem_team_translate_pe`: -1 when either team is invalid or the PE is not in both.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_translate_pe(
    src: shmem_team_t,
    src_pe: c_int,
    dest: shmem_team_t,
) -> c_int {
    match (team(src), team(dest), u32::try_from(src_pe)) {
        (Ok(s), Ok(d), Ok(pe)) => s.translate_pe(pe, d).map_or(-1, |p| p as c_int),
        _ => -1,
    }
}

/// `shmem_team_split_strided`: 0 (with `*new_team` the team, or `SHMEM_TEAM_INVALID` on a PE
/// outside it), non-zero on an error.
///
/// # Safety
///
/// `config` is null or readable; `new_team` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: shmem_team_t,
    start: c_int,
    stride: c_int,
    size: c_int,
    cfg: *const shmem_team_config_t,
    mask: c_long,
    new_team: *mut shmem_team_t,
) -> c_int {
    // OpenSHMEM 1.6 defines a team of one PE whatever the stride; the core, which bounds a
    // stride by the PE limit as CANN does, takes it with a stride of 1.
    let stride = if size == 1 { 1 } else { stride };
    let made = call("shmem_team_split_strided", None, || {
        let made = team(parent)?.split_strided(start, stride, size, config(cfg, mask))?;
        Ok(Some(adopt(made)?))
    });
    if !new_team.is_null() {
        // SAFETY: valid per the contract.
        unsafe { new_team.write(made.unwrap_or(std::ptr::null_mut())) };
    }
    if made.is_some() { 0 } else { -1 }
}

/// `shmem_team_split_2d`.
///
/// # Safety
///
/// The configurations are null or readable; the team pointers are valid for writes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: shmem_team_t,
    xrange: c_int,
    xcfg: *const shmem_team_config_t,
    xmask: c_long,
    xteam: *mut shmem_team_t,
    ycfg: *const shmem_team_config_t,
    ymask: c_long,
    yteam: *mut shmem_team_t,
) -> c_int {
    let made = call("shmem_team_split_2d", None, || {
        let (x, y) = team(parent)?.split_2d(xrange, config(xcfg, xmask), config(ycfg, ymask))?;
        Ok(Some((adopt(x)?, adopt(y)?)))
    });
    let (x, y) = made.unwrap_or((std::ptr::null_mut(), std::ptr::null_mut()));
    // SAFETY: valid per the contract when non-null.
    unsafe {
        if !xteam.is_null() {
            xteam.write(x);
        }
        if !yteam.is_null() {
            yteam.write(y);
        }
    }
    if made.is_some() { 0 } else { -1 }
}

/// `shmem_team_destroy`: the world and shared teams and `SHMEM_TEAM_INVALID` are left alone.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_destroy(t: shmem_team_t) {
    if t.is_null() || t == SHMEM_TEAM_WORLD.0 || t == SHMEM_TEAM_SHARED.0 {
        return;
    }
    call("shmem_team_destroy", (), || {
        LIVE.remove(t)
            .ok_or_else(|| Error::InvalidParam(format!("{t:p} is not a live team")))?
            .destroy()
    });
}

/// Forgets every split team (the default instance was finalized): their handles are refused
/// from now on, as the specification makes them invalid, and their memory is freed.
pub(crate) fn forget_all() {
    drop(LIVE.take_all());
}

/// `shmem_team_sync`: 0, or non-zero for an invalid team.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_sync(t: shmem_team_t) -> c_int {
    call("shmem_team_sync", -1, || team(t)?.sync().map(|()| 0))
}

/// `shmem_team_create_ctx`.
///
/// # Safety
///
/// `ctx` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_create_ctx(
    t: shmem_team_t,
    options: c_long,
    ctx: *mut shmem_ctx_t,
) -> c_int {
    let made = call("shmem_team_create_ctx", None, || {
        let o = u32::try_from(options)
            .ok()
            .filter(|o| o & !0b111 == 0)
            .map(CtxOptions)
            .ok_or_else(|| {
                Error::InvalidParam(format!(
                    "{options:#x} is not a combination of SHMEM_CTX_* options"
                ))
            })?;
        Ok(Some(crate::ctx::adopt(team(t)?.create_ctx(o)?)?))
    });
    if !ctx.is_null() {
        // SAFETY: valid per the contract.
        unsafe { ctx.write(made.unwrap_or(std::ptr::null_mut())) };
    }
    if made.is_some() { 0 } else { -1 }
}

/// `shmem_ctx_get_team`: the team a context was made from (`SHMEM_TEAM_WORLD` for the
/// default context and contexts of the instance).
///
/// # Safety
///
/// `out` is valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: shmem_ctx_t, out: *mut shmem_team_t) -> c_int {
    // SHMEM_CTX_INVALID has no team, as the specification says: not an error to report.
    let found = (!ctx.is_null())
        .then(|| {
            call("shmem_ctx_get_team", None, || {
                if ctx == crate::ctx::default() {
                    return Ok(Some(SHMEM_TEAM_WORLD.0));
                }
                handle_of(&crate::ctx::created(ctx)?.team()).map(Some)
            })
        })
        .flatten();
    if out.is_null() {
        return -1;
    }
    // SAFETY: valid per the contract.
    unsafe { out.write(found.unwrap_or(std::ptr::null_mut())) };
    if found.is_some() { 0 } else { -1 }
}

/// `shmem_team_ptr` (OpenSHMEM 1.6): where this process can load and store team PE `pe`'s
/// copy of `dest`, or NULL.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_ptr(t: shmem_team_t, dest: *const c_void, pe: c_int) -> *mut c_void {
    let (Ok(t), Ok(w), Ok(pe)) = (team(t), world(), u32::try_from(pe)) else {
        return std::ptr::null_mut();
    };
    if crate::world::offset(w, dest, 0).is_err() {
        return std::ptr::null_mut();
    }
    match t.to_instance_pe(pe) {
        Ok(p) => w
            .ptr(dest.cast(), p)
            .map_or(std::ptr::null_mut(), |q| q.as_ptr().cast()),
        Err(_) => std::ptr::null_mut(),
    }
}
