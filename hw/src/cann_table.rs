// The table of CANN SHMEM's host calls that the hardware backend may make: return type, name,
// parameters (C, exactly as CANN's public headers declare them) and the header. `hw/build.rs`
// generates the backend's raw bindings from it; a test compiles every entry against this
// project's CANN headers (`core/capi/include/cann/`, which `libshmem.so` implements), so the two
// sides cannot drift apart. Where this table and a public CANN header differ, the header wins
// and the entry's source says so. Plain data, so that the build script can include it.
//
// Sources: S = hicann/shmem `include/host/` (v1.5.x): init/shmem_host_init.h (init),
// mem/shmem_host_heap.h (heap), team/shmem_host_team.h (team), data_plane/shmem_host_rma.h
// (rma), data_plane/shmem_host_so.h (so), data_plane/shmem_host_p2p_sync.h (p2p),
// data_plane/shmem_host_cc.h (cc).

/// Functions: return type, name, parameters, source.
pub const FUNCTIONS: &[(&str, &str, &str, &str)] = &[
    ("int", "aclshmemx_init_status", "void", "S init"),
    ("int", "aclshmemx_get_uniqueid", "aclshmemx_uniqueid_t *uid", "S init"),
    (
        "int",
        "aclshmemx_set_attr_uniqueid_args",
        "int my_pe, int n_pes, int64_t local_mem_size, aclshmemx_uniqueid_t *uid, aclshmemx_init_attr_t *aclshmem_attr",
        "S init",
    ),
    (
        "int",
        "aclshmemx_init_attr",
        "aclshmemx_bootstrap_t bootstrap_flags, aclshmemx_init_attr_t *attributes",
        "S init",
    ),
    ("int", "aclshmem_finalize", "void", "S init (v1.5.0; before it took a uint64_t)"),
    ("int", "aclshmemx_finalize", "uint64_t instance_id", "S init (v1.5.0)"),
    ("void", "aclshmem_info_get_version", "int *major, int *minor", "S init"),
    ("aclshmem_instance_ctx *", "aclshmemx_instance_ctx_get", "void", "S init (v1.5.0)"),
    ("int", "aclshmemx_instance_ctx_set", "uint64_t instance_id", "S init (v1.5.0)"),
    ("void *", "aclshmem_malloc", "size_t size", "S heap"),
    ("void *", "aclshmem_calloc", "size_t nmemb, size_t size", "S heap"),
    ("void", "aclshmem_free", "void *ptr", "S heap"),
    ("int", "aclshmem_my_pe", "void", "S team"),
    ("int", "aclshmem_n_pes", "void", "S team"),
    ("void *", "aclshmem_ptr", "void *ptr, int pe", "S rma"),
    (
        "void",
        "aclshmemx_putmem_on_stream",
        "void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream",
        "S rma",
    ),
    (
        "void",
        "aclshmemx_getmem_on_stream",
        "void *dst, void *src, size_t elem_size, int32_t pe, aclrtStream stream",
        "S rma",
    ),
    ("void", "aclshmemx_quiet_on_stream", "aclrtStream stream", "S rma (after v1.3.0)"),
    (
        "void",
        "aclshmemx_signal_op_on_stream",
        "int32_t *sig_addr, int32_t signal, int sig_op, int pe, aclrtStream stream",
        "S so",
    ),
    (
        "void",
        "aclshmemx_signal_wait_until_on_stream",
        "int32_t *sig_addr, int cmp, int32_t cmp_val, aclrtStream stream",
        "S p2p",
    ),
    ("void", "aclshmemx_barrier_on_stream", "aclshmem_team_t team, aclrtStream stream", "S cc"),
    ("void", "aclshmemx_barrier_all_on_stream", "aclrtStream stream", "S cc"),
    ("uint64_t", "util_get_ffts_config", "void", "S p2p"),
];

/// The functions whose `int` is CANN's `aclshmem_error_code_t` (the others return a value: a PE,
/// a count, a status), which get a `Result` form.
pub const CODE_RETURNING: &[&str] = &[
    "aclshmemx_get_uniqueid",
    "aclshmemx_set_attr_uniqueid_args",
    "aclshmemx_init_attr",
    "aclshmem_finalize",
    "aclshmemx_finalize",
    "aclshmemx_instance_ctx_set",
];
