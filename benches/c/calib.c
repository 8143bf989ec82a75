/* Machine calibration for the OpenSHMEM benchmarks, in plain C (no SHMEM library):
 *
 *   memcpy_bw_<size>  (GB/s) and memcpy_lat_<size> (us per copy): one thread copying the same
 *       source to the same destination (hot, as the benchmarks' buffers are), 1 B to 4 MiB in
 *       powers of 4; the ceiling for a put or get done as one copy.
 *   rt_unpinned, rt_pinned (us): a cache-line round trip between two processes (fork) through
 *       one line of a MAP_SHARED anonymous mapping: the parent stores 2k+1 (release) and waits
 *       for 2k+2, the child waits for 2k+1 (acquire) and stores 2k+2. Spinning waiters call
 *       sched_yield after a while, since processes may outnumber cores. "pinned" puts the two
 *       processes on two different CPUs (skipped with one CPU); "unpinned" leaves placement to
 *       the scheduler, as both libraries do beyond 2 PEs. It is the floor for a 2-PE barrier and
 *       for any flag handshake.
 *   barrier_spin_2_unpinned, barrier_spin_2_pinned (us): a central-counter barrier between two
 *       forked processes (fetch_add on a counter, the last arriver bumps a generation the other
 *       waits on, spinning then yielding): the reference of a 2-PE barrier.
 *
 * Figures are medians of batch means, as in common.h; output uses the same RESULT lines.
 * Run: calib [-q]. */
#define _GNU_SOURCE 1
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCHES 15
#define SPIN_BEFORE_YIELD 4096

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *size_label(size_t n, char *buf, size_t len) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) snprintf(buf, len, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0) snprintf(buf, len, "%zuK", n >> 10);
    else snprintf(buf, len, "%zu", n);
    return buf;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- memcpy ------------------------------------------------------------------------------ */

static double memcpy_batch(char *dst, const char *src, size_t n, long reps) {
    double t0 = now_sec();
    for (long r = 0; r < reps; r++) {
        memcpy(dst, src, n);
        __asm__ __volatile__("" ::: "memory"); /* keep every copy */
    }
    return (now_sec() - t0) / (double)reps;
}

static void memcpy_rows(int batches, int quick) {
    const size_t max = (size_t)4 << 20;
    char *src = aligned_alloc(4096, max), *dst = aligned_alloc(4096, max);
    if (!src || !dst) {
        fprintf(stderr, "calib: out of memory\n");
        exit(1);
    }
    memset(src, 1, max);
    memset(dst, 2, max);
    char label[32];
    printf("# %-10s %12s %12s\n", "size", "memcpy GB/s", "us/copy");
    for (size_t n = 1; n <= max; n *= 4) {
        long reps = (long)(((size_t)32 << 20) / n);
        if (reps > 200000) reps = 200000;
        if (reps < 8) reps = 8;
        if (quick) reps = reps / 4 > 2 ? reps / 4 : 2;
        double t[MAX_BATCHES];
        memcpy_batch(dst, src, n, reps);
        for (int i = 0; i < batches; i++) t[i] = memcpy_batch(dst, src, n, reps);
        double per = median_of(t, batches);
        size_label(n, label, sizeof label);
        printf("RESULT memcpy_bw_%s %.6g GB/s\n", label, (double)n / per * 1e-9);
        printf("RESULT memcpy_lat_%s %.6g us\n", label, per * 1e6);
        printf("# %-10zu %12.3f %12.5f\n", n, (double)n / per * 1e-9, per * 1e6);
    }
    fflush(stdout);
    free(src);
    free(dst);
}

/* ---- cache-line round trip ---------------------------------------------------------------- */

/* Waits until the flag holds `value` or, if `stop` is set, -1 (the end); returns the value. */
static long wait_for(atomic_long *flag, long value, int stop) {
    unsigned spins = 0;
    for (;;) {
        long v = atomic_load_explicit(flag, memory_order_acquire);
        if (v == value || (stop && v == -1)) return v;
        if (++spins < SPIN_BEFORE_YIELD) cpu_relax();
        else sched_yield();
    }
}

static int pin_to(int nth) {
    cpu_set_t set, one;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int seen = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        if (seen++ == nth) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            return sched_setaffinity(0, sizeof one, &one);
        }
    }
    return -1;
}

/* The median round trip in us, or a negative value if it could not run. A batch has `reps`
 * round trips, or fewer if the warm-up shows a batch would take over 20 ms (a busy machine, or
 * both processes on one CPU). */
static double round_trip(int pinned, int batches, int reps) {
    if (pinned) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) return -1;
    }
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return -1;
    atomic_long *flag = (atomic_long *)map; /* page-aligned, so one cache line */
    atomic_init(flag, 0);
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (pinned) pin_to(1);
        for (long k = 0;; k++) {
            if (wait_for(flag, 2 * k + 1, 1) < 0) break;
            atomic_store_explicit(flag, 2 * k + 2, memory_order_release);
        }
        _exit(0);
    }
    cpu_set_t saved;
    int have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (pinned) pin_to(0);
    double t[MAX_BATCHES];
    long k = 0;
    for (int i = -1; i < batches; i++) {
        int n = i < 0 ? (reps / 4 > 1 ? reps / 4 : 1) : reps;
        double t0 = now_sec();
        for (int r = 0; r < n; r++, k++) {
            atomic_store_explicit(flag, 2 * k + 1, memory_order_release);
            wait_for(flag, 2 * k + 2, 0);
        }
        double per = (now_sec() - t0) / n;
        if (i >= 0) t[i] = per;
        else if (per * reps > 0.02) reps = per > 0.02 / 20 ? 20 : (int)(0.02 / per);
    }
    atomic_store_explicit(flag, -1, memory_order_release);
    waitpid(child, NULL, 0);
    if (pinned && have_saved) sched_setaffinity(0, sizeof saved, &saved);
    munmap(map, 4096);
    return median_of(t, batches) * 1e6;
}

/* ---- central-counter barrier ---------------------------------------------------------------- */

struct central {
    atomic_long count, generation, stop;
};

/* One barrier of two processes: the last to arrive resets the count and bumps the generation;
 * the first waits (spinning, then sched_yield) until the generation moves, or the run stops. */
static void central_barrier(struct central *b) {
    long gen = atomic_load_explicit(&b->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_store_explicit(&b->generation, gen + 1, memory_order_release);
        return;
    }
    unsigned spins = 0;
    while (atomic_load_explicit(&b->generation, memory_order_acquire) == gen &&
           !atomic_load_explicit(&b->stop, memory_order_acquire)) {
        if (++spins < SPIN_BEFORE_YIELD) cpu_relax();
        else sched_yield();
    }
}

/* The median time of one two-process central-counter barrier in us (machine-limits B.6's
 * spinning barrier), or a negative value if it could not run; batches as in round_trip. */
static double barrier_2(int pinned, int batches, int reps) {
    if (pinned) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) return -1;
    }
    void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return -1;
    struct central *b = (struct central *)map;
    atomic_init(&b->count, 0);
    atomic_init(&b->generation, 0);
    atomic_init(&b->stop, 0);
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (pinned) pin_to(1);
        while (!atomic_load_explicit(&b->stop, memory_order_acquire)) central_barrier(b);
        _exit(0);
    }
    cpu_set_t saved;
    int have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (pinned) pin_to(0);
    double t[MAX_BATCHES];
    for (int i = -1; i < batches; i++) {
        int n = i < 0 ? (reps / 4 > 1 ? reps / 4 : 1) : reps;
        double t0 = now_sec();
        for (int r = 0; r < n; r++) central_barrier(b);
        double per = (now_sec() - t0) / n;
        if (i >= 0) t[i] = per;
        else if (per * reps > 0.02) reps = per > 0.02 / 20 ? 20 : (int)(0.02 / per);
    }
    /* The child leaves its loop, or the barrier it waits in, when it sees the flag. */
    atomic_store_explicit(&b->stop, 1, memory_order_release);
    waitpid(child, NULL, 0);
    if (pinned && have_saved) sched_setaffinity(0, sizeof saved, &saved);
    munmap(map, 4096);
    return median_of(t, batches) * 1e6;
}

int main(int argc, char **argv) {
    int quick = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quick") == 0) quick = 1;
    int batches = quick ? 5 : 9;
    printf("INFO calib plain C: memcpy of one hot buffer; cache-line round trip between two "
           "forked processes (spin, then sched_yield after %d polls)\n",
           SPIN_BEFORE_YIELD);
    memcpy_rows(batches, quick);
    int reps = quick ? 2000 : 10000;
    double un = round_trip(0, batches, reps);
    double pin = round_trip(1, batches, reps);
    if (un >= 0) printf("RESULT rt_unpinned %.6g us\n", un);
    if (pin >= 0) printf("RESULT rt_pinned %.6g us\n", pin);
    printf("# cache-line round trip: unpinned %.3f us, pinned %.3f us\n", un, pin);
    double bun = barrier_2(0, batches, reps), bpin = barrier_2(1, batches, reps);
    if (bun >= 0) printf("RESULT barrier_spin_2_unpinned %.6g us\n", bun);
    if (bpin >= 0) printf("RESULT barrier_spin_2_pinned %.6g us\n", bpin);
    printf("# two-process central-counter barrier: unpinned %.3f us, pinned %.3f us\n", bun, bpin);
    printf("DONE\n");
    return 0;
}
