//! The process's resource limits an instance needs.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// When `e` says that a limit was reached, which one, in words a user can act on: this
/// process's `RLIMIT_NOFILE` (with both limits), the system's file table, or the system's
/// `vm.max_map_count` (an `ENOMEM` from a process whose mappings are at that limit).
pub(crate) fn limit_reached(e: &std::io::Error) -> Option<String> {
    match e.raw_os_error()? {
        libc::ENOMEM => {
            let maps = std::fs::read("/proc/self/maps").ok()?;
            let count = maps.iter().filter(|&&b| b == b'\n').count();
            let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok()?;
            mappings_at_limit(count, max.trim().parse().ok()?)
        }
        libc::EMFILE => {
            let l = getrlimit(Resource::Nofile);
            let show = |v: Option<u64>| v.map_or("unlimited".to_owned(), |v| v.to_string());
            Some(format!(
                "this process has no file descriptor left (EMFILE; RLIMIT_NOFILE {}, hard limit {}): raise it with `ulimit -n` (a PE needs about as many as the job has PEs, plus 64)",
                show(l.current),
                show(l.maximum)
            ))
        }
        libc::ENFILE => Some(
            "the system's file table is full (ENFILE): raise fs.file-max or close files".to_owned(),
        ),
        _ => None,
    }
}

/// What to say when a mapping failed while the process has `count` mappings of the system's
/// `max` (`vm.max_map_count`): nothing unless the count is at the limit (within the few
/// mappings one operation creates).
fn mappings_at_limit(count: usize, max: usize) -> Option<String> {
    (count + 8 >= max).then(|| {
        format!(
            "this process has {count} memory mappings, at the system's limit vm.max_map_count = {max}: raise it (sysctl -w vm.max_map_count=…; each instance maps a few regions per PE)"
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reached_limit_is_named_and_nothing_else_is() {
        let emfile = limit_reached(&std::io::Error::from_raw_os_error(libc::EMFILE));
        let emfile = emfile.expect("EMFILE is running out");
        assert!(
            emfile.contains("RLIMIT_NOFILE") && emfile.contains("ulimit -n"),
            "{emfile}"
        );
        let enfile = limit_reached(&std::io::Error::from_raw_os_error(libc::ENFILE));
        assert!(
            enfile
                .expect("ENFILE is running out")
                .contains("fs.file-max")
        );
        for other in [libc::ECONNREFUSED, libc::EINTR] {
            assert_eq!(
                limit_reached(&std::io::Error::from_raw_os_error(other)),
                None
            );
        }
        assert_eq!(limit_reached(&std::io::Error::other("x")), None);
        // ENOMEM names vm.max_map_count only when the mappings are at that limit (this test
        // process is far below it).
        assert_eq!(
            limit_reached(&std::io::Error::from_raw_os_error(libc::ENOMEM)),
            None
        );
        let at = mappings_at_limit(65_525, 65_530).expect("at the limit");
        assert!(at.contains("vm.max_map_count = 65530"), "{at}");
        assert_eq!(mappings_at_limit(100, 65_530), None);
    }
}
