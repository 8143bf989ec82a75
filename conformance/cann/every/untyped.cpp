// untyped.cpp: the hand-written half of the CANN every-symbol program
// (core/capi/lib/tests/cann_every_symbol.rs): main, CANN's init and finalize flow inside ACL's,
// and a checked call of every CANN host entry point that has no type or size in its name:
// init, finalize and the multi-instance context, information, the unique id, TLS, global_exit,
// the heap, teams, barriers (also on a stream), putmem/getmem (also _nbi and on a stream),
// quiet_on_stream, ptr, the engine configurations, putmem_signal(_nbi), signal_op_on_stream,
// signal_wait_until (also on a stream), util_get_ffts_config, handle_wait, logging and
// profiling. The typed and sized routines are in the generated half, which the test writes
// beside the program as cann_every_typed.inc and this file #includes.
//
// Runs on exactly 2 PEs under shmemrun. Each PE passes its own my_pe, n_pes and ip_port, as
// CANN's examples do (SHMEMRUN_PE, SHMEMRUN_NPES, and the port from CANN_TEST_PORT); instances
// above 0 take port SHMEM_INSTANCE_PORT_RANGE's start + id. Symmetric memory is reached only
// through CANN's calls: values are staged with _p to this PE and read with _g after a
// synchronisation, never with host loads and stores (the heap is device memory on an NPU).
// Every failed check prints the PE, the symbol, and what was expected and found; each PE ends
// with one line counting its failed checks.
#include <acl/acl.h>
#include <shmem.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>
#include <type_traits>

#include <unistd.h>

/* Four symmetric regions of EVERY_REGION bytes: a destination of remote writes (d), a source
 * (s), a destination of local writes (l), and signal words (g). */
#define EVERY_REGION 4096
/* The most elements a typed check looks at. */
#define EVERY_MAX_ELEMS 16
/* The signal words around a target. */
#define EVERY_SIG_SENTINEL ((int32_t)0x5A5A5A5A)
/* What a size_t result or index holds before the routine writes it. */
#define EVERY_IX_SENTINEL ((size_t)0x5A5A5A5A5A5A5A5AULL)

static int every_me = -1, every_peer = -1;
static bool every_strict;
static unsigned char *every_d, *every_s, *every_l, *every_g;
static int failures, known;

/* The point-to-point routines' res_out, indices, status and cmp_values. CANN dereferences them
 * on the device; this library's C ABI reads and writes them as host memory (its documented
 * difference, docs/cann-differences.md), so they are host arrays here, reached only through
 * these helpers. */
static int every_res_t;               /* an int result */
static size_t every_res_r;            /* a size_t result */
static size_t every_res_ix[5];        /* 5 indices: a guard, 3 for the routine, a guard */
static const int every_status[3] = {0, 1, 0}; /* element 1 is excluded */
alignas(8) static unsigned char every_cv[3 * 8]; /* 3 comparison values of any type */

/* An int result word holding -7, for the routine to overwrite; then what it holds. */
static int *fresh_t() {
    every_res_t = -7;
    return &every_res_t;
}
static int got_t() { return every_res_t; }
/* A size_t result word holding EVERY_IX_SENTINEL; then what it holds. */
static size_t *fresh_r() {
    every_res_r = EVERY_IX_SENTINEL;
    return &every_res_r;
}
static size_t got_r() { return every_res_r; }
/* 5 indices holding EVERY_IX_SENTINEL, of which the routine gets the middle 3; then all 5. */
static size_t *fresh_ix() {
    for (size_t &i : every_res_ix) i = EVERY_IX_SENTINEL;
    return every_res_ix + 1;
}
static void got_ix(size_t *ix) { std::memcpy(ix, every_res_ix, sizeof every_res_ix); }

/* Generated: 1 when KNOWN_FAILURES lists this failed check of `symbol`, by a part of `message`. */
static int every_known(const char *symbol, const char *message);

/* Reports a failed check of `symbol` and counts it, apart when the generator lists it as known. */
static void every_fail(const char *symbol, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void every_fail(const char *symbol, const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    const int is_known = every_known(symbol, message);
    std::fprintf(stderr, "PE %d: %s %s: %s\n", every_me, is_known ? "KNOWN" : "FAIL", symbol, message);
    if (is_known)
        known++;
    else
        failures++;
}
#define EXPECT(cond, symbol, ...)                       \
    do {                                                \
        if (!(cond)) every_fail(symbol, __VA_ARGS__);   \
    } while (0)
/* A call's result, as an integer, against the one it should have. */
#define EXPECT_EQ(symbol, call, want)                                                           \
    do {                                                                                        \
        const long long got_ = (long long)(call), want_ = (long long)(want);                    \
        if (got_ != want_) every_fail(symbol, "%s gave %lld, want %lld", #call, got_, want_);   \
    } while (0)

template <class T>
static inline void fill(T *a, size_t n, T x) {
    for (size_t i = 0; i < n; i++) a[i] = x;
}

/* The comparisons, and what each gives for a value against itself and against its type's maximum. */
static const int every_cmps[6] = {ACLSHMEM_CMP_EQ, ACLSHMEM_CMP_NE, ACLSHMEM_CMP_GT,
                                  ACLSHMEM_CMP_GE, ACLSHMEM_CMP_LT, ACLSHMEM_CMP_LE};
static const char *const every_cmp_names[6] = {"EQ", "NE", "GT", "GE", "LT", "LE"};
static const int every_with_itself[6] = {1, 0, 0, 1, 0, 1};
static const int every_with_max[6] = {0, 1, 0, 0, 1, 1};

/* Polls this PE's int32_t signal word with aclshmem_int32_test (which runs this PE's queued
 * work first) until it is `value`, for at most 20 s: whether it came. A wait for a value that
 * never comes would block until the library's timeout, so the waits come after it. */
static bool signal_arrives(int32_t *sig, int32_t value) {
    const time_t end = std::time(nullptr) + 20;
    for (;;) {
        aclshmem_int32_test(sig, ACLSHMEM_CMP_EQ, value, fresh_t());
        if (got_t() == 1) return true;
        if (std::time(nullptr) > end) return false;
    }
}

#include "cann_every_typed.inc"

/* Byte i of PE pe's pattern; token k of PE pe, an int32_t that is negative and differs for
 * every PE and k. */
static inline unsigned char pattern(int pe, int i) { return (unsigned char)((i * 37 + pe * 101) ^ 0xA5); }
static inline int32_t token(int pe, int k) { return (int32_t)(0x81A3C5E7u + 0x01010101u * (uint32_t)k + (uint32_t)pe); }

static void stage_bytes(void *sym, const unsigned char *vals, size_t n) {
    for (size_t i = 0; i < n; i++) aclshmem_uint8_p(static_cast<uint8_t *>(sym) + i, vals[i], every_me);
}
static void fetch_bytes(void *sym, unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = aclshmem_uint8_g(static_cast<uint8_t *>(sym) + i, every_me);
}
static void check_bytes(const char *symbol, const char *what, void *sym, const unsigned char *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char got = aclshmem_uint8_g(static_cast<uint8_t *>(sym) + i, every_me);
        EXPECT(got == want[i], symbol, "%s byte %zu: expected %#04x, got %#04x", what, i, want[i], got);
    }
}

/* The decrypt handler given to aclshmemx_set_config_store_tls_key: never called, as TLS is off. */
static int decrypt_calls;
static int decrypt(const char *, size_t, char *, size_t &) {
    decrypt_calls++;
    return -1;
}

/* CANN's extern logger: the lines it got, the last one and its level. */
static int logged_count, logged_level = -1;
static char logged[512];
static void logger(int level, const char *msg) {
    logged_count++;
    logged_level = level;
    std::snprintf(logged, sizeof logged, "%s", msg);
}

/* Before init: the queries, information, TLS, and init's refusals. */
static void before_init(const aclshmemx_init_attr_t &attr) {
    EXPECT_EQ("aclshmemx_init_status", aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    EXPECT_EQ("aclshmem_my_pe", aclshmem_my_pe(), -1);
    EXPECT_EQ("aclshmem_n_pes", aclshmem_n_pes(), -1);
    EXPECT_EQ("aclshmemx_instance_ctx_get", aclshmemx_instance_ctx_get()->id, 0);
    EXPECT(aclshmem_malloc(64) == nullptr, "aclshmem_malloc", "before init: expected NULL");
    EXPECT(aclshmemx_get_heap_base() == nullptr, "aclshmemx_get_heap_base", "before init: expected NULL");

    int major = -1, minor = -1;
    aclshmem_info_get_version(&major, &minor);
    EXPECT(major == ACLSHMEM_MAJOR_VERSION && minor == ACLSHMEM_MINOR_VERSION, "aclshmem_info_get_version",
           "expected %d.%d, got %d.%d", ACLSHMEM_MAJOR_VERSION, ACLSHMEM_MINOR_VERSION, major, minor);
    char name[ACLSHMEM_MAX_NAME_LEN + 8], want[64];
    std::memset(name, 0x5A, sizeof name);
    std::snprintf(want, sizeof want, "ACLSHMEM v%d.%d.%d", ACLSHMEM_VENDOR_MAJOR_VER, ACLSHMEM_VENDOR_MINOR_VER,
                  ACLSHMEM_VENDOR_PATCH_VER);
    aclshmem_info_get_name(name);
    EXPECT(std::memchr(name, 0, ACLSHMEM_MAX_NAME_LEN) != nullptr && std::strcmp(name, want) == 0,
           "aclshmem_info_get_name", "expected \"%s\", got \"%.*s\"", want, ACLSHMEM_MAX_NAME_LEN, name);
    for (int i = ACLSHMEM_MAX_NAME_LEN; i < ACLSHMEM_MAX_NAME_LEN + 8; i++)
        EXPECT(name[i] == 0x5A, "aclshmem_info_get_name", "wrote byte %d, beyond ACLSHMEM_MAX_NAME_LEN", i);

    // TLS: accepted before init; CANN's config store turns it off at init whatever is set.
    const char pk[] = "-----BEGIN PRIVATE KEY-----", pw[] = "secret";
    EXPECT_EQ("aclshmemx_set_config_store_tls_key",
              aclshmemx_set_config_store_tls_key(pk, sizeof pk - 1, pw, sizeof pw - 1, decrypt), 0);
    EXPECT_EQ("aclshmemx_set_conf_store_tls", aclshmemx_set_conf_store_tls(false, nullptr, 0), 0);

    // init's checks, in CANN's order and with its codes: nothing is created.
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, nullptr), ACLSHMEM_INVALID_PARAM);
    aclshmemx_init_attr_t bad = attr;
    bad.my_pe = 2;
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_PARAM);
    bad = attr;
    bad.local_mem_size = 0;
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.option_attr.control_operation_timeout = 0;
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    bad = attr;
    bad.option_attr.data_op_engine_type = static_cast<data_op_engine_type_t>(0x10);
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &bad), ACLSHMEM_INVALID_VALUE);
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
}

/* Every heap call: the blocks are symmetric, aligned, zeroed where asked, and freed for real. */
static void heap() {
    const int me = every_me, peer = every_peer;
    char *base = static_cast<char *>(aclshmemx_get_heap_base());
    EXPECT(base != nullptr, "aclshmemx_get_heap_base", "expected the device heap's base, got NULL");
    EXPECT(aclshmemx_get_heap_base(HOST_SIDE) == nullptr, "aclshmemx_get_heap_base",
           "HOST_SIDE (no memory-fabric handles): expected NULL");

    struct Block {
        const char *sym;
        int64_t *p;
        size_t alignment;
        bool zeroed;
    } blocks[6] = {
        {"aclshmem_malloc", static_cast<int64_t *>(aclshmem_malloc(4 * sizeof(int64_t))), 8, false},
        {"aclshmem_calloc", static_cast<int64_t *>(aclshmem_calloc(4, sizeof(int64_t))), 8, true},
        {"aclshmem_align", static_cast<int64_t *>(aclshmem_align(4096, 3 * sizeof(int64_t))), 4096, false},
        {"aclshmemx_malloc", static_cast<int64_t *>(aclshmemx_malloc(4 * sizeof(int64_t))), 8, false},
        {"aclshmemx_calloc", static_cast<int64_t *>(aclshmemx_calloc(4, sizeof(int64_t), DEVICE_SIDE)), 8, true},
        {"aclshmemx_align", static_cast<int64_t *>(aclshmemx_align(256, 3 * sizeof(int64_t))), 256, false},
    };
    bool all = true;
    for (const Block &b : blocks) {
        EXPECT(b.p != nullptr, b.sym, "expected a block, got NULL");
        if (!b.p) {
            all = false;
            continue;
        }
        EXPECT(reinterpret_cast<uintptr_t>(b.p) % b.alignment == 0, b.sym, "%p is not aligned to %zu", (void *)b.p,
               b.alignment);
        EXPECT(base && reinterpret_cast<char *>(b.p) > base, b.sym, "%p is not above the heap base %p", (void *)b.p,
               (void *)base);
        EXPECT(aclshmem_ptr(b.p, me) == b.p, b.sym, "aclshmem_ptr does not find %p in the heap", (void *)b.p);
        if (b.zeroed) {
            const int64_t zero[3] = {0, 0, 0};
            check_int64(b.sym, "a fresh block", b.p, zero, 3);
        }
    }
    if (all) {
        // Each block is symmetric: the other PE's copy takes a put between untouched neighbours.
        for (const Block &b : blocks) {
            const int64_t zero[3] = {0, 0, 0};
            stage_int64(b.p, zero, 3);
        }
        aclshmem_barrier_all();
        for (int k = 0; k < 6; k++) aclshmem_int64_p(blocks[k].p + 1, v_int64(me * 6 + k), peer);
        aclshmem_barrier_all();
        for (int k = 0; k < 6; k++) {
            const int64_t want[3] = {0, v_int64(peer * 6 + k), 0};
            check_int64(blocks[k].sym, "the block after the other PE's put", blocks[k].p, want, 3);
        }
    }
    EXPECT(aclshmemx_malloc(64, HOST_SIDE) == nullptr, "aclshmemx_malloc", "HOST_SIDE: expected NULL");
    EXPECT(aclshmemx_calloc(4, 16, HOST_SIDE) == nullptr, "aclshmemx_calloc", "HOST_SIDE: expected NULL");
    EXPECT(aclshmemx_align(64, 64, HOST_SIDE) == nullptr, "aclshmemx_align", "HOST_SIDE: expected NULL");
    EXPECT(aclshmem_malloc(0) == nullptr, "aclshmem_malloc", "0 bytes: expected NULL");
    EXPECT(aclshmem_align(3, 64) == nullptr, "aclshmem_align", "alignment 3: expected NULL");

    // Freeing releases: the heap (4 MiB, plus what CANN's 6 MiB reserve leaves) holds one 3 MiB
    // block at a time.
    const size_t big = 3 << 20;
    void *one = aclshmem_malloc(big);
    EXPECT(one != nullptr, "aclshmem_malloc", "3 MiB: expected a block, got NULL");
    void *two = aclshmem_malloc(big);
    EXPECT(two == nullptr, "aclshmem_malloc", "a second 3 MiB while the first is held: expected NULL, got %p", two);
    aclshmem_free(one);
    one = aclshmemx_malloc(big, DEVICE_SIDE);
    EXPECT(one != nullptr, "aclshmem_free", "3 MiB after freeing the first: expected a block, got NULL");
    aclshmemx_free(one, HOST_SIDE); // the host heap does not exist: refused, nothing freed
    two = aclshmem_malloc(big);
    EXPECT(two == nullptr, "aclshmemx_free", "HOST_SIDE freed a device block: a second 3 MiB got %p", two);
    aclshmemx_free(one);
    two = aclshmem_malloc(big);
    EXPECT(two != nullptr, "aclshmemx_free", "3 MiB after freeing the block: expected a block, got NULL");
    aclshmem_free(two);
    aclshmem_free(nullptr);
    for (int k = 0; k < 3; k++) aclshmem_free(blocks[k].p);
    aclshmemx_free(blocks[3].p);
    aclshmemx_free(blocks[4].p, DEVICE_SIDE);
    aclshmemx_free(blocks[5].p);
    // Memory written and freed comes back zeroed from calloc.
    const int64_t zero[4] = {0, 0, 0, 0};
    auto *c1 = static_cast<int64_t *>(aclshmem_calloc(4, sizeof(int64_t)));
    auto *c2 = static_cast<int64_t *>(aclshmemx_calloc(4, sizeof(int64_t)));
    EXPECT(c1 && c2, "aclshmem_calloc", "after the frees: expected blocks, got %p and %p", (void *)c1, (void *)c2);
    if (c1) check_int64("aclshmem_calloc", "a block of freed memory", c1, zero, 4);
    if (c2) check_int64("aclshmemx_calloc", "a block of freed memory", c2, zero, 4);
    aclshmem_free(c1);
    aclshmemx_free(c2);
    aclshmem_barrier_all();
}

/* putmem/getmem (and _nbi, and on a stream), quiet_on_stream, ptr, the engine configurations. */
static void rma_untyped() {
    const int me = every_me, peer = every_peer;
    unsigned char *d = every_d, *s = every_s, *l = every_l;
    unsigned char w[32], x[32];

    // putmem and putmem_nbi: 5 bytes from s + 1 to the other PE's d + 3; getmem and getmem_nbi:
    // the other PE's s + 2 (7 bytes) to this PE's l + 1.
    for (int k = 0; k < 4; k++) {
        static const char *const syms[4] = {"aclshmem_putmem", "aclshmem_putmem_nbi", "aclshmem_getmem",
                                            "aclshmem_getmem_nbi"};
        const bool put = k < 2;
        unsigned char *dest = put ? d : l;
        fill(w, 32, (unsigned char)0x5A);
        stage_bytes(dest, w, 32);
        for (int i = 0; i < 32; i++) x[i] = pattern(me, i + 32 * k);
        stage_bytes(s, x, 32);
        aclshmem_barrier_all();
        switch (k) {
            case 0: aclshmem_putmem(d + 3, s + 1, 5, peer); break;
            case 1: aclshmem_putmem_nbi(d + 3, s + 1, 5, peer); break;
            case 2: aclshmem_getmem(l + 1, s + 2, 7, peer); break;
            default: aclshmem_getmem_nbi(l + 1, s + 2, 7, peer); break;
        }
        if (!put && every_strict)
            check_bytes(syms[k], "before the barrier under SHMEM_SIM_STRICT=1 (queued until a synchronisation)", l, w,
                        32);
        aclshmem_barrier_all();
        if (put)
            for (int i = 0; i < 5; i++) w[3 + i] = pattern(peer, 1 + i + 32 * k);
        else
            for (int i = 0; i < 7; i++) w[1 + i] = pattern(peer, 2 + i + 32 * k);
        check_bytes(syms[k], "dest", dest, w, 32);
        check_bytes(syms[k], "source", s, x, 32);
    }

    // On an ACL stream: both complete at aclrtSynchronizeStream.
    aclrtStream st = nullptr;
    EXPECT_EQ("aclshmemx_putmem_on_stream", aclrtCreateStream(&st), ACL_SUCCESS);
    unsigned char wl[32];
    fill(w, 32, (unsigned char)0x5A);
    fill(wl, 32, (unsigned char)0x5A);
    stage_bytes(d, w, 32);
    stage_bytes(l, wl, 32);
    for (int i = 0; i < 32; i++) x[i] = pattern(me, i + 200);
    stage_bytes(s, x, 32);
    aclshmem_barrier_all();
    aclshmemx_putmem_on_stream(d + 4, s + 2, 6, peer, st);
    aclshmemx_getmem_on_stream(l + 1, s + 8, 9, peer, st);
    if (every_strict)
        check_bytes("aclshmemx_getmem_on_stream", "before aclrtSynchronizeStream under SHMEM_SIM_STRICT=1", l, wl, 32);
    aclshmemx_quiet_on_stream(st);
    EXPECT_EQ("aclshmemx_quiet_on_stream", aclrtSynchronizeStream(st), ACL_SUCCESS);
    for (int i = 0; i < 9; i++) wl[1 + i] = pattern(peer, 8 + i + 200);
    check_bytes("aclshmemx_getmem_on_stream", "dest, once the stream is synchronised", l, wl, 32);
    aclshmem_barrier_all(); // the other PE's stream is synchronised too
    for (int i = 0; i < 6; i++) w[4 + i] = pattern(peer, 2 + i + 200);
    check_bytes("aclshmemx_putmem_on_stream", "dest, once the streams are synchronised", d, w, 32);

    // A NULL stream is the default stream: complete at the barrier.
    aclshmem_barrier_all(); // the other PE has checked its d
    aclshmemx_putmem_on_stream(d + 20, s + 3, 2, peer, nullptr);
    aclshmemx_getmem_on_stream(l + 20, s + 5, 3, peer, nullptr);
    aclshmemx_quiet_on_stream(nullptr);
    aclshmem_barrier_all();
    w[20] = pattern(peer, 3 + 200);
    w[21] = pattern(peer, 4 + 200);
    for (int i = 0; i < 3; i++) wl[20 + i] = pattern(peer, 5 + i + 200);
    check_bytes("aclshmemx_putmem_on_stream", "dest, NULL stream", d, w, 32);
    check_bytes("aclshmemx_getmem_on_stream", "dest, NULL stream", l, wl, 32);
    EXPECT_EQ("aclshmemx_putmem_on_stream", aclrtDestroyStream(st), ACL_SUCCESS);

    // Strides are element counts of 0 or more: a source stride of 0 repeats one element.
    aclshmem_barrier_all(); // the other PE has checked its d and l
    {
        int32_t wi[8], xi[8];
        fill(wi, 8, EVERY_SIG_SENTINEL);
        stage_int32(reinterpret_cast<int32_t *>(d), wi, 8);
        for (int i = 0; i < 8; i++) xi[i] = token(me, 40 + i);
        stage_int32(reinterpret_cast<int32_t *>(s), xi, 8);
        aclshmem_barrier_all();
        aclshmem_int32_iput(reinterpret_cast<int32_t *>(d) + 1, reinterpret_cast<int32_t *>(s) + 2, 2, 0, 3, peer);
        aclshmem_barrier_all();
        for (int i = 0; i < 3; i++) wi[1 + 2 * i] = token(peer, 42);
        check_int32("aclshmem_int32_iput", "dest, source stride 0", reinterpret_cast<int32_t *>(d), wi, 8);
    }

    // A host source is refused (logged) and writes nothing.
    fill(w, 32, (unsigned char)0x5A);
    stage_bytes(d, w, 32);
    aclshmem_barrier_all();
    unsigned char host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    aclshmem_putmem(d, host, sizeof host, peer);
    aclshmem_barrier_all();
    check_bytes("aclshmem_putmem", "dest after a refused host source", d, w, 32);

    // aclshmem_ptr: this PE's address itself; the other PE's, offsets kept; NULL for no PE and
    // for an address outside the heap.
    EXPECT(aclshmem_ptr(d, me) == d, "aclshmem_ptr", "this PE: expected %p, got %p", (void *)d, aclshmem_ptr(d, me));
    char *pd = static_cast<char *>(aclshmem_ptr(d, peer));
    EXPECT(pd != nullptr, "aclshmem_ptr", "the other PE: expected an address, got NULL");
    EXPECT(static_cast<char *>(aclshmem_ptr(d + 100, peer)) == pd + 100, "aclshmem_ptr",
           "the other PE's d + 100 is not its d plus 100");
    EXPECT(aclshmem_ptr(d, 2) == nullptr && aclshmem_ptr(d, -1) == nullptr, "aclshmem_ptr", "PE 2 and -1: expected NULL");
    EXPECT(aclshmem_ptr(host, peer) == nullptr, "aclshmem_ptr", "a host address: expected NULL");

    // The engines' UB staging: CANN's checks (RDMA and UDMA need at least 128 bytes); the data
    // path is unchanged afterwards (the typed checks run again below under the MTE default).
    EXPECT_EQ("aclshmemx_set_mte_config", aclshmemx_set_mte_config(0, 16 * 1024, 0), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_set_sdma_config", aclshmemx_set_sdma_config(191 * 1024, 64, 0), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_set_rdma_config", aclshmemx_set_rdma_config(190 * 1024, 128, 0), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_set_rdma_config", aclshmemx_set_rdma_config(190 * 1024, 64, 0), ACLSHMEM_INVALID_VALUE);
    EXPECT_EQ("aclshmemx_set_udma_config", aclshmemx_set_udma_config(189 * 1024, 128, 0), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_set_udma_config", aclshmemx_set_udma_config(189 * 1024, 127, 0), ACLSHMEM_INVALID_VALUE);
    aclshmem_barrier_all();
}

/* putmem_signal(_nbi), signal_op_on_stream, signal_wait_until (also on a stream). */
static void signals() {
    const int me = every_me, peer = every_peer;
    unsigned char *d = every_d, *s = every_s, *l = every_l;
    int32_t *sig = reinterpret_cast<int32_t *>(every_g);
    unsigned char w[16], x[16];

    // The data, then the signal word: a PE that sees the signal reads the data with no barrier.
    for (int k = 0; k < 2; k++) {
        const char *sym = k ? "aclshmemx_putmem_signal_nbi" : "aclshmemx_putmem_signal";
        fill(w, 16, (unsigned char)0x5A);
        stage_bytes(d, w, 16);
        for (int i = 0; i < 16; i++) x[i] = pattern(me, i + 16 * k);
        stage_bytes(s, x, 16);
        int32_t sw[3] = {EVERY_SIG_SENTINEL, 0x10000001, EVERY_SIG_SENTINEL};
        stage_int32(sig, sw, 3);
        aclshmem_barrier_all();
        if (k == 0)
            aclshmemx_putmem_signal(d + 2, s + 1, 7, sig + 1, token(me, k), ACLSHMEM_SIGNAL_SET, peer);
        else
            aclshmemx_putmem_signal_nbi(d + 2, s + 1, 7, sig + 1, token(me, k), ACLSHMEM_SIGNAL_ADD, peer);
        sw[1] = k == 0 ? token(peer, k) : (int32_t)(0x10000001u + (uint32_t)token(peer, k));
        if (signal_arrives(sig + 1, sw[1])) {
            aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_EQ, sw[1]);
            for (int i = 0; i < 7; i++) w[2 + i] = pattern(peer, 1 + i + 16 * k);
            check_bytes(sym, "dest, once the signal is seen", d, w, 16);
            // The host wait's other comparisons on the same word.
            aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_NE, sw[1] + 1);
            aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_LE, sw[1]);
        } else {
            every_fail(sym, "the signal word never became %d (20 s)", sw[1]);
        }
        aclshmem_barrier_all();
        check_int32(sym, "signal words", sig, sw, 3);
    }

    // A wait that blocks: PE 1 sends its data and signal 100 ms after PE 0 starts waiting.
    {
        fill(w, 16, (unsigned char)0x5A);
        stage_bytes(d, w, 16);
        for (int i = 0; i < 16; i++) x[i] = pattern(me, i + 48);
        stage_bytes(s, x, 16);
        int32_t sw[3] = {EVERY_SIG_SENTINEL, 0, EVERY_SIG_SENTINEL};
        stage_int32(sig, sw, 3);
        aclshmem_barrier_all();
        if (me == 1) usleep(100 * 1000);
        aclshmemx_putmem_signal(d + 1, s + 4, 9, sig + 1, token(me, 2), ACLSHMEM_SIGNAL_SET, peer);
        aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_EQ, token(peer, 2)); // runs this PE's put first
        for (int i = 0; i < 9; i++) w[1 + i] = pattern(peer, 4 + i + 48);
        check_bytes("aclshmem_signal_wait_until", "the data, once the wait returns", d, w, 16);
        sw[1] = token(peer, 2);
        check_int32("aclshmem_signal_wait_until", "signal words, once the wait returns", sig, sw, 3);
        aclshmem_barrier_all();
    }

    // Signal operations on an ACL stream: complete at aclrtSynchronizeStream.
    aclrtStream st = nullptr;
    EXPECT_EQ("aclshmemx_signal_op_on_stream", aclrtCreateStream(&st), ACL_SUCCESS);
    int32_t sw[5] = {EVERY_SIG_SENTINEL, 100, EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL};
    stage_int32(sig, sw, 5);
    aclshmem_barrier_all();
    aclshmemx_signal_op_on_stream(sig + 1, token(me, 3), ACLSHMEM_SIGNAL_ADD, peer, st);
    aclshmemx_signal_op_on_stream(sig + 2, token(me, 4), ACLSHMEM_SIGNAL_SET, me, st);
    aclshmemx_signal_op_on_stream(sig + 3, 5, 7, peer, st); // not a signal operation: refused
    aclshmemx_signal_op_on_stream(sig + 4, token(me, 5), ACLSHMEM_SIGNAL_SET, peer, nullptr); // the default stream
    if (every_strict) // this PE's own word (the other PE's stream may run its ADD on sig[1] already)
        check_int32("aclshmemx_signal_op_on_stream", "before aclrtSynchronizeStream under SHMEM_SIM_STRICT=1", sig + 2,
                    sw + 2, 1);
    EXPECT_EQ("aclshmemx_signal_op_on_stream", aclrtSynchronizeStream(st), ACL_SUCCESS);
    {
        const int32_t mine[1] = {token(me, 4)};
        check_int32("aclshmemx_signal_op_on_stream", "this PE's word, SET, once the stream is synchronised", sig + 2,
                    mine, 1);
    }
    aclshmem_barrier_all();
    sw[1] = (int32_t)(100u + (uint32_t)token(peer, 3));
    sw[2] = token(me, 4);
    sw[4] = token(peer, 5);
    check_int32("aclshmemx_signal_op_on_stream", "signal words", sig, sw, 5);
    aclshmem_barrier_all();

    // A wait on a stream holds back the stream's later work until the signal comes.
    int32_t zw[3] = {EVERY_SIG_SENTINEL, 0, EVERY_SIG_SENTINEL};
    stage_int32(sig, zw, 3);
    fill(w, 16, (unsigned char)0x5A);
    stage_bytes(l, w, 16);
    for (int i = 0; i < 16; i++) x[i] = pattern(me, i + 64);
    stage_bytes(s, x, 16);
    aclshmem_barrier_all();
    aclshmemx_signal_wait_until_on_stream(sig + 1, ACLSHMEM_CMP_EQ, token(peer, 5), st);
    aclshmemx_getmem_on_stream(l + 2, s + 3, 8, me, st); // runs only after the wait
    check_bytes("aclshmemx_signal_wait_until_on_stream", "the stream's later get, before the signal", l, w, 16);
    aclshmem_barrier_all(); // no PE has sent its signal yet
    aclshmem_int32_p(sig + 1, token(me, 5), peer);
    aclshmem_barrier_all(); // the signals have landed
    EXPECT_EQ("aclshmemx_signal_wait_until_on_stream", aclrtSynchronizeStream(st), ACL_SUCCESS);
    for (int i = 0; i < 8; i++) w[2 + i] = x[3 + i];
    check_bytes("aclshmemx_signal_wait_until_on_stream", "the stream's later get, after the signal", l, w, 16);
    // On the default stream (NULL), with the condition already true: the barrier completes it.
    aclshmemx_signal_wait_until_on_stream(sig + 1, ACLSHMEM_CMP_GE, token(peer, 5), nullptr);
    aclshmem_barrier_all();
    EXPECT_EQ("aclshmemx_signal_wait_until_on_stream", aclrtDestroyStream(st), ACL_SUCCESS);
}

/* util_get_ffts_config and handle_wait. */
static void p2p_untyped() {
    const int me = every_me;
    EXPECT_EQ("util_get_ffts_config", util_get_ffts_config(), 0);

    // A handle wait in a stream's order: the work before it is complete at the stream's sync.
    unsigned char *l = every_l, *s = every_s, w[16], x[16];
    fill(w, 16, (unsigned char)0x5A);
    stage_bytes(l, w, 16);
    for (int i = 0; i < 16; i++) x[i] = pattern(me, i + 80);
    stage_bytes(s, x, 16);
    aclshmem_barrier_all();
    aclrtStream st = nullptr;
    EXPECT_EQ("aclshmemx_handle_wait", aclrtCreateStream(&st), ACL_SUCCESS);
    aclshmemx_getmem_on_stream(l + 1, s, 4, me, st);
    aclshmem_handle_t handle;
    handle.team_id = ACLSHMEM_TEAM_WORLD;
    aclshmemx_handle_wait(handle, st);
    EXPECT_EQ("aclshmemx_handle_wait", aclrtSynchronizeStream(st), ACL_SUCCESS);
    for (int i = 0; i < 4; i++) w[1 + i] = x[i];
    check_bytes("aclshmemx_handle_wait", "the stream's work before the wait", l, w, 16);
    EXPECT_EQ("aclshmemx_handle_wait", aclrtDestroyStream(st), ACL_SUCCESS);
    aclshmem_barrier_all();
}

/* A put to the other PE's word, then `call` (a barrier or sync routine): the word holds the other
 * PE's token afterwards, its neighbours untouched. */
static void completes(const char *sym, int k, void (*call)(void)) {
    const int me = every_me, peer = every_peer;
    int32_t *word = reinterpret_cast<int32_t *>(every_g);
    int32_t w[3] = {EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL};
    stage_int32(word, w, 3);
    aclshmem_barrier_all();
    aclshmem_int32_p(word + 1, token(me, k), peer);
    call();
    w[1] = token(peer, k);
    check_int32(sym, "the other PE's put, after the call", word, w, 3);
    aclshmem_barrier_all();
}

static aclshmem_team_t team_all = ACLSHMEM_TEAM_INVALID;
static void barrier_team_all() { aclshmem_barrier(team_all); }
static void sync_team_all() { aclshmem_sync(team_all); }
static void barrier_all() { aclshmem_barrier_all(); }
static void sync_all() { aclshmem_sync_all(); }

/* Teams on instance 0, and the barriers. */
static void teams() {
    const int me = every_me, peer = every_peer;
    EXPECT_EQ("aclshmem_team_my_pe", aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD), me);
    EXPECT_EQ("aclshmem_team_n_pes", aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD), 2);
    EXPECT_EQ("aclshmem_team_my_pe", aclshmem_team_my_pe(1000), -1);
    EXPECT_EQ("aclshmem_team_n_pes", aclshmem_team_n_pes(ACLSHMEM_TEAM_INVALID), -1);

    // Both PEs; PE 1 alone (PE 0 is no member); rows and columns of width 1.
    aclshmem_team_t all = -2, one = -2, x = -2, y = -2;
    EXPECT_EQ("aclshmem_team_split_strided", aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, 2, &all),
              ACLSHMEM_SUCCESS);
    EXPECT(all > 0, "aclshmem_team_split_strided", "both PEs: expected a team, got %d", all);
    EXPECT_EQ("aclshmem_team_split_strided", aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 1, 1, 1, &one),
              ACLSHMEM_SUCCESS);
    if (me == 1)
        EXPECT(one > 0 && one != all, "aclshmem_team_split_strided", "PE 1 alone: expected a new team, got %d", one);
    else
        EXPECT_EQ("aclshmem_team_split_strided", one, ACLSHMEM_TEAM_INVALID);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 1, &x, &y), ACLSHMEM_SUCCESS);
    team_all = all;

    EXPECT_EQ("aclshmem_team_my_pe", aclshmem_team_my_pe(all), me);
    EXPECT_EQ("aclshmem_team_n_pes", aclshmem_team_n_pes(all), 2);
    EXPECT_EQ("aclshmem_team_my_pe", aclshmem_team_my_pe(one), me == 1 ? 0 : -1);
    EXPECT_EQ("aclshmem_team_n_pes", aclshmem_team_n_pes(one), me == 1 ? 1 : -1);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_n_pes(x), 1);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_my_pe(x), 0);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_n_pes(y), 2);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_my_pe(y), me);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(all, 1, ACLSHMEM_TEAM_WORLD), 1);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, 1, one), me == 1 ? 0 : -1);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, 0, one), -1);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(all, 2, ACLSHMEM_TEAM_WORLD), -1);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(y, me, x), 0);

    aclshmem_team_config_t cfg;
    std::memset(&cfg, 0x5A, sizeof cfg);
    EXPECT_EQ("aclshmem_team_get_config", aclshmem_team_get_config(all, &cfg), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmem_team_get_config", cfg.num_contexts, 0);
    EXPECT_EQ("aclshmem_team_get_config", aclshmem_team_get_config(all, nullptr), 1);
    EXPECT_EQ("aclshmem_team_get_config", aclshmem_team_get_config(1000, &cfg), ACLSHMEM_INVALID_PARAM);
    aclshmem_team_t none = -2;
    EXPECT_EQ("aclshmem_team_split_strided", aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 0, 1, &none),
              ACLSHMEM_INVALID_PARAM);
    EXPECT_EQ("aclshmem_team_split_strided", none, ACLSHMEM_TEAM_INVALID);
    EXPECT_EQ("aclshmem_team_split_strided", aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, 1, nullptr),
              ACLSHMEM_INVALID_PARAM);

    // The barriers complete this PE's queued puts, then wait for the team.
    completes("aclshmem_barrier", 10, barrier_team_all);
    completes("aclshmem_sync", 11, sync_team_all);
    completes("aclshmem_barrier_all", 12, barrier_all);
    completes("aclshmem_sync_all", 13, sync_all);
    if (me == 1) { // a team of one: its barrier completes this PE's own put
        int32_t *word = reinterpret_cast<int32_t *>(every_g) + 4;
        aclshmem_int32_p(word, token(me, 14), me);
        aclshmem_barrier(one);
        const int32_t want[1] = {token(me, 14)};
        check_int32("aclshmem_barrier", "a team of one", word, want, 1);
    }
    aclshmem_barrier(ACLSHMEM_TEAM_INVALID); // a no-op
    aclshmem_sync(ACLSHMEM_TEAM_INVALID);
    aclshmem_barrier_all();

    // On a stream: the puts enqueued before the barrier are complete once the stream is.
    aclrtStream st = nullptr;
    EXPECT_EQ("aclshmemx_barrier_on_stream", aclrtCreateStream(&st), ACL_SUCCESS);
    int32_t *word = reinterpret_cast<int32_t *>(every_g), *src = reinterpret_cast<int32_t *>(every_s);
    for (int k = 0; k < 2; k++) {
        const char *sym = k ? "aclshmemx_barrier_all_on_stream" : "aclshmemx_barrier_on_stream";
        int32_t w[3] = {EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL, EVERY_SIG_SENTINEL};
        stage_int32(word, w, 3);
        const int32_t t[1] = {token(me, 20 + k)};
        stage_int32(src, t, 1);
        aclshmem_barrier_all();
        aclshmemx_putmem_on_stream(word + 1, src, sizeof(int32_t), peer, st);
        if (k == 0)
            aclshmemx_barrier_on_stream(all, st);
        else
            aclshmemx_barrier_all_on_stream(st);
        EXPECT_EQ(sym, aclrtSynchronizeStream(st), ACL_SUCCESS);
        w[1] = token(peer, 20 + k);
        check_int32(sym, "the other PE's put on its stream, once this PE's stream is synchronised", word, w, 3);
        aclshmem_barrier_all();
    }
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_INVALID, st); // a no-op
    EXPECT_EQ("aclshmemx_barrier_on_stream", aclrtSynchronizeStream(st), ACL_SUCCESS);
    aclshmemx_barrier_on_stream(ACLSHMEM_TEAM_WORLD, nullptr); // ACL's default stream
    EXPECT_EQ("aclshmemx_barrier_on_stream", aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    aclshmemx_barrier_all_on_stream(nullptr);
    EXPECT_EQ("aclshmemx_barrier_all_on_stream", aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_EQ("aclshmemx_barrier_on_stream", aclrtDestroyStream(st), ACL_SUCCESS);
    aclshmem_barrier_all();

    // Destroyed teams are gone; an invalid handle changes nothing.
    aclshmem_team_destroy(all);
    EXPECT_EQ("aclshmem_team_destroy", aclshmem_team_my_pe(all), -1);
    aclshmem_team_destroy(x);
    aclshmem_team_destroy(y);
    EXPECT_EQ("aclshmem_team_destroy", aclshmem_team_n_pes(y), -1);
    if (me == 1) {
        aclshmem_team_destroy(one);
        EXPECT_EQ("aclshmem_team_destroy", aclshmem_team_n_pes(one), -1);
    }
    aclshmem_team_destroy(1000);
    EXPECT_EQ("aclshmem_team_destroy", aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD), 2);
    team_all = ACLSHMEM_TEAM_INVALID;
    aclshmem_barrier_all();
}

/* A host source refused by aclshmem_putmem: one ERROR line. */
static void refused_put() {
    int64_t host[2] = {1, 2};
    aclshmem_putmem(every_d, host, sizeof host, every_peer);
}

/* What `f` writes to standard error (the library's log lines when no extern logger is set). */
template <class F>
static std::string stderr_of(F f) {
    std::fflush(stderr);
    std::FILE *tmp = std::tmpfile();
    const int saved = dup(2);
    if (!tmp || saved < 0 || dup2(fileno(tmp), 2) < 0) {
        f();
        return "(standard error not captured)";
    }
    f();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    std::rewind(tmp);
    char buf[512];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, tmp)) > 0;) text.append(buf, got);
    std::fclose(tmp);
    return text;
}

/* The extern logger; the profiles (none in the simulator). CANN keeps the first logger it is
 * given (a later call changes nothing), so this comes after the log-level checks, which read
 * standard error. */
static void logging() {
    EXPECT_EQ("aclshmemx_set_extern_logger", aclshmemx_set_extern_logger(logger), 0);
    logged_count = 0;
    refused_put();
    EXPECT(logged_count == 1 && logged_level == 3 && std::strstr(logged, "aclshmem_putmem") != nullptr,
           "aclshmemx_set_extern_logger", "a refused put: expected one ERROR (3) line naming it, got %d, the last at %d: %s",
           logged_count, logged_level, logged);
    EXPECT_EQ("aclshmemx_set_extern_logger", aclshmemx_set_extern_logger(nullptr), 0);

    aclshmem_prof_pe_t placeholder;
    aclshmem_prof_pe_t *profs = &placeholder;
    aclshmemx_get_prof(&profs, false);
    EXPECT(profs == nullptr, "aclshmemx_get_prof", "no device profiles: expected NULL, got %p", (void *)profs);
    profs = &placeholder;
    aclshmemx_get_prof(&profs, true);
    EXPECT(profs == nullptr, "aclshmemx_get_prof", "verbose, no device profiles: expected NULL, got %p", (void *)profs);
    aclshmemx_show_prof();
    aclshmem_barrier_all();
}

/* A second instance (DEFAULT, its port from SHMEM_INSTANCE_PORT_RANGE) and a third (UNIQUEID,
 * the id made by PE 0 and broadcast over instance 0); team calls on them; the log level (read
 * on standard error around a duplicate create's WARN line); switching; finalize by id. */
static void instances() {
    const int me = every_me, peer = every_peer;
    // TLS asked for: accepted, and it changes nothing (the init below runs without it).
    const char tls[] = "tlsCaPath:/nonexistent;tlsCert:/nonexistent/cert.pem";
    EXPECT_EQ("aclshmemx_set_conf_store_tls", aclshmemx_set_conf_store_tls(true, tls, sizeof tls - 1), 0);

    aclshmemx_init_attr_t a1;
    a1.my_pe = me;
    a1.n_pes = 2;
    a1.local_mem_size = 2 << 20;
    std::snprintf(a1.ip_port, sizeof a1.ip_port, "tcp://127.0.0.1:0");
    a1.instance_id = 1;
    const int rc1 = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1);
    EXPECT_EQ("aclshmemx_init_attr", rc1, ACLSHMEM_SUCCESS);
    if (rc1 != ACLSHMEM_SUCCESS) return;
    EXPECT_EQ("aclshmemx_instance_ctx_get", aclshmemx_instance_ctx_get()->id, 1);
    EXPECT_EQ("aclshmemx_init_status", aclshmemx_init_status(), ACLSHMEM_STATUS_IS_INITIALIZED);
    EXPECT_EQ("aclshmem_my_pe", aclshmem_my_pe(), me);
    EXPECT_EQ("aclshmem_n_pes", aclshmem_n_pes(), 2);
    auto *q = static_cast<int32_t *>(aclshmem_calloc(4, sizeof(int32_t)));
    EXPECT(q != nullptr, "aclshmem_calloc", "instance 1: expected a block, got NULL");
    EXPECT(static_cast<char *>(aclshmemx_get_heap_base()) + 0x520200 == reinterpret_cast<char *>(q),
           "aclshmemx_get_heap_base", "instance 1: its first block %p is not 0x520200 above its base %p", (void *)q,
           aclshmemx_get_heap_base());
    if (q) {
        aclshmem_int32_p(q + 1, token(me, 30), peer);
        aclshmem_barrier_all();
        const int32_t want[4] = {0, token(peer, 30), 0, 0};
        check_int32("aclshmem_barrier_all", "instance 1: the other PE's put", q, want, 4);
        aclshmem_barrier_all();
        aclshmem_free(q);
    }
    // Teams other than the world exist on instance 0 only.
    aclshmem_team_t t = -2, x = -2, y = -2;
    aclshmem_team_config_t cfg;
    EXPECT_EQ("aclshmem_team_my_pe", aclshmem_team_my_pe(ACLSHMEM_TEAM_WORLD), ACLSHMEM_NOT_SUPPORTED);
    EXPECT_EQ("aclshmem_team_n_pes", aclshmem_team_n_pes(ACLSHMEM_TEAM_WORLD), ACLSHMEM_NOT_SUPPORTED);
    EXPECT_EQ("aclshmem_team_split_strided", aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 0, 1, 2, &t),
              ACLSHMEM_NOT_SUPPORTED);
    EXPECT_EQ("aclshmem_team_split_2d", aclshmem_team_split_2d(ACLSHMEM_TEAM_WORLD, 1, &x, &y), ACLSHMEM_NOT_SUPPORTED);
    EXPECT_EQ("aclshmem_team_translate_pe", aclshmem_team_translate_pe(ACLSHMEM_TEAM_WORLD, 0, ACLSHMEM_TEAM_WORLD),
              ACLSHMEM_NOT_SUPPORTED);
    EXPECT_EQ("aclshmem_team_get_config", aclshmem_team_get_config(ACLSHMEM_TEAM_WORLD, &cfg), ACLSHMEM_NOT_SUPPORTED);
    // Creating instance 1 again: CANN's WARN line, and an error. The log level decides whether
    // the WARN line shows on standard error: at WARN (2) it does, at ERROR (3) it does not.
    EXPECT_EQ("aclshmemx_set_log_level", aclshmemx_set_log_level(2), ACLSHMEM_SUCCESS);
    int again = ACLSHMEM_SUCCESS;
    const std::string at_warn = stderr_of([&] { again = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1); });
    EXPECT(again != ACLSHMEM_SUCCESS, "aclshmemx_init_attr", "instance 1 again: expected an error");
    EXPECT(at_warn.find("WARN") != std::string::npos, "aclshmemx_set_log_level",
           "WARN (2): expected the duplicate create's WARN line on standard error, got: %.300s", at_warn.c_str());
    EXPECT_EQ("aclshmemx_set_log_level", aclshmemx_set_log_level(3), ACLSHMEM_SUCCESS);
    const std::string at_error = stderr_of([&] { again = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &a1); });
    EXPECT(again != ACLSHMEM_SUCCESS, "aclshmemx_init_attr", "instance 1 again: expected an error");
    EXPECT(at_error.find("WARN") == std::string::npos && at_error.find("aclshmemx_init_attr") != std::string::npos,
           "aclshmemx_set_log_level", "ERROR (3): expected the ERROR line alone on standard error, got: %.300s",
           at_error.c_str());
    EXPECT_EQ("aclshmemx_set_log_level", aclshmemx_set_log_level(9), ACLSHMEM_INVALID_VALUE);
    EXPECT_EQ("aclshmemx_set_log_level", aclshmemx_set_log_level(-1), ACLSHMEM_INVALID_VALUE);
    EXPECT_EQ("aclshmemx_instance_ctx_get", aclshmemx_instance_ctx_get()->id, 1);

    // The unique id: PE 0 makes it; instance 0 broadcasts it (staged in PE 0's s, got by all).
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_set(0), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_get()->id, 0);
    aclshmemx_uniqueid_t uid = ACLSHMEM_UNIQUEID_INITIALIZER;
    if (me == 0) {
        EXPECT_EQ("aclshmemx_get_uniqueid", aclshmemx_get_uniqueid(&uid), ACLSHMEM_SUCCESS);
        stage_bytes(every_s, reinterpret_cast<const unsigned char *>(&uid), sizeof uid);
    }
    EXPECT_EQ("aclshmemx_get_uniqueid", aclshmemx_get_uniqueid(nullptr), ACLSHMEM_INVALID_PARAM);
    aclshmem_barrier_all();
    aclshmem_getmem(every_l, every_s, sizeof uid, 0);
    aclshmem_barrier_all();
    fetch_bytes(every_l, reinterpret_cast<unsigned char *>(&uid), sizeof uid);
    EXPECT(uid.version == ACLSHMEM_UNIQUEID_VERSION, "aclshmemx_get_uniqueid", "the id's version: expected %d, got %d",
           ACLSHMEM_UNIQUEID_VERSION, uid.version);
    aclshmemx_init_attr_t a2;
    EXPECT_EQ("aclshmemx_set_attr_uniqueid_args", aclshmemx_set_attr_uniqueid_args(me, 2, 2 << 20, &uid, &a2),
              ACLSHMEM_SUCCESS);
    EXPECT(a2.my_pe == me && a2.n_pes == 2 && a2.local_mem_size == (2u << 20) && a2.comm_args == &uid,
           "aclshmemx_set_attr_uniqueid_args", "attributes {%d, %d, %llu, %p}, expected {%d, 2, %u, %p}", a2.my_pe,
           a2.n_pes, (unsigned long long)a2.local_mem_size, a2.comm_args, me, 2u << 20, (void *)&uid);
    aclshmemx_init_attr_t junk = a2;
    EXPECT_EQ("aclshmemx_set_attr_uniqueid_args", aclshmemx_set_attr_uniqueid_args(me, 16385, 2 << 20, &uid, &junk),
              ACLSHMEM_INVALID_VALUE);
    a2.instance_id = 2;
    const int rc2 = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_UNIQUEID, &a2);
    EXPECT_EQ("aclshmemx_init_attr", rc2, ACLSHMEM_SUCCESS);
    if (rc2 == ACLSHMEM_SUCCESS) {
        EXPECT_EQ("aclshmemx_instance_ctx_get", aclshmemx_instance_ctx_get()->id, 2);
        EXPECT_EQ("aclshmem_my_pe", aclshmem_my_pe(), me);
        EXPECT_EQ("aclshmem_n_pes", aclshmem_n_pes(), 2);
        auto *r = static_cast<int32_t *>(aclshmem_calloc(2, sizeof(int32_t)));
        EXPECT(r != nullptr, "aclshmem_calloc", "instance 2: expected a block, got NULL");
        if (r) {
            aclshmem_int32_p(r + 1, token(me, 31), peer);
            aclshmem_barrier_all();
            const int32_t want[2] = {0, token(peer, 31)};
            check_int32("aclshmemx_set_attr_uniqueid_args", "instance 2 (unique id): the other PE's put", r, want, 2);
            aclshmem_barrier_all();
            aclshmem_free(r);
        }
    }

    // Switching, and finalize by id (which switches when needed and leaves instance 0 active).
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_set(1), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_get()->id, 1);
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_set(7), ACLSHMEM_INNER_ERROR);
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_get()->id, 1);
    if (rc2 == ACLSHMEM_SUCCESS) {
        EXPECT_EQ("aclshmemx_finalize", aclshmemx_finalize(2), ACLSHMEM_SUCCESS);
        EXPECT_EQ("aclshmemx_finalize", aclshmemx_instance_ctx_get()->id, 0);
        EXPECT_EQ("aclshmemx_finalize", aclshmemx_instance_ctx_set(2), ACLSHMEM_INNER_ERROR);
    }
    EXPECT_EQ("aclshmemx_instance_ctx_set", aclshmemx_instance_ctx_set(1), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmem_finalize", aclshmem_finalize(), ACLSHMEM_SUCCESS); // the active instance, 1
    EXPECT_EQ("aclshmem_finalize", aclshmemx_instance_ctx_get()->id, 0);
    EXPECT_EQ("aclshmem_finalize", aclshmemx_instance_ctx_set(1), ACLSHMEM_INNER_ERROR);
    EXPECT_EQ("aclshmemx_finalize", aclshmemx_finalize(9), ACLSHMEM_INNER_ERROR);
    EXPECT_EQ("aclshmemx_finalize", aclshmemx_instance_ctx_get()->id, 0);
    EXPECT_EQ("aclshmem_my_pe", aclshmem_my_pe(), me);
    aclshmem_barrier_all();
}

int main() {
    const char *pe_var = std::getenv("SHMEMRUN_PE"), *npes_var = std::getenv("SHMEMRUN_NPES");
    const char *port = std::getenv("CANN_TEST_PORT"), *strict = std::getenv("SHMEM_SIM_STRICT");
    if (!pe_var || !npes_var || !port) {
        std::fprintf(stderr, "cann_every_symbol: start it with shmemrun -n 2, with CANN_TEST_PORT set\n");
        return 2;
    }
    const int me = std::atoi(pe_var), n = std::atoi(npes_var);
    if (n != 2 || me < 0 || me > 1) {
        std::fprintf(stderr, "cann_every_symbol: runs on 2 PEs, not %d (this is PE %d)\n", n, me);
        return 2;
    }
    every_me = me;
    every_peer = 1 - me;
    every_strict = strict && (std::strcmp(strict, "1") == 0 || std::strcmp(strict, "on") == 0 ||
                              std::strcmp(strict, "true") == 0);

    EXPECT_EQ("aclInit", aclInit(nullptr), ACL_SUCCESS);
    EXPECT_EQ("aclrtSetDevice", aclrtSetDevice(me), ACL_SUCCESS);
    aclshmemx_init_attr_t attr;
    attr.my_pe = me;
    attr.n_pes = n;
    attr.local_mem_size = 4 << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%s", port);
    before_init(attr);

    const int rc = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr);
    EXPECT_EQ("aclshmemx_init_attr", rc, ACLSHMEM_SUCCESS);
    if (rc != ACLSHMEM_SUCCESS) {
        std::printf("cann_every_symbol: PE %d: init failed (%d); %d failed checks\n", me, rc, failures);
        return 1;
    }
    EXPECT_EQ("aclshmemx_init_status", aclshmemx_init_status(), ACLSHMEM_STATUS_IS_INITIALIZED);
    EXPECT_EQ("aclshmem_my_pe", aclshmem_my_pe(), me);
    EXPECT_EQ("aclshmem_n_pes", aclshmem_n_pes(), n);
    EXPECT_EQ("aclshmemx_instance_ctx_get", aclshmemx_instance_ctx_get()->id, 0);
    EXPECT_EQ("aclshmemx_init_attr", aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr), ACLSHMEM_INNER_ERROR);
    EXPECT_EQ("aclshmemx_init_attr", aclshmem_my_pe(), me);

    unsigned char *regions = static_cast<unsigned char *>(aclshmem_align(64, 4 * EVERY_REGION));
    if (!regions) {
        every_fail("aclshmem_align", "no symmetric regions");
        return 1;
    }
    // CANN's heap layout: the first user block lands 0x520200 bytes above the base.
    EXPECT(static_cast<unsigned char *>(aclshmemx_get_heap_base()) + 0x520200 == regions, "aclshmemx_get_heap_base",
           "the first block %p is not 0x520200 above the base %p", (void *)regions, aclshmemx_get_heap_base());
    every_d = regions;
    every_s = regions + EVERY_REGION;
    every_l = regions + 2 * EVERY_REGION;
    every_g = regions + 3 * EVERY_REGION;

    heap();
    every_typed();
    rma_untyped();
    signals();
    p2p_untyped();
    teams();
    instances();
    logging();

    // aclshmem_global_exit records the request and returns, as CANN's config-store bootstrap
    // does: the job goes on (the line below is printed only if it did).
    aclshmem_global_exit(0);
    aclshmem_barrier_all();
    EXPECT_EQ("aclshmem_global_exit", aclshmem_my_pe(), me);
    EXPECT(decrypt_calls == 0, "aclshmemx_set_config_store_tls_key", "the decrypt handler ran %d times with TLS off",
           decrypt_calls);
    aclshmem_free(regions);
    EXPECT_EQ("aclshmem_finalize", aclshmem_finalize(), ACLSHMEM_SUCCESS);
    EXPECT_EQ("aclshmem_finalize", aclshmemx_init_status(), ACLSHMEM_STATUS_NOT_INITIALIZED);
    EXPECT_EQ("aclshmem_finalize", aclshmem_my_pe(), -1);
    EXPECT_EQ("aclrtResetDevice", aclrtResetDevice(me), ACL_SUCCESS);
    EXPECT_EQ("aclFinalize", aclFinalize(), ACL_SUCCESS);

    std::printf("cann_every_symbol: PE %d: %d failed checks, %d known failures: %s\n", me, failures, known,
                failures ? "FAILED" : "ok");
    std::fflush(stdout);
    return failures ? 1 : 0;
}
