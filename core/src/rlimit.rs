//! The process's resource limits an instance needs.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

pub(crate) use shmem_backend::limit_reached;

use crate::{Error, Result};

/// Memory mappings one instance of `n_pes` PEs may add on one PE: a segment per PE, the
/// bootstrap's and the transport's threads (a stack and its guard each, and an allocator arena),
/// and a margin for the program's own mappings meanwhile.
pub(crate) fn mappings_for(n_pes: u32) -> usize {
    n_pes as usize + 48
}

/// Mappings that instances may still add without a new count: half the room the last count
/// found, less what the instances created since needed.
static ROOM: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// Fails, naming `vm.max_map_count`, when this process cannot add the mappings an instance of
/// `n_pes` PEs needs: checked before init starts a thread, since a process out of mappings can
/// start none and its allocations begin to fail. Counting reads `/proc/self/maps`, so a count
/// that found room lets the next instances through until they may have used half of it (a
/// program that creates and finalizes instances in a loop counts once in hundreds).
pub(crate) fn check_mappings(n_pes: u32) -> Result<()> {
    let need = mappings_for(n_pes);
    let mut room = ROOM.lock().unwrap_or_else(|p| p.into_inner());
    if *room >= need {
        *room -= need;
        return Ok(());
    }
    let Some((count, max)) = shmem_backend::mappings() else {
        return Ok(()); // no /proc: nothing to check against
    };
    if let Some(why) = shmem_backend::too_few_mappings(count, max, need) {
        return Err(Error::Memory(why));
    }
    *room = (max - count) / 2 - need.min((max - count) / 2);
    Ok(())
}

/// Descriptors one instance of `n_pes` PEs may hold on one PE at its peak: PE 0 serves the
/// bootstrap (a listener and a connection per peer), every PE holds its own connection and the
/// instance's memory object; plus a margin for the threads' wake-up pipes and the program's own
/// use meanwhile.
pub(crate) fn descriptors_for(n_pes: u32) -> u64 {
    u64::from(n_pes) + 64
}

/// Raises this process's soft descriptor limit, only if it is below what the descriptors open
/// now plus one more instance of `n_pes` PEs need, and only that far (never above the hard
/// limit, which is the administrator's choice, and never lowering it). Many instances, or one
/// of many PEs, need more than the usual soft limit of 1024; a process that needs less keeps
/// the limit it had. A failure to raise it is left to show where descriptors run out.
pub(crate) fn ensure_descriptors(n_pes: u32) {
    let l = getrlimit(Resource::Nofile);
    let Some(cur) = l.current else {
        return; // unlimited
    };
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    let want = open + descriptors_for(n_pes);
    if want <= cur {
        return;
    }
    let wanted = l.maximum.map_or(want, |max| want.min(max));
    if wanted > cur
        && let Err(e) = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(wanted),
                maximum: l.maximum,
            },
        )
    {
        tracing::debug!("could not raise the descriptor limit from {cur} to {wanted}: {e}");
    }
}
