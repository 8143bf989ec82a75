/* device/ub2gm/engine/shmem_device_mte.h (shmem-rs): the MTE engine between the block's UB and a
 * PE's global memory (aclshmemx_mte_put_nbi/get_nbi with a UB operand and an event id). Written
 * by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_UB2GM_MTE_H
#define SHMEM_RS_CANN_DEVICE_UB2GM_MTE_H

#include "device/shmem_def.h"

namespace aclshmem_sim {
inline bool event_ok(const char *call, uint32_t sync_id)
{
    if (sync_id > 7) {
        aclsimd_fail(call, "sync_id is not an event id (0 to 7)");
        return false;
    }
    return true;
}
} // namespace aclshmem_sim

template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(__ubuf__ T *dst, __gm__ T *src, uint32_t elem_size, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_get_nbi", sync_id)) return;
    aclsimd_copy("aclshmemx_mte_get_nbi", 1, (void *)aclshmem_sim::ub_operand(aclshmem_sim::ub(dst)), src,
                 (uint64_t)elem_size * sizeof(T), pe, -1, 0, 0);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(__gm__ T *dst, __ubuf__ T *src, uint32_t elem_size, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_put_nbi", sync_id)) return;
    aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst, aclshmem_sim::ub_operand(aclshmem_sim::ub(src)),
                 (uint64_t)elem_size * sizeof(T), pe, -1, 0, 0);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(AscendC::LocalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           uint32_t elem_size, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_get_nbi", sync_id)) return;
    aclsimd_copy("aclshmemx_mte_get_nbi", 1, (void *)aclshmem_sim::ub_operand(dst.UbOffset()), src.GetPhyAddr(),
                 (uint64_t)elem_size * sizeof(T), pe, -1, 0, 0);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(AscendC::GlobalTensor<T> dst, AscendC::LocalTensor<T> src,
                                           uint32_t elem_size, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_put_nbi", sync_id)) return;
    aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst.GetPhyAddr(), aclshmem_sim::ub_operand(src.UbOffset()),
                 (uint64_t)elem_size * sizeof(T), pe, -1, 0, 0);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(__ubuf__ T *dst, __gm__ T *src, const non_contiguous_copy_param &copy_params,
                                           int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_get_nbi", sync_id)) return;
    aclsimd_copy_strided("aclshmemx_mte_get_nbi", 1, (void *)aclshmem_sim::ub_operand(aclshmem_sim::ub(dst)), src,
                         &copy_params, sizeof(T), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(__gm__ T *dst, __ubuf__ T *src, const non_contiguous_copy_param &copy_params,
                                           int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_put_nbi", sync_id)) return;
    aclsimd_copy_strided("aclshmemx_mte_put_nbi", 0, dst, aclshmem_sim::ub_operand(aclshmem_sim::ub(src)),
                         &copy_params, sizeof(T), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(AscendC::LocalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           const non_contiguous_copy_param &copy_params, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_get_nbi", sync_id)) return;
    aclsimd_copy_strided("aclshmemx_mte_get_nbi", 1, (void *)aclshmem_sim::ub_operand(dst.UbOffset()),
                         src.GetPhyAddr(), &copy_params, sizeof(T), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(AscendC::GlobalTensor<T> dst, AscendC::LocalTensor<T> src,
                                           const non_contiguous_copy_param &copy_params, int pe, uint32_t sync_id)
{
    if (!aclshmem_sim::event_ok("aclshmemx_mte_put_nbi", sync_id)) return;
    aclsimd_copy_strided("aclshmemx_mte_put_nbi", 0, dst.GetPhyAddr(), aclshmem_sim::ub_operand(src.UbOffset()),
                         &copy_params, sizeof(T), pe);
}

#endif /* SHMEM_RS_CANN_DEVICE_UB2GM_MTE_H */
