//! CANN's layout of the reserved area at the start of every symmetric heap.
//!
//! At init CANN allocates, in this order and with the ordinary allocator, a 512-byte signal
//! area, the 5 MiB sync pool (2560 bytes for each of 2048 teams) and 128 KiB of sync counters,
//! so the first user block lands at offset `0x520200`. The heap is `local_mem_size` plus 6 MiB
//! (`ACLSHMEM_EXTRA_SIZE`), which leaves about 0.875 MiB of the reserve to users. Nothing in the
//! reserve is touched until used, so a heap costs memory only for the pages a program uses.

/// CANN's `signal_addr` allocation.
pub(crate) const SIGNAL_AREA: u64 = 512;
/// Bytes of the sync pool per team (`SYNC_ARRAY_SIZE`).
pub(crate) const SYNC_ARRAY_SIZE: u64 = 64 * 5 * 8;
/// Teams with a slot in the sync pool (`ACLSHMEM_MAX_TEAMS`).
pub(crate) const MAX_TEAMS: u64 = 2048;
/// The sync pool (`SYNC_POOL_SIZE`, 5 MiB).
pub(crate) const SYNC_POOL: u64 = SYNC_ARRAY_SIZE * MAX_TEAMS;
/// Bytes of sync counters per team (`SYNC_COUNTER_SIZE`).
pub(crate) const SYNC_COUNTER_SIZE: u64 = 64;
/// The sync counters (`SYNC_COUNTERS_SIZE`, 128 KiB).
pub(crate) const SYNC_COUNTERS: u64 = SYNC_COUNTER_SIZE * MAX_TEAMS;
/// Where the first user allocation lands.
pub(crate) const FIRST_USER_OFFSET: u64 = 0x520200;

/// The offsets of the reserved blocks, as the allocator placed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reserved {
    /// CANN's signal area.
    pub signal: u64,
    /// The sync pool: team `i` owns `sync_pool + i * SYNC_ARRAY_SIZE ..`.
    pub sync_pool: u64,
    /// The sync counters: team `i` owns `sync_counters + i * SYNC_COUNTER_SIZE ..`.
    pub sync_counters: u64,
}

impl Reserved {
    /// The sync-pool slot of team `index`.
    pub(crate) fn team_slot(&self, index: u64) -> u64 {
        debug_assert!(index < MAX_TEAMS);
        self.sync_pool + index * SYNC_ARRAY_SIZE
    }
}

const _: () = assert!(SYNC_POOL == 5 << 20);
const _: () = assert!(SIGNAL_AREA + SYNC_POOL + SYNC_COUNTERS == FIRST_USER_OFFSET);
