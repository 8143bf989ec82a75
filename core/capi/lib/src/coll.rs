//! Team-based collectives and reductions from C (every typed and `mem` form is generated from
//! the type tables): the buffers are views of the default instance's heap at the addresses
//! given, and each routine runs the Rust core's collective on the team. They return 0, or -1
//! after logging the failure.

use std::ffi::c_int;

use bytemuck::Pod;
use shmem_core::{Error, Instance, ReduceOp, Reducible, Result, SymSlice};

use crate::boundary::call;
use crate::team::{shmem_team_t, team};
use crate::world::{offset, view};

/// Every element of `T` from symmetric address `p` to the end of the heap (a `collect`
/// destination, whose length the call does not give).
fn view_to_end<T: Pod>(w: &'static Instance, p: *const T) -> Result<SymSlice<'static, T>> {
    let off = offset(w, p.cast(), 0)?;
    w.view::<T>(off, (w.heap_size() - off) / size_of::<T>().max(1))
}

fn run(name: &str, f: impl FnOnce() -> Result<()>) -> c_int {
    call(name, -1, || f().map(|()| 0))
}

fn strided_len(n: usize, stride: usize) -> Result<usize> {
    match n {
        0 => Ok(0),
        n => (n - 1)
            .checked_mul(stride)
            .and_then(|s| s.checked_add(1))
            .ok_or_else(|| {
                Error::InvalidParam(format!("{n} elements at a stride of {stride} overflow"))
            }),
    }
}

/// `shmem_TYPENAME_broadcast`.
pub(crate) fn broadcast<T: Pod>(
    name: &str,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nelems: usize,
    root: c_int,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        let root = u32::try_from(root).map_err(|_| Error::InvalidParam(format!("root {root}")))?;
        t.broadcast(view(w, dest, nelems)?, view(w, source, nelems)?, root)
    })
}

/// `shmem_TYPENAME_collect`.
pub(crate) fn collect<T: Pod>(
    name: &str,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nelems: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        t.collect(view_to_end(w, dest)?, view(w, source, nelems)?)
            .map(drop)
    })
}

/// `shmem_TYPENAME_fcollect`.
pub(crate) fn fcollect<T: Pod>(
    name: &str,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nelems: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        let all = nelems
            .checked_mul(t.n_pes() as usize)
            .ok_or_else(|| Error::InvalidParam("overflow".into()))?;
        t.fcollect(view(w, dest, all)?, view(w, source, nelems)?)
    })
}

/// `shmem_TYPENAME_alltoall`.
pub(crate) fn alltoall<T: Pod>(
    name: &str,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nelems: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        let all = nelems
            .checked_mul(t.n_pes() as usize)
            .ok_or_else(|| Error::InvalidParam("overflow".into()))?;
        t.alltoall(view(w, dest, all)?, view(w, source, all)?)
    })
}

/// `shmem_TYPENAME_alltoalls`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn alltoalls<T: Pod>(
    name: &str,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    dst: isize,
    sst: isize,
    nelems: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        let (dst, sst) = match (usize::try_from(dst), usize::try_from(sst)) {
            (Ok(d), Ok(s)) if d > 0 && s > 0 => (d, s),
            _ => {
                return Err(Error::InvalidParam(format!(
                    "strides {dst} and {sst} must be positive"
                )));
            }
        };
        let all = nelems
            .checked_mul(t.n_pes() as usize)
            .ok_or_else(|| Error::InvalidParam("overflow".into()))?;
        let (dlen, slen) = (strided_len(all, dst)?, strided_len(all, sst)?);
        t.alltoalls(
            view(w, dest, dlen)?,
            view(w, source, slen)?,
            dst,
            sst,
            nelems,
        )
    })
}

/// `shmem_TYPENAME_{and,or,xor,max,min,sum,prod}_reduce`.
pub(crate) fn reduce<T: Reducible>(
    name: &str,
    op: ReduceOp,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        t.reduce(op, view(w, dest, nreduce)?, view(w, source, nreduce)?)
    })
}

/// `shmem_TYPENAME_sum_inscan` and `_sum_exscan` (OpenSHMEM 1.6).
pub(crate) fn scan<T: Reducible>(
    name: &str,
    inclusive: bool,
    t: shmem_team_t,
    dest: *mut T,
    source: *const T,
    nelems: usize,
) -> c_int {
    run(name, || {
        let t = team(t)?;
        let w = crate::world::world()?;
        let (d, s) = (view(w, dest, nelems)?, view(w, source, nelems)?);
        if inclusive {
            t.sum_inscan(d, s)
        } else {
            t.sum_exscan(d, s)
        }
    })
}
