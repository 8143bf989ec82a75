/* layout.c: CANN's shmem.h from plain C (no C++ defaults, no default arguments): the structs'
 * sizes and offsets, the codes and enums, against CANN's figures. Prints "layout: ok". */
#include <shmem.h>
#include <stddef.h>
#include <stdio.h>

static int failures;
#define CHECK(cond)                                                  \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "layout.c:%d: %s\n", __LINE__, #cond);   \
            failures++;                                              \
        }                                                            \
    } while (0)

int main(void) {
    CHECK(sizeof(aclshmemx_init_attr_t) == 120);
    CHECK(offsetof(aclshmemx_init_attr_t, ip_port) == 8);
    CHECK(offsetof(aclshmemx_init_attr_t, local_mem_size) == 72);
    CHECK(offsetof(aclshmemx_init_attr_t, option_attr) == 80);
    CHECK(offsetof(aclshmemx_init_attr_t, comm_args) == 104);
    CHECK(offsetof(aclshmemx_init_attr_t, instance_id) == 112);
    CHECK(sizeof(aclshmem_init_optional_attr_t) == 24);
    CHECK(offsetof(aclshmem_init_optional_attr_t, sockFd) == 20);
    CHECK(sizeof(aclshmemx_uniqueid_t) == 136);
    CHECK(ACLSHMEM_UNIQUEID_VERSION == 65672);
    CHECK(sizeof(aclshmem_team_config_t) == 64);
    CHECK(sizeof(aclshmem_instance_ctx) == 16);
    CHECK(ACLSHMEM_SUCCESS == 0 && ACLSHMEM_INVALID_PARAM == -1 && ACLSHMEM_INVALID_VALUE == -2 &&
          ACLSHMEM_INNER_ERROR == -4 && ACLSHMEM_NOT_INITED == -5 && ACLSHMEM_TIMEOUT_ERROR == -7 &&
          ACLSHMEM_NOT_SUPPORTED == -100);
    CHECK(ACLSHMEMX_INIT_WITH_DEFAULT == 1 && ACLSHMEMX_INIT_WITH_MPI == 2 && ACLSHMEMX_INIT_WITH_UNIQUEID == 8);
    CHECK(ACLSHMEM_DATA_OP_MTE == 1 && ACLSHMEM_DATA_OP_SDMA == 2 && ACLSHMEM_DATA_OP_ROCE == 4);
    CHECK(HOST_SIDE == 0 && DEVICE_SIDE == 1 && ACLSHMEM_TEAM_WORLD == 0 && ACLSHMEM_TEAM_INVALID == -1);
    CHECK(ACLSHMEM_STATUS_IS_INITIALIZED == 2 && ACLSHMEM_MAX_PES == 16384);
    CHECK(aclshmemx_init_status() == ACLSHMEM_STATUS_NOT_INITIALIZED && aclshmem_n_pes() == -1);
    if (failures == 0) printf("layout: ok\n");
    return failures ? 1 : 0;
}
