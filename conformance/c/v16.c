/* v16.c: OpenSHMEM 1.6 additions through the C API: interleaved block transfers,
 * pe_quiet, sessions, query_initialized, team_ptr, signal_add/set. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

int main(void) {
    int initialized = -1;
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0, "initialized before init");
    shmem_init();
    shmem_query_initialized(&initialized);
    CHECK(initialized == 1, "not initialized after init");
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;

    /* ibput: 3 blocks of 2 elements, source stride 2 (contiguous), destination stride 5. */
    long *d = shmem_calloc(16, sizeof(long));
    long src[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    shmem_long_ibput(d, src, 5, 2, 2, 3, right);
    shmem_quiet();
    shmem_barrier_all();
    long want[16] = {1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 5, 6, 0, 0, 0, 0};
    for (int i = 0; i < 16; i++) CHECK(d[i] == want[i], "ibput element %d is %ld", i, d[i]);
    shmem_long_ibget(back, d, 2, 5, 2, 3, me);
    for (int i = 0; i < 6; i++) CHECK(back[i] == src[i], "ibget element %d is %ld", i, back[i]);
    shmem_ibget64(back, d, 2, 5, 1, 2, me);
    CHECK(back[0] == 1 && back[2] == 3, "ibget64");
    shmem_barrier_all(); /* everyone has checked before the next puts land */

    /* pe_quiet and a session around non-blocking puts. */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_ctx_session_start(ctx, SHMEM_CTX_SESSION_BATCH, NULL, 0);
    shmem_ctx_long_put_nbi(ctx, &d[15], &src[5], 1, right);
    shmem_ctx_session_stop(ctx);
    int targets[1] = {right};
    shmem_ctx_pe_quiet(ctx, targets, 1);
    shmem_pe_quiet(targets, 1);
    shmem_barrier_all();
    CHECK(d[15] == 6, "put_nbi in a session");
    shmem_ctx_destroy(ctx);

    /* team_ptr numbers PEs in the team. */
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, d, me) == (void *)d, "team_ptr of this PE");
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, d, n) == NULL, "team_ptr beyond the team");

    /* signal_set and signal_add. */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    shmem_barrier_all();
    shmem_signal_add(sig, 1, 0);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_signal_fetch(sig) == (uint64_t)n, "signal_add sum");
        shmem_signal_set(sig, 42, 0);
        CHECK(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 42) == 42, "signal_set");
    }
    shmem_barrier_all();
    /* Prefix sums over the world team. */
    int *x = shmem_malloc(2 * sizeof(int));
    x[0] = me + 1;
    x[1] = 10;
    shmem_barrier_all();
    CHECK(shmem_int_sum_inscan(SHMEM_TEAM_WORLD, x, x, 2) == 0, "sum_inscan");
    CHECK(x[0] == (me + 1) * (me + 2) / 2 && x[1] == 10 * (me + 1), "sum_inscan values %d %d", x[0], x[1]);
    double *y = shmem_malloc(sizeof(double)), *z = shmem_malloc(sizeof(double));
    *y = 1.5;
    shmem_barrier_all();
    CHECK(shmem_double_sum_exscan(SHMEM_TEAM_WORLD, z, y, 1) == 0 && *z == 1.5 * me, "sum_exscan %g", *z);
    shmem_free(z);
    shmem_free(y);
    shmem_free(x);
    shmem_free(sig);
    shmem_free(d);
    /* 1.6: a zero stride is valid for a team of one PE (the starting PE). */
    shmem_team_t single = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, 0, 1, NULL, 0, &single) == 0, "split with stride 0, size 1");
    if (me == n - 1) {
        CHECK(single != SHMEM_TEAM_INVALID && shmem_team_my_pe(single) == 0 && shmem_team_n_pes(single) == 1,
              "the one-PE team");
        shmem_team_destroy(single);
    } else {
        CHECK(single == SHMEM_TEAM_INVALID, "PE %d is not in the one-PE team", me);
    }
    /* 1.6: a negative stride makes a team in reverse order: the world backwards. */
    shmem_team_t rev = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) == 0, "split with stride -1");
    CHECK(rev != SHMEM_TEAM_INVALID && shmem_team_my_pe(rev) == n - 1 - me && shmem_team_n_pes(rev) == n, "reversed rank");
    CHECK(shmem_team_translate_pe(rev, 0, SHMEM_TEAM_WORLD) == n - 1, "rank 0 of the reversed world");
    long *b = shmem_malloc(2 * sizeof(long));
    b[0] = me == n - 1 ? 0x0123456789ABCDEFL : -1;
    b[1] = -me;
    shmem_team_sync(rev);
    CHECK(shmem_long_broadcast(rev, b, b, 1, 0) == 0 && b[0] == 0x0123456789ABCDEFL && b[1] == -me, "broadcast from reversed rank 0");
    CHECK(shmem_long_sum_inscan(rev, &b[1], &b[1], 1) == 0, "inscan on the reversed world");
    /* Inclusive prefix over ranks 0..r, which are world PEs n-1 down to me. */
    long prefix = 0;
    for (int p = n - 1; p >= me; p--) prefix -= p;
    CHECK(b[1] == prefix, "inscan on the reversed world: %ld, want %ld", b[1], prefix);
    shmem_free(b);
    shmem_team_t bad = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &bad) != 0 && bad == SHMEM_TEAM_INVALID, "a triplet below PE 0 is refused");
    shmem_team_destroy(rev);
    CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 6, "the header says OpenSHMEM 1.6");
    if (failures == 0) printf("v16: PE %d of %d ok\n", me, n);
    shmem_finalize();
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0, "initialized after finalize");
    return failures ? 1 : 0;
}
