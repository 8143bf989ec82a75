/* amo.c: atomics and contexts through the OpenSHMEM C API. Every PE updates PE 0's words;
 * the results are checked exactly. Exits non-zero on the first failed check. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *counter = shmem_calloc(4, sizeof(long));
    uint64_t *bits = shmem_calloc(2, sizeof(uint64_t));
    double *dbl = shmem_calloc(2, sizeof(double));
    int *ints = shmem_calloc(4, sizeof(int));
    shmem_barrier_all();

    /* fetch_add with a value that does not fit 32 bits; the fetched values are distinct. */
    long before = shmem_long_atomic_fetch_add(&counter[1], 0x100000001L, 0);
    CHECK(before % 0x100000001L == 0 && before / 0x100000001L < n, "fetch_add fetched %ld", before);
    shmem_long_atomic_inc(&counter[2], 0);
    shmem_long_atomic_add(&counter[2], 2, 0);
    long ticket = shmem_long_atomic_fetch_inc(&counter[3], 0);
    CHECK(ticket >= 0 && ticket < n, "fetch_inc fetched %ld", ticket);
    /* Bitwise: each PE sets its own bit and flips the high bit. */
    shmem_uint64_atomic_or(&bits[0], (uint64_t)1 << me, 0);
    shmem_uint64_atomic_fetch_xor(&bits[1], 0x8000000000000000ull, 0);
    /* Non-blocking fetch into a local variable, completed by quiet. */
    long seen = -1;
    shmem_long_atomic_fetch_add_nbi(&seen, &counter[0], 1, 0);
    shmem_quiet();
    CHECK(seen >= 0 && seen < n, "fetch_add_nbi delivered %ld", seen);
    shmem_barrier_all();

    if (me == 0) {
        CHECK(counter[1] == 0x100000001L * n, "fetch_add sum %ld", counter[1]);
        CHECK(counter[2] == 3L * n, "inc + add sum %ld", counter[2]);
        CHECK(counter[3] == n && counter[0] == n, "fetch_inc count %ld, nbi count %ld", counter[3], counter[0]);
        uint64_t all = n == 64 ? ~0ull : (((uint64_t)1 << n) - 1);
        CHECK(bits[0] == all, "or: %llx", (unsigned long long)bits[0]);
        CHECK(bits[1] == (n % 2 ? 0x8000000000000000ull : 0), "xor: %llx", (unsigned long long)bits[1]);
    }
    shmem_barrier_all();

    /* Extended types: set, fetch and swap of a double; compare_swap of an int. */
    if (me == n - 1) shmem_double_atomic_set(&dbl[0], -2.5, 0);
    shmem_barrier_all();
    CHECK(shmem_double_atomic_fetch(&dbl[0], 0) == -2.5, "double fetch");
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_double_atomic_swap(&dbl[0], 7.75, 0) == -2.5, "double swap");
        CHECK(shmem_int_atomic_compare_swap(&ints[0], 1, 5, 0) == 0, "a failing compare_swap changed nothing");
        CHECK(shmem_int_atomic_compare_swap(&ints[0], 0, -7, 0) == 0 && ints[0] == -7, "compare_swap");
    }
    shmem_barrier_all();

    /* A context of its own: its operations complete at its quiet. */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0 && ctx != SHMEM_CTX_INVALID, "ctx_create");
    shmem_ctx_int_atomic_add(ctx, &ints[1], 3, 0);
    int v = me + 100;
    shmem_ctx_int_put(ctx, &ints[2], &v, 1, (me + 1) % n);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == 0) CHECK(ints[1] == 3 * n, "ctx atomic_add: %d", ints[1]);
    CHECK(ints[2] == (me + n - 1) % n + 100, "ctx put: %d", ints[2]);
    shmem_ctx_destroy(ctx);
    /* A destroyed or invalid context is refused (logged) and writes nothing. */
    shmem_ctx_int_atomic_add(ctx, &ints[3], 1, 0);
    shmem_ctx_int_p(SHMEM_CTX_INVALID, &ints[3], 1, 0);
    int on_stack = 0; /* automatic variables are not symmetric */
    shmem_int_atomic_add(&on_stack, 1, 0);
    shmem_barrier_all();
    CHECK(ints[3] == 0, "a refused atomic wrote");

    shmem_free(ints);
    shmem_free(dbl);
    shmem_free(bits);
    shmem_free(counter);
    if (failures == 0) printf("amo: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
