/* device/team/shmem_device_team.h (shmem-rs): CANN SHMEM's device team queries. aclshmem_my_pe,
 * aclshmem_n_pes, aclshmem_team_my_pe, aclshmem_team_n_pes and aclshmem_team_translate_pe have
 * the host calls' signatures (host/team/shmem_host_team.h); in a kernel they answer for the
 * block's instance. aclshmem_team_pe_mapping is the device's own: team `team`'s PE `pe` as a PE
 * of the instance, or -1. Written by shmem-rs from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_DEVICE_TEAM_H
#define SHMEM_RS_CANN_DEVICE_TEAM_H

#include "device/shmem_def.h"
#include "host/team/shmem_host_team.h"

ACLSHMEM_DEVICE int aclshmem_team_pe_mapping(aclshmem_team_t team, int pe) { return aclsimd_team_pe_mapping(team, pe); }

#endif /* SHMEM_RS_CANN_DEVICE_TEAM_H */
