//! Kernels written in C++ on simulated AI cores: the launch behind `ICPU_RUN_KF` and
//! `ACLSHMEM_SIM_LAUNCH` (`tikicpulib.h`), and the state of the block a thread runs.
//!
//! A launch enqueues the kernel on a stream through the core's launch machinery
//! (`shmem::launch_starting_on`): every block runs the C++ body on its own thread, with this
//! module's thread-local record of the block ([`with_block`]) through which the device calls
//! (`device.rs`) reach its [`MultiDevice`]. On x86-64 the thread's GS base is set to the block's
//! UB, so that a `__ubuf__` pointer (clang's `address_space(256)`, see `kernel_operator.h`) with
//! value 32 is byte 32 of that block's UB, as on an AI core.
//!
//! A device call cannot return early from C++ code, so a failure is recorded in the block
//! (the first one wins), the other blocks are released from their waits
//! ([`Device::fail_launch`](shmem_core::Device::fail_launch), through a `MultiDevice`), and every later device call of the block does nothing; the
//! launch then fails naming the kernel, the block and the call.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};

use shmem_capi::cann;
use shmem_core::{Instance, KernelError, KernelResult, MultiDevice, Stream};

/// What the launch knows about the block a thread runs.
pub(crate) struct Block {
    /// The block's device handle, valid while the C++ body runs.
    dev: *mut MultiDevice<'static>,
    /// The first failure of a device call.
    error: Option<KernelError>,
}

thread_local! {
    static BLOCK: Cell<*mut Block> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs the device call `call` on the block this thread runs: `f`'s value, or `sentinel` when
/// the call fails (recorded, ending the launch), when an earlier call of the block failed, or
/// when no block runs on this thread (logged: a device call outside a kernel).
pub(crate) fn with_block<R>(
    call: &str,
    sentinel: R,
    f: impl FnOnce(&mut MultiDevice<'static>) -> Result<R, KernelError>,
) -> R {
    let p = BLOCK.with(Cell::get);
    if p.is_null() {
        super::failed(
            call,
            &shmem_core::Error::InvalidParam(
                "a device call outside a kernel: no simulated AI core runs this thread".into(),
            ),
        );
        return sentinel;
    }
    // SAFETY: set by `run_block` for the duration of the body on this thread only.
    let block = unsafe { &mut *p };
    if block.error.is_some() {
        return sentinel;
    }
    // SAFETY: as above.
    let dev = unsafe { &mut *block.dev };
    match f(dev) {
        Ok(v) => v,
        Err(e) => {
            dev.fail_launch();
            block.error = Some(e);
            sentinel
        }
    }
}

/// Whether this thread runs a block of a kernel.
pub(crate) fn on_core() -> bool {
    !BLOCK.with(Cell::get).is_null()
}

/// Points the thread's GS base at `ub` (x86-64), so that `__ubuf__` addresses are offsets into
/// it.
fn set_ub_segment(ub: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    {
        const ARCH_SET_GS: libc::c_long = 0x1001;
        // SAFETY: sets this thread's GS base, which neither Rust nor glibc use on x86-64.
        let rc = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_SET_GS, ub as libc::c_ulong) };
        debug_assert_eq!(rc, 0, "arch_prctl(ARCH_SET_GS) failed");
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ub;
}

/// A kernel body from C++: the function and its captured arguments, released after the launch.
struct Body {
    run: unsafe extern "C" fn(*mut c_void),
    args: *mut c_void,
    release: Option<unsafe extern "C" fn(*mut c_void)>,
}

// SAFETY: the arguments are a copy made for the launch (`tikicpulib.h`); the body only reads
// them, from every block's thread.
unsafe impl Send for Body {}
// SAFETY: as above.
unsafe impl Sync for Body {}

impl Body {
    fn call(&self) {
        // SAFETY: the body and its arguments come from `tikicpulib.h`'s launch.
        unsafe { (self.run)(self.args) }
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the launch is over; `release` frees what `tikicpulib.h` allocated.
            unsafe { release(self.args) };
        }
    }
}

/// Gives the block the MTE configuration of the instance it acts on (the host's or a kernel's
/// `aclshmemx_set_mte_config`), as CANN's device calls read it from the instance's state.
pub(crate) fn load_mte_config(dev: &mut MultiDevice<'_>) -> KernelResult {
    let Some(id) = dev.instance().map(Instance::id) else {
        return Ok(());
    };
    let (offset, size) = super::device_state::mte_config(id);
    dev.set_mte_config(offset as usize, size as usize)
}

/// Runs `body` on this thread as block `dev`: the device calls it makes act on the block.
pub(crate) fn run_rust_block(dev: &mut MultiDevice<'_>, body: &dyn Fn()) -> KernelResult {
    set_ub_segment(dev.ub().as_mut_ptr());
    load_mte_config(dev)?;
    let mut block = Block {
        // SAFETY (lifetime): the pointer is used only while `dev` is borrowed here.
        dev: (dev as *mut MultiDevice<'_>).cast(),
        error: None,
    };
    BLOCK.with(|b| b.set(&mut block));
    body();
    BLOCK.with(|b| b.set(std::ptr::null_mut()));
    block.error.map_or(Ok(()), Err)
}

/// The stream for an `aclrtStream`: NULL is the active instance's default stream (that of the
/// host calls with no stream), or the process's own when no instance is initialised.
///
/// # Safety
///
/// `stream` is NULL or a live `aclrtStream` of the ACL runtime stand-in.
pub(crate) unsafe fn kernel_stream(stream: *mut c_void) -> shmem_core::Result<Stream> {
    if cann::active().is_ok_and(|i| i.backend_name() != "sim") {
        // The program's aclrtStreams belong to CANN's runtime there, and its kernels to the NPU.
        return Err(shmem_core::Error::NotSupported(
            "kernels on the simulator's cores run with SHMEM_BACKEND=sim; on hw kernels run on the NPU"
                .into(),
        ));
    }
    Ok(if !stream.is_null() {
        // SAFETY: a live `aclrtStream` is a pointer from `shmem_sim::Stream::into_raw`.
        Stream::Sim(unsafe { shmem_sim::Stream::from_raw(stream) })
    } else if let Ok(inst) = cann::active()
        && let Ok(s) = super::rma::default_stream_of(&inst)
    {
        s
    } else {
        static OWN: std::sync::OnceLock<Stream> = std::sync::OnceLock::new();
        OWN.get_or_init(Stream::new).clone()
    })
}

/// `aclsimKernelLaunch`: enqueues kernel `name` on `block_dim` blocks on `stream` (NULL: the
/// default stream); every block calls `run(args)`, and `release(args)` (if not NULL) follows
/// the launch. A kernel built with `MULTI_INSTANCE` (`multi_instance` ≠ 0) starts on no
/// instance; one built without acts on instance 0. With `wait` ≠ 0, the call synchronises the
/// stream and returns the launch's outcome (`ICPU_RUN_KF`); otherwise the stream's next
/// synchronisation reports it. 0, or CANN's code of the failure, logged in one line.
///
/// # Safety
///
/// `name` is a C string; `stream` is NULL or a live `aclrtStream`; `run` may be called with
/// `args` from any thread until `release` is.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimKernelLaunch(
    name: *const c_char,
    block_dim: u32,
    stream: *mut c_void,
    multi_instance: c_int,
    wait: c_int,
    run: unsafe extern "C" fn(*mut c_void),
    args: *mut c_void,
    release: Option<unsafe extern "C" fn(*mut c_void)>,
) -> c_int {
    let body = Body { run, args, release };
    let name = if name.is_null() {
        "kernel".to_string()
    } else {
        // SAFETY: a C string (the contract).
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    };
    if on_core() {
        // A launch from a block would wait for its own stream: refuse it, failing the block.
        with_block("ICPU_RUN_KF", (), |_| {
            Err(KernelError::new(
                "ICPU_RUN_KF",
                format!("kernel {name} launched from a kernel: kernels cannot launch kernels"),
            ))
        });
        return shmem_core::Code::InvalidParam as c_int;
    }
    super::code("kernel launch", || {
        // SAFETY: forwarded.
        let s = unsafe { kernel_stream(stream) }?;
        let start = match multi_instance {
            0 => Instance::by_id(0),
            _ => None,
        };
        shmem_core::launch_starting_on(&s, &name, block_dim, start, move |dev| {
            run_rust_block(dev, &|| body.call())
        })?;
        if wait != 0 {
            s.synchronize()?;
        }
        Ok(())
    })
}

/// `aclsimKernelArg`: the address at which kernels reach the memory at `p`: a symmetric
/// address of any initialised instance becomes the transport's mapping of that segment, device
/// memory from `aclrtMalloc` the ACL runtime's alias of it; anything else is returned as is.
/// The launch applies it to every pointer argument, so that a kernel dereferences device
/// memory as on an NPU while host code faults on it.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimKernelArg(p: *mut c_void) -> *mut c_void {
    if p.is_null() {
        return p;
    }
    for inst in Instance::live_ids().into_iter().filter_map(Instance::by_id) {
        if let Some(k) = inst.kernel_addr(p.cast()) {
            return k.cast();
        }
    }
    super::acl::device_alias(p, 1).map_or(p, |a| a.cast())
}
