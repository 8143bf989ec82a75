//! Starting one PE: its command line, environment, standard streams and inherited descriptors.

use std::ffi::OsStr;
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
