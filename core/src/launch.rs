//! Attributes from a launcher's environment.
//!
//! `Attributes::from_env` recognises, in this order:
//!
//! | launcher | rank / size | bootstrap address |
//! |---|---|---|
//! | `shmemrun` (this project) | `SHMEMRUN_PE` / `SHMEMRUN_NPES` | `SHMEMRUN_BOOTSTRAP`; PE 0 inherits the bound socket; the job secret is `SHMEMRUN_SECRET` |
//! | Open MPI `mpirun` (without MPI calls) | `OMPI_COMM_WORLD_RANK` / `OMPI_COMM_WORLD_SIZE` | see below |
//! | PMI launchers (MPICH `mpiexec`, Intel MPI) | `PMI_RANK` / `PMI_SIZE` | see below |
//! | Slurm `srun` | `SLURM_PROCID` / `SLURM_NTASKS` | see below |
//!
//! For the last three the address is `SHMEM_BOOTSTRAP_URL` (`tcp://host:port` of the host of
//! rank 0, on which rank 0 serves; all ranks must see the same value) when it is set, with
//! `SHMEM_JOB_SECRET` (32 hex digits) as the job secret if given. Without it, all ranks must
//! run on one host and meet through a job-local rendezvous ([`InitMode::JobLocal`]) keyed by
//! the job: `SHMEM_JOB_KEY` if set, else the launcher's job id (`PMIX_NAMESPACE`,
//! `OMPI_MCA_ess_base_jobid`, `SLURM_JOB_ID`.`SLURM_STEP_ID`), else the parent process (all
//! ranks a launcher starts on one host share it).
//!
//! The heap size comes from `SHMEM_SYMMETRIC_SIZE` (default 256 MiB), rounded up to 2 MiB.

use shmem_sim::launcher::env as launcher_env;

use crate::attr::{Attributes, InitMode, Listener, Secret};
use crate::error::{Error, Result};
use crate::instance::Instance;
use crate::settings;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn parse<T: std::str::FromStr>(name: &str, v: &str) -> Result<T> {
    v.trim()
        .parse()
        .map_err(|_| Error::InvalidValue(format!("{name}={v:?} is not a valid number")))
}

/// The launchers whose rank variables are recognised, after `shmemrun`.
const FOREIGN: [(&str, &str, &str); 3] = [
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI", "PMI_RANK", "PMI_SIZE"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS"),
];

/// The key that names this job's rendezvous.
fn job_key() -> String {
    if let Some(k) = var("SHMEM_JOB_KEY") {
        return format!("user:{k}");
    }
    if let Some(ns) = var("PMIX_NAMESPACE") {
        return format!("pmix:{ns}");
    }
    if let Some(id) = var("OMPI_MCA_ess_base_jobid") {
        return format!("ompi:{id}");
    }
    if let Some(id) = var("SLURM_JOB_ID") {
        return format!("slurm:{id}.{}", var("SLURM_STEP_ID").unwrap_or_default());
    }
    format!(
        "ppid:{}",
        rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get())
    )
}

impl Attributes {
    /// The attributes of instance 0 for a PE started by a launcher: `shmemrun`, Open MPI's
    /// `mpirun`, a PMI launcher or Slurm's `srun` (see the module documentation for the
    /// variables read). `local_mem_size` comes from `SHMEM_SYMMETRIC_SIZE`.
    pub fn from_env() -> Result<Attributes> {
        if let Some(pe) = var(launcher_env::PE) {
            return Self::from_shmemrun(&pe);
        }
        for (launcher, rank_var, size_var) in FOREIGN {
            let (Some(rank), Some(size)) = (var(rank_var), var(size_var)) else {
                continue;
            };
            let mut attrs = Attributes::new(
                parse(rank_var, &rank)?,
                parse(size_var, &size)?,
                "",
                settings::symmetric_size()?,
            );
            match var("SHMEM_BOOTSTRAP_URL") {
                Some(url) => {
                    attrs.ip_port = url;
                    if let Some(s) = var("SHMEM_JOB_SECRET") {
                        attrs.secret = Some(Secret::from_hex(&s).ok_or_else(|| {
                            Error::InvalidValue(format!(
                                "SHMEM_JOB_SECRET={s:?} is not 32 hexadecimal digits"
                            ))
                        })?);
                    }
                }
                None => attrs.mode = InitMode::JobLocal(job_key()),
            }
            tracing::debug!(
                "started by {launcher}: PE {} of {} ({:?})",
                attrs.my_pe,
                attrs.n_pes,
                attrs.mode
            );
            return Ok(attrs);
        }
        Err(Error::InvalidParam(format!(
            "no launcher environment found ({}, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID): start the program with `shmemrun -n N`, mpirun or srun, or pass my_pe, n_pes and ip_port in Attributes",
            launcher_env::PE
        )))
    }

    fn from_shmemrun(pe: &str) -> Result<Attributes> {
        let missing = |name: &str| {
            Error::InvalidParam(format!(
                "{name} is not set although {} is",
                launcher_env::PE
            ))
        };
        let n = var(launcher_env::NPES).ok_or_else(|| missing(launcher_env::NPES))?;
        let url = var(launcher_env::BOOTSTRAP).ok_or_else(|| missing(launcher_env::BOOTSTRAP))?;
        let mut attrs = Attributes::new(
            parse(launcher_env::PE, pe)?,
            parse(launcher_env::NPES, &n)?,
            &url,
            settings::symmetric_size()?,
        );
        if let Some(s) = var(launcher_env::SECRET) {
            attrs.secret = Some(Secret::from_hex(&s).ok_or_else(|| {
                Error::InvalidValue(format!(
                    "{}={s:?} is not 32 hexadecimal digits",
                    launcher_env::SECRET
                ))
            })?);
        }
        if attrs.my_pe == 0
            && let Some(fd) = var(launcher_env::BOOTSTRAP_FD)
        {
            let fd: i32 = parse(launcher_env::BOOTSTRAP_FD, &fd)?;
            // SAFETY: the launcher leaves this descriptor open for the life of the PE (its
            // contract for SHMEMRUN_BOOTSTRAP_FD); it is only duplicated here, and a closed or
            // bogus number makes the duplication fail with EBADF.
            let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            attrs.listener = Some(Listener::from_fd(borrowed)?);
        }
        Ok(attrs)
    }
}

impl Instance {
    /// Initialises instance 0 from the launcher's environment ([`Attributes::from_env`]).
    pub fn from_env() -> Result<Instance> {
        Instance::init(&Attributes::from_env()?)
    }
}
