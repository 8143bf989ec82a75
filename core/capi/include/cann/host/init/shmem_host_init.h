/* host/init/shmem_host_init.h (shmem-rs): init, finalize, information, TLS, exit and the
 * multi-instance context, as CANN SHMEM declares them. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_INIT_H
#define SHMEM_RS_CANN_SHMEM_HOST_INIT_H

#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API int aclshmemx_init_status(void);
ACLSHMEM_HOST_API int aclshmemx_get_uniqueid(aclshmemx_uniqueid_t *uid);
ACLSHMEM_HOST_API int aclshmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size,
                                                       aclshmemx_uniqueid_t *uid, aclshmemx_init_attr_t *aclshmem_attr);
ACLSHMEM_HOST_API int aclshmemx_init_attr(aclshmemx_bootstrap_t bootstrap_flags, aclshmemx_init_attr_t *attributes);
ACLSHMEM_HOST_API int aclshmem_finalize(void);
ACLSHMEM_HOST_API int aclshmemx_finalize(uint64_t instance_id);
ACLSHMEM_HOST_API void aclshmem_info_get_version(int *major, int *minor);
ACLSHMEM_HOST_API void aclshmem_info_get_name(char *name);
ACLSHMEM_HOST_API int32_t aclshmemx_set_config_store_tls_key(const char *tls_pk, const uint32_t tls_pk_len,
                                                             const char *tls_pk_pw, const uint32_t tls_pk_pw_len,
                                                             const aclshmem_decrypt_handler decrypt_handler);
ACLSHMEM_HOST_API void aclshmem_global_exit(int status);
ACLSHMEM_HOST_API int32_t aclshmemx_set_conf_store_tls(bool enable, const char *tls_info, const uint32_t tls_info_len);
#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
ACLSHMEM_HOST_API aclshmem_instance_ctx *aclshmemx_instance_ctx_get(void);
ACLSHMEM_HOST_API int aclshmemx_instance_ctx_set(uint64_t instance_id);
#endif /* !ACLSHMEM_KERNEL_TU */


/* CANN's shmem_* aliases of these calls (macros, not symbols). */
#define shmem_init_status aclshmemx_init_status
#define shmem_set_attr_uniqueid_args aclshmemx_set_attr_uniqueid_args
#define shmem_init_attr aclshmemx_init_attr
#define shmem_finalize aclshmem_finalize
#define shmem_info_get_version aclshmem_info_get_version
#define shmem_info_get_name aclshmem_info_get_name
#define shmem_set_config_store_tls_key aclshmemx_set_config_store_tls_key
#define shmem_global_exit aclshmem_global_exit
#define shmem_set_conf_store_tls aclshmemx_set_conf_store_tls

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_INIT_H */
