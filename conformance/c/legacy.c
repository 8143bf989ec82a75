/* legacy.c: the deprecated routines programs and benchmarks still call (start_pes, _my_pe,
 * shmalloc, the pre-1.4 atomic names, shmem_wait, short waits). Exits non-zero on failure. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

int main(void) {
    start_pes(0);
    int me = _my_pe(), n = _num_pes();
    CHECK(me == shmem_my_pe() && n == shmem_n_pes(), "_my_pe/_num_pes");
    int *ctr = shmalloc(4 * sizeof(int));
    long *flag = shmemalign(64, sizeof(long));
    short *sflag = shmalloc(sizeof(short));
    CHECK(ctr && flag && ((uintptr_t)flag % 64) == 0 && sflag, "shmalloc/shmemalign");
    ctr[0] = ctr[1] = ctr[2] = ctr[3] = 0;
    *flag = 0;
    *sflag = 0;
    shmem_barrier_all();

    int old = shmem_int_fadd(&ctr[0], 2, 0);
    CHECK(old % 2 == 0 && old < 2 * n, "fadd fetched %d", old);
    CHECK(shmem_int_finc(&ctr[1], 0) < n, "finc");
    shmem_int_add(&ctr[2], 3, 0);
    shmem_int_inc(&ctr[2], 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(ctr[0] == 2 * n && ctr[1] == n && ctr[2] == 4 * n, "sums %d %d %d", ctr[0], ctr[1], ctr[2]);
        CHECK(shmem_int_cswap(&ctr[3], 0, 9, 0) == 0 && shmem_int_fetch(&ctr[3], 0) == 9, "cswap/fetch");
        shmem_int_set(&ctr[3], 11, 0);
        CHECK(shmem_int_swap(&ctr[3], 12, 0) == 11, "set/swap");
        CHECK(shmem_double_swap((double *)flag, 1.0, 0) == 0.0, "double swap");
        shmem_long_set(flag, 0, 0);
    }
    shmem_barrier_all();

    /* The right neighbour raises this PE's flags; shmem_wait waits until they change. */
    shmem_long_p(flag, 5, (me + 1) % n);
    shmem_short_p(sflag, 7, (me + 1) % n);
    shmem_wait(flag, 0);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 5);
    shmem_wait_until(flag, SHMEM_CMP_GE, 5);
    shmem_short_wait_until(sflag, SHMEM_CMP_EQ, 7);
    CHECK(shmem_short_test(sflag, SHMEM_CMP_EQ, 7) == 1 && shmem_long_test(flag, SHMEM_CMP_EQ, 5) == 1, "short/long test");
    shmem_barrier_all();

    ctr = shrealloc(ctr, 64 * sizeof(int));
    CHECK(ctr != NULL, "shrealloc");
    shfree(sflag);
    shfree(flag);
    shfree(ctr);
    if (failures == 0) printf("legacy: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
