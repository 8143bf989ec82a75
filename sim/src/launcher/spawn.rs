//! Starting one PE: its command line, environment, standard streams and inherited descriptors.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{Job, LaunchError, Output, env};

/// The descriptor number of the control pipe in every PE (small, so that every shell can
/// redirect to it: dash accepts only one digit).
pub(super) const CONTROL_FD_NUMBER: RawFd = 3;
/// The descriptor number of the bootstrap socket in PE 0.
pub(super) const BOOTSTRAP_FD_NUMBER: RawFd = 4;

/// What every PE of a job shares.
///
/// The launcher creates its descriptors (bootstrap socket, control pipe) before starting any
/// PE, so they take the lowest free numbers; when 3 and 4 were free they are the launcher's
/// during every spawn, and std's internal error pipe cannot land on the numbers the PEs' copies
/// are placed at.
#[derive(Debug)]
pub(super) struct Shared<'a> {
    pub(super) job: &'a Job,
    /// The program file found for `job.program`.
    pub(super) program: &'a Path,
    pub(super) bootstrap_url: String,
    pub(super) secret_hex: String,
    pub(super) job_id: String,
    /// The write end of the control pipe (close-on-exec in the launcher).
    pub(super) control_w: BorrowedFd<'a>,
    /// The listening bootstrap socket for PE 0 (close-on-exec in the launcher).
    pub(super) bootstrap_fd: BorrowedFd<'a>,
    /// The strict mode's seed the launcher picked for every PE, if it picked one.
    pub(super) strict_seed: Option<u64>,
    /// The CPUs the launcher may run on (and so its PEs, which inherit its affinity).
    pub(super) cpus: u32,
}

/// A PE just started.
#[derive(Debug)]
pub(super) struct Started {
    pub(super) child: Child,
    pub(super) stdout: Option<OwnedFd>,
    pub(super) stderr: Option<OwnedFd>,
}

/// Moves a descriptor above the standard ones, so that setting up a child's standard streams
/// can never overwrite it (possible only when the launcher itself runs with 0, 1 or 2 closed).
pub(super) fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
}

/// The variable of the strict mode's seed.
pub(super) const STRICT_SEED: &str = "SHMEM_SIM_STRICT_SEED";

/// The strict mode's seed of the job, when its PEs run in strict mode: the job's (or this
/// process's) `SHMEM_SIM_STRICT_SEED`, else one picked here, which the returned flag says the
/// PEs must be given. A failed job names it, so that the run can be replayed.
pub(super) fn strict_seed(job: &Job) -> Option<(u64, bool)> {
    let lookup = |key: &str| -> Option<String> {
        match job.env.iter().rev().find(|(k, _)| k == key) {
            Some((_, value)) => value.as_ref().map(|v| v.to_string_lossy().into_owned()),
            None => std::env::var(key).ok(),
        }
    };
    let settings = crate::SimSettings::from_lookup(lookup).ok()?;
    if !settings.strict {
        return None;
    }
    Some(match settings.strict_seed {
        Some(seed) => (seed, false),
        None => (rand::random(), true),
    })
}

/// The C library's settings variable.
const TUNABLES: &str = "GLIBC_TUNABLES";

/// The glibc setting that turns off its registration of a restartable-sequence (`rseq`) area
/// for every thread.
const RSEQ_OFF: &str = "glibc.pthread.rseq=0";

/// The `GLIBC_TUNABLES` to give a PE of a job of `n_pes` PEs on `cpus` CPUs whose tunables
/// are otherwise `given`, or `None` to leave them as they are.
///
/// With more PEs than CPUs, a waiting PE yields its CPU and every turn is a process switch.
/// After each switch the kernel updates the `rseq` area that glibc registers for every thread,
/// a page the PE's own turn does not otherwise touch, and with hundreds of PEs per CPU that
/// page walk and cache miss are a large part of a turn (`docs/performance.md` has the
/// figures). The launcher turns the registration off for such jobs: glibc then answers
/// `sched_getcpu` as it did before it registered the area, and a program that registers its
/// own area still can.
/// Tunables that already set `glibc.pthread.rseq` are left alone, so a program that wants the
/// area keeps it with `GLIBC_TUNABLES=glibc.pthread.rseq=1`. Other C libraries ignore the
/// variable, as glibc before 2.35 ignores the setting.
fn tunables(given: Option<&OsStr>, n_pes: u32, cpus: u32) -> Option<OsString> {
    if n_pes <= cpus {
        return None;
    }
    let Some(given) = given.filter(|g| !g.is_empty()) else {
        return Some(RSEQ_OFF.into());
    };
    // A value that is not UTF-8 is left alone: glibc would not parse the addition either.
    let text = given.to_str()?;
    if text
        .split(':')
        .any(|t| t.split('=').next() == Some("glibc.pthread.rseq"))
    {
        return None;
    }
    Some(format!("{text}:{RSEQ_OFF}").into())
}

/// The value of variable `key` that PE `pe` gets from the job (its own setting, then the job's,
/// which may remove it) or else from the launcher's environment.
fn given_env(job: &Job, pe: u32, key: &str) -> Option<OsString> {
    let own = job
        .pe_env
        .iter()
        .rev()
        .find(|(p, k, _)| *p == pe && k == key);
    if let Some((_, _, value)) = own {
        return Some(value.clone());
    }
    match job.env.iter().rev().find(|(k, _)| k == key) {
        Some((_, value)) => value.clone(),
        None => std::env::var_os(key),
    }
}

/// Starts PE `pe`.
pub(super) fn spawn_pe(shared: &Shared<'_>, pe: u32) -> Result<Started, LaunchError> {
    let job = shared.job;
    let mut cmd = Command::new(shared.program);
    cmd.arg0(&job.program).args(&job.args);

    for name in env::ALL {
        cmd.env_remove(name);
    }
    // The contract's variables are the launcher's alone.
    let reserved = |key: &OsStr| env::ALL.iter().any(|name| key == *name);
    for (key, value) in job.env.iter().filter(|(key, _)| !reserved(key)) {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    for (_, key, value) in job
        .pe_env
        .iter()
        .filter(|(p, key, _)| *p == pe && !reserved(key))
    {
        cmd.env(key, value);
    }
    cmd.env(env::PE, pe.to_string())
        .env(env::NPES, job.n_pes.to_string())
        .env(env::BOOTSTRAP, &shared.bootstrap_url)
        .env(env::SECRET, &shared.secret_hex)
        .env(env::JOB, &shared.job_id)
        .env(env::CONTROL_FD, CONTROL_FD_NUMBER.to_string());
    if pe == 0 {
        cmd.env(env::BOOTSTRAP_FD, BOOTSTRAP_FD_NUMBER.to_string());
    }
    if let Some(seed) = shared.strict_seed {
        cmd.env(STRICT_SEED, seed.to_string());
    }
    let given = given_env(job, pe, TUNABLES);
    if let Some(tunables) = tunables(given.as_deref(), job.n_pes, shared.cpus) {
        cmd.env(TUNABLES, tunables);
    }

    cmd.stdin(if pe == 0 {
        Stdio::inherit()
    } else {
        Stdio::null()
    });
    if job.output != Output::Inherit {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }

    let launcher = rustix::process::getpid();
    let control_src = shared.control_w.as_raw_fd();
    let bootstrap_src = (pe == 0).then(|| shared.bootstrap_fd.as_raw_fd());
    // SAFETY: the closure runs in the forked child before `exec`. It makes only raw system calls
    // (prctl, getppid, fcntl, dup2, close), which are async-signal-safe; it allocates nothing
    // and takes no lock, so it is sound even when the launcher has other threads. The
    // descriptors it places are open in the launcher for as long as `spawn` runs (the `Shared`
    // borrow keeps them), hence open in the child.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // If the launcher died before the line above, no death signal will come: give up.
            if rustix::process::getppid() != Some(launcher) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            place_fds(control_src, bootstrap_src)
        });
    }

    let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
        pe,
        program: shared.program.to_owned(),
        source,
    })?;
    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    Ok(Started {
        child,
        stdout,
        stderr,
    })
}

/// Puts the control pipe at [`CONTROL_FD_NUMBER`] and the bootstrap socket (PE 0) at
/// [`BOOTSTRAP_FD_NUMBER`] in a freshly forked child, without close-on-exec, so that `exec`
/// keeps them (and nothing else of the launcher's).
///
/// Both sources are first copied above 9, so that placing one can never overwrite the other.
///
/// # Safety
///
/// Only for the child between `fork` and `exec`: it replaces whatever the child has at the two
/// numbers, which no code of the child uses any more. (The one descriptor that std's spawn still
/// uses there, its close-on-exec error pipe, is created after the launcher's own descriptors, so
/// it gets a number of its own whenever 3 and 4 were free; see [`Shared`].)
unsafe fn place_fds(control: RawFd, bootstrap: Option<RawFd>) -> io::Result<()> {
    let control = dup_high(control)?;
    let bootstrap = match bootstrap {
        Some(fd) => Some(dup_high(fd)?),
        None => None,
    };
    // SAFETY: plain descriptor-number system calls (async-signal-safe); the caller guarantees
    // that replacing the targets in this child is fine, and the temporary copies were made just
    // above and are not used after being closed.
    unsafe {
        if libc::dup2(control, CONTROL_FD_NUMBER) < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::close(control);
        if let Some(bootstrap) = bootstrap {
            if libc::dup2(bootstrap, BOOTSTRAP_FD_NUMBER) < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::close(bootstrap);
        }
    }
    Ok(())
}

/// A close-on-exec copy of `fd` numbered 10 or above.
fn dup_high(fd: RawFd) -> io::Result<RawFd> {
    // SAFETY: `F_DUPFD_CLOEXEC` only creates a new descriptor; it cannot affect `fd` or any
    // other descriptor, and an invalid `fd` makes it fail with EBADF.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(given: Option<&str>, n_pes: u32, cpus: u32) -> Option<String> {
        tunables(given.map(OsStr::new), n_pes, cpus).map(|v| v.into_string().expect("UTF-8"))
    }

    #[test]
    fn rseq_is_turned_off_only_when_pes_outnumber_cpus() {
        assert_eq!(t(None, 2, 2), None);
        assert_eq!(t(None, 1, 4), None);
        assert_eq!(t(None, 3, 2).as_deref(), Some(RSEQ_OFF));
        assert_eq!(t(Some(""), 3, 2).as_deref(), Some(RSEQ_OFF));
    }

    #[test]
    fn other_tunables_are_kept_and_a_given_rseq_setting_wins() {
        assert_eq!(
            t(Some("glibc.malloc.arena_max=2"), 8, 2).as_deref(),
            Some("glibc.malloc.arena_max=2:glibc.pthread.rseq=0")
        );
        assert_eq!(t(Some("glibc.pthread.rseq=1"), 8, 2), None);
        assert_eq!(
            t(Some("glibc.malloc.arena_max=2:glibc.pthread.rseq=1"), 8, 2),
            None
        );
        // A setting that only starts with the name is another setting.
        assert_eq!(
            t(Some("glibc.pthread.rseq_x=1"), 8, 2).as_deref(),
            Some("glibc.pthread.rseq_x=1:glibc.pthread.rseq=0")
        );
    }

    #[test]
    fn tunables_that_are_not_utf8_are_left_alone() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(tunables(Some(OsStr::from_bytes(b"\xff")), 8, 2), None);
    }
}
