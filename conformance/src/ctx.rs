//! What a case sees on each PE, and how it reports failure.

use std::fmt;
use std::time::Duration;

use shmem::{Attributes, Instance};

/// A failed check, with the PE that failed it.
#[derive(Debug)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<shmem::Error> for Failure {
    fn from(e: shmem::Error) -> Failure {
        Failure(format!("unexpected error: {e} (code {:?})", e.code()))
    }
}

impl From<shmem::KernelError> for Failure {
    fn from(e: shmem::KernelError) -> Failure {
        Failure(format!("unexpected kernel error: {e}"))
    }
}

/// The result of a case on one PE.
pub type Outcome = Result<(), Failure>;

/// Fails the case with a formatted message unless `cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::Failure(format!("check failed: {} ({}:{})", stringify!($cond), file!(), line!())));
        }
    };
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Failure(format!("{} ({}:{})", format!($($fmt)+), file!(), line!())));
        }
    };
}

/// Fails the case unless the two values are equal, showing both.
#[macro_export]
macro_rules! check_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err($crate::Failure(format!(
                "{} != {}: {:?} vs {:?} ({}:{})", stringify!($a), stringify!($b), a, b, file!(), line!()
            )));
        }
    }};
    ($a:expr, $b:expr, $($fmt:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err($crate::Failure(format!("{}: {:?} vs {:?} ({}:{})", format!($($fmt)+), a, b, file!(), line!())));
        }
    }};
}

/// Fails the case unless the result is an error with the given CANN code.
#[macro_export]
macro_rules! check_code {
    ($r:expr, $code:expr) => {{
        match $r {
            Ok(_) => {
                return Err($crate::Failure(format!(
                    "{} succeeded; expected {:?} ({}:{})",
                    stringify!($r),
                    $code,
                    file!(),
                    line!()
                )));
            }
            Err(e) if e.code() == $code => e,
            Err(e) => {
                return Err($crate::Failure(format!(
                    "{} failed with {:?} ({e}); expected {:?} ({}:{})",
                    stringify!($r),
                    e.code(),
                    $code,
                    file!(),
                    line!()
                )));
            }
        }
    }};
}

/// The default heap of a case's instance: small, as the suite runs many PEs at once.
pub const CASE_HEAP: u64 = 8 << 20;

/// The context of one case on one PE.
#[derive(Debug)]
pub struct Ctx {
    /// This PE's number.
    pub pe: u32,
    /// The number of PEs of the trial.
    pub n_pes: u32,
    /// The backend under test.
    pub backend: &'static str,
    /// Whether the full tier runs.
    pub full: bool,
    ports: (u16, u16),
}

impl Ctx {
    pub(crate) fn new(
        pe: u32,
        n_pes: u32,
        backend: &'static str,
        full: bool,
        ports: (u16, u16),
    ) -> Ctx {
        Ctx {
            pe,
            n_pes,
            backend,
            full,
            ports,
        }
    }

    /// Instance 0 over the trial's bootstrap (the launcher's), with a heap of `local_mem_size`.
    pub fn attrs(&self, local_mem_size: u64) -> Attributes {
        let mut a = Attributes::from_env().expect("a conformance PE runs under the launcher");
        a.local_mem_size = local_mem_size;
        a.init_timeout = std::time::Duration::from_secs(30);
        a.op_timeout = std::time::Duration::from_secs(30);
        a
    }

    /// Instance 0 with the default heap.
    pub fn world(&self) -> Result<Instance, Failure> {
        self.world_with(CASE_HEAP)
    }

    /// Instance 0 with a heap of `local_mem_size`.
    pub fn world_with(&self, local_mem_size: u64) -> Result<Instance, Failure> {
        Instance::init(&self.attrs(local_mem_size))
            .map_err(|e| Failure(format!("init of instance 0 failed: {e}")))
    }

    /// A block of TCP ports that no other trial of this run uses at the same time:
    /// `(first, count)`. Use it for `SHMEM_INSTANCE_PORT_RANGE` and extra bootstrap servers.
    pub fn ports(&self) -> (u16, u16) {
        self.ports
    }

    /// Iterations scaled for the tier: `fast` normally, `full` in the full tier.
    pub fn iters(&self, fast: usize, full: usize) -> usize {
        if self.full { full } else { fast }
    }

    /// How long a case may wait for something it expects to happen.
    pub fn patience(&self) -> Duration {
        Duration::from_secs(20)
    }
}
