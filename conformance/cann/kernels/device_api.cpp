// device_api.cpp: the kernel:: cases in C++. CANN-style kernels (compiled as host C++ with
// `aclshmem-c++ -cpu-debug`) call every family of the device API on the simulator's AI cores,
// and the host checks what they did. Runs on any number of PEs; each case prints one line.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "kernel_operator.h"
#include "shmem.h"
#include "tikicpulib.h"

#include "../check.h"

constexpr uint32_t LINE = 8; // int32 words per 32-byte line

// ---- RMA: typed, sized, bytes, p/g, strided, tensors, UB, MTE with a caller buffer ----------
extern "C" __global__ __aicore__ void rma(GM_ADDR sym, GM_ADDR plain, uint32_t n_elems)
{
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    const uint32_t b = AscendC::GetBlockIdx();
    __gm__ int32_t *s = reinterpret_cast<__gm__ int32_t *>(sym);
    // Block b owns region [b*1024, (b+1)*1024) words of `sym`: 0..255 source, 256.. targets.
    __gm__ int32_t *src = s + b * 1024, *dst = src + 256;
    for (uint32_t i = 0; i < n_elems; i++) src[i] = me * 100000 + b * 1000 + (int32_t)i;
    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::ENTIRE_DATA_CACHE>(AscendC::GlobalTensor<int32_t>());
    aclshmem_barrier_all();
    aclshmem_int32_put(dst, src, n_elems, next);                        // typed, blocking
    aclshmem_put32_nbi(dst + 64, src, n_elems, next);                   // sized, nbi
    aclshmem_getmem(dst + 128, src, n_elems * sizeof(int32_t), prev);   // bytes, get
    aclshmem_int32_p(dst + 200, me + 7, next);                          // p
    const int32_t g = aclshmem_int32_g(src + 3, prev);                  // g
    aclshmem_int32_p(dst + 201, g, me);
    non_contiguous_copy_param p = {4, 2, 8, 3};                          // 4 rows of 2, src rows 8 apart, dst 3
    aclshmem_int32_put_nbi(dst + 210, src, p, next);
    aclshmem_int32_iget(dst + 230, src, 2, 3, 5, prev);                  // iget: dst stride 2, src stride 3
    AscendC::GlobalTensor<int32_t> gd, gs;
    gd.SetGlobalBuffer(dst + 240);
    gs.SetGlobalBuffer(src);
    aclshmem_int32_get_nbi(gd, gs, 8, next);                             // GlobalTensor form
    // UB: LocalTensor forms, raw __ubuf__ forms, and the MTE engine with a caller buffer.
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    AscendC::LocalTensor<int32_t> t = buf.Get<int32_t>();
    aclshmem_int32_get_nbi(t, gs, 16, prev);                            // prev's src -> UB
    aclshmem_int32_put_nbi(gd[-240 + 600], t, 16, me);                  // UB -> my dst+600 (word 856)
#if ACLSHMEM_SIM_UB_SEGMENT
    __ubuf__ int32_t *raw = reinterpret_cast<__ubuf__ int32_t *>(uint64_t(4096));
    raw[0] = 4242;
    raw[1] = b;
    aclshmem_int32_put_nbi(dst + 620, raw, 2, next);
#else
    aclshmem_int32_p(dst + 620, 4242, next);
    aclshmem_int32_p(dst + 621, b, next);
#endif
    aclshmemx_mte_put_nbi(dst + 640, src, reinterpret_cast<__ubuf__ int32_t *>(uint64_t(8192)), 64, n_elems, next,
                          EVENT_ID1);
    // A plain device buffer (aclrtMalloc) as the local side.
    __gm__ int32_t *pl = reinterpret_cast<__gm__ int32_t *>(plain) + b * 64;
    for (int i = 0; i < 16; i++) pl[i] = -(int32_t)i - (int32_t)b;
    aclshmem_int32_put(dst + 700, pl, 16, next);
    // half and bfloat16 elements.
    __gm__ half *h = reinterpret_cast<__gm__ half *>(dst + 720);
    aclshmem_half_p(h, half(1.5f), next);
    __gm__ bfloat16_t *bf = reinterpret_cast<__gm__ bfloat16_t *>(dst + 721);
    aclshmem_bfloat16_p(bf, bfloat16_t(-2.25f), next);
    aclshmem_quiet();
    aclshmem_barrier_all();
}

static void check_rma(int me, int n, uint32_t blocks)
{
    const int prev = (me + n - 1) % n, next = (me + 1) % n;
    const uint32_t ne = 32;
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(blocks * 1024, sizeof(int32_t)));
    void *plain = nullptr;
    aclrtMalloc(&plain, blocks * 64 * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST);
    EQ(ICPU_RUN_KF(rma, blocks, reinterpret_cast<uint8_t *>(sym), static_cast<uint8_t *>(plain), ne), 0);
    std::vector<int32_t> h(blocks * 1024);
    aclrtMemcpy(h.data(), h.size() * 4, sym, h.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    int bad = 0;
    auto want = [&](uint32_t at, int32_t v) {
        if (h[at] != v && bad++ < 8) std::fprintf(stderr, "rma: word %u is %d, want %d\n", at, h[at], v);
    };
    for (uint32_t b = 0; b < blocks; b++) {
        const uint32_t d = b * 1024 + 256;
        auto from = [&](int pe, int i) { return pe * 100000 + (int32_t)b * 1000 + i; };
        for (uint32_t i = 0; i < ne; i++) {
            want(d + i, from(prev, i));       // next's put landed here from prev
            want(d + 64 + i, from(prev, i));  // sized nbi
            want(d + 128 + i, from(prev, i)); // getmem from prev
            want(d + 640 + i, from(prev, i)); // MTE with a caller buffer
        }
        want(d + 200, prev + 7);
        want(d + 201, from(prev, 3));
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 2; c++) want(d + 210 + r * 3 + c, from(prev, r * 8 + c));
        for (int i = 0; i < 5; i++) want(d + 230 + i * 2, from(prev, i * 3));
        for (int i = 0; i < 8; i++) want(d + 240 + i, from(next, i));
        for (int i = 0; i < 16; i++) want(d + 600 + i, from(prev, i));
        want(d + 620, 4242);
        want(d + 621, (int32_t)b);
        for (int i = 0; i < 16; i++) want(d + 700 + i, -i - (int32_t)b);
        half hv = half::from_bits((uint16_t)(h[d + 720] & 0xffff));
        bfloat16_t bv = bfloat16_t::from_bits((uint16_t)(h[d + 721] & 0xffff));
        if ((float)hv != 1.5f || (float)bv != -2.25f) bad++;
    }
    CHECK(bad == 0, "rma on %u blocks: %d wrong words", blocks, bad);
    aclrtFree(plain);
    aclshmem_free(sym);
    if (bad == 0) std::printf("PE %d: rma (typed, sized, bytes, p/g, strided, tensors, UB, MTE) on %u blocks ok\n", me, blocks);
}

// ---- Signals, atomics, wait/test ----------------------------------------------------------
extern "C" __global__ __aicore__ void sync_ops(GM_ADDR sym, int32_t round)
{
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    const uint32_t b = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
    __gm__ int32_t *w = reinterpret_cast<__gm__ int32_t *>(sym);
    // [0]: ADD signal from every block of every PE; [8]: int32 fetch_add counter on PE 0;
    // [16]: half adds; [24]: int8 adds; [32..]: per-PE SET flags; [300..]: put_signal data/flags.
    aclshmemx_signal_op(w, 1, ACLSHMEM_SIGNAL_ADD, 0);
    aclshmem_int32_atomic_fetch_add(w + 8, 2, 0);
    aclshmem_half_atomic_add(reinterpret_cast<__gm__ half *>(w + 16), half(0.5f), 0);
    aclshmem_int8_atomic_add(reinterpret_cast<__gm__ int8_t *>(w + 24) + 1, (int8_t)1, 0);
    if (b == 0) {
        for (int pe = 0; pe < n; pe++) aclshmemx_signal_op(w + 32 + me * LINE, round, ACLSHMEM_SIGNAL_SET, pe);
        // put with signal: the data is there when the flag says so.
        __gm__ int32_t *data = w + 300 + me * LINE * 2, *flag = data + LINE;
        __gm__ int32_t *mine = w + 2000;
        mine[0] = round * 10 + me;
        aclshmem_int32_put_signal(data, mine, 1, flag, round, ACLSHMEM_SIGNAL_SET, (me + 1) % n);
    }
    // Every PE's flag reaches every PE: wait for all of them (wait_until_all).
    std::vector<int> status(n, 0);
    for (int pe = 0; pe < n; pe++) aclshmem_int32_wait_until(w + 32 + pe * LINE, ACLSHMEM_CMP_GE, round);
    const int prev = (me + n - 1) % n;
    const int32_t seen =
        aclshmem_signal_wait_until(w + 300 + prev * LINE * 2 + LINE, ACLSHMEM_CMP_EQ, round);
    __gm__ int32_t *res = w + 3000 + b * LINE;
    res[0] = seen;
    res[1] = w[300 + prev * LINE * 2];
    res[2] = aclshmem_int32_test(w + 32 + me * LINE, ACLSHMEM_CMP_EQ, round);
    res[3] = aclshmem_int32_test(w + 32 + me * LINE, ACLSHMEM_CMP_GT, round);
    res[4] = (int32_t)aclshmem_int32_test_any(w + 32, 1, nullptr, ACLSHMEM_CMP_EQ, round);
    aclshmem_barrier_all();
    if (me == 0 && b == 0) {
        res[5] = w[0];
        res[6] = w[8];
    }
    (void)blocks;
}

static void check_sync(int me, int n, uint32_t blocks)
{
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(4096, sizeof(int32_t)));
    int bad = 0;
    for (int32_t round = 1; round <= 2; round++) {
        EQ(ICPU_RUN_KF(sync_ops, blocks, reinterpret_cast<uint8_t *>(sym), round), 0);
        std::vector<int32_t> h(4096);
        aclrtMemcpy(h.data(), h.size() * 4, sym, h.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
        const int prev = (me + n - 1) % n;
        for (uint32_t b = 0; b < blocks; b++) {
            const int32_t *r = &h[3000 + b * LINE];
            if (r[0] != round || r[1] != round * 10 + prev || r[2] != 1 || r[3] != 0 || r[4] != 0) {
                if (bad++ < 4)
                    std::fprintf(stderr, "sync round %d block %u: %d %d %d %d %d\n", round, b, r[0], r[1], r[2], r[3], r[4]);
            }
        }
        const int32_t total = round * (int32_t)blocks * n;
        if (me == 0) {
            CHECK(h[3005] == total, "signal ADD from every block: %d, want %d", h[3005], total);
            CHECK(h[3006] == 2 * total, "int32 fetch_add from every block: %d, want %d", h[3006], 2 * total);
            half hv = half::from_bits((uint16_t)(h[16] & 0xffff));
            CHECK((float)hv == 0.5f * total, "half atomic_add: %f, want %f", (float)hv, 0.5f * total);
            CHECK(((h[24] >> 8) & 0xff) == (total & 0xff) && (h[24] & 0xff) == 0,
                  "int8 atomic_add in a word: %08x", (unsigned)h[24]);
        }
        aclshmem_barrier_all(); // host barrier: PE 0 has read before the next round
    }
    CHECK(bad == 0, "signals and waits: %d wrong blocks", bad);
    aclshmem_free(sym);
    if (bad == 0 && failures == 0)
        std::printf("PE %d: signals (SET, ADD, put_signal), waits, tests, atomics on %u blocks ok\n", me, blocks);
}

// ---- Every remaining atomic, and the wait/test vector forms on one PE's own words ----------
extern "C" __global__ __aicore__ void amo(GM_ADDR sym)
{
    const int me = aclshmem_my_pe();
    __gm__ int64_t *q = reinterpret_cast<__gm__ int64_t *>(sym);
    __gm__ uint32_t *u = reinterpret_cast<__gm__ uint32_t *>(sym + 256);
    __gm__ float *f = reinterpret_cast<__gm__ float *>(sym + 512);
    __gm__ int32_t *r = reinterpret_cast<__gm__ int32_t *>(sym + 1024);
    q[0] = 5;
    u[0] = 0xf0;
    r[0] = (int32_t)aclshmem_int64_atomic_compare_swap(q, 5, 9, me);  // 5 -> 9
    r[1] = (int32_t)aclshmem_int64_atomic_compare_swap(q, 5, 11, me); // fails, 9
    r[2] = (int32_t)aclshmem_int64_atomic_swap(q, 20, me);            // 9 -> 20
    r[3] = (int32_t)aclshmem_int64_atomic_fetch(q, me);               // 20
    aclshmem_int64_atomic_inc(q, me);                                 // 21
    r[4] = (int32_t)aclshmem_int64_atomic_fetch_inc(q, me);           // 21 -> 22
    aclshmem_uint32_atomic_and(u, 0x3c, me);                          // 0x30
    aclshmem_uint32_atomic_or(u, 0x01, me);                           // 0x31
    r[5] = (int32_t)aclshmem_uint32_atomic_fetch_xor(u, 0x11, me);    // 0x31 -> 0x20
    r[6] = (int32_t)u[0];
    aclshmem_float_atomic_set(f, 2.5f, me);
    aclshmem_float_atomic_add(f, 0.25f, me);
    r[7] = (int32_t)(f[0] * 100);                                     // 275
    r[8] = aclshmemx_mte_atomic_fetch_add<int32_t>(r + 20, 4, me);    // 0 -> 4
    r[9] = r[20];
    // The vector forms of wait and test over words 30..33 of `r`.
    r[30] = 1; r[31] = 2; r[32] = 3; r[33] = 4;
    int32_t cmp[4] = {1, 0, 3, 9};
    __gm__ int32_t *cmps = r + 40;
    for (int i = 0; i < 4; i++) cmps[i] = cmp[i];
    size_t idx[4];
    __gm__ size_t *indices = reinterpret_cast<__gm__ size_t *>(sym + 2048);
    r[10] = (int32_t)aclshmem_int32_test_some_vector(r + 30, 4, indices, nullptr, ACLSHMEM_CMP_EQ, cmps); // 0, 2
    r[11] = (int32_t)indices[1];
    int status[4] = {1, 0, 0, 0};
    r[12] = (int32_t)aclshmem_int32_test_any_vector(r + 30, 4, status, ACLSHMEM_CMP_EQ, cmps);           // 2
    r[13] = aclshmem_int32_test_all_vector(r + 30, 4, nullptr, ACLSHMEM_CMP_GE, cmps);                   // 0 (4 < 9)
    r[14] = (int32_t)aclshmem_int32_wait_until_any(r + 30, 4, status, ACLSHMEM_CMP_GT, 2);               // 2
    r[15] = (int32_t)aclshmem_int32_wait_until_some(r + 30, 4, indices, nullptr, ACLSHMEM_CMP_LE, 2);    // 2
    aclshmem_int32_wait_until_all_vector(r + 30, 4, nullptr, ACLSHMEM_CMP_LE, r + 30);
    aclshmem_int32_wait(r + 33, 0);
    (void)idx;
}

static void check_amo(int me)
{
    uint8_t *sym = static_cast<uint8_t *>(aclshmem_calloc(4096, 1));
    EQ(ICPU_RUN_KF(amo, 1, sym), 0);
    int32_t r[16];
    aclrtMemcpy(r, sizeof r, sym + 1024, sizeof r, ACL_MEMCPY_DEVICE_TO_HOST);
    const int32_t want[16] = {5, 9, 9, 20, 21, 0x31, 0x20, 275, 0, 4, 2, 2, 2, 0, 2, 2};
    int bad = 0;
    for (int i = 0; i < 16; i++)
        if (r[i] != want[i] && bad++ < 16) std::fprintf(stderr, "amo: result %d is %d, want %d\n", i, r[i], want[i]);
    CHECK(bad == 0, "atomics and vector waits: %d wrong", bad);
    aclshmem_free(sym);
    if (bad == 0) std::printf("PE %d: atomics (cas, swap, fetch, inc, bitwise, float, MTE) and vector waits ok\n", me);
}

// ---- barrier_all across every block of every PE, in rounds -----------------------------------
extern "C" __global__ __aicore__ void barrier_rounds(GM_ADDR sym, int32_t rounds)
{
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    const uint32_t b = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
    __gm__ int32_t *count = reinterpret_cast<__gm__ int32_t *>(sym);
    __gm__ int32_t *bad = count + LINE + b * LINE;
    for (int32_t r = 1; r <= rounds; r++) {
        aclshmem_int32_atomic_add(count, 1, 0);
        aclshmem_barrier_all();
        // Every block of every PE added before anyone passed.
        if (aclshmem_int32_atomic_fetch(count, 0) < r * (int32_t)blocks * n) bad[0] += 1;
        aclshmem_barrier_all();
    }
    (void)me;
}

static void check_barrier(int me, int n, uint32_t blocks)
{
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(LINE * 64, sizeof(int32_t)));
    const int32_t rounds = 3;
    EQ(ICPU_RUN_KF(barrier_rounds, blocks, reinterpret_cast<uint8_t *>(sym), rounds), 0);
    std::vector<int32_t> h(LINE * 64);
    aclrtMemcpy(h.data(), h.size() * 4, sym, h.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
    int bad = 0;
    for (uint32_t b = 0; b < blocks; b++) bad += h[LINE + b * LINE];
    if (me == 0) CHECK(h[0] == rounds * (int32_t)blocks * n, "barrier counter %d", h[0]);
    CHECK(bad == 0, "barrier_all on %u blocks: %d early passes", blocks, bad);
    aclshmem_barrier_all();
    aclshmem_free(sym);
    if (bad == 0) std::printf("PE %d: barrier_all across %u blocks of %d PEs ok\n", me, blocks, n);
}

// ---- aclshmem_ptr: a peer's memory by load and store; a wait on a peer's word --------------
extern "C" __global__ __aicore__ void by_pointer(GM_ADDR sym)
{
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    const int next = (me + 1) % n;
    __gm__ int32_t *w = reinterpret_cast<__gm__ int32_t *>(sym);
    __gm__ int32_t *peer = static_cast<__gm__ int32_t *>(aclshmem_ptr(w, next));
    if (AscendC::GetBlockIdx() == 0) {
        peer[64] = 1000 + me;                                            // a store into next's heap
        AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                          AscendC::DcciDst::CACHELINE_OUT>(AscendC::GlobalTensor<int32_t>());
        peer[72] = 1;                                                    // then its flag
    }
    // Wait on my own flag word (written by prev through its pointer), then on next's, by pointer.
    aclshmem_signal_wait_until(w + 72, ACLSHMEM_CMP_EQ, 1);
    w[80 + AscendC::GetBlockIdx()] = w[64];
    aclshmem_signal_wait_until(peer + 72, ACLSHMEM_CMP_EQ, 1);
    aclshmem_barrier_all();
    w[120] = aclshmem_ptr(w, n) == nullptr; // a PE outside the instance
}

static void check_pointer(int me, int n)
{
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(128, sizeof(int32_t)));
    EQ(ICPU_RUN_KF(by_pointer, 4, reinterpret_cast<uint8_t *>(sym)), 0);
    int32_t h[128];
    aclrtMemcpy(h, sizeof h, sym, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    const int prev = (me + n - 1) % n;
    int bad = 0;
    for (int b = 0; b < 4; b++) bad += h[80 + b] != 1000 + prev;
    CHECK(bad == 0 && h[120] == 1, "aclshmem_ptr loads and stores: %d wrong, %d", bad, h[120]);
    aclshmem_barrier_all();
    aclshmem_free(sym);
    if (bad == 0) std::printf("PE %d: aclshmem_ptr stores, loads and waits on a peer's word ok\n", me);
}

// ---- Teams in kernels --------------------------------------------------------------------
extern "C" __global__ __aicore__ void teams(GM_ADDR sym, int32_t team)
{
    __gm__ int32_t *w = reinterpret_cast<__gm__ int32_t *>(sym);
    const uint32_t b = AscendC::GetBlockIdx();
    if (b == 0) {
        w[0] = aclshmem_team_my_pe(team);
        w[1] = aclshmem_team_n_pes(team);
        w[2] = aclshmem_team_pe_mapping(team, 0);
        w[3] = aclshmem_team_pe_mapping(team, 99);
        w[4] = aclshmem_team_translate_pe(team, 0, ACLSHMEM_TEAM_WORLD);
    }
    if (team != ACLSHMEM_TEAM_INVALID) aclshmem_barrier(team);
    aclshmemx_sync_vec_all();
}

static void check_teams(int me, int n)
{
    aclshmem_team_t odd = ACLSHMEM_TEAM_INVALID;
    if (n >= 2) aclshmem_team_split_strided(ACLSHMEM_TEAM_WORLD, 1, 2, n / 2, &odd);
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(8, sizeof(int32_t)));
    EQ(ICPU_RUN_KF(teams, 4, reinterpret_cast<uint8_t *>(sym), (int32_t)odd), 0);
    int32_t h[8];
    aclrtMemcpy(h, sizeof h, sym, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    if (odd != ACLSHMEM_TEAM_INVALID) {
        CHECK(h[0] == me / 2 && h[1] == n / 2 && h[2] == 1 && h[3] == -1 && h[4] == 1,
              "odd team in a kernel: %d %d %d %d %d", h[0], h[1], h[2], h[3], h[4]);
    } else {
        CHECK(h[0] == -1 && h[2] == -1, "no team: %d %d", h[0], h[2]);
    }
    aclshmem_barrier_all();
    if (odd != ACLSHMEM_TEAM_INVALID) aclshmem_team_destroy(odd);
    aclshmem_free(sym);
    std::printf("PE %d: team queries and team barriers in kernels ok\n", me);
}

// ---- CANN's instance state at its device address, read by hand -----------------------------
constexpr uint64_t STATE_ADDR = 0x17FFBE010000ULL; // + (instance << 1) * 64 KiB

extern "C" __global__ __aicore__ void by_hand(GM_ADDR sym)
{
    __gm__ uint8_t *st = reinterpret_cast<__gm__ uint8_t *>(STATE_ADDR + (0ULL << 1) * 65536);
    const int32_t mype = *reinterpret_cast<__gm__ int32_t *>(st + 4);
    const int32_t npes = *reinterpret_cast<__gm__ int32_t *>(st + 8);
    __gm__ uint8_t *heap_base = *reinterpret_cast<__gm__ uint8_t *__gm__ *>(st + 16);
    __gm__ uint8_t *__gm__ *p2p = *reinterpret_cast<__gm__ uint8_t *__gm__ *__gm__ *>(st + 32);
    __gm__ int32_t *w = reinterpret_cast<__gm__ int32_t *>(sym);
    w[0] = *reinterpret_cast<__gm__ int32_t *>(st);                   // version
    w[1] = mype;
    w[2] = npes;
    w[3] = st[80 + (mype + 1) % npes];                                 // topo_list: MTE
    w[4] = (int32_t)(*reinterpret_cast<__gm__ uint64_t *>(st + 16464) >> 20); // heap_size in MiB
    w[5] = *reinterpret_cast<__gm__ int32_t *>(st + 32896 + 8);        // mte_config.ub_size
    // What CANN's aclshmem_ptr computes: the next PE's copy of w[8], stored by hand.
    const uint64_t off = reinterpret_cast<__gm__ uint8_t *>(w + 8) - heap_base;
    __gm__ int32_t *theirs = reinterpret_cast<__gm__ int32_t *>(p2p[(mype + 1) % npes] + off);
    *theirs = 500 + mype;
    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                      AscendC::DcciDst::CACHELINE_OUT>(AscendC::GlobalTensor<int32_t>());
    aclshmem_barrier_all();
}

// A 20 KiB put staged through whatever MTE configuration the instance has.
extern "C" __global__ __aicore__ void staged(GM_ADDR sym)
{
    __gm__ uint8_t *b = sym;
    aclshmem_putmem(b + 32768, b, 20480, (aclshmem_my_pe() + 1) % aclshmem_n_pes());
    aclshmem_barrier_all();
}

static void check_state(int me, int n)
{
    uint8_t *sym = static_cast<uint8_t *>(aclshmem_calloc(65536, 1));
    EQ(ICPU_RUN_KF(by_hand, 1, sym), 0);
    int32_t h[16];
    aclrtMemcpy(h, sizeof h, sym, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK(h[0] == (1 << 16) + 32992 && h[1] == me && h[2] == n && h[3] == 1 && h[4] >= 32 && h[5] == 16384,
          "state by hand: version %d, PE %d of %d, topo %d, heap %d MiB, MTE ub %d", h[0], h[1], h[2], h[3], h[4],
          h[5]);
    CHECK(h[8] == 500 + (me + n - 1) % n, "a store through p2p_device_heap_base: %d", h[8]);
    // The host's MTE configuration reaches kernels, and the device state shows it.
    aclshmemx_set_mte_config(64 * 1024, 4096, 1); // the device form in this file; off a core, the host call
    EQ(ICPU_RUN_KF(by_hand, 1, sym), 0);
    aclrtMemcpy(h, sizeof h, sym, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK(h[5] == 4096, "mte_config.ub_size after the host set it: %d", h[5]);
    EQ(ICPU_RUN_KF(staged, 1, sym), 0);
    // One that does not fit the UB fails the next kernel's transfer, naming the call.
    aclshmemx_set_mte_config(190 * 1024, 16384, 0); // the device form in this file; off a core, the host call
    CHECK(ICPU_RUN_KF(staged, 1, sym) != 0, "an MTE buffer past the end of the UB");
    // The _on_stream host calls are 1-block kernels too: this one stages through the same buffer.
    aclrtStream st = nullptr;
    aclrtCreateStream(&st);
    aclshmemx_putmem_on_stream(sym + 32768, sym, 64, (me + 1) % n, st);
    CHECK(aclrtSynchronizeStream(st) != ACL_SUCCESS, "putmem_on_stream's kernel stages through the MTE buffer");
    aclshmemx_set_mte_config(0, 16384, 0); // the device form in this file; off a core, the host call
    EQ(ICPU_RUN_KF(staged, 1, sym), 0);
    aclshmemx_putmem_on_stream(sym + 32768, sym, 64, (me + 1) % n, st);
    EQ(aclrtSynchronizeStream(st), ACL_SUCCESS);
    aclrtDestroyStream(st);
    aclshmem_barrier_all();
    aclshmem_free(sym);
    if (failures == 0) std::printf("PE %d: instance state at its device address and the MTE configuration ok\n", me);
}

// ---- quiet orders earlier transfers before later stores, as another PE sees them -----------
extern "C" __global__ __aicore__ void quiet_order(GM_ADDR sym, int32_t round, uint32_t words)
{
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    const uint32_t b = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
    __gm__ int32_t *src = reinterpret_cast<__gm__ int32_t *>(sym);
    __gm__ int32_t *dst = src + words;
    __gm__ int32_t *flag = dst + words + b * LINE;
    __gm__ int32_t *bad = flag + blocks * LINE;
    const uint32_t share = words / blocks;
    for (uint32_t i = 0; i < share; i++) src[b * share + i] = round * 1000000 + me * 10000 + (int32_t)(b * share + i);
    AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::ENTIRE_DATA_CACHE>(AscendC::GlobalTensor<int32_t>());
    // Non-blocking puts, then quiet, then a plain store of the flag (p, not a signal).
    aclshmem_int32_put_nbi(dst + b * share, src + b * share, share, (me + 1) % n);
    aclshmem_quiet();
    aclshmem_int32_p(flag, round, (me + 1) % n);
    aclshmem_int32_wait_until(flag, ACLSHMEM_CMP_EQ, round);
    const int prev = (me + n - 1) % n;
    for (uint32_t i = 0; i < share; i++)
        if (dst[b * share + i] != round * 1000000 + prev * 10000 + (int32_t)(b * share + i)) bad[0] += 1;
}

static void check_quiet(int me, uint32_t blocks)
{
    const uint32_t words = 16384; // 64 KiB: four chunks of the MTE staging per 8 blocks' share
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(2 * words + 2 * blocks * LINE, sizeof(int32_t)));
    int bad = 0;
    for (int32_t round = 1; round <= 3; round++) {
        EQ(ICPU_RUN_KF(quiet_order, blocks, reinterpret_cast<uint8_t *>(sym), round, words), 0);
        std::vector<int32_t> h(blocks * LINE);
        aclrtMemcpy(h.data(), h.size() * 4, sym + 2 * words + blocks * LINE, h.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
        for (uint32_t b = 0; b < blocks; b++) bad += h[b * LINE];
        aclshmem_barrier_all();
    }
    CHECK(bad == 0, "data seen missing after the flag: %d words", bad);
    aclshmem_free(sym);
    if (bad == 0) std::printf("PE %d: quiet orders %u blocks' puts before their flags ok\n", me, blocks);
}

// ---- Device memory: kernels dereference it, host code faults on it ---------------------------
extern "C" __global__ __aicore__ void deref(GM_ADDR sym, GM_ADDR plain)
{
    reinterpret_cast<__gm__ int32_t *>(sym)[0] = 1234;
    reinterpret_cast<__gm__ int32_t *>(plain)[0] = reinterpret_cast<__gm__ int32_t *>(sym)[0] + 1;
}

static void check_fault(int me)
{
    int32_t *sym = static_cast<int32_t *>(aclshmem_calloc(8, sizeof(int32_t)));
    void *plain = nullptr;
    aclrtMalloc(&plain, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    EQ(ICPU_RUN_KF(deref, 1, reinterpret_cast<uint8_t *>(sym), static_cast<uint8_t *>(plain)), 0);
    int32_t h = 0;
    aclrtMemcpy(&h, 4, plain, 4, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK(h == 1235, "the kernel's dereferences: %d", h);
    if (failures == 0) std::printf("PE %d: the kernel dereferenced device memory\n", me);
    std::fflush(stdout);
    // The same address from host code: a fault, as on an NPU.
    volatile int32_t *host = sym;
    std::printf("PE %d: the host read %d\n", me, host[0]);
}

// ---- Faithful limits: each violation ends the launch with an error naming it -----------------
extern "C" __global__ __aicore__ void too_many_for_sync(GM_ADDR) { AscendC::SyncAll(); }
extern "C" __global__ __aicore__ void bad_pe(GM_ADDR sym) { aclshmem_int32_p(reinterpret_cast<__gm__ int32_t *>(sym), 1, 99); }
extern "C" __global__ __aicore__ void not_symmetric(GM_ADDR plain)
{
    aclshmem_int32_p(reinterpret_cast<__gm__ int32_t *>(plain), 1, 0);
}
extern "C" __global__ __aicore__ void bad_ub(GM_ADDR sym)
{
    aclshmemx_mte_put_nbi(reinterpret_cast<__gm__ int32_t *>(sym), reinterpret_cast<__gm__ int32_t *>(sym),
                          reinterpret_cast<__ubuf__ int32_t *>(uint64_t(190 * 1024)), 8192, 16, 0, 0);
}
extern "C" __global__ __aicore__ void bad_event(GM_ADDR sym)
{
    aclshmemx_mte_put_nbi(reinterpret_cast<__gm__ int32_t *>(sym), reinterpret_cast<__gm__ int32_t *>(sym),
                          reinterpret_cast<__ubuf__ int32_t *>(uint64_t(0)), 1024, 16, 0, 9);
}
extern "C" __global__ __aicore__ void host_call(GM_ADDR) { aclshmem_sync_all(); }
extern "C" __global__ __aicore__ void nested(GM_ADDR sym) { (void)ICPU_RUN_KF(host_call, 1, sym); }
extern "C" __global__ __aicore__ void bad_copy(GM_ADDR sym)
{
    AscendC::GlobalTensor<int32_t> g;
    g.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t *>(sym));
    AscendC::LocalTensor<int32_t> t(0, 64);
    AscendC::DataCopy(t, g, 5); // 20 bytes: not whole 32-byte blocks
}

static void check_limits(int me)
{
    uint8_t *sym = static_cast<uint8_t *>(aclshmem_calloc(4096, 1));
    void *plain = nullptr;
    aclrtMalloc(&plain, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK(ICPU_RUN_KF(too_many_for_sync, 49, sym) != 0, "SyncAll in a launch of 49 blocks is refused");
    CHECK(ICPU_RUN_KF(bad_pe, 2, sym) != 0, "a PE outside the instance is refused");
    CHECK(ICPU_RUN_KF(not_symmetric, 1, static_cast<uint8_t *>(plain)) != 0, "a remote address outside the heap");
    CHECK(ICPU_RUN_KF(bad_ub, 1, sym) != 0, "a UB buffer past the end of the UB");
    CHECK(ICPU_RUN_KF(bad_event, 1, sym) != 0, "sync_id 9");
    CHECK(ICPU_RUN_KF(bad_copy, 1, sym) != 0, "DataCopy of a partial block");
    CHECK(ICPU_RUN_KF(host_call, 1, sym) != 0, "a host call from a kernel");
    CHECK(ICPU_RUN_KF(nested, 1, sym) != 0, "a launch from a kernel");
    // The simulator goes on: a correct launch after them works.
    EQ(ICPU_RUN_KF(barrier_rounds, 8, sym, (int32_t)1), 0);
    aclrtFree(plain);
    aclshmem_barrier_all();
    aclshmem_free(sym);
    std::printf("PE %d: every limit ends its launch, and the next launch runs ok\n", me);
}

int main()
{
    const int n = std::atoi(std::getenv("SHMEMRUN_NPES"));
    const int pe = std::atoi(std::getenv("SHMEMRUN_PE"));
    CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(pe % 8) == ACL_SUCCESS, "aclrtSetDevice");
    aclshmemx_init_attr_t attr;
    attr.my_pe = pe;
    attr.n_pes = n;
    attr.local_mem_size = 32UL << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%s", std::getenv("CANN_TEST_PORT"));
    attr.comm_args = nullptr;
    if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;
    const char *only = std::getenv("KERNEL_CASE");
    auto want = [&](const char *c) { return only == nullptr || std::strcmp(only, c) == 0; };
    if (want("rma")) {
        check_rma(pe, n, 1);
        check_rma(pe, n, 8);
    }
    if (want("sync")) {
        check_sync(pe, n, 1);
        check_sync(pe, n, 8);
    }
    if (want("amo")) check_amo(pe);
    if (want("barrier")) {
        for (uint32_t blocks : {1u, 8u, 48u}) check_barrier(pe, n, blocks);
    }
    if (want("pointer")) check_pointer(pe, n);
    if (want("quiet")) {
        check_quiet(pe, 1);
        check_quiet(pe, 8);
    }
    if (want("teams")) check_teams(pe, n);
    if (want("limits")) check_limits(pe);
    if (want("state")) check_state(pe, n);
    if (only != nullptr && std::strcmp(only, "fault") == 0) check_fault(pe);
    aclshmem_finalize();
    aclrtResetDevice(pe % 8);
    aclFinalize();
    if (failures == 0) std::printf("PE %d of %d: device API ok\n", pe, n);
    return failures ? 1 : 0;
}
