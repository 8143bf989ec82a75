//! The simulator's settings, read from the environment when a segment is opened.
//!
//! | variable | values | default |
//! |---|---|---|
//! | `SHMEM_WAIT_POLICY` | `adaptive`, `spin`, `yield`, `sleep` | `adaptive` |
//! | `SHMEM_SIM_STRICT` | `1`/`on`/`true` or `0`/`off`/`false` | off |
//! | `SHMEM_SIM_STRICT_SEED` | a decimal `u64` | random, logged at debug level |
//! | `SHMEM_SIM_STRICT_EARLY` | probability in `[0, 1]` that issuing a non-blocking operation completes one earlier pending operation | `0.25` |
//! | `SHMEM_SIM_DEVICE_HOST_ACCESS` | `1`/`on`/`true` or `0`/`off`/`false`: simulated device memory (the ACL stand-in's `aclrtMalloc`) is readable and writable by host code, for debugging | off: host code touching device memory faults, as on an NPU |
//!
//! The wait policies:
//! - `adaptive`: when the PEs on this host (the larger of the instance's PE count and the
//!   launcher's `SHMEMRUN_NPES`) are no more than the CPUs this process may run on, spin for
//!   20 µs, then sleep on a futex; otherwise never spin: yield the CPU for up to 200 µs, or
//!   20 µs per PE queued on each CPU if that is longer (10 ms for 1,024 PEs on 2 CPUs; at
//!   most 20 ms), then sleep. This follows the machine measurements: spinning costs a
//!   scheduler tick (4 ms) per hand-off once PEs outnumber cores, while a cross-core futex
//!   wake costs 15–26 µs.
//! - `spin`: spin for up to 2 ms, then sleep (for benchmarks on dedicated cores).
//! - `yield`: yield for up to 1 ms, then sleep.
//! - `sleep`: sleep on the futex at once.
//!
//! Sleeping is always bounded: the sleeper wakes at least every 10 ms to re-check its
//! condition (so stores made directly through `shmem_ptr` addresses are noticed), its deadline
//! and the liveness of its peers.

use std::time::Duration;

/// How a waiting PE spends its time before the condition holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Spin, yield or sleep depending on whether PEs outnumber CPUs.
    Adaptive,
    /// Spin, then sleep.
    Spin,
    /// Yield, then sleep.
    Yield,
    /// Sleep at once.
    Sleep,
}

impl WaitPolicy {
    /// Parses a `SHMEM_WAIT_POLICY` value.
    pub fn parse(s: &str) -> Option<WaitPolicy> {
        match s.trim().to_ascii_lowercase().as_str() {
            "adaptive" | "auto" | "" => Some(WaitPolicy::Adaptive),
            "spin" => Some(WaitPolicy::Spin),
            "yield" => Some(WaitPolicy::Yield),
            "sleep" | "futex" => Some(WaitPolicy::Sleep),
            _ => None,
        }
    }
}

/// The phases of a wait once the policy is resolved for a given PE count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitPhases {
    /// How long to spin before anything else.
    pub spin: Duration,
    /// How long to yield after spinning.
    pub yield_for: Duration,
    /// The longest single futex sleep.
    pub sleep_chunk: Duration,
}

/// The adaptive policy's yielding, per PE queued on a CPU: about two hand-offs from one PE to
/// the next (a round of 512 PEs per CPU takes 2.5–5 ms on the reference machine).
const YIELD_PER_PE: Duration = Duration::from_micros(20);

/// The adaptive policy's longest yielding, whatever the PEs per CPU: a PE that waits long
/// still spends at most this much CPU time before it sleeps.
const MAX_YIELD: Duration = Duration::from_millis(20);

/// The longest single futex sleep of any policy.
pub(crate) const SLEEP_CHUNK: Duration = Duration::from_millis(10);

impl WaitPolicy {
    /// The phases for `local_pes` PEs sharing `cpus` CPUs.
    pub(crate) fn phases(self, local_pes: u32, cpus: u32) -> WaitPhases {
        let (spin, yield_for) = match self {
            WaitPolicy::Adaptive if local_pes <= cpus => {
                (Duration::from_micros(20), Duration::ZERO)
            }
            // A yielding PE runs again once the others sharing its CPU have had a turn, so
            // it yields for at least a few such rounds before it sleeps: sleeping and being
            // woken costs two more trips through the scheduler.
            WaitPolicy::Adaptive => (
                Duration::ZERO,
                (YIELD_PER_PE * (local_pes / cpus.max(1)))
                    .clamp(Duration::from_micros(200), MAX_YIELD),
            ),
            WaitPolicy::Spin => (Duration::from_millis(2), Duration::ZERO),
            WaitPolicy::Yield => (Duration::ZERO, Duration::from_millis(1)),
            WaitPolicy::Sleep => (Duration::ZERO, Duration::ZERO),
        };
        WaitPhases {
            spin,
            yield_for,
            sleep_chunk: SLEEP_CHUNK,
        }
    }
}

/// The simulator's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSettings {
    /// The wait policy.
    pub wait_policy: WaitPolicy,
    /// Strict completion mode: operations complete as late, and in as hostile an order, as
    /// the specification allows (non-blocking ones at quiet; blocking ones, where the profile
    /// allows relaxed completion, eventually, the last issued of an epoch first).
    pub strict: bool,
    /// The seed of the strict mode's random choices; `None` picks one per process, which
    /// [`strict_seed`] returns.
    pub strict_seed: Option<u64>,
    /// The probability that issuing a non-blocking operation completes one earlier one.
    pub strict_early: f64,
    /// Whether host code may load and store simulated device memory (a debugging aid; on an
    /// NPU it faults, and so it does here by default).
    pub device_host_access: bool,
}

/// The seed of the strict mode's random choices in this process: `SHMEM_SIM_STRICT_SEED`, or one
/// picked at random the first time it is asked for (the same for every queue of the process).
/// A failure seen in strict mode replays with the same seed (the launcher picks one for a job
/// and names it when the job fails).
pub fn strict_seed(s: &SimSettings) -> u64 {
    static PICKED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    s.strict_seed
        .unwrap_or_else(|| *PICKED.get_or_init(rand::random))
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            wait_policy: WaitPolicy::Adaptive,
            strict: false,
            strict_seed: None,
            strict_early: 0.25,
            device_host_access: false,
        }
    }
}

/// A setting whose value could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("environment variable {name}={value:?} is not valid: expected {expected}")]
pub struct SettingError {
    /// The variable.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// What was expected.
    pub expected: &'static str,
}

fn parse_bool(name: &'static str, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" | "" => Ok(false),
        _ => Err(SettingError {
            name,
            value: value.into(),
            expected: "1/on/true or 0/off/false",
        }),
    }
}

impl SimSettings {
    /// Reads the settings from the environment.
    pub fn from_env() -> Result<SimSettings, SettingError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the settings through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<SimSettings, SettingError> {
        let mut s = SimSettings::default();
        if let Some(v) = lookup("SHMEM_WAIT_POLICY") {
            s.wait_policy = WaitPolicy::parse(&v).ok_or(SettingError {
                name: "SHMEM_WAIT_POLICY",
                value: v.clone(),
                expected: "adaptive, spin, yield or sleep",
            })?;
        }
        if let Some(v) = lookup("SHMEM_SIM_STRICT") {
            s.strict = parse_bool("SHMEM_SIM_STRICT", &v)?;
        }
        if let Some(v) = lookup("SHMEM_SIM_DEVICE_HOST_ACCESS") {
            s.device_host_access = parse_bool("SHMEM_SIM_DEVICE_HOST_ACCESS", &v)?;
        }
        if let Some(v) = lookup("SHMEM_SIM_STRICT_SEED") {
            s.strict_seed = Some(v.trim().parse().map_err(|_| SettingError {
                name: "SHMEM_SIM_STRICT_SEED",
                value: v.clone(),
                expected: "a decimal u64",
            })?);
        }
        if let Some(v) = lookup("SHMEM_SIM_STRICT_EARLY") {
            s.strict_early = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or(SettingError {
                    name: "SHMEM_SIM_STRICT_EARLY",
                    value: v.clone(),
                    expected: "a number in [0, 1]",
                })?;
        }
        Ok(s)
    }
}

/// The number of CPUs this process may run on.
pub(crate) fn usable_cpus() -> u32 {
    rustix::thread::sched_getaffinity(None)
        .map(|set| set.count())
        .ok()
        .filter(|&n| n > 0)
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32)
        })
        .unwrap_or(1)
}

/// The PEs expected on this host: the larger of the instance's PE count and the launcher's.
pub(crate) fn local_pes(n_pes: u32) -> u32 {
    let launched = std::env::var("SHMEMRUN_NPES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    n_pes.max(launched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_settings() {
        let env = |k: &str| match k {
            "SHMEM_WAIT_POLICY" => Some("yield".to_string()),
            "SHMEM_SIM_STRICT" => Some("on".to_string()),
            "SHMEM_SIM_STRICT_SEED" => Some("42".to_string()),
            _ => None,
        };
        let s = SimSettings::from_lookup(env).unwrap();
        assert_eq!(s.wait_policy, WaitPolicy::Yield);
        assert!(s.strict);
        assert_eq!(s.strict_seed, Some(42));
        let bad =
            SimSettings::from_lookup(|k| (k == "SHMEM_WAIT_POLICY").then(|| "busy".to_string()));
        assert_eq!(bad.unwrap_err().name, "SHMEM_WAIT_POLICY");
    }

    #[test]
    fn adaptive_never_spins_when_oversubscribed() {
        let p = WaitPolicy::Adaptive.phases(8, 2);
        assert_eq!(p.spin, Duration::ZERO);
        assert!(p.yield_for > Duration::ZERO);
        let p = WaitPolicy::Adaptive.phases(2, 2);
        assert!(p.spin > Duration::ZERO);
    }

    #[test]
    fn adaptive_yields_for_longer_the_more_pes_share_a_cpu() {
        let phases = |pes| WaitPolicy::Adaptive.phases(pes, 2).yield_for;
        assert_eq!(phases(8), Duration::from_micros(200));
        assert_eq!(phases(1024), Duration::from_micros(20 * 512));
        assert!(phases(64) < phases(256));
        assert_eq!(phases(1 << 20), MAX_YIELD);
    }
}
