//! The fuzz entry point of the C ABIs' argument validation: the target `c_abi`
//! (`core/fuzz/fuzz_targets/c_abi.rs`) and the test that replays its corpus
//! (`linked/tests/fuzz_corpus.rs`). It is built only in `shmem-c-linked`, the rlib of these
//! sources (feature `fuzzing`); `libshmem.so` does not have it.
//!
//! [`c_abi`] reads the bytes as a program of calls to the exported routines, made through their
//! C symbols, on a default instance of one PE that lives as long as the process. Every argument
//! the library can check comes from the bytes: PEs, symmetric addresses at any offset around
//! the heap (and wild ones), sizes, strides, team and context handles (predefined, live,
//! destroyed, invalid, of the other kind, wild), comparison and signal operators, allocation
//! sizes and alignments, CANN's unique-id arguments and instance ids. What no library can check
//! — the local buffer a pointer names — is always a buffer of this process, with the length
//! clamped to it.
//!
//! What every input must keep (a breach panics, which the boundary's hook turns into a crash):
//! - no call crashes or hangs;
//! - a call logs at most one line, and one that returns a status logs exactly one line when it
//!   fails and none when it succeeds (the lines are counted through CANN's
//!   `aclshmemx_set_extern_logger`);
//! - the instance is whole afterwards: everything the input made (blocks, teams, contexts) is
//!   released, the active CANN instance is 0 again, and a put and get round trip on the heap
//!   still works.

use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use shmem_core::{ApiProfile, Attributes, InitMode, Instance, ThreadLevel};

use crate::cann::types::{aclshmemx_init_attr_t, aclshmemx_uniqueid_t};

type Team = *mut c_void;
type Ctx = *mut c_void;

unsafe extern "C" {
    fn shmem_putmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    fn shmem_getmem(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    fn shmem_putmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    fn shmem_getmem_nbi(dest: *mut c_void, source: *const c_void, nelems: usize, pe: c_int);
    fn shmem_uint64_iput(d: *mut u64, s: *const u64, dst: isize, sst: isize, n: usize, pe: c_int);
    fn shmem_uint64_iget(d: *mut u64, s: *const u64, dst: isize, sst: isize, n: usize, pe: c_int);
    fn shmem_uint64_p(dest: *mut u64, value: u64, pe: c_int);
    fn shmem_uint64_g(source: *const u64, pe: c_int) -> u64;
    fn shmem_uint64_atomic_fetch_add(dest: *mut u64, value: u64, pe: c_int) -> u64;
    fn shmem_uint64_atomic_compare_swap(dest: *mut u64, cond: u64, value: u64, pe: c_int) -> u64;
    fn shmem_uint32_atomic_set(dest: *mut u32, value: u32, pe: c_int);
    fn shmem_uint64_atomic_fetch_add_nbi(fetch: *mut u64, dest: *mut u64, value: u64, pe: c_int);
    fn shmem_putmem_signal(
        dest: *mut c_void,
        source: *const c_void,
        nelems: usize,
        sig_addr: *mut u64,
        signal: u64,
        sig_op: c_int,
        pe: c_int,
    );
    fn shmem_signal_fetch(sig_addr: *const u64) -> u64;
    fn shmem_uint64_test(ivar: *mut u64, cmp: c_int, value: u64) -> c_int;
    fn shmem_test_lock(lock: *mut c_long) -> c_int;
    fn shmem_clear_lock(lock: *mut c_long);
    fn shmem_quiet();
    fn shmem_fence();
    fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void;
    fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int;
    fn shmem_malloc(size: usize) -> *mut c_void;
    fn shmem_calloc(count: usize, size: usize) -> *mut c_void;
    fn shmem_align(alignment: usize, size: usize) -> *mut c_void;
    fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn shmem_free(ptr: *mut c_void);
    fn shmem_team_split_strided(
        parent: Team,
        start: c_int,
        stride: c_int,
        size: c_int,
        config: *const c_void,
        mask: c_long,
        new_team: *mut Team,
    ) -> c_int;
    fn shmem_team_destroy(team: Team);
    fn shmem_team_my_pe(team: Team) -> c_int;
    fn shmem_team_translate_pe(src: Team, pe: c_int, dest: Team) -> c_int;
    fn shmem_ctx_create(options: c_long, ctx: *mut Ctx) -> c_int;
    fn shmem_ctx_destroy(ctx: Ctx);
    fn shmem_ctx_putmem(ctx: Ctx, dest: *mut c_void, source: *const c_void, n: usize, pe: c_int);
    fn shmem_broadcastmem(
        team: Team,
        dest: *mut c_void,
        source: *const c_void,
        n: usize,
        root: c_int,
    ) -> c_int;
    fn shmem_uint64_sum_reduce(team: Team, dest: *mut u64, source: *const u64, n: usize) -> c_int;
    fn shmem_fcollectmem(team: Team, dest: *mut c_void, source: *const c_void, n: usize) -> c_int;
    fn shmem_alltoallmem(team: Team, dest: *mut c_void, source: *const c_void, n: usize) -> c_int;
    fn aclshmem_putmem(dst: *mut c_void, src: *mut c_void, elem_size: usize, pe: i32);
    fn aclshmem_barrier_all();
    fn aclshmemx_set_attr_uniqueid_args(
        my_pe: c_int,
        n_pes: c_int,
        local_mem_size: i64,
        uid: *mut aclshmemx_uniqueid_t,
        attr: *mut aclshmemx_init_attr_t,
    ) -> c_int;
    fn aclshmemx_instance_ctx_set(instance_id: u64) -> c_int;
    fn aclshmem_team_split_strided(
        parent: c_int,
        start: c_int,
        stride: c_int,
        size: c_int,
        new_team: *mut c_int,
    ) -> c_int;
    fn aclshmem_team_destroy(team: c_int);
    fn aclshmemx_set_extern_logger(func: Option<extern "C" fn(c_int, *const c_char)>) -> i32;
    fn aclshmemx_set_log_level(level: c_int) -> i32;
}

/// `shmem_putmem`, `shmem_getmem` and their `_nbi` forms.
type MemFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int);

/// The heap of the fuzzing instance.
const HEAP: usize = 2 << 20;
/// How far around the heap drawn addresses reach.
const AROUND: usize = 64 << 10;
/// The local buffer operands come from, in bytes.
const LOCAL: usize = 64 << 10;

/// Lines logged so far.
static LINES: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count_line(_level: c_int, _msg: *const c_char) {
    LINES.fetch_add(1, Ordering::Relaxed);
}

/// The default instance of one PE, made once (with the library's own `open`, as `shmem_init`
/// does, from fixed attributes instead of a launcher's environment), with the line counter as
/// the log's sink at ERROR.
fn world() -> (usize, &'static mut [u8]) {
    static INIT: Once = Once::new();
    /// Aligned for every type the calls take.
    #[repr(align(64))]
    struct Local([u8; LOCAL]);
    static mut LOCAL_BUF: Local = Local([0; LOCAL]);
    INIT.call_once(|| {
        crate::boundary::hook_panics();
        // A panic aborts, as the fuzzer expects of a crash (it then keeps the input), instead
        // of the boundary's exit with status 1.
        std::panic::set_hook(Box::new(|info| {
            eprintln!("shmem c_abi fuzzing: {info}");
            std::process::abort()
        }));
        crate::world::open(|| {
            shmem_capi::log::init();
            let mut attrs = Attributes::new(0, 1, "", HEAP as u64);
            // A job of one PE on this host, met through a key of this process alone.
            attrs.mode = InitMode::JobLocal(format!("fuzz:{}", std::process::id()));
            attrs.profile = Some(ApiProfile::OpenShmem);
            Ok((Instance::init(&attrs)?, ThreadLevel::Multiple))
        })
        .expect("a one-PE instance starts");
        // SAFETY: plain setters of the log's sink and level.
        unsafe {
            aclshmemx_set_extern_logger(Some(count_line));
            aclshmemx_set_log_level(3);
        }
    });
    let base = crate::world::world().expect("made above").heap_base() as usize;
    let buf = &raw mut LOCAL_BUF;
    // SAFETY: the fuzzer runs one input at a time on one thread, and nothing else uses the
    // buffer; each input takes it for its own run only.
    let local = unsafe { &mut (*buf).0 };
    (base, local)
}

/// The input, read a little at a time; an exhausted input reads zeros.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        let n = N.min(self.0.len());
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        b
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    /// A PE: mostly near the one valid PE, sometimes anything.
    fn pe(&mut self) -> c_int {
        match self.u8() % 4 {
            0 => 0,
            1 => i32::from(self.u8() as i8),
            _ => self.u32() as c_int,
        }
    }
    /// A count: mostly small, sometimes anything.
    fn count(&mut self) -> usize {
        match self.u8() % 4 {
            0 => usize::from(self.u8()),
            1 => usize::from(self.u16()),
            2 => self.u32() as usize,
            _ => self.u64() as usize,
        }
    }
}

/// What one input made, released when it ends.
struct Made {
    blocks: Vec<*mut c_void>,
    teams: Vec<Team>,
    dead_teams: Vec<Team>,
    ctxs: Vec<Ctx>,
    dead_ctxs: Vec<Ctx>,
    cann_teams: Vec<c_int>,
}

struct Run<'a> {
    b: Bytes<'a>,
    base: usize,
    local: &'a mut [u8],
    made: Made,
}

impl Run<'_> {
    /// A symmetric-looking address: around or inside the heap, in a block of this input, at its
    /// end, NULL, local memory, or wild.
    fn remote(&mut self) -> *mut c_void {
        let v = self.b.u32() as usize;
        match self.b.u8() % 8 {
            0 | 1 => (self.base + v % (HEAP + 2 * AROUND)).wrapping_sub(AROUND) as *mut c_void,
            2 => match self.made.blocks.len() {
                0 => self.base as *mut c_void,
                n => self.made.blocks[v % n].wrapping_byte_add(v >> 24),
            },
            3 => (self.base + HEAP).wrapping_sub(v % 64) as *mut c_void,
            4 => std::ptr::null_mut(),
            5 => self.local.as_mut_ptr().wrapping_add(v % LOCAL).cast(),
            6 => self.base.wrapping_add(v.wrapping_mul(8)) as *mut c_void,
            _ => self.b.u64() as usize as *mut c_void,
        }
    }

    /// A local buffer of up to `want` bytes (clamped to the buffer): its address and length.
    fn local(&mut self, want: usize) -> (*mut c_void, usize) {
        let at = self.b.u16() as usize % LOCAL;
        let len = want.min(LOCAL - at);
        (self.local[at..].as_mut_ptr().cast(), len)
    }

    /// A local object of up to 64 bytes, aligned as the C contract's typed pointers must be.
    fn local_aligned(&mut self) -> *mut c_void {
        let at = self.b.u16() as usize % (LOCAL / 64) * 64;
        self.local[at..].as_mut_ptr().cast()
    }

    /// A local buffer of a drawn length.
    fn local_any(&mut self) -> (*mut c_void, usize) {
        let want = self.b.count();
        self.local(want)
    }

    fn team(&mut self) -> Team {
        let k = self.b.u8();
        let pick = |v: &[Team]| v.get(usize::from(k >> 3) % v.len().max(1)).copied();
        match k % 8 {
            0 => crate::team::SHMEM_TEAM_WORLD.0,
            1 => crate::team::SHMEM_TEAM_SHARED.0,
            2 => std::ptr::null_mut(),
            3 => pick(&self.made.teams).unwrap_or(std::ptr::null_mut()),
            4 => pick(&self.made.dead_teams).unwrap_or(std::ptr::null_mut()),
            5 => pick(&self.made.ctxs).unwrap_or(crate::ctx::SHMEM_CTX_DEFAULT.0),
            6 => self.remote(),
            _ => self.b.u64() as usize as Team,
        }
    }

    fn ctx(&mut self) -> Ctx {
        let k = self.b.u8();
        let pick = |v: &[Ctx]| v.get(usize::from(k >> 3) % v.len().max(1)).copied();
        match k % 6 {
            0 => crate::ctx::SHMEM_CTX_DEFAULT.0,
            1 => std::ptr::null_mut(),
            2 => pick(&self.made.ctxs).unwrap_or(std::ptr::null_mut()),
            3 => pick(&self.made.dead_ctxs).unwrap_or(std::ptr::null_mut()),
            4 => crate::team::SHMEM_TEAM_WORLD.0,
            _ => self.b.u64() as usize as Ctx,
        }
    }

    /// Counts of a strided transfer whose local side (stride `local_stride`, in words) fits
    /// the local buffer: the local start and the element count.
    fn strided_local(&mut self, local_stride: isize, want: usize) -> (*mut u64, usize) {
        let words = LOCAL / 8;
        let step = local_stride.unsigned_abs().max(1);
        let n = want.min((words - 1) / step + 1);
        let span = (n.saturating_sub(1)) * local_stride.unsigned_abs();
        let start = if local_stride < 0 { span } else { 0 };
        // SAFETY: `start + span` words lie within the buffer, so every element does.
        (
            unsafe { self.local.as_mut_ptr().cast::<u64>().add(start) },
            n,
        )
    }

    /// Runs one call and checks the lines it logged: at most one; for a call with a status
    /// (`f` returns whether it failed), one exactly when it failed.
    fn call(&mut self, name: &str, f: impl FnOnce() -> Option<bool>) {
        let before = LINES.load(Ordering::Relaxed);
        let status = f();
        let lines = LINES.load(Ordering::Relaxed) - before;
        match status {
            Some(failed) => assert_eq!(
                lines,
                usize::from(failed),
                "{name}: {} and logged {lines} lines",
                if failed { "failed" } else { "succeeded" }
            ),
            None => assert!(lines <= 1, "{name} logged {lines} lines"),
        }
    }

    fn step(&mut self) {
        let op = self.b.u8() % 30;
        // SAFETY: every call below is a C routine whose local operands point into
        // `self.local` with lengths clamped to it; the other arguments are what the library
        // must check.
        unsafe {
            match op {
                0 | 1 | 4 => {
                    let (name, put): (_, MemFn) = match op {
                        4 => ("shmem_putmem_nbi", shmem_putmem_nbi),
                        _ => ("shmem_putmem", shmem_putmem),
                    };
                    let (d, pe) = (self.remote(), self.b.pe());
                    let (s, n) = self.local_any();
                    self.call(name, || {
                        put(d, s, n, pe);
                        None
                    });
                }
                2 | 3 | 5 => {
                    let (name, get): (_, MemFn) = match op {
                        5 => ("shmem_getmem_nbi", shmem_getmem_nbi),
                        _ => ("shmem_getmem", shmem_getmem),
                    };
                    let (s, pe) = (self.remote(), self.b.pe());
                    let (d, n) = self.local_any();
                    self.call(name, || {
                        get(d, s, n, pe);
                        None
                    });
                    if op == 5 {
                        self.call("shmem_quiet", || {
                            shmem_quiet();
                            None
                        });
                    }
                }
                6 => {
                    let (d, pe) = (self.remote().cast(), self.b.pe());
                    let (dst, sst) = (self.b.u64() as isize, i32::from(self.b.u8() as i8) as isize);
                    let want = self.b.count();
                    let (s, n) = self.strided_local(sst, want);
                    self.call("shmem_uint64_iput", || {
                        shmem_uint64_iput(d, s, dst, sst, n, pe);
                        None
                    });
                }
                7 => {
                    let (s, pe) = (self.remote().cast(), self.b.pe());
                    let (dst, sst) = (i32::from(self.b.u8() as i8) as isize, self.b.u64() as isize);
                    let want = self.b.count();
                    let (d, n) = self.strided_local(dst, want);
                    self.call("shmem_uint64_iget", || {
                        shmem_uint64_iget(d, s, dst, sst, n, pe);
                        None
                    });
                }
                8 => {
                    let (d, v, pe) = (self.remote().cast(), self.b.u64(), self.b.pe());
                    self.call("shmem_uint64_p", || {
                        shmem_uint64_p(d, v, pe);
                        None
                    });
                }
                9 => {
                    let (s, pe) = (self.remote().cast(), self.b.pe());
                    self.call("shmem_uint64_g", || {
                        shmem_uint64_g(s, pe);
                        None
                    });
                }
                10 => {
                    let (d, v, pe) = (self.remote().cast(), self.b.u64(), self.b.pe());
                    self.call("shmem_uint64_atomic_fetch_add", || {
                        shmem_uint64_atomic_fetch_add(d, v, pe);
                        None
                    });
                }
                11 => {
                    let (d, c, v, pe) = (
                        self.remote().cast(),
                        self.b.u64(),
                        self.b.u64(),
                        self.b.pe(),
                    );
                    self.call("shmem_uint64_atomic_compare_swap", || {
                        shmem_uint64_atomic_compare_swap(d, c, v, pe);
                        None
                    });
                }
                12 => {
                    let (d, v, pe) = (self.remote().cast(), self.b.u32(), self.b.pe());
                    self.call("shmem_uint32_atomic_set", || {
                        shmem_uint32_atomic_set(d, v, pe);
                        None
                    });
                }
                13 => {
                    let (d, v, pe) = (self.remote().cast(), self.b.u64(), self.b.pe());
                    let f = self.local_aligned();
                    self.call("shmem_uint64_atomic_fetch_add_nbi", || {
                        shmem_uint64_atomic_fetch_add_nbi(f.cast(), d, v, pe);
                        None
                    });
                    self.call("shmem_quiet", || {
                        shmem_quiet();
                        None
                    });
                }
                14 => {
                    let (d, sig) = (self.remote(), self.remote().cast());
                    let (v, op, pe) = (self.b.u64(), i32::from(self.b.u8() as i8), self.b.pe());
                    let (s, n) = self.local_any();
                    self.call("shmem_putmem_signal", || {
                        shmem_putmem_signal(d, s, n, sig, v, op, pe);
                        None
                    });
                }
                15 => {
                    let sig = self.remote().cast();
                    self.call("shmem_signal_fetch", || {
                        shmem_signal_fetch(sig);
                        None
                    });
                }
                16 => {
                    let (ivar, cmp, v) = (
                        self.remote().cast(),
                        i32::from(self.b.u8() as i8),
                        self.b.u64(),
                    );
                    self.call("shmem_uint64_test", || {
                        shmem_uint64_test(ivar, cmp, v);
                        None
                    });
                }
                17 => {
                    // The lock word must not be one of this input's blocks' data in use by
                    // another call at the same time: one thread, so any word will do.
                    let lock = self.remote().cast();
                    let mut got = -1;
                    self.call("shmem_test_lock", || {
                        got = shmem_test_lock(lock);
                        None
                    });
                    if got == 0 {
                        self.call("shmem_clear_lock", || {
                            shmem_clear_lock(lock);
                            None
                        });
                    }
                }
                18 => {
                    let (d, pe) = (self.remote(), self.b.pe());
                    self.call("shmem_ptr", || {
                        shmem_ptr(d, pe);
                        None
                    });
                    self.call("shmem_addr_accessible", || {
                        shmem_addr_accessible(d, pe);
                        None
                    });
                }
                19 => {
                    let size = self.b.count();
                    let how = self.b.u8() % 3;
                    let count = self.b.count();
                    let align = self.b.count();
                    let mut p = std::ptr::null_mut();
                    match how {
                        0 => self.call("shmem_malloc", || {
                            p = shmem_malloc(size);
                            None
                        }),
                        1 => self.call("shmem_calloc", || {
                            p = shmem_calloc(count, size);
                            None
                        }),
                        _ => self.call("shmem_align", || {
                            p = shmem_align(align, size);
                            None
                        }),
                    }
                    if !p.is_null() {
                        self.made.blocks.push(p);
                    }
                }
                20 => {
                    let p = self.remote();
                    let size = self.b.count();
                    let held = self.made.blocks.iter().position(|&b| b == p);
                    // A block of this input is resized only to a size it can keep, so that it
                    // is either moved or left as it was.
                    if held.is_some() && size == 0 {
                        return;
                    }
                    let mut q = std::ptr::null_mut();
                    self.call("shmem_realloc", || {
                        q = shmem_realloc(p, size);
                        None
                    });
                    match (held, q.is_null()) {
                        (Some(k), false) => self.made.blocks[k] = q,
                        (None, false) => self.made.blocks.push(q),
                        _ => {}
                    }
                }
                21 => {
                    let p = self.remote();
                    self.call("shmem_free", || {
                        shmem_free(p);
                        None
                    });
                    self.made.blocks.retain(|&b| b != p);
                }
                22 => {
                    let parent = self.team();
                    let (start, stride, size) = (self.b.pe(), self.b.pe(), self.b.pe());
                    let mask = c_long::from(self.b.u8());
                    let mut new: Team = std::ptr::null_mut();
                    let mut r = 0;
                    let cfg = if self.b.u8().is_multiple_of(2) {
                        std::ptr::null()
                    } else {
                        // Whatever bytes the buffer holds, as a configuration.
                        self.local_aligned().cast_const()
                    };
                    self.call("shmem_team_split_strided", || {
                        r = shmem_team_split_strided(
                            parent, start, stride, size, cfg, mask, &mut new,
                        );
                        Some(r != 0)
                    });
                    assert_eq!(
                        r == 0,
                        !new.is_null(),
                        "split returned {r} and team {new:p}"
                    );
                    if !new.is_null() {
                        self.made.teams.push(new);
                    }
                }
                23 => {
                    let t = self.team();
                    self.call("shmem_team_destroy", || {
                        shmem_team_destroy(t);
                        None
                    });
                    if let Some(k) = self.made.teams.iter().position(|&x| x == t) {
                        self.made.dead_teams.push(self.made.teams.swap_remove(k));
                    }
                }
                24 => {
                    let (a, b, pe) = (self.team(), self.team(), self.b.pe());
                    self.call("shmem_team_my_pe", || {
                        shmem_team_my_pe(a);
                        None
                    });
                    self.call("shmem_team_translate_pe", || {
                        shmem_team_translate_pe(a, pe, b);
                        None
                    });
                }
                25 => {
                    let options = self.b.u64() as c_long;
                    let mut ctx: Ctx = std::ptr::null_mut();
                    let mut r = 0;
                    self.call("shmem_ctx_create", || {
                        r = shmem_ctx_create(options, &mut ctx);
                        Some(r != 0)
                    });
                    if r == 0 {
                        self.made.ctxs.push(ctx);
                    }
                    let c = self.ctx();
                    let (d, pe) = (self.remote(), self.b.pe());
                    let (s, n) = self.local_any();
                    self.call("shmem_ctx_putmem", || {
                        shmem_ctx_putmem(c, d, s, n, pe);
                        None
                    });
                    if self.b.u8().is_multiple_of(2) {
                        let c = self.ctx();
                        self.call("shmem_ctx_destroy", || {
                            shmem_ctx_destroy(c);
                            None
                        });
                        if let Some(k) = self.made.ctxs.iter().position(|&x| x == c) {
                            self.made.dead_ctxs.push(self.made.ctxs.swap_remove(k));
                        }
                    }
                }
                26 => {
                    let (t, d, s) = (self.team(), self.remote(), self.remote());
                    let (n, root, which) = (self.b.count(), self.b.pe(), self.b.u8() % 4);
                    match which {
                        0 => self.call("shmem_broadcastmem", || {
                            Some(shmem_broadcastmem(t, d, s, n, root) != 0)
                        }),
                        1 => self.call("shmem_uint64_sum_reduce", || {
                            Some(shmem_uint64_sum_reduce(t, d.cast(), s.cast(), n) != 0)
                        }),
                        2 => self.call("shmem_fcollectmem", || {
                            Some(shmem_fcollectmem(t, d, s, n) != 0)
                        }),
                        _ => self.call("shmem_alltoallmem", || {
                            Some(shmem_alltoallmem(t, d, s, n) != 0)
                        }),
                    }
                }
                27 => {
                    let (d, s, pe) = (self.remote(), self.remote(), self.b.pe());
                    let n = self.b.count();
                    self.call("aclshmem_putmem", || {
                        aclshmem_putmem(d, s, n, pe);
                        None
                    });
                    // CANN's host puts run on the default stream; its barrier completes them,
                    // so that no queued put lands during a later call.
                    self.call("aclshmem_barrier_all", || {
                        aclshmem_barrier_all();
                        None
                    });
                }
                28 => {
                    let (me, n, size) = (self.b.pe(), self.b.pe(), self.b.u64() as i64);
                    let mut uid = [0u8; size_of::<aclshmemx_uniqueid_t>()];
                    for b in &mut uid {
                        *b = self.b.u8();
                    }
                    let mut attr = [0u8; size_of::<aclshmemx_init_attr_t>()];
                    let (u, a) = (uid.as_mut_ptr().cast(), attr.as_mut_ptr().cast());
                    self.call("aclshmemx_set_attr_uniqueid_args", || {
                        Some(aclshmemx_set_attr_uniqueid_args(me, n, size, u, a) != 0)
                    });
                    let id = self.b.u64() % 4;
                    self.call("aclshmemx_instance_ctx_set", || {
                        Some(aclshmemx_instance_ctx_set(id) != 0)
                    });
                    let mut back = -1;
                    self.call("aclshmemx_instance_ctx_set", || {
                        back = aclshmemx_instance_ctx_set(0);
                        Some(back != 0)
                    });
                    assert_eq!(back, 0, "instance 0 could not be made active again");
                }
                _ => {
                    let parent = i32::from(self.b.u8() as i8);
                    let (start, stride, size) = (self.b.pe(), self.b.pe(), self.b.pe());
                    let mut new: c_int = -1;
                    let mut r = 0;
                    self.call("aclshmem_team_split_strided", || {
                        r = aclshmem_team_split_strided(parent, start, stride, size, &mut new);
                        Some(r != 0)
                    });
                    if r == 0 && new >= 0 {
                        self.made.cann_teams.push(new);
                    }
                    let t = i32::from(self.b.u8() as i8);
                    if self.b.u8().is_multiple_of(2) {
                        self.call("aclshmem_team_destroy", || {
                            aclshmem_team_destroy(t);
                            None
                        });
                        self.made.cann_teams.retain(|&x| x != t);
                    }
                }
            }
        }
    }

    /// Releases what the input made and checks that the instance still works.
    fn finish(self) {
        let Run { made, local, .. } = self;
        // SAFETY: handles and blocks this input made and has not released; then a put and a
        // get of 8 bytes between the heap's first word and the local buffer.
        unsafe {
            shmem_quiet();
            for t in made.teams {
                shmem_team_destroy(t);
            }
            for t in made.cann_teams {
                aclshmem_team_destroy(t);
            }
            for c in made.ctxs {
                shmem_ctx_destroy(c);
            }
            for p in made.blocks {
                shmem_free(p);
            }
            let before = LINES.load(Ordering::Relaxed);
            let word = shmem_malloc(8);
            assert!(
                !word.is_null(),
                "the heap has no 8 bytes left after the input"
            );
            let v = 0x5eed_u64.to_le_bytes();
            local[..8].copy_from_slice(&v);
            shmem_putmem(word, local.as_ptr().cast(), 8, 0);
            local[..8].fill(0);
            shmem_getmem(local.as_mut_ptr().cast(), word, 8, 0);
            assert_eq!(local[..8], v, "a put and get round trip after the input");
            shmem_free(word);
            shmem_fence();
            assert_eq!(
                LINES.load(Ordering::Relaxed),
                before,
                "releasing the input's objects or the round trip logged an error"
            );
        }
    }
}

/// The target `c_abi`: the bytes as a program of C ABI calls (see the module documentation).
pub fn c_abi(data: &[u8]) {
    let (base, local) = world();
    let mut run = Run {
        b: Bytes(data),
        base,
        local,
        made: Made {
            blocks: Vec::new(),
            teams: Vec::new(),
            dead_teams: Vec::new(),
            ctxs: Vec::new(),
            dead_ctxs: Vec::new(),
            cann_teams: Vec::new(),
        },
    };
    // At most 64 calls an input, so that every input is quick.
    for _ in 0..64 {
        if run.b.0.is_empty() {
            break;
        }
        run.step();
    }
    run.finish();
}

/// Seeds of the corpus: one input per kind of call, with small and edge values.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for op in 0..30u8 {
        for fill in [0u8, 1, 0x7f, 0xff] {
            let mut s = vec![op];
            s.extend(std::iter::repeat_n(fill, 48));
            out.push(s);
        }
    }
    out
}
