// hello.cpp: the OpenSHMEM header from C++17, built with oshCC.
#include <shmem.h>

#include <cstdio>
#include <vector>

int main() {
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    auto *ring = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    shmem_long_p(ring, me, (me + 1) % n);
    shmem_barrier_all();
    const long want = (me + n - 1) % n;
    std::vector<long> back(1);
    shmem_long_get(back.data(), ring, 1, me);
    const bool ok = *ring == want && back[0] == want;
    std::printf("hello from PE %d of %d: %s\n", me, n, ok ? "ok" : "WRONG");
    shmem_free(ring);
    shmem_finalize();
    return ok ? 0 : 1;
}
