/* host/team/shmem_host_team.h (shmem-rs): PE queries and teams, as CANN SHMEM declares them. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_TEAM_H
#define SHMEM_RS_CANN_SHMEM_HOST_TEAM_H

#include "host/shmem_host_def.h"

#ifdef __cplusplus
extern "C" {
#endif

ACLSHMEM_HOST_API int aclshmem_my_pe(void);
ACLSHMEM_HOST_API int aclshmem_n_pes(void);
ACLSHMEM_HOST_API int aclshmem_team_my_pe(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_n_pes(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_split_strided(aclshmem_team_t parent_team, int pe_start, int pe_stride, int pe_size,
                                                  aclshmem_team_t *new_team);
ACLSHMEM_HOST_API int aclshmem_team_split_2d(aclshmem_team_t parent_team, int x_range, aclshmem_team_t *x_team,
                                             aclshmem_team_t *y_team);
ACLSHMEM_HOST_API int aclshmem_team_translate_pe(aclshmem_team_t src_team, int src_pe, aclshmem_team_t dest_team);
ACLSHMEM_HOST_API void aclshmem_team_destroy(aclshmem_team_t team);
ACLSHMEM_HOST_API int aclshmem_team_get_config(aclshmem_team_t team, aclshmem_team_config_t *config);


/* CANN's shmem_* aliases of these calls (macros, not symbols). */
#define shmem_team_split_strided aclshmem_team_split_strided
#define shmem_team_split_2d aclshmem_team_split_2d
#define shmem_team_translate_pe aclshmem_team_translate_pe
#define shmem_team_destroy aclshmem_team_destroy
#define shmem_my_pe aclshmem_my_pe
#define shmem_n_pes aclshmem_n_pes
#define shmem_team_my_pe aclshmem_team_my_pe
#define shmem_team_n_pes aclshmem_team_n_pes
#define shmem_team_get_config aclshmem_team_get_config

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_TEAM_H */
