/* device/shmem_def.h (shmem-rs): CANN SHMEM's device-side definitions for kernels compiled as
 * host C++ (CPU debug) and run on the simulator's AI cores: the kernel and device function
 * markers, UB constants, non_contiguous_copy_param, the type lists of the typed families, and
 * the simulator's device entries (libshmem.so) the device headers are written over. Written by
 * shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_DEF_H
#define SHMEM_RS_CANN_DEVICE_DEF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernel_operator.h"
#include "host_device/shmem_common_types.h"

#define ACLSHMEM_DEVICE __attribute__((always_inline)) __aicore__ inline
#define ACLSHMEM_GLOBAL __global__ __aicore__
#define ACLSHMEM_GLOBAL_VECTOR [[bisheng::core_ratio(0, 1)]] __global__ __aicore__

/* The vector cores of one NPU, and the UB's layout rules. */
#define ACLSHMEM_MAX_AIV_PER_NPU 48
constexpr uint64_t ACLSHMEM_INTERNAL_UB_BUF_START_ADDR = 188 * 1024;
constexpr uint32_t UB_ALIGN_SIZE = 32;
constexpr uint32_t UB_ALIGN_SIZE_64 = 64;

/* `repeat` rows of `length` elements, rows `src_ld` and `dst_ld` elements apart. */
struct non_contiguous_copy_param {
    uint32_t repeat;
    uint32_t length;
    uint32_t src_ld;
    uint32_t dst_ld;
};

/* The 13 device RMA types (NAME, TYPE). */
#define ACLSHMEM_TYPE_FUNC(FUNC) \
    FUNC(half, half);            \
    FUNC(float, float);          \
    FUNC(double, double);        \
    FUNC(int8, int8_t);          \
    FUNC(int16, int16_t);        \
    FUNC(int32, int32_t);        \
    FUNC(int64, int64_t);        \
    FUNC(uint8, uint8_t);        \
    FUNC(uint16, uint16_t);      \
    FUNC(uint32, uint32_t);      \
    FUNC(uint64, uint64_t);      \
    FUNC(char, char);            \
    FUNC(bfloat16, bfloat16_t)


#define ACLSHMEM_SIZE_FUNC(FUNC) \
    FUNC(8);                     \
    FUNC(16);                    \
    FUNC(32);                    \
    FUNC(64);                    \
    FUNC(128)

extern "C" {
/* The simulator's device entries: byte-level forms of the device API, acting on the block the
 * calling thread runs. A UB operand is its offset into the UB (a value below 192 KiB). */
void aclsimd_copy(const char *call, int get, void *dst, const void *src, uint64_t bytes, int pe, int64_t ub_off,
                  uint32_t ub_size, uint32_t sync_id);
void aclsimd_copy_strided(const char *call, int get, void *dst, const void *src,
                          const struct non_contiguous_copy_param *param, uint32_t elem, int pe);
void aclsimd_p(const char *call, void *dst, const void *value, uint32_t width, int pe);
void aclsimd_g(const char *call, const void *src, void *value, uint32_t width, int pe);
void aclsimd_signal_op(int32_t *sig, int32_t signal, int op, int pe);
int aclsimd_test(const char *call, const void *ivar, int kind, uint32_t width, int cmp, uint64_t value,
                 uint64_t *seen);
int aclsimd_backoff(const char *call, uint64_t *state);
uint64_t aclsimd_atomic(const char *call, void *addr, int kind, uint32_t width, int op, uint64_t a, uint64_t b,
                        int pe);
void aclsimd_quiet(void);
void aclsimd_barrier(int team);
void aclsimd_barrier_all(void);
int aclsimd_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);
void aclsimd_util_set_ffts_config(uint64_t config);
int aclsimd_team_pe_mapping(int team, int pe);
void *aclsimd_ptr(void *ptr, int pe);
void aclsimd_instance_ctx_set(uint64_t id);
uint64_t aclsimd_instance_ctx_get(void);
}

namespace aclshmem_sim {
/* How aclsimd_test and aclsimd_atomic read an element: signed, unsigned, float, half, bfloat16. */
template <typename T>
struct kind {
    static const int value = std::is_floating_point<T>::value ? 2 : (std::is_signed<T>::value ? 0 : 1);
};
template <>
struct kind<half> {
    static const int value = 3;
};
template <>
struct kind<bfloat16_t> {
    static const int value = 4;
};
template <typename T>
inline uint64_t bits(T v)
{
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T>
inline T from_bits(uint64_t b)
{
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
/* The UB offset a `__ubuf__` pointer names. */
template <typename T>
inline int64_t ub(__ubuf__ T *p)
{
    return (int64_t)ACLSHMEM_SIM_UB_OFFSET(p);
}
inline const void *ub_operand(uint64_t offset) { return (const void *)(uintptr_t)offset; }
} // namespace aclshmem_sim

#endif /* SHMEM_RS_CANN_DEVICE_DEF_H */
