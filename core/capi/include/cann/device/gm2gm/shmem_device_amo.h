/* device/gm2gm/shmem_device_amo.h (shmem-rs): CANN SHMEM's device atomics on PE `pe`'s copy of
 * an element, with CANN's type sets: atomic_add on int8, int16, int32, int64, uint32, uint64,
 * float, half and bfloat16; fetch_add, inc, fetch_inc, fetch and the bitwise operations on
 * 32- and 64-bit integers; set and swap also on float; compare_swap on 32- and 64-bit integers.
 * (CANN marks all but the 910-class adds Ascend950-only; the simulated cores have them all.)
 * Written by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_AMO_H
#define SHMEM_RS_CANN_DEVICE_AMO_H

#include "device/shmem_def.h"
#include "device/gm2gm/engine/shmem_device_mte.h"

#define ACLSHMEM_TYPE_FUNC_ATOMIC_ADD(FUNC) \
    FUNC(int8, int8_t);                     \
    FUNC(int16, int16_t);                   \
    FUNC(bfloat16, bfloat16_t);             \
    FUNC(half, half);                       \
    FUNC(int32, int32_t);                   \
    FUNC(float, float);                     \
    FUNC(uint32, uint32_t);                 \
    FUNC(uint64, uint64_t);                 \
    FUNC(int64, int64_t)
#define ACLSHMEM_TYPE_FUNC_ATOMIC_INT(FUNC) \
    FUNC(uint32, uint32_t);                 \
    FUNC(uint64, uint64_t);                 \
    FUNC(int32, int32_t);                   \
    FUNC(int64, int64_t)
#define ACLSHMEM_TYPE_FUNC_ATOMIC_SWAP(FUNC) \
    FUNC(uint32, uint32_t);                  \
    FUNC(uint64, uint64_t);                  \
    FUNC(int32, int32_t);                    \
    FUNC(int64, int64_t);                    \
    FUNC(float, float)

#define ACLSHMEM_SIM_ATOMIC_ADD(NAME, TYPE)                                                 \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_add(__gm__ TYPE *dst, TYPE value, int32_t pe) \
    {                                                                                     \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_add", dst, 4, value, TYPE(), pe); \
    }
ACLSHMEM_TYPE_FUNC_ATOMIC_ADD(ACLSHMEM_SIM_ATOMIC_ADD);
#undef ACLSHMEM_SIM_ATOMIC_ADD

#define ACLSHMEM_SIM_ATOMIC_INT(NAME, TYPE)                                                                  \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch_add(__gm__ TYPE *dest, TYPE value, int32_t pe)     \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch_add", dest, 4, value, 0, pe);   \
    }                                                                                                      \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_inc(__gm__ TYPE *dst, int32_t pe)                        \
    {                                                                                                      \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_inc", dst, 4, 1, 0, pe);                     \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch_inc(__gm__ TYPE *dest, int32_t pe)                 \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch_inc", dest, 4, 1, 0, pe);       \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch(__gm__ const TYPE *source, int32_t pe)             \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch", source, 0, 0, 0, pe);         \
    }                                                                                                      \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_and(__gm__ TYPE *dest, TYPE value, int32_t pe)           \
    {                                                                                                      \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_and", dest, 5, value, 0, pe);                \
    }                                                                                                      \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_or(__gm__ TYPE *dest, TYPE value, int32_t pe)            \
    {                                                                                                      \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_or", dest, 6, value, 0, pe);                 \
    }                                                                                                      \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_xor(__gm__ TYPE *dest, TYPE value, int32_t pe)           \
    {                                                                                                      \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_xor", dest, 7, value, 0, pe);                \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch_and(__gm__ TYPE *dest, TYPE value, int32_t pe)     \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch_and", dest, 5, value, 0, pe);   \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch_or(__gm__ TYPE *dest, TYPE value, int32_t pe)      \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch_or", dest, 6, value, 0, pe);    \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_fetch_xor(__gm__ TYPE *dest, TYPE value, int32_t pe)     \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_fetch_xor", dest, 7, value, 0, pe);   \
    }                                                                                                      \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_compare_swap(__gm__ TYPE *dest, TYPE cond, TYPE value,   \
                                                               int32_t pe)                                 \
    {                                                                                                      \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_compare_swap", dest, 3, cond, value, pe); \
    }
ACLSHMEM_TYPE_FUNC_ATOMIC_INT(ACLSHMEM_SIM_ATOMIC_INT);
#undef ACLSHMEM_SIM_ATOMIC_INT

#define ACLSHMEM_SIM_ATOMIC_SWAP(NAME, TYPE)                                                            \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_atomic_set(__gm__ TYPE *dest, TYPE value, int32_t pe)      \
    {                                                                                                 \
        aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_set", dest, 1, value, TYPE(), pe);      \
    }                                                                                                 \
    ACLSHMEM_DEVICE TYPE aclshmem_##NAME##_atomic_swap(__gm__ TYPE *dest, TYPE value, int32_t pe)     \
    {                                                                                                 \
        return aclshmem_sim::atomic<TYPE>("aclshmem_" #NAME "_atomic_swap", dest, 2, value, TYPE(), pe); \
    }
ACLSHMEM_TYPE_FUNC_ATOMIC_SWAP(ACLSHMEM_SIM_ATOMIC_SWAP);
#undef ACLSHMEM_SIM_ATOMIC_SWAP

#endif /* SHMEM_RS_CANN_DEVICE_AMO_H */
