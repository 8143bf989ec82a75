/* host/data_plane/shmem_host_rma.h (shmem-rs): CANN SHMEM's host RMA, as CANN declares it.
 * A host RMA call is a kernel launched on the active instance's default stream (or the stream
 * given): it returns at once and completes in stream order; the barriers synchronise the default
 * stream. So far shmem-rs exports the contiguous typed, sized and byte forms, the `_on_stream`
 * byte forms, aclshmemx_quiet_on_stream, the UB configuration calls and aclshmem_ptr; the strided
 * forms are not yet part of it. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_RMA_H
#define SHMEM_RS_CANN_SHMEM_HOST_RMA_H

#include "acl/acl.h"
#include "host/shmem_host_def.h"

/* CANN's 11 host RMA types: NAME, TYPE. */
#define ACLSHMEM_TYPE_FUNC(FUNC) \
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
    FUNC(char, char)

#ifdef __cplusplus
extern "C" {
#endif

#define ACLSHMEM_TYPE_PUT(NAME, TYPE) ACLSHMEM_HOST_API void aclshmem_##NAME##_put(TYPE *dest, TYPE *source, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_PUT);
#undef ACLSHMEM_TYPE_PUT
#define ACLSHMEM_TYPE_PUT_NBI(NAME, TYPE) \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_put_nbi(TYPE *dest, TYPE *source, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_PUT_NBI);
#undef ACLSHMEM_TYPE_PUT_NBI
#define ACLSHMEM_TYPE_GET(NAME, TYPE) ACLSHMEM_HOST_API void aclshmem_##NAME##_get(TYPE *dest, TYPE *source, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_GET);
#undef ACLSHMEM_TYPE_GET
#define ACLSHMEM_TYPE_GET_NBI(NAME, TYPE) \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_get_nbi(TYPE *dest, TYPE *source, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_GET_NBI);
#undef ACLSHMEM_TYPE_GET_NBI
#define ACLSHMEM_TYPE_P(NAME, TYPE) ACLSHMEM_HOST_API void aclshmem_##NAME##_p(TYPE *dst, const TYPE value, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_P);
#undef ACLSHMEM_TYPE_P
#define ACLSHMEM_TYPE_G(NAME, TYPE) ACLSHMEM_HOST_API TYPE aclshmem_##NAME##_g(TYPE *src, int32_t pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_G);
#undef ACLSHMEM_TYPE_G

ACLSHMEM_HOST_API void aclshmem_putmem(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_getmem(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_putmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmem_getmem_nbi(void *dst, void *src, size_t elem_size, int32_t pe);
ACLSHMEM_HOST_API void aclshmemx_getmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_putmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_quiet_on_stream(aclrtStream stream);
ACLSHMEM_HOST_API void *aclshmem_ptr(void *ptr, int pe);

/* The sized forms: elem_size elements of BITS bits (8, 16, 32, 64, 128). */
#define ACLSHMEM_SIZE_FUNC(FUNC) FUNC(8); FUNC(16); FUNC(32); FUNC(64); FUNC(128)
#define ACLSHMEM_PUT_SIZE(BITS) ACLSHMEM_HOST_API void aclshmem_put##BITS(void *dst, void *src, uint32_t elem_size, int32_t pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_PUT_SIZE);
#undef ACLSHMEM_PUT_SIZE
#define ACLSHMEM_PUT_SIZE_NBI(BITS) \
    ACLSHMEM_HOST_API void aclshmem_put##BITS##_nbi(void *dst, void *src, uint32_t elem_size, int32_t pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_PUT_SIZE_NBI);
#undef ACLSHMEM_PUT_SIZE_NBI
#define ACLSHMEM_GET_SIZE(BITS) ACLSHMEM_HOST_API void aclshmem_get##BITS(void *dst, void *src, uint32_t elem_size, int32_t pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_GET_SIZE);
#undef ACLSHMEM_GET_SIZE
#define ACLSHMEM_GET_SIZE_NBI(BITS) \
    ACLSHMEM_HOST_API void aclshmem_get##BITS##_nbi(void *dst, void *src, uint32_t elem_size, int32_t pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_GET_SIZE_NBI);
#undef ACLSHMEM_GET_SIZE_NBI

/* The engines' UB staging configurations (accepted; the simulator stages nothing). */
ACLSHMEM_HOST_API int aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);
ACLSHMEM_HOST_API int aclshmemx_set_sdma_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);
ACLSHMEM_HOST_API int aclshmemx_set_rdma_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);
ACLSHMEM_HOST_API int aclshmemx_set_udma_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);

#ifdef __cplusplus
}
#endif

/* CANN's shmem_* aliases of the typed puts (macros, not symbols). */
#define shmem_put_float_mem aclshmem_float_put
#define shmem_put_double_mem aclshmem_double_put
#define shmem_put_int8_mem aclshmem_int8_put
#define shmem_put_int16_mem aclshmem_int16_put
#define shmem_put_int32_mem aclshmem_int32_put
#define shmem_put_int64_mem aclshmem_int64_put
#define shmem_put_uint8_mem aclshmem_uint8_put
#define shmem_put_uint16_mem aclshmem_uint16_put
#define shmem_put_uint32_mem aclshmem_uint32_put
#define shmem_put_uint64_mem aclshmem_uint64_put
#define shmem_put_char_mem aclshmem_char_put

#endif /* SHMEM_RS_CANN_SHMEM_HOST_RMA_H */
