/* host/utils/shmem_log.h (shmem-rs): CANN SHMEM's logging and profiling calls, as CANN declares
 * them. The level is 0 DEBUG, 1 INFO, 2 WARN, 3 ERROR, 4 FATAL (SHMEM_LOG_LEVEL wins); the
 * simulator records no device cycle profiles, so aclshmemx_get_prof hands back NULL. Written by
 * shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_SHMEM_LOG_H
#define SHMEM_RS_CANN_SHMEM_LOG_H

#ifndef __cplusplus
#include <stdbool.h>
#endif
#include "host/shmem_host_def.h"
#include "host_device/shmem_common_types.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API int32_t aclshmemx_set_extern_logger(void (*func)(int level, const char *msg));
ACLSHMEM_HOST_API int32_t aclshmemx_set_log_level(int level);
ACLSHMEM_HOST_API void aclshmemx_show_prof(void);
ACLSHMEM_HOST_API void aclshmemx_get_prof(aclshmem_prof_pe_t **out_profs, bool verbose);

#ifdef __cplusplus
}
#endif

#define shmem_set_extern_logger aclshmemx_set_extern_logger
#define shmem_set_log_level aclshmemx_set_log_level

#endif /* SHMEM_RS_CANN_SHMEM_LOG_H */
