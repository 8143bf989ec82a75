/* host/data_plane/shmem_host_p2p_sync.h (shmem-rs): CANN SHMEM's host point-to-point
 * synchronisation, as CANN declares it. A host wait or test runs after the active instance's
 * default-stream work and writes its result through res_out. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_P2P_SYNC_H
#define SHMEM_RS_CANN_SHMEM_HOST_P2P_SYNC_H

#include "acl/acl.h"
#include "host/shmem_host_def.h"

/* ACLSHMEM_P2P_SYNC_TYPE_FUNC, CANN's 10 point-to-point types: host_device/shmem_common_types.h. */

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API uint64_t util_get_ffts_config(void);
ACLSHMEM_HOST_API void aclshmemx_handle_wait(struct aclshmem_handle_t handle, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_signal_wait_until_on_stream(int32_t *sig_addr, int cmp, int32_t cmp_val,
                                                             aclrtStream stream);
#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
ACLSHMEM_HOST_API void aclshmem_signal_wait_until(int32_t *sig_addr, int cmp, int32_t cmp_val);

#define ACLSHMEM_P2P_DECLS(NAME, TYPE)                                                                            \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value);                      \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait(TYPE *ivar, TYPE cmp_value);                                     \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems, const int *status, int cmp, \
                                                            TYPE cmp_value);                                       \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems, const int *status, int cmp, \
                                                            TYPE cmp_value, size_t *res_out);                      \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems, size_t *indices,           \
                                                             const int *status, int cmp, TYPE cmp_value,           \
                                                             size_t *res_out);                                     \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems, const int *status,   \
                                                                   int cmp, TYPE *cmp_values);                     \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, const int *status,   \
                                                                   int cmp, TYPE *cmp_values, size_t *res_out);    \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, size_t *indices,    \
                                                                    const int *status, int cmp, TYPE *cmp_values,  \
                                                                    size_t *res_out);                              \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test(TYPE *ivars, int cmp, TYPE cmp_value, int *res_out);             \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, int cmp,      \
                                                      TYPE cmp_value, size_t *res_out);                            \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices,                \
                                                       const int *status, int cmp, TYPE cmp_value, size_t *res_out); \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, \
                                                             TYPE *cmp_values, int *res_out);                      \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_any_vector(TYPE *ivars, size_t nelems, const int *status, int cmp, \
                                                             TYPE *cmp_values, size_t *res_out);                   \
    ACLSHMEM_HOST_API void aclshmem_##NAME##_test_some_vector(TYPE *ivars, size_t nelems, size_t *indices,         \
                                                              const int *status, int cmp, TYPE *cmp_values,        \
                                                              size_t *res_out)
ACLSHMEM_P2P_SYNC_TYPE_FUNC(ACLSHMEM_P2P_DECLS);
#undef ACLSHMEM_P2P_DECLS
#endif /* !ACLSHMEM_KERNEL_TU */

#ifdef __cplusplus
}
#endif

/* CANN's shmem_ and shmemx_ aliases (macros, not symbols). */
#define shmemx_get_ffts_config util_get_ffts_config
#define shmem_handle_wait aclshmemx_handle_wait

#endif /* SHMEM_RS_CANN_SHMEM_HOST_P2P_SYNC_H */
