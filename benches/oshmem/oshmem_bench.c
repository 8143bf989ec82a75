/* The measurements of shmem-bench, through any OpenSHMEM 1.4+ library (used with Open MPI's
 * OSHMEM: oshcc -O2 oshmem_bench.c; oshrun -np 2 ./a.out p2p).
 *
 * Each figure is the median of 9 batch means after one warm-up batch, as in shmem-bench.
 * Results are printed as "RESULT <key> <seconds per op>" lines by PE 0, before shmem_finalize
 * (some OSHMEM builds crash inside it). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 9

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

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "p2p";
    shmem_init();
    int me = shmem_my_pe();
    size_t max = 4 << 20;
    char *sym = shmem_malloc(max);
    char *local = malloc(max);
    memset(local, 1, max);
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
    int npes = shmem_n_pes();
    double b = run(BARRIER, sym, local, 0, npes > 4 ? 500 : 2000);
    if (me == 0) {
        printf("RESULT barrier_%d %.9g\n", npes, b);
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(sym);
    shmem_finalize();
    return 0;
}
