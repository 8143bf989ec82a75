/* Helpers shared by the OpenSHMEM benchmarks in benches/c (header only; include it first).
 *
 * Every program compiles unchanged with this project's oshcc (OpenSHMEM 1.5+ header) and with
 * Open MPI's (OpenSHMEM 1.4 header). Output, all from PE 0:
 *   RESULT <row> <value> <unit>   machine-readable; unit "us" (time per operation, lower is
 *                                 better), "GB/s" (1e9 bytes/s), "Mmsg/s" or "Mops/s" (higher
 *                                 is better)
 *   INFO <key> <text>             what was timed and how (API form, timing method)
 *   CHECK <name> ok|FAIL <detail> a correctness check of the data the timed loop produced
 *   DONE                          printed before shmem_finalize (some Open MPI builds crash
 *                                 inside it, after the results)
 * and a human-readable table, whose lines start with "#".
 *
 * Timing: a figure is the median over BATCHES timed batches (after one untimed warm-up batch)
 * of the batch's wall time (CLOCK_MONOTONIC) divided by the operations in the batch. */
#ifndef BENCHES_C_COMMON_H
#define BENCHES_C_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)
#define BENCH_SHMEM_15 1
#else
#define BENCH_SHMEM_15 0
#endif

#define MAX_BATCHES 15

/* Run-wide settings: "-q" (quick) cuts batches and repetitions. */
struct bench {
    int me, npes;
    int quick;
    int batches; /* timed batches per figure (a warm-up batch comes first) */
};

static inline void bench_init(struct bench *b, int argc, char **argv) {
    b->quick = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quick") == 0) b->quick = 1;
    b->batches = b->quick ? 5 : 9;
    shmem_init();
    b->me = shmem_my_pe();
    b->npes = shmem_n_pes();
    if (b->me == 0) {
        char name[SHMEM_MAX_NAME_LEN + 1];
        int major = 0, minor = 0;
        memset(name, 0, sizeof name);
        shmem_info_get_name(name);
        shmem_info_get_version(&major, &minor);
        printf("INFO library \"%s\" spec %d.%d (header %d.%d), %d PEs%s\n", name, major, minor,
               SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, b->npes, b->quick ? ", quick" : "");
        fflush(stdout);
    }
}

static inline void bench_done(struct bench *b) {
    shmem_barrier_all();
    if (b->me == 0) {
        printf("DONE\n");
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_finalize();
}

static inline double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Repetitions per batch, the same on every PE: `reps`, or fewer when PE 0's warm-up took
 * `warm_per_op` seconds per operation and `reps` of them would take longer than `target`
 * seconds (at least `min_reps`). This bounds the run time when PEs outnumber the cores or the
 * machine is busy. `slot` is a symmetric double; the call is collective. */
static inline int agree_reps(double *slot, double warm_per_op, int reps, double target,
                             int min_reps) {
    shmem_barrier_all();
    if (shmem_my_pe() == 0) *slot = warm_per_op;
    shmem_barrier_all();
    double w = shmem_double_g(slot, 0);
    if (w * reps > target) {
        double r = target / w;
        reps = r < min_reps ? min_reps : (int)r;
    }
    return reps;
}

/* "1", "4", ..., "1K", "64K", "4M": the size part of a row name. */
static inline const char *size_label(size_t n, char *buf, size_t len) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) snprintf(buf, len, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0) snprintf(buf, len, "%zuK", n >> 10);
    else snprintf(buf, len, "%zu", n);
    return buf;
}

static inline void result(const char *row, double value, const char *unit) {
    printf("RESULT %s %.6g %s\n", row, value, unit);
}

/* The sizes of the point-to-point rows: 1 B to 4 MiB in powers of 4. */
#define P2P_MIN_SIZE ((size_t)1)
#define P2P_MAX_SIZE ((size_t)4 << 20)
#define P2P_SIZE_STEP 4

/* A compiler barrier, so a loop that stores into the same buffer is never folded. */
#define COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")

#endif
