/* device/gm2gm/shmem_device_cc.h (shmem-rs): CANN SHMEM's device barriers: every block of the
 * launch on every PE of the team (or of the block's instance) arrives before any leaves; the
 * block's transfers are complete first. A barrier in a launch of more than 48 blocks (which runs
 * in waves) is refused. util_set_ffts_config takes the value util_get_ffts_config gave the host
 * (the simulated cores synchronise without it). Written by shmem-rs from CANN's documented
 * interface. */
#ifndef SHMEM_RS_CANN_DEVICE_CC_H
#define SHMEM_RS_CANN_DEVICE_CC_H

#include "device/shmem_def.h"

extern "C" uint64_t util_get_ffts_config(void);

ACLSHMEM_DEVICE void util_set_ffts_config(uint64_t config) { aclsimd_util_set_ffts_config(config); }
ACLSHMEM_DEVICE void aclshmem_barrier(aclshmem_team_t team) { aclsimd_barrier(team); }
ACLSHMEM_DEVICE void aclshmem_barrier_all(void) { aclsimd_barrier_all(); }
ACLSHMEM_DEVICE void aclshmemx_sync_vec(aclshmem_team_t team) { aclsimd_barrier(team); }
ACLSHMEM_DEVICE void aclshmemx_sync_vec_all(void) { aclsimd_barrier_all(); }
[[deprecated("aclshmemx_barrier_vec is deprecated, please use aclshmemx_sync_vec instead.")]] ACLSHMEM_DEVICE void
aclshmemx_barrier_vec(aclshmem_team_t team)
{
    aclsimd_barrier(team);
}
[[deprecated("aclshmemx_barrier_all_vec is deprecated, please use aclshmemx_sync_vec_all instead.")]] ACLSHMEM_DEVICE void
aclshmemx_barrier_all_vec(void)
{
    aclsimd_barrier_all();
}

#endif /* SHMEM_RS_CANN_DEVICE_CC_H */
