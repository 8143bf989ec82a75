/* device/gm2gm/engine/shmem_device_udma.h (shmem-rs): the UDMA engine's device transfers
 * (Ascend950). The instance must have enabled the engine (ACLSHMEM_DATA_OP_UDMA), or the call
 * ends the launch with an error naming it; the simulator then moves the data as the MTE engine
 * does. Written by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_UDMA_H
#define SHMEM_RS_CANN_DEVICE_UDMA_H

#include "device/gm2gm/engine/shmem_device_sdma.h"

template <typename T, pipe_t WQE_PIPE = PIPE_MTE3>
ACLSHMEM_DEVICE void aclshmemx_udma_put_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t elem_size, int pe,
                                            uint32_t sync_id = 0)
{
    (void)buf, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_udma_put_nbi", ACLSHMEM_DATA_OP_UDMA, 0, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}
template <typename T, pipe_t WQE_PIPE = PIPE_MTE3>
ACLSHMEM_DEVICE void aclshmemx_udma_get_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t elem_size, int pe,
                                            uint32_t sync_id = 0)
{
    (void)buf, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_udma_get_nbi", ACLSHMEM_DATA_OP_UDMA, 1, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}

#endif /* SHMEM_RS_CANN_DEVICE_UDMA_H */
