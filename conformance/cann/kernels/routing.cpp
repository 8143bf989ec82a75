// routing.cpp: in-kernel instance routing, the kernel:: cases of MULTI_INSTANCE in C++. Two
// instances over all PEs (1 as numbered, 2 reversed); kernels select them per block and switch.
#define MULTI_INSTANCE
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "acl/acl.h"
#include "kernel_operator.h"
#include "shmem.h"
#include "tikicpulib.h"

#include "../check.h"

// Block b selects instance 1 + b % 2, writes what it sees, switches to the other one and
// writes again; with a barrier on each.
extern "C" __global__ __aicore__ void switching(GM_ADDR out)
{
    const uint32_t b = AscendC::GetBlockIdx();
    __gm__ int32_t *o = reinterpret_cast<__gm__ int32_t *>(out) + b * 8;
    for (int k = 0; k < 2; k++) {
        const uint64_t id = 1 + (b + k) % 2;
        aclshmemx_instance_ctx_set(id);
        o[k * 3] = (int32_t)aclshmemx_instance_ctx_get();
        o[k * 3 + 1] = aclshmem_my_pe();
        o[k * 3 + 2] = aclshmem_n_pes();
    }
}

// Instance 2's state at CANN's device address, read by hand: its own numbering.
extern "C" __global__ __aicore__ void state_of_2(GM_ADDR out)
{
    aclshmemx_instance_ctx_set(2);
    __gm__ int32_t *st = reinterpret_cast<__gm__ int32_t *>(0x17FFBE010000ULL + (2ULL << 1) * 65536);
    __gm__ int32_t *o = reinterpret_cast<__gm__ int32_t *>(out);
    o[0] = st[1]; // mype
    o[1] = st[2]; // npes
    o[2] = aclshmem_my_pe();
}

// The SDMA engine on instance 2, which enabled it, then on instance 1, which did not.
extern "C" __global__ __aicore__ void engines(GM_ADDR sym2, GM_ADDR sym1)
{
    aclshmemx_instance_ctx_set(2);
    const int next = (aclshmem_my_pe() + 1) % aclshmem_n_pes();
    __gm__ int32_t *w = reinterpret_cast<__gm__ int32_t *>(sym2);
    w[0] = 70 + aclshmem_my_pe();
    aclshmemx_sdma_put_nbi(w + 8, w, reinterpret_cast<__ubuf__ int32_t *>(uint64_t(0)), 1024, 1, next, 0);
    aclshmem_quiet();
    aclshmem_barrier_all();
    aclshmemx_instance_ctx_set(1);
    __gm__ int32_t *v = reinterpret_cast<__gm__ int32_t *>(sym1);
    aclshmemx_sdma_put_nbi(v + 8, v, reinterpret_cast<__ubuf__ int32_t *>(uint64_t(0)), 1024, 1, next, 0);
}

// A SHMEM call before any instance is selected.
extern "C" __global__ __aicore__ void unselected(GM_ADDR) { (void)aclshmem_my_pe(); aclshmem_barrier_all(); }
// An instance this PE never initialised.
extern "C" __global__ __aicore__ void unknown(GM_ADDR) { aclshmemx_instance_ctx_set(7); }

int main()
{
    const int n = std::atoi(std::getenv("SHMEMRUN_NPES"));
    const int pe = std::atoi(std::getenv("SHMEMRUN_PE"));
    CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(pe % 8) == ACL_SUCCESS, "aclrtSetDevice");
    for (int id = 1; id <= 2; id++) {
        aclshmemx_init_attr_t attr;
        attr.instance_id = id;
        attr.my_pe = id == 1 ? pe : n - 1 - pe;
        attr.n_pes = n;
        attr.local_mem_size = 8UL << 20;
        std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:0");
        attr.comm_args = nullptr;
        if (id == 2)
            attr.option_attr.data_op_engine_type =
                static_cast<data_op_engine_type_t>(ACLSHMEM_DATA_OP_MTE | ACLSHMEM_DATA_OP_SDMA);
        if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;
    }
    void *out = nullptr;
    aclrtMalloc(&out, 4 * 8 * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST);
    EQ(ICPU_RUN_KF(switching, 4, static_cast<uint8_t *>(out)), 0);
    int32_t h[32];
    aclrtMemcpy(h, sizeof h, out, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 2; k++) {
            const int id = 1 + (b + k) % 2;
            const int32_t *o = h + b * 8 + k * 3;
            CHECK(o[0] == id && o[1] == (id == 1 ? pe : n - 1 - pe) && o[2] == n,
                  "block %d step %d: instance %d, PE %d of %d", b, k, o[0], o[1], o[2]);
        }
    EQ(ICPU_RUN_KF(state_of_2, 1, static_cast<uint8_t *>(out)), 0);
    aclrtMemcpy(h, sizeof h, out, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK(h[0] == n - 1 - pe && h[1] == n && h[2] == n - 1 - pe, "instance 2's state by hand: PE %d of %d (%d)", h[0],
          h[1], h[2]);
    {
        aclshmemx_instance_ctx_set(1);
        uint8_t *sym1 = static_cast<uint8_t *>(aclshmem_calloc(16, sizeof(int32_t)));
        aclshmemx_instance_ctx_set(2);
        uint8_t *sym2 = static_cast<uint8_t *>(aclshmem_calloc(16, sizeof(int32_t)));
        CHECK(ICPU_RUN_KF(engines, 1, sym2, sym1) != 0, "SDMA on an instance without it fails");
        int32_t w[16];
        aclrtMemcpy(w, sizeof w, sym2, sizeof w, ACL_MEMCPY_DEVICE_TO_HOST);
        CHECK(w[8] == 70 + (n - 1 - pe + n - 1) % n, "SDMA put on instance 2: %d", w[8]);
        aclshmem_barrier_all();
        aclshmem_free(sym2);
        aclshmemx_instance_ctx_set(1);
        aclshmem_free(sym1);
    }
    CHECK(ICPU_RUN_KF(unselected, 2, static_cast<uint8_t *>(out)) != 0, "a call before instance_ctx_set fails");
    CHECK(ICPU_RUN_KF(unknown, 1, static_cast<uint8_t *>(out)) != 0, "an instance not initialised here fails");
    // The host side of this file: the host calls.
    aclshmemx_instance_ctx_set(2);
    CHECK(aclshmemx_instance_ctx_get() == 2, "the host's active instance");
    aclrtFree(out);
    aclshmemx_finalize(2);
    aclshmemx_finalize(1);
    aclrtResetDevice(pe % 8);
    aclFinalize();
    if (failures == 0) std::printf("PE %d: instance routing in kernels ok\n", pe);
    return failures ? 1 : 0;
}
