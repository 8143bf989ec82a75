// multi_instance_kernel.cpp: one kernel that switches among three SHMEM instances as it runs
// (CANN's multi_instance scenario), written for shmem-rs. Built with MULTI_INSTANCE, every block
// selects an instance with aclshmemx_instance_ctx_set before any SHMEM call; each instance has
// its own PE numbering, heap and barrier. Only the launch line differs from the NPU source:
//
//     NPU:     ring<<<block_dim, nullptr, stream>>>(...)
//     laptop:  ICPU_RUN_KF(ring, block_dim, ...)
//
//     aclshmem-c++ -cpu-debug -O2 -o multi_instance core/capi/examples/multi_instance_kernel.cpp
//     SHMEM_INSTANCE_PORT_RANGE=40000:40063 shmemrun -n 4 -- ./multi_instance
#define MULTI_INSTANCE
#include <cstdio>
#include <cstdlib>

#include "acl/acl.h"
#include "kernel_operator.h"
#include "shmem.h"
#ifdef ASCENDC_CPU_DEBUG
#include "tikicpulib.h"
#endif

constexpr int INSTANCES = 3;
constexpr uint32_t BLOCKS = 4;
constexpr uint32_t LINE = 8; // int32 words per 32-byte line

// In instance i (1..3) every block puts a value naming the instance, the PE and the block to the
// next PE of that instance's ring, with a signal; then it waits for its own, checks it, and meets
// the other blocks of the instance's PEs at a barrier before moving to the next instance.
extern "C" [[bisheng::core_ratio(0, 1)]] __global__ __aicore__ void ring(uint64_t fftsAddr, GM_ADDR buf1, GM_ADDR buf2,
                                                                         GM_ADDR buf3, GM_ADDR errors, int32_t round)
{
    util_set_ffts_config(fftsAddr);
    GM_ADDR bufs[INSTANCES] = {buf1, buf2, buf3};
    const int32_t block = static_cast<int32_t>(AscendC::GetBlockIdx());
    __gm__ int32_t *bad = reinterpret_cast<__gm__ int32_t *>(errors);
    for (int i = 0; i < INSTANCES; i++) {
        const uint64_t id = 1 + i;
        aclshmemx_instance_ctx_set(id);
        if (aclshmemx_instance_ctx_get() != id) bad[block * LINE] += 1;
        const int me = aclshmem_my_pe();
        const int n = aclshmem_n_pes();
        __gm__ int32_t *data = reinterpret_cast<__gm__ int32_t *>(bufs[id - 1]);
        __gm__ int32_t *signal = data + BLOCKS * LINE;
        __gm__ int32_t *value = data + BLOCKS * LINE * 2; // this block's source word
        value[block * LINE] = static_cast<int32_t>(1000 * id + 10 * me + block);
        AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE,
                                          AscendC::DcciDst::CACHELINE_OUT>(AscendC::GlobalTensor<int32_t>());
        aclshmem_int32_put_signal(data + block * LINE, value + block * LINE, 1, signal + block * LINE, round,
                                  ACLSHMEM_SIGNAL_SET, (me + 1) % n);
        aclshmem_signal_wait_until(signal + block * LINE, ACLSHMEM_CMP_EQ, round);
        const int prev = (me + n - 1) % n;
        if (data[block * LINE] != static_cast<int32_t>(1000 * id + 10 * prev + block)) bad[block * LINE] += 1;
        aclshmem_barrier_all();
    }
}

static int launch(aclrtStream stream, uint64_t ffts, uint8_t *b1, uint8_t *b2, uint8_t *b3, uint8_t *errors,
                  int32_t round)
{
#ifndef ASCENDC_CPU_DEBUG
    ring<<<BLOCKS, nullptr, stream>>>(ffts, b1, b2, b3, errors, round);
    return aclrtSynchronizeStream(stream);
#else
    (void)stream;
    return ICPU_RUN_KF(ring, BLOCKS, ffts, b1, b2, b3, errors, round);
#endif
}

int main()
{
    const int n_pes = std::atoi(std::getenv("SHMEMRUN_NPES"));
    const int pe = std::atoi(std::getenv("SHMEMRUN_PE"));
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(pe % 8) != ACL_SUCCESS) return 1;
    uint8_t *bufs[INSTANCES];
    for (int i = 0; i < INSTANCES; i++) {
        // Three instances over the same PEs, numbered differently: as they are, reversed, rotated.
        const int order[INSTANCES] = {pe, n_pes - 1 - pe, (pe + 1) % n_pes};
        aclshmemx_init_attr_t attr;
        attr.instance_id = i + 1;
        attr.my_pe = order[i];
        attr.n_pes = n_pes;
        attr.local_mem_size = 16UL << 20;
        std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:0"); // a port of the range
        attr.comm_args = nullptr;
        if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;
        bufs[i] = static_cast<uint8_t *>(aclshmem_calloc(3 * BLOCKS * LINE, sizeof(int32_t)));
    }
    void *errors = nullptr;
    aclrtMalloc(&errors, BLOCKS * LINE * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemset(errors, BLOCKS * LINE * sizeof(int32_t), 0, BLOCKS * LINE * sizeof(int32_t));
    int failures = 0;
    for (int32_t round = 1; round <= 3; round++) {
        int rc = launch(nullptr, util_get_ffts_config(), bufs[0], bufs[1], bufs[2], static_cast<uint8_t *>(errors),
                        round);
        if (rc != 0) {
            std::fprintf(stderr, "PE %d: the kernel failed (%d)\n", pe, rc);
            return 1;
        }
    }
    int32_t host[BLOCKS * LINE];
    aclrtMemcpy(host, sizeof host, errors, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST);
    for (uint32_t b = 0; b < BLOCKS; b++) failures += host[b * LINE];
    std::printf("PE %d: %d blocks switched among %d instances for 3 launches: %s\n", pe, BLOCKS, INSTANCES,
                failures ? "FAILED" : "every value verified");
    aclrtFree(errors);
    for (int i = INSTANCES; i >= 1; i--) {
        aclshmemx_instance_ctx_set(i); // the host call: this is host code
        aclshmem_free(bufs[i - 1]);
        aclshmemx_finalize(i);
    }
    aclrtResetDevice(pe % 8);
    aclFinalize();
    return failures ? 1 : 0;
}
