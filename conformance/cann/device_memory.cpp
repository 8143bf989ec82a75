// device_memory.cpp: CANN's heaps are device memory, as on an NPU. The ACL runtime's copies reach
// aclshmem_malloc memory (aclrtMemcpy host to device and back, and to a peer's heap through
// aclshmem_ptr), and so do SHMEM's calls, which also take aclrtMalloc memory as their local side;
// host code does not. Run by shmemrun on 2 PEs; with the
// argument "touch", PE 1 then stores to its heap from host code, which faults (SIGSEGV) as on an
// NPU, and the launcher names the PE and the signal. Under SHMEM_SIM_DEVICE_HOST_ACCESS=1 the
// store works, and the program says so.
#include <acl/acl.h>
#include <shmem.h>

#include "check.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
    const int me = std::atoi(std::getenv("SHMEMRUN_PE"));
    const int n = std::atoi(std::getenv("SHMEMRUN_NPES"));
    CHECK(aclInit(nullptr) == ACL_SUCCESS, "aclInit");
    CHECK(aclrtSetDevice(me) == ACL_SUCCESS, "aclrtSetDevice");
    aclshmemx_init_attr_t attr;
    attr.my_pe = me;
    attr.n_pes = n;
    attr.local_mem_size = 2 << 20;
    std::snprintf(attr.ip_port, sizeof attr.ip_port, "tcp://127.0.0.1:%s", std::getenv("CANN_TEST_PORT"));
    CHECK(aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) == ACLSHMEM_SUCCESS, "init");

    auto *heap = static_cast<int32_t *>(aclshmem_malloc(64 * sizeof(int32_t)));
    CHECK(heap != nullptr, "malloc");
    // Host to device, then device to host: the runtime reaches the heap.
    int32_t in[64], out[64];
    for (int i = 0; i < 64; i++) in[i] = me * 1000 + i;
    CHECK(aclrtMemcpy(heap, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS, "H2D into the heap");
    std::memset(out, 0, sizeof out);
    CHECK(aclrtMemcpy(out, sizeof out, heap, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS, "D2H from the heap");
    CHECK(std::memcmp(in, out, sizeof in) == 0, "the heap holds what was copied in");
    // The heap is device memory to the runtime: a host-to-host copy into it is refused.
    CHECK(aclrtMemcpy(heap, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_HOST) != ACL_SUCCESS, "H2H into the heap");
    aclshmem_barrier_all();
    // SHMEM sees what the runtime wrote, on every PE; and the runtime reaches a peer's heap at
    // its aclshmem_ptr address.
    const int peer = (me + 1) % n;
    CHECK(aclshmem_int32_g(heap + 5, peer) == peer * 1000 + 5, "_g of the peer's copied-in data");
    int32_t theirs = -1;
    void *remote = aclshmem_ptr(heap + 7, peer);
    CHECK(remote != nullptr, "aclshmem_ptr");
    CHECK(aclrtMemcpy(&theirs, sizeof theirs, remote, sizeof theirs, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS,
          "D2H from the peer's heap");
    CHECK(theirs == peer * 1000 + 7, "the peer's element: %d", theirs);
    aclshmem_barrier_all();

    // Device memory from aclrtMalloc as the local side of host RMA: a put from it, a get into it,
    // and a put on an ACL stream (complete once the stream is synchronised).
    void *dev = nullptr;
    CHECK(aclrtMalloc(&dev, 64 * sizeof(int32_t), ACL_MEM_MALLOC_HUGE_FIRST) == ACL_SUCCESS, "aclrtMalloc");
    for (int i = 0; i < 64; i++) in[i] = -(me * 1000 + i);
    CHECK(aclrtMemcpy(dev, sizeof in, in, sizeof in, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS, "H2D");
    aclshmem_putmem(heap + 32, dev, 8 * sizeof(int32_t), peer); // the peer's heap[32..40] = -(me...)
    aclshmem_barrier_all();
    const int from = (me + n - 1) % n;
    CHECK(aclshmem_int32_g(heap + 33, me) == -(from * 1000 + 1), "put from device memory: %d",
          aclshmem_int32_g(heap + 33, me));
    aclshmem_getmem(static_cast<int32_t *>(dev) + 16, heap + 5, 2 * sizeof(int32_t), peer); // dev[16..18]
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "a stream");
    aclshmemx_putmem_on_stream(heap + 48, static_cast<int32_t *>(dev) + 2, sizeof(int32_t), peer, stream);
    CHECK(aclrtSynchronizeStream(stream) == ACL_SUCCESS, "synchronise the stream");
    aclshmem_barrier_all(); // completes the get on the default stream; the stream put is done
    CHECK(aclrtMemcpy(out, 2 * sizeof(int32_t), static_cast<int32_t *>(dev) + 16, 2 * sizeof(int32_t),
                      ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS,
          "D2H");
    CHECK(out[0] == peer * 1000 + 5 && out[1] == peer * 1000 + 6, "get into device memory: %d %d", out[0], out[1]);
    CHECK(aclshmem_int32_g(heap + 48, me) == -(from * 1000 + 2), "put on a stream from device memory");
    int32_t on_host[2] = {1, 2};
    aclshmem_putmem(heap, on_host, sizeof on_host, peer); // host memory: refused, logged
    CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "destroy the stream");
    CHECK(aclrtFree(dev) == ACL_SUCCESS, "aclrtFree");
    CHECK(aclrtFree(heap) != ACL_SUCCESS, "aclrtFree of the heap is refused");
    aclshmem_barrier_all();

    if (argc > 1 && std::strcmp(argv[1], "touch") == 0 && me == 1) {
        std::fprintf(stderr, "PE 1 stores to its heap from host code\n");
        *reinterpret_cast<volatile int32_t *>(heap) = 42; // faults unless SHMEM_SIM_DEVICE_HOST_ACCESS=1
        std::printf("device_memory: host code stored %d\n", *reinterpret_cast<volatile int32_t *>(heap));
    }
    aclshmem_barrier_all();
    aclshmem_free(heap);
    CHECK(aclshmem_finalize() == ACLSHMEM_SUCCESS, "finalize");
    CHECK(aclrtResetDevice(me) == ACL_SUCCESS, "aclrtResetDevice");
    CHECK(aclFinalize() == ACL_SUCCESS, "aclFinalize");
    if (failures == 0) std::printf("device_memory: PE %d of %d ok\n", me, n);
    return failures ? 1 : 0;
}
