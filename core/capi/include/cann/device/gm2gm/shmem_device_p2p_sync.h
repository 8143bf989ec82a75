/* device/gm2gm/shmem_device_p2p_sync.h (shmem-rs): CANN SHMEM's device point-to-point
 * synchronisation: aclshmemx_signal_op, aclshmem_signal_wait_until and the wait/test family on
 * CANN's 10 point-to-point types. The word waited on may be this PE's symmetric object or any
 * PE's copy reached through aclshmem_ptr. A wait reads the word, then yields and sleeps a little
 * longer each time (so that cores that outnumber the CPUs leave them to the others); it ends
 * with the launch when another block fails, and fails after SHMEM_TIMEOUT seconds. Written by
 * shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_P2P_SYNC_H
#define SHMEM_RS_CANN_DEVICE_P2P_SYNC_H

#include "device/shmem_def.h"

namespace aclshmem_sim {
template <typename T>
inline int test(const char *call, const T *ivar, int cmp, T value)
{
    return aclsimd_test(call, (const void *)ivar, kind<T>::value, sizeof(T), cmp, bits(value), nullptr);
}
/* Waits until `ready()`; false when the wait ended without it (the launch failed). */
template <typename F>
inline bool wait(const char *call, F ready)
{
    uint64_t state = 0;
    while (!ready()) {
        if (!aclsimd_backoff(call, &state)) return false;
    }
    return true;
}
inline bool included(const int *status, size_t i) { return status == nullptr || status[i] == 0; }
} // namespace aclshmem_sim

/* SET (a store, not atomic) or ADD (atomic) on PE `pe`'s copy of the signal word. */
ACLSHMEM_DEVICE void aclshmemx_signal_op(__gm__ int32_t *sig_addr, int32_t signal, int sig_op, int pe)
{
    aclsimd_signal_op(sig_addr, signal, sig_op, pe);
}

/* Waits until the signal word compares `cmp` to `cmp_val`; returns the value that satisfied it. */
ACLSHMEM_DEVICE int32_t aclshmem_signal_wait_until(__gm__ int32_t *sig_addr, int cmp, int32_t cmp_val)
{
    uint64_t seen = 0;
    const char *call = "aclshmem_signal_wait_until";
    aclshmem_sim::wait(call, [&] {
        return aclsimd_test(call, sig_addr, 0, sizeof(int32_t), cmp, aclshmem_sim::bits(cmp_val), &seen) != 0;
    });
    return (int32_t)(uint32_t)seen;
}

#define ACLSHMEM_SIM_P2P(NAME, TYPE)                                                                             \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_wait_until(__gm__ TYPE *ivar, int cmp, TYPE cmp_value)              \
    {                                                                                                          \
        const char *call = "aclshmem_" #NAME "_wait_until";                                                    \
        aclshmem_sim::wait(call, [&] { return aclshmem_sim::test(call, ivar, cmp, cmp_value) != 0; });         \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_wait(__gm__ TYPE *ivar, TYPE cmp_value)                             \
    {                                                                                                          \
        const char *call = "aclshmem_" #NAME "_wait";                                                          \
        aclshmem_sim::wait(call, [&] { return aclshmem_sim::test(call, ivar, ACLSHMEM_CMP_NE, cmp_value) != 0; }); \
    }                                                                                                          \
    ACLSHMEM_DEVICE int aclshmem_##NAME##_test(__gm__ TYPE *ivars, int cmp, TYPE cmp_value)                    \
    {                                                                                                          \
        return aclshmem_sim::test("aclshmem_" #NAME "_test", ivars, cmp, cmp_value);                           \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_test_any(__gm__ TYPE *ivars, size_t nelems, __gm__ const int *status, \
                                                      int cmp, TYPE cmp_value)                                 \
    {                                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i) &&                                                           \
                aclshmem_sim::test("aclshmem_" #NAME "_test_any", ivars + i, cmp, cmp_value))                  \
                return i;                                                                                      \
        return SIZE_MAX;                                                                                       \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_test_any_vector(__gm__ TYPE *ivars, size_t nelems,                \
                                                             __gm__ const int *status, int cmp,                \
                                                             __gm__ TYPE *cmp_values)                          \
    {                                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i) &&                                                           \
                aclshmem_sim::test("aclshmem_" #NAME "_test_any_vector", ivars + i, cmp, cmp_values[i]))       \
                return i;                                                                                      \
        return SIZE_MAX;                                                                                       \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_test_some(__gm__ TYPE *ivars, size_t nelems, __gm__ size_t *indices, \
                                                       __gm__ const int *status, int cmp, TYPE cmp_value)      \
    {                                                                                                          \
        size_t n = 0;                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i) &&                                                           \
                aclshmem_sim::test("aclshmem_" #NAME "_test_some", ivars + i, cmp, cmp_value))                 \
                indices[n++] = i;                                                                              \
        return n;                                                                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_test_some_vector(__gm__ TYPE *ivars, size_t nelems,               \
                                                              __gm__ size_t *indices, __gm__ const int *status, \
                                                              int cmp, __gm__ TYPE *cmp_values)                \
    {                                                                                                          \
        size_t n = 0;                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i) &&                                                           \
                aclshmem_sim::test("aclshmem_" #NAME "_test_some_vector", ivars + i, cmp, cmp_values[i]))      \
                indices[n++] = i;                                                                              \
        return n;                                                                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE int aclshmem_##NAME##_test_all_vector(__gm__ TYPE *ivars, size_t nelems,                   \
                                                          __gm__ const int *status, int cmp,                   \
                                                          __gm__ TYPE *cmp_values)                             \
    {                                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i) &&                                                           \
                !aclshmem_sim::test("aclshmem_" #NAME "_test_all_vector", ivars + i, cmp, cmp_values[i]))      \
                return 0;                                                                                      \
        return 1;                                                                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_wait_until_all(__gm__ TYPE *ivars, size_t nelems,                   \
                                                          __gm__ const int *status, int cmp, TYPE cmp_value)   \
    {                                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i)) aclshmem_##NAME##_wait_until(ivars + i, cmp, cmp_value);    \
    }                                                                                                          \
    ACLSHMEM_DEVICE void aclshmem_##NAME##_wait_until_all_vector(__gm__ TYPE *ivars, size_t nelems,            \
                                                                 __gm__ const int *status, int cmp,            \
                                                                 __gm__ TYPE *cmp_values)                      \
    {                                                                                                          \
        for (size_t i = 0; i < nelems; i++)                                                                    \
            if (aclshmem_sim::included(status, i)) aclshmem_##NAME##_wait_until(ivars + i, cmp, cmp_values[i]); \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_wait_until_any(__gm__ TYPE *ivars, size_t nelems,                 \
                                                            __gm__ const int *status, int cmp, TYPE cmp_value) \
    {                                                                                                          \
        size_t any = 0, found = SIZE_MAX;                                                                      \
        for (size_t i = 0; i < nelems; i++) any += aclshmem_sim::included(status, i);                          \
        if (any == 0) return SIZE_MAX;                                                                         \
        aclshmem_sim::wait("aclshmem_" #NAME "_wait_until_any", [&] {                                          \
            found = aclshmem_##NAME##_test_any(ivars, nelems, status, cmp, cmp_value);                         \
            return found != SIZE_MAX;                                                                          \
        });                                                                                                    \
        return found;                                                                                          \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_wait_until_any_vector(__gm__ TYPE *ivars, size_t nelems,          \
                                                                   __gm__ const int *status, int cmp,          \
                                                                   __gm__ TYPE *cmp_values)                    \
    {                                                                                                          \
        size_t any = 0, found = SIZE_MAX;                                                                      \
        for (size_t i = 0; i < nelems; i++) any += aclshmem_sim::included(status, i);                          \
        if (any == 0) return SIZE_MAX;                                                                         \
        aclshmem_sim::wait("aclshmem_" #NAME "_wait_until_any_vector", [&] {                                   \
            found = aclshmem_##NAME##_test_any_vector(ivars, nelems, status, cmp, cmp_values);                 \
            return found != SIZE_MAX;                                                                          \
        });                                                                                                    \
        return found;                                                                                          \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_wait_until_some(__gm__ TYPE *ivars, size_t nelems,                \
                                                             __gm__ size_t *indices, __gm__ const int *status, \
                                                             int cmp, TYPE cmp_value)                          \
    {                                                                                                          \
        size_t any = 0, n = 0;                                                                                 \
        for (size_t i = 0; i < nelems; i++) any += aclshmem_sim::included(status, i);                          \
        if (any == 0) return 0;                                                                                \
        aclshmem_sim::wait("aclshmem_" #NAME "_wait_until_some", [&] {                                         \
            n = aclshmem_##NAME##_test_some(ivars, nelems, indices, status, cmp, cmp_value);                   \
            return n != 0;                                                                                     \
        });                                                                                                    \
        return n;                                                                                              \
    }                                                                                                          \
    ACLSHMEM_DEVICE size_t aclshmem_##NAME##_wait_until_some_vector(__gm__ TYPE *ivars, size_t nelems,         \
                                                                    __gm__ size_t *indices,                    \
                                                                    __gm__ const int *status, int cmp,         \
                                                                    __gm__ TYPE *cmp_values)                   \
    {                                                                                                          \
        size_t any = 0, n = 0;                                                                                 \
        for (size_t i = 0; i < nelems; i++) any += aclshmem_sim::included(status, i);                          \
        if (any == 0) return 0;                                                                                \
        aclshmem_sim::wait("aclshmem_" #NAME "_wait_until_some_vector", [&] {                                  \
            n = aclshmem_##NAME##_test_some_vector(ivars, nelems, indices, status, cmp, cmp_values);           \
            return n != 0;                                                                                     \
        });                                                                                                    \
        return n;                                                                                              \
    }
ACLSHMEM_P2P_SYNC_TYPE_FUNC(ACLSHMEM_SIM_P2P);
#undef ACLSHMEM_SIM_P2P

#endif /* SHMEM_RS_CANN_DEVICE_P2P_SYNC_H */
