//! CANN's device-side instance state at its fixed device address, for kernels that read it by
//! hand as they do on an NPU: instance `id`'s `aclshmem_device_host_state_t` lies at
//! `0x17FFBE010000 + (id << 1) × 64 KiB` (its HBM entity's user context), and its entity's meta
//! record at `0x17FFBE000000 + 128 + (id << 1) × 128`. The simulator maps that 32 MiB region
//! in every PE process at its first CANN instance and writes each instance's record at init
//! (cleared at finalize), with the fields kernels read in CANN's layout: `version`, `mype`,
//! `npes`, `heap_base` and `p2p_device_heap_base[pe]` (where the block reaches each PE's heap),
//! `topo_list` (the MTE engine to every PE), `heap_size`, the initialised flags and the engines'
//! UB configurations. Team pools, sync pools and the other engines' arrays are NULL.
//!
//! The MTE configuration kernels stage through is read from here ([`mte_config`]), and the
//! host's and the device's `aclshmemx_set_mte_config` write it, as on CANN. If the region
//! cannot be mapped (the address is taken), the records are kept in this process only and
//! kernels that read the address by hand fault.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use shmem_core::Instance;

/// `SMEM_SHM_DEVICE_META_ADDR`: the meta records, then the user contexts.
const META_ADDR: usize = 0x17FF_BE00_0000;
/// `SMEM_SHM_DEVICE_USER_CONTEXT_ADDR`.
const USER_CONTEXT_ADDR: usize = META_ADDR + 64 * 1024;
/// One entity's user context.
const CONTEXT_SIZE: usize = 64 * 1024;
/// The meta records and 512 contexts.
const REGION_SIZE: usize = 32 << 20;
/// `sizeof(aclshmem_device_host_state_t)` on a 64-bit host.
const STATE_SIZE: usize = 32_992;
/// The HBM entity of instance `id` is `id << 1`, below 511.
const MAX_ID: u64 = 254;

/// Field offsets of `aclshmem_device_host_state_t` (reference §3.6).
mod at {
    pub(super) const VERSION: usize = 0;
    pub(super) const MYPE: usize = 4;
    pub(super) const NPES: usize = 8;
    pub(super) const HEAP_BASE: usize = 16;
    pub(super) const P2P_DEVICE_HEAP_BASE: usize = 32;
    pub(super) const TOPO_LIST: usize = 80;
    pub(super) const TOPO_LEN: usize = 16_384;
    pub(super) const HEAP_SIZE: usize = 16_464;
    pub(super) const IS_INITIALIZED: usize = 32_888;
    pub(super) const IS_CREATED: usize = 32_889;
    pub(super) const MTE_CONFIG: usize = 32_896;
    pub(super) const SDMA_CONFIG: usize = 32_912;
    pub(super) const RDMA_CONFIG: usize = 32_928;
    pub(super) const UDMA_CONFIG: usize = 32_944;
}

/// `ACLSHMEM_TRANSPORT_MTE`.
const TRANSPORT_MTE: u8 = 1;
/// The default MTE configuration: 16 KiB at UB offset 0.
pub(crate) const DEFAULT_MTE: (u64, u32) = (0, 16 * 1024);

/// The mapped region, if it could be mapped.
fn region() -> Option<*mut u8> {
    static REGION: OnceLock<Option<usize>> = OnceLock::new();
    REGION
        .get_or_init(|| {
            // SAFETY: a new anonymous private mapping at a fixed address that must be free
            // (MAP_FIXED_NOREPLACE never replaces a mapping); it lives as long as the process.
            let p = unsafe {
                libc::mmap(
                    META_ADDR as *mut libc::c_void,
                    REGION_SIZE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE
                        | libc::MAP_ANONYMOUS
                        | libc::MAP_NORESERVE
                        | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            (p as usize == META_ADDR).then_some(META_ADDR)
        })
        .map(|a| a as *mut u8)
}

/// Each live instance's heap-base array (what `p2p_device_heap_base` points to) and MTE
/// configuration.
struct Record {
    bases: Box<[u64]>,
    mte: (u64, u32),
}

static RECORDS: Mutex<BTreeMap<u64, Record>> = Mutex::new(BTreeMap::new());

fn records() -> std::sync::MutexGuard<'static, BTreeMap<u64, Record>> {
    RECORDS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Instance `id`'s state record in the region.
fn slot(id: u64) -> Option<*mut u8> {
    let base = region()?;
    (id <= MAX_ID).then(|| {
        base.wrapping_add(USER_CONTEXT_ADDR - META_ADDR + ((id as usize) << 1) * CONTEXT_SIZE)
    })
}

/// Writes `v` at byte `off` of the record at `s`.
///
/// # Safety
///
/// `s` is a slot of the mapped region and `off + size_of::<T>() <= CONTEXT_SIZE`.
unsafe fn put<T: Copy>(s: *mut u8, off: usize, v: T) {
    debug_assert!(off + size_of::<T>() <= CONTEXT_SIZE);
    // SAFETY: inside the slot (the contract); the region is plain writable memory.
    unsafe { s.add(off).cast::<T>().write_unaligned(v) };
}

/// Publishes the state of `inst` (after its init).
pub(crate) fn publish(inst: &Instance) {
    if inst.backend_name() != "sim" {
        // Kernels run on the simulator's cores only; on hw the device has CANN's own state.
        return;
    }
    let id = inst.id();
    let heap = inst.heap_base();
    let bases: Box<[u64]> = (0..inst.n_pes())
        .map(|pe| {
            inst.peer_addr(heap.cast(), pe)
                .and_then(|a| inst.kernel_addr(a.as_ptr()))
                .map_or(0, |k| k as u64)
        })
        .collect();
    let mut all = records();
    let rec = all.entry(id).or_insert(Record {
        bases: Box::new([]),
        mte: DEFAULT_MTE,
    });
    rec.bases = bases;
    rec.mte = DEFAULT_MTE;
    let Some(s) = slot(id) else {
        return;
    };
    let n = inst.n_pes() as usize;
    // SAFETY: every offset lies inside the 64 KiB slot (the struct is 32,992 bytes).
    unsafe {
        std::ptr::write_bytes(s, 0, CONTEXT_SIZE);
        put(s, at::VERSION, (1i32 << 16) + STATE_SIZE as i32);
        put(s, at::MYPE, inst.my_pe() as i32);
        put(s, at::NPES, n as i32);
        put(s, at::HEAP_BASE, rec.bases[inst.my_pe() as usize]);
        put(s, at::P2P_DEVICE_HEAP_BASE, rec.bases.as_ptr() as u64);
        std::ptr::write_bytes(s.add(at::TOPO_LIST), TRANSPORT_MTE, n.min(at::TOPO_LEN));
        put(s, at::HEAP_SIZE, inst.heap_size() as u64);
        put(s, at::IS_INITIALIZED, 1u8);
        put(s, at::IS_CREATED, 1u8);
        for (off, (ub, size)) in [
            (at::MTE_CONFIG, DEFAULT_MTE),
            (at::SDMA_CONFIG, (191 * 1024, 64)),
            (at::RDMA_CONFIG, (190 * 1024, 128)),
            (at::UDMA_CONFIG, (189 * 1024, 128)),
        ] {
            put(s, off, ub as i64);
            put(s, off + 8, size);
            put(s, off + 12, 0u32);
        }
        // The entity's meta record: entity id, rank, rank count, context size, heap size.
        let meta = region()
            .expect("the slot is in the region")
            .add(128 + ((id as usize) << 1) * 128);
        std::ptr::write_bytes(meta, 0, 128);
        meta.cast::<u32>().write_unaligned((id as u32) << 1);
        meta.add(4).cast::<u32>().write_unaligned(inst.my_pe());
        meta.add(8).cast::<u32>().write_unaligned(n as u32);
        meta.add(12)
            .cast::<u32>()
            .write_unaligned(STATE_SIZE as u32);
        meta.add(16)
            .cast::<u64>()
            .write_unaligned(inst.heap_size() as u64);
    }
}

/// Clears instance `id`'s state (at its finalize).
pub(crate) fn withdraw(id: u64) {
    if let Some(s) = slot(id) {
        // SAFETY: the slot and the meta record lie in the mapped region.
        unsafe {
            std::ptr::write_bytes(s, 0, CONTEXT_SIZE);
            let meta = region()
                .expect("the slot is in the region")
                .add(128 + ((id as usize) << 1) * 128);
            std::ptr::write_bytes(meta, 0, 128);
        }
    }
    records().remove(&id);
}

/// Instance `id`'s MTE configuration (UB offset and size) that kernels stage through.
pub(crate) fn mte_config(id: u64) -> (u64, u32) {
    records().get(&id).map_or(DEFAULT_MTE, |r| r.mte)
}

/// Sets instance `id`'s MTE configuration (`aclshmemx_set_mte_config`, host or device).
pub(crate) fn set_mte_config(id: u64, offset: u64, ub_size: u32, sync_id: u32) {
    if let Some(r) = records().get_mut(&id) {
        r.mte = (offset, ub_size);
    }
    if let Some(s) = slot(id) {
        // SAFETY: the MTE configuration lies inside the slot.
        unsafe {
            put(s, at::MTE_CONFIG, offset as i64);
            put(s, at::MTE_CONFIG + 8, ub_size);
            put(s, at::MTE_CONFIG + 12, sync_id);
        }
    }
}
