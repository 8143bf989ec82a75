//! What a PE says when the system cannot supply a page of a symmetric heap.
//!
//! The segments are a sparse memory object: a page costs memory only when first touched, and
//! when the system has none to give at that moment (strict overcommit accounting, a memory
//! limit, no huge pages) the touch raises `SIGBUS`, which by default ends the process with no
//! word of why. While a mapping is registered here, and if the program left `SIGBUS` at its
//! default action, a handler looks at the faulting address: inside a registered mapping it
//! writes one line naming the instance, the PE whose segment it is, the offset and the sizes,
//! then restores the default action, so the touch faults again and the process ends by
//! `SIGBUS` as before (the launcher names the signal). Any other `SIGBUS` is left to the
//! default action, untouched. A program (or a sanitizer) with its own handler keeps it.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::segment::Geometry;

/// Mappings registered at once (each instance has one, plus one device window).
const SLOTS: usize = 512;

/// One registered mapping. `base` is 0 while the slot is free; it is published last (release)
/// and cleared first, so the handler (acquire) never reads a half-written entry as live.
struct Slot {
    base: AtomicUsize,
    total: AtomicUsize,
    controls: AtomicUsize,
    stride: AtomicUsize,
    heap: AtomicUsize,
    n_pes: AtomicUsize,
    instance: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)] // only to initialise the array below
const FREE: Slot = Slot {
    base: AtomicUsize::new(0),
    total: AtomicUsize::new(0),
    controls: AtomicUsize::new(0),
    stride: AtomicUsize::new(0),
    heap: AtomicUsize::new(0),
    n_pes: AtomicUsize::new(0),
    instance: AtomicU64::new(0),
};

static SLOTS_TABLE: [Slot; SLOTS] = [FREE; SLOTS];
/// Serialises registrations (the handler takes no lock).
static WRITERS: Mutex<()> = Mutex::new(());
static INSTALL: Once = Once::new();

/// Registers the mapping at `base` of instance `instance`'s segments, laid out as `g` says
/// (installing the handler on first use); [`unregister`] it before it is unmapped. A full
/// table only means its faults are not described.
pub(crate) fn register(base: usize, g: &Geometry, instance: u64) {
    INSTALL.call_once(install);
    let _w = WRITERS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(s) = SLOTS_TABLE
        .iter()
        .find(|s| s.base.load(Ordering::Relaxed) == 0)
    else {
        return;
    };
    s.total.store(g.total, Ordering::Relaxed);
    s.controls.store(g.controls, Ordering::Relaxed);
    s.stride.store(g.stride, Ordering::Relaxed);
    s.heap.store(g.heap, Ordering::Relaxed);
    s.n_pes.store(g.n_pes as usize, Ordering::Relaxed);
    s.instance.store(instance, Ordering::Relaxed);
    s.base.store(base, Ordering::Release);
}

/// Forgets the mapping at `base`.
pub(crate) fn unregister(base: usize) {
    let _w = WRITERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = SLOTS_TABLE
        .iter()
        .find(|s| s.base.load(Ordering::Relaxed) == base)
    {
        s.base.store(0, Ordering::Release);
    }
}

/// Installs the handler if `SIGBUS` has its default action.
fn install() {
    // SAFETY: querying the current action with a null new action changes nothing; `old` is a
    // valid place for the kernel to write it.
    let default = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_DFL
    };
    if !default {
        return;
    }
    // SAFETY: `on_sigbus` has the SA_SIGINFO signature and does only async-signal-safe work
    // (atomic loads, formatting into a stack buffer, write(2), sigaction(2)).
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigbus as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
    }
}

/// The line for a fault at `addr` in a registered mapping, if it is in one.
fn describe(addr: usize, out: &mut Line) -> bool {
    for s in &SLOTS_TABLE {
        let base = s.base.load(Ordering::Acquire);
        let total = s.total.load(Ordering::Relaxed);
        if base == 0 || addr < base || addr - base >= total {
            continue;
        }
        let (at, controls) = (addr - base, s.controls.load(Ordering::Relaxed));
        let (stride, heap) = (
            s.stride.load(Ordering::Relaxed),
            s.heap.load(Ordering::Relaxed),
        );
        let instance = s.instance.load(Ordering::Relaxed);
        let n_pes = s.n_pes.load(Ordering::Relaxed);
        let _ = write!(
            out,
            "shmem: SIGBUS at {addr:#x}: the system could not supply a page of the symmetric heap of instance {instance} ("
        );
        let _ = if at < controls {
            write!(out, "its control blocks")
        } else {
            let pe = (at - controls) / stride.max(1);
            let offset = (at - controls) % stride.max(1);
            write!(
                out,
                "PE {pe}'s segment, offset {offset:#x} of its {heap} bytes"
            )
        };
        let _ = writeln!(
            out,
            "; {n_pes} PEs, a memory object of {total} bytes, backed as touched): memory ran short (strict overcommit, vm.overcommit_memory=2; a memory limit of the cgroup; no huge pages); free memory or make the heap smaller (SHMEM_SYMMETRIC_SIZE, local_mem_size)"
        );
        return true;
    }
    false
}

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; for SIGBUS, si_addr
    // is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let mut line = Line::new();
    if describe(addr, &mut line) {
        let bytes = line.bytes();
        // SAFETY: write(2) of a buffer we own to stderr is async-signal-safe.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    }
    // Back to the default action, and the signal raised again: it is delivered as the handler
    // returns and ends the process by SIGBUS, as it would have without this handler (a fault
    // would also recur on the touch; a SIGBUS sent by kill would not).
    // SAFETY: sigaction(2) and raise(3) are async-signal-safe; the action is a valid SIG_DFL
    // action.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
        libc::raise(libc::SIGBUS);
    }
}

/// A line formatted without allocating (a signal handler must not), cut at its capacity.
struct Line {
    buf: [u8; 640],
    len: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            buf: [0; 640],
            len: 0,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_in_a_registered_mapping_names_the_instance_pe_offset_and_sizes() {
        // 2 PEs of 3 MiB: control blocks in the first 2 MiB, then a slot of 4 MiB per PE.
        let g = Geometry::new(3 << 20, 2).expect("a geometry");
        assert_eq!((g.controls, g.stride), (2 << 20, 4 << 20));
        let base = 0x7000_0000_0000;
        register(base, &g, 7);
        let mut line = Line::new();
        let at = base + g.controls + g.stride + 0x1234;
        assert!(describe(at, &mut line));
        let text = String::from_utf8_lossy(line.bytes()).into_owned();
        for says in [
            "instance 7",
            "PE 1's segment, offset 0x1234 of its 3145728 bytes",
            "2 PEs",
            "vm.overcommit_memory",
            "SHMEM_SYMMETRIC_SIZE",
        ] {
            assert!(text.contains(says), "{says}: {text}");
        }
        let mut line = Line::new();
        assert!(describe(base + 64, &mut line));
        assert!(String::from_utf8_lossy(line.bytes()).contains("control blocks"));
        assert!(!describe(base + g.total, &mut Line::new()));
        assert!(!describe(base - 1, &mut Line::new()));
        unregister(base);
        assert!(!describe(at, &mut Line::new()));
    }
}
