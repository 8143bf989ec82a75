// allgather_kernel.cpp: an all-gather kernel in CANN's style, written for shmem-rs, that runs
// unchanged on an NPU and on the laptop; only the launch line differs:
//
//     NPU:     allgather<<<block_dim, nullptr, stream>>>(...)   (bisheng, CANN's toolkit)
//     laptop:  ICPU_RUN_KF(allgather, block_dim, ...)           (aclshmem-c++ -cpu-debug)
//
// Every PE copies its input into its own slot of a symmetric buffer, tells every PE with a
// signal that the slot is ready, and each block then gets its share of every PE's slot into the
// PE's output. Small inputs use 8 vector blocks and the MTE engine's default staging; large ones
// 16 blocks and a 64 KiB staging buffer of the block's own UB (CANN's small- and large-data
// paths). Build and run (4 PEs):
//
//     aclshmem-c++ -cpu-debug -O2 -o allgather core/capi/examples/allgather_kernel.cpp
//     shmemrun -n 4 -- ./allgather
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "kernel_operator.h"
#include "shmem.h"
#ifdef ASCENDC_CPU_DEBUG
#include "tikicpulib.h"
#endif

constexpr uint32_t SMALL_BLOCKS = 8;
constexpr uint32_t LARGE_BLOCKS = 16;
constexpr uint64_t LARGE = 2 << 20;          // bytes per PE from which the large path runs
constexpr uint32_t FLAG_STRIDE = 8;          // one 32-byte line per signal word
constexpr uint32_t STAGE_UB = 64 * 1024;     // the large path's staging buffer ...
constexpr uint64_t STAGE_AT = 1024;          // ... at this UB offset
constexpr uint64_t ROUND_AT = 96 * 1024 + 32; // where a block keeps the round in its UB

extern "C" [[bisheng::core_ratio(0, 1)]] __global__ __aicore__ void allgather(uint64_t fftsAddr, GM_ADDR input,
                                                                              GM_ADDR output, GM_ADDR gva,
                                                                              GM_ADDR flags, uint64_t len,
                                                                              int32_t round)
{
    util_set_ffts_config(fftsAddr);
    const int me = aclshmem_my_pe();
    const int n = aclshmem_n_pes();
    const uint64_t block = AscendC::GetBlockIdx();
    const uint64_t blocks = AscendC::GetBlockNum();
    // This block's share of a slot: whole 32-byte lines, the last block takes the rest.
    const uint64_t share = (len / blocks + 31) / 32 * 32;
    const uint64_t from = block * share < len ? block * share : len;
    const uint64_t size = from + share <= len ? share : len - from;

    // The round, kept in the block's UB (an absolute UB address, as CANN kernels write them).
    __ubuf__ int32_t *round_ub = reinterpret_cast<__ubuf__ int32_t *>(ROUND_AT);
    *round_ub = round;

    // 1. My input into my own slot of the symmetric buffer.
    if (size > 0) aclshmem_putmem(gva + me * len + from, input + from, size, me);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::SyncAll();

    // 2. Block 0 tells every PE that my slot holds this round's data.
    __gm__ int32_t *flag = reinterpret_cast<__gm__ int32_t *>(flags);
    if (block == 0) {
        aclshmem_quiet();
        for (int pe = 0; pe < n; pe++) aclshmemx_signal_op(flag + me * FLAG_STRIDE, *round_ub, ACLSHMEM_SIGNAL_SET, pe);
    }

    // 3. Every block gets its share of every PE's slot once that PE says it is ready.
    for (int k = 0; k < n; k++) {
        const int pe = (me + k) % n;
        aclshmem_signal_wait_until(flag + pe * FLAG_STRIDE, ACLSHMEM_CMP_EQ, *round_ub);
        if (size == 0) continue;
        if (len < LARGE) {
            aclshmem_getmem(output + pe * len + from, gva + pe * len + from, size, pe);
        } else {
            __ubuf__ uint8_t *stage = reinterpret_cast<__ubuf__ uint8_t *>(STAGE_AT);
            aclshmemx_mte_get_nbi(output + pe * len + from, gva + pe * len + from, stage, STAGE_UB, size, pe, EVENT_ID0);
            AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
            AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
        }
    }
    aclshmem_quiet();
    // Nobody overwrites a slot (next round) while another PE still reads it.
    aclshmem_barrier_all();
}

// The launch, as CANN's examples put it beside the kernel.
static int launch(uint32_t block_dim, aclrtStream stream, uint64_t ffts, uint8_t *input, uint8_t *output,
                  uint8_t *gva, uint8_t *flags, uint64_t len, int32_t round)
{
#ifndef ASCENDC_CPU_DEBUG
    allgather<<<block_dim, nullptr, stream>>>(ffts, input, output, gva, flags, len, round);
    return aclrtSynchronizeStream(stream);
#else
    (void)stream;
    return ICPU_RUN_KF(allgather, block_dim, ffts, input, output, gva, flags, len, round);
#endif
}

int main(int argc, char **argv)
{
    int n_pes = argc >= 3 ? std::atoi(argv[1]) : std::atoi(std::getenv("SHMEMRUN_NPES"));
    int pe = argc >= 3 ? std::atoi(argv[2]) : std::atoi(std::getenv("SHMEMRUN_PE"));
    const char *port = std::getenv("ALLGATHER_PORT");
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(pe % 8) != ACL_SUCCESS) return 1;
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);

    aclshmemx_init_attr_t attr;
    attr.my_pe = pe;
    attr.n_pes = n_pes;
    attr.local_mem_size = 64UL << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%s", port ? port : "29680");
    if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;

    const uint64_t sizes[] = {32, 4096, 100000, 3 << 20};
    uint8_t *flags = static_cast<uint8_t *>(aclshmem_calloc(n_pes * FLAG_STRIDE, sizeof(int32_t)));
    int failures = 0;
    int32_t round = 0;
    for (uint64_t len : sizes) {
        round++;
        uint8_t *gva = static_cast<uint8_t *>(aclshmem_malloc(n_pes * len));
        void *input = nullptr, *output = nullptr;
        aclrtMalloc(&input, len, ACL_MEM_MALLOC_HUGE_FIRST);
        aclrtMalloc(&output, n_pes * len, ACL_MEM_MALLOC_HUGE_FIRST);
        std::vector<uint8_t> host(n_pes * len);
        for (uint64_t i = 0; i < len; i++) host[i] = static_cast<uint8_t>(pe * 31 + i * 7 + round);
        aclrtMemcpy(input, len, host.data(), len, ACL_MEMCPY_HOST_TO_DEVICE);

        const uint32_t blocks = len < LARGE ? SMALL_BLOCKS : LARGE_BLOCKS;
        int rc = launch(blocks, stream, util_get_ffts_config(), static_cast<uint8_t *>(input),
                        static_cast<uint8_t *>(output), gva, flags, len, round);
        if (rc != 0) {
            std::fprintf(stderr, "PE %d: the kernel failed (%d) at %llu bytes\n", pe, rc, (unsigned long long)len);
            return 1;
        }
        aclrtMemcpy(host.data(), n_pes * len, output, n_pes * len, ACL_MEMCPY_DEVICE_TO_HOST);
        for (int p = 0; p < n_pes; p++)
            for (uint64_t i = 0; i < len; i++)
                if (host[p * len + i] != static_cast<uint8_t>(p * 31 + i * 7 + round)) {
                    if (failures++ < 5)
                        std::fprintf(stderr, "PE %d: %llu bytes: byte %llu from PE %d is %u\n", pe,
                                     (unsigned long long)len, (unsigned long long)i, p, host[p * len + i]);
                }
        std::printf("PE %d: allgather of %llu bytes per PE on %u blocks %s\n", pe, (unsigned long long)len, blocks,
                    failures ? "FAILED" : "verified");
        aclrtFree(input);
        aclrtFree(output);
        aclshmem_free(gva);
    }
    aclshmem_free(flags);
    aclshmem_finalize();
    aclrtDestroyStream(stream);
    aclrtResetDevice(pe % 8);
    aclFinalize();
    return failures ? 1 : 0;
}
