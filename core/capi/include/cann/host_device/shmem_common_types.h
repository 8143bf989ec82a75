/* host_device/shmem_common_types.h (shmem-rs): CANN SHMEM's limits and common types, as CANN's
 * header of this name declares them. Written from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_SHMEM_COMMON_TYPES_H
#define SHMEM_RS_CANN_SHMEM_COMMON_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Kernel code (the AI-core pass on an NPU, the CPU-debug build on a host): CANN's shmem.h then
 * gives the device API, whose names the host API shares. */
#if defined(__CCE_AICORE__) || defined(__CCE_KT_TEST__)
#define ACLSHMEM_KERNEL_TU 1
#endif

#define ACLSHMEM_MAX_PES 16384
#define ACLSHMEM_MAX_TEAMS 2048
#define ACLSHMEM_MAX_LOCAL_SIZE (40UL * 1024 * 1024 * 1024)
#define ACLSHMEM_SIGNAL_SIZE 8
#define ACLSHMEM_PAGE_SIZE (2UL * 1024 * 1024)
#define ACLSHMEM_HEAP_ALIGNMENT_SIZE (1UL * 1024 * 1024 * 1024)
#define TEAM_CONFIG_PADDING 48

/* CANN's 10 point-to-point types (NAME, TYPE): the RMA types but double (and, on the device,
 * half and bfloat16). */
#define ACLSHMEM_P2P_SYNC_TYPE_FUNC(FUNC) \
    FUNC(float, float);                   \
    FUNC(int8, int8_t);                   \
    FUNC(int16, int16_t);                 \
    FUNC(int32, int32_t);                 \
    FUNC(int64, int64_t);                 \
    FUNC(uint8, uint8_t);                 \
    FUNC(uint16, uint16_t);               \
    FUNC(uint32, uint32_t);               \
    FUNC(uint64, uint64_t);               \
    FUNC(char, char)

typedef int aclshmem_team_t;
typedef uint64_t aclshmemx_team_uniqueid_t;

/* 64 bytes. */
typedef struct {
    int32_t version;
    int32_t num_contexts;
    aclshmemx_team_uniqueid_t uniqueid;
    char padding[TEAM_CONFIG_PADDING];
} aclshmem_team_config_t;

enum aclshmem_team_index_t { ACLSHMEM_TEAM_INVALID = -1, ACLSHMEM_TEAM_WORLD = 0 };
enum aclshmem_signal_op_type_t { ACLSHMEM_SIGNAL_SET, ACLSHMEM_SIGNAL_ADD };
enum aclshmem_cmp_op_type_t {
    ACLSHMEM_CMP_EQ = 0,
    ACLSHMEM_CMP_NE,
    ACLSHMEM_CMP_GT,
    ACLSHMEM_CMP_GE,
    ACLSHMEM_CMP_LT,
    ACLSHMEM_CMP_LE
};

/* Device cycle profiles (SHMEM_CYCLE_PROF_PE); the simulator records none. */
#define ACLSHMEM_CYCLE_PROF_MAX_BLOCK 64
#define ACLSHMEM_CYCLE_PROF_FRAME_CNT 1024
typedef struct {
    int64_t ccount[ACLSHMEM_CYCLE_PROF_FRAME_CNT];
    int64_t cycles[ACLSHMEM_CYCLE_PROF_FRAME_CNT];
} aclshmem_prof_block_t;
typedef struct {
    int32_t pe_id;
    aclshmem_prof_block_t block_prof[ACLSHMEM_CYCLE_PROF_MAX_BLOCK];
} aclshmem_prof_pe_t;

#endif /* SHMEM_RS_CANN_SHMEM_COMMON_TYPES_H */
