// hello.cpp: the OpenSHMEM header from C++17, built with oshCC: the typed routines, and the
// type-generic ones as C++ overloads (with and without a context).
#include <shmem.h>

#include <cstdint>
#include <cstdio>
#include <vector>

static int failures;
#define CHECK(cond, what)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::fprintf(stderr, "PE %d: hello.cpp:%d: %s\n", shmem_my_pe(), __LINE__, what); \
            failures++;                                                                \
        }                                                                              \
    } while (0)

int main() {
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    auto *ring = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    shmem_long_p(ring, me, next);
    shmem_barrier_all();
    std::vector<long> back(1);
    shmem_long_get(back.data(), ring, 1, me);
    CHECK(*ring == prev && back[0] == prev, "typed p and get");

    // Overloads: the pointer's type picks the routine.
    auto *d = static_cast<double *>(shmem_calloc(4, sizeof(double)));
    auto *u = static_cast<std::uint64_t *>(shmem_calloc(4, sizeof(std::uint64_t)));
    auto *i = static_cast<int *>(shmem_calloc(2, sizeof(int)));
    const double ds[2] = {1.25 * me, -0.5};
    shmem_put(d + 1, ds, 2, next);
    shmem_p(u + 1, 0x0123456789ABCDEFull + static_cast<unsigned>(me), next);
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_atomic_add(ctx, &i[0], me + 1, 0);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(d[0] == 0 && d[1] == 1.25 * prev && d[2] == -0.5 && d[3] == 0, "overloaded put");
    CHECK(u[1] == 0x0123456789ABCDEFull + static_cast<unsigned>(prev) && u[0] == 0 && u[2] == 0, "overloaded p");
    CHECK(shmem_g(u + 1, me) == u[1], "overloaded g");
    if (me == 0) CHECK(i[0] == n * (n + 1) / 2, "overloaded ctx atomic_add");
    CHECK(shmem_atomic_fetch(ctx, &i[0], 0) == n * (n + 1) / 2, "overloaded ctx atomic_fetch");
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    shmem_atomic_set(&i[1], me + 100, next);
    shmem_wait_until(&i[1], SHMEM_CMP_EQ, prev + 100);
    CHECK(shmem_test(&i[1], SHMEM_CMP_EQ, prev + 100) == 1, "overloaded test");
    long *r = static_cast<long *>(shmem_malloc(sizeof(long)));
    *ring = me;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, r, ring, 1) == 0 && *r == static_cast<long>(n) * (n - 1) / 2, "overloaded sum_reduce");
    shmem_free(r);
    shmem_free(i);
    shmem_free(u);
    shmem_free(d);
    shmem_free(ring);
    std::printf("hello from PE %d of %d: %s\n", me, n, failures == 0 ? "ok" : "WRONG");
    shmem_finalize();
    return failures == 0 ? 0 : 1;
}
