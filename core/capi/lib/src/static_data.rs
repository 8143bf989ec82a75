//! The executable's global and static variables as symmetric objects, as OpenSHMEM requires:
//! RMA, atomics, locks and waits accept their addresses as they accept the heap's.
//!
//! **Which memory.** The writable part of the executable's last writable `PT_LOAD` segment
//! (`.data` and `.bss`): from the end of `PT_GNU_RELRO` (which the dynamic loader makes
//! read-only after relocation; the loader rounds its end down to a page, and so do we) to the
//! page end of the segment's memory size (`_end`). Statics of shared libraries (this library's
//! own included) are not symmetric, as in the other implementations. The range is found with
//! `dl_iterate_phdr` (the main program is its first entry), so PIE and ASLR need nothing more:
//! the core translates by offset.
//!
//! **When.** At `shmem_init`/`start_pes`, and only when the executable links this library at
//! link time: its `DT_NEEDED` entries name `libshmem.so`, or the library is linked statically
//! into it. A process that merely `dlopen`s the library (a Python interpreter importing
//! shmem4py) keeps its memory private: nothing of it is remapped.
//!
//! **How.** The core copies the range into the default instance's segment and maps the segment
//! over it ([`shmem_core::Instance::init_with_static_data`]): anonymous shared memory, nothing
//! named, nothing to leak. It stays shared after `shmem_finalize`, with its contents.
//!
//! **fork.** A `pthread_atfork` child handler turns the range back into a private copy in the
//! child, so that `fork()`, `system()` and Python's `multiprocessing` keep their ordinary
//! semantics: a child's writes never reach the parent or its peers.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use shmem_core::StaticRange;

/// The range shared at the last init (address and length; 0 when none), for the fork handler.
static SHARED_AT: AtomicUsize = AtomicUsize::new(0);
static SHARED_LEN: AtomicUsize = AtomicUsize::new(0);
static ATFORK: Once = Once::new();

/// `ElfW(Dyn)`.
#[repr(C)]
struct Dyn {
    tag: isize,
    val: usize,
}

const DT_NULL: isize = 0;
const DT_NEEDED: isize = 1;
const DT_STRTAB: isize = 5;

/// What the program headers of the main program say.
#[derive(Default)]
struct Executable {
    /// The load bias (`dlpi_addr`).
    bias: usize,
    /// Every `PT_LOAD`: start and end (biased).
    loads: Vec<(usize, usize)>,
    /// The last writable `PT_LOAD`: start and end (biased).
    writable: Option<(usize, usize)>,
    /// The end of `PT_GNU_RELRO` (biased).
    relro_end: Option<usize>,
    /// The dynamic section (biased).
    dynamic: Option<usize>,
}

unsafe extern "C" fn first_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `dl_iterate_phdr` passes a valid `info` for the call, and `data` is the
    // `Executable` that `executable` passed.
    let (info, exe) = unsafe { (&*info, &mut *data.cast::<Executable>()) };
    let phdrs = if info.dlpi_phdr.is_null() {
        &[][..]
    } else {
        // SAFETY: the loader's program headers, `dlpi_phnum` of them.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    exe.bias = info.dlpi_addr as usize;
    for ph in phdrs {
        let start = exe.bias.wrapping_add(ph.p_vaddr as usize);
        let end = start.wrapping_add(ph.p_memsz as usize);
        match ph.p_type {
            libc::PT_LOAD => {
                exe.loads.push((start, end));
                if ph.p_flags & libc::PF_W != 0 && exe.writable.is_none_or(|(s, _)| s < start) {
                    exe.writable = Some((start, end));
                }
            }
            libc::PT_GNU_RELRO => exe.relro_end = Some(end),
            libc::PT_DYNAMIC => exe.dynamic = Some(start),
            _ => {}
        }
    }
    1 // the main program is the first object: stop there
}

/// The main program's program headers.
fn executable() -> Executable {
    let mut exe = Executable::default();
    // SAFETY: the callback only reads what the loader passes and writes `exe`, which outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(first_object), (&raw mut exe).cast()) };
    exe
}

/// Whether the executable's `DT_NEEDED` entries name this library.
fn needs_this_library(exe: &Executable) -> bool {
    let Some(dynamic) = exe.dynamic else {
        return false;
    };
    let mut entry = dynamic as *const Dyn;
    let (mut strtab, mut needed) = (None, Vec::new());
    loop {
        // SAFETY: the dynamic section of the loaded executable, an array ended by DT_NULL.
        let d = unsafe { &*entry };
        match d.tag {
            DT_NULL => break,
            DT_NEEDED => needed.push(d.val),
            DT_STRTAB => strtab = Some(d.val),
            _ => {}
        }
        // SAFETY: not past the DT_NULL entry, which ends the array.
        entry = unsafe { entry.add(1) };
    }
    let Some(strtab) = strtab else {
        return false;
    };
    // The loader relocates DT_STRTAB in place on most targets, not on all: an address below
    // the load bias is still a virtual address of the file.
    let strtab = if strtab < exe.bias {
        strtab + exe.bias
    } else {
        strtab
    };
    needed.iter().any(|&off| {
        // SAFETY: a NUL-terminated name in the executable's string table.
        let name = unsafe { CStr::from_ptr((strtab + off) as *const c_char) }.to_bytes();
        let file = name.rsplit(|&b| b == b'/').next().unwrap_or(name);
        file == b"libshmem.so" || file.starts_with(b"libshmem.so.")
    })
}

/// Whether this library is linked into the executable itself (`libshmem.a`).
fn linked_statically(exe: &Executable) -> bool {
    let here = crate::setup::shmem_init as *const () as usize;
    exe.loads.iter().any(|&(s, e)| (s..e).contains(&here))
}

/// The executable's static data, when it links this library at link time; `None` in a
/// process that `dlopen`ed it, or when the executable has no writable data.
pub(crate) fn range() -> Option<StaticRange> {
    let exe = executable();
    if !(linked_statically(&exe) || needs_this_library(&exe)) {
        return None;
    }
    let page = shmem_sim::page_size();
    let (start, end) = exe.writable?;
    let lo = match exe.relro_end {
        Some(r) if r > start && r <= end => r & !(page - 1),
        _ => start & !(page - 1),
    };
    let hi = end.checked_next_multiple_of(page)?;
    if hi <= lo {
        return None;
    }
    Some(StaticRange {
        addr: NonNull::new(lo as *mut u8)?,
        len: hi - lo,
    })
}

/// Records that `range` is shared now, and makes every later `fork` child take a private copy.
pub(crate) fn shared(range: StaticRange) {
    SHARED_LEN.store(0, Ordering::Release);
    SHARED_AT.store(range.addr.as_ptr() as usize, Ordering::Relaxed);
    SHARED_LEN.store(range.len, Ordering::Release);
    ATFORK.call_once(|| {
        // SAFETY: registers a handler with no preparation or parent part; the child handler is
        // async-signal-safe (only system calls and a byte copy).
        unsafe { libc::pthread_atfork(None, None, Some(private_in_child)) };
    });
}

/// The `fork` child handler: replaces the shared range with a private copy of its contents.
extern "C" fn private_in_child() {
    let len = SHARED_LEN.load(Ordering::Acquire);
    let at = SHARED_AT.load(Ordering::Relaxed);
    if len == 0 {
        return;
    }
    use rustix::mm::{MapFlags, ProtFlags};
    let rw = ProtFlags::READ | ProtFlags::WRITE;
    // SAFETY: a new private anonymous mapping never aliases existing memory.
    let Ok(copy) =
        (unsafe { rustix::mm::mmap_anonymous(std::ptr::null_mut(), len, rw, MapFlags::PRIVATE) })
    else {
        return not_private();
    };
    // SAFETY: `at..at + len` is the shared range, mapped in the child as in the parent, and
    // `copy` a fresh mapping of `len` bytes; only this thread runs in the child. The range is
    // saved, replaced with private memory, and filled again from the copy (page-aligned, and
    // not with `memcpy`, which AddressSanitizer would check against the globals' redzones).
    unsafe {
        shmem_sim::copy_program_memory(copy.cast::<u8>(), at as *const u8, len);
        let private = rustix::mm::mmap_anonymous(
            at as *mut c_void,
            len,
            rw,
            MapFlags::PRIVATE | MapFlags::FIXED,
        );
        if private.is_ok() {
            shmem_sim::copy_program_memory(at as *mut u8, copy.cast::<u8>(), len);
        }
        let _ = rustix::mm::munmap(copy, len);
        if private.is_err() {
            not_private();
        }
    }
}

#[cold]
fn not_private() {
    let _ = rustix::io::write(
        rustix::stdio::stderr(),
        b"shmem: fork: could not give the child a private copy of the symmetric static data; its writes reach the parent\n",
    );
}
