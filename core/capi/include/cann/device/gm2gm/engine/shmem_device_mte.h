/* device/gm2gm/engine/shmem_device_mte.h (shmem-rs): the MTE engine's device calls:
 * aclshmem_ptr, the low-level aclshmemx_mte_put_nbi/get_nbi with the caller's UB buffer
 * (`ub_size` bytes, 32-byte aligned) and event (`sync_id`, 0 to 7), aclshmemx_mte_quiet and the
 * MTE atomics. Written by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_MTE_H
#define SHMEM_RS_CANN_DEVICE_MTE_H

#include "device/shmem_def.h"

/* Where the block reaches PE `pe`'s copy of the symmetric object at `ptr` (NULL outside the heap). */
ACLSHMEM_DEVICE __gm__ void *aclshmem_ptr(__gm__ void *ptr, int pe) { return aclsimd_ptr(ptr, pe); }

template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                           uint32_t elem_size, int pe, uint32_t sync_id)
{
    aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst, src, (uint64_t)elem_size * sizeof(T), pe, aclshmem_sim::ub(buf),
                 ub_size, sync_id);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                           uint32_t elem_size, int pe, uint32_t sync_id)
{
    aclsimd_copy("aclshmemx_mte_get_nbi", 1, dst, src, (uint64_t)elem_size * sizeof(T), pe, aclshmem_sim::ub(buf),
                 ub_size, sync_id);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                           const non_contiguous_copy_param &copy_params, int pe, uint32_t sync_id)
{
    for (uint32_t r = 0; r < copy_params.repeat; r++) {
        aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst + (uint64_t)r * copy_params.dst_ld,
                     src + (uint64_t)r * copy_params.src_ld, (uint64_t)copy_params.length * sizeof(T), pe,
                     aclshmem_sim::ub(buf), ub_size, sync_id);
    }
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(__gm__ T *dst, __gm__ T *src, __ubuf__ T *buf, uint32_t ub_size,
                                           const non_contiguous_copy_param &copy_params, int pe, uint32_t sync_id)
{
    for (uint32_t r = 0; r < copy_params.repeat; r++) {
        aclsimd_copy("aclshmemx_mte_get_nbi", 1, dst + (uint64_t)r * copy_params.dst_ld,
                     src + (uint64_t)r * copy_params.src_ld, (uint64_t)copy_params.length * sizeof(T), pe,
                     aclshmem_sim::ub(buf), ub_size, sync_id);
    }
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(AscendC::GlobalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           AscendC::LocalTensor<T> buf, uint32_t elem_size, int pe, uint32_t sync_id)
{
    aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst.GetPhyAddr(), src.GetPhyAddr(), (uint64_t)elem_size * sizeof(T), pe,
                 buf.UbOffset(), buf.GetLength(), sync_id);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(AscendC::GlobalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           AscendC::LocalTensor<T> buf, uint32_t elem_size, int pe, uint32_t sync_id)
{
    aclsimd_copy("aclshmemx_mte_get_nbi", 1, dst.GetPhyAddr(), src.GetPhyAddr(), (uint64_t)elem_size * sizeof(T), pe,
                 buf.UbOffset(), buf.GetLength(), sync_id);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_put_nbi(AscendC::GlobalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           AscendC::LocalTensor<T> buf, const non_contiguous_copy_param &copy_params,
                                           int pe, uint32_t sync_id)
{
    for (uint32_t r = 0; r < copy_params.repeat; r++) {
        aclsimd_copy("aclshmemx_mte_put_nbi", 0, dst.GetPhyAddr((uint64_t)r * copy_params.dst_ld),
                     src.GetPhyAddr((uint64_t)r * copy_params.src_ld), (uint64_t)copy_params.length * sizeof(T), pe,
                     buf.UbOffset(), buf.GetLength(), sync_id);
    }
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_get_nbi(AscendC::GlobalTensor<T> dst, AscendC::GlobalTensor<T> src,
                                           AscendC::LocalTensor<T> buf, const non_contiguous_copy_param &copy_params,
                                           int pe, uint32_t sync_id)
{
    for (uint32_t r = 0; r < copy_params.repeat; r++) {
        aclsimd_copy("aclshmemx_mte_get_nbi", 1, dst.GetPhyAddr((uint64_t)r * copy_params.dst_ld),
                     src.GetPhyAddr((uint64_t)r * copy_params.src_ld), (uint64_t)copy_params.length * sizeof(T), pe,
                     buf.UbOffset(), buf.GetLength(), sync_id);
    }
}

/* The MTE engine's transfers are complete. */
ACLSHMEM_DEVICE void aclshmemx_mte_quiet() { aclsimd_quiet(); }

namespace aclshmem_sim {
template <typename T>
inline T atomic(const char *call, const T *dst, int op, T a, T b, int32_t pe)
{
    return from_bits<T>(
        aclsimd_atomic(call, (void *)dst, kind<T>::value, sizeof(T), op, bits(a), bits(b), pe));
}
} // namespace aclshmem_sim

template <typename T>
ACLSHMEM_DEVICE T aclshmemx_mte_atomic_fetch(__gm__ T *src, int32_t pe)
{
    return aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_fetch", src, 0, T(), T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_atomic_set(__gm__ T *dst, T value, int32_t pe)
{
    aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_set", dst, 1, value, T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE T aclshmemx_mte_atomic_compare_swap(__gm__ T *dst, T cond, T value, int32_t pe)
{
    return aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_compare_swap", dst, 3, cond, value, pe);
}
template <typename T>
ACLSHMEM_DEVICE T aclshmemx_mte_atomic_swap(__gm__ T *dst, T value, int32_t pe)
{
    return aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_swap", dst, 2, value, T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_atomic_inc(__gm__ T *dst, int32_t pe)
{
    aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_inc", dst, 4, T(1), T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE void aclshmemx_mte_atomic_add(__gm__ T *dst, T value, int32_t pe)
{
    aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_add", dst, 4, value, T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE T aclshmemx_mte_atomic_fetch_inc(__gm__ T *dst, int32_t pe)
{
    return aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_fetch_inc", dst, 4, T(1), T(), pe);
}
template <typename T>
ACLSHMEM_DEVICE T aclshmemx_mte_atomic_fetch_add(__gm__ T *dst, T value, int32_t pe)
{
    return aclshmem_sim::atomic<T>("aclshmemx_mte_atomic_fetch_add", dst, 4, value, T(), pe);
}

#endif /* SHMEM_RS_CANN_DEVICE_MTE_H */
