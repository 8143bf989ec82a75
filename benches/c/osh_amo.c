/* Remote atomic latency and rate on a long, PE 0 -> one word on PE 1 (2 PEs; others idle):
 * fetch_add, add, inc, compare_swap, swap, set, fetch, with the shmem_long_atomic_* names
 * (OpenSHMEM 1.4 and later).
 *
 *   amo_<op>_lat  (us):     one operation per iteration; for the non-fetching ones (add, inc,
 *                           set) each is followed by shmem_quiet, so the figure is the time to
 *                           complete it remotely. Fetching ones are complete when they return.
 *   amo_<op>_rate (Mops/s): windows of 64 operations back to back, then one shmem_quiet (as
 *                           OSU osu_oshm_atomics, which has no quiet inside its loop).
 *
 * Each figure is the median of the batch means (see common.h). After each op, PE 1 checks the
 * word (the number of increments, the last value swapped or set) and PE 0 checks every value
 * compare_swap, swap and fetch returned. Run: osh_amo [-q]. */
#include "common.h"

enum op { FETCH_ADD, ADD, INC, CSWAP, SWAP, SET, FETCH, NOPS };
static const char *op_name[NOPS] = {"fetch_add", "add", "inc", "compare_swap",
                                    "swap",      "set", "fetch"};
#define WINDOW 64

static long *word; /* symmetric; the target is PE 1's */
static long seq;   /* the number of operations PE 0 has issued for the current op */
static long wrong; /* values returned that were not the expected ones (PE 0) */
static long last_fetched;

/* One operation. `quiet` completes a non-fetching one before the next. */
static inline void one(enum op op, int quiet) {
    long v;
    switch (op) {
    case FETCH_ADD:
        v = shmem_long_atomic_fetch_add(word, 1, 1);
        wrong += v != seq;
        break;
    case ADD:
        shmem_long_atomic_add(word, 1, 1);
        if (quiet) shmem_quiet();
        break;
    case INC:
        shmem_long_atomic_inc(word, 1);
        if (quiet) shmem_quiet();
        break;
    case CSWAP: /* the word holds seq, so every swap succeeds */
        v = shmem_long_atomic_compare_swap(word, seq, seq + 1, 1);
        wrong += v != seq;
        break;
    case SWAP: /* the word holds the previous value swapped in, seq */
        v = shmem_long_atomic_swap(word, seq + 1, 1);
        wrong += v != seq;
        break;
    case SET:
        shmem_long_atomic_set(word, seq + 1, 1);
        if (quiet) shmem_quiet();
        break;
    case FETCH:
        last_fetched = shmem_long_atomic_fetch(word, 1);
        break;
    default: break;
    }
    seq++;
}

static double lat_batch(enum op op, int reps) {
    double t0 = now_sec();
    for (int i = 0; i < reps; i++) one(op, 1);
    return (now_sec() - t0) / reps;
}

static double rate_batch(enum op op, int windows) {
    double t0 = now_sec();
    for (int w = 0; w < windows; w++) {
        for (int i = 0; i < WINDOW; i++) one(op, 0);
        shmem_quiet();
    }
    return (now_sec() - t0) / ((double)windows * WINDOW);
}

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, argc, argv);
    if (b.npes < 2) {
        if (b.me == 0) fprintf(stderr, "osh_amo needs at least 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    word = shmem_calloc(1, sizeof(long));
    long *expect = shmem_calloc(1, sizeof(long)); /* on PE 1: what PE 0 says the word must be */
    long *bad = shmem_calloc(1, sizeof(long));    /* on PE 0: failed checks from PE 1 */
    int reps = b.quick ? 2000 : 10000;
    int windows = b.quick ? 30 : 150;
    if (b.me == 0) {
        printf("INFO amo shmem_long_atomic_*; lat: one op per iteration (+ shmem_quiet for add, "
               "inc, set); rate: windows of %d ops then shmem_quiet; PE 0 -> PE 1\n",
               WINDOW);
    }
    double lat_us[NOPS], rate_mops[NOPS];
    char row[64];
    for (int o = 0; o < NOPS; o++) {
        enum op op = (enum op)o;
        for (int kind = 0; kind < 2; kind++) {
            /* word = 0 on PE 1; the fetch rows run after a set of 12345 */
            if (b.me == 1) *word = op == FETCH ? 12345 : 0;
            seq = 0;
            wrong = 0;
            shmem_barrier_all();
            double t[MAX_BATCHES], fig = 0;
            if (b.me == 0) {
                for (int i = -1; i < b.batches; i++) {
                    double x = kind == 0 ? lat_batch(op, reps) : rate_batch(op, windows);
                    if (i >= 0) t[i] = x;
                }
                fig = median_of(t, b.batches);
                if (op == FETCH) wrong += last_fetched != 12345;
                /* what PE 1's word must hold now */
                long e = op == FETCH ? 12345 : seq;
                shmem_long_p(expect, e, 1);
                shmem_quiet();
            }
            shmem_barrier_all();
            if (b.me == 1 && *word != *expect) {
                fprintf(stderr, "osh_amo: %s: PE 1 word %ld, expected %ld\n", op_name[o],
                        *word, *expect);
                shmem_long_atomic_inc(bad, 0);
            }
            shmem_barrier_all();
            if (b.me == 0) {
                long b1 = shmem_long_atomic_fetch(bad, 0);
                shmem_long_atomic_set(bad, 0, 0);
                const char *kn = kind == 0 ? "lat" : "rate";
                if (b1 || wrong)
                    printf("CHECK amo_%s_%s FAIL word %s, %ld values returned wrong\n",
                           op_name[o], kn, b1 ? "wrong" : "ok", wrong);
                else printf("CHECK amo_%s_%s ok\n", op_name[o], kn);
                snprintf(row, sizeof row, "amo_%s_%s", op_name[o], kn);
                if (kind == 0) result(row, fig * 1e6, "us");
                else result(row, 1e-6 / fig, "Mops/s");
                if (kind == 0) lat_us[o] = fig * 1e6;
                else rate_mops[o] = 1e-6 / fig;
                fflush(stdout);
            }
            shmem_barrier_all();
        }
    }
    if (b.me == 0) {
        printf("# %-14s %12s %12s\n", "op", "lat us", "rate Mops/s");
        for (int o = 0; o < NOPS; o++)
            printf("# %-14s %12.3f %12.3f\n", op_name[o], lat_us[o], rate_mops[o]);
        fflush(stdout);
    }
    bench_done(&b);
    return 0;
}
