/* device/gm2gm/engine/shmem_device_rdma.h (shmem-rs): the RoCE engine's device transfers and
 * aclshmem_roce_ptr. The instance must have enabled the engine (ACLSHMEM_DATA_OP_ROCE), or the
 * call ends the launch with an error naming it; the simulator then moves the data as the MTE
 * engine does. Written by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_RDMA_H
#define SHMEM_RS_CANN_DEVICE_RDMA_H

#include "device/gm2gm/engine/shmem_device_sdma.h"

/* Where the block reaches PE `pe`'s copy of `ptr` over RoCE: on the simulator, as aclshmem_ptr. */
ACLSHMEM_DEVICE __gm__ void *aclshmem_roce_ptr(__gm__ void *ptr, int pe) { return aclsimd_ptr(ptr, pe); }

template <typename T>
ACLSHMEM_DEVICE void aclshmemx_roce_put_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t elem_size, int pe,
                                            uint32_t sync_id)
{
    (void)buf, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_roce_put_nbi", ACLSHMEM_DATA_OP_ROCE, 0, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_roce_get_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t elem_size, int pe,
                                            uint32_t sync_id)
{
    (void)buf, (void)sync_id;
    aclsimd_engine_copy("aclshmemx_roce_get_nbi", ACLSHMEM_DATA_OP_ROCE, 1, dst, src, (uint64_t)elem_size * sizeof(T), pe);
}

#endif /* SHMEM_RS_CANN_DEVICE_RDMA_H */
