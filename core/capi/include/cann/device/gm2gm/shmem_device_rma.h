/* device/gm2gm/shmem_device_rma.h (shmem-rs): CANN SHMEM's device RMA between global memories:
 * p/g, typed and sized put/get (blocking and _nbi), strided forms with
 * non_contiguous_copy_param and iput/iget, GlobalTensor forms, and aclshmemx_set_mte_config.
 * The MTE engine stages each transfer through the block's UB, in chunks of the MTE
 * configuration's ub_size (16 KiB at offset 0 unless set otherwise). On the simulator an _nbi
 * transfer is complete on return, which the specification allows. Written by shmem-rs from
 * CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_GM2GM_RMA_H
#define SHMEM_RS_CANN_DEVICE_GM2GM_RMA_H

#include "device/shmem_def.h"

#define ACLSHMEM_SIM_GM2GM_RMA(NAME, TYPE)                                                                       \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_p(__gm__ TYPE *dst, const TYPE value, int pe)                       \
    {                                                                                                          \
        aclsimd_p("aclshmem_" #NAME "_p", dst, &value, sizeof(TYPE), pe);                                      \
    }                                                                                                          \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_g(__gm__ TYPE *src, int32_t pe)                                     \
    {                                                                                                          \
        TYPE v = TYPE();                                                                                       \
        aclsimd_g("aclshmem_" #NAME "_g", src, &v, sizeof(TYPE), pe);                                          \
        return v;                                                                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put(__gm__ TYPE *dst, __gm__ TYPE *src, uint32_t elem_size, int32_t pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_put", 0, dst, src, (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0); \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get(__gm__ TYPE *dst, __gm__ TYPE *src, uint32_t elem_size, int32_t pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_get", 1, dst, src, (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, 0); \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(__gm__ TYPE *dst, __gm__ TYPE *src, uint32_t elem_size,     \
                                                   int32_t pe)                                                 \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_put_nbi", 0, dst, src, (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, \
                     0);                                                                                       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(__gm__ TYPE *dst, __gm__ TYPE *src, uint32_t elem_size,     \
                                                   int32_t pe)                                                 \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_get_nbi", 1, dst, src, (uint64_t)elem_size * sizeof(TYPE), pe, -1, 0, \
                     0);                                                                                       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(__gm__ TYPE *dst, __gm__ TYPE *src,                         \
                                                   const non_contiguous_copy_param &copy_params, int32_t pe)   \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_put_nbi", 0, dst, src, &copy_params, sizeof(TYPE), pe);       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(__gm__ TYPE *dst, __gm__ TYPE *src,                         \
                                                   const non_contiguous_copy_param &copy_params, int32_t pe)   \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_get_nbi", 1, dst, src, &copy_params, sizeof(TYPE), pe);       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::GlobalTensor<TYPE> src, uint32_t elem_size, int pe) \
    {                                                                                                          \
        aclshmem_##NAME##_put_nbi(dst.GetPhyAddr(), src.GetPhyAddr(), elem_size, pe);                          \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::GlobalTensor<TYPE> src, uint32_t elem_size, int pe) \
    {                                                                                                          \
        aclshmem_##NAME##_get_nbi(dst.GetPhyAddr(), src.GetPhyAddr(), elem_size, pe);                          \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::GlobalTensor<TYPE> src,                            \
                                                   const non_contiguous_copy_param &copy_params, int pe)       \
    {                                                                                                          \
        aclshmem_##NAME##_put_nbi(dst.GetPhyAddr(), src.GetPhyAddr(), copy_params, pe);                        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_get_nbi(AscendC::GlobalTensor<TYPE> dst,                            \
                                                   AscendC::GlobalTensor<TYPE> src,                            \
                                                   const non_contiguous_copy_param &copy_params, int pe)       \
    {                                                                                                          \
        aclshmem_##NAME##_get_nbi(dst.GetPhyAddr(), src.GetPhyAddr(), copy_params, pe);                        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_iput(__gm__ TYPE *dest, __gm__ TYPE *source, ptrdiff_t dst,         \
                                                ptrdiff_t sst, size_t nelems, int pe)                          \
    {                                                                                                          \
        non_contiguous_copy_param p = {(uint32_t)nelems, 1, (uint32_t)sst, (uint32_t)dst};                     \
        aclsimd_copy_strided("aclshmem_" #NAME "_iput", 0, dest, source, &p, sizeof(TYPE), pe);                \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_iget(__gm__ TYPE *dest, __gm__ TYPE *source, ptrdiff_t dst,         \
                                                ptrdiff_t sst, size_t nelems, int pe)                          \
    {                                                                                                          \
        non_contiguous_copy_param p = {(uint32_t)nelems, 1, (uint32_t)sst, (uint32_t)dst};                     \
        aclsimd_copy_strided("aclshmem_" #NAME "_iget", 1, dest, source, &p, sizeof(TYPE), pe);                \
    }
ACLSHMEM_TYPE_FUNC(ACLSHMEM_SIM_GM2GM_RMA);
#undef ACLSHMEM_SIM_GM2GM_RMA

/* Sized forms: elem_size elements of BITS bits. */
#define ACLSHMEM_SIM_GM2GM_SIZED(BITS)                                                                           \
    ACLSHMEM_DEVICE void aclshmem_put##BITS(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_put" #BITS, 0, dst, src, (uint64_t)elem_size * (BITS / 8), pe, -1, 0, 0);       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_get##BITS(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_get" #BITS, 1, dst, src, (uint64_t)elem_size * (BITS / 8), pe, -1, 0, 0);       \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_put##BITS##_nbi(__gm__ void *dst, __gm__ void *src, uint32_t elem_size,      \
                                                  int32_t pe)                                                  \
    {                                                                                                          \
        aclsimd_copy("aclshmem_put" #BITS "_nbi", 0, dst, src, (uint64_t)elem_size * (BITS / 8), pe, -1, 0, 0); \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_get##BITS##_nbi(__gm__ void *dst, __gm__ void *src, uint32_t elem_size,      \
                                                  int32_t pe)                                                  \
    {                                                                                                          \
        aclsimd_copy("aclshmem_get" #BITS "_nbi", 1, dst, src, (uint64_t)elem_size * (BITS / 8), pe, -1, 0, 0); \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_iput##BITS(__gm__ void *dest, __gm__ void *source, ptrdiff_t dst,            \
                                             ptrdiff_t sst, size_t nelems, int pe)                             \
    {                                                                                                          \
        non_contiguous_copy_param p = {(uint32_t)nelems, 1, (uint32_t)sst, (uint32_t)dst};                     \
        aclsimd_copy_strided("aclshmem_iput" #BITS, 0, dest, source, &p, BITS / 8, pe);                        \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_iget##BITS(__gm__ void *dest, __gm__ void *source, ptrdiff_t dst,            \
                                             ptrdiff_t sst, size_t nelems, int pe)                             \
    {                                                                                                          \
        non_contiguous_copy_param p = {(uint32_t)nelems, 1, (uint32_t)sst, (uint32_t)dst};                     \
        aclsimd_copy_strided("aclshmem_iget" #BITS, 1, dest, source, &p, BITS / 8, pe);                        \
    }
ACLSHMEM_SIZE_FUNC(ACLSHMEM_SIM_GM2GM_SIZED);
#undef ACLSHMEM_SIM_GM2GM_SIZED

/* Bytes. */
ACLSHMEM_DEVICE void aclshmem_putmem(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe)
{
    aclsimd_copy("aclshmem_putmem", 0, dst, src, elem_size, pe, -1, 0, 0);
}
ACLSHMEM_DEVICE void aclshmem_getmem(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe)
{
    aclsimd_copy("aclshmem_getmem", 1, dst, src, elem_size, pe, -1, 0, 0);
}
ACLSHMEM_DEVICE void aclshmem_putmem_nbi(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe)
{
    aclsimd_copy("aclshmem_putmem_nbi", 0, dst, src, elem_size, pe, -1, 0, 0);
}
ACLSHMEM_DEVICE void aclshmem_getmem_nbi(__gm__ void *dst, __gm__ void *src, uint32_t elem_size, int32_t pe)
{
    aclsimd_copy("aclshmem_getmem_nbi", 1, dst, src, elem_size, pe, -1, 0, 0);
}

/* The block's MTE staging buffer (`ub_size` bytes at UB offset `offset`; both 32-byte aligned). */
ACLSHMEM_DEVICE void aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id)
{
    aclsimd_set_mte_config(offset, ub_size, sync_id);
}

#endif /* SHMEM_RS_CANN_DEVICE_GM2GM_RMA_H */
