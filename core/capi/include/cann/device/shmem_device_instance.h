/* device/shmem_device_instance.h (shmem-rs): in-kernel instance routing. A kernel built with
 * MULTI_INSTANCE must call aclshmemx_instance_ctx_set(id) in every block before any SHMEM call
 * (a call before it fails the launch, naming the kernel, the block and the call), and may switch
 * as it goes; aclshmemx_instance_ctx_get gives the block's instance. Without MULTI_INSTANCE the
 * two calls do not compile, as CANN's, and kernels act on instance 0. Written by shmem-rs from
 * CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_INSTANCE_H
#define SHMEM_RS_CANN_DEVICE_INSTANCE_H

#include "device/shmem_def.h"

#if defined(MULTI_INSTANCE)
ACLSHMEM_DEVICE uint64_t aclshmemx_instance_ctx_get() { return aclsimd_instance_ctx_get(); }
ACLSHMEM_DEVICE void aclshmemx_instance_ctx_set(uint64_t instance_id) { aclsimd_instance_ctx_set(instance_id); }
#else
#if defined(__clang__)
#define ACLSHMEM_SIM_NEEDS_MULTI_INSTANCE __attribute__((unavailable("requires macro MULTI_INSTANCE to be defined!")))
#else
#define ACLSHMEM_SIM_NEEDS_MULTI_INSTANCE __attribute__((error("requires macro MULTI_INSTANCE to be defined!")))
#endif
ACLSHMEM_SIM_NEEDS_MULTI_INSTANCE uint64_t aclshmemx_instance_ctx_get();
ACLSHMEM_SIM_NEEDS_MULTI_INSTANCE void aclshmemx_instance_ctx_set(uint64_t instance_id);
#endif

#endif /* SHMEM_RS_CANN_DEVICE_INSTANCE_H */
