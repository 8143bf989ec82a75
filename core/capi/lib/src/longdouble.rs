//! `long double` in the C ABI. Rust has no `long double`: the four routines that pass one by
//! value (`shmem_[ctx_]longdouble_p` and `_g`) are implemented in C (`src/longdouble.c`), and
//! exported through Rust trampolines (a Rust cdylib exports only the symbols Rust defines):
//! naked functions that jump to the C code with every argument register and the stack as the
//! caller left them. The reductions pass pointers, so they run in Rust on 16-byte elements
//! whose arithmetic is the C compiler's.

use std::ffi::c_int;

use bytemuck::{Pod, Zeroable};
use shmem_core::{ReduceOp, Reducible};

unsafe extern "C" {
    fn shmem_rs_longdouble_combine(op: c_int, acc: *mut LongDouble, other: *const LongDouble);
}

/// A `long double`, as 16 opaque bytes (x86-64 and AArch64 Linux both store it in 16).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct LongDouble(pub [u8; 16]);

impl Reducible for LongDouble {
    fn supports(op: ReduceOp) -> bool {
        matches!(
            op,
            ReduceOp::Max | ReduceOp::Min | ReduceOp::Sum | ReduceOp::Prod
        )
    }

    fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
        let mut acc = a;
        // SAFETY: both point to live 16-byte `long double`s; the C function reads `b` and
        // writes `acc` only.
        unsafe { shmem_rs_longdouble_combine(op as c_int, &mut acc, &b) };
        acc
    }
}

/// Defines exported `$name` as a jump to C function `$target`, with the arguments untouched.
macro_rules! trampoline {
    ($(#[$doc:meta])* $name:ident => $target:ident) => {
        unsafe extern "C" {
            fn $target();
        }
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// The C routine's contract (a naked jump: the C code receives the caller's arguments).
        #[unsafe(no_mangle)]
        #[unsafe(naked)]
        pub unsafe extern "C" fn $name() {
            #[cfg(target_arch = "x86_64")]
            std::arch::naked_asm!("jmp {}", sym $target);
            #[cfg(target_arch = "aarch64")]
            std::arch::naked_asm!("b {}", sym $target);
        }
    };
}

trampoline!(
    /// `shmem_longdouble_p(long double *dest, long double value, int pe)`.
    shmem_longdouble_p => shmem_rs_longdouble_p
);
trampoline!(
    /// `shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe)`.
    shmem_ctx_longdouble_p => shmem_rs_ctx_longdouble_p
);
trampoline!(
    /// `shmem_longdouble_g(const long double *source, int pe)`.
    shmem_longdouble_g => shmem_rs_longdouble_g
);
trampoline!(
    /// `shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe)`.
    shmem_ctx_longdouble_g => shmem_rs_ctx_longdouble_g
);
