/* coll.c: teams, team-based collectives and reductions through the OpenSHMEM C API.
 * Exits non-zero on the first failed check. */
#include <shmem.h>
#include <complex.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world team");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "an invalid team has no PE");

    /* The even PEs, as a team of their own. */
    long *v = shmem_malloc(2 * sizeof(long)); /* collective over the world: before the split */
    shmem_team_t evens;
    shmem_team_config_t cfg = {2};
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &evens) == 0, "split_strided");
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID && shmem_team_my_pe(evens) == me / 2, "even team rank");
        CHECK(shmem_team_translate_pe(evens, 1, SHMEM_TEAM_WORLD) == (n > 2 ? 2 : -1), "translate");
        shmem_team_config_t got = {0};
        CHECK(shmem_team_get_config(evens, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 2, "get_config");
        shmem_ctx_t ctx;
        shmem_team_t back;
        CHECK(shmem_team_create_ctx(evens, 0, &ctx) == 0, "team_create_ctx");
        CHECK(shmem_ctx_get_team(ctx, &back) == 0 && shmem_team_n_pes(back) == (n + 1) / 2, "ctx_get_team");
        shmem_ctx_destroy(ctx);
        CHECK(shmem_team_sync(evens) == 0, "team_sync");
        /* A reduction on the sub-team. */
        v[0] = me;
        v[1] = -me;
        CHECK(shmem_long_max_reduce(evens, v, v, 2) == 0, "max_reduce");
        int last = (n - 1) / 2 * 2;
        CHECK(v[0] == last && v[1] == 0, "max_reduce: %ld %ld", v[0], v[1]);
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID, "an odd PE got the even team");
    }
    shmem_barrier_all();
    shmem_free(v);

    /* Collectives over the world team. */
    int *src = shmem_malloc(4 * (size_t)n * sizeof(int));
    int *dst = shmem_malloc(4 * (size_t)n * sizeof(int));
    for (int i = 0; i < 4 * n; i++) src[i] = me * 1000 + i;
    memset(dst, 0, 4 * (size_t)n * sizeof(int));
    shmem_barrier_all();
    CHECK(shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 3, n - 1) == 0, "broadcast");
    CHECK(dst[0] == (n - 1) * 1000 && dst[2] == (n - 1) * 1000 + 2, "broadcast data %d", dst[0]);
    CHECK(shmem_int_fcollect(SHMEM_TEAM_WORLD, dst, src, 2) == 0, "fcollect");
    for (int p = 0; p < n; p++) CHECK(dst[2 * p + 1] == p * 1000 + 1, "fcollect block %d", p);
    CHECK(shmem_int_collect(SHMEM_TEAM_WORLD, dst, src, (size_t)me + 1) == 0, "collect");
    CHECK(dst[0] == 0 && (n < 2 || (dst[1] == 1000 && dst[2] == 1001)), "collect data");
    CHECK(shmem_int_alltoall(SHMEM_TEAM_WORLD, dst, src, 2) == 0, "alltoall");
    for (int p = 0; p < n; p++) CHECK(dst[2 * p] == p * 1000 + 2 * me, "alltoall from %d", p);
    CHECK(shmem_int_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 1, 1) == 0, "alltoalls");
    for (int p = 0; p < n; p++) CHECK(dst[2 * p] == p * 1000 + me, "alltoalls from %d", p);
    shmem_barrier_all(); /* every dst is ready for the broadcast (the checks above read it) */
    CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, 8, 0) == 0 && dst[1] == 1, "broadcastmem");

    /* Reductions over the world team. */
    int *isum = shmem_malloc(sizeof(int));
    uint64_t *bits = shmem_malloc(sizeof(uint64_t));
    double *prod = shmem_malloc(sizeof(double));
    *isum = me + 1;
    *bits = (uint64_t)1 << (me % 64);
    *prod = 2.0;
    shmem_barrier_all();
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_WORLD, isum, isum, 1) == 0 && *isum == n * (n + 1) / 2, "sum_reduce %d", *isum);
    CHECK(shmem_uint64_or_reduce(SHMEM_TEAM_WORLD, bits, bits, 1) == 0, "or_reduce");
    CHECK(shmem_double_prod_reduce(SHMEM_TEAM_WORLD, prod, prod, 1) == 0 && *prod == (double)(1ull << n), "prod_reduce %g", *prod);
    /* long double and complex reductions. */
    long double *ld = shmem_malloc(sizeof(long double));
    double _Complex *z = shmem_malloc(sizeof(double _Complex));
    *ld = 0.5L * (me + 1);
    *z = (double)me + 1.0 * I;
    shmem_barrier_all();
    CHECK(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, ld, ld, 1) == 0 && *ld == 0.5L * n, "longdouble max");
    CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, z, z, 1) == 0, "complexd sum");
    CHECK(creal(*z) == n * (n - 1) / 2.0 && cimag(*z) == (double)n, "complexd sum value");
    shmem_free(z);
    shmem_free(ld);

    /* Bad input: an invalid team is refused. */
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, isum, isum, 1) != 0, "a reduction on no team");

    shmem_free(prod);
    shmem_free(bits);
    shmem_free(isum);
    shmem_free(dst);
    shmem_free(src);
    if (failures == 0) printf("coll: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
