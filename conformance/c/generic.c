/* generic.c: the C11 type-generic routines (shmem_put, shmem_atomic_add, shmem_sum_reduce, …)
 * pick the typed routine from the pointer type, with and without a leading context. Values do
 * not fit a narrower type, so a wrong pick shows: 64-bit patterns, non-integral floats,
 * negative values for signed types; the elements beside each target must stay untouched. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

#define BIG 0x0123456789ABCDEFLL

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long long *ll = shmem_calloc(8, sizeof(long long));
    double *d = shmem_calloc(8, sizeof(double));
    short *s = shmem_calloc(8, sizeof(short));
    unsigned long *ul = shmem_calloc(4, sizeof(unsigned long));
    float *f = shmem_calloc(4, sizeof(float));
    long double *ld = shmem_calloc(2, sizeof(long double));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    CHECK(ll && d && s && ul && f && ld && sig, "allocation");
    shmem_barrier_all();

    /* RMA: put, p, put with a context, put_nbi; const sources dispatch too. */
    const long long src[2] = {BIG + me, -BIG - me};
    shmem_put(&ll[1], src, 2, right);
    shmem_p(&d[1], 0.375 + me, right);
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    shmem_p(ctx, &s[1], (short)(-300 - me), right);
    float fv = 1.25f * (float)(me + 1);
    shmem_put_nbi(ctx, &f[1], &fv, 1, right);
    shmem_p(&ld[1], (long double)0.1 * (me + 1), right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(ll[0] == 0 && ll[1] == BIG + left && ll[2] == -BIG - left && ll[3] == 0, "put of long long: %llx %llx", ll[1], ll[2]);
    CHECK(d[0] == 0 && d[1] == 0.375 + left && d[2] == 0, "p of double: %g", d[1]);
    CHECK(s[0] == 0 && s[1] == -300 - left && s[2] == 0, "ctx p of short: %d", s[1]);
    CHECK(f[0] == 0 && f[1] == 1.25f * (float)(left + 1) && f[2] == 0, "ctx put_nbi of float: %g", (double)f[1]);
    CHECK(ld[1] == (long double)0.1 * (left + 1), "p of long double");
    /* get and g, with and without a context. */
    long long back[2] = {0, 0};
    shmem_get(back, &ll[1], 2, right);
    CHECK(back[0] == BIG + me && back[1] == -BIG - me, "get of long long");
    const double *cd = d;
    CHECK(shmem_g(&cd[1], right) == 0.375 + me, "g of const double");
    CHECK(shmem_g(ctx, &s[1], right) == -300 - me, "ctx g of short");
    /* iget: every second element. */
    long long strided[2] = {0, 0};
    shmem_iget(strided, &ll[1], 1, 1, 2, me);
    CHECK(strided[0] == BIG + left && strided[1] == -BIG - left, "iget");
    shmem_barrier_all();

    /* AMO on unsigned long and long long; a fetching non-blocking one. */
    shmem_atomic_add(&ul[1], 0x100000001UL, 0);
    unsigned long old = shmem_atomic_fetch_inc(ctx, &ul[2], 0);
    CHECK(old < (unsigned long)n, "fetch_inc fetched %lu", old);
    long long fetched = -1;
    shmem_atomic_fetch_add_nbi(&fetched, &ll[4], BIG, 0);
    shmem_quiet();
    CHECK(fetched >= 0 && fetched % BIG == 0, "fetch_add_nbi fetched %llx", fetched);
    shmem_atomic_or(&ul[3], 1UL << me, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(ul[0] == 0 && ul[1] == 0x100000001UL * (unsigned long)n, "add of unsigned long: %lx", ul[1]);
        CHECK(ul[2] == (unsigned long)n, "fetch_inc count");
        CHECK(ll[4] == BIG * n && ll[5] == 0, "fetch_add_nbi of long long: %llx", ll[4]);
        CHECK(ul[3] == (n == 64 ? ~0UL : (1UL << n) - 1), "or");
        CHECK(shmem_atomic_fetch(&d[1], 0) == d[1], "atomic_fetch of double");
        CHECK(shmem_atomic_compare_swap(&ll[6], 0LL, -BIG, 0) == 0 && ll[6] == -BIG, "compare_swap");
        CHECK(shmem_atomic_swap(&d[6], 2.75, 0) == 0.0 && d[6] == 2.75, "swap of double");
    }
    shmem_barrier_all();

    /* Signals and point-to-point: put_signal to the right, wait on the signal. */
    long long payload = BIG - me;
    shmem_put_signal(&ll[7], &payload, 1, sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    CHECK(ll[7] == BIG - left, "put_signal payload %llx", ll[7]);
    shmem_p(&s[4], (short)-5, right);
    shmem_wait_until(&s[4], SHMEM_CMP_EQ, (short)-5);
    CHECK(shmem_test(&s[4], SHMEM_CMP_EQ, (short)-5) == 1, "test of short");
    shmem_barrier_all();

    /* Team collectives on symmetric buffers: the team comes first and the destination picks
     * the type. */
    long long *contrib = shmem_malloc(2 * sizeof(long long));
    long long *sums = shmem_calloc(3, sizeof(long long));
    double *dred = shmem_calloc(2, sizeof(double));
    short *bc = shmem_malloc(5 * sizeof(short));
    CHECK(contrib && sums && dred && bc, "collective buffers");
    contrib[0] = BIG;
    contrib[1] = -1 - me;
    dred[0] = 0.5 + me;
    bc[0] = (short)-1234;
    bc[1] = (short)4321;
    bc[2] = bc[3] = bc[4] = 7;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, sums, contrib, 2) == 0, "sum_reduce");
    CHECK(sums[0] == BIG * n && sums[1] == -(long long)n - (long long)n * (n - 1) / 2 && sums[2] == 0,
          "sum_reduce of long long: %llx %lld", sums[0], sums[1]);
    CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, &dred[1], &dred[0], 1) == 0 && dred[1] == 0.5 + (n - 1),
          "max_reduce of double: %g", dred[1]);
    CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, &bc[2], &bc[0], 2, 0) == 0, "broadcast");
    CHECK(bc[2] == -1234 && bc[3] == 4321 && bc[4] == 7, "broadcast of short");
    CHECK(shmem_sum_inscan(SHMEM_TEAM_WORLD, &sums[2], &contrib[0], 1) == 0 && sums[2] == BIG * (me + 1),
          "sum_inscan of long long: %llx", sums[2]);
    shmem_barrier_all();

    printf("generic: PE %d of %d %s\n", me, n, failures ? "FAILED" : "ok");
    shmem_finalize();
    return failures != 0;
}
