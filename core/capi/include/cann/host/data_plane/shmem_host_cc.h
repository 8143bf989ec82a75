/* host/data_plane/shmem_host_cc.h (shmem-rs): barriers, as CANN SHMEM declares them (the
 * `_on_stream` forms are not yet exported by shmem-rs). */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_CC_H
#define SHMEM_RS_CANN_SHMEM_HOST_CC_H

#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API void aclshmem_barrier(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_barrier_all(void);
ACLSHMEM_HOST_API void aclshmem_sync(aclshmem_team_t team);
ACLSHMEM_HOST_API void aclshmem_sync_all(void);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_CC_H */
