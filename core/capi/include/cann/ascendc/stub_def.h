/* stub_def.h (shmem-rs): what AscendC's CPU-debug mode defines so that kernel source compiles as
 * host C++: the NPU qualifiers, `GM_ADDR`, and the `half` and `bfloat16_t` element types.
 * Written by shmem-rs from AscendC's documented CPU-debug interface.
 *
 * `__ubuf__` is clang's `address_space(256)` on x86-64: an access through a `__ubuf__` pointer is
 * relative to the thread's GS base, which the simulator points at the running block's UB, so
 * `*(__ubuf__ int32_t*)(32)` is byte 32 of that block's UB, as on an AI core. Elsewhere (g++,
 * which has no address spaces in C++, or aarch64) it is empty: UB pointers are then plain
 * offsets that the SHMEM and AscendC calls of these headers translate, and a raw dereference of
 * one faults. Define ACLSHMEM_SIM_NO_UB_SEGMENT to choose the portable form on clang x86-64. */
#ifndef SHMEM_RS_ASCENDC_STUB_DEF_H
#define SHMEM_RS_ASCENDC_STUB_DEF_H

#include <stdint.h>
#include <string.h>

#define __global__
#define __aicore__
#define __gm__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __ssbuf__

#if defined(__clang__) && defined(__x86_64__) && !defined(ACLSHMEM_SIM_NO_UB_SEGMENT)
#define ACLSHMEM_SIM_UB_SEGMENT 1
#define __ubuf__ __attribute__((address_space(256)))
#else
#define ACLSHMEM_SIM_UB_SEGMENT 0
#define __ubuf__
#endif

#ifndef __CCE_KT_TEST__
#define __CCE_KT_TEST__ 1
#endif
#ifndef ASCENDC_CPU_DEBUG
#define ASCENDC_CPU_DEBUG 1
#endif

#define GM_ADDR __gm__ uint8_t *

/* The byte offset into the block's UB that a UB pointer names. */
#define ACLSHMEM_SIM_UB_OFFSET(p) ((uint64_t)(uintptr_t)(p))

#ifdef __cplusplus
/* IEEE binary16, as AscendC's `half`: stored as its 16 bits, computed in float. */
struct half {
    uint16_t bits;
    half() = default;
    half(float f) : bits(from_float(f)) {}
    half(double d) : bits(from_float((float)d)) {}
    half(int i) : bits(from_float((float)i)) {}
    operator float() const { return to_float(bits); }
    static half from_bits(uint16_t b) { half h; h.bits = b; return h; }
    static uint16_t from_float(float f)
    {
        uint32_t x;
        memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000u;
        int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
        uint32_t man = x & 0x7fffffu;
        if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
        if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
        if (exp <= 0) {
            if (exp < -10) return (uint16_t)sign;
            man |= 0x800000u;
            uint32_t shift = (uint32_t)(14 - exp);
            uint32_t h = man >> shift;
            uint32_t rest = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
            if (rest > halfway || (rest == halfway && (h & 1))) h++;
            return (uint16_t)(sign | h);
        }
        uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
        uint32_t rest = man & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    static float to_float(uint16_t h)
    {
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
        uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu, x;
        if (exp == 0) {
            if (man == 0) {
                x = sign;
            } else {
                exp = 1;
                while (!(man & 0x400u)) { man <<= 1; exp--; }
                man &= 0x3ffu;
                x = sign | ((exp + 127 - 15) << 23) | (man << 13);
            }
        } else if (exp == 31) {
            x = sign | 0x7f800000u | (man << 13);
        } else {
            x = sign | ((exp + 127 - 15) << 23) | (man << 13);
        }
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
};

/* bfloat16, as AscendC's `bfloat16_t`: the high 16 bits of a float (round to nearest even). */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    bfloat16_t(float f) : bits(from_float(f)) {}
    bfloat16_t(double d) : bits(from_float((float)d)) {}
    bfloat16_t(int i) : bits(from_float((float)i)) {}
    operator float() const
    {
        uint32_t x = (uint32_t)bits << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    static bfloat16_t from_bits(uint16_t b) { bfloat16_t v; v.bits = b; return v; }
    static uint16_t from_float(float f)
    {
        uint32_t x;
        memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
        return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
    }
};
typedef bfloat16_t bfloat16;
#endif /* __cplusplus */

#endif /* SHMEM_RS_ASCENDC_STUB_DEF_H */
