/* host/mem/shmem_host_heap.h (shmem-rs): the symmetric heap, as CANN SHMEM declares it. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_HEAP_H
#define SHMEM_RS_CANN_SHMEM_HOST_HEAP_H

#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API void *aclshmem_malloc(size_t size);
ACLSHMEM_HOST_API void *aclshmem_calloc(size_t nmemb, size_t size);
ACLSHMEM_HOST_API void *aclshmem_align(size_t alignment, size_t size);
ACLSHMEM_HOST_API void aclshmem_free(void *ptr);
ACLSHMEM_HOST_API void *aclshmemx_malloc(size_t size, aclshmem_mem_type_t mem_type ACLSHMEM_DEFAULT_ARG(DEVICE_SIDE));
ACLSHMEM_HOST_API void *aclshmemx_calloc(size_t count, size_t size,
                                         aclshmem_mem_type_t mem_type ACLSHMEM_DEFAULT_ARG(DEVICE_SIDE));
ACLSHMEM_HOST_API void *aclshmemx_align(size_t alignment, size_t size,
                                        aclshmem_mem_type_t mem_type ACLSHMEM_DEFAULT_ARG(DEVICE_SIDE));
ACLSHMEM_HOST_API void aclshmemx_free(void *ptr, aclshmem_mem_type_t mem_type ACLSHMEM_DEFAULT_ARG(DEVICE_SIDE));
ACLSHMEM_HOST_API void *aclshmemx_get_heap_base(aclshmem_mem_type_t mem_type ACLSHMEM_DEFAULT_ARG(DEVICE_SIDE));


/* CANN's shmem_* aliases of these calls (macros, not symbols). */
#define shmem_malloc aclshmem_malloc
#define shmem_calloc aclshmem_calloc
#define shmem_align aclshmem_align
#define shmem_free aclshmem_free

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_HEAP_H */
