/* device/gm2gm/engine/shmem_device_sdma.h (shmem-rs): the SDMA engine's device transfers. The
 * instance must have enabled the engine (ACLSHMEM_DATA_OP_SDMA in data_op_engine_type), or the
 * call ends the launch with an error naming it; the simulator then moves the data as the MTE
 * engine does (what differs on an NPU is timing and mechanism, not the result). Written by
 * shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_SDMA_H
#define SHMEM_RS_CANN_DEVICE_SDMA_H

#include "device/shmem_def.h"
#include "host/shmem_host_def.h"

extern "C" void aclsimd_engine_copy(const char *call, uint32_t engine, int get, void *dst, const void *src,
                                    uint64_t bytes, int pe);

template <typename T>
ACLSHMEM_DEVICE void aclshmemx_sdma_put_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                            uint32_t elem_size, int pe, uint32_t sync_id)
{
    (void)buf, (void)ub_size, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_sdma_put_nbi", ACLSHMEM_DATA_OP_SDMA, 0, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_sdma_get_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                            uint32_t elem_size, int pe, uint32_t sync_id)
{
    (void)buf, (void)ub_size, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_sdma_get_nbi", ACLSHMEM_DATA_OP_SDMA, 1, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}

#endif /* SHMEM_RS_CANN_DEVICE_SDMA_H */
