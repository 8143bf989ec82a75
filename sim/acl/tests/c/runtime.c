/* runtime.c: the ACL runtime stand-in (libascendcl.so) as a CANN host program uses it, with
 * ACL's codes: init and finalize, devices and contexts, device memory that host code cannot
 * touch, copies and their checks, streams (asynchronous; under SHMEM_SIM_STRICT=1 nothing runs
 * before a synchronisation), events, timeouts. `runtime relaxed` checks that
 * SHMEM_SIM_DEVICE_HOST_ACCESS=1 lets host code read device memory. Run with
 * SHMEM_SIM_DEVICE_COUNT=2. Prints "runtime: ok" when every check held. */
#include <acl/acl.h>
#include <acl/acl_sim.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (!(cond)) {                                            \
            fprintf(stderr, "runtime.c:%d: ", __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                         \
            fputc('\n', stderr);                                  \
            failures++;                                           \
        }                                                         \
    } while (0)
#define EQ(call, want) CHECK((call) == (want), "%s gave %d, want %d", #call, (int)(call), (int)(want))

/* Whether a child that touches device memory from the host dies of SIGSEGV. */
static int host_touch_faults(volatile char *dev) {
    pid_t pid = fork();
    if (pid == 0) {
        dev[0] = 1;
        _exit(dev[0] == 1 ? 0 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

int main(int argc, char **argv) {
    int relaxed = argc > 1 && strcmp(argv[1], "relaxed") == 0;
    const char *strict_env = getenv("SHMEM_SIM_STRICT");
    int strict = strict_env && strcmp(strict_env, "1") == 0;

    /* init and finalize */
    EQ(aclInit(NULL), ACL_SUCCESS);
    EQ(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    EQ(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);

    /* devices */
    int32_t dev = -1;
    uint32_t count = 0;
    EQ(aclrtGetDevice(&dev), ACL_ERROR_RT_CONTEXT_NULL);
    EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
    CHECK(count == 2, "device count %u", count);
    EQ(aclrtSetDevice(2), ACL_ERROR_RT_INVALID_DEVICEID);
    EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    EQ(aclrtSetDevice(0), ACL_SUCCESS);
    EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 0, "current device %d", dev);
    EQ(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
    aclrtContext ctx = NULL, cur = NULL;
    EQ(aclrtCreateContext(&ctx, 1), ACL_SUCCESS);
    EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    CHECK(dev == 1, "a created context is current: device %d", dev);
    EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    CHECK(cur == ctx, "the current context");
    EQ(aclrtDestroyContext(ctx), ACL_SUCCESS);
    EQ(aclrtDestroyContext(ctx), ACL_ERROR_RT_INVALID_HANDLE);
    EQ(aclrtSetDevice(0), ACL_SUCCESS);
    int32_t peer = -1;
    EQ(aclrtDeviceCanAccessPeer(&peer, 0, 1), ACL_SUCCESS);
    CHECK(peer == 1, "peer access");
    EQ(aclrtDeviceCanAccessPeer(&peer, 0, 0), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
    EQ(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_FEATURE_UNSUPPORTED);
    const char *soc = aclrtGetSocName();
    CHECK(soc && strstr(soc, "Ascend910B"), "SoC %s", soc ? soc : "(null)");
    int32_t ma = 0, mi = 0, pa = -1;
    EQ(aclrtGetVersion(&ma, &mi, &pa), ACL_SUCCESS);
    CHECK(ma == ACL_MAJOR_VERSION && mi == ACL_MINOR_VERSION && mi >= 15, "version %d.%d.%d", ma, mi, pa);
    aclrtRunMode mode;
    EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
    CHECK(mode == ACL_HOST, "run mode");

    /* device memory */
    void *d = NULL, *d2 = NULL, *h = NULL;
    EQ(aclrtMalloc(&d, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtMalloc(&d, 1000, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    EQ(aclrtMalloc(&d2, 1000, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    EQ(aclrtMallocHost(&h, 4096), ACL_SUCCESS);
    CHECK(((uintptr_t)d % 64) == 0, "device memory is 64-byte aligned");
    if (relaxed) {
        CHECK(!host_touch_faults(d), "with SHMEM_SIM_DEVICE_HOST_ACCESS=1 the host reaches device memory");
    } else {
        CHECK(host_touch_faults(d), "host code touching device memory must fault");
    }
    void *alias = NULL;
    EQ(aclsimDeviceAlias(d, 1000, &alias), ACL_SUCCESS);
    EQ(aclsimDeviceAlias(h, 8, &alias), ACL_ERROR_RT_PARAM_INVALID);

    /* copies */
    char a[1000], b[1000];
    for (int i = 0; i < 1000; i++) a[i] = (char)(i * 7 + 1);
    memset(b, 0, sizeof b);
    EQ(aclrtMemcpy(d, 1000, a, 1000, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    EQ(aclrtMemcpy(d2, 1000, d, 1000, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    EQ(aclrtMemcpy(b, 1000, d2, 1000, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(memcmp(a, b, 1000) == 0, "H2D, D2D, D2H round trip");
    EQ(aclrtMemset(d, 1000, 0x5A, 10), ACL_SUCCESS);
    EQ(aclrtMemcpy(b, 1000, d, 1000, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    CHECK(b[0] == 0x5A && b[9] == 0x5A && b[10] == a[10], "memset of 10 bytes");
    EQ(aclrtMemcpy(d, 10, a, 11, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemcpy(d, 0, a, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemcpy(NULL, 10, a, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtMemcpy(d, 10, a, 10, 6), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtMemcpy(b, 10, a, 10, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemcpy(b, 1000, d, 5000, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemcpy(d, 10, b, 10, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemset(b, 10, 0, 10), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtMemset(d, 10, 0, 11), ACL_ERROR_RT_PARAM_INVALID);
    const char *msg = aclGetRecentErrMsg();
    CHECK(msg && strstr(msg, "aclrtMemset"), "the recent error message: %s", msg ? msg : "(null)");
    CHECK(aclGetRecentErrMsg() == NULL, "the message is taken");

    /* streams */
    aclrtStream s = NULL, s2 = NULL;
    EQ(aclrtCreateStream(&s), ACL_SUCCESS);
    EQ(aclrtCreateStreamWithConfig(&s2, 0, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC), ACL_SUCCESS);
    EQ(aclrtCreateStreamWithConfig(&s2, 8, 0), ACL_ERROR_RT_PARAM_INVALID);
    memset(b, 0, sizeof b);
    for (int i = 0; i < 100; i++) a[i] = (char)(100 - i);
    EQ(aclrtMemcpyAsync(d, 1000, a, 100, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
    EQ(aclrtMemcpyAsync(b, 1000, d, 100, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
    if (strict) CHECK(b[0] == 0, "strict: stream work runs only when synchronised (b[0] = %d)", b[0]);
    EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
    CHECK(b[0] == 100 && b[99] == 1, "after the synchronisation the copies have run");

    /* events: s2 waits for s's memset */
    aclrtEvent ev = NULL;
    EQ(aclrtCreateEvent(&ev), ACL_SUCCESS);
    EQ(aclrtMemsetAsync(d, 1000, 0x33, 100, s), ACL_SUCCESS);
    EQ(aclrtRecordEvent(ev, s), ACL_SUCCESS);
    EQ(aclrtStreamWaitEvent(s2, ev), ACL_SUCCESS);
    EQ(aclrtMemcpyAsync(b, 1000, d, 100, ACL_MEMCPY_DEVICE_TO_HOST, s2), ACL_SUCCESS);
    EQ(aclrtSynchronizeStreamWithTimeout(s2, 10000), ACL_SUCCESS);
    CHECK(b[0] == 0x33 && b[99] == 0x33, "s2's copy ran after s's memset");
    EQ(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
    EQ(aclrtSynchronizeEventWithTimeout(ev, -5), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtDestroyEvent(ev), ACL_SUCCESS);
    EQ(aclrtRecordEvent(ev, s), ACL_ERROR_RT_INVALID_HANDLE);

    /* the default stream (NULL) of the current device */
    EQ(aclrtMemsetAsync(d, 1000, 0x44, 1, NULL), ACL_SUCCESS);
    EQ(aclrtMemcpyAsync(b, 1000, d, 1, ACL_MEMCPY_DEVICE_TO_HOST, NULL), ACL_SUCCESS);
    EQ(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
    CHECK(b[0] == 0x44, "the default stream");

    EQ(aclrtDestroyStream(s), ACL_SUCCESS);
    EQ(aclrtDestroyStream(s), ACL_ERROR_RT_INVALID_HANDLE);
    EQ(aclrtDestroyStream(s2), ACL_SUCCESS);

    size_t fr = 0, tot = 0;
    EQ(aclrtGetMemInfo(ACL_HBM_MEM, &fr, &tot), ACL_SUCCESS);
    CHECK(tot > fr && fr > 0, "memory info %zu of %zu", fr, tot);
    EQ(aclrtFree(d), ACL_SUCCESS);
    EQ(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID);
    EQ(aclrtFree(d2), ACL_SUCCESS);
    EQ(aclrtFreeHost(h), ACL_SUCCESS);
    EQ(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM);
    EQ(aclrtResetDevice(0), ACL_SUCCESS);
    EQ(aclFinalize(), ACL_SUCCESS);
    EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    if (failures == 0) printf("runtime: ok\n");
    return failures ? 1 : 0;
}
