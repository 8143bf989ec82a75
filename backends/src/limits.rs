//! What a limit of the process or the system is called when an operation ran into it, in
//! words a user can act on: the descriptors (`RLIMIT_NOFILE`, `fs.file-max`), the mappings
//! (`vm.max_map_count`) and the tasks (`RLIMIT_NPROC`, `kernel.threads-max`,
//! `kernel.pid_max`). Every layer that creates descriptors, mappings, processes or threads
//! reports its failures through these.

use rustix::process::{Resource, getrlimit};

/// When `e` says that a limit was reached, which one, in words a user can act on: this
/// process's `RLIMIT_NOFILE` (with both limits), the system's file table, or the system's
/// `vm.max_map_count` (an `ENOMEM` from a process whose mappings are at that limit).
pub fn limit_reached(e: &std::io::Error) -> Option<String> {
    match e.raw_os_error()? {
        libc::ENOMEM => {
            let (count, max) = mappings()?;
            mappings_at_limit(count, max)
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

/// This process's memory mappings, and the most the system allows one (`vm.max_map_count`).
/// It reads `/proc/self/maps`, tens of microseconds.
pub fn mappings() -> Option<(usize, usize)> {
    let maps = std::fs::read("/proc/self/maps").ok()?;
    let count = maps.iter().filter(|&&b| b == b'\n').count();
    let max = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok()?;
    Some((count, max.trim().parse().ok()?))
}

/// When fewer than `need` more memory mappings fit beside the `count` a process has under the
/// system's `max` (`vm.max_map_count`, as [`mappings`] reads them), why, in words a user can act
/// on: what an instance checks before it starts, since a process out of mappings can no longer
/// start a thread or, often, allocate.
pub fn too_few_mappings(count: usize, max: usize, need: usize) -> Option<String> {
    (count + need > max).then(|| {
        format!(
            "this process has {count} memory mappings of the {max} the system allows (vm.max_map_count), and a new instance needs about {need} more: raise it (sysctl -w vm.max_map_count=…) or make fewer mappings"
        )
    })
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

/// When `e`, from creating a process or a thread, says that no new task may start (`EAGAIN`),
/// which limit stops it: this user's `RLIMIT_NPROC`, or the system's `kernel.threads-max` or
/// `kernel.pid_max`, with their values and the number of tasks running now.
pub fn tasks_refused(e: &std::io::Error) -> Option<String> {
    if e.raw_os_error()? != libc::EAGAIN {
        return None;
    }
    // A thread's stack is a mapping: at the mapping limit, that is what refused it.
    if let Some(at) = mappings().and_then(|(count, max)| mappings_at_limit(count, max)) {
        return Some(format!(
            "the system refused a new thread (EAGAIN): its stack is a memory mapping, and {at}"
        ));
    }
    let l = getrlimit(Resource::Nproc);
    let show = |v: Option<u64>| v.map_or("unlimited".to_owned(), |v| v.to_string());
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .map_or_else(|_| "?".to_owned(), |v| v.trim().to_owned())
    };
    // The fourth field of /proc/loadavg is "runnable/existing" tasks.
    let tasks = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| {
            l.split_whitespace()
                .nth(3)?
                .split('/')
                .nth(1)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "?".to_owned());
    Some(format!(
        "the system refused a new process or thread (EAGAIN): this user's RLIMIT_NPROC is {} (hard limit {}; raise it with `ulimit -u`), the system allows kernel.threads-max = {} and kernel.pid_max = {}, and runs {tasks} tasks now",
        show(l.current),
        show(l.maximum),
        sysctl("threads-max"),
        sysctl("pid_max"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_that_needs_more_mappings_than_are_left_is_told_the_limit() {
        let short = too_few_mappings(65_500, 65_530, 52).expect("30 left are too few for 52");
        assert!(
            short.contains("(vm.max_map_count)") && short.contains("sysctl -w"),
            "{short}"
        );
        assert_eq!(too_few_mappings(65_478, 65_530, 52), None);
        let (count, max) = mappings().expect("/proc is mounted");
        assert!(count > 0 && count < max, "{count} of {max}");
    }

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

    #[test]
    fn a_refused_task_names_the_limits_on_tasks_and_nothing_else_does() {
        let eagain = std::io::Error::from_raw_os_error(libc::EAGAIN);
        let m = tasks_refused(&eagain).expect("EAGAIN from a spawn is a limit");
        for says in [
            "RLIMIT_NPROC",
            "ulimit -u",
            "kernel.threads-max = ",
            "kernel.pid_max = ",
        ] {
            assert!(m.contains(says), "{says}: {m}");
        }
        assert!(!m.contains("= ?"), "{m}");
        for other in [libc::ENOMEM, libc::EMFILE, libc::EPERM] {
            assert_eq!(
                tasks_refused(&std::io::Error::from_raw_os_error(other)),
                None
            );
        }
    }
}
