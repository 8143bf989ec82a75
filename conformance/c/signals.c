/* signals.c: a job under a 1 kHz interval timer. SIGALRM (ITIMER_REAL) and SIGPROF
 * (ITIMER_PROF) handlers are installed without SA_RESTART, so every system call a blocking
 * routine makes is interrupted again and again (EINTR); each routine must resume and complete.
 *
 * Runs barriers, a ring of point-to-point waits, locks, collective allocations, team splits,
 * collectives with large blocks, `signals ROUNDS` times (default 10) and on until every PE has
 * taken 300 SIGALRMs, and finalize, then prints "PE <n> ok" and how many signals arrived. */
#define _DEFAULT_SOURCE
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "check.h"

static volatile sig_atomic_t alarms, profs;

static void on_alarm(int sig) { (void)sig; alarms++; }
static void on_prof(int sig) { (void)sig; profs++; }

static long ring;
static long lock;

static void workload(int me, int n, int next, long base) {
    for (int i = 0; i < 200; i++) shmem_barrier_all();

    /* A token passed around the ring 50 times: each PE waits for its predecessor. */
    for (long round = base + 1; round <= base + 50; round++) {
        if (me == 0) {
            shmem_long_atomic_set(&ring, round, next);
            shmem_long_wait_until(&ring, SHMEM_CMP_EQ, round);
        } else {
            shmem_long_wait_until(&ring, SHMEM_CMP_EQ, round);
            shmem_long_atomic_set(&ring, round, next);
        }
    }
    CHECK(ring == base + 50, "the ring token is %ld", ring);

    long *counter = shmem_calloc(1, sizeof(long));
    for (int i = 0; i < 20; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(counter, 0);
        shmem_long_p(counter, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(*counter == 20L * n, "locked increments: %ld", *counter);

    for (int i = 0; i < 20; i++) {
        void *p = shmem_malloc(4096 * (size_t)(i + 1));
        CHECK(p != NULL, "shmem_malloc in round %d", i);
        shmem_free(p);
    }

    for (int i = 0; i < 10; i++) {
        shmem_team_t half;
        int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &half);
        CHECK(rc == 0, "team split %d: %d", i, rc);
        if (half != SHMEM_TEAM_INVALID) shmem_team_destroy(half);
    }

    size_t block = 16384 / sizeof(long);
    long *src = shmem_malloc(block * n * sizeof(long));
    long *dst = shmem_malloc(block * n * sizeof(long));
    for (int rep = 0; rep < 10; rep++) {
        for (size_t i = 0; i < block * n; i++) src[i] = me * 1000003L + (long)i + rep;
        shmem_barrier_all();
        CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, block) == 0, "alltoall");
        for (int pe = 0; pe < n; pe++)
            CHECK(dst[pe * block + 5] == pe * 1000003L + (long)(me * block + 5) + rep,
                  "alltoall from PE %d", pe);
        CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, block) == 0, "fcollect");
        CHECK(dst[(size_t)next * block] == next * 1000003L + rep, "fcollect from PE %d", next);
        CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, block, 0) == 0, "broadcast");
        CHECK(dst[7] == 7 + rep, "broadcast");
        CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, block) == 0, "sum_reduce");
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_free(counter);
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: interrupted calls fail with EINTR */
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &every_ms, NULL);
    setitimer(ITIMER_PROF, &every_ms, NULL);

    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* At least `rounds` rounds, and on until every PE has taken 300 SIGALRMs (so the test
     * does not depend on the machine's speed). */
    static int enough, all_enough;
    for (int r = 0;; r++) {
        workload(me, n, (me + 1) % n, 50L * r);
        enough = alarms >= 300;
        shmem_int_min_reduce(SHMEM_TEAM_WORLD, &all_enough, &enough, 1);
        if (r + 1 >= rounds && all_enough) break;
    }
    shmem_finalize();

    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
    if (!failures) printf("PE %d ok: %d SIGALRM, %d SIGPROF\n", me, (int)alarms, (int)profs);
    return failures != 0;
}
