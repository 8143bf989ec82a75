/* device/ub2gm/shmem_device_rma.h (shmem-rs): CANN SHMEM's device RMA between the block's UB
 * and a PE's global memory, with no staging: put is UB -> the PE's GM, get the PE's GM -> UB.
 * UB addresses and lengths follow the UB's 32-byte alignment. The raw `__ubuf__` pointer forms
 * need `__ubuf__` to be an address space of its own (clang on x86-64, see ascendc/stub_def.h);
 * elsewhere a UB pointer passed to the global-memory forms is recognised by its value (an offset
 * below 192 KiB), and the LocalTensor forms work everywhere. Written by shmem-rs from CANN's
 * documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_UB2GM_RMA_H
#define SHMEM_RS_CANN_DEVICE_UB2GM_RMA_H

#include "device/shmem_def.h"

#if ACLSHMEM_SIM_UB_SEGMENT
#define ACLSHMEM_SIM_UB2GM_RAW(NAME, TYPE)                                                                       \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(__gm__ TYPE *dst, __ubuf__ TYPE *src, uint32_t elem_size,   \
                                                   int32_t pe)                                                 \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_put_nbi", 0, dst, aclshmem_sim::ub_operand(aclshmem_sim::ub(src)),    \
                     (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0);                                        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(__ubuf__ TYPE *dst, __gm__ TYPE *src, uint32_t elem_size,   \
                                                   int pe)                                                     \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_get_nbi", 1, (void *)aclshmem_sim::ub_operand(aclshmem_sim::ub(dst)), \
                     src, (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0);                                   \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(__gm__ TYPE *dst, __ubuf__ TYPE *src,                       \
                                                   const non_contiguous_copy_param &copy_params, int32_t pe)   \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_put_nbi", 0, dst,                                             \
                             aclshmem_sim::ub_operand(aclshmem_sim::ub(src)), &copy_params, sizeof(TYPE), pe); \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(__ubuf__ TYPE *dst, __gm__ TYPE *src,                       \
                                                   const non_contiguous_copy_param &copy_params, int pe)       \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_get_nbi", 1,                                                  \
                             (void *)aclshmem_sim::ub_operand(aclshmem_sim::ub(dst)), src, &copy_params,       \
                             sizeof(TYPE), pe);                                                                \
    }
ACLSHMEM_TYPE_FUNC(ACLSHMEM_SIM_UB2GM_RAW);
#undef ACLSHMEM_SIM_UB2GM_RAW
#endif

#define ACLSHMEM_SIM_UB2GM_TENSOR(NAME, TYPE)                                                                    \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::LocalTensor<TYPE> src, uint32_t elem_size, int32_t pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_put_nbi", 0, dst.GetPhyAddr(), aclshmem_sim::ub_operand(src.UbOffset()), \
                     (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0);                                        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(AscendC::LocalTensor<TYPE> dst,                             \
                                                   AscendC::GlobalTensor<TYPE> src, uint32_t elem_size, int pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_get_nbi", 1, (void *)aclshmem_sim::ub_operand(dst.UbOffset()),        \
                     src.GetPhyAddr(), (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0);                      \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::LocalTensor<TYPE> src,                             \
                                                   const non_contiguous_copy_param &copy_params, int32_t pe)   \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_put_nbi", 0, dst.GetPhyAddr(),                                \
                             aclshmem_sim::ub_operand(src.UbOffset()), &copy_params, sizeof(TYPE), pe);        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(AscendC::LocalTensor<TYPE> dst,                             \
                                                   AscendC::GlobalTensor<TYPE> src,                            \
                                                   const non_contiguous_copy_param &copy_params, int pe)       \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_get_nbi", 1, (void *)aclshmem_sim::ub_operand(dst.UbOffset()), \
                             src.GetPhyAddr(), &copy_params, sizeof(TYPE), pe);                                \
    }
ACLSHMEM_TYPE_FUNC(ACLSHMEM_SIM_UB2GM_TENSOR);
#undef ACLSHMEM_SIM_UB2GM_TENSOR

#endif /* SHMEM_RS_CANN_DEVICE_UB2GM_RMA_H */
