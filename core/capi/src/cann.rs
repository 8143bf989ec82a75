//! CANN SHMEM's active-instance contract, as a thin layer over [`Instance`] handles.
//!
//! This is the C ABI's layer: it logs one line for each failed call, as CANN does, since C
//! callers get only a code.
//!
//! CANN programs do not hold instance handles: every call acts on the *active* instance of the
//! process, which `init` makes active and `instance_ctx_set` switches. This module keeps that
//! contract for the C ABI and for code ported from CANN; the Rust API does not need it.
//!
//! The rules (CANN's `shmem_init.cpp`, reference §4.2–§4.5):
//! - `init_attr` with instance id `X` makes `X` active. Creating an id that already has a
//!   context logs a WARN, creates nothing, leaves `X` active and fails with `INNER_ERROR`
//!   (the repeat-init check), as CANN does. An invalid id for the port range fails with
//!   `INVALID_VALUE` and changes nothing. A failed first init of a new id drops its context and
//!   makes instance 0 active again.
//! - `instance_ctx_set(X)` makes `X` active; an unknown id is `INNER_ERROR`.
//! - `finalize_instance(X)` switches to `X` if it is not active (an unknown id is
//!   `INNER_ERROR` and changes nothing), releases it, and leaves instance 0 active.
//!   `finalize()` releases the active instance. Finalising an instance that was never
//!   initialised succeeds.
//! - Every path takes one process-wide mutex, but never holds it across the collective part
//!   of init or finalize: threads driving different instances do not wait for each other. An
//!   id's context exists from the start of its init, so a second `init_attr` of the same id
//!   from another thread meanwhile is a duplicate create (WARN, `INNER_ERROR`) and cannot
//!   disturb the first.
//! - `finalize_instance(X)` also forgets X's integer team handles.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use shmem::{ApiProfile, Attributes, Error, IdState, InitMode, Instance, Result};
use shmem_backend::Limits;

/// `ACLSHMEMX_INIT_WITH_DEFAULT`.
pub const INIT_WITH_DEFAULT: u32 = 1 << 0;
/// `ACLSHMEMX_INIT_WITH_MPI`.
pub const INIT_WITH_MPI: u32 = 1 << 1;
/// `ACLSHMEMX_INIT_WITH_UNIQUEID`.
pub const INIT_WITH_UNIQUEID: u32 = 1 << 3;

/// CANN's `aclshmemx_init_status_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum InitStatus {
    /// `ACLSHMEM_STATUS_NOT_INITIALIZED`.
    NotInitialized = 0,
    /// `ACLSHMEM_STATUS_SHM_CREATED` (the heap exists, init has not finished).
    ShmCreated = 1,
    /// `ACLSHMEM_STATUS_IS_INITIALIZED`.
    IsInitialized = 2,
}

struct Contexts {
    /// The active instance id.
    active: u64,
    /// Ids with a context besides 0 (whose context is permanent).
    known: BTreeSet<u64>,
    /// The instances initialised through this layer: CANN programs hold no handles, so an
    /// instance lives here until its finalize.
    held: BTreeMap<u64, Instance>,
}

static CONTEXTS: Mutex<Contexts> = Mutex::new(Contexts {
    active: 0,
    known: BTreeSet::new(),
    held: BTreeMap::new(),
});

fn contexts() -> MutexGuard<'static, Contexts> {
    CONTEXTS.lock().unwrap_or_else(|p| p.into_inner())
}

impl Contexts {
    fn exists(&self, id: u64) -> bool {
        id == 0 || self.known.contains(&id)
    }
}

/// Creates and initialises the instance `attrs.instance_id` with CANN's init `flags`
/// (`aclshmemx_init_attr`), and makes it active. See the module documentation for what
/// happens to the active instance on each outcome.
pub fn init_attr(flags: u32, attrs: &Attributes) -> Result<Instance> {
    let attrs = mode_from_flags(flags, attrs)?;
    let id = attrs.instance_id;
    let created = {
        let mut c = contexts();
        let exists = c.exists(id);
        if id != 0 && exists {
            // The context exists (live, or being created by another thread, whose init this
            // call must not disturb): CANN's duplicate create.
            crate::log::warn(format_args!(
                "Instance {id} already exists! Please don't repeat create!"
            ));
            c.active = id;
            return Err(Error::AlreadyInitialized { instance_id: id });
        }
        if id != 0 {
            // Port selection runs before the context exists, so a bad range changes nothing.
            // As in CANN, it runs unless the init is a pure unique-id one (an empty `ip_port`
            // with a unique id or an MPI communicator in the attributes).
            if !attrs.ip_port.is_empty() || attrs.mode == InitMode::Default {
                attrs.bootstrap_address()?;
            }
            c.known.insert(id);
        }
        c.active = id;
        if Instance::id_state(id) != IdState::Free {
            return Err(Error::AlreadyInitialized { instance_id: id });
        }
        id != 0
    };
    let r = Instance::init(&attrs);
    let mut c = contexts();
    match &r {
        Ok(inst) => {
            c.held.insert(id, inst.clone());
        }
        Err(_) if created => {
            c.known.remove(&id);
            if c.active == id {
                c.active = 0;
            }
        }
        Err(_) => {}
    }
    r
}

/// The attributes as CANN's flags select the bootstrap: UNIQUEID over MPI over DEFAULT, and
/// DEFAULT falling back to a unique id when `ip_port` is not a usable address.
fn mode_from_flags(flags: u32, attrs: &Attributes) -> Result<Attributes> {
    let known = INIT_WITH_DEFAULT | INIT_WITH_MPI | INIT_WITH_UNIQUEID;
    if flags == 0 || flags & !known != 0 {
        return Err(Error::InvalidParam(format!(
            "init flags {flags:#x} are not DEFAULT (1), MPI (2) or UNIQUEID (8)"
        )));
    }
    let mut a = attrs.clone();
    // CANN programs keep CANN's limits (the NPU's device address space) whatever profile the
    // environment names; the capabilities still follow it.
    let profile = match a.profile {
        Some(p) => p,
        None => ApiProfile::from_env()?,
    };
    a.profile = Some(match profile {
        ApiProfile::OpenShmem => ApiProfile::Full,
        p => p,
    });
    // CANN's heaps are device memory: host code faults on them, as on an NPU.
    a.device_heap = true;
    let uid = matches!(a.mode, InitMode::UniqueId(_));
    if flags & INIT_WITH_UNIQUEID != 0 {
        if !uid {
            return Err(Error::InvalidParam(
                "UNIQUEID init needs a unique id (Attributes::with_unique_id)".into(),
            ));
        }
    } else if flags & INIT_WITH_MPI != 0 {
        if !matches!(a.mode, InitMode::Mpi(_)) {
            a.mode = InitMode::Mpi(None);
        }
    } else if uid && a.bootstrap_address().is_ok() {
        // DEFAULT with a valid ip_port wins over a unique id in comm_args.
        a.mode = InitMode::Default;
    }
    Ok(a)
}

/// Makes instance `id` active (`aclshmemx_instance_ctx_set`).
pub fn instance_ctx_set(id: u64) -> Result<()> {
    let mut c = contexts();
    if !c.exists(id) {
        return Err(Error::UnknownInstance { instance_id: id });
    }
    c.active = id;
    Ok(())
}

/// Fills `attrs` for PE `my_pe` of `n_pes` meeting through `uid`
/// (`aclshmemx_set_attr_uniqueid_args`): checks, in CANN's order, `local_mem_size <= 40 GiB`,
/// `n_pes <= 16384` and `my_pe < 16384` (each failure is `INVALID_VALUE`, as in CANN), then
/// stores the PEs, the size, the id's secret and the unique-id mode in `attrs`; `ip_port` and
/// the rest are left as they are. CANN lets negative values pass here and rejects them at
/// init with `INVALID_VALUE`; the Rust attributes cannot hold them, so they are rejected here,
/// with the same code.
pub fn set_attr_uniqueid_args(
    my_pe: i32,
    n_pes: i32,
    local_mem_size: i64,
    uid: &shmem::UniqueId,
    attrs: &mut Attributes,
) -> Result<()> {
    let (max_mem, max_pes) = (Limits::CANN.max_local_mem, Limits::CANN.max_pes);
    let problem = if i128::from(local_mem_size) > i128::from(max_mem) {
        format!("local_mem_size {local_mem_size} exceeds the maximum of {max_mem} bytes (40 GiB)")
    } else if i64::from(n_pes) > i64::from(max_pes) {
        format!("n_pes {n_pes} exceeds the maximum of {max_pes} PEs")
    } else if i64::from(my_pe) >= i64::from(max_pes) {
        format!("my_pe {my_pe} must be below the maximum of {max_pes} PEs")
    } else if my_pe < 0 || n_pes < 0 {
        format!("my_pe {my_pe} and n_pes {n_pes} must not be negative")
    } else {
        let a = Attributes::with_unique_id(
            my_pe as u32,
            n_pes as u32,
            // C's int64_t to uint64_t: a negative size wraps, and init rejects it as too large.
            local_mem_size as u64,
            uid,
        );
        (attrs.my_pe, attrs.n_pes, attrs.local_mem_size) = (a.my_pe, a.n_pes, a.local_mem_size);
        (attrs.secret, attrs.mode) = (a.secret, a.mode);
        return Ok(());
    };
    Err(Error::InvalidValue(problem))
}

/// The id of the active instance (`aclshmemx_instance_ctx_get()->id`).
pub fn instance_ctx_get() -> u64 {
    contexts().active
}

/// The active instance, if it is initialised.
pub fn active() -> Result<Instance> {
    let id = instance_ctx_get();
    Instance::by_id(id).ok_or_else(|| Error::NotInitialized { instance_id: id })
}

/// The init status of the active instance (`aclshmemx_init_status`).
pub fn init_status() -> InitStatus {
    let id = instance_ctx_get();
    match Instance::id_state(id) {
        IdState::Live => InitStatus::IsInitialized,
        IdState::Initializing => InitStatus::ShmCreated,
        IdState::Free => InitStatus::NotInitialized,
    }
}

/// Releases the active instance (`aclshmem_finalize`).
pub fn finalize() -> Result<()> {
    finalize_instance(instance_ctx_get())
}

/// Releases instance `id`, switching to it first if it is not active, and leaves instance 0
/// active (`aclshmemx_finalize`). Collective over the instance's PEs.
pub fn finalize_instance(id: u64) -> Result<()> {
    let inst = {
        let mut c = contexts();
        if !c.exists(id) {
            return Err(Error::UnknownInstance { instance_id: id });
        }
        c.active = id;
        Instance::by_id(id)
    };
    let r = match inst {
        Some(inst) => inst.finalize(),
        None => Ok(()),
    };
    let mut c = contexts();
    c.known.remove(&id);
    c.held.remove(&id);
    if c.active == id {
        c.active = 0;
    }
    drop(c);
    // The integer team handles of the instance go with it (they hold it alive otherwise).
    teams().retain(|&(instance, _), _| instance != id);
    r
}

/// This PE's number in the active instance (`aclshmem_my_pe`); -1 when it is not initialised.
pub fn my_pe() -> i32 {
    active().map_or(-1, |i| i.my_pe() as i32)
}

/// The number of PEs of the active instance (`aclshmem_n_pes`); -1 when it is not initialised.
pub fn n_pes() -> i32 {
    active().map_or(-1, |i| i.n_pes() as i32)
}

/// `aclshmem_info_get_version`: the CANN SHMEM API version these calls follow (1.1).
pub fn info_get_version() -> (i32, i32) {
    (1, 1)
}

/// `aclshmem_info_get_name`: CANN's library name for the API version these calls follow.
pub fn info_get_name() -> &'static str {
    "ACLSHMEM v1.1.1"
}

// ---- Teams and barriers of the active instance, with CANN's integer team handles. ----
//
// A CANN team handle is the team's index (`aclshmem_team_t`): 0 is the world team, -1 is
// `ACLSHMEM_TEAM_INVALID`. Here indices are agreed by the members, so a handle names the same
// team on every member. CANN supports teams other than the world team only on instance 0; on
// other instances split, translate, get_config, team_my_pe and team_n_pes return
// `ACLSHMEM_NOT_SUPPORTED`, as in CANN.

/// `ACLSHMEM_TEAM_INVALID`.
pub const TEAM_INVALID: i32 = -1;
/// `ACLSHMEM_TEAM_WORLD`.
pub const TEAM_WORLD: i32 = 0;

static TEAMS: Mutex<BTreeMap<(u64, i32), shmem::Team>> = Mutex::new(BTreeMap::new());

fn teams() -> MutexGuard<'static, BTreeMap<(u64, i32), shmem::Team>> {
    TEAMS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The active instance's team with handle `handle`.
fn team(handle: i32) -> Result<shmem::Team> {
    team_of(&active()?, handle)
}

/// Instance `inst`'s team with handle `handle` (what a kernel block that acts on `inst` names
/// by the handle).
pub fn team_of(inst: &Instance, handle: i32) -> Result<shmem::Team> {
    if handle == TEAM_WORLD {
        return Ok(inst.team_world());
    }
    teams()
        .get(&(inst.id(), handle))
        .filter(|t| t.is_live())
        .cloned()
        .ok_or_else(|| {
            Error::InvalidParam(format!(
                "{handle} is not a valid team of instance {}",
                inst.id()
            ))
        })
}

fn single_instance(what: &str) -> Result<Instance> {
    let inst = active()?;
    if inst.id() != 0 {
        return Err(Error::NotSupported(format!(
            "{what} is not supported in multi-instance mode (instance_id={}). Only Instance 0 supports team operations. Please Create new instance instead.",
            inst.id()
        )));
    }
    Ok(inst)
}

fn handle_of(t: Option<shmem::Team>) -> i32 {
    match t {
        None => TEAM_INVALID,
        Some(t) => {
            let h = t.index() as i32;
            teams().insert((t.instance().id(), h), t);
            h
        }
    }
}

/// `aclshmem_team_split_strided`: the new team's handle, or [`TEAM_INVALID`] on a PE that is
/// not a member.
pub fn team_split_strided(parent: i32, start: i32, stride: i32, size: i32) -> Result<i32> {
    single_instance("aclshmem_team_split_strided")?;
    let p = team(parent)?;
    p.split_strided(start, stride, size, shmem::TeamConfig::default())
        .map(handle_of)
}

/// `aclshmem_team_split_2d`: the handles of this PE's row and column teams.
pub fn team_split_2d(parent: i32, xrange: i32) -> Result<(i32, i32)> {
    single_instance("aclshmem_team_split_2d")?;
    let p = team(parent)?;
    let (x, y) = p.split_2d(
        xrange,
        shmem::TeamConfig::default(),
        shmem::TeamConfig::default(),
    )?;
    Ok((handle_of(x), handle_of(y)))
}

/// `aclshmem_team_translate_pe`: -1 when either team is invalid or the PE is not in both;
/// `ACLSHMEM_NOT_SUPPORTED` on instances other than 0.
pub fn team_translate_pe(src: i32, src_pe: i32, dest: i32) -> i32 {
    if let Err(e) = single_instance("aclshmem_team_translate_pe") {
        log_failure("aclshmem_team_translate_pe", &e);
        return shmem::Code::NotSupported as i32;
    }
    match (team(src), team(dest), u32::try_from(src_pe)) {
        (Ok(s), Ok(d), Ok(pe)) => s.translate_pe(pe, &d).map_or(-1, |p| p as i32),
        (Err(e), _, _) | (_, Err(e), _) => logged("aclshmem_team_translate_pe", &e),
        _ => -1,
    }
}

/// Logs a call's failure at the boundary (one line, with its code).
fn log_failure(name: &str, e: &Error) {
    crate::log::init();
    tracing::error!("{name}: {e} (code {})", e.code() as i32);
}

/// Logs a call's failure and gives -1, its answer.
fn logged(name: &str, e: &Error) -> i32 {
    log_failure(name, e);
    -1
}

/// `aclshmem_team_my_pe`: -1 for an invalid team; `ACLSHMEM_NOT_SUPPORTED` on instances
/// other than 0.
pub fn team_my_pe(handle: i32) -> i32 {
    if let Err(e) = single_instance("aclshmem_team_my_pe") {
        log_failure("aclshmem_team_my_pe", &e);
        return shmem::Code::NotSupported as i32;
    }
    team(handle).map_or_else(|e| logged("aclshmem_team_my_pe", &e), |t| t.my_pe() as i32)
}

/// `aclshmem_team_n_pes`: -1 for an invalid team; `ACLSHMEM_NOT_SUPPORTED` on instances
/// other than 0.
pub fn team_n_pes(handle: i32) -> i32 {
    if let Err(e) = single_instance("aclshmem_team_n_pes") {
        log_failure("aclshmem_team_n_pes", &e);
        return shmem::Code::NotSupported as i32;
    }
    team(handle).map_or_else(|e| logged("aclshmem_team_n_pes", &e), |t| t.n_pes() as i32)
}

/// `aclshmem_team_get_config`: `INVALID_PARAM` for an invalid team; `NOT_SUPPORTED` on
/// instances other than 0.
pub fn team_get_config(handle: i32) -> Result<shmem::TeamConfig> {
    single_instance("aclshmem_team_get_config")?;
    team(handle).map(|t| t.config())
}

/// `aclshmem_team_destroy`: an invalid handle is only logged (as in CANN); the world team
/// cannot be destroyed (CANN destroys it, breaking every later call).
pub fn team_destroy(handle: i32) {
    match team(handle) {
        Err(e) => log_failure("aclshmem_team_destroy", &e),
        Ok(t) => {
            let key = (t.instance().id(), handle);
            match t.destroy() {
                Ok(()) => {
                    teams().remove(&key);
                }
                Err(e) => log_failure("aclshmem_team_destroy", &e),
            }
        }
    }
}

/// `aclshmem_barrier`: completes outstanding operations and waits for the team's PEs;
/// [`TEAM_INVALID`] is a no-op.
pub fn barrier(handle: i32) -> Result<()> {
    if handle == TEAM_INVALID {
        return Ok(());
    }
    team(handle)?.barrier()
}

/// `aclshmemx_barrier_on_stream`: the barrier over team `handle`, enqueued on the stream of
/// `ctx` (a context of the active instance made from a stream); [`TEAM_INVALID`] is a no-op.
pub fn barrier_on(handle: i32, ctx: &shmem::Context) -> Result<()> {
    if handle == TEAM_INVALID {
        return Ok(());
    }
    team(handle)?.barrier_on(ctx)
}

/// `aclshmem_barrier_all`.
pub fn barrier_all() -> Result<()> {
    active()?.barrier_all()
}

/// `aclshmem_sync` (the same as CANN's barrier).
pub fn sync(handle: i32) -> Result<()> {
    barrier(handle)
}

/// `aclshmem_sync_all`.
pub fn sync_all() -> Result<()> {
    barrier_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shmem::Code;

    #[test]
    fn set_attr_uniqueid_args_checks_as_cann() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let uid = shmem::UniqueId::with_session(&format!("127.0.0.1:{port}")).expect("a unique id");
        let set = |pe, n, size| {
            let mut a = Attributes::new(0, 1, "tcp://127.0.0.1:2000", 2 << 20);
            set_attr_uniqueid_args(pe, n, size, &uid, &mut a).map(|()| a)
        };
        let a = set(1, 4, 2 << 20).unwrap();
        assert_eq!((a.my_pe, a.n_pes, a.local_mem_size), (1, 4, 2 << 20));
        assert_eq!(a.mode, InitMode::UniqueId(uid));
        assert_eq!(a.ip_port, "tcp://127.0.0.1:2000", "left as it was");
        assert!(set(0, 16384, 40 << 30).is_ok() && set(16383, 16384, 0).is_ok());
        let err = |pe, n, size| set(pe, n, size).unwrap_err();
        assert_eq!(err(0, 2, (40 << 30) + 1).code(), Code::InvalidValue);
        assert!(err(0, 2, i64::MAX).to_string().contains("local_mem_size"));
        let e = err(0, 16385, 2 << 20).to_string();
        assert!(
            e.contains("n_pes 16385 exceeds the maximum of 16384"),
            "{e}"
        );
        assert!(err(16384, 16384, 2 << 20).to_string().contains("my_pe"));
        // CANN's order: memory first, then n_pes, then my_pe.
        assert!(
            err(20000, 20000, i64::MAX)
                .to_string()
                .contains("local_mem_size")
        );
        assert!(err(20000, 20000, 0).to_string().contains("n_pes"));
        assert_eq!(err(-1, 2, 2 << 20).code(), Code::InvalidValue);
        // A negative size wraps, as C's conversion does, and init rejects it.
        let a = set(0, 1, -1).unwrap();
        assert_eq!(a.local_mem_size, u64::MAX);
        assert_eq!(a.validate().unwrap_err().code(), Code::InvalidValue);
    }
}
