// The one table of the ACL runtime stand-in: the C signatures and constants of the `acl/acl.h`
// subset that CANN host programs use around SHMEM, each with the public source it came from.
// `build.rs` generates the header from it (and the hardware backend's bindings will be generated
// from it too). Plain data, so that the build script can include it.
//
// Sources: R = hicann/runtime tag v8.5.0, `include/external/acl/acl_rt.h` (line numbers) and
// `acl_base_rt.h`; RT = R `include/external/acl/error_codes/rt_error_codes.h`.

/// `#define` constants: name, value, source.
pub const CONSTANTS: &[(&str, &str, &str)] = &[
    ("ACL_SUCCESS", "0", "R acl_base_rt.h"),
    ("ACL_ERROR_NONE", "0", "R acl_base_rt.h"),
    ("ACL_ERROR_INVALID_PARAM", "100000", "R acl_base_rt.h"),
    ("ACL_ERROR_UNINITIALIZE", "100001", "R acl_base_rt.h"),
    ("ACL_ERROR_REPEAT_INITIALIZE", "100002", "R acl_base_rt.h"),
    ("ACL_ERROR_INVALID_FILE", "100003", "R acl_base_rt.h"),
    ("ACL_ERROR_REPEAT_FINALIZE", "100037", "R acl_base_rt.h"),
    ("ACL_ERROR_BAD_ALLOC", "200000", "R acl_base_rt.h"),
    ("ACL_ERROR_API_NOT_SUPPORT", "200001", "R acl_base_rt.h"),
    ("ACL_ERROR_INVALID_DEVICE", "200002", "R acl_base_rt.h"),
    ("ACL_ERROR_MEMORY_ADDRESS_UNALIGNED", "200003", "R acl_base_rt.h"),
    ("ACL_ERROR_INVALID_RESOURCE_HANDLE", "200005", "R acl_base_rt.h"),
    ("ACL_ERROR_FEATURE_UNSUPPORTED", "200006", "R acl_base_rt.h"),
    ("ACL_ERROR_INTERNAL_ERROR", "500000", "R acl_base_rt.h"),
    ("ACL_ERROR_FAILURE", "500001", "R acl_base_rt.h"),
    ("ACL_ERROR_RT_FAILURE", "500003", "R acl_base_rt.h"),
    ("ACL_ERROR_RT_PARAM_INVALID", "107000", "RT"),
    ("ACL_ERROR_RT_INVALID_DEVICEID", "107001", "RT"),
    ("ACL_ERROR_RT_CONTEXT_NULL", "107002", "RT"),
    ("ACL_ERROR_RT_STREAM_CONTEXT", "107003", "RT"),
    ("ACL_ERROR_RT_ADDR_UNALIGNED", "107008", "RT"),
    ("ACL_ERROR_RT_INVALID_HANDLE", "107017", "RT"),
    ("ACL_ERROR_RT_WAIT_TIMEOUT", "107019", "RT"),
    ("ACL_ERROR_RT_FEATURE_NOT_SUPPORT", "207000", "RT"),
    ("ACL_ERROR_RT_MEMORY_ALLOCATION", "207001", "RT"),
    ("ACL_ERROR_RT_MEMORY_FREE", "207002", "RT"),
    ("ACL_ERROR_RT_NO_DEVICE", "207004", "RT"),
    ("ACL_ERROR_RT_NO_EVENT_RESOURCE", "207007", "RT"),
    ("ACL_ERROR_RT_NO_STREAM_RESOURCE", "207008", "RT"),
    ("ACL_ERROR_RT_DEVICE_OOM", "207018", "RT"),
    ("ACL_ERROR_RT_INTERNAL_ERROR", "507000", "RT"),
    ("ACL_ERROR_RT_STREAM_NOT_COMPLETE", "507004", "RT"),
    ("ACL_ERROR_RT_EVENT_NOT_COMPLETE", "507006", "RT"),
    ("ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "507046", "RT"),
    ("ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", "507047", "RT"),
    ("ACL_STREAM_FAST_LAUNCH", "0x00000001U", "R acl_rt.h 36"),
    ("ACL_STREAM_FAST_SYNC", "0x00000002U", "R acl_rt.h 36"),
    ("ACL_STREAM_PERSISTENT", "0x00000004U", "R acl_rt.h 36"),
    ("ACL_STREAM_HUGE", "0x00000008U", "R acl_rt.h 36"),
    ("ACL_STREAM_CPU_SCHEDULE", "0x00000010U", "R acl_rt.h 36"),
    ("ACL_STREAM_DEVICE_USE_ONLY", "0x00000020U", "R acl_rt.h 36"),
    ("ACL_EVENT_SYNC", "0x00000001U", "R acl_rt.h 28"),
    ("ACL_EVENT_CAPTURE_STREAM_PROGRESS", "0x00000002U", "R acl_rt.h 28"),
    ("ACL_EVENT_TIME_LINE", "0x00000008U", "R acl_rt.h 28"),
    ("ACL_EVENT_DEVICE_USE_ONLY", "0x00000010U", "R acl_rt.h 28"),
    ("ACL_EVENT_EXTERNAL", "0x00000020U", "R acl_rt.h 28"),
    ("ACL_EVENT_IPC", "0x00000040U", "R acl_rt.h 28"),
    ("ACL_MAJOR_VERSION", "1", "R acl_base_rt.h (1.16.0)"),
    ("ACL_MINOR_VERSION", "16", "R acl_base_rt.h (1.16.0)"),
    ("ACL_PATCH_VERSION", "0", "R acl_base_rt.h (1.16.0)"),
];

/// One enumeration (4 bytes): the C type name, its members and values, source.
pub type Enum = (&'static str, &'static [(&'static str, i64)], &'static str);

/// The enumerations.
pub const ENUMS: &[Enum] = &[
    ("aclrtRunMode", &[("ACL_DEVICE", 0), ("ACL_HOST", 1)], "R acl_rt.h 81"),
    (
        "aclrtMemcpyKind",
        &[
            ("ACL_MEMCPY_HOST_TO_HOST", 0),
            ("ACL_MEMCPY_HOST_TO_DEVICE", 1),
            ("ACL_MEMCPY_DEVICE_TO_HOST", 2),
            ("ACL_MEMCPY_DEVICE_TO_DEVICE", 3),
            ("ACL_MEMCPY_DEFAULT", 4),
            ("ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE", 5),
            ("ACL_MEMCPY_INNER_DEVICE_TO_DEVICE", 6),
            ("ACL_MEMCPY_INTER_DEVICE_TO_DEVICE", 7),
        ],
        "R acl_rt.h 120",
    ),
    (
        "aclrtMemMallocPolicy",
        &[
            ("ACL_MEM_MALLOC_HUGE_FIRST", 0),
            ("ACL_MEM_MALLOC_HUGE_ONLY", 1),
            ("ACL_MEM_MALLOC_NORMAL_ONLY", 2),
            ("ACL_MEM_MALLOC_HUGE_FIRST_P2P", 3),
            ("ACL_MEM_MALLOC_HUGE_ONLY_P2P", 4),
            ("ACL_MEM_MALLOC_NORMAL_ONLY_P2P", 5),
            ("ACL_MEM_MALLOC_HUGE1G_ONLY", 6),
            ("ACL_MEM_MALLOC_HUGE1G_ONLY_P2P", 7),
            ("ACL_MEM_TYPE_LOW_BAND_WIDTH", 0x100),
            ("ACL_MEM_TYPE_HIGH_BAND_WIDTH", 0x1000),
        ],
        "R acl_rt.h 131",
    ),
    (
        "aclrtMemAttr",
        &[
            ("ACL_DDR_MEM", 0),
            ("ACL_HBM_MEM", 1),
            ("ACL_DDR_MEM_HUGE", 2),
            ("ACL_DDR_MEM_NORMAL", 3),
            ("ACL_HBM_MEM_HUGE", 4),
            ("ACL_HBM_MEM_NORMAL", 5),
            ("ACL_DDR_MEM_P2P_HUGE", 6),
            ("ACL_DDR_MEM_P2P_NORMAL", 7),
            ("ACL_HBM_MEM_P2P_HUGE", 8),
            ("ACL_HBM_MEM_P2P_NORMAL", 9),
            ("ACL_HBM_MEM_HUGE1G", 10),
            ("ACL_HBM_MEM_P2P_HUGE1G", 11),
            ("ACL_MEM_NORMAL", 12),
            ("ACL_MEM_HUGE", 13),
            ("ACL_MEM_HUGE1G", 14),
            ("ACL_MEM_P2P_NORMAL", 15),
            ("ACL_MEM_P2P_HUGE", 16),
            ("ACL_MEM_P2P_HUGE1G", 17),
        ],
        "R acl_rt.h 179",
    ),
];

/// Functions: return type, name, parameters, source. Every one is exported by
/// `libascendcl.so` (a test checks it).
pub const FUNCTIONS: &[(&str, &str, &str, &str)] = &[
    ("aclError", "aclInit", "const char *configPath", "R acl_rt.h 794"),
    ("aclError", "aclFinalize", "void", "R acl_rt.h 806"),
    ("const char *", "aclGetRecentErrMsg", "void", "R acl_rt.h 831"),
    ("aclError", "aclrtCreateContext", "aclrtContext *context, int32_t deviceId", "R acl_rt.h 1040"),
    ("aclError", "aclrtDestroyContext", "aclrtContext context", "R acl_rt.h 1056"),
    ("aclError", "aclrtSetCurrentContext", "aclrtContext context", "R acl_rt.h 1092"),
    ("aclError", "aclrtGetCurrentContext", "aclrtContext *context", "R acl_rt.h 1110"),
    ("aclError", "aclrtSetDevice", "int32_t deviceId", "R acl_rt.h 1182"),
    ("aclError", "aclrtResetDevice", "int32_t deviceId", "R acl_rt.h 1209"),
    ("aclError", "aclrtGetDevice", "int32_t *deviceId", "R acl_rt.h 1251"),
    ("aclError", "aclrtGetRunMode", "aclrtRunMode *runMode", "R acl_rt.h 1274"),
    ("aclError", "aclrtGetDeviceCount", "uint32_t *count", "R acl_rt.h 1325"),
    ("aclError", "aclrtCreateEvent", "aclrtEvent *event", "R acl_rt.h 1336"),
    ("aclError", "aclrtCreateEventWithFlag", "aclrtEvent *event, uint32_t flag", "R acl_rt.h 1348"),
    ("aclError", "aclrtDestroyEvent", "aclrtEvent event", "R acl_rt.h 1380"),
    ("aclError", "aclrtRecordEvent", "aclrtEvent event, aclrtStream stream", "R acl_rt.h 1392"),
    ("aclError", "aclrtSynchronizeEvent", "aclrtEvent event", "R acl_rt.h 1456"),
    ("aclError", "aclrtSynchronizeEventWithTimeout", "aclrtEvent event, int32_t timeout", "R acl_rt.h 1469"),
    ("aclError", "aclrtMalloc", "void **devPtr, size_t size, aclrtMemMallocPolicy policy", "R acl_rt.h 1524"),
    ("aclError", "aclrtFree", "void *devPtr", "R acl_rt.h 1756"),
    ("aclError", "aclrtMallocHost", "void **hostPtr, size_t size", "R acl_rt.h 1776"),
    ("aclError", "aclrtFreeHost", "void *hostPtr", "R acl_rt.h 1792"),
    ("aclError", "aclrtMemcpy", "void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind", "R acl_rt.h 1839"),
    ("aclError", "aclrtMemset", "void *devPtr, size_t maxCount, int32_t value, size_t count", "R acl_rt.h 1862"),
    ("aclError", "aclrtMemcpyAsync", "void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind, aclrtStream stream", "R acl_rt.h 1889"),
    ("aclError", "aclrtMemsetAsync", "void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream", "R acl_rt.h 1998"),
    ("aclError", "aclrtCreateStream", "aclrtStream *stream", "R acl_rt.h 2150"),
    ("aclError", "aclrtCreateStreamWithConfig", "aclrtStream *stream, uint32_t priority, uint32_t flag", "R acl_rt.h 2177"),
    ("aclError", "aclrtDestroyStream", "aclrtStream stream", "R acl_rt.h 2198"),
    ("aclError", "aclrtSynchronizeStream", "aclrtStream stream", "R acl_rt.h 2226"),
    ("aclError", "aclrtSynchronizeStreamWithTimeout", "aclrtStream stream, int32_t timeout", "R acl_rt.h 2240"),
    ("aclError", "aclrtStreamWaitEvent", "aclrtStream stream, aclrtEvent event", "R acl_rt.h 2290"),
    ("aclError", "aclrtDeviceCanAccessPeer", "int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId", "R acl_rt.h 2413"),
    ("aclError", "aclrtDeviceEnablePeerAccess", "int32_t peerDeviceId, uint32_t flags", "R acl_rt.h 2427"),
    ("aclError", "aclrtDeviceDisablePeerAccess", "int32_t peerDeviceId", "R acl_rt.h 2440"),
    ("aclError", "aclrtGetMemInfo", "aclrtMemAttr attr, size_t *free, size_t *total", "R acl_rt.h 2454"),
    ("aclError", "aclrtGetVersion", "int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion", "R acl_rt.h 4137"),
    ("const char *", "aclrtGetSocName", "void", "R acl_base_rt.h 363"),
];

/// The stand-in's own C interface (`acl/acl_sim.h`), for the simulator's `libshmem.so`: not
/// part of ACL.
pub const SIM_FUNCTIONS: &[(&str, &str, &str, &str)] = &[
    (
        "aclError",
        "aclsimDeviceAlias",
        "const void *devPtr, size_t size, void **hostAlias",
        "this project: the host address at which the runtime itself reaches `size` bytes of device memory at `devPtr` (a query: logs nothing)",
    ),
    (
        "aclError",
        "aclsimRegisterDeviceMemory",
        "void *devPtr, size_t size, void *hostAlias",
        "this project: makes `size` bytes at `devPtr`, which the caller owns and the runtime reaches at `hostAlias`, device memory (a symmetric heap)",
    ),
    (
        "aclError",
        "aclsimUnregisterDeviceMemory",
        "void *devPtr",
        "this project: forgets device memory registered at `devPtr` by aclsimRegisterDeviceMemory",
    ),
];
