// cann_calls.cpp: a fixed loop of one CANN SHMEM host call on one PE, for counting the
// instructions a call costs through the CANN C ABI with
// `valgrind --tool=callgrind --toggle-collect=calls_loop` (benches/tests/instructions.rs sets
// it beside the Rust API's `shmem-calls` loop of the same operation).
//
//   cann_calls OP COUNT     (under oshrun -n 1, with SHMEM_INSTANCE_PORT_RANGE for the ports)
//
// OP: none (an empty loop) or switch (aclshmemx_instance_ctx_set, alternately to instances 1
// and 2, both created here with CANN's default init on one PE).
#include <acl/acl.h>
#include <shmem.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int failures;

static void op_none(long) {}
static void op_switch(long i) {
    if (aclshmemx_instance_ctx_set(1 + (static_cast<uint64_t>(i) & 1)) != ACLSHMEM_SUCCESS) failures++;
}

// The measured loop (its own function, so callgrind can count it alone).
__attribute__((noinline)) static void calls_loop(void (*op)(long), long count) {
    for (long i = 0; i < count; i++) op(i);
}

static bool create(uint64_t id, aclshmemx_init_attr_t &attr) {
    attr.instance_id = id;
    attr.my_pe = 0;
    attr.n_pes = 1;
    attr.local_mem_size = 4UL << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:0"); // port 0: from the range
    attr.comm_args = nullptr;
    const int rc = aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr);
    if (rc != ACLSHMEM_SUCCESS) std::fprintf(stderr, "cann_calls: instance %llu: init gave %d\n", (unsigned long long)id, rc);
    return rc == ACLSHMEM_SUCCESS;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: cann_calls none|switch COUNT\n");
        return 2;
    }
    void (*op)(long) = std::strcmp(argv[1], "none") == 0 ? op_none : std::strcmp(argv[1], "switch") == 0 ? op_switch : nullptr;
    if (op == nullptr) {
        std::fprintf(stderr, "cann_calls: unknown operation %s\n", argv[1]);
        return 2;
    }
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) {
        std::fprintf(stderr, "cann_calls: aclInit or aclrtSetDevice failed\n");
        return 1;
    }
    aclshmemx_init_attr_t a1, a2;
    if (!create(1, a1) || !create(2, a2)) return 1;
    calls_loop(op, std::atol(argv[2]));
    const int f1 = aclshmemx_finalize(1), f2 = aclshmemx_finalize(2);
    aclrtResetDevice(0);
    aclFinalize();
    if (failures || f1 != ACLSHMEM_SUCCESS || f2 != ACLSHMEM_SUCCESS) {
        std::fprintf(stderr, "cann_calls: %d failed switches, finalize gave %d and %d\n", failures, f1, f2);
        return 1;
    }
    return 0;
}
