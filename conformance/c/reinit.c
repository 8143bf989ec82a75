/* reinit.c: OpenSHMEM 1.6's repeated initialization. Nested shmem_init calls each need their
 * shmem_finalize, and the library stays usable until the last one; after it, a new shmem_init
 * starts the library again, with a working heap and barriers. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

static void ring_put(int round) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *x = shmem_calloc(2, sizeof(long));
    CHECK(x != NULL, "round %d: calloc", round);
    if (!x) return;
    shmem_long_p(&x[0], 1000L * round + me, (me + 1) % n);
    shmem_barrier_all();
    CHECK(x[0] == 1000L * round + (me + n - 1) % n && x[1] == 0, "round %d: put of %ld", round, x[0]);
    shmem_barrier_all();
    shmem_free(x);
}

int main(void) {
    int initialized = -1;
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0, "initialized before shmem_init: %d", initialized);

    shmem_init();
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "nested init_thread");
    int level = -1;
    shmem_query_thread(&level);
    CHECK(provided == level, "a nested init reports the level the library has: %d, not %d", provided, level);
    ring_put(1);
    shmem_finalize(); /* matches the nested init: still initialized */
    shmem_query_initialized(&initialized);
    CHECK(initialized == 1, "after the nested finalize: %d", initialized);
    ring_put(2);
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* A context and a team made before the last finalize are invalid after it. */
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_team_t all = SHMEM_TEAM_INVALID;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &all) == 0, "split");
    shmem_finalize(); /* the last one */
    shmem_query_initialized(&initialized);
    CHECK(initialized == 0, "after the last finalize: %d", initialized);

    shmem_init(); /* again */
    shmem_query_initialized(&initialized);
    CHECK(initialized == 1, "re-initialized: %d", initialized);
    CHECK(shmem_my_pe() == me && shmem_n_pes() == n, "the same PE after re-initialization");
    ring_put(3);
    /* The old handles name nothing in the new instance: refused (logged), not used. */
    CHECK(shmem_team_n_pes(all) == -1, "a team from before the re-initialization");
    shmem_team_t got = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(ctx, &got) != 0 && got == SHMEM_TEAM_INVALID, "a context from before");
    printf("reinit: PE %d of %d %s\n", me, n, failures ? "FAILED" : "ok");
    shmem_finalize();
    return failures != 0;
}
