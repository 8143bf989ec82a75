/* shmem.h (shmem-rs): CANN SHMEM's host API, as CANN's include/shmem.h gathers it. This is the
 * CANN header, not OpenSHMEM's (core/capi/include/shmem.h): compile with -I core/capi/include/cann
 * and link libshmem.so (and libascendcl.so). Written by shmem-rs from CANN's documented
 * interface. */
#ifndef SHMEM_RS_CANN_SHMEM_H
#define SHMEM_RS_CANN_SHMEM_H

#if defined(__CCE_AICORE__) || defined(__CCE_KT_TEST__)
/* Kernel code: the device API, on the simulator's AI cores (device/, with the AscendC subset of
 * ascendc/); the host calls whose names it shares are left out of the host headers. */
#include "device/shmem_def.h"
#include "device/shmem_device_instance.h"
#include "device/gm2gm/shmem_device_amo.h"
#include "device/gm2gm/shmem_device_cc.h"
#include "device/gm2gm/shmem_device_mo.h"
#include "device/gm2gm/shmem_device_p2p_sync.h"
#include "device/gm2gm/shmem_device_rma.h"
#include "device/gm2gm/shmem_device_so.h"
#include "device/gm2gm/engine/shmem_device_mte.h"
#include "device/gm2gm/engine/shmem_device_rdma.h"
#include "device/gm2gm/engine/shmem_device_sdma.h"
#include "device/gm2gm/engine/shmem_device_udma.h"
#include "device/ub2gm/shmem_device_rma.h"
#include "device/ub2gm/engine/shmem_device_mte.h"
#include "device/team/shmem_device_team.h"
#endif
#include "host/shmem_host_def.h"
#include "host/init/shmem_host_init.h"
#include "host/mem/shmem_host_heap.h"
#include "host/team/shmem_host_team.h"
#include "host/utils/shmem_log.h"
#include "host/data_plane/shmem_host_rma.h"
#include "host/data_plane/shmem_host_so.h"
#include "host/data_plane/shmem_host_p2p_sync.h"
#include "host/data_plane/shmem_host_cc.h"

#endif /* SHMEM_RS_CANN_SHMEM_H */
