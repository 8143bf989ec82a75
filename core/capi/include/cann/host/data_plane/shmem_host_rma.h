/* host/data_plane/shmem_host_rma.h (shmem-rs): CANN SHMEM's host RMA header. So far it declares
 * only aclshmem_ptr; shmem-rs does not yet export the RMA families. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_RMA_H
#define SHMEM_RS_CANN_SHMEM_HOST_RMA_H

#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API void *aclshmem_ptr(void *ptr, int pe);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_RMA_H */
