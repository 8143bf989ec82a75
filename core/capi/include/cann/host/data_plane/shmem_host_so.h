/* host/data_plane/shmem_host_so.h (shmem-rs): CANN SHMEM's host put-with-signal and signal calls,
 * as CANN declares them. Each is a kernel on the active instance's default stream (or the stream
 * given): the data is written, then the signal word (an int32_t, whatever the pointer's type) is
 * updated with ACLSHMEM_SIGNAL_SET or ACLSHMEM_SIGNAL_ADD. Written by shmem-rs from CANN's
 * documented interface. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_SO_H
#define SHMEM_RS_CANN_SHMEM_HOST_SO_H

#include "acl/acl.h"
#include "host/shmem_host_def.h"
#include "host/data_plane/shmem_host_rma.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
#define ACLSHMEM_TYPE_PUT_SIGNAL(NAME, TYPE)                                                          \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_put_signal(TYPE *dst, TYPE *src, size_t elem_size, \
                                                        uint8_t *sig_addr, int32_t signal, int sig_op, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_PUT_SIGNAL);
#undef ACLSHMEM_TYPE_PUT_SIGNAL
#define ACLSHMEM_TYPE_PUT_SIGNAL_NBI(NAME, TYPE)                                                          \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_put_signal_nbi(TYPE *dst, TYPE *src, size_t elem_size, \
                                                            uint8_t *sig_addr, int32_t signal, int sig_op, int pe)
ACLSHMEM_TYPE_FUNC(ACLSHMEM_TYPE_PUT_SIGNAL_NBI);
#undef ACLSHMEM_TYPE_PUT_SIGNAL_NBI
#define ACLSHMEM_PUT_SIZE_SIGNAL(BITS)                                                        \
    ACLSHMEM_HOST_API void aclshmem_put##BITS##_signal(void *dst, void *src, size_t nelems, \
                                                       int32_t *sig_addr, int32_t signal, int sig_op, int pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_PUT_SIZE_SIGNAL);
#undef ACLSHMEM_PUT_SIZE_SIGNAL
#define ACLSHMEM_PUT_SIZE_SIGNAL_NBI(BITS)                                                        \
    ACLSHMEM_HOST_API void aclshmem_put##BITS##_signal_nbi(void *dst, void *src, size_t nelems, \
                                                           int32_t *sig_addr, int32_t signal, int sig_op, int pe)
ACLSHMEM_SIZE_FUNC(ACLSHMEM_PUT_SIZE_SIGNAL_NBI);
#undef ACLSHMEM_PUT_SIZE_SIGNAL_NBI
#endif /* !ACLSHMEM_KERNEL_TU */

ACLSHMEM_HOST_API void aclshmemx_putmem_signal_nbi(void *dst, void *src, size_t elem_size, void *sig_addr, int32_t signal,
                                                   int sig_op, int pe);
ACLSHMEM_HOST_API void aclshmemx_putmem_signal(void *dst, void *src, size_t elem_size, void *sig_addr, int32_t signal,
                                               int sig_op, int pe);
ACLSHMEM_HOST_API void aclshmemx_signal_op_on_stream(int32_t *sig_addr, int32_t signal, int sig_op, int pe,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

/* CANN's shmem_* aliases (macros, not symbols). CANN's own header maps shmem_put_double_mem_signal
 * to a misspelt name that does not link; here it names the double form. */
#define shmem_put_float_mem_signal aclshmem_float_put_signal
#define shmem_put_double_mem_signal aclshmem_double_put_signal
#define shmem_put_int8_mem_signal aclshmem_int8_put_signal
#define shmem_put_int16_mem_signal aclshmem_int16_put_signal
#define shmem_put_int32_mem_signal aclshmem_int32_put_signal
#define shmem_put_int64_mem_signal aclshmem_int64_put_signal
#define shmem_put_uint8_mem_signal aclshmem_uint8_put_signal
#define shmem_put_uint16_mem_signal aclshmem_uint16_put_signal
#define shmem_put_uint32_mem_signal aclshmem_uint32_put_signal
#define shmem_put_uint64_mem_signal aclshmem_uint64_put_signal
#define shmem_put_char_mem_signal aclshmem_char_put_signal
#define shmem_put_float_mem_signal_nbi aclshmem_float_put_signal_nbi
#define shmem_put_double_mem_signal_nbi aclshmem_double_put_signal_nbi
#define shmem_put_int8_mem_signal_nbi aclshmem_int8_put_signal_nbi
#define shmem_put_int16_mem_signal_nbi aclshmem_int16_put_signal_nbi
#define shmem_put_int32_mem_signal_nbi aclshmem_int32_put_signal_nbi
#define shmem_put_int64_mem_signal_nbi aclshmem_int64_put_signal_nbi
#define shmem_put_uint8_mem_signal_nbi aclshmem_uint8_put_signal_nbi
#define shmem_put_uint16_mem_signal_nbi aclshmem_uint16_put_signal_nbi
#define shmem_put_uint32_mem_signal_nbi aclshmem_uint32_put_signal_nbi
#define shmem_put_uint64_mem_signal_nbi aclshmem_uint64_put_signal_nbi
#define shmem_put_char_mem_signal_nbi aclshmem_char_put_signal_nbi
#define shmem_putmem_signal_nbi aclshmemx_putmem_signal_nbi
#define shmem_putmem_signal aclshmemx_putmem_signal

#endif /* SHMEM_RS_CANN_SHMEM_HOST_SO_H */
