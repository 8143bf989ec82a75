//! Named fault points, for the reliability tests: with the cargo feature `fault-injection`,
//! which release builds do not have, a PE can be made to die, leave or stop at an exact place
//! in the library, so that the tests see what its peers and the launcher do then. Without the
//! feature, [`point`] is empty and costs nothing.
//!
//! `SHMEM_FAULT=POINT:ACTION[:PE[:INSTANCE]]` arms one point (several are separated by
//! commas). ACTION is `kill` (SIGKILL, as a crash or the OOM killer ends a process), `exit`
//! (`_exit(3)`, leaving without finalize) or `stop` (SIGSTOP, as a debugger or a suspended
//! terminal stops it; it fires once, so the PE goes on after SIGCONT). PE and INSTANCE narrow
//! it to one PE of the instance's world and one instance; without them it fires in every PE
//! and instance that reaches the point.
//!
//! The points (`POINTS`, exported as `shmem::FAULT_POINTS` with the feature):
//!
//! | point | where |
//! |---|---|
//! | `init.after_connect` | instance init: the bootstrap has joined, no memory is shared yet |
//! | `malloc.in_allgather` | a collective allocation, before its allgather of the PEs' records |
//! | `barrier.waiting` | a barrier over a team, before this PE announces its arrival |
//! | `wait_until.waiting` | a point-to-point wait (`wait_until`, `wait`, signal waits), about to wait |
//! | `coll.in_exchange` | an exchange (fcollect, alltoall, collect, the internal gathers), after its first block |
//! | `lock.held` | a distributed lock just acquired |
//! | `kernel.in_launch` | a kernel's block, before its body runs |
//! | `finalize.entered` | instance finalize, before its closing barrier |

/// Every point the library has; `SHMEM_FAULT` naming another is refused.
#[cfg(feature = "fault-injection")]
pub const POINTS: &[&str] = &[
    "init.after_connect",
    "malloc.in_allgather",
    "barrier.waiting",
    "wait_until.waiting",
    "coll.in_exchange",
    "lock.held",
    "kernel.in_launch",
    "finalize.entered",
];

/// Fault point `name`, reached by world PE `pe` of instance `instance`.
#[inline(always)]
pub(crate) fn point(name: &'static str, pe: u32, instance: u64) {
    #[cfg(feature = "fault-injection")]
    armed::reach(name, pe, instance);
    #[cfg(not(feature = "fault-injection"))]
    let _ = (name, pe, instance);
}

#[cfg(feature = "fault-injection")]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::POINTS;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Action {
        Kill,
        Exit,
        Stop,
    }

    #[derive(Debug)]
    struct Fault {
        point: &'static str,
        action: Action,
        pe: Option<u32>,
        instance: Option<u64>,
        fired: AtomicBool,
    }

    fn parse(spec: &str) -> Result<Vec<Fault>, String> {
        spec.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|one| {
                let mut f = one.trim().split(':');
                let name = f.next().unwrap_or_default();
                let point = POINTS
                    .iter()
                    .copied()
                    .find(|p| *p == name)
                    .ok_or_else(|| format!("unknown point {name:?} (one of {:?})", POINTS))?;
                let action = match f.next() {
                    Some("kill") => Action::Kill,
                    Some("exit") => Action::Exit,
                    Some("stop") => Action::Stop,
                    other => {
                        return Err(format!(
                            "{one:?}: action {other:?} is not kill, exit or stop"
                        ));
                    }
                };
                let number = |v: Option<&str>| {
                    v.map(|v| {
                        v.parse::<u64>()
                            .map_err(|_| format!("{one:?}: {v:?} is not a number"))
                    })
                    .transpose()
                };
                let pe = number(f.next())?.map(|p| p as u32);
                let instance = number(f.next())?;
                if f.next().is_some() {
                    return Err(format!("{one:?}: more than POINT:ACTION[:PE[:INSTANCE]]"));
                }
                Ok(Fault {
                    point,
                    action,
                    pe,
                    instance,
                    fired: AtomicBool::new(false),
                })
            })
            .collect()
    }

    fn armed() -> &'static [Fault] {
        static ARMED: OnceLock<Vec<Fault>> = OnceLock::new();
        ARMED.get_or_init(|| match std::env::var("SHMEM_FAULT") {
            Ok(spec) => parse(&spec).unwrap_or_else(|e| panic!("SHMEM_FAULT: {e}")),
            Err(_) => Vec::new(),
        })
    }

    pub(super) fn reach(name: &'static str, pe: u32, instance: u64) {
        for f in armed() {
            if f.point != name
                || f.pe.is_some_and(|p| p != pe)
                || f.instance.is_some_and(|i| i != instance)
                || f.fired.swap(true, Ordering::AcqRel)
            {
                continue;
            }
            let me = rustix::process::getpid();
            shmem_sim::launcher::stderr_line(format_args!(
                "shmem: fault {name}: {:?} of PE {pe} (instance {instance})",
                f.action
            ));
            match f.action {
                Action::Kill => {
                    let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
                    // The signal is delivered before kill returns to a single-threaded caller;
                    // a thread of a multi-threaded one may see it a moment later.
                    loop {
                        std::thread::park();
                    }
                }
                // SAFETY: `_exit` ends the process at once, running no atexit handler and no
                // destructor: the PE leaves without finalize, as the fault means.
                Action::Exit => unsafe { libc::_exit(3) },
                Action::Stop => {
                    let _ = rustix::process::kill_process(me, rustix::process::Signal::STOP);
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn specs_parse_and_mistakes_are_named() {
            let f = parse("barrier.waiting:kill:1, lock.held:stop:2:7,init.after_connect:exit")
                .expect("valid");
            assert_eq!(f.len(), 3);
            assert_eq!(
                (f[0].point, f[0].action, f[0].pe, f[0].instance),
                ("barrier.waiting", Action::Kill, Some(1), None)
            );
            assert_eq!(
                (f[1].action, f[1].pe, f[1].instance),
                (Action::Stop, Some(2), Some(7))
            );
            assert_eq!((f[2].action, f[2].pe), (Action::Exit, None));
            for (bad, says) in [
                ("barrier.wait:kill", "unknown point"),
                ("lock.held", "is not kill"),
                ("lock.held:kill:x", "\"x\" is not a number"),
                ("lock.held:kill:1:2:3", "more than"),
            ] {
                let e = parse(bad).expect_err(bad);
                assert!(e.contains(says), "{bad}: {e}");
            }
        }
    }
}
