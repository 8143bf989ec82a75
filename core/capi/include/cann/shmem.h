/* shmem.h (shmem-rs): CANN SHMEM's host API, as CANN's include/shmem.h gathers it. This is the
 * CANN header, not OpenSHMEM's (core/capi/include/shmem.h): compile with -I core/capi/include/cann
 * and link libshmem.so (and libascendcl.so). Written by shmem-rs from CANN's documented
 * interface. */
#ifndef SHMEM_RS_CANN_SHMEM_H
#define SHMEM_RS_CANN_SHMEM_H

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
