/* The measurements of shmem-bench, through any OpenSHMEM 1.4+ library (used with Open MPI's
 * OSHMEM: oshcc -O2 oshmem_bench.c; oshrun -np 2 ./a.out p2p).
 *
 * Modes: "p2p" (put/get latency and bandwidth, then the barrier), "barrier" (the barrier only),
 * "amo" (remote atomics and put-with-signal, PE 0 -> PE 1, 2 PEs) and "coll" (collectives on
 * all PEs).
 *
 * Each figure is the median of 9 batch means after one warm-up batch, as in shmem-bench.
 * Results are printed as "RESULT <key> <seconds per op>" lines by PE 0, before shmem_finalize
 * (some OSHMEM builds crash inside it). "NOTE <text>" lines say where the library lacked an
 * OpenSHMEM 1.5 routine and what was measured instead.
 *
 * OpenSHMEM 1.5 (SHMEM_MINOR_VERSION >= 5) has teams, put-with-signal and the int64 atomics,
 * and those are used when the header announces 1.5. Open MPI 4.1's OSHMEM implements 1.4 only:
 * no teams (so the collectives are the 1.4 active-set forms over all PEs, with pSync and pWrk
 * arrays: shmem_broadcast64, shmem_longlong_sum_to_all, shmem_fcollect64, shmem_alltoall64),
 * no shmem_putmem_signal (emulated as putmem + fence + atomic set of the signal word), and
 * none of the int64 standard atomics (the long long ones, also 64-bit, are used). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 9

#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)
#define HAVE_SHMEM_1_5 1
#else
#define HAVE_SHMEM_1_5 0
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum op { PUT_LAT, GET_LAT, PUT_BW, GET_BW, BARRIER };

static double run(enum op op, char *sym, char *local, size_t size, int reps) {
    double t[BATCHES];
    for (int b = -1; b < BATCHES; b++) {
        double start = now();
        for (int i = 0; i < reps; i++) {
            switch (op) {
            case PUT_LAT: shmem_putmem(sym, local, size, 1); shmem_quiet(); break;
            case GET_LAT: shmem_getmem(local, sym, size, 1); break;
            case PUT_BW: shmem_putmem(sym, local, size, 1); break;
            case GET_BW: shmem_getmem(local, sym, size, 1); break;
            case BARRIER: shmem_barrier_all(); break;
            }
        }
        if (op == PUT_BW) shmem_quiet();
        if (b >= 0) t[b] = (now() - start) / reps;
    }
    return median(t, BATCHES);
}

/* ---- Atomics, put-with-signal and collectives ---------------------------------------------
 * Each operation is a function of the running call number, timed by time_ops like run(). */

#define COLL_BYTES (64 << 10)
#define REDUCE_MAX 8192

static int npes;
static uint64_t calls; /* every timed call, across batches: alternates pSync, feeds cswap */
static int64_t *amo_word, *cswap_word;
static uint64_t *sig_word;
static char *sig_data, *coll_src, *coll_dst;
static int64_t *red_src, *red_dst;
static char local8[8];

#if !HAVE_SHMEM_1_5
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define PSYNC_SIZE                                                                             \
    MAX2(MAX2(SHMEM_BCAST_SYNC_SIZE, SHMEM_REDUCE_SYNC_SIZE),                                  \
         MAX2(SHMEM_COLLECT_SYNC_SIZE, SHMEM_ALLTOALL_SYNC_SIZE))
#define PWRK_SIZE MAX2(REDUCE_MAX / 2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE)
/* Two pSync arrays, alternated between consecutive calls, so a PE that leaves a collective
 * early never enters the next one on an array a slower PE is still using. Open MPI's OSHMEM
 * runs world-group collectives through MPI (scoll "mpi"), which does not read them. */
static long psync[2][PSYNC_SIZE];
static long long pwrk[2][PWRK_SIZE];
#define PSYNC psync[calls & 1]
#endif

static void op_fetch_add(void) {
#if HAVE_SHMEM_1_5
    shmem_int64_atomic_fetch_add(amo_word, 1, 1);
#else
    shmem_longlong_atomic_fetch_add((long long *)amo_word, 1, 1);
#endif
}

static void op_cswap(void) {
    /* The word starts at zero and only this loop updates it, so every swap succeeds. */
#if HAVE_SHMEM_1_5
    shmem_int64_atomic_compare_swap(cswap_word, (int64_t)calls, (int64_t)calls + 1, 1);
#else
    shmem_longlong_atomic_compare_swap((long long *)cswap_word, (long long)calls,
                                       (long long)calls + 1, 1);
#endif
}

static void op_add(void) {
#if HAVE_SHMEM_1_5
    shmem_int64_atomic_add(amo_word, 1, 1);
#else
    shmem_longlong_atomic_add((long long *)amo_word, 1, 1);
#endif
}

static void op_put_signal(void) {
#if HAVE_SHMEM_1_5
    shmem_putmem_signal(sig_data, local8, 8, sig_word, calls, SHMEM_SIGNAL_SET, 1);
#else
    shmem_putmem(sig_data, local8, 8, 1);
    shmem_fence();
    shmem_ulonglong_atomic_set((unsigned long long *)sig_word, calls, 1);
#endif
    shmem_quiet();
}

static void bcast(size_t bytes) {
#if HAVE_SHMEM_1_5
    shmem_broadcastmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, bytes, 0);
#else
    shmem_broadcast64(coll_dst, coll_src, bytes / 8, 0, 0, 0, npes, PSYNC);
#endif
}

static void sum_reduce(int nelems) {
#if HAVE_SHMEM_1_5
    shmem_int64_sum_reduce(SHMEM_TEAM_WORLD, red_dst, red_src, nelems);
#else
    shmem_longlong_sum_to_all((long long *)red_dst, (const long long *)red_src, nelems, 0, 0,
                              npes, pwrk[calls & 1], PSYNC);
#endif
}

static void op_bcast_8(void) { bcast(8); }
static void op_bcast_64k(void) { bcast(COLL_BYTES); }
static void op_reduce_1(void) { sum_reduce(1); }
static void op_reduce_8192(void) { sum_reduce(REDUCE_MAX); }

static void op_fcollect_8(void) {
#if HAVE_SHMEM_1_5
    shmem_fcollectmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8);
#else
    shmem_fcollect64(coll_dst, coll_src, 1, 0, 0, npes, PSYNC);
#endif
}

static void op_alltoall_8(void) {
#if HAVE_SHMEM_1_5
    shmem_alltoallmem(SHMEM_TEAM_WORLD, coll_dst, coll_src, 8);
#else
    shmem_alltoall64(coll_dst, coll_src, 1, 0, 0, npes, PSYNC);
#endif
}

/* The median over batches of `reps` calls of `op` (then one quiet if `quiet_after`). */
static double time_ops(void (*op)(void), int reps, int quiet_after) {
    double t[BATCHES];
    for (int b = -1; b < BATCHES; b++) {
        double start = now();
        for (int i = 0; i < reps; i++, calls++) op();
        if (quiet_after) shmem_quiet();
        if (b >= 0) t[b] = (now() - start) / reps;
    }
    return median(t, BATCHES);
}

/* Repetitions per batch, as in shmem-bench: fewer when PEs outnumber the 2 cores. */
static int coll_reps(int large) {
    if (large) return npes > 4 ? 40 : npes > 2 ? 100 : 200;
    return npes > 4 ? 200 : npes > 2 ? 500 : 2000;
}

static void amo_main(int me) {
    if (me == 0) {
        printf("RESULT amo_fetch_add_lat %.9g\n", time_ops(op_fetch_add, 20000, 0));
        calls = 0; /* as the compare-and-swap word on PE 1 */
        printf("RESULT amo_cswap_lat %.9g\n", time_ops(op_cswap, 20000, 0));
        printf("RESULT amo_add_rate %.9g\n", time_ops(op_add, 20000, 1));
        printf("RESULT put_signal_lat_8 %.9g\n", time_ops(op_put_signal, 20000, 0));
#if !HAVE_SHMEM_1_5
        printf("NOTE OpenSHMEM %d.%d: atomics on long long (no int64 standard atomics); "
               "put-with-signal emulated as putmem + fence + atomic set + quiet\n",
               SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
#endif
        fflush(stdout);
    }
    shmem_barrier_all();
}

/* Collectives are timed until the last PE returns: each timed call is followed by a barrier,
 * as in shmem-bench's own loop. */
static void (*coll_op)(void);
static void coll_then_barrier(void) {
    coll_op();
    shmem_barrier_all();
}

static void coll_main(int me) {
    struct {
        const char *key;
        void (*op)(void);
        int large;
    } ops[] = {
        {"bcast_8", op_bcast_8, 0},         {"bcast_65536", op_bcast_64k, 1},
        {"sum_reduce_1", op_reduce_1, 0},   {"sum_reduce_8192", op_reduce_8192, 1},
        {"fcollect_8", op_fcollect_8, 0},   {"alltoall_8", op_alltoall_8, 0},
    };
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        shmem_barrier_all();
        coll_op = ops[k].op;
        double t = time_ops(coll_then_barrier, coll_reps(ops[k].large), 0);
        if (me == 0) printf("RESULT %s_%d %.9g\n", ops[k].key, npes, t);
    }
    if (me == 0) {
#if !HAVE_SHMEM_1_5
        printf("NOTE OpenSHMEM %d.%d: no teams; collectives are the 1.4 active-set forms "
               "(broadcast64, longlong_sum_to_all, fcollect64, alltoall64) over all PEs\n",
               SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION);
#endif
        fflush(stdout);
    }
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "p2p";
    shmem_init();
    int me = shmem_my_pe();
    npes = shmem_n_pes();
    size_t max = 4 << 20;
    char *sym = shmem_malloc(max);
    char *local = malloc(max);
    memset(local, 1, max);
    if (strcmp(mode, "amo") == 0 || strcmp(mode, "coll") == 0) {
        amo_word = shmem_calloc(2, sizeof *amo_word);
        cswap_word = amo_word + 1;
        sig_word = shmem_calloc(1, sizeof *sig_word);
        sig_data = shmem_malloc(8);
        coll_src = shmem_malloc(COLL_BYTES);
        coll_dst = shmem_malloc(COLL_BYTES);
        red_src = shmem_malloc(REDUCE_MAX * sizeof *red_src);
        red_dst = shmem_malloc(REDUCE_MAX * sizeof *red_dst);
        memset(coll_src, 1, COLL_BYTES);
        for (int i = 0; i < REDUCE_MAX; i++) red_src[i] = i;
        memset(local8, 1, sizeof local8);
#if !HAVE_SHMEM_1_5
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < PSYNC_SIZE; i++) psync[k][i] = SHMEM_SYNC_VALUE;
#endif
        shmem_barrier_all();
        if (strcmp(mode, "amo") == 0) amo_main(me);
        else coll_main(me);
        shmem_free(red_dst);
        shmem_free(red_src);
        shmem_free(coll_dst);
        shmem_free(coll_src);
        shmem_free(sig_data);
        shmem_free(sig_word);
        shmem_free(amo_word);
    } else {
        shmem_barrier_all();
        if (strcmp(mode, "p2p") == 0) {
            if (me == 0) {
                printf("RESULT put_lat_8 %.9g\n", run(PUT_LAT, sym, local, 8, 20000));
                printf("RESULT get_lat_8 %.9g\n", run(GET_LAT, sym, local, 8, 20000));
                for (size_t s = 1024; s <= max; s *= 4) {
                    int reps = (int)((64u << 20) / s);
                    if (reps < 8) reps = 8;
                    printf("RESULT put_bw_%zu %.9g\n", s, run(PUT_BW, sym, local, s, reps));
                    printf("RESULT get_bw_%zu %.9g\n", s, run(GET_BW, sym, local, s, reps));
                }
                fflush(stdout);
            }
            shmem_barrier_all();
        }
        double b = run(BARRIER, sym, local, 0, npes > 4 ? 500 : 2000);
        if (me == 0) {
            printf("RESULT barrier_%d %.9g\n", npes, b);
            fflush(stdout);
        }
        shmem_barrier_all();
    }
    shmem_free(sym);
    shmem_finalize();
    return 0;
}
