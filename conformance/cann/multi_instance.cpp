// multi_instance.cpp: CANN SHMEM's multi-instance example flow (examples/multi_instance), as a
// host program for 4 PEs. Five instances over different subsets of the PEs are created, used and
// finalized by id, some while others stay alive:
//
//   instance 1: PEs {0, 1, 2, 3}   created, used, finalized
//   instance 2: PEs {0, 3}         created, used, kept
//   instance 3: PEs {1, 3}         created, used, finalized
//   instance 4: PEs {2, 3}         created, used, kept
//   instance 5: PEs {1, 2}         created, used, kept
//   then instance 2 is made active again on its PEs, used again, and 2, 4 and 5 are finalized.
//
// Each instance's PEs have their own numbering (their index in the list), CANN's default init
// with "tcp://127.0.0.1:0" (the port comes from SHMEM_INSTANCE_PORT_RANGE: start + id), a
// 64 MiB heap. "Used" is CANN's example in host calls: malloc and free, then an all-gather of
// int32 blocks of 16 to 1024 elements, each PE putting its block into every member's output
// from symmetric memory, checked element by element (the example runs an AllGather kernel,
// which is the device side's work).
//
// Started as CANN's examples start PEs: `multi_instance N_PES PE_ID IP_PORT FIRST_NPU`, one
// process per PE (device PE_ID % 8 + FIRST_NPU); or by shmemrun with no arguments (SHMEMRUN_PE,
// SHMEMRUN_NPES).
#include <acl/acl.h>
#include <shmem.h>

#include "check.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// The all-gather of `len` int32 per PE over the active instance, checked.
static void all_gather(uint64_t id, int len) {
    const int me = aclshmem_my_pe(), n = aclshmem_n_pes();
    auto *in = static_cast<int32_t *>(aclshmem_malloc(len * sizeof(int32_t)));
    auto *out = static_cast<int32_t *>(aclshmem_calloc(static_cast<size_t>(n) * len, sizeof(int32_t)));
    CHECK(in && out, "instance %llu: buffers for %d elements", (unsigned long long)id, len);
    if (!in || !out) return;
    const int32_t stamp = static_cast<int32_t>(id) * 1000000 + me * 10000;
    for (int i = 0; i < len; i++) aclshmem_int32_p(in + i, stamp + i, me);
    aclshmem_barrier_all(); // the inputs are in place everywhere
    for (int pe = 0; pe < n; pe++) aclshmem_int32_put(out + me * len, in, len, pe);
    aclshmem_barrier_all(); // every block has arrived
    int wrong = 0;
    for (int pe = 0; pe < n; pe++)
        for (int i = 0; i < len; i++)
            wrong += aclshmem_int32_g(out + pe * len + i, me) != static_cast<int32_t>(id) * 1000000 + pe * 10000 + i;
    CHECK(wrong == 0, "instance %llu: %d of %d gathered elements wrong", (unsigned long long)id, wrong, n * len);
    aclshmem_barrier_all(); // nobody still reads before the buffers go
    aclshmem_free(out);
    aclshmem_free(in);
}

// Creates instance `id` over `pes` when this PE is one of them, and uses it.
static void create(int pe, uint64_t id, const std::vector<int> &pes, aclshmemx_init_attr_t &attr) {
    auto at = std::find(pes.begin(), pes.end(), pe);
    if (at == pes.end()) return;
    attr.instance_id = id;
    attr.my_pe = static_cast<int>(at - pes.begin());
    attr.n_pes = static_cast<int>(pes.size());
    attr.local_mem_size = 64UL << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:0"); // port 0: from the range
    attr.comm_args = nullptr;
    const int rc = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr);
    CHECK(rc == ACLSHMEM_SUCCESS, "instance %llu: init gave %d", (unsigned long long)id, rc);
    if (rc != ACLSHMEM_SUCCESS) return;
    CHECK(aclshmemx_instance_ctx_get()->id == id, "instance %llu is active after its init", (unsigned long long)id);
    CHECK(aclshmem_my_pe() == attr.my_pe && aclshmem_n_pes() == attr.n_pes, "instance %llu: PE %d of %d",
          (unsigned long long)id, aclshmem_my_pe(), aclshmem_n_pes());
    void *p = aclshmem_malloc(1024);
    CHECK(p != nullptr, "instance %llu: malloc(1024)", (unsigned long long)id);
    aclshmem_free(p);
    for (int len = 16; len <= 1024; len *= 4) all_gather(id, len);
}

static void finalize(int pe, uint64_t id, const std::vector<int> &pes) {
    if (std::find(pes.begin(), pes.end(), pe) == pes.end()) return;
    const int rc = aclshmemx_finalize(id);
    CHECK(rc == ACLSHMEM_SUCCESS, "instance %llu: finalize gave %d", (unsigned long long)id, rc);
}

int main(int argc, char **argv) {
    int n_pes, pe, first_npu = 0;
    if (argc >= 4) { // as CANN's run.sh starts each PE
        n_pes = std::atoi(argv[1]);
        pe = std::atoi(argv[2]);
        if (argc >= 5) first_npu = std::atoi(argv[4]);
    } else { // started by shmemrun
        n_pes = std::atoi(std::getenv("SHMEMRUN_NPES"));
        pe = std::atoi(std::getenv("SHMEMRUN_PE"));
    }
    if (n_pes != 4) {
        std::fprintf(stderr, "multi_instance: runs on 4 PEs, not %d\n", n_pes);
        return 2;
    }
    CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
    const int device = pe % 8 + first_npu;
    CHECK(aclrtSetDevice(device) == ACL_SUCCESS, "aclrtSetDevice(%d)", device);

    const std::vector<int> in1 = {0, 1, 2, 3}, in2 = {0, 3}, in3 = {1, 3}, in4 = {2, 3}, in5 = {1, 2};
    aclshmemx_init_attr_t a1, a2, a3, a4, a5;
    create(pe, 1, in1, a1);
    finalize(pe, 1, in1);
    create(pe, 2, in2, a2);
    create(pe, 3, in3, a3);
    finalize(pe, 3, in3);
    create(pe, 4, in4, a4);
    create(pe, 5, in5, a5);
    // Back to instance 2 on its PEs: its heap and state are intact after the others came and went.
    if (std::find(in2.begin(), in2.end(), pe) != in2.end()) {
        CHECK(aclshmemx_instance_ctx_set(2) == ACLSHMEM_SUCCESS, "switch to instance 2");
        CHECK(aclshmem_n_pes() == 2, "instance 2 has 2 PEs");
        all_gather(2, 256);
    }
    finalize(pe, 2, in2);
    finalize(pe, 4, in4);
    finalize(pe, 5, in5);
    CHECK(aclshmemx_init_status() == ACLSHMEM_STATUS_NOT_INITIALIZED, "every instance finalized");

    CHECK(aclrtResetDevice(device) == ACL_SUCCESS, "aclrtResetDevice");
    CHECK(aclFinalize() == ACL_SUCCESS, "aclFinalize");
    if (failures == 0) std::printf("multi_instance: PE %d of %d ok\n", pe, n_pes);
    return failures ? 1 : 0;
}
