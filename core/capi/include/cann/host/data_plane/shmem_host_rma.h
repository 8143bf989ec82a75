/* host/data_plane/shmem_host_rma.h (shmem-rs): CANN SHMEM's host RMA, as CANN declares it.
 * A host RMA call is a kernel launched on the active instance's default stream (or the stream
 * given): it returns at once and completes in stream order; the barriers synchronise the default
 * stream. Both sides are symmetric addresses; strides are in elements. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_RMA_H
#define SHMEM_RS_CANN_SHMEM_HOST_RMA_H

#include "acl/acl.h"
#include "host/shmem_host_def.h"

/* CANN's 11 host RMA types: NAME, TYPE. */
#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
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
#endif /* !ACLSHMEM_KERNEL_TU */

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
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
#define ACLSHMEM_TYPE_IPUT(NAME, TYPE) \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_iput(TYPE *dest, TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_IPUT);
#undef ACLSHMEM_TYPE_IPUT
#define ACLSHMEM_TYPE_IGET(NAME, TYPE) \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_iget(TYPE *dest, TYPE *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_IGET);
#undef ACLSHMEM_TYPE_IGET
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
#endif /* !ACLSHMEM_KERNEL_TU */
ACLSHMEM_HOST_API void aclshmemx_getmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_putmem_on_stream(void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_quiet_on_stream(aclrtStream stream);
#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
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
#define ACLSHMEM_IPUT_SIZE(BITS) \
    ACLSHMEM_HOST_API void aclshmem_iput##BITS(void *dest, void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_IPUT_SIZE);
#undef ACLSHMEM_IPUT_SIZE
#define ACLSHMEM_IGET_SIZE(BITS) \
    ACLSHMEM_HOST_API void aclshmem_iget##BITS(void *dest, void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_IGET_SIZE);
#undef ACLSHMEM_IGET_SIZE
#endif /* !ACLSHMEM_KERNEL_TU */

/* The engines' UB staging configurations (accepted; the simulator stages nothing). */
#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
ACLSHMEM_HOST_API int aclshmemx_set_mte_config(uint64_t offset, uint32_t ub_size, uint32_t sync_id);
#endif /* !ACLSHMEM_KERNEL_TU */
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

/* CANN's other shmem_* and shmemx_* aliases of the RMA calls. */
#define shmem_put_float_mem_nbi aclshmem_float_put_nbi
#define shmem_put_double_mem_nbi aclshmem_double_put_nbi
#define shmem_put_int8_mem_nbi aclshmem_int8_put_nbi
#define shmem_put_int16_mem_nbi aclshmem_int16_put_nbi
#define shmem_put_int32_mem_nbi aclshmem_int32_put_nbi
#define shmem_put_int64_mem_nbi aclshmem_int64_put_nbi
#define shmem_put_uint8_mem_nbi aclshmem_uint8_put_nbi
#define shmem_put_uint16_mem_nbi aclshmem_uint16_put_nbi
#define shmem_put_uint32_mem_nbi aclshmem_uint32_put_nbi
#define shmem_put_uint64_mem_nbi aclshmem_uint64_put_nbi
#define shmem_put_char_mem_nbi aclshmem_char_put_nbi
#define shmem_get_float_mem aclshmem_float_get
#define shmem_get_double_mem aclshmem_double_get
#define shmem_get_int8_mem aclshmem_int8_get
#define shmem_get_int16_mem aclshmem_int16_get
#define shmem_get_int32_mem aclshmem_int32_get
#define shmem_get_int64_mem aclshmem_int64_get
#define shmem_get_uint8_mem aclshmem_uint8_get
#define shmem_get_uint16_mem aclshmem_uint16_get
#define shmem_get_uint32_mem aclshmem_uint32_get
#define shmem_get_uint64_mem aclshmem_uint64_get
#define shmem_get_char_mem aclshmem_char_get
#define shmem_get_float_mem_nbi aclshmem_float_get_nbi
#define shmem_get_double_mem_nbi aclshmem_double_get_nbi
#define shmem_get_int8_mem_nbi aclshmem_int8_get_nbi
#define shmem_get_int16_mem_nbi aclshmem_int16_get_nbi
#define shmem_get_int32_mem_nbi aclshmem_int32_get_nbi
#define shmem_get_int64_mem_nbi aclshmem_int64_get_nbi
#define shmem_get_uint8_mem_nbi aclshmem_uint8_get_nbi
#define shmem_get_uint16_mem_nbi aclshmem_uint16_get_nbi
#define shmem_get_uint32_mem_nbi aclshmem_uint32_get_nbi
#define shmem_get_uint64_mem_nbi aclshmem_uint64_get_nbi
#define shmem_get_char_mem_nbi aclshmem_char_get_nbi
#define shmem_float_p aclshmem_float_p
#define shmem_double_p aclshmem_double_p
#define shmem_int8_p aclshmem_int8_p
#define shmem_int16_p aclshmem_int16_p
#define shmem_int32_p aclshmem_int32_p
#define shmem_int64_p aclshmem_int64_p
#define shmem_uint8_p aclshmem_uint8_p
#define shmem_uint16_p aclshmem_uint16_p
#define shmem_uint32_p aclshmem_uint32_p
#define shmem_uint64_p aclshmem_uint64_p
#define shmem_char_p aclshmem_char_p
#define shmem_float_g aclshmem_float_g
#define shmem_double_g aclshmem_double_g
#define shmem_int8_g aclshmem_int8_g
#define shmem_int16_g aclshmem_int16_g
#define shmem_int32_g aclshmem_int32_g
#define shmem_int64_g aclshmem_int64_g
#define shmem_uint8_g aclshmem_uint8_g
#define shmem_uint16_g aclshmem_uint16_g
#define shmem_uint32_g aclshmem_uint32_g
#define shmem_uint64_g aclshmem_uint64_g
#define shmem_char_g aclshmem_char_g
#define shmem_ptr aclshmem_ptr
#define shmem_putmem aclshmem_putmem
#define shmem_getmem aclshmem_getmem
#define shmem_putmem_nbi aclshmem_putmem_nbi
#define shmem_getmem_nbi aclshmem_getmem_nbi
#define shmemx_getmem_on_stream aclshmemx_getmem_on_stream
#define shmemx_putmem_on_stream aclshmemx_putmem_on_stream
#define shmem_mte_set_ub_params aclshmemx_set_mte_config

#endif /* SHMEM_RS_CANN_SHMEM_HOST_RMA_H */
