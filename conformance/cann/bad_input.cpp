// bad_input.cpp: bad input at CANN's entry points (null attributes, a bad PE, a foreign pointer,
// an unknown instance, an unknown team handle, calls before init): each call returns CANN's code
// (or does nothing, for a void call), logs exactly one line naming itself, and neither crashes
// nor disturbs the instances, which keep working. Run by shmemrun on 2 PEs; prints the number
// of calls that must each have logged one line ("bad calls: N"), which the test compares with
// the ERROR lines on standard error.
#include <acl/acl.h>
#include <shmem.h>

#include "check.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

static int bad_calls; // the calls that must log one ERROR line each
#define BAD(call, want)                                                                       \
    do {                                                                                      \
        const long long got_ = (long long)(call);                                             \
        bad_calls++;                                                                          \
        CHECK(got_ == (long long)(want), "%s gave %lld, want %lld", #call, got_, (long long)(want)); \
    } while (0)
#define BAD_VOID(call) \
    do {               \
        call;          \
        bad_calls++;   \
    } while (0)

int main() {
    const int me = std::atoi(std::getenv("SHMEMRUN_PE"));
    const int n = std::atoi(std::getenv("SHMEMRUN_NPES"));
    const int port = std::atoi(std::getenv("CANN_TEST_PORT"));
    CHECK(aclInit(nullptr) == ACL_SUCCESS && aclrtSetDevice(me) == ACL_SUCCESS, "ACL");

    // Before init: no instance.
    BAD(aclshmem_malloc(64), nullptr);
    BAD(aclshmemx_finalize(3), ACLSHMEM_INNER_ERROR);
    BAD(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, nullptr), ACLSHMEM_INVALID_PARAM);
    aclshmemx_init_attr_t attr;
    attr.my_pe = me;
    attr.n_pes = n;
    attr.local_mem_size = 2 << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%d", port);
    BAD(aclshmemx_init_attr(static_cast<aclshmemx_bootstrap_t>(0), &attr), ACLSHMEM_INVALID_PARAM); // no init mode
    CHECK(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) == ACLSHMEM_SUCCESS, "init instance 0");
    aclshmemx_init_attr_t a1 = attr;
    a1.instance_id = 1;
    std::snprintf(a1.ip_port, sizeof a1.ip_port, "tcp://127.0.0.1:0");
    CHECK(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1) == ACLSHMEM_SUCCESS, "init instance 1");
    int32_t *one = static_cast<int32_t *>(aclshmem_calloc(4, sizeof(int32_t))); // on instance 1
    CHECK(aclshmemx_instance_ctx_set(0) == ACLSHMEM_SUCCESS, "back to instance 0");
    int32_t *zero = static_cast<int32_t *>(aclshmem_calloc(4, sizeof(int32_t)));
    CHECK(one && zero, "buffers");
    const int peer = (me + 1) % n;

    // A bad PE, a foreign pointer, another instance's memory: refused, nothing written.
    int32_t on_stack[4] = {7, 7, 7, 7};
    BAD_VOID(aclshmem_int32_put(zero, zero, 4, n));      // PE n does not exist
    BAD_VOID(aclshmem_int32_put(zero, zero, 4, -1));     // nor does PE -1
    BAD_VOID(aclshmem_int32_put(zero, on_stack, 4, peer)); // host memory
    BAD_VOID(aclshmem_int32_put(one, zero, 4, peer));    // instance 1's memory on instance 0
    BAD_VOID(aclshmem_int32_p(on_stack, 1, peer));
    BAD(aclshmem_int32_g(on_stack, peer), 0);
    BAD_VOID(aclshmem_int32_iput(zero, zero, 1, 1, 2, n));
    BAD_VOID(aclshmemx_signal_op_on_stream(on_stack, 1, ACLSHMEM_SIGNAL_SET, peer, nullptr));
    size_t any = 0;
    BAD_VOID(aclshmem_int32_test_any(zero, 4, nullptr, 42, 0, &any)); // not a comparison
    CHECK(any == SIZE_MAX, "the _any sentinel");
    CHECK(aclshmem_ptr(on_stack, peer) == nullptr && aclshmem_ptr(zero, n) == nullptr, "aclshmem_ptr");
    // An unknown team handle, an unknown instance.
    BAD(aclshmem_team_my_pe(77), -1);
    BAD(aclshmem_team_n_pes(77), -1);
    BAD_VOID(aclshmem_barrier(77));
    aclshmem_team_t t = 0;
    BAD(aclshmem_team_split_strided(77, 0, 1, 1, &t), ACLSHMEM_INVALID_PARAM);
    BAD(aclshmemx_instance_ctx_set(200), ACLSHMEM_INNER_ERROR);
    BAD(aclshmemx_finalize(200), ACLSHMEM_INNER_ERROR);
    CHECK(aclshmemx_instance_ctx_get()->id == 0, "instance 0 stays active");

    // The instances still work.
    aclshmem_barrier_all();
    for (int i = 0; i < 4; i++) CHECK(aclshmem_int32_g(zero + i, me) == 0, "nothing written: element %d", i);
    aclshmem_barrier_all(); // every PE has looked before any writes again
    aclshmem_int32_p(zero + 1, 100 + me, peer);
    aclshmem_barrier_all();
    CHECK(aclshmem_int32_g(zero + 1, me) == 100 + (me + n - 1) % n, "instance 0 works");
    CHECK(aclshmemx_instance_ctx_set(1) == ACLSHMEM_SUCCESS, "to instance 1");
    aclshmem_int32_p(one + 2, 200 + me, peer);
    aclshmem_barrier_all();
    CHECK(aclshmem_int32_g(one + 2, me) == 200 + (me + n - 1) % n, "instance 1 works");
    aclshmem_free(one);
    CHECK(aclshmemx_finalize(1) == ACLSHMEM_SUCCESS, "finalize 1");
    CHECK(aclshmemx_instance_ctx_set(0) == ACLSHMEM_SUCCESS, "to instance 0");
    aclshmem_free(zero);
    CHECK(aclshmem_finalize() == ACLSHMEM_SUCCESS, "finalize 0");
    CHECK(aclrtResetDevice(me) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS, "ACL end");
    std::printf("bad_input: PE %d bad calls: %d\n", me, bad_calls);
    if (failures == 0) std::printf("bad_input: PE %d of %d ok\n", me, n);
    return failures ? 1 : 0;
}
