/* device/gm2gm/shmem_device_mo.h (shmem-rs): CANN SHMEM's device memory ordering. As on CANN,
 * fence is quiet: every transfer the block issued is complete at its target. Written by shmem-rs
 * from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_MO_H
#define SHMEM_RS_CANN_DEVICE_MO_H

#include "device/shmem_def.h"

ACLSHMEM_DEVICE void aclshmem_quiet(void) { aclsimd_quiet(); }
ACLSHMEM_DEVICE void aclshmem_fence(void) { aclsimd_quiet(); }

#endif /* SHMEM_RS_CANN_DEVICE_MO_H */
