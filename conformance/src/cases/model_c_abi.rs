//! `model::random_epochs_through_the_c_abi` — the model's schedule (`model.rs`) issued through
//! the exported symbols of `libshmem.so`, the OpenSHMEM C ABI, and checked against the same
//! sequential model.
//!
//! Each PE loads the library the runner built (`dlopen`, [`C_LIBRARY_VAR`]), starts it with
//! `shmem_init` and makes every call of the run through the C symbols: the typed, sized and byte
//! RMA (`shmem_uint64_put`, `shmem_uint64_p`, `shmem_putmem`, `shmem_uint64_iput`, their gets
//! and `_nbi` forms), the atomics of `uint64`, `uint32` and `int64` (blocking and `_nbi`),
//! `shmem_putmem_signal(_nbi)`, `shmem_signal_set`/`add`, `shmem_signal_wait_until`,
//! `shmem_signal_fetch`, `shmem_fence`, `shmem_quiet`, `shmem_barrier_all`, `shmem_calloc`
//! and `shmem_free`. The library has its own copy of the core, so nothing of the Rust API is
//! involved.
//!
//! What differs from the Rust run, and why:
//! - The C ABI has one instance (`shmem_init`'s), so the schedule's instances 0 and 1 are two
//!   sets of the six regions on it, at different offsets; the model keeps them apart as
//!   before, so interference between the sets shows as a mismatch.
//! - OpenSHMEM's signals are 64-bit. The schedule's 32-bit signal words take
//!   `shmem_putmem` + `shmem_fence` + `shmem_uint32_atomic_set`/`add`, which orders the data
//!   before the signal as `put_signal` does.
//! - The collective phase (`model_collectives.rs`: reductions, broadcasts, fcollects,
//!   alltoalls, team splits, lock-protected increments, context puts) runs on the same
//!   instance, through `shmem_uint64_sum_reduce`, `shmem_broadcastmem`, `shmem_fcollectmem`,
//!   `shmem_alltoallmem`, `shmem_team_split_strided`, `shmem_team_sync`, `shmem_team_destroy`,
//!   `shmem_set_lock`/`shmem_clear_lock` and `shmem_ctx_create`/`shmem_ctx_uint64_put`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_long, c_void};
use std::mem::ManuallyDrop;
use std::rc::Rc;

use libloading::Library;
use shmem::SignalOp;

use super::model::{
    Amo, At, GetHow, Log, Op, PutHow, Region, RunSize, Target, Word, Words, run_epochs,
    seed_from_env,
};
use super::model_collectives::{BLOCK_WORDS, CollOps, Collectives};
use crate::{Case, Ctx, Failure, Outcome, check};

/// The variable through which the runner gives the PEs the path of `libshmem.so`.
pub const C_LIBRARY_VAR: &str = "SHMEM_CONFORMANCE_C_LIBRARY";

/// `SHMEM_CMP_EQ`.
const CMP_EQ: c_int = 0;
/// `SHMEM_SIGNAL_SET`.
const SIGNAL_SET: c_int = 0;
/// `SHMEM_SIGNAL_ADD`.
const SIGNAL_ADD: c_int = 1;

/// The loaded library and the routines resolved so far (by name, at their first use).
struct Abi {
    /// Never unloaded: the library registers exit handlers that must stay mapped.
    lib: ManuallyDrop<Library>,
    resolved: RefCell<HashMap<String, *const c_void>>,
}

impl Abi {
    fn load() -> Result<Abi, Failure> {
        let path = std::env::var(C_LIBRARY_VAR).map_err(|_| {
            Failure(format!(
                "{C_LIBRARY_VAR} is not set: the runner builds libshmem.so for this case"
            ))
        })?;
        // SAFETY: loading runs the library's initialisers, which only set up its statics.
        let lib = unsafe { Library::new(&path) }
            .map_err(|e| Failure(format!("cannot load {path}: {e}")))?;
        Ok(Abi {
            lib: ManuallyDrop::new(lib),
            resolved: RefCell::new(HashMap::new()),
        })
    }

    /// The routine `name` as a function pointer of type `F`.
    ///
    /// # Safety
    ///
    /// `F` is the C prototype of `name` (`shmem.h`) as an `unsafe extern "C" fn`.
    unsafe fn f<F: Copy>(&self, name: &str) -> Result<F, Failure> {
        assert_eq!(
            std::mem::size_of::<F>(),
            std::mem::size_of::<*const c_void>()
        );
        let mut resolved = self.resolved.borrow_mut();
        let p = match resolved.get(name) {
            Some(&p) => p,
            None => {
                // SAFETY: the symbol is read as an address only.
                let sym = unsafe { self.lib.get::<*const c_void>(name.as_bytes()) }
                    .map_err(|e| Failure(format!("libshmem.so does not export {name}: {e}")))?;
                let p = *sym;
                check!(!p.is_null(), "libshmem.so exports {name} as a null address");
                resolved.insert(name.to_string(), p);
                p
            }
        };
        // SAFETY: a non-null address of the routine, of type `F` per the contract.
        Ok(unsafe { std::mem::transmute_copy::<*const c_void, F>(&p) })
    }
}

/// Calls routine `$name` of `$abi` with prototype `fn($($t),*) $(-> $r)?` on `$args`.
macro_rules! c {
    ($abi:expr, $name:expr, fn($($t:ty),*) $(-> $r:ty)?, $($arg:expr),*) => {{
        // SAFETY: the prototype is the routine's in `shmem.h`; the pointers passed are
        // symmetric addresses from `shmem_calloc` or live local buffers of the lengths given.
        unsafe {
            let f = $abi.f::<unsafe extern "C" fn($($t),*) $(-> $r)?>($name)?;
            f($($arg),*)
        }
    }};
}

/// An OpenSHMEM atomic type, with its name in the C routines.
trait CWord: Word + Default + Copy {
    const NAME: &'static str;
}

impl CWord for u64 {
    const NAME: &'static str = "uint64";
}

impl CWord for u32 {
    const NAME: &'static str = "uint32";
}

impl CWord for i64 {
    const NAME: &'static str = "int64";
}

/// The C routine's name for the schedule's atomic `name` (`atomic_fetch_add`, …) on `T`.
fn amo_routine<T: CWord>(name: &str) -> String {
    format!("shmem_{}_{name}", T::NAME)
}

/// One set of the six regions on the C ABI's instance.
struct CWords {
    abi: Rc<Abi>,
    heap_base: usize,
    /// The number of PEs (the signal regions' lengths depend on it).
    n: usize,
    /// The regions' addresses, in the order of [`Region`]'s `REGIONS`.
    at: [*mut c_void; 6],
}

fn index(region: Region) -> usize {
    match region {
        Region::Data => 0,
        Region::A64 => 1,
        Region::A32 => 2,
        Region::Ai64 => 3,
        Region::Sig => 4,
        Region::Sig32 => 5,
    }
}

/// The width of a region's words in bytes.
fn width(region: Region) -> usize {
    match region {
        Region::A32 | Region::Sig32 => 4,
        _ => 8,
    }
}

impl CWords {
    fn new(abi: &Rc<Abi>, heap_base: usize, n: usize) -> Result<CWords, Failure> {
        let mut at = [std::ptr::null_mut(); 6];
        for r in [
            Region::Data,
            Region::A64,
            Region::A32,
            Region::Ai64,
            Region::Sig,
            Region::Sig32,
        ] {
            let p = c!(
                abi,
                "shmem_calloc",
                fn(usize, usize) -> *mut c_void,
                r.len(n),
                width(r)
            );
            check!(
                !p.is_null(),
                "shmem_calloc({}, {}) returned NULL",
                r.len(n),
                width(r)
            );
            at[index(r)] = p;
        }
        Ok(CWords {
            abi: abi.clone(),
            heap_base,
            n,
            at,
        })
    }

    /// The address of word `idx` of `region`.
    fn addr(&self, (region, idx): At) -> *mut c_void {
        self.at[index(region)].wrapping_byte_add(idx * width(region))
    }

    fn free(&self) -> Outcome {
        for p in self.at {
            c!(self.abi, "shmem_free", fn(*mut c_void), p);
        }
        Ok(())
    }

    /// A blocking atomic on `T` words.
    fn amo_typed<T: CWord>(
        &self,
        at: At,
        amo: Amo,
        val: u64,
        cond: u64,
        pe: u32,
    ) -> Result<Option<u64>, Failure> {
        let (a, name) = (self.addr(at).cast::<T>(), amo_routine::<T>(amo.name(false)));
        let (v, c, pe) = (T::from_u64(val), T::from_u64(cond), pe as c_int);
        let fetched: T = match amo {
            Amo::Add | Amo::Or | Amo::And | Amo::Xor | Amo::Set => {
                c!(self.abi, &name, fn(*mut T, T, c_int), a, v, pe);
                return Ok(None);
            }
            Amo::Inc => {
                c!(self.abi, &name, fn(*mut T, c_int), a, pe);
                return Ok(None);
            }
            Amo::FetchAdd | Amo::FetchOr | Amo::FetchAnd | Amo::FetchXor | Amo::Swap => {
                c!(self.abi, &name, fn(*mut T, T, c_int) -> T, a, v, pe)
            }
            Amo::FetchInc => c!(self.abi, &name, fn(*mut T, c_int) -> T, a, pe),
            Amo::Fetch => c!(self.abi, &name, fn(*const T, c_int) -> T, a, pe),
            Amo::CompareSwap => c!(self.abi, &name, fn(*mut T, T, T, c_int) -> T, a, c, v, pe),
        };
        Ok(Some(fetched.to_u64()))
    }

    /// A non-blocking fetching atomic on `T` words, fetching into `slot`.
    fn amo_nbi_typed<T: CWord>(
        &self,
        slot: *mut T,
        at: At,
        amo: Amo,
        val: u64,
        cond: u64,
        pe: u32,
    ) -> Outcome {
        let (a, name) = (self.addr(at).cast::<T>(), amo_routine::<T>(amo.name(true)));
        let (v, c, pe) = (T::from_u64(val), T::from_u64(cond), pe as c_int);
        match amo {
            Amo::FetchAdd | Amo::FetchOr | Amo::FetchAnd | Amo::FetchXor | Amo::Swap => {
                c!(
                    self.abi,
                    &name,
                    fn(*mut T, *mut T, T, c_int),
                    slot,
                    a,
                    v,
                    pe
                )
            }
            Amo::FetchInc => c!(self.abi, &name, fn(*mut T, *mut T, c_int), slot, a, pe),
            Amo::Fetch => c!(self.abi, &name, fn(*mut T, *const T, c_int), slot, a, pe),
            Amo::CompareSwap => {
                c!(
                    self.abi,
                    &name,
                    fn(*mut T, *mut T, T, T, c_int),
                    slot,
                    a,
                    c,
                    v,
                    pe
                )
            }
            other => unreachable!("the schedule never issues {other:?} without blocking"),
        }
        Ok(())
    }

    /// `op` with `value` on the signal word at `sig` of `pe`, through the routine named for the
    /// operation (`set` or `add`).
    fn signal_with<T: CWord>(
        &self,
        (set, add): (&str, &str),
        sig: At,
        value: T,
        op: SignalOp,
        pe: u32,
    ) -> Outcome {
        let name = match op {
            SignalOp::Set => set,
            SignalOp::Add => add,
        };
        let a = self.addr(sig).cast::<T>();
        c!(self.abi, name, fn(*mut T, T, c_int), a, value, pe as c_int);
        Ok(())
    }

    /// `op` with `value` on the 32-bit signal word at `sig` of `pe`: OpenSHMEM's signals are
    /// 64-bit, so this is the `uint32` atomic that does the same.
    fn signal32(&self, sig: At, value: u64, op: SignalOp, pe: u32) -> Outcome {
        let names = ("shmem_uint32_atomic_set", "shmem_uint32_atomic_add");
        self.signal_with(names, sig, value as u32, op, pe)
    }

    fn sig_op(op: SignalOp) -> c_int {
        match op {
            SignalOp::Set => SIGNAL_SET,
            SignalOp::Add => SIGNAL_ADD,
        }
    }

    /// A put with signal, blocking or not (the 32-bit form: put, fence, the signal's atomic):
    /// `vals` into `dst` of `pe`, then `op` with `value` on `sig` of `pe`.
    fn put_signal_any(
        &self,
        dst: At,
        vals: &[u64],
        (sig, value, op): (At, u64, SignalOp),
        pe: u32,
        nbi: bool,
    ) -> Outcome {
        let (d, s, len, p) = (
            self.addr(dst),
            vals.as_ptr().cast::<c_void>(),
            vals.len() * 8,
            pe as c_int,
        );
        match sig.0 {
            Region::Sig => {
                let name = if nbi {
                    "shmem_putmem_signal_nbi"
                } else {
                    "shmem_putmem_signal"
                };
                let sig_addr = self.addr(sig).cast::<u64>();
                c!(
                    self.abi,
                    name,
                    fn(*mut c_void, *const c_void, usize, *mut u64, u64, c_int, c_int),
                    d,
                    s,
                    len,
                    sig_addr,
                    value,
                    Self::sig_op(op),
                    p
                );
                Ok(())
            }
            _ => {
                let name = if nbi {
                    "shmem_putmem_nbi"
                } else {
                    "shmem_putmem"
                };
                c!(
                    self.abi,
                    name,
                    fn(*mut c_void, *const c_void, usize, c_int),
                    d,
                    s,
                    len,
                    p
                );
                self.fence()?;
                self.signal32(sig, value, op, pe)
            }
        }
    }
}

impl Words for CWords {
    fn offset(&self, region: Region, idx: usize) -> usize {
        self.addr((region, idx)) as usize - self.heap_base
    }

    fn read(&self, region: Region, pe: u32) -> Result<Vec<u64>, Failure> {
        let len = region.len(self.n);
        let from = self.addr((region, 0));
        Ok(match width(region) {
            8 => {
                let mut got = vec![0u64; len];
                let to = got.as_mut_ptr().cast::<c_void>();
                c!(
                    self.abi,
                    "shmem_getmem",
                    fn(*mut c_void, *const c_void, usize, c_int),
                    to,
                    from,
                    len * 8,
                    pe as c_int
                );
                got
            }
            _ => {
                let mut got = vec![0u32; len];
                let to = got.as_mut_ptr().cast::<c_void>();
                c!(
                    self.abi,
                    "shmem_getmem",
                    fn(*mut c_void, *const c_void, usize, c_int),
                    to,
                    from,
                    len * 4,
                    pe as c_int
                );
                got.into_iter().map(u64::from).collect()
            }
        })
    }

    fn fence(&self) -> Outcome {
        c!(self.abi, "shmem_fence", fn(),);
        Ok(())
    }

    fn quiet(&self) -> Outcome {
        c!(self.abi, "shmem_quiet", fn(),);
        Ok(())
    }

    fn put(&self, how: PutHow, idx: usize, vals: &[u64], pe: u32) -> Outcome {
        let (d, pe) = (self.addr((Region::Data, idx)), pe as c_int);
        match how {
            PutHow::Blocking => {
                c!(
                    self.abi,
                    "shmem_uint64_put",
                    fn(*mut u64, *const u64, usize, c_int),
                    d.cast(),
                    vals.as_ptr(),
                    vals.len(),
                    pe
                )
            }
            PutHow::P => c!(
                self.abi,
                "shmem_uint64_p",
                fn(*mut u64, u64, c_int),
                d.cast(),
                vals[0],
                pe
            ),
            PutHow::Bytes => {
                let s = vals.as_ptr().cast::<c_void>();
                c!(
                    self.abi,
                    "shmem_putmem",
                    fn(*mut c_void, *const c_void, usize, c_int),
                    d,
                    s,
                    vals.len() * 8,
                    pe
                )
            }
            PutHow::Nbi => unreachable!("put_nbi runs in a scope"),
        }
        Ok(())
    }

    fn iput(
        &self,
        idx: usize,
        dst_stride: usize,
        src: &[u64],
        src_stride: usize,
        nelems: usize,
        pe: u32,
    ) -> Outcome {
        let d = self.addr((Region::Data, idx)).cast::<u64>();
        c!(
            self.abi,
            "shmem_uint64_iput",
            fn(*mut u64, *const u64, isize, isize, usize, c_int),
            d,
            src.as_ptr(),
            dst_stride as isize,
            src_stride as isize,
            nelems,
            pe as c_int
        );
        Ok(())
    }

    fn get(&self, how: GetHow, at: At, len: usize, pe: u32) -> Result<Vec<u64>, Failure> {
        let (s, pe) = (self.addr(at), pe as c_int);
        let mut got = vec![0u64; len];
        let to = got.as_mut_ptr();
        match how {
            GetHow::Blocking => {
                c!(
                    self.abi,
                    "shmem_uint64_get",
                    fn(*mut u64, *const u64, usize, c_int),
                    to,
                    s.cast(),
                    len,
                    pe
                )
            }
            GetHow::G => {
                got[0] = c!(
                    self.abi,
                    "shmem_uint64_g",
                    fn(*const u64, c_int) -> u64,
                    s.cast(),
                    pe
                )
            }
            GetHow::Bytes => {
                c!(
                    self.abi,
                    "shmem_getmem",
                    fn(*mut c_void, *const c_void, usize, c_int),
                    to.cast(),
                    s,
                    len * 8,
                    pe
                )
            }
            GetHow::Nbi => unreachable!("get_nbi runs in a scope"),
        }
        Ok(got)
    }

    fn iget(&self, idx: usize, stride: usize, len: usize, pe: u32) -> Result<Vec<u64>, Failure> {
        let s = self.addr((Region::Data, idx)).cast::<u64>();
        let mut got = vec![0u64; len];
        c!(
            self.abi,
            "shmem_uint64_iget",
            fn(*mut u64, *const u64, isize, isize, usize, c_int),
            got.as_mut_ptr(),
            s,
            1,
            stride as isize,
            len,
            pe as c_int
        );
        Ok(got)
    }

    fn amo(&self, at: At, amo: Amo, val: u64, cond: u64, pe: u32) -> Result<Option<u64>, Failure> {
        match at.0 {
            Region::A64 => self.amo_typed::<u64>(at, amo, val, cond, pe),
            Region::A32 => self.amo_typed::<u32>(at, amo, val, cond, pe),
            Region::Ai64 => self.amo_typed::<i64>(at, amo, val, cond, pe),
            other => unreachable!("no atomics on {other:?}"),
        }
    }

    fn put_signal(
        &self,
        dst: At,
        vals: &[u64],
        sig: At,
        value: u64,
        op: SignalOp,
        pe: u32,
    ) -> Outcome {
        self.put_signal_any(dst, vals, (sig, value, op), pe, false)
    }

    fn signal(&self, sig: At, value: u64, op: SignalOp, pe: u32) -> Outcome {
        match sig.0 {
            Region::Sig => {
                let names = ("shmem_signal_set", "shmem_signal_add");
                self.signal_with(names, sig, value, op, pe)
            }
            _ => self.signal32(sig, value, op, pe),
        }
    }

    fn signal_wait(&self, idx: usize, value: u64) -> Result<(u64, u64), Failure> {
        let a = self.addr((Region::Sig, idx)).cast::<u64>();
        let seen = c!(
            self.abi,
            "shmem_signal_wait_until",
            fn(*mut u64, c_int, u64) -> u64,
            a,
            CMP_EQ,
            value
        );
        let fetched = c!(self.abi, "shmem_signal_fetch", fn(*const u64) -> u64, a);
        Ok((seen, fetched))
    }

    fn nbi(
        &self,
        ops: &[Op],
        blocking: &mut dyn FnMut(&Op) -> Outcome,
    ) -> Result<(Vec<u64>, Vec<u64>), Failure> {
        // Every destination of a non-blocking read is allocated before the first is issued
        // (a fetch's slot is indexed by its operation's position).
        let gets: usize = ops
            .iter()
            .map(|op| match op {
                Op::Get {
                    expect,
                    how: GetHow::Nbi,
                    ..
                } => expect.len(),
                _ => 0,
            })
            .sum();
        let mut gbuf = vec![0u64; gets];
        let (mut b64, mut b32, mut bi64) = (
            vec![0u64; ops.len()],
            vec![0u32; ops.len()],
            vec![0i64; ops.len()],
        );
        let mut g = 0;
        for (k, op) in ops.iter().enumerate() {
            match op {
                Op::Put {
                    pe,
                    idx,
                    vals,
                    how: PutHow::Nbi,
                } => {
                    let (d, s) = (
                        self.addr((Region::Data, *idx)),
                        vals.as_ptr().cast::<c_void>(),
                    );
                    c!(
                        self.abi,
                        "shmem_putmem_nbi",
                        fn(*mut c_void, *const c_void, usize, c_int),
                        d,
                        s,
                        vals.len() * 8,
                        *pe as c_int
                    );
                }
                Op::Get {
                    pe,
                    idx,
                    expect,
                    how: GetHow::Nbi,
                } => {
                    let (to, len) = (gbuf[g..].as_mut_ptr(), expect.len());
                    g += len;
                    let s = self.addr((Region::Data, *idx)).cast::<u64>();
                    c!(
                        self.abi,
                        "shmem_uint64_get_nbi",
                        fn(*mut u64, *const u64, usize, c_int),
                        to,
                        s,
                        len,
                        *pe as c_int
                    );
                }
                Op::Amo {
                    loc,
                    amo,
                    val,
                    cond,
                    nbi: true,
                    ..
                } => {
                    let (at, a) = ((loc.region, loc.idx), *amo);
                    match loc.region {
                        Region::A64 => {
                            self.amo_nbi_typed(&mut b64[k], at, a, *val, *cond, loc.pe)?
                        }
                        Region::A32 => {
                            self.amo_nbi_typed(&mut b32[k], at, a, *val, *cond, loc.pe)?
                        }
                        _ => self.amo_nbi_typed(&mut bi64[k], at, a, *val, *cond, loc.pe)?,
                    }
                }
                Op::PutSignal {
                    pe,
                    idx,
                    vals,
                    sig,
                    op,
                    value,
                    nbi: true,
                } => {
                    let (sig, dst) = ((sig.region, sig.idx), (Region::Data, *idx));
                    self.put_signal_any(dst, vals, (sig, *value, *op), *pe, true)?;
                }
                other => blocking(other)?,
            }
        }
        self.quiet()?;
        let fetched = ops
            .iter()
            .enumerate()
            .filter_map(|(k, op)| match op {
                Op::Amo { loc, nbi: true, .. } => Some(match loc.region {
                    Region::A64 => b64[k],
                    Region::A32 => u64::from(b32[k]),
                    _ => bi64[k] as u64,
                }),
                _ => None,
            })
            .collect();
        Ok((gbuf, fetched))
    }
}

/// The ticket log: `len` words of symmetric memory.
struct CLog {
    abi: Rc<Abi>,
    at: *mut u64,
    me: u32,
}

impl Log for CLog {
    fn write(&self, tickets: &[u64]) -> Outcome {
        c!(
            self.abi,
            "shmem_uint64_put",
            fn(*mut u64, *const u64, usize, c_int),
            self.at,
            tickets.as_ptr(),
            tickets.len(),
            self.me as c_int
        );
        Ok(())
    }

    fn read(&self, pe: u32, len: usize) -> Result<Vec<u64>, Failure> {
        let mut got = vec![0u64; len];
        c!(
            self.abi,
            "shmem_uint64_get",
            fn(*mut u64, *const u64, usize, c_int),
            got.as_mut_ptr(),
            self.at,
            len,
            pe as c_int
        );
        Ok(got)
    }
}

struct CTarget {
    abi: Rc<Abi>,
    heaps: [CWords; 2],
    log: CLog,
    colls: Collectives<CColls>,
}

impl Target for CTarget {
    type Words = CWords;

    fn heaps(&self) -> &[CWords; 2] {
        &self.heaps
    }

    fn barrier(&self) -> Outcome {
        c!(self.abi, "shmem_barrier_all", fn(),);
        Ok(())
    }

    fn log(&self) -> &dyn Log {
        &self.log
    }

    fn collectives(&mut self, seed: u64, epoch: usize, ops: usize) -> Result<usize, Failure> {
        self.colls.epoch(seed, epoch, ops)
    }

    fn splits(&self) -> usize {
        self.colls.splits
    }
}

/// The collective phase through the C symbols, on the one instance (its own buffers).
struct CColls {
    abi: Rc<Abi>,
    /// `SHMEM_TEAM_WORLD`'s value.
    world: *mut c_void,
    me: u32,
    n: u32,
    src: *mut u64,
    dst: *mut u64,
    lock: *mut c_long,
    counter: *mut u64,
    /// One word per PE: what each PE last put through a context.
    ctx_words: *mut u64,
}

impl CColls {
    fn new(abi: &Rc<Abi>, me: u32, n: u32) -> Result<CColls, Failure> {
        let words = BLOCK_WORDS * n as usize;
        let alloc = |count: usize| -> Result<*mut u64, Failure> {
            let p = c!(abi, "shmem_calloc", fn(usize, usize) -> *mut u64, count, 8);
            check!(!p.is_null(), "shmem_calloc({count}, 8) returned NULL");
            Ok(p)
        };
        // SAFETY: `SHMEM_TEAM_WORLD` is an exported `shmem_team_t` variable: its address,
        // read once.
        let world = unsafe { *abi.f::<*const *mut c_void>("SHMEM_TEAM_WORLD")? };
        Ok(CColls {
            abi: abi.clone(),
            world,
            me,
            n,
            src: alloc(words)?,
            dst: alloc(words)?,
            lock: alloc(1)?.cast(),
            counter: alloc(1)?,
            ctx_words: alloc(n as usize)?,
        })
    }

    /// Checks a routine's status.
    fn ok(name: &str, status: c_int) -> Result<(), Failure> {
        check!(status == 0, "{name} returned {status}");
        Ok(())
    }

    /// [`CColls::run`] for a collective of the shape `name(team, dest, source, n)`, which
    /// returns 0 on success.
    fn run_team(
        &self,
        team: Team,
        name: &str,
        mine: &[u64],
        out: usize,
        n: usize,
    ) -> Result<Vec<u64>, Failure> {
        let abi = &self.abi;
        self.run(mine, out, |d, s| {
            let r = c!(
                abi,
                name,
                fn(Team, *mut u64, *const u64, usize) -> c_int,
                team,
                d,
                s,
                n
            );
            Self::ok(name, r)
        })
    }

    /// `mine` into the source; then `f` on the destination and source; the destination's
    /// first `out` words.
    fn run(
        &self,
        mine: &[u64],
        out: usize,
        f: impl FnOnce(*mut u64, *const u64) -> Result<(), Failure>,
    ) -> Result<Vec<u64>, Failure> {
        let me = self.me as c_int;
        let put = (self.src, mine.as_ptr(), mine.len(), me);
        c!(
            self.abi,
            "shmem_uint64_put",
            fn(*mut u64, *const u64, usize, c_int),
            put.0,
            put.1,
            put.2,
            put.3
        );
        f(self.dst, self.src)?;
        let mut got = vec![0u64; out];
        let to = got.as_mut_ptr();
        c!(
            self.abi,
            "shmem_uint64_get",
            fn(*mut u64, *const u64, usize, c_int),
            to,
            self.dst,
            out,
            me
        );
        Ok(got)
    }

    fn free(&self) -> Outcome {
        for p in [
            self.src,
            self.dst,
            self.lock.cast(),
            self.counter,
            self.ctx_words,
        ] {
            c!(self.abi, "shmem_free", fn(*mut u64), p);
        }
        Ok(())
    }
}

type Team = *mut c_void;

impl CollOps for CColls {
    fn me_n(&self) -> (u32, u32) {
        (self.me, self.n)
    }

    fn reduce(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let len = mine.len();
        self.run_team(self.world, "shmem_uint64_sum_reduce", mine, len, len)
    }

    fn broadcast(&mut self, root: u32, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let (abi, w, bytes) = (&self.abi, self.world, mine.len() * 8);
        self.run(mine, mine.len(), |d, s| {
            let r = c!(
                abi,
                "shmem_broadcastmem",
                fn(Team, *mut u64, *const u64, usize, c_int) -> c_int,
                w,
                d,
                s,
                bytes,
                root as c_int
            );
            Self::ok("shmem_broadcastmem", r)
        })
    }

    fn fcollect(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let out = mine.len() * self.n as usize;
        self.run_team(self.world, "shmem_fcollectmem", mine, out, mine.len() * 8)
    }

    fn alltoall(&mut self, mine: &[u64]) -> Result<Vec<u64>, Failure> {
        let bytes = mine.len() * 8 / self.n as usize;
        self.run_team(self.world, "shmem_alltoallmem", mine, mine.len(), bytes)
    }

    fn split_reduce(&mut self, start: u32, size: u32, mine: u64) -> Result<Option<u64>, Failure> {
        let mut team: Team = std::ptr::null_mut();
        let t = &raw mut team;
        let r = c!(
            self.abi,
            "shmem_team_split_strided",
            fn(Team, c_int, c_int, c_int, *const c_void, c_long, *mut Team) -> c_int,
            self.world,
            start as c_int,
            2,
            size as c_int,
            std::ptr::null(),
            0,
            t
        );
        Self::ok("shmem_team_split_strided", r)?;
        if team.is_null() {
            return Ok(None);
        }
        let got = self.run_team(team, "shmem_uint64_sum_reduce", &[mine], 1, 1)?;
        let r = c!(self.abi, "shmem_team_sync", fn(Team) -> c_int, team);
        Self::ok("shmem_team_sync", r)?;
        c!(self.abi, "shmem_team_destroy", fn(Team), team);
        Ok(Some(got[0]))
    }

    fn locked_increment(&mut self) -> Result<(), Failure> {
        c!(self.abi, "shmem_set_lock", fn(*mut c_long), self.lock);
        let c = c!(
            self.abi,
            "shmem_uint64_g",
            fn(*const u64, c_int) -> u64,
            self.counter,
            0
        );
        c!(
            self.abi,
            "shmem_uint64_p",
            fn(*mut u64, u64, c_int),
            self.counter,
            c + 1,
            0
        );
        c!(self.abi, "shmem_quiet", fn(),);
        c!(self.abi, "shmem_clear_lock", fn(*mut c_long), self.lock);
        Ok(())
    }

    fn ctx_put(&mut self, value: u64) -> Result<(), Failure> {
        let mut ctx: *mut c_void = std::ptr::null_mut();
        let at = &raw mut ctx;
        let r = c!(
            self.abi,
            "shmem_ctx_create",
            fn(c_long, *mut *mut c_void) -> c_int,
            0,
            at
        );
        Self::ok("shmem_ctx_create", r)?;
        let word = self.ctx_words.wrapping_add(self.me as usize);
        let next = ((self.me + 1) % self.n) as c_int;
        c!(
            self.abi,
            "shmem_ctx_uint64_put",
            fn(*mut c_void, *mut u64, *const u64, usize, c_int),
            ctx,
            word,
            &value,
            1,
            next
        );
        c!(self.abi, "shmem_ctx_quiet", fn(*mut c_void), ctx);
        c!(self.abi, "shmem_ctx_destroy", fn(*mut c_void), ctx);
        Ok(())
    }

    fn barrier(&mut self) -> Result<(), Failure> {
        c!(self.abi, "shmem_barrier_all", fn(),);
        Ok(())
    }

    fn counter(&mut self) -> Result<u64, Failure> {
        Ok(c!(
            self.abi,
            "shmem_uint64_g",
            fn(*const u64, c_int) -> u64,
            self.counter,
            0
        ))
    }

    fn ctx_word(&mut self, from: u32) -> Result<u64, Failure> {
        let word = self.ctx_words.wrapping_add(from as usize);
        Ok(c!(
            self.abi,
            "shmem_uint64_g",
            fn(*const u64, c_int) -> u64,
            word,
            self.me as c_int
        ))
    }
}

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new("model::random_epochs_through_the_c_abi", random_epochs)
            .pes(&[8])
            .env(&[("SHMEM_SYMMETRIC_SIZE", "4M")])
            .timeout(300),
        Case::new(
            "model::random_epochs_through_the_c_abi_without_strict_mode",
            random_epochs,
        )
        .pes(&[8])
        .env(&[("SHMEM_SYMMETRIC_SIZE", "4M")])
        .timeout(300)
        .relaxed(),
    ]
}

/// The case: the schedule of the Rust run, every call through the C ABI.
fn random_epochs(ctx: &Ctx) -> Outcome {
    let abi = Rc::new(Abi::load()?);
    c!(abi, "shmem_init", fn(),);
    let me = c!(abi, "shmem_my_pe", fn() -> c_int,);
    let n = c!(abi, "shmem_n_pes", fn() -> c_int,);
    check!(
        (me as u32, n as u32) == (ctx.pe, ctx.n_pes),
        "shmem_init made PE {me} of {n}, the launcher started PE {} of {}",
        ctx.pe,
        ctx.n_pes
    );
    let (me, n) = (me as u32, n as usize);
    check!(n >= 2, "the model case needs at least two PEs");
    // PE 0's seed, broadcast through the C ABI.
    let slot = c!(abi, "shmem_calloc", fn(usize, usize) -> *mut u64, 1, 8);
    if me == 0 {
        let seed = seed_from_env()?;
        for pe in 0..n {
            c!(
                abi,
                "shmem_uint64_p",
                fn(*mut u64, u64, c_int),
                slot,
                seed,
                pe as c_int
            );
        }
    }
    c!(abi, "shmem_barrier_all", fn(),);
    let seed = c!(
        abi,
        "shmem_uint64_g",
        fn(*const u64, c_int) -> u64,
        slot,
        me as c_int
    );
    eprintln!(
        "model (C ABI): PE {me} of {n}: seed {seed} (replay: SHMEM_MODEL_SEED={seed} cargo test -p shmem-conformance --test sim -- model::)"
    );
    let heap_base = c!(abi, "aclshmemx_get_heap_base", fn() -> *mut c_void,) as usize;
    let plan = RunSize::new(ctx, n)?;
    let heaps = [
        CWords::new(&abi, heap_base, n)?,
        CWords::new(&abi, heap_base, n)?,
    ];
    let at = c!(
        abi,
        "shmem_calloc",
        fn(usize, usize) -> *mut u64,
        plan.log_len(),
        8
    );
    check!(
        !at.is_null(),
        "shmem_calloc of the ticket log returned NULL"
    );
    let colls = Collectives::new(CColls::new(&abi, me, n as u32)?);
    let mut target = CTarget {
        abi: abi.clone(),
        heaps,
        log: CLog {
            abi: abi.clone(),
            at,
            me,
        },
        colls,
    };
    let sum = run_epochs(&mut target, &plan, seed, me, n)?;
    if me == 0 {
        let mix: Vec<String> = sum.kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!(
            "model (C ABI): seed {seed}: {} epochs, {} calls through libshmem.so's symbols on {n} PEs ({} RMA, atomic and signal calls, {} fences; {} collective-phase calls, {} team splits) in {:.2?}: {}; PE 0's resident memory (KiB) and descriptors at 10 points: {:?}",
            plan.epochs,
            sum.total + sum.coll_calls * n,
            sum.total,
            sum.fences,
            sum.coll_calls * n,
            target.colls.splits,
            sum.elapsed,
            mix.join(", "),
            sum.samples
        );
    }
    c!(abi, "shmem_barrier_all", fn(),);
    for h in &target.heaps {
        h.free()?;
    }
    target.colls.ops.free()?;
    c!(abi, "shmem_free", fn(*mut u64), target.log.at);
    c!(abi, "shmem_free", fn(*mut u64), slot);
    c!(abi, "shmem_finalize", fn(),);
    Ok(())
}
