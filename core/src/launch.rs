//! Attributes from a launcher's environment.
//!
//! Inside a job started by `shmemrun`, every PE finds its identity and PE 0's bootstrap
//! address in `SHMEMRUN_*` variables (see `shmem_sim::launcher::env`), and PE 0 inherits the
//! listening socket its bootstrap server serves on. The heap size comes from
//! `SHMEM_SYMMETRIC_SIZE` (default 256 MiB), rounded up to 2 MiB.

use shmem_sim::launcher::env as launcher_env;

use crate::attr::{Attributes, Secret};
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

impl Attributes {
    /// The attributes of instance 0 for a PE started by a launcher (`shmemrun`): `my_pe`,
    /// `n_pes`, `ip_port`, the job secret and (on PE 0) the pre-bound bootstrap socket come
    /// from the environment; `local_mem_size` from `SHMEM_SYMMETRIC_SIZE`.
    pub fn from_env() -> Result<Attributes> {
        let Some(pe) = var(launcher_env::PE) else {
            return Err(Error::InvalidParam(format!(
                "{} is not set: this process was not started by shmemrun; start it with `shmemrun -n N` or pass my_pe, n_pes and ip_port in Attributes",
                launcher_env::PE
            )));
        };
        let missing = |name: &str| {
            Error::InvalidParam(format!(
                "{name} is not set although {} is",
                launcher_env::PE
            ))
        };
        let n = var(launcher_env::NPES).ok_or_else(|| missing(launcher_env::NPES))?;
        let url = var(launcher_env::BOOTSTRAP).ok_or_else(|| missing(launcher_env::BOOTSTRAP))?;
        let mut attrs = Attributes::new(
            parse(launcher_env::PE, &pe)?,
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
            attrs.options.sock_fd = parse(launcher_env::BOOTSTRAP_FD, &fd)?;
        }
        Ok(attrs)
    }
}

impl Instance {
    /// Initialises instance 0 from the launcher's environment ([`Attributes::from_env`]).
    pub fn from_env() -> Result<Instance> {
        crate::log::init();
        let attrs = Attributes::from_env().inspect_err(|e| tracing::error!("{e}"))?;
        Instance::init(&attrs)
    }
}
