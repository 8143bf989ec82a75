/* host/shmem_host_def.h (shmem-rs): CANN SHMEM's host definitions (codes, enums, init
 * attributes, unique id), with CANN's values and layouts, usable from C and C++. In C++ the
 * structs carry CANN's default member initialisers and the calls CANN's default arguments.
 * Written from CANN's documented interface. */
#ifndef SHMEM_RS_CANN_SHMEM_HOST_DEF_H
#define SHMEM_RS_CANN_SHMEM_HOST_DEF_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "host_device/shmem_common_types.h"

#define ACLSHMEM_HOST_API __attribute__((visibility("default")))
#define ACLSHMEM_MAJOR_VERSION 1
#define ACLSHMEM_MINOR_VERSION 1
#define ACLSHMEM_VENDOR_MAJOR_VER 1
#define ACLSHMEM_VENDOR_MINOR_VER 1
#define ACLSHMEM_VENDOR_PATCH_VER 1
#define ACLSHMEM_MAX_NAME_LEN 256
#define ACLSHMEM_MAX_IP_PORT_LEN 64

#ifdef __cplusplus
#define ACLSHMEM_DEFAULT_ARG(x) = x
#define ACLSHMEM_MEMBER_INIT(...) = __VA_ARGS__
constexpr uint16_t ACLSHMEM_UNIQUE_ID_INNER_LEN = 124;
constexpr int DEFAULT_TIMEOUT = 120;
extern "C" {
#else
#define ACLSHMEM_DEFAULT_ARG(x)
#define ACLSHMEM_MEMBER_INIT(...)
#define ACLSHMEM_UNIQUE_ID_INNER_LEN 124
#define DEFAULT_TIMEOUT 120
#endif

/* The return codes. */
enum aclshmem_error_code_t {
    ACLSHMEM_SUCCESS = 0,
    ACLSHMEM_INVALID_PARAM = -1,
    ACLSHMEM_INVALID_VALUE = -2,
    ACLSHMEM_SMEM_ERROR = -3,
    ACLSHMEM_INNER_ERROR = -4,
    ACLSHMEM_NOT_INITED = -5,
    ACLSHMEM_BOOTSTRAP_ERROR = -6,
    ACLSHMEM_TIMEOUT_ERROR = -7,
    ACLSHMEM_MALLOC_FAILED = -8,
    ACLSHMEM_DL_FUNC_FAILED = -9,
    ACLSHMEM_INNER_TIMEOUT = -10,
    ACLSHMEM_UNDER_API_UNLOAD = -11,
    ACLSHMEM_NOT_SUPPORTED = -100
};

enum aclshmemx_init_status_t {
    ACLSHMEM_STATUS_NOT_INITIALIZED = 0,
    ACLSHMEM_STATUS_SHM_CREATED,
    ACLSHMEM_STATUS_IS_INITIALIZED,
    ACLSHMEM_STATUS_INVALID = 0x7fffffff
};

/* The init modes (bit 2 is unused). */
#ifdef __cplusplus
enum aclshmemx_bootstrap_t : unsigned int {
#else
typedef enum {
#endif
    ACLSHMEMX_INIT_WITH_DEFAULT = 1U << 0,
    ACLSHMEMX_INIT_WITH_MPI = 1U << 1,
    ACLSHMEMX_INIT_WITH_UNIQUEID = 1U << 3,
    ACLSHMEMX_INIT_MAX = 1U << 31
#ifdef __cplusplus
};
#else
} aclshmemx_bootstrap_t;
#endif

typedef enum {
    ACLSHMEM_DATA_OP_MTE = 0x01,
    ACLSHMEM_DATA_OP_SDMA = 0x02,
    ACLSHMEM_DATA_OP_ROCE = 0x04,
    ACLSHMEM_DATA_OP_UDMA = 0x08,
    ACLSHMEM_DATA_OP_MAX = 0x08
} data_op_engine_type_t;

typedef enum { HOST_SIDE = 0, DEVICE_SIDE } aclshmem_mem_type_t;

/* 24 bytes. */
typedef struct {
    int version;
    data_op_engine_type_t data_op_engine_type;
    uint32_t shm_init_timeout;
    uint32_t shm_create_timeout;
    uint32_t control_operation_timeout;
    int32_t sockFd;
} aclshmem_init_optional_attr_t;

/* 120 bytes. In C++: an empty ip_port, the MTE engine, 120 s timeouts, no comm_args, instance 0
 * (my_pe, n_pes and local_mem_size have no default, as in CANN). */
typedef struct aclshmemx_init_attr_t {
    int my_pe;
    int n_pes;
    char ip_port[ACLSHMEM_MAX_IP_PORT_LEN] ACLSHMEM_MEMBER_INIT({});
    uint64_t local_mem_size;
    aclshmem_init_optional_attr_t option_attr ACLSHMEM_MEMBER_INIT(
        {(1 << 16) + (int)sizeof(aclshmem_init_optional_attr_t), ACLSHMEM_DATA_OP_MTE, DEFAULT_TIMEOUT,
         DEFAULT_TIMEOUT, DEFAULT_TIMEOUT, 0});
    void *comm_args ACLSHMEM_MEMBER_INIT(NULL);
    uint64_t instance_id ACLSHMEM_MEMBER_INIT(0);
} aclshmemx_init_attr_t;

/* 136 bytes. */
typedef struct {
    int32_t version;
    int my_pe;
    int n_pes;
    char internal[ACLSHMEM_UNIQUE_ID_INNER_LEN];
} aclshmemx_uniqueid_t;

#ifdef __cplusplus
constexpr int32_t ACLSHMEM_UNIQUEID_VERSION = (1 << 16) + sizeof(aclshmemx_uniqueid_t);
#else
#define ACLSHMEM_UNIQUEID_VERSION ((1 << 16) + (int32_t)sizeof(aclshmemx_uniqueid_t))
#endif
#define ACLSHMEM_UNIQUEID_INITIALIZER {ACLSHMEM_UNIQUEID_VERSION, 0, 0, {0}}

#ifdef __cplusplus
typedef int (*aclshmem_decrypt_handler)(const char *cipherText, size_t cipherTextLen, char *plainText,
                                        size_t &plainTextLen);
#else
typedef int (*aclshmem_decrypt_handler)(const char *cipherText, size_t cipherTextLen, char *plainText,
                                        size_t *plainTextLen);
#endif

struct aclshmem_handle_t {
    aclshmem_team_t team_id;
};

/* Only id is meaningful; instance is reserved. */
typedef struct {
    uint64_t id;
    void *instance;
} aclshmem_instance_ctx;

/* CANN's shmem_* aliases of these types (macros). */
#define shmem_error_code_t aclshmem_error_code_t
#define shmemx_bootstrap_t aclshmemx_bootstrap_t
#define shmem_init_status_t aclshmemx_init_status_t
#define shmem_init_optional_attr_t aclshmem_init_optional_attr_t
#define shmem_init_attr_t aclshmemx_init_attr_t
#define shmem_uniqueid_t aclshmemx_uniqueid_t
#define shmem_decrypt_handler aclshmem_decrypt_handler

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_CANN_SHMEM_HOST_DEF_H */
