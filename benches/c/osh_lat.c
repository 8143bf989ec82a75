/* Put and get latency, PE 0 -> PE 1 (2 PEs; others idle), 1 B to 4 MiB in powers of 4.
 *
 *   put_lat_<size>: shmem_putmem(dst, src, size, 1); shmem_quiet();   per iteration
 *   get_lat_<size>: shmem_getmem(dst, src, size, 1);                   per iteration
 *
 * as OSU's osu_oshm_put / osu_oshm_get (heap mode: both buffers from shmem_malloc). PE 1 waits
 * in shmem_barrier_all meanwhile. Each figure is the median of the batch means (see common.h).
 * After each size, the receiving side checks the bytes it got. Run: osh_lat [-q]. */
#include "common.h"

static uint8_t pattern(size_t i, int k) { return (uint8_t)(i * 7u + (unsigned)k * 13u + 1u); }

static void fill(uint8_t *p, size_t n, int k) {
    for (size_t i = 0; i < n; i++) p[i] = pattern(i, k);
}

static size_t bad_bytes(const uint8_t *p, size_t n, int k) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += p[i] != pattern(i, k);
    return bad;
}

static double put_batch(uint8_t *dst, const uint8_t *src, size_t n, int reps) {
    double t0 = now_sec();
    for (int i = 0; i < reps; i++) {
        shmem_putmem(dst, src, n, 1);
        shmem_quiet();
    }
    return (now_sec() - t0) / reps;
}

static double get_batch(uint8_t *dst, const uint8_t *src, size_t n, int reps) {
    double t0 = now_sec();
    for (int i = 0; i < reps; i++) shmem_getmem(dst, src, n, 1);
    return (now_sec() - t0) / reps;
}

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, argc, argv);
    if (b.npes < 2) {
        if (b.me == 0) fprintf(stderr, "osh_lat needs at least 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    uint8_t *src = shmem_malloc(P2P_MAX_SIZE);
    uint8_t *dst = shmem_malloc(P2P_MAX_SIZE);
    /* Touch both buffers before any timing (first-touch page faults are not the subject). */
    memset(src, 0, P2P_MAX_SIZE);
    memset(dst, 0, P2P_MAX_SIZE);
    long *bad = shmem_calloc(2, sizeof(long)); /* on PE 0: sizes that failed, put / get */
    if (b.me == 0) {
        printf("INFO lat put: shmem_putmem + shmem_quiet per iteration; get: shmem_getmem "
               "(blocking) per iteration; PE 0 -> PE 1, heap buffers\n");
        printf("# %-10s %14s %14s\n", "size", "put us", "get us");
    }
    shmem_barrier_all();

    char label[32], row[64];
    int k = 0;
    for (size_t n = P2P_MIN_SIZE; n <= P2P_MAX_SIZE; n *= P2P_SIZE_STEP, k++) {
        long target = 64l << 20;
        int reps = (int)(target / (long)n);
        if (reps > 20000) reps = 20000;
        if (reps < 8) reps = 8;
        if (b.quick) reps = reps / 4 > 2 ? reps / 4 : 2;
        double t[MAX_BATCHES], put_us = 0, get_us = 0;

        /* put: PE 0's src -> PE 1's dst */
        if (b.me == 0) fill(src, n, k);
        if (b.me == 1) memset(dst, 0xee, n);
        shmem_barrier_all();
        if (b.me == 0) {
            put_batch(dst, src, n, reps);
            for (int i = 0; i < b.batches; i++) t[i] = put_batch(dst, src, n, reps);
            put_us = median_of(t, b.batches) * 1e6;
        }
        shmem_barrier_all();
        if (b.me == 1 && bad_bytes(dst, n, k)) shmem_long_atomic_inc(&bad[0], 0);

        /* get: PE 1's src -> PE 0's dst */
        if (b.me == 1) fill(src, n, k + 1);
        if (b.me == 0) memset(dst, 0xee, n);
        shmem_barrier_all();
        if (b.me == 0) {
            get_batch(dst, src, n, reps);
            for (int i = 0; i < b.batches; i++) t[i] = get_batch(dst, src, n, reps);
            get_us = median_of(t, b.batches) * 1e6;
            if (bad_bytes(dst, n, k + 1)) shmem_long_atomic_inc(&bad[1], 0);
            size_label(n, label, sizeof label);
            snprintf(row, sizeof row, "put_lat_%s", label);
            result(row, put_us, "us");
            snprintf(row, sizeof row, "get_lat_%s", label);
            result(row, get_us, "us");
            printf("# %-10zu %14.3f %14.3f\n", n, put_us, get_us);
            fflush(stdout);
        }
        shmem_barrier_all();
    }
    if (b.me == 0) {
        const char *name[2] = {"lat_put_data", "lat_get_data"};
        for (int i = 0; i < 2; i++) {
            long v = shmem_long_atomic_fetch(&bad[i], 0);
            if (v) printf("CHECK %s FAIL %ld sizes delivered wrong bytes\n", name[i], v);
            else printf("CHECK %s ok\n", name[i]);
        }
        fflush(stdout);
    }
    bench_done(&b);
    return 0;
}
