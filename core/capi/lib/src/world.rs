//! The default instance of a C program, and symmetric addresses as the Rust core sees them.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use shmem_core::{Error, Instance, Result, Team, ThreadLevel};

/// The default instance: null before the first `shmem_init`. An instance published here is
/// never freed (routines hold `&'static` references to it); a re-initialization after the
/// last `shmem_finalize` publishes a new one, and the finalized one refuses further use.
static WORLD: AtomicPtr<Open> = AtomicPtr::new(std::ptr::null_mut());

/// The default instance with its predefined teams, which routines borrow rather than clone.
struct Open {
    inst: Instance,
    /// `SHMEM_TEAM_WORLD`.
    world: Team,
    /// `SHMEM_TEAM_SHARED`.
    shared: Team,
}

/// Default instances of earlier init/finalize cycles: never freed (a routine of another thread
/// may still hold one), and kept reachable here so that leak checkers (LeakSanitizer, valgrind)
/// do not report them.
static RETIRED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// How many `shmem_init`/`shmem_init_thread` calls are not yet matched by a `shmem_finalize`
/// (OpenSHMEM 1.6 lets them nest). Held while the default instance is created or finalized,
/// so that concurrent calls see one or the other, never half of either.
static OPEN_INITS: Mutex<u32> = Mutex::new(0);

/// The default instance, once `shmem_init` has created it.
#[inline]
pub(crate) fn world() -> Result<&'static Instance> {
    world_if_open().ok_or_else(not_initialized)
}

/// The default instance, if `shmem_init` has created it (and so installed the panic hook).
#[inline(always)]
pub(crate) fn world_if_open() -> Option<&'static Instance> {
    default_if_open().map(|d| &d.inst)
}

#[inline(always)]
fn default_if_open() -> Option<&'static Open> {
    let p = WORLD.load(Ordering::Acquire);
    // SAFETY: a non-null pointer here came from `Box::into_raw` in `open` and is never freed;
    // the acquire load pairs with the release store that published the initialised instance.
    unsafe { p.as_ref() }
}

/// The default instance's world and shared teams (`SHMEM_TEAM_WORLD`, `SHMEM_TEAM_SHARED`).
#[inline]
pub(crate) fn predefined_teams() -> Result<(&'static Team, &'static Team)> {
    let d = default_if_open().ok_or_else(not_initialized)?;
    Ok((&d.world, &d.shared))
}

#[cold]
fn not_initialized() -> Error {
    Error::NotInitialized { instance_id: 0 }
}

/// One `shmem_init`: the first (or the first after the last `shmem_finalize`) creates the
/// default instance with `create`; a nested one returns the thread level it was created with.
/// The panic hook is in before the instance is published, so a routine that finds the
/// instance ([`world_if_open`]) needs no check of its own for the hook.
pub(crate) fn open(
    create: impl FnOnce() -> Result<(Instance, ThreadLevel)>,
) -> Result<ThreadLevel> {
    crate::boundary::enter();
    let mut open = OPEN_INITS.lock().unwrap_or_else(|e| e.into_inner());
    if *open > 0 {
        *open += 1;
        return Ok(world()?.query_thread());
    }
    let (inst, level) = create()?;
    let d = Open {
        world: inst.team_world(),
        shared: inst.team_shared(),
        inst,
    };
    let old = WORLD.swap(Box::into_raw(Box::new(d)), Ordering::AcqRel);
    if !old.is_null() {
        RETIRED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(old as usize);
    }
    *open = 1;
    Ok(level)
}

/// One `shmem_finalize`: the one that matches the first `shmem_init` finalizes the default
/// instance; a finalize with no open init is refused.
pub(crate) fn close() -> Result<()> {
    let mut open = OPEN_INITS.lock().unwrap_or_else(|e| e.into_inner());
    match *open {
        0 => Err(Error::NotInitialized { instance_id: 0 }),
        1 => {
            *open = 0;
            let r = world()?.finalize();
            // The handles of the finished instance name nothing a later init creates.
            crate::ctx::forget_all();
            crate::team::forget_all();
            r
        }
        _ => {
            *open -= 1;
            Ok(())
        }
    }
}

/// The heap offset of the `len` bytes at symmetric address `addr`.
#[inline]
pub(crate) fn offset(inst: &Instance, addr: *const c_void, len: usize) -> Result<usize> {
    inst.offset_of(addr.cast(), len)
        .ok_or_else(|| outside(addr, len))
}

/// The `n` elements of `T` at symmetric address `p` of `inst`, as a view (on the default
/// context; `SymSlice::in_ctx` moves it to another).
#[inline]
pub(crate) fn view<T: bytemuck::Pod>(
    inst: &Instance,
    p: *const T,
    n: usize,
) -> Result<shmem_core::SymSlice<'_, T>> {
    inst.default_ctx().view_at(p, n)
}

#[cold]
fn outside(addr: *const c_void, len: usize) -> Error {
    Error::InvalidParam(format!(
        "{len} bytes at {addr:p} do not lie in the symmetric heap"
    ))
}

/// A PE number from C.
#[inline]
pub(crate) fn pe(pe: std::ffi::c_int) -> Result<u32> {
    u32::try_from(pe).map_err(|_| Error::InvalidPe {
        pe: i64::from(pe),
        n_pes: world().map_or(0, Instance::n_pes),
    })
}
