//! The device calls of C++ kernels (`include/cann/device/`), at the byte level: the headers'
//! typed and overloaded forms (CANN's signatures) are inline functions over these
//! `aclsimd_*` entries, which act on the block the calling thread runs (`kernel.rs`).
//!
//! Addresses: a `__gm__` pointer may be a symmetric address or the address at which kernels
//! reach the memory (what the launch gives pointer arguments, and what `aclshmem_ptr` returns
//! in a kernel); a local operand may also be plain device memory that is not symmetric
//! (`aclrtMalloc`'s, through the runtime's alias, or `GmAlloc`'s), or a UB address (a value
//! below the UB's size: an offset into the block's UB, as `__ubuf__` pointers are).
//!
//! Every failure names the call and what was wrong, ends the launch, and makes the block's
//! later calls do nothing (`kernel::with_block`).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shmem_capi::cann;
use shmem_core::{
    AmoOp, Cmp, Instance, KernelError, MultiDevice, NonContiguousCopyParam, Pe, SignalOp, UB_SIZE,
    bf16, f16,
};

use super::kernel::with_block;
use crate::rma::by_size;

fn err(call: &str, detail: impl Into<String>) -> KernelError {
    KernelError::new(call, detail)
}

/// A C string naming a call (the headers pass CANN's names).
///
/// # Safety
///
/// `call` is NULL or a C string.
unsafe fn name(call: *const c_char) -> String {
    if call.is_null() {
        return "device call".into();
    }
    // SAFETY: the contract.
    unsafe { CStr::from_ptr(call) }
        .to_string_lossy()
        .into_owned()
}

fn instance<'d>(dev: &'d MultiDevice<'static>, call: &str) -> Result<&'d Instance, KernelError> {
    dev.instance().ok_or_else(|| {
        err(
            call,
            "no instance is selected: a MULTI_INSTANCE kernel must call aclshmemx_instance_ctx_set(id) in every block before any SHMEM call",
        )
    })
}

fn target_pe(inst: &Instance, call: &str, pe: c_int) -> Result<Pe, KernelError> {
    u32::try_from(pe)
        .ok()
        .filter(|&p| p < inst.n_pes())
        .ok_or_else(|| {
            err(
                call,
                format!(
                    "PE {pe} is not a PE of instance {} ({} PEs)",
                    inst.id(),
                    inst.n_pes()
                ),
            )
        })
}

/// One side of a transfer, as the block names it.
enum Gm {
    /// This PE's symmetric address.
    Symmetric(*mut u8),
    /// Device memory that is not symmetric, which the block reaches at this address.
    Plain(*mut u8),
    /// An offset into the block's UB.
    Ub(usize),
}

/// Classifies the local operand `addr` of `call`: UB, this PE's symmetric memory (in either
/// form), or plain device memory. Another PE's copy is refused: CANN computes the remote
/// address from this PE's.
fn local(inst: &Instance, call: &str, addr: *const c_void) -> Result<Gm, KernelError> {
    let a = addr as usize;
    if a < UB_SIZE {
        return Ok(Gm::Ub(a));
    }
    match inst.symmetric_addr(addr.cast()) {
        Some((pe, sym)) if pe == inst.my_pe() => Ok(Gm::Symmetric(sym)),
        Some((pe, _)) => Err(err(
            call,
            format!(
                "{addr:p} is PE {pe}'s copy (an aclshmem_ptr result); name this PE's symmetric address and the PE"
            ),
        )),
        None => Ok(Gm::Plain(addr.cast_mut().cast())),
    }
}

/// This PE's symmetric address of the remote operand `addr`.
fn remote(inst: &Instance, call: &str, addr: *const c_void) -> Result<*mut u8, KernelError> {
    match local(inst, call, addr)? {
        Gm::Symmetric(p) => Ok(p),
        _ => Err(err(
            call,
            format!("{addr:p} is not symmetric memory of instance {}", inst.id()),
        )),
    }
}

/// The remote operand of `call`: PE `pe` of the block's instance, and this PE's symmetric
/// address of `addr`.
fn aim(
    dev: &MultiDevice<'static>,
    call: &str,
    addr: *const c_void,
    pe: c_int,
) -> Result<(Pe, *mut u8), KernelError> {
    let inst = instance(dev, call)?;
    Ok((target_pe(inst, call, pe)?, remote(inst, call, addr)?))
}

/// `aclsimd_ub_base`: the block's UB (what `__ubuf__` offsets index).
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_ub_base() -> *mut c_void {
    with_block("aclsimd_ub_base", std::ptr::null_mut(), |dev| {
        Ok(dev.ub().as_mut_ptr().cast())
    })
}

/// `aclsimd_block_idx`: `GetBlockIdx()`.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_block_idx() -> u32 {
    with_block("GetBlockIdx", 0, |dev| Ok(dev.block_idx()))
}

/// `aclsimd_block_num`: `GetBlockNum()`.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_block_num() -> u32 {
    with_block("GetBlockNum", 0, |dev| Ok(dev.block_num()))
}

/// `aclsimd_sync_all`: `SyncAll()`, every block of the launch on this PE.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_sync_all() {
    with_block("SyncAll", (), |dev| dev.sync_all());
}

/// `aclsimd_yield`: a scheduling point (the data cache calls, `GetValue`, waits).
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_yield() {
    if super::kernel::on_core() {
        with_block("yield", (), |dev| {
            dev.yield_point();
            Ok(())
        });
    }
}

/// `aclsimd_fail`: ends the launch with a failure of `call` the headers detected.
///
/// # Safety
///
/// Both are NULL or C strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_fail(call: *const c_char, detail: *const c_char) {
    // SAFETY: the contract.
    let (call, detail) = unsafe { (name(call), name(detail)) };
    with_block(&call.clone(), (), |_| Err(err(&call, detail)));
}

/// `aclsimd_failed`: whether the block's launch has failed (its waits end).
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_failed() -> c_int {
    with_block("aclsimd_failed", 1, |dev| {
        Ok(c_int::from(dev.launch_failed()))
    })
}

/// A host call made by a kernel: it fails the launch (CANN declares device forms of
/// `aclshmem_sync` and `aclshmem_sync_all` but defines none, so such a kernel does not link).
pub(crate) fn host_only(call: &str) {
    with_block(call, (), |_| {
        Err(err(
            call,
            "a host call, not a device call (use aclshmem_barrier or aclshmemx_sync_vec in kernels)",
        ))
    });
}

/// `aclshmem_my_pe` in a kernel.
pub(crate) fn my_pe() -> c_int {
    with_block("aclshmem_my_pe", -1, |dev| {
        Ok(instance(dev, "aclshmem_my_pe")?.my_pe() as c_int)
    })
}

/// `aclshmem_n_pes` in a kernel.
pub(crate) fn n_pes() -> c_int {
    with_block("aclshmem_n_pes", -1, |dev| {
        Ok(instance(dev, "aclshmem_n_pes")?.n_pes() as c_int)
    })
}

/// A team query in a kernel: -1 for an invalid team.
pub(crate) fn team_query(
    call: &str,
    team: c_int,
    f: impl FnOnce(&shmem_core::Team) -> c_int,
) -> c_int {
    with_block(call, -1, |dev| {
        let inst = instance(dev, call)?;
        Ok(cann::team_of(inst, team).map_or(-1, |t| f(&t)))
    })
}

/// `aclshmem_team_translate_pe` in a kernel.
pub(crate) fn team_translate_pe(src: c_int, pe: c_int, dest: c_int) -> c_int {
    let call = "aclshmem_team_translate_pe";
    with_block(call, -1, |dev| {
        let inst = instance(dev, call)?;
        let (Ok(s), Ok(d), Ok(pe)) = (
            cann::team_of(inst, src),
            cann::team_of(inst, dest),
            u32::try_from(pe),
        ) else {
            return Ok(-1);
        };
        Ok(s.translate_pe(pe, &d).map_or(-1, |p| p as c_int))
    })
}

/// `aclshmem_team_pe_mapping`: team `team`'s PE `pe` as a PE of the instance, or -1.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_team_pe_mapping(team: c_int, pe: c_int) -> c_int {
    let call = "aclshmem_team_pe_mapping";
    with_block(call, -1, |dev| {
        let inst = instance(dev, call)?;
        let (Ok(t), Ok(pe)) = (cann::team_of(inst, team), u32::try_from(pe)) else {
            return Ok(-1);
        };
        Ok(dev.team_pe_mapping(&t, pe))
    })
}

/// `aclshmem_ptr` in a kernel: where the block reaches PE `pe`'s copy of the object at `p`
/// (NULL for an address outside the heap or a PE outside the instance).
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_ptr(p: *mut c_void, pe: c_int) -> *mut c_void {
    if !super::kernel::on_core() {
        // Host code of a file compiled as kernel code: the host call.
        return super::heap::aclshmem_ptr(p, pe);
    }
    let call = "aclshmem_ptr";
    with_block(call, std::ptr::null_mut(), |dev| {
        dev.yield_point();
        let inst = instance(dev, call)?;
        let (Some((me, _)), Ok(pe)) = (inst.symmetric_addr(p.cast()), u32::try_from(pe)) else {
            return Ok(std::ptr::null_mut());
        };
        if me != inst.my_pe() || pe >= inst.n_pes() {
            return Ok(std::ptr::null_mut());
        }
        let (_, sym) = inst.symmetric_addr(p.cast()).expect("located above");
        Ok(inst
            .peer_addr(sym, pe)
            .and_then(|a| inst.kernel_addr(a.as_ptr()))
            .map_or(std::ptr::null_mut(), |a| a.cast()))
    })
}

/// `aclsimd_copy`: `bytes` from this PE's `src` to PE `pe`'s `dst` (`get == 0`), or from PE
/// `pe`'s `src` to this PE's `dst`; through the caller's UB buffer (`ub_off`, `ub_size`,
/// `sync_id`) when `ub_off >= 0`, else through the MTE configuration's. A UB operand moves
/// with no staging (ub2gm).
///
/// # Safety
///
/// `call` is NULL or a C string; plain device memory operands are valid for `bytes`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn aclsimd_copy(
    call: *const c_char,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
    pe: c_int,
    ub_off: i64,
    ub_size: u32,
    sync_id: u32,
) {
    // SAFETY: the contract.
    let call = unsafe { name(call) };
    if !super::kernel::on_core() {
        // Host code of a file compiled as kernel code: the host call, on the default stream.
        let (d, s, n) = (dst, src, bytes as usize);
        // SAFETY: symmetric addresses or device memory, as the host call takes them.
        unsafe {
            match get {
                0 => super::rma::put(&call, d, s, n, pe, std::ptr::null_mut()),
                _ => super::rma::get(&call, d, s, n, pe, std::ptr::null_mut()),
            }
        }
        return;
    }
    let buf = (ub_off >= 0).then_some((ub_off as usize, ub_size as usize, sync_id));
    let len = usize::try_from(bytes).unwrap_or(usize::MAX);
    // SAFETY: forwarded.
    unsafe { copy_with(&call, get, dst, src, len, pe, buf) };
}

/// `len` bytes from this PE's `src` to PE `pe`'s `dst` (`get == 0`) or back, on the block this
/// thread runs, through the MTE configuration's staging buffer (an `_on_stream` call's kernel).
///
/// # Safety
///
/// As for [`aclsimd_copy`].
pub(crate) unsafe fn copy(
    call: &str,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
) {
    // SAFETY: forwarded.
    unsafe { copy_with(call, get, dst, src, len, pe, None) };
}

/// [`aclsimd_copy`] on the block, through `buf` (UB offset, size, event) or the MTE
/// configuration's buffer.
///
/// # Safety
///
/// As for [`aclsimd_copy`].
unsafe fn copy_with(
    call: &str,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    buf: Option<(usize, usize, u32)>,
) {
    with_block(call, (), |dev| {
        let inst = instance(dev, call)?.clone();
        let pe = target_pe(&inst, call, pe)?;
        if len == 0 {
            return Ok(());
        }
        let (far, near) = match get {
            0 => (dst.cast_const(), src),
            _ => (src, dst.cast_const()),
        };
        let far = remote(&inst, call, far)?;
        match (local(&inst, call, near)?, get) {
            (Gm::Ub(off), 0) => dev.put_from_ub::<u8>(far, off, len, pe),
            (Gm::Ub(off), _) => dev.get_to_ub::<u8>(off, far, len, pe),
            (Gm::Symmetric(p), 0) => match buf {
                Some((b, n, sync_id)) => dev.mte_put_nbi::<u8>(far, p, b, n, len, pe, sync_id),
                None => dev.putmem(far, p, len, pe),
            },
            (Gm::Symmetric(p), _) => match buf {
                Some((b, n, sync_id)) => dev.mte_get_nbi::<u8>(p, far, b, n, len, pe, sync_id),
                None => dev.getmem(p, far, len, pe),
            },
            (Gm::Plain(p), g) => {
                let (b, n) = buf.map_or_else(|| dev.mte_config(), |(b, n, _)| (b, n));
                if b.checked_add(n).is_none_or(|e| e > UB_SIZE) || n == 0 {
                    return Err(err(
                        call,
                        format!("the UB buffer ({n} bytes at {b}) is outside the UB"),
                    ));
                }
                let mut done = 0;
                while done < len {
                    let k = n.min(len - done);
                    if g == 0 {
                        // SAFETY: plain device memory valid for `len` bytes (the contract).
                        let from = unsafe { std::slice::from_raw_parts(p.add(done), k) };
                        dev.ub()[b..b + k].copy_from_slice(from);
                        dev.put_from_ub::<u8>(far.wrapping_add(done), b, k, pe)?;
                    } else {
                        dev.get_to_ub::<u8>(b, far.wrapping_add(done), k, pe)?;
                        // SAFETY: as above.
                        let to = unsafe { std::slice::from_raw_parts_mut(p.add(done), k) };
                        to.copy_from_slice(&dev.ub()[b..b + k]);
                    }
                    done += k;
                }
                Ok(())
            }
        }
    });
}

/// `aclsimd_engine_copy`: an SDMA, RoCE or UDMA transfer (`engine`: CANN's
/// `ACLSHMEM_DATA_OP_*` bit) of `bytes` from this PE's `src` to PE `pe`'s `dst` (`get == 0`) or
/// back. The instance must have enabled the engine (`data_op_engine_type`); the simulator then
/// moves the data as the MTE engine does, through the MTE configuration's staging buffer.
///
/// # Safety
///
/// As for [`aclsimd_copy`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_engine_copy(
    call: *const c_char,
    engine: u32,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    bytes: u64,
    pe: c_int,
) {
    // SAFETY: the contract.
    let call = unsafe { name(call) };
    let enabled = with_block(&call, false, |dev| {
        let inst = instance(dev, &call)?;
        let engines = inst.attributes().engines;
        if engines & engine == 0 {
            let what = match engine {
                shmem_core::engine::SDMA => "SDMA",
                shmem_core::engine::ROCE => "RoCE",
                shmem_core::engine::UDMA => "UDMA",
                _ => "requested",
            };
            return Err(err(
                &call,
                format!(
                    "instance {} did not enable the {what} engine (its data_op_engine_type is {engines:#x})",
                    inst.id()
                ),
            ));
        }
        Ok(true)
    });
    if enabled {
        let len = usize::try_from(bytes).unwrap_or(usize::MAX);
        // SAFETY: forwarded.
        unsafe { copy_with(&call, get, dst, src, len, pe, None) };
    }
}

/// `aclsimd_copy_strided`: `aclshmem_<T>_{put,get}_nbi` with `non_contiguous_copy_param`:
/// `repeat` rows of `length` elements of `elem` bytes, `src_ld` and `dst_ld` elements apart.
///
/// # Safety
///
/// As for [`aclsimd_copy`]; `param` points to the four `u32`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_copy_strided(
    call: *const c_char,
    get: c_int,
    dst: *mut c_void,
    src: *const c_void,
    param: *const NonContiguousCopyParam,
    elem: u32,
    pe: c_int,
) {
    // SAFETY: the contract.
    let (call_s, p) = unsafe { (name(call), *param) };
    let e = elem as usize;
    for r in 0..p.repeat as usize {
        if with_block(&call_s, true, |dev| Ok(dev.launch_failed())) {
            return;
        }
        let d = dst.cast::<u8>().wrapping_add(r * p.dst_ld as usize * e);
        let s = src.cast::<u8>().wrapping_add(r * p.src_ld as usize * e);
        // SAFETY: forwarded; each row lies inside the operands the caller described.
        unsafe {
            aclsimd_copy(
                call,
                get,
                d.cast(),
                s.cast(),
                (p.length as usize * e) as u64,
                pe,
                -1,
                0,
                0,
            )
        };
    }
}

/// `aclsimd_p`: stores the `width`-byte element at `value` to PE `pe`'s copy of `dst`.
///
/// # Safety
///
/// `call` as for [`aclsimd_copy`]; `value` is valid for `width` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_p(
    call: *const c_char,
    dst: *mut c_void,
    value: *const c_void,
    width: u32,
    pe: c_int,
) {
    // SAFETY: the contract.
    let call = unsafe { name(call) };
    with_block(&call.clone(), (), |dev| {
        let (pe, d) = aim(dev, &call, dst, pe)?;
        by_size!(
            width,
            |T| {
                // SAFETY: `value` holds an element of `width` bytes (the contract).
                let v = unsafe { value.cast::<T>().read_unaligned() };
                dev.p(d.cast::<T>(), v, pe)
            },
            |w| Err(err(&call, format!("no element of {w} bytes")))
        )
    });
}

/// `aclsimd_g`: loads PE `pe`'s copy of the `width`-byte element at `src` into `value`.
///
/// # Safety
///
/// As for [`aclsimd_p`]; `value` is valid for a write of `width` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_g(
    call: *const c_char,
    src: *const c_void,
    value: *mut c_void,
    width: u32,
    pe: c_int,
) {
    // SAFETY: the contract.
    let call = unsafe { name(call) };
    with_block(&call.clone(), (), |dev| {
        let (pe, s) = aim(dev, &call, src, pe)?;
        by_size!(
            width,
            |T| {
                let v = dev.g(s.cast::<T>().cast_const(), pe)?;
                // SAFETY: the contract.
                unsafe { value.cast::<T>().write_unaligned(v) };
                Ok(())
            },
            |w| Err(err(&call, format!("no element of {w} bytes")))
        )
    });
}

fn signal_op_of(call: &str, op: c_int) -> Result<SignalOp, KernelError> {
    match op {
        0 => Ok(SignalOp::Set),
        1 => Ok(SignalOp::Add),
        o => Err(err(
            call,
            format!("{o} is not a signal operation (ACLSHMEM_SIGNAL_SET or _ADD)"),
        )),
    }
}

/// `aclshmemx_signal_op`: SET (a plain store, not atomic, as CANN's) or ADD (atomic) on PE
/// `pe`'s copy of the signal word at `sig`.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_signal_op(sig: *mut i32, signal: i32, op: c_int, pe: c_int) {
    let call = "aclshmemx_signal_op";
    with_block(call, (), |dev| {
        let (pe, s) = aim(dev, call, sig.cast(), pe)?;
        dev.signal_op(s.cast(), signal, signal_op_of(call, op)?, pe)
    });
}

fn cmp_of(call: &str, cmp: c_int) -> Result<Cmp, KernelError> {
    Ok(match cmp {
        0 => Cmp::Eq,
        1 => Cmp::Ne,
        2 => Cmp::Gt,
        3 => Cmp::Ge,
        4 => Cmp::Lt,
        5 => Cmp::Le,
        c => {
            return Err(err(
                call,
                format!("{c} is not a comparison (ACLSHMEM_CMP_EQ to _LE)"),
            ));
        }
    })
}

/// The element kinds of `aclsimd_test` and `aclsimd_atomic`.
const SIGNED: c_int = 0;
const UNSIGNED: c_int = 1;
const FLOAT: c_int = 2;
const HALF: c_int = 3;
const BFLOAT16: c_int = 4;

fn compare<T: PartialOrd>(cmp: Cmp, a: T, b: T) -> bool {
    match cmp {
        Cmp::Eq => a == b,
        Cmp::Ne => a != b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
        Cmp::Lt => a < b,
        Cmp::Le => a <= b,
    }
}

/// The bits of a word sign-extended (`SIGNED`) or as they are, for comparison.
fn sign_extend(bits: u64, width: u32) -> i64 {
    let shift = 64 - 8 * width;
    ((bits << shift) as i64) >> shift
}

/// `aclsimd_test`: whether the `width`-byte word at `ivar` (any PE's copy, as a kernel reaches
/// it, or this PE's symmetric address) compares `cmp` to `value`; its bits go to `seen`. The
/// wait family loops over this with [`aclsimd_backoff`].
///
/// # Safety
///
/// `call` as for [`aclsimd_copy`]; `seen` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_test(
    call: *const c_char,
    ivar: *const c_void,
    kind: c_int,
    width: u32,
    cmp: c_int,
    value: u64,
    seen: *mut u64,
) -> c_int {
    // SAFETY: the contract.
    let (call, seen) = unsafe { (name(call), seen.as_mut()) };
    test_word(&call, ivar, kind, width, cmp, value, seen)
}

/// [`aclsimd_test`] on the block.
fn test_word(
    call: &str,
    ivar: *const c_void,
    kind: c_int,
    width: u32,
    cmp: c_int,
    value: u64,
    seen: Option<&mut u64>,
) -> c_int {
    with_block(call, 0, |dev| {
        dev.yield_point();
        let inst = instance(dev, call)?;
        let cmp = cmp_of(call, cmp)?;
        let at = inst
            .kernel_addr(ivar.cast())
            .filter(|p| (*p as usize).is_multiple_of(width.max(1) as usize))
            .ok_or_else(|| {
                err(
                    call,
                    format!(
                        "{ivar:p} is not an aligned word of the symmetric heap of instance {}",
                        inst.id()
                    ),
                )
            })?;
        // SAFETY: an aligned word inside a mapped segment, shared with other processes: read
        // atomically, acquiring what the writer released before it.
        let bits = unsafe {
            match width {
                1 => u64::from(AtomicU8::from_ptr(at).load(Ordering::Acquire)),
                2 => u64::from(AtomicU16::from_ptr(at.cast()).load(Ordering::Acquire)),
                4 => u64::from(AtomicU32::from_ptr(at.cast()).load(Ordering::Acquire)),
                8 => AtomicU64::from_ptr(at.cast()).load(Ordering::Acquire),
                w => return Err(err(call, format!("no word of {w} bytes"))),
            }
        };
        if let Some(seen) = seen {
            *seen = bits;
        }
        let hit = match (kind, width) {
            (SIGNED, w) => compare(cmp, sign_extend(bits, w), sign_extend(value, w)),
            (UNSIGNED, _) => compare(cmp, bits, value),
            (FLOAT, 4) => compare(
                cmp,
                f32::from_bits(bits as u32),
                f32::from_bits(value as u32),
            ),
            (FLOAT, 8) => compare(cmp, f64::from_bits(bits), f64::from_bits(value)),
            (HALF, 2) => compare(
                cmp,
                f16::from_bits(bits as u16),
                f16::from_bits(value as u16),
            ),
            (BFLOAT16, 2) => compare(
                cmp,
                bf16::from_bits(bits as u16),
                bf16::from_bits(value as u16),
            ),
            (k, w) => return Err(err(call, format!("no element kind {k} of {w} bytes"))),
        };
        Ok(c_int::from(hit))
    })
}

/// Waits on the block until the `int32_t` word at `sig` compares `cmp` to `value` (the kernel
/// of `aclshmemx_signal_wait_until_on_stream`).
pub(crate) fn wait_until(call: &str, sig: *const c_void, cmp: c_int, value: i32) {
    let mut state = 0;
    while test_word(call, sig, SIGNED, 4, cmp, u64::from(value as u32), None) == 0 {
        if backoff(call, &mut state) == 0 {
            return;
        }
    }
}

/// `SHMEM_TIMEOUT`, the seconds a wait may last, if set.
fn timeout() -> Option<Duration> {
    static T: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        std::env::var("SHMEM_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .map(Duration::from_secs_f64)
    })
}

/// `aclsimd_backoff`: one pause of a wait that `state` (zero at the wait's start) tracks:
/// yields at first, then sleeps of growing length up to a millisecond, so that waiting cores
/// leave the CPUs to the others. 0 when the wait must end: the launch failed, or the wait
/// outlasted `SHMEM_TIMEOUT` (a failure of `call`).
///
/// # Safety
///
/// `call` as for [`aclsimd_copy`]; `state` is valid for reads and writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aclsimd_backoff(call: *const c_char, state: *mut u64) -> c_int {
    // SAFETY: the contract.
    let (call, st) = unsafe { (name(call), &mut *state) };
    backoff(&call, st)
}

/// [`aclsimd_backoff`] on the block.
fn backoff(call: &str, st: &mut u64) -> c_int {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    let now = epoch.elapsed().as_micros() as u64 + 1;
    // The low 16 bits count the rounds, the rest is the start in microseconds.
    if *st == 0 {
        *st = now << 16;
    }
    let rounds = *st & 0xffff;
    let started = Duration::from_micros(*st >> 16);
    *st = (*st & !0xffff) | (rounds + 1).min(0xffff);
    with_block(call, 0, |dev| {
        if dev.launch_failed() {
            return Ok(0);
        }
        if let Some(t) = timeout()
            && Duration::from_micros(now).saturating_sub(started) > t
        {
            return Err(err(
                call,
                format!("the wait outlasted SHMEM_TIMEOUT ({} s)", t.as_secs_f64()),
            ));
        }
        match rounds {
            0..64 => std::thread::yield_now(),
            r => std::thread::sleep(
                Duration::from_micros((r - 63).min(1000) * 10).min(Duration::from_millis(1)),
            ),
        }
        Ok(1)
    })
}

/// `aclsimd_atomic`: operation `op` (0 fetch, 1 set, 2 swap, 3 compare-swap of `a` by `b`, 4
/// add, 5 and, 6 or, 7 xor) on PE `pe`'s copy of the element at `addr` (`kind` and `width`
/// its type); the previous value's bits. The device's type rules: every op on 32- and 64-bit
/// integers, add also on `int8`/`int16` and on `float`, `half` and `bfloat16`.
///
/// # Safety
///
/// `call` as for [`aclsimd_copy`].
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn aclsimd_atomic(
    call: *const c_char,
    addr: *mut c_void,
    kind: c_int,
    width: u32,
    op: c_int,
    a: u64,
    b: u64,
    pe: c_int,
) -> u64 {
    // SAFETY: the contract.
    let call = unsafe { name(call) };
    with_block(&call.clone(), 0, |dev| {
        let (pe, at) = aim(dev, &call, addr, pe)?;
        let amo = match op {
            0 => AmoOp::Fetch,
            1 => AmoOp::Set(a),
            2 => AmoOp::Swap(a),
            3 => AmoOp::CompareSwap { cond: a, value: b },
            4 => AmoOp::Add(a),
            5 => AmoOp::And(a),
            6 => AmoOp::Or(a),
            7 => AmoOp::Xor(a),
            o => return Err(err(&call, format!("{o} is not an atomic operation"))),
        };
        match (kind, width, amo) {
            (SIGNED | UNSIGNED, 4, _) => dev.atomic::<u32>(at.cast(), amo, pe).map(u64::from),
            (SIGNED | UNSIGNED, 8, _) => dev.atomic::<u64>(at.cast(), amo, pe),
            (SIGNED, 1 | 2, AmoOp::Add(v)) => narrow_add(dev, at, width, v, pe),
            (FLOAT, 4, AmoOp::Add(v)) => dev
                .atomic_add_float::<f32>(at.cast(), f32::from_bits(v as u32), pe)
                .map(|o| u64::from(o.to_bits())),
            (HALF, 2, AmoOp::Add(v)) => dev
                .atomic_add_float::<f16>(at.cast(), f16::from_bits(v as u16), pe)
                .map(|o| u64::from(o.to_bits())),
            (BFLOAT16, 2, AmoOp::Add(v)) => dev
                .atomic_add_float::<bf16>(at.cast(), bf16::from_bits(v as u16), pe)
                .map(|o| u64::from(o.to_bits())),
            (FLOAT, 4, AmoOp::Set(_) | AmoOp::Swap(_) | AmoOp::Fetch) => {
                dev.atomic::<u32>(at.cast(), amo, pe).map(u64::from)
            }
            (k, w, op) => Err(err(
                &call,
                format!("no device atomic {op:?} on elements of kind {k} and {w} bytes"),
            )),
        }
    })
}

/// An atomic add on an `int8` or `int16` element: a compare-and-swap on the aligned 32-bit word
/// that holds it (the MTE engine adds narrow elements in place).
fn narrow_add(
    dev: &mut MultiDevice<'static>,
    at: *mut u8,
    width: u32,
    v: u64,
    pe: Pe,
) -> Result<u64, KernelError> {
    let word = (at as usize & !3) as *mut u32;
    let shift = 8 * (at as usize & 3) as u32;
    let mask: u32 = if width == 1 { 0xff } else { 0xffff };
    if shift + 8 * width > 32 {
        return Err(err(
            "aclshmem_atomic_add",
            "a 16-bit element must be 2-byte aligned",
        ));
    }
    let mut old = dev.atomic::<u32>(word, AmoOp::Fetch, pe)?;
    loop {
        let elem = (old >> shift) & mask;
        let new = (old & !(mask << shift)) | ((elem.wrapping_add(v as u32) & mask) << shift);
        let seen = dev.atomic::<u32>(
            word,
            AmoOp::CompareSwap {
                cond: u64::from(old),
                value: u64::from(new),
            },
            pe,
        )?;
        if seen == old {
            return Ok(u64::from(elem));
        }
        old = seen;
    }
}

/// `aclshmem_quiet` and `aclshmem_fence` (the same on CANN).
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_quiet() {
    with_block("aclshmem_quiet", (), |dev| dev.quiet());
}

/// `aclshmem_barrier_all` in a kernel: every block of every PE of the block's instance.
fn barrier_all() {
    with_block("aclshmem_barrier_all", (), |dev| dev.barrier_all());
}

/// `aclshmem_barrier` in a kernel: every block of every PE of team `team` (a no-op for
/// `ACLSHMEM_TEAM_INVALID`).
fn barrier(team: c_int) {
    let call = "aclshmem_barrier";
    with_block(call, (), |dev| {
        if team == cann::TEAM_INVALID {
            return Ok(());
        }
        let inst = instance(dev, call)?;
        let t = cann::team_of(inst, team).map_err(|e| err(call, e.to_string()))?;
        dev.barrier(&t)
    });
}

/// `aclsimd_barrier`: [`barrier`] for the headers (`aclshmem_barrier`, `aclshmemx_barrier_vec`);
/// outside a kernel (host code of a file compiled as kernel code), the host call.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_barrier(team: c_int) {
    if !super::kernel::on_core() {
        return super::team::aclshmem_barrier(team);
    }
    barrier(team);
}

/// `aclsimd_barrier_all`: [`barrier_all`] for the headers (`aclshmem_barrier_all`,
/// `aclshmemx_barrier_all_vec`); outside a kernel, the host call.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_barrier_all() {
    if !super::kernel::on_core() {
        return super::team::aclshmem_barrier_all();
    }
    barrier_all();
}

/// `aclshmemx_set_mte_config` in a kernel: the block's MTE staging buffer. 0, or CANN's
/// `ACLSHMEM_INVALID_PARAM` after ending the launch. Outside a kernel, the host call.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_set_mte_config(offset: u64, ub_size: u32, sync_id: u32) -> c_int {
    if !super::kernel::on_core() {
        // Host code of a file compiled as kernel code: the host call.
        return super::rma::aclshmemx_set_mte_config(offset, ub_size, sync_id);
    }
    let call = "aclshmemx_set_mte_config";
    with_block(call, shmem_core::Code::InvalidParam as c_int, |dev| {
        if sync_id > 7 {
            return Err(err(
                call,
                format!("sync_id {sync_id} is not an event id (0 to 7)"),
            ));
        }
        dev.set_mte_config(offset as usize, ub_size as usize)?;
        // The instance's state, which later blocks and launches read, as on CANN.
        let id = instance(dev, call)?.id();
        super::device_state::set_mte_config(id, offset, ub_size, sync_id);
        Ok(0)
    })
}

/// `util_set_ffts_config`: the simulated cores synchronise without an FFTS address, so the
/// value is only accepted.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_util_set_ffts_config(config: u64) {
    with_block("util_set_ffts_config", (), |dev| {
        dev.util_set_ffts_config(config);
        Ok(())
    });
}

/// `aclshmemx_instance_ctx_set` in a `MULTI_INSTANCE` kernel; outside a kernel (host code of a
/// file compiled as kernel code), the host call.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_instance_ctx_set(id: u64) {
    if !super::kernel::on_core() {
        super::init::aclshmemx_instance_ctx_set(id);
        return;
    }
    with_block("aclshmemx_instance_ctx_set", (), |dev| {
        dev.instance_ctx_set(id)
    });
}

/// `aclshmemx_instance_ctx_get` in a `MULTI_INSTANCE` kernel: the block's instance; outside a
/// kernel, the active instance's id.
#[unsafe(no_mangle)]
pub extern "C" fn aclsimd_instance_ctx_get() -> u64 {
    if !super::kernel::on_core() {
        return cann::instance_ctx_get();
    }
    with_block("aclshmemx_instance_ctx_get", u64::MAX, |dev| {
        dev.instance_ctx_get()
    })
}
