//! CANN's teams and barriers (`host/team/shmem_host_team.h`, `host/data_plane/shmem_host_cc.h`)
//! with integer handles, on the active instance; teams other than the world team exist only on
//! instance 0 (`ACLSHMEM_NOT_SUPPORTED` elsewhere), as in CANN.

use std::ffi::c_int;

use shmem_capi::cann;
use shmem_core::Error;

use super::types::aclshmem_team_config_t;
use super::{code, failed};

/// `aclshmem_team_t`.
#[allow(non_camel_case_types)]
pub type aclshmem_team_t = c_int;

/// `aclshmem_team_split_strided`: 0 with `*new_team` the team, or -1 on a PE that is not a
/// member; CANN's code otherwise.
///
/// # Safety
///
/// `new_team` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_team_split_strided(
    parent_team: aclshmem_team_t,
    pe_start: c_int,
    pe_stride: c_int,
    pe_size: c_int,
    new_team: *mut aclshmem_team_t,
) -> c_int {
    code("aclshmem_team_split_strided", || {
        if new_team.is_null() {
            return Err(Error::InvalidParam("new_team is NULL".into()));
        }
        // SAFETY: non-null, valid per the contract.
        unsafe { new_team.write(cann::TEAM_INVALID) };
        let t = cann::team_split_strided(parent_team, pe_start, pe_stride, pe_size)?;
        // SAFETY: as above.
        unsafe { new_team.write(t) };
        Ok(())
    })
}

/// `aclshmem_team_split_2d`.
///
/// # Safety
///
/// `x_team` and `y_team` are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_team_split_2d(
    parent_team: aclshmem_team_t,
    x_range: c_int,
    x_team: *mut aclshmem_team_t,
    y_team: *mut aclshmem_team_t,
) -> c_int {
    code("aclshmem_team_split_2d", || {
        if x_team.is_null() || y_team.is_null() {
            return Err(Error::InvalidParam("x_team or y_team is NULL".into()));
        }
        let (x, y) = cann::team_split_2d(parent_team, x_range)?;
        // SAFETY: non-null, valid per the contract.
        unsafe {
            x_team.write(x);
            y_team.write(y);
        }
        Ok(())
    })
}

/// `aclshmem_team_translate_pe`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_team_translate_pe(
    src_team: aclshmem_team_t,
    src_pe: c_int,
    dest_team: aclshmem_team_t,
) -> c_int {
    if super::kernel::on_core() {
        return super::device::team_translate_pe(src_team, src_pe, dest_team);
    }
    cann::team_translate_pe(src_team, src_pe, dest_team)
}

/// `aclshmem_team_my_pe`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_team_my_pe(team: aclshmem_team_t) -> c_int {
    if super::kernel::on_core() {
        return super::device::team_query("aclshmem_team_my_pe", team, |t| t.my_pe() as c_int);
    }
    cann::team_my_pe(team)
}

/// `aclshmem_team_n_pes`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_team_n_pes(team: aclshmem_team_t) -> c_int {
    if super::kernel::on_core() {
        return super::device::team_query("aclshmem_team_n_pes", team, |t| t.n_pes() as c_int);
    }
    cann::team_n_pes(team)
}

/// `aclshmem_team_destroy`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_team_destroy(team: aclshmem_team_t) {
    cann::team_destroy(team);
}

/// `aclshmem_team_get_config`: a NULL `config` returns 1, as CANN's check does.
///
/// # Safety
///
/// `config` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclshmem_team_get_config(
    team: aclshmem_team_t,
    config: *mut aclshmem_team_config_t,
) -> c_int {
    if config.is_null() {
        failed(
            "aclshmem_team_get_config",
            &Error::InvalidParam("config is NULL".into()),
        );
        return 1;
    }
    code("aclshmem_team_get_config", || {
        let c = cann::team_get_config(team)?;
        // SAFETY: non-null, valid per the contract.
        unsafe {
            config.write(aclshmem_team_config_t {
                version: 0,
                num_contexts: c.num_contexts,
                uniqueid: 0,
                padding: [0; super::types::TEAM_CONFIG_PADDING],
            })
        };
        Ok(())
    })
}

/// Logs a failed void barrier call.
fn void(name: &str, r: shmem_core::Result<()>) {
    crate::boundary::enter();
    if let Err(e) = r {
        failed(name, &e);
    }
}

// The barriers complete the work queued on the default stream first, as CANN's (launched on
// the default stream, then synchronised) do.

/// `aclshmem_barrier`: `ACLSHMEM_TEAM_INVALID` is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_barrier(team: aclshmem_team_t) {
    if team == cann::TEAM_INVALID {
        return;
    }
    void(
        "aclshmem_barrier",
        super::rma::synchronize_default().and_then(|()| cann::barrier(team)),
    );
}

/// `aclshmem_barrier_all`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_barrier_all() {
    void(
        "aclshmem_barrier_all",
        super::rma::synchronize_default().and_then(|()| cann::barrier_all()),
    );
}

/// `aclshmem_sync` (CANN's barrier).
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_sync(team: aclshmem_team_t) {
    if super::kernel::on_core() {
        return super::device::host_only("aclshmem_sync");
    }
    if team == cann::TEAM_INVALID {
        return;
    }
    void(
        "aclshmem_sync",
        super::rma::synchronize_default().and_then(|()| cann::sync(team)),
    );
}

/// `aclshmem_sync_all`.
#[unsafe(no_mangle)]
pub extern "C" fn aclshmem_sync_all() {
    if super::kernel::on_core() {
        return super::device::host_only("aclshmem_sync_all");
    }
    void(
        "aclshmem_sync_all",
        super::rma::synchronize_default().and_then(|()| cann::sync_all()),
    );
}
