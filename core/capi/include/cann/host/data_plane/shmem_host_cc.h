/* host/data_plane/shmem_host_cc.h (shmem-rs): barriers, as CANN SHMEM declares them (the
 * `_on_stream` forms enqueue the barrier on the stream given). */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_CC_H
#define SHMEM_RS_CANN_SHMEM_HOST_CC_H

#include "acl/acl.h"
#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ACLSHMEM_KERNEL_TU /* kernel code has the device forms (device/) */
ACLSHMEM_HOST_API void aclshmem_barrier(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_barrier_all(void);
#endif /* !ACLSHMEM_KERNEL_TU */
ACLSHMEM_HOST_API void aclshmemx_barrier_on_stream(aclshmem_team_t team, aclrtStream stream);
ACLSHMEM_HOST_API void aclshmemx_barrier_all_on_stream(aclrtStream stream);
ACLSHMEM_HOST_API void aclshmem_sync(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_sync_all(void);

#ifdef __cplusplus
}
#endif

/* CANN's shmemx_* aliases (macros, not symbols). */
#define shmemx_barrier_on_stream aclshmemx_barrier_on_stream
#define shmemx_barrier_all_on_stream aclshmemx_barrier_all_on_stream

#endif /* SHMEM_RS_CANN_SHMEM_HOST_CC_H */
