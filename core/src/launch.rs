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

/// Reads one environment variable; unset and empty are the same.
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, as an [`Env`].
fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
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
fn job_key(env: Env<'_>) -> String {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
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
        Self::from_launcher_env(&process_env)
    }

    /// [`Attributes::from_env`] on the environment `env`.
    pub(crate) fn from_launcher_env(env: Env<'_>) -> Result<Attributes> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(pe) = var(launcher_env::PE) {
            return Self::from_shmemrun(env, &pe);
        }
        for (launcher, rank_var, size_var) in FOREIGN {
            let (Some(rank), Some(size)) = (var(rank_var), var(size_var)) else {
                continue;
            };
            let mut attrs = Attributes::new(
                parse(rank_var, &rank)?,
                parse(size_var, &size)?,
                "",
                settings::symmetric_size(var("SHMEM_SYMMETRIC_SIZE"))?,
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
                None => attrs.mode = InitMode::JobLocal(job_key(env)),
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

    fn from_shmemrun(env: Env<'_>, pe: &str) -> Result<Attributes> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
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
            settings::symmetric_size(var("SHMEM_SYMMETRIC_SIZE"))?,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Detects the attributes from exactly the variables `vars`.
    fn detect(vars: &[(&str, &str)]) -> Result<Attributes> {
        let env = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        };
        Attributes::from_launcher_env(&env)
    }

    #[test]
    fn slurm_srun_gives_rank_size_and_a_job_local_rendezvous_per_step() {
        let a = detect(&[
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "1"),
            ("SHMEM_SYMMETRIC_SIZE", "3M"),
        ])
        .unwrap();
        assert_eq!((a.my_pe, a.n_pes), (3, 8));
        assert_eq!(a.mode, InitMode::JobLocal("slurm:4242.1".into()));
        assert_eq!(a.local_mem_size, 4 << 20, "rounded up to 2 MiB");
        // Another step of the same allocation meets elsewhere.
        let b = detect(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_JOB_ID", "4242"),
            ("SLURM_STEP_ID", "2"),
        ])
        .unwrap();
        assert_eq!(b.mode, InitMode::JobLocal("slurm:4242.2".into()));
        assert_eq!(b.local_mem_size, settings::DEFAULT_SYMMETRIC_SIZE);
    }

    #[test]
    fn slurm_across_hosts_uses_the_bootstrap_url_and_secret() {
        let a = detect(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_JOB_ID", "7"),
            ("SHMEM_BOOTSTRAP_URL", "tcp://10.0.0.1:4567"),
            ("SHMEM_JOB_SECRET", "00112233445566778899aabbccddeeff"),
        ])
        .unwrap();
        assert_eq!(a.ip_port, "tcp://10.0.0.1:4567");
        assert_eq!(a.mode, InitMode::Default);
        assert!(a.secret.is_some());
        let bad = detect(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SHMEM_BOOTSTRAP_URL", "tcp://10.0.0.1:4567"),
            ("SHMEM_JOB_SECRET", "not hex"),
        ]);
        assert!(bad.unwrap_err().to_string().contains("SHMEM_JOB_SECRET"));
    }

    #[test]
    fn launchers_take_precedence_in_order_and_job_keys_follow_the_launcher() {
        // mpirun under a Slurm allocation: Open MPI's rank wins, and its job id keys the
        // rendezvous (PMIx's namespace first).
        let a = detect(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("PMIX_NAMESPACE", "prterun-host-123@1"),
            ("OMPI_MCA_ess_base_jobid", "99"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_JOB_ID", "5"),
        ])
        .unwrap();
        assert_eq!((a.my_pe, a.n_pes), (1, 2));
        assert_eq!(a.mode, InitMode::JobLocal("pmix:prterun-host-123@1".into()));
        let pmi = detect(&[("PMI_RANK", "0"), ("PMI_SIZE", "4"), ("SHMEM_JOB_KEY", "k")]).unwrap();
        assert_eq!((pmi.my_pe, pmi.n_pes), (0, 4));
        assert_eq!(pmi.mode, InitMode::JobLocal("user:k".into()));
        // shmemrun's own variables come before every foreign launcher.
        let own = detect(&[
            (launcher_env::PE, "0"),
            (launcher_env::NPES, "3"),
            (launcher_env::BOOTSTRAP, "tcp://127.0.0.1:5000"),
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "9"),
        ])
        .unwrap();
        assert_eq!((own.my_pe, own.n_pes), (0, 3));
        assert_eq!(own.ip_port, "tcp://127.0.0.1:5000");
    }

    #[test]
    fn malformed_or_missing_launcher_variables_are_named() {
        let e = detect(&[("SLURM_PROCID", "x"), ("SLURM_NTASKS", "2")]).unwrap_err();
        assert!(e.to_string().contains("SLURM_PROCID=\"x\""), "{e}");
        let e = detect(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SHMEM_SYMMETRIC_SIZE", "lots"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("SHMEM_SYMMETRIC_SIZE"), "{e}");
        // A rank without a size is no launcher; nothing at all says how to start.
        let e = detect(&[("SLURM_PROCID", "0")]).unwrap_err();
        assert!(e.to_string().contains("no launcher environment"), "{e}");
        let e = detect(&[(launcher_env::PE, "0")]).unwrap_err();
        assert!(e.to_string().contains(launcher_env::NPES), "{e}");
    }
}
