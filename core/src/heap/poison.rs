//! AddressSanitizer's view of the symmetric heap: in a program built with
//! `-fsanitize=address`, the free space of this PE's heap is poisoned, so that an access past
//! the end of a `shmem_malloc` block, or to a freed block, is reported like one on the C heap.
//!
//! The sanitizer's runtime is found at run time (`dlsym` of `__asan_poison_memory_region` and
//! `__asan_unpoison_memory_region`); in any other process these functions do nothing. Only this
//! PE's own mapping of its heap is poisoned: the shadow memory is per process, and the reserved
//! area at the heap's start (the library's synchronisation words) stays addressable.

use std::sync::OnceLock;

type Region = unsafe extern "C" fn(addr: *const std::ffi::c_void, size: usize);

/// The runtime's `(poison, unpoison)`, when the process has one.
fn runtime() -> Option<(Region, Region)> {
    static RUNTIME: OnceLock<Option<(Region, Region)>> = OnceLock::new();
    *RUNTIME.get_or_init(|| {
        let find = |name: &std::ffi::CStr| {
            // SAFETY: `dlsym` with `RTLD_DEFAULT` only searches the loaded objects' symbol
            // tables; the name is a valid C string.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            // SAFETY: when present, these symbols are AddressSanitizer's public interface
            // functions, whose C signature is `void f(void const volatile *addr, size_t size)`.
            (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, Region>(p) })
        };
        Some((
            find(c"__asan_poison_memory_region")?,
            find(c"__asan_unpoison_memory_region")?,
        ))
    })
}

/// Marks `len` bytes at offset `off` of the heap mapped at `base` as not addressable.
pub(crate) fn poison(base: Option<usize>, off: u64, len: u64) {
    if let (Some((poison, _)), Some(base)) = (runtime(), base) {
        // SAFETY: the sanitizer only updates its shadow memory for the range; the range lies
        // in this PE's mapped heap (the caller's offsets come from its allocator).
        unsafe { poison((base + off as usize) as *const _, len as usize) }
    }
}

/// Marks `len` bytes at offset `off` of the heap mapped at `base` as addressable.
pub(crate) fn unpoison(base: Option<usize>, off: u64, len: u64) {
    if let (Some((_, unpoison)), Some(base)) = (runtime(), base) {
        // SAFETY: as for `poison`.
        unsafe { unpoison((base + off as usize) as *const _, len as usize) }
    }
}
