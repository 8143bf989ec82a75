//! The process's one hold on the vendor libraries: both loaded once, the device chosen once,
//! and the lock that every CANN SHMEM call is made under.
//!
//! CANN SHMEM keeps its active instance in process-global state that its data path reads
//! without a lock (reference §4): a call made for instance 2 while another thread switches to
//! instance 0 would act on instance 0. So every CANN call is made through [`Runtime::cann`],
//! which holds [`Runtime`]'s lock across the `aclshmemx_instance_ctx_set` the call needs and
//! the call itself, and never while waiting: waits poll device memory with ACL copies, which
//! need no lock.
//!
//! The ACL runtime binds a device to a thread: every thread that calls in sets the runtime's
//! device first (`aclrtSetDevice`, [`Runtime::bind`]), which is `SHMEM_HW_DEVICE` or the PE's
//! local rank, as CANN SHMEM's own programs choose it. A program that sets a device itself
//! sets the same one.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Duration;

use shmem_backend::{Exchange, TransportError};

use crate::acl::{ACL_ERROR_REPEAT_INITIALIZE, Acl, AclError};
use crate::cann::Cann;
use crate::error::HwError;
use crate::load::{Places, load};
use crate::version::{Features, report};

/// The loaded libraries, the device and the CANN lock.
pub struct Runtime {
    /// The ACL runtime.
    pub acl: Acl,
    /// CANN SHMEM.
    cann: Cann,
    /// What the loaded CANN SHMEM has.
    pub features: Features,
    /// The device this process drives.
    pub device: i32,
    /// The one line on the libraries, reported at the first init.
    pub report: String,
    /// Held across every CANN call and the instance switch before it.
    lock: Mutex<()>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("device", &self.device)
            .field("features", &self.features)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

/// The process's runtime, once it is made.
static RUNTIME: OnceLock<Result<Runtime, HwError>> = OnceLock::new();

thread_local! {
    /// Whether this thread has the runtime's device set.
    static BOUND: Cell<bool> = const { Cell::new(false) };
}

/// The CANN calls of one instance, made under the runtime's lock after switching to it.
#[derive(Debug)]
pub struct CannCalls<'a> {
    /// The table.
    pub cann: &'a Cann,
    _held: MutexGuard<'a, ()>,
}

impl Runtime {
    /// The process's runtime: on the first call the libraries are loaded from the places the
    /// environment gives ([`Places::from_env`]), `aclInit` is called (a program that already
    /// called it is no error) and the device is chosen: `SHMEM_HW_DEVICE`, else the PE's
    /// local rank (`local_rank`) modulo the devices present.
    pub fn get(local_rank: u32) -> Result<&'static Runtime, HwError> {
        RUNTIME
            .get_or_init(|| Runtime::open(local_rank))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The process's runtime, if one was made.
    pub fn loaded() -> Option<&'static Runtime> {
        RUNTIME.get().and_then(|r| r.as_ref().ok())
    }

    fn open(local_rank: u32) -> Result<Runtime, HwError> {
        // SAFETY: the search accepts only files that are the ACL runtime and CANN SHMEM (or
        // their ABI-compatible stand-ins), whose initialisers are made to run in a program's
        // process, and never this project's own library.
        let libs = unsafe { load(&Places::from_env()) }?;
        let features = Features::probe(&libs.shmem);
        // SAFETY: the tables' types are the libraries' C types (generated from the cited
        // tables, and compiled against the headers by the crate's tests).
        let (acl, cann) = unsafe { (Acl::new(libs.acl), Cann::new(libs.shmem)) };
        let report = report(&acl, cann.library());
        // SAFETY: a NULL configuration path is aclInit's default.
        match unsafe { acl.try_acl_init(std::ptr::null()) } {
            Ok(())
            | Err(HwError::Acl {
                error: AclError(ACL_ERROR_REPEAT_INITIALIZE),
                ..
            }) => {}
            Err(e) => return Err(e),
        }
        let device = chosen_device(&acl, local_rank)?;
        // SAFETY: a device id below the count.
        unsafe { acl.try_aclrt_set_device(device) }?;
        BOUND.with(|b| b.set(true));
        Ok(Runtime {
            acl,
            cann,
            features,
            device,
            report,
            lock: Mutex::new(()),
        })
    }

    /// Sets the runtime's device on this thread (once per thread; setting the device a
    /// thread already has is no change in ACL).
    pub fn bind(&self) -> Result<(), HwError> {
        if BOUND.with(Cell::get) {
            return Ok(());
        }
        // SAFETY: the device chosen at open, below the count.
        unsafe { self.acl.try_aclrt_set_device(self.device) }?;
        BOUND.with(|b| b.set(true));
        Ok(())
    }

    /// CANN SHMEM, with `instance` made CANN's active instance, under the lock until the
    /// returned value is dropped. With a release older than v1.5.0 there is no switch (and only
    /// instance 0 exists, which [`Features::check_instance`] enforces at init).
    pub fn cann(&self, instance: u64) -> Result<CannCalls<'_>, HwError> {
        let held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.features.multi_instance {
            // SAFETY: takes an id; an unknown one is CANN's error code.
            unsafe { self.cann.try_aclshmemx_instance_ctx_set(instance) }?;
        }
        Ok(CannCalls {
            cann: &self.cann,
            _held: held,
        })
    }

    /// CANN SHMEM under the lock, with no instance switch (a call that waits for no peer).
    pub fn cann_unswitched(&self) -> CannCalls<'_> {
        CannCalls {
            cann: &self.cann,
            _held: self.lock.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// CANN SHMEM under the lock for calls that wait for every PE of an instance (creating,
    /// allocating, finalising), taken only when every PE of the instance holds its own:
    /// rounds of a `try_lock` and an allgather (through `exchange`, the core's bootstrap) of
    /// who holds it, backing off for a random while when one does not. Taking the lock
    /// outright could deadlock the job: two threads of one PE creating instances A and B, and
    /// on another PE B's thread holding the lock first, would each wait in CANN for a peer
    /// that waits for its lock. Within a round no thread waits for a lock, so every round ends.
    pub fn cann_collective(
        &self,
        exchange: &mut dyn Exchange,
    ) -> Result<CannCalls<'_>, TransportError> {
        let mut pause = Duration::from_micros(200);
        loop {
            let held = match self.lock.try_lock() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            let all = exchange.allgather(&[u8::from(held.is_some())])?;
            if let Some(held) = held
                && all.iter().all(|v| v.first() == Some(&1))
            {
                return Ok(CannCalls {
                    cann: &self.cann,
                    _held: held,
                });
            }
            std::thread::sleep(pause.mul_f64(jitter()));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// The loaded CANN SHMEM library.
    pub fn shmem_library(&self) -> &shmem_dl::Library {
        self.cann.library()
    }
}

/// The device a PE drives when the program set none: `SHMEM_HW_DEVICE`, else the local rank,
/// modulo the devices present.
fn chosen_device(acl: &Acl, local_rank: u32) -> Result<i32, HwError> {
    let mut count = 0u32;
    // SAFETY: writes one uint32_t.
    unsafe { acl.try_aclrt_get_device_count(&mut count) }?;
    if let Ok(v) = std::env::var("SHMEM_HW_DEVICE") {
        return match v.trim().parse::<i32>() {
            Ok(d) if d >= 0 && (d as u32) < count => Ok(d),
            _ => Err(HwError::Setting(format!(
                "SHMEM_HW_DEVICE={v:?} is not a device of this node (it has {count})"
            ))),
        };
    }
    Ok((local_rank % count.max(1)) as i32)
}

/// A factor in `[0.5, 1.5)` that differs between threads and calls, so that the PEs of two
/// instances that collided back off by different amounts.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, RandomState};
    let bits = RandomState::new().hash_one(std::time::Instant::now());
    0.5 + (bits >> 11) as f64 / (1u64 << 53) as f64
}
