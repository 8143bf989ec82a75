//! Library settings read from the environment.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `SHMEM_TIMEOUT` | seconds any blocking wait (barrier, wait_until, collective, lock) may last before it fails with `TIMEOUT_ERROR`; `0` or `inf` waits without limit (dead peers are detected either way) | no limit |
//! | `SHMEM_HANG_REPORT` | seconds after which a wait that goes on reports a suspected hang (one WARN line naming the call, the instance and team, and the PEs not arrived yet), then again at doubling intervals; `0` or `off` reports nothing | 30 |
//! | `SHMEM_SYMMETRIC_SIZE` | the heap per PE for instances created from a launcher's environment (`Attributes::from_env`), in bytes with an optional `K`, `M` or `G` suffix; rounded up to 2 MiB | 256M |
//! | `SHMEM_BACKEND` | `sim` or `hw` | `sim` |
//! | `SHMEM_BOOTSTRAP_SECRET` | the job secret (32 hex digits) that the PEs of an `ip_port` job (CANN's `aclshmemx_init_attr` with only an address) present at the bootstrap, instead of CANN's fixed connection magic; PEs with another secret are refused. Every PE of the job must have the same value | CANN's magic `0x0ACC` |
//! | `SHMEM_PROFILE` | the [`ApiProfile`]: `full`; `cann`, the CANN transport's capabilities ([`Capabilities::CANN`]): remote atomics issued by the host (and the locks built on them) fail with `NOT_SUPPORTED` and `shmem_ptr` gives no host address, as on the hardware backend; `openshmem`, every capability and no device-address limit (an OpenSHMEM program models a CPU job of any size) | `full` |
//!
//! The simulator's own settings (`SHMEM_WAIT_POLICY`, `SHMEM_SIM_STRICT`, …) are documented in
//! `shmem_sim::SimSettings`.

use std::time::Duration;

use shmem_backend::{Capabilities, Limits};

use crate::error::{Error, Result};

/// The default `SHMEM_HANG_REPORT`.
pub(crate) const DEFAULT_HANG_REPORT: Duration = Duration::from_secs(30);
/// The default `SHMEM_SYMMETRIC_SIZE`.
pub(crate) const DEFAULT_SYMMETRIC_SIZE: u64 = 256 << 20;

/// `SHMEM_BOOTSTRAP_SECRET` as given in `value`: the secret of an `ip_port` job, if set.
pub(crate) fn bootstrap_secret(value: Option<String>) -> Result<Option<crate::attr::Secret>> {
    let Some(v) = value.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    crate::attr::Secret::from_hex(&v).map(Some).ok_or_else(|| {
        Error::InvalidValue(format!(
            "SHMEM_BOOTSTRAP_SECRET is not 32 hexadecimal digits ({} characters given)",
            v.trim().len()
        ))
    })
}

/// `SHMEM_TIMEOUT`: `None` (the default) waits as long as every peer is alive, as OpenSHMEM's
/// and CANN's waits do.
pub(crate) fn wait_timeout() -> Result<Option<Duration>> {
    seconds_or_off("SHMEM_TIMEOUT", std::env::var("SHMEM_TIMEOUT").ok(), None)
}

/// `SHMEM_HANG_REPORT`: when a wait first reports a suspected hang; `None` never.
pub(crate) fn hang_report() -> Result<Option<Duration>> {
    let v = std::env::var("SHMEM_HANG_REPORT").ok();
    seconds_or_off("SHMEM_HANG_REPORT", v, Some(DEFAULT_HANG_REPORT))
}

/// The largest number of seconds a setting takes (about 31 years): longer is `inf`, and a
/// deadline that far ahead could overflow the clock.
const MAX_SECONDS: f64 = 1e9;

/// A setting in seconds (fractions allowed): unset or empty gives `default`; `0`, `off`,
/// `inf` or `none` give `None`.
pub(crate) fn seconds_or_off(
    name: &str,
    value: Option<String>,
    default: Option<Duration>,
) -> Result<Option<Duration>> {
    let Some(v) = value else {
        return Ok(default);
    };
    match v.trim().to_ascii_lowercase().as_str() {
        "" => Ok(default),
        "0" | "off" | "inf" | "infinite" | "none" => Ok(None),
        s => s
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0 && *x <= MAX_SECONDS)
            .map(|x| Some(Duration::from_secs_f64(x)))
            .ok_or_else(|| {
                Error::InvalidValue(format!(
                    "{name}={v:?} is not a number of seconds from 0 to {MAX_SECONDS:e} (or inf)"
                ))
            }),
    }
}

/// Parses a size such as `64M`, `1G`, `4096` or `2mb`.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let s = s.strip_suffix('b').unwrap_or(&s);
    let s = s.strip_suffix('i').unwrap_or(s);
    let (num, shift) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 10),
        'm' => (&s[..s.len() - 1], 20),
        'g' => (&s[..s.len() - 1], 30),
        't' => (&s[..s.len() - 1], 40),
        _ => (s, 0),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(1u64 << shift)
}

/// `SHMEM_SYMMETRIC_SIZE` (its value, if set), rounded up to a multiple of 2 MiB.
pub(crate) fn symmetric_size(value: Option<String>) -> Result<u64> {
    let raw = match value {
        None => return Ok(DEFAULT_SYMMETRIC_SIZE),
        Some(v) => parse_size(&v).filter(|&n| n > 0).ok_or_else(|| {
            Error::InvalidValue(format!(
                "SHMEM_SYMMETRIC_SIZE={v:?} is not a size (for example 64M or 1G)"
            ))
        })?,
    };
    Ok(raw.next_multiple_of(2 << 20))
}

/// What a program runs as (`SHMEM_PROFILE`, or [`Attributes::profile`](crate::Attributes)):
/// the capabilities its instances' transports may report, and the limits init enforces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApiProfile {
    /// Every capability, and CANN's limits (the NPU's device address space caps an instance
    /// at 128 GiB, 128 PEs of up to 1 GiB of heap each).
    #[default]
    Full,
    /// The CANN transport's capabilities and CANN's limits: a program checked on the laptop
    /// fails where it would fail on the hardware backend.
    Cann,
    /// Every capability and OpenSHMEM's limits ([`Limits::OPENSHMEM`]): no device address
    /// space bounds the instance.
    OpenShmem,
}

impl ApiProfile {
    /// The capabilities the transport may report.
    pub fn capabilities(self) -> Capabilities {
        match self {
            ApiProfile::Full | ApiProfile::OpenShmem => Capabilities::ALL,
            ApiProfile::Cann => Capabilities::CANN,
        }
    }

    /// The limits init enforces.
    pub fn limits(self) -> Limits {
        match self {
            ApiProfile::Full | ApiProfile::Cann => Limits::CANN,
            ApiProfile::OpenShmem => Limits::OPENSHMEM,
        }
    }

    /// `SHMEM_PROFILE` (`full` when unset).
    pub fn from_env() -> Result<ApiProfile> {
        match std::env::var("SHMEM_PROFILE") {
            Err(_) => Ok(ApiProfile::Full),
            Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "full" => Ok(ApiProfile::Full),
                "cann" => Ok(ApiProfile::Cann),
                "openshmem" => Ok(ApiProfile::OpenShmem),
                _ => Err(Error::InvalidValue(format!(
                    "SHMEM_PROFILE={v:?} is not a profile (expected full, cann or openshmem)"
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `environment` fuzz target: a huge number of seconds panicked converting to
    /// a `Duration`.
    #[test]
    fn seconds_beyond_the_limit_are_refused_not_a_panic() {
        let s = |v: &str| seconds_or_off("SHMEM_TIMEOUT", Some(v.into()), None);
        assert_eq!(s("2.5").unwrap(), Some(Duration::from_millis(2500)));
        assert_eq!(s("inf").unwrap(), None);
        for bad in ["2766554408776655443322", "1e300", "-1", "NaN", "x"] {
            let e = s(bad).unwrap_err();
            assert!(
                e.to_string().contains("not a number of seconds"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_bootstrap_secret_is_32_hex_digits_or_unset() {
        assert_eq!(bootstrap_secret(None).unwrap(), None);
        assert_eq!(bootstrap_secret(Some(" ".into())).unwrap(), None);
        let s = bootstrap_secret(Some("00112233445566778899aabbccddeeff".into())).unwrap();
        assert_eq!(s.unwrap().0[..3], [0x00, 0x11, 0x22]);
        let e = bootstrap_secret(Some("secret".into())).unwrap_err();
        // The message never repeats the value.
        assert!(
            e.to_string().contains("not 32 hexadecimal digits")
                && !e.to_string().contains("secret\""),
            "{e}"
        );
    }

    #[test]
    fn seconds_parse_with_their_defaults() {
        let secs = |v: Option<&str>, d| seconds_or_off("X", v.map(String::from), d);
        assert_eq!(
            secs(None, None).unwrap(),
            None,
            "no timeout unless asked for"
        );
        assert_eq!(
            secs(Some(""), Some(DEFAULT_HANG_REPORT)).unwrap(),
            Some(DEFAULT_HANG_REPORT)
        );
        assert_eq!(
            secs(Some("1.5"), None).unwrap(),
            Some(Duration::from_millis(1500))
        );
        for off in ["0", "off", "inf", "none"] {
            assert_eq!(secs(Some(off), Some(DEFAULT_HANG_REPORT)).unwrap(), None);
        }
        assert!(secs(Some("-3"), None).is_err() && secs(Some("soon"), None).is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size("1g"), Some(1 << 30));
        assert_eq!(parse_size("2MiB"), Some(2 << 20));
        assert_eq!(parse_size("3 kb"), Some(3 << 10));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }
}
