/* active_set.c: the deprecated active-set collectives of OpenSHMEM 1.4 (shmem_barrier, shmem_sync,
 * shmem_broadcast32/64, shmem_collect32/64, shmem_fcollect32/64, shmem_alltoall(s)32/64 and
 * shmem_TYPENAME_OP_to_all with pWrk and pSync), on the whole world and on the even PEs
 * (logPE_stride 1), with pSync in the symmetric heap. Guard elements around every destination
 * catch a routine that writes too much; values that do not fit narrower types catch one that
 * moves the wrong element size. */
#include <shmem.h>
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define N 4
#define GUARD 0x5A5A5A5A5A5A5A5ALL

/* One active set: PE_start, logPE_stride, PE_size; `idx` is this PE's index in it; `chk` a
 * pSync of its own for check_psync. */
struct set {
    int start, log, size, idx;
    long *chk;
};

/* Once every member has returned from the last call (and before any starts the next: the
 * first member's pSync[0] counts arrivals at the next call), pSync is back to SYNC_VALUE. */
static void check_psync(struct set s, const long *ps, const char *what) {
    shmem_sync(s.start, s.log, s.size, s.chk);
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        CHECK(ps[i] == SHMEM_SYNC_VALUE, "%s left pSync[%d] = %ld", what, i, ps[i]);
    shmem_sync(s.start, s.log, s.size, s.chk);
}

/* Sources and destinations, all symmetric (allocated by every PE before the sets form). */
static uint64_t *src64, *dst64;
static uint32_t *src32, *dst32;
static long *lsrc, *ldst;
/* A reduction of many elements (one more than a multiple of most set sizes). */
#define BIG 10001
static long *big_src, *big_dst;
static long pwrk_big[BIG / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static void set_buffers(int n) {
    size_t elems = (size_t)(8 * n + n * n + 16);
    src64 = shmem_malloc(elems * sizeof(uint64_t));
    dst64 = shmem_malloc(elems * sizeof(uint64_t));
    src32 = shmem_malloc(elems * sizeof(uint32_t));
    dst32 = shmem_malloc(elems * sizeof(uint32_t));
    lsrc = shmem_malloc(elems * sizeof(long));
    ldst = shmem_malloc(elems * sizeof(long));
    big_src = shmem_malloc(BIG * sizeof(long));
    big_dst = shmem_malloc((BIG + 1) * sizeof(long));
}

static void run(struct set s, long *ps) {
    int root = s.size > 1 ? 1 : 0;

    /* broadcast64: guard elements on both sides; the root's dest is untouched. */
    for (int i = 0; i < N; i++) src64[i] = 0x0123456789ABCDEFULL + (uint64_t)i + 16 * (uint64_t)s.idx;
    for (int i = 0; i < N + 2; i++) dst64[i] = GUARD;
    /* Every dest is ready before any member calls (the root writes into it at once). */
    shmem_sync(s.start, s.log, s.size, s.chk);
    shmem_broadcast64(dst64 + 1, src64, N, root, s.start, s.log, s.size, ps);
    CHECK(dst64[0] == (uint64_t)GUARD && dst64[N + 1] == (uint64_t)GUARD, "broadcast64 wrote a guard");
    for (int i = 0; i < N; i++) {
        uint64_t want = s.idx == root ? (uint64_t)GUARD : 0x0123456789ABCDEFULL + (uint64_t)i + 16 * (uint64_t)root;
        CHECK(dst64[1 + i] == want, "broadcast64[%d] = %llx, want %llx", i, (unsigned long long)dst64[1 + i], (unsigned long long)want);
    }
    check_psync(s, ps, "broadcast64");

    /* broadcast32 */
    for (int i = 0; i < N; i++) src32[i] = 0x89ABCDEFu + (uint32_t)i + 16u * (uint32_t)s.idx;
    for (int i = 0; i < N + 2; i++) dst32[i] = 0x5A5A5A5Au;
    shmem_sync(s.start, s.log, s.size, s.chk);
    shmem_broadcast32(dst32 + 1, src32, N, root, s.start, s.log, s.size, ps);
    CHECK(dst32[0] == 0x5A5A5A5Au && dst32[N + 1] == 0x5A5A5A5Au, "broadcast32 wrote a guard");
    for (int i = 0; i < N; i++) {
        uint32_t want = s.idx == root ? 0x5A5A5A5Au : 0x89ABCDEFu + (uint32_t)i + 16u * (uint32_t)root;
        CHECK(dst32[1 + i] == want, "broadcast32[%d] = %x, want %x", i, dst32[1 + i], want);
    }

    /* fcollect64 and fcollect32: member i's N elements land at i*N. */
    for (int i = 0; i < N; i++) src64[i] = ((uint64_t)s.idx << 40) | (uint64_t)i;
    for (int i = 0; i < N * s.size + 2; i++) dst64[i] = GUARD;
    shmem_fcollect64(dst64 + 1, src64, N, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst64[1 + p * N + i] == (((uint64_t)p << 40) | (uint64_t)i), "fcollect64[%d][%d]", p, i);
    CHECK(dst64[0] == (uint64_t)GUARD && dst64[N * s.size + 1] == (uint64_t)GUARD, "fcollect64 wrote a guard");
    for (int i = 0; i < N; i++) src32[i] = ((uint32_t)s.idx << 20) | (uint32_t)i;
    shmem_fcollect32(dst32, src32, N, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int i = 0; i < N; i++)
            CHECK(dst32[p * N + i] == (((uint32_t)p << 20) | (uint32_t)i), "fcollect32[%d][%d]", p, i);

    /* collect64 and collect32: member i contributes i+1 elements. */
    int total = s.size * (s.size + 1) / 2;
    for (int i = 0; i <= s.idx; i++) src64[i] = 0x0100000000000000ULL * (uint64_t)(s.idx + 1) + (uint64_t)i;
    for (int i = 0; i < total + 2; i++) dst64[i] = GUARD;
    shmem_collect64(dst64 + 1, src64, (size_t)s.idx + 1, s.start, s.log, s.size, ps);
    for (int p = 0, at = 0; p < s.size; at += p + 1, p++)
        for (int i = 0; i <= p; i++)
            CHECK(dst64[1 + at + i] == 0x0100000000000000ULL * (uint64_t)(p + 1) + (uint64_t)i, "collect64 from %d [%d]", p, i);
    CHECK(dst64[0] == (uint64_t)GUARD && dst64[total + 1] == (uint64_t)GUARD, "collect64 wrote a guard");
    check_psync(s, ps, "collect64");
    for (int i = 0; i <= s.idx; i++) src32[i] = 0x01000000u * (uint32_t)(s.idx + 1) + (uint32_t)i;
    shmem_collect32(dst32, src32, (size_t)s.idx + 1, s.start, s.log, s.size, ps);
    for (int p = 0, at = 0; p < s.size; at += p + 1, p++)
        for (int i = 0; i <= p; i++)
            CHECK(dst32[at + i] == 0x01000000u * (uint32_t)(p + 1) + (uint32_t)i, "collect32 from %d [%d]", p, i);

    /* alltoall64: block j of my source goes to member j; block i of my dest comes from i. */
    for (int j = 0; j < s.size; j++)
        for (int i = 0; i < 2; i++) src64[j * 2 + i] = ((uint64_t)s.idx << 48) | ((uint64_t)j << 8) | (uint64_t)i;
    shmem_alltoall64(dst64, src64, 2, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int i = 0; i < 2; i++)
            CHECK(dst64[p * 2 + i] == (((uint64_t)p << 48) | ((uint64_t)s.idx << 8) | (uint64_t)i), "alltoall64 from %d [%d]", p, i);
    for (int j = 0; j < s.size; j++)
        for (int i = 0; i < 2; i++) src32[j * 2 + i] = ((uint32_t)s.idx << 24) | ((uint32_t)j << 8) | (uint32_t)i;
    shmem_alltoall32(dst32, src32, 2, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int i = 0; i < 2; i++)
            CHECK(dst32[p * 2 + i] == (((uint32_t)p << 24) | ((uint32_t)s.idx << 8) | (uint32_t)i), "alltoall32 from %d [%d]", p, i);

    /* alltoalls64: source elements 3 apart, dest elements 2 apart; the gaps stay untouched. */
    for (int i = 0; i < 3 * 2 * s.size; i++) src64[i] = ((uint64_t)s.idx << 48) | (uint64_t)i;
    for (int i = 0; i < 2 * 2 * s.size; i++) dst64[i] = GUARD;
    shmem_alltoalls64(dst64, src64, 2, 3, 2, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int k = 0; k < 2; k++) {
            int d = (p * 2 + k) * 2, from = (s.idx * 2 + k) * 3;
            CHECK(dst64[d] == (((uint64_t)p << 48) | (uint64_t)from), "alltoalls64 from %d [%d]", p, k);
            CHECK(dst64[d + 1] == (uint64_t)GUARD, "alltoalls64 wrote a gap");
        }
    for (int i = 0; i < 3 * 2 * s.size; i++) src32[i] = ((uint32_t)s.idx << 24) | (uint32_t)i;
    shmem_alltoalls32(dst32, src32, 1, 3, 2, s.start, s.log, s.size, ps);
    for (int p = 0; p < s.size; p++)
        for (int k = 0; k < 2; k++)
            CHECK(dst32[p * 2 + k] == (((uint32_t)p << 24) | (uint32_t)((s.idx * 2 + k) * 3)), "alltoalls32 from %d [%d]", p, k);
    check_psync(s, ps, "alltoalls32");

    /* Reductions, one per type family; in place for long. */
    static long pwrk_l[N + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    for (int i = 0; i < N; i++) lsrc[i] = -0x0123456789ALL * (s.idx + 1) + i;
    shmem_long_sum_to_all(lsrc, lsrc, N, s.start, s.log, s.size, pwrk_l, ps);
    long tri = (long)s.size * (s.size + 1) / 2;
    for (int i = 0; i < N; i++)
        CHECK(lsrc[i] == -0x0123456789ALL * tri + (long)i * s.size, "long_sum_to_all in place [%d] = %ld", i, lsrc[i]);
    for (int i = 0; i < N; i++) lsrc[i] = (long)(s.idx * 7 % 5) - 3 + i;
    ldst[N] = GUARD;
    shmem_long_max_to_all(ldst, lsrc, N, s.start, s.log, s.size, pwrk_l, ps);
    long mx = -100;
    for (int p = 0; p < s.size; p++) mx = (p * 7 % 5) - 3 > mx ? (p * 7 % 5) - 3 : mx;
    for (int i = 0; i < N; i++) CHECK(ldst[i] == mx + i, "long_max_to_all [%d]", i);
    CHECK(ldst[N] == (long)GUARD, "long_max_to_all wrote past nreduce");
    check_psync(s, ps, "long_max_to_all");

    int *isrc = (int *)src32, *idst = (int *)dst32;
    static int pwrk_i[N];
    for (int i = 0; i < N; i++) isrc[i] = -(1 << 20) - s.idx;
    shmem_int_min_to_all(idst, isrc, N, s.start, s.log, s.size, pwrk_i, ps);
    for (int i = 0; i < N; i++) CHECK(idst[i] == -(1 << 20) - (s.size - 1), "int_min_to_all [%d]", i);

    short *ssrc = (short *)src32, *sdst = (short *)dst32;
    static short pwrk_s[N];
    for (int i = 0; i < N; i++) ssrc[i] = (short)(0x7F00 | (1 << (s.idx % 8)) | 0x8);
    sdst[N] = 0x1234;
    shmem_short_and_to_all(sdst, ssrc, N, s.start, s.log, s.size, pwrk_s, ps);
    short want_and = s.size == 1 ? (short)(0x7F00 | 1 | 0x8) : (short)(0x7F00 | 0x8);
    for (int i = 0; i < N; i++) CHECK(sdst[i] == want_and, "short_and_to_all [%d] = %x", i, sdst[i]);
    CHECK(sdst[N] == 0x1234, "short_and_to_all wrote past nreduce");

    long long *llsrc = (long long *)src64, *lldst = (long long *)dst64;
    static long long pwrk_ll[N];
    for (int i = 0; i < N; i++) llsrc[i] = 0x0100000000000000LL << (s.idx % 7);
    shmem_longlong_xor_to_all(lldst, llsrc, N, s.start, s.log, s.size, pwrk_ll, ps);
    long long x = 0;
    for (int p = 0; p < s.size; p++) x ^= 0x0100000000000000LL << (p % 7);
    for (int i = 0; i < N; i++) CHECK(lldst[i] == x, "longlong_xor_to_all [%d]", i);

    double *dsrc = (double *)src64, *ddst = (double *)dst64;
    static double pwrk_d[N];
    for (int i = 0; i < N; i++) dsrc[i] = 1.25 * (s.idx + 1) + i;
    shmem_double_sum_to_all(ddst, dsrc, N, s.start, s.log, s.size, pwrk_d, ps);
    for (int i = 0; i < N; i++) CHECK(ddst[i] == 1.25 * tri + (double)i * s.size, "double_sum_to_all [%d] = %g", i, ddst[i]);

    float *fsrc = (float *)src32, *fdst = (float *)dst32;
    static float pwrk_f[N];
    for (int i = 0; i < N; i++) fsrc[i] = -0.5f * (float)(s.idx + 1);
    shmem_float_min_to_all(fdst, fsrc, N, s.start, s.log, s.size, pwrk_f, ps);
    for (int i = 0; i < N; i++) CHECK(fdst[i] == -0.5f * (float)s.size, "float_min_to_all [%d] = %g", i, fdst[i]);

    long double *ldsrc = (long double *)src64, *lddst = (long double *)dst64;
    static long double pwrk_ld[N];
    for (int i = 0; i < 2; i++) ldsrc[i] = 1.5L;
    shmem_longdouble_prod_to_all(lddst, ldsrc, 2, s.start, s.log, s.size, pwrk_ld, ps);
    long double prod = 1;
    for (int p = 0; p < s.size; p++) prod *= 1.5L;
    for (int i = 0; i < 2; i++) CHECK(lddst[i] == prod, "longdouble_prod_to_all [%d] = %Lg", i, lddst[i]);

    double _Complex *csrc = (double _Complex *)src64, *cdst = (double _Complex *)dst64;
    static double _Complex pwrk_c[N];
    for (int i = 0; i < 2; i++) csrc[i] = (1.5 + s.idx) + 0.25 * I;
    shmem_complexd_sum_to_all(cdst, csrc, 2, s.start, s.log, s.size, pwrk_c, ps);
    for (int i = 0; i < 2; i++)
        CHECK(creal(cdst[i]) == 1.5 * s.size + (tri - s.size) && cimag(cdst[i]) == 0.25 * s.size, "complexd_sum_to_all [%d]", i);
    float _Complex *cfsrc = (float _Complex *)src64, *cfdst = (float _Complex *)dst64;
    static float _Complex pwrk_cf[N];
    for (int i = 0; i < 2; i++) cfsrc[i] = I;
    shmem_complexf_prod_to_all(cfdst, cfsrc, 2, s.start, s.log, s.size, pwrk_cf, ps);
    float _Complex ip = 1;
    for (int p = 0; p < s.size; p++) ip *= I;
    for (int i = 0; i < 2; i++) CHECK(cfdst[i] == ip, "complexf_prod_to_all [%d]", i);
    check_psync(s, ps, "complexf_prod_to_all");

    /* A long vector, not a multiple of the set's size: each member combines its own segment. */
    for (int i = 0; i < BIG; i++) big_src[i] = (long)i * 1000 + s.idx;
    big_dst[BIG] = GUARD;
    shmem_long_sum_to_all(big_dst, big_src, BIG, s.start, s.log, s.size, pwrk_big, ps);
    long idx_sum = (long)s.size * (s.size - 1) / 2;
    for (int i = 0; i < BIG; i++)
        CHECK(big_dst[i] == (long)i * 1000 * s.size + idx_sum, "long_sum_to_all of %d [%d] = %ld", BIG, i, big_dst[i]);
    CHECK(big_dst[BIG] == (long)GUARD, "long_sum_to_all of %d wrote past nreduce", BIG);
    shmem_long_max_to_all(big_src, big_src, BIG, s.start, s.log, s.size, pwrk_big, ps);
    for (int i = 0; i < BIG; i++)
        CHECK(big_src[i] == (long)i * 1000 + s.size - 1, "long_max_to_all of %d in place [%d] = %ld", BIG, i, big_src[i]);
    check_psync(s, ps, "long_max_to_all in place");

    /* The same pSync, back to back with no barrier between: each call restores it. */
    for (int k = 0; k < 50; k++) {
        src64[0] = (uint64_t)k * 0x0101010101ULL;
        shmem_broadcast64(dst64, src64, 1, 0, s.start, s.log, s.size, ps);
        if (s.idx != 0) CHECK(dst64[0] == (uint64_t)k * 0x0101010101ULL, "back-to-back broadcast %d", k);
        shmem_sync(s.start, s.log, s.size, ps);
        shmem_barrier(s.start, s.log, s.size, ps);
    }
    check_psync(s, ps, "back-to-back calls");

    /* The data routines back to back on the same pSync, new data every round, no barrier
     * between: a routine returns once no member reads this PE's source any more (so the next
     * round may change it), and a fast member's arrivals at the next call never stand in for a
     * slow member's at this one. */
    long isum = (long)s.size * (s.size - 1) / 2;
    for (int k = 0; k < 60; k++) {
        for (int i = 0; i < N; i++) src64[i] = ((uint64_t)k << 32) | ((uint64_t)s.idx << 8) | (uint64_t)i;
        shmem_fcollect64(dst64, src64, N, s.start, s.log, s.size, ps);
        for (int p = 0; p < s.size; p++)
            for (int i = 0; i < N; i++)
                CHECK(dst64[p * N + i] == (((uint64_t)k << 32) | ((uint64_t)p << 8) | (uint64_t)i), "round %d: fcollect64 from %d [%d]", k, p, i);
        for (int i = 0; i < N; i++) lsrc[i] = (long)k * 1000 + s.idx + i;
        shmem_long_sum_to_all(ldst, lsrc, N, s.start, s.log, s.size, pwrk_l, ps);
        for (int i = 0; i < N; i++)
            CHECK(ldst[i] == (long)k * 1000 * s.size + isum + (long)i * s.size, "round %d: long_sum_to_all [%d] = %ld", k, i, ldst[i]);
        if (k % 3 == 0) shmem_barrier(s.start, s.log, s.size, ps);
        for (int j = 0; j < s.size; j++)
            for (int i = 0; i < 2; i++) src64[j * 2 + i] = ((uint64_t)k << 32) | ((uint64_t)s.idx << 16) | ((uint64_t)j << 8) | (uint64_t)i;
        shmem_alltoall64(dst64, src64, 2, s.start, s.log, s.size, ps);
        for (int p = 0; p < s.size; p++)
            for (int i = 0; i < 2; i++)
                CHECK(dst64[p * 2 + i] == (((uint64_t)k << 32) | ((uint64_t)p << 16) | ((uint64_t)s.idx << 8) | (uint64_t)i), "round %d: alltoall64 from %d [%d]", k, p, i);
        for (int i = 0; i <= s.idx; i++) src32[i] = (uint32_t)k << 16 | (uint32_t)(s.idx << 8) | (uint32_t)i;
        shmem_collect32(dst32, src32, (size_t)s.idx + 1, s.start, s.log, s.size, ps);
        for (int p = 0, at = 0; p < s.size; at += p + 1, p++)
            for (int i = 0; i <= p; i++)
                CHECK(dst32[at + i] == ((uint32_t)k << 16 | (uint32_t)(p << 8) | (uint32_t)i), "round %d: collect32 from %d [%d]", k, p, i);
    }
    check_psync(s, ps, "back-to-back data routines");
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *ps = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
    long *ps2 = shmem_malloc(SHMEM_SYNC_SIZE * sizeof(long));
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) ps[i] = ps2[i] = SHMEM_SYNC_VALUE;
    CHECK(SHMEM_REDUCE_SYNC_SIZE >= 1 && _SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE && _SHMEM_SYNC_VALUE == 0, "constants");
    /* The data buffers of run(): symmetric, sized for the largest set. */
    set_buffers(n);
    shmem_barrier_all();

    long *chk = shmem_calloc(SHMEM_SYNC_SIZE, sizeof(long));
    long *chk2 = shmem_calloc(SHMEM_SYNC_SIZE, sizeof(long));
    struct set world = {0, 0, n, me, chk};
    run(world, ps);
    /* The even PEs (stride 2^1) on their own pSync; the odd PEs wait at the world barrier. */
    if (me % 2 == 0) {
        struct set evens = {0, 1, (n + 1) / 2, me / 2, chk2};
        run(evens, ps2);
    }
    shmem_barrier(0, 0, n, ps);
    /* Bad sets are refused on every PE alike (each logs one line): nothing moves, nothing waits. */
    dst64[0] = GUARD;
    lsrc[0] = 5;
    shmem_broadcast64(dst64, src64, 1, n, 0, 0, n, ps);      /* root outside the set */
    shmem_long_sum_to_all(lsrc, lsrc, 1, 0, 0, 0, NULL, ps);  /* an empty set */
    shmem_fcollect64(dst64, src64, 1, 0, 40, n, ps);          /* a stride of 2^40 */
    shmem_barrier(0, 0, n + 1, ps);                           /* beyond the last PE */
    shmem_long_sum_to_all(lsrc, lsrc, -1, 0, 0, n, NULL, ps); /* a negative count */
    long private_dest[1] = {6};                               /* on the stack: not symmetric */
    shmem_long_sum_to_all(private_dest, lsrc, 1, 0, 0, n, NULL, ps);
    CHECK(dst64[0] == (uint64_t)GUARD && lsrc[0] == 5 && private_dest[0] == 6, "a refused call moved data");
    check_psync(world, ps, "refused calls");
    /* A one-PE set: every routine is a local copy. */
    struct set alone = {me, 0, 1, 0, chk2};
    run(alone, ps2);
    shmem_barrier_all();
    if (failures == 0) printf("active_set: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
