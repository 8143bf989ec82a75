/* device/gm2gm/shmem_device_so.h (shmem-rs): CANN SHMEM's device put-with-signal: the data goes
 * to PE `pe`, then (once it is complete there) the signal word, an int32_t, is set or added
 * (ACLSHMEM_SIGNAL_SET, not atomic; ACLSHMEM_SIGNAL_ADD, atomic). Written by shmem-rs from
 * CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_SO_H
#define SHMEM_RS_CANN_DEVICE_SO_H

#include "device/shmem_def.h"

namespace aclshmem_sim {
inline void signal_after(__gm__ int32_t *sig_addr, int32_t signal, int sig_op, int pe)
{
    aclsimd_quiet();
    aclsimd_signal_op(sig_addr, signal, sig_op, pe);
}
} // namespace aclshmem_sim

ACLSHMEM_DEVICE void aclshmem_putmem_signal(__gm__ void *dst, __gm__ void *src, size_t elem_size,
                                            __gm__ int32_t *sig_addr, int32_t signal, int sig_op, int pe)
{
    aclsimd_copy("aclshmem_putmem_signal", 0, dst, src, elem_size, pe, -1, 0, 0);
    aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);
}
ACLSHMEM_DEVICE void aclshmem_putmem_signal_nbi(__gm__ void *dst, __gm__ void *src, size_t elem_size,
                                                __gm__ int32_t *sig_addr, int32_t signal, int sig_op, int pe)
{
    aclsimd_copy("aclshmem_putmem_signal_nbi", 0, dst, src, elem_size, pe, -1, 0, 0);
    aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);
}

#define ACLSHMEM_SIM_PUT_SIGNAL(NAME, TYPE, SUFFIX)                                                              \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_signal##SUFFIX(__gm__ TYPE *dst, __gm__ TYPE *src, size_t elem_size, \
                                                              __gm__ int32_t *sig_addr, int32_t signal, int sig_op, \
                                                              int pe)                                          \
    {                                                                                                          \
        aclsimd_copy("aclshmem_" #NAME "_put_signal" #SUFFIX, 0, dst, src, (uint64_t)elem_size * sizeof(TYPE), pe, \
                     -1, 0, 0);                                                                                \
        aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_signal##SUFFIX(AscendC::GlobalTensor<TYPE> dst,                 \
                                                              AscendC::GlobalTensor<TYPE> src, size_t elem_size, \
                                                              __gm__ int32_t *sig_addr, int32_t signal, int sig_op, \
                                                              int pe)                                          \
    {                                                                                                          \
        aclshmem_##NAME##_put_signal##SUFFIX(dst.GetPhyAddr(), src.GetPhyAddr(), elem_size, sig_addr, signal,   \
                                             sig_op, pe);                                                      \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_signal##SUFFIX(__gm__ TYPE *dst, __gm__ TYPE *src,              \
                                                              const non_contiguous_copy_param &copy_params,    \
                                                              __gm__ int32_t *sig_addr, int32_t signal, int sig_op, \
                                                              int pe)                                          \
    {                                                                                                          \
        aclsimd_copy_strided("aclshmem_" #NAME "_put_signal" #SUFFIX, 0, dst, src, &copy_params, sizeof(TYPE), \
                             pe);                                                                              \
        aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_put_signal##SUFFIX(AscendC::GlobalTensor<TYPE> dst,                 \
                                                              AscendC::GlobalTensor<TYPE> src,                 \
                                                              const non_contiguous_copy_param &copy_params,    \
                                                              __gm__ int32_t *sig_addr, int32_t signal, int sig_op, \
                                                              int pe)                                          \
    {                                                                                                          \
        aclshmem_##NAME##_put_signal##SUFFIX(dst.GetPhyAddr(), src.GetPhyAddr(), copy_params, sig_addr, signal, \
                                             sig_op, pe);                                                      \
    }
#define ACLSHMEM_SIM_PUT_SIGNAL_BLOCKING(NAME, TYPE) ACLSHMEM_SIM_PUT_SIGNAL(NAME, TYPE, )
#define ACLSHMEM_SIM_PUT_SIGNAL_NBI(NAME, TYPE) ACLSHMEM_SIM_PUT_SIGNAL(NAME, TYPE, _nbi)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_SIM_PUT_SIGNAL_BLOCKING);
ACLSHMEM_TYPE_FUNC(ACLSHMEM_SIM_PUT_SIGNAL_NBI);
#undef ACLSHMEM_SIM_PUT_SIGNAL_BLOCKING
#undef ACLSHMEM_SIM_PUT_SIGNAL_NBI
#undef ACLSHMEM_SIM_PUT_SIGNAL

#define ACLSHMEM_SIM_PUT_SIZE_SIGNAL(BITS)                                                                       \
    ACLSHMEM_DEVICE void aclshmem_put##BITS##_signal(__gm__ void *dst, __gm__ void *src, size_t nelems,        \
                                                     __gm__ int32_t *sig_addr, int32_t signal, int sig_op, int pe) \
    {                                                                                                          \
        aclsimd_copy("aclshmem_put" #BITS "_signal", 0, dst, src, (uint64_t)nelems * (BITS / 8), pe, -1, 0, 0); \
        aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_put##BITS##_signal_nbi(__gm__ void *dst, __gm__ void *src, size_t nelems,    \
                                                         __gm__ int32_t *sig_addr, int32_t signal, int sig_op,  \
                                                         int pe)                                               \
    {                                                                                                          \
        aclsimd_copy("aclshmem_put" #BITS "_signal_nbi", 0, dst, src, (uint64_t)nelems * (BITS / 8), pe, -1, 0, \
                     0);                                                                                       \
        aclshmem_sim::signal_after(sig_addr, signal, sig_op, pe);                                              \
    }
ACLSHMEM_SIZE_FUNC(ACLSHMEM_SIM_PUT_SIZE_SIGNAL);
#undef ACLSHMEM_SIM_PUT_SIZE_SIGNAL

#endif /* SHMEM_RS_CANN_DEVICE_SO_H */
