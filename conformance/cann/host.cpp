// host.cpp: a CANN SHMEM host program (C++17, CANN's shmem.h) against libshmem.so's CANN ABI:
// the layouts and C++ defaults of CANN's structs, the init checks and their codes, instance 0
// (queries, heap, teams, barriers), and the multi-instance contract (a second instance, the
// active-instance switch, finalize by id, unknown ids). Each PE passes its own my_pe, n_pes and
// ip_port, as CANN's examples do; started by shmemrun, it takes them from SHMEMRUN_PE and
// SHMEMRUN_NPES, and the port from CANN_TEST_PORT (instance 1's from
// SHMEM_INSTANCE_PORT_RANGE). Built with aclshmem-c++, it runs CANN's usual ACL flow around
// SHMEM: aclInit, aclrtSetDevice (one simulated NPU per PE), ..., aclrtResetDevice, aclFinalize.
#include <acl/acl.h>
#include <shmem.h>

#include "check.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static_assert(sizeof(aclshmemx_init_attr_t) == 120, "aclshmemx_init_attr_t is 120 bytes");
static_assert(offsetof(aclshmemx_init_attr_t, local_mem_size) == 72, "local_mem_size at 72");
static_assert(offsetof(aclshmemx_init_attr_t, option_attr) == 80, "option_attr at 80");
static_assert(offsetof(aclshmemx_init_attr_t, comm_args) == 104, "comm_args at 104");
static_assert(offsetof(aclshmemx_init_attr_t, instance_id) == 112, "instance_id at 112");
static_assert(sizeof(aclshmem_init_optional_attr_t) == 24, "optional attributes are 24 bytes");
static_assert(sizeof(aclshmemx_uniqueid_t) == 136, "aclshmemx_uniqueid_t is 136 bytes");
static_assert(sizeof(aclshmem_team_config_t) == 64, "aclshmem_team_config_t is 64 bytes");
static_assert(ACLSHMEM_UNIQUEID_VERSION == 65672, "the unique id's version");

// CANN's extern logger: the last line and its level.
static int logged_level = -1;
static char logged[512];
static void logger(int level, const char *msg) {
    logged_level = level;
    std::snprintf(logged, sizeof logged, "%s", msg);
}

int main() {
    const int me = std::atoi(std::getenv("SHMEMRUN_PE"));
    const int n = std::atoi(std::getenv("SHMEMRUN_NPES"));
    const char *port = std::getenv("CANN_TEST_PORT");

    EQ(aclInit(nullptr), ACL_SUCCESS);
    EQ(aclrtSetDevice(me), ACL_SUCCESS);

    // CANN's C++ defaults.
    aclshmemx_init_attr_t attr;
    CHECK(attr.option_attr.version == 65560 && attr.option_attr.data_op_engine_type == ACLSHMEM_DATA_OP_MTE,
          "option_attr defaults");
    CHECK(attr.option_attr.shm_init_timeout == 120 && attr.option_attr.control_operation_timeout == 120 &&
              attr.option_attr.sockFd == 0,
          "120 s timeouts");
    CHECK(attr.ip_port[0] == 0 && attr.comm_args == nullptr && attr.instance_id == 0, "empty defaults");

    // init's checks, in CANN's order and with its codes (nothing is created).
    attr.my_pe = me;
    attr.n_pes = n;
    attr.local_mem_size = 2 << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%s", port);
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, nullptr), ACLSHMEM_INVALID_PARAM);
    aclshmemx_init_attr_t bad = attr;
    bad.my_pe = -1;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.n_pes = 0;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.my_pe = n;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_PARAM);
    bad = attr;
    bad.local_mem_size = 0;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.option_attr.shm_init_timeout = 0;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.option_attr.data_op_engine_type = static_cast<data_op_engine_type_t>(0);
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    EQ(aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    EQ(aclshmem_my_pe(), -1);
    CHECK(aclshmem_malloc(64) == nullptr, "malloc before init");

    // Instance 0.
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr), ACLSHMEM_SUCCESS);
    EQ(aclshmemx_init_status(), ACLSHMEM_STATUS_IS_INITIALIZED);
    EQ(aclshmem_my_pe(), me);
    EQ(aclshmem_n_pes(), n);
    EQ(aclshmemx_instance_ctx_get()->id, 0);
    int major = 0, minor = 0;
    aclshmem_info_get_version(&major, &minor);
    CHECK(major == 1 && minor == 1, "version %d.%d", major, minor);
    char name[ACLSHMEM_MAX_NAME_LEN];
    aclshmem_info_get_name(name);
    CHECK(std::strcmp(name, "ACLSHMEM v1.1.1") == 0, "name %s", name);
    EQ(aclshmemx_set_conf_store_tls(false, nullptr, 0), 0);
    // CANN's shmem_* aliases are macros of the same calls (no clash with OpenSHMEM's symbols).
    EQ(shmem_my_pe(), me);
    EQ(shmem_n_pes(), n);
    shmem_init_attr_t *same = &attr;
    CHECK(same == &attr, "the type alias");

    void *p = aclshmem_malloc(256);
    void *z = aclshmem_calloc(16, 8);
    void *al = aclshmem_align(4096, 100);
    CHECK(p && z && al && reinterpret_cast<std::uintptr_t>(al) % 4096 == 0, "malloc, calloc, align");
    CHECK(aclshmem_ptr(p, me) == p, "aclshmem_ptr to this PE");
    CHECK(aclshmem_ptr(p, n) == nullptr && aclshmem_ptr(p, -1) == nullptr, "aclshmem_ptr to no PE");
    CHECK(n == 1 || aclshmem_ptr(p, (me + 1) % n) != nullptr, "aclshmem_ptr to a peer");
    char *base = static_cast<char *>(aclshmemx_get_heap_base());
    CHECK(base && static_cast<char *>(p) > base, "heap base %p below %p", static_cast<void *>(base), p);
    CHECK(aclshmem_malloc(0) == nullptr, "malloc(0)");
    CHECK(aclshmemx_malloc(64, HOST_SIDE) == nullptr, "the host-side heap is absent");
    CHECK(aclshmem_align(3, 64) == nullptr, "align to 3");
    aclshmem_free(al);
    aclshmem_free(z);
    aclshmem_free(p);
    aclshmem_free(nullptr);

    // Host RMA: kernels on the default stream, complete at the next barrier. Both sides are
    // symmetric memory (CANN's kernels read and write global memory).
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    // Strict mode holds queued work back; the hw backend completes each host call in order.
    const char *backend = std::getenv("SHMEM_BACKEND");
    const bool on_hw = backend && std::strcmp(backend, "hw") == 0;
    const bool strict =
        !on_hw && std::getenv("SHMEM_SIM_STRICT") && std::strcmp(std::getenv("SHMEM_SIM_STRICT"), "1") == 0;
    auto *src = static_cast<int64_t *>(aclshmem_calloc(8, sizeof(int64_t)));
    auto *dst = static_cast<int64_t *>(aclshmem_calloc(8, sizeof(int64_t)));
    auto *flag = static_cast<int32_t *>(aclshmem_calloc(2, sizeof(int32_t)));
    CHECK(src && dst && flag, "symmetric buffers");
    aclshmem_int32_p(flag, 7, me);
    const int32_t before = aclshmem_int32_g(flag, me); // not ordered after the queued p
    if (strict) EQ(before, 0); // strict mode: queued work runs only at a synchronisation
    aclshmem_barrier_all();
    EQ(aclshmem_int32_g(flag, me), 7);
    for (int i = 0; i < 8; i++) aclshmem_int64_p(src + i, 0x0123456789ABCDEFLL + me * 16 + i, me);
    aclshmem_barrier_all();
    aclshmem_int64_put(dst + 1, src, 6, next); // dst[0] and dst[7] stay 0
    aclshmem_barrier_all();
    for (int i = 0; i < 8; i++) {
        const int64_t want = (i == 0 || i == 7) ? 0 : 0x0123456789ABCDEFLL + prev * 16 + (i - 1);
        CHECK(aclshmem_int64_g(dst + i, me) == want, "put from PE %d, element %d", prev, i);
    }
    aclshmem_int64_get(dst, src + 4, 2, next); // dst[0..2] = next's src[4..6]
    aclshmem_barrier_all();
    EQ(aclshmem_int64_g(dst, me), 0x0123456789ABCDEFLL + next * 16 + 4);
    aclrtStream stream = nullptr;
    EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
    aclshmemx_putmem_on_stream(flag + 1, flag, sizeof(int32_t), next, stream);
    EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    aclshmem_barrier_all();
    EQ(aclshmem_int32_g(flag + 1, me), 7);
    EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    // Sized forms, and the point-to-point routines (after the default stream's work).
    aclshmem_put64(dst + 2, src, 2, next);
    aclshmem_barrier_all();
    EQ(aclshmem_int64_g(dst + 3, me), 0x0123456789ABCDEFLL + prev * 16 + 1);
    auto *words = static_cast<int32_t *>(aclshmem_calloc(4, sizeof(int32_t)));
    aclshmem_barrier_all();
    aclshmem_int32_p(words + 1, 5 + me, next); // the next PE's words[1] = 5 + me
    aclshmem_int32_wait_until(words + 1, ACLSHMEM_CMP_EQ, 5 + prev);
    int res = -1;
    aclshmem_int32_test(words + 1, ACLSHMEM_CMP_EQ, 5 + prev, &res);
    EQ(res, 1);
    size_t any = 0, some = 99, idx[4] = {9, 9, 9, 9};
    aclshmem_int32_test_any(words, 4, nullptr, ACLSHMEM_CMP_NE, 0, &any);
    EQ(any, 1);
    aclshmem_int32_wait_until_some(words, 4, idx, nullptr, ACLSHMEM_CMP_GT, 4, &some);
    CHECK(some == 1 && idx[0] == 1, "wait_until_some: %zu, first %zu", some, idx[0]);
    int32_t want[4] = {0, 5 + prev, 0, 0};
    aclshmem_int32_test_all_vector(words, 4, nullptr, ACLSHMEM_CMP_EQ, want, &res);
    EQ(res, 1);
    // CANN reads status, indices and cmp_values and writes res_out on the device: device memory
    // (a heap, or aclrtMalloc memory) works, as on an NPU.
    auto *dres = static_cast<uint64_t *>(aclshmem_calloc(2, sizeof(uint64_t)));
    void *didx = nullptr;
    EQ(aclrtMalloc(&didx, 4 * sizeof(size_t), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    aclshmem_int32_test(words + 1, ACLSHMEM_CMP_EQ, 5 + prev, reinterpret_cast<int *>(dres));
    aclshmem_int32_test_some(words, 4, static_cast<size_t *>(didx), nullptr, ACLSHMEM_CMP_GT, 4,
                             reinterpret_cast<size_t *>(dres + 1));
    aclshmem_barrier_all();
    EQ(aclshmem_int32_g(reinterpret_cast<int32_t *>(dres), me), 1);
    EQ(aclshmem_uint64_g(dres + 1, me), 1);
    size_t first = 9;
    EQ(aclrtMemcpy(&first, sizeof first, didx, sizeof first, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    EQ(first, 1);
    EQ(aclrtFree(didx), ACL_SUCCESS);
    aclshmem_free(dres);
    aclshmem_int32_test_any(words, 4, nullptr, 99, 0, &any); // a bad comparison: CANN's sentinel
    EQ(any, SIZE_MAX);
    aclshmem_signal_wait_until(words + 1, ACLSHMEM_CMP_GE, 5);
    EQ(aclshmemx_set_mte_config(0, 16 * 1024, 0), ACLSHMEM_SUCCESS);
    EQ(aclshmemx_set_rdma_config(0, 64, 0), ACLSHMEM_INVALID_VALUE);
    EQ(util_get_ffts_config(), 0);
    aclshmem_barrier_all();
    aclshmem_free(words);
    // Strided RMA between symmetric buffers (strides in elements).
    auto *st = static_cast<int64_t *>(aclshmem_calloc(8, sizeof(int64_t)));
    aclshmem_barrier_all();
    aclshmem_int64_iput(st, src, 2, 3, 3, next);  // the next PE's st[0, 2, 4] = src[0, 3, 6]
    aclshmem_int64_iget(st + 5, src, 1, 4, 2, next); // st[5, 6] = the next PE's src[0, 4]
    aclshmem_iput64(st + 7, src + 1, 1, 1, 1, next);  // the next PE's st[7] = src[1]
    aclshmem_barrier_all();
    {
        const int64_t base_prev = 0x0123456789ABCDEFLL + prev * 16, base_next = 0x0123456789ABCDEFLL + next * 16;
        const int64_t want_st[8] = {base_prev, 0, base_prev + 3, 0, base_prev + 6, base_next, base_next + 4, base_prev + 1};
        for (int i = 0; i < 8; i++) CHECK(aclshmem_int64_g(st + i, me) == want_st[i], "strided element %d", i);
    }
    aclshmem_int64_iput(st, src, -1, 1, 2, next); // a negative stride: refused, logged
    aclshmem_free(st);

    // Put with signal: the data, then the signal word (an int32_t), on the default stream.
    auto *sig = static_cast<int32_t *>(aclshmem_calloc(2, sizeof(int32_t)));
    auto *got = static_cast<int64_t *>(aclshmem_calloc(4, sizeof(int64_t)));
    aclshmem_barrier_all();
    aclshmem_int64_put_signal(got, src, 2, reinterpret_cast<uint8_t *>(sig), 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmem_put64_signal_nbi(got + 2, src + 2, 1, sig, 1, ACLSHMEM_SIGNAL_ADD, next);
    aclshmemx_putmem_signal(got + 3, src + 3, sizeof(int64_t), sig + 1, 42, ACLSHMEM_SIGNAL_SET, next);
    aclshmem_signal_wait_until(sig, ACLSHMEM_CMP_EQ, 2); // runs this PE's default stream first
    aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_EQ, 42);
    for (int i = 0; i < 4; i++)
        CHECK(aclshmem_int64_g(got + i, me) == 0x0123456789ABCDEFLL + prev * 16 + i, "signalled data %d", i);
    aclshmem_barrier_all(); // every PE has seen its signals before they change again
    // A signal and a barrier on an ACL stream: complete when the stream is synchronised.
    aclrtStream s2 = nullptr;
    EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
    aclshmemx_signal_op_on_stream(sig, 10, ACLSHMEM_SIGNAL_ADD, next, s2);
    aclshmemx_signal_op_on_stream(sig, 1, 7, next, s2); // not a signal operation: refused
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_INVALID, s2); // a no-op
    aclshmemx_barrier_all_on_stream(s2);
    EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    EQ(aclshmem_int32_g(sig, me), 12);
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, nullptr); // ACL's default stream: done on return
    EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
    aclshmem_free(got);
    aclshmem_free(sig);

    // Logging: the refused call's line goes to the program's logger, at ERROR (3).
    EQ(aclshmemx_set_extern_logger(logger), 0);
    int64_t on_stack[2] = {1, 2};
    aclshmem_int64_put(dst, on_stack, 2, next); // host memory: refused, logged
    CHECK(logged_level == 3 && std::strstr(logged, "aclshmem_int64_put") != nullptr, "logged %d: %s", logged_level,
          logged);
    EQ(aclshmemx_set_extern_logger(nullptr), 0);
    EQ(aclshmemx_set_log_level(9), ACLSHMEM_INVALID_VALUE);
    EQ(aclshmemx_set_log_level(2), ACLSHMEM_SUCCESS);
    aclshmem_prof_pe_t *profs = reinterpret_cast<aclshmem_prof_pe_t *>(&attr);
    aclshmemx_get_prof(&profs, false);
    CHECK(profs == nullptr, "no device profiles");
    aclshmemx_show_prof();
    aclshmem_barrier_all();
    EQ(aclshmem_int64_g(dst, me), 0x0123456789ABCDEFLL + next * 16 + 4);
    aclshmem_free(flag);
    aclshmem_free(dst);
    aclshmem_free(src);

    // Teams on instance 0.
    aclshmem_team_t evens = -2;
    EQ(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &evens), ACLSHMEM_SUCCESS);
    if (me % 2 == 0) {
        CHECK(evens > 0, "an even PE's team %d", evens);
        EQ(aclshmem_team_my_pe(evens), me / 2);
        EQ(aclshmem_team_n_pes(evens), (n + 1) / 2);
        EQ(aclshmem_team_translate_pe(evens, 0, ACLSHMEM_TEAM_WORLD), 0);
        aclshmem_team_config_t cfg;
        EQ(aclshmem_team_get_config(evens, &cfg), ACLSHMEM_SUCCESS);
        EQ(aclshmem_team_get_config(evens, nullptr), 1);
        aclshmem_barrier(evens);
    } else {
        EQ(evens, ACLSHMEM_TEAM_INVALID);
    }
    EQ(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 0, 1, &evens), ACLSHMEM_INVALID_PARAM);
    EQ(aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, 1, nullptr), ACLSHMEM_INVALID_PARAM);
    EQ(aclshmem_team_my_pe(1000), -1);
    aclshmem_barrier(ACLSHMEM_TEAM_INVALID); // a no-op
    aclshmem_barrier_all();
    aclshmem_sync_all();

    // CANN's barrier test: the ring increment. Each PE reads its value, then after a barrier
    // stores value + 1 to the next PE; after round i every PE holds i. Without the barriers'
    // completion of the default stream the values would lag (always, under strict mode).
    {
        auto *ring = static_cast<int32_t *>(aclshmem_calloc(1, sizeof(int32_t)));
        aclshmem_barrier_all();
        for (int round = 1; round <= 3; round++) {
            const int32_t v = aclshmem_int32_g(ring, me);
            aclshmem_barrier_all();
            aclshmem_int32_p(ring, v + 1, next);
            aclshmem_barrier_all();
            CHECK(aclshmem_int32_g(ring, me) == round, "ring round %d: %d", round, aclshmem_int32_g(ring, me));
        }
        aclshmem_free(ring);
    }
    // An instance id beyond the port range: INVALID_VALUE, nothing created, instance 0 active.
    {
        aclshmemx_init_attr_t bad;
        bad.my_pe = me;
        bad.n_pes = n;
        bad.local_mem_size = 2 << 20;
        std::snprintf(bad.ip_port, sizeof bad.ip_port, "tcp://127.0.0.1:0");
        bad.instance_id = 3; // SHMEM_INSTANCE_PORT_RANGE (start:start + 1) holds id 1 only
        EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
        EQ(aclshmemx_instance_ctx_get()->id, 0);
        EQ(aclshmemx_init_status(), ACLSHMEM_STATUS_IS_INITIALIZED);
    }

    // A second instance over the same PEs (port: SHMEM_INSTANCE_PORT_RANGE's start + 1).
    aclshmemx_init_attr_t a1;
    a1.my_pe = me;
    a1.n_pes = n;
    a1.local_mem_size = 2 << 20;
    std::snprintf(a1.ip_port, sizeof a1.ip_port, "tcp://127.0.0.1:0");
    a1.instance_id = 1;
    EQ(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1), ACLSHMEM_SUCCESS);
    EQ(aclshmemx_instance_ctx_get()->id, 1);
    EQ(aclshmem_my_pe(), me);
    void *q = aclshmem_malloc(64);
    CHECK(q != nullptr, "malloc on instance 1");
    EQ(aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD), ACLSHMEM_NOT_SUPPORTED);
    CHECK(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1) != ACLSHMEM_SUCCESS, "a duplicate id");
    EQ(aclshmemx_instance_ctx_get()->id, 1);
    aclshmem_barrier_all();
    aclshmem_free(q);
    EQ(aclshmemx_instance_ctx_set(0), ACLSHMEM_SUCCESS);
    EQ(aclshmemx_instance_ctx_get()->id, 0);
    EQ(aclshmemx_instance_ctx_set(7), ACLSHMEM_INNER_ERROR);
    EQ(aclshmemx_instance_ctx_get()->id, 0);
    EQ(aclshmemx_finalize(1), ACLSHMEM_SUCCESS); // switches to 1, finalizes it, back to 0
    EQ(aclshmemx_instance_ctx_get()->id, 0);
    EQ(aclshmemx_finalize(9), ACLSHMEM_INNER_ERROR);
    EQ(aclshmemx_instance_ctx_get()->id, 0);
    EQ(aclshmem_my_pe(), me);
    EQ(aclshmem_finalize(), ACLSHMEM_SUCCESS);
    EQ(aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    EQ(aclrtResetDevice(me), ACL_SUCCESS);
    EQ(aclFinalize(), ACL_SUCCESS);

    if (failures == 0) std::printf("host: PE %d of %d ok\n", me, n);
    return failures ? 1 : 0;
}
