/* osh_calls.c: the per-call cost of the C ABI, on one PE (the target is this PE, as in the
 * Rust side's `shmem-calls`).
 *
 *   osh_calls [-q]        N calls of shmem_long_put of one element (8 bytes) and of
 *                         shmem_long_atomic_fetch_add, timed as a whole, in batches; prints the
 *                         median batch's time per call. compare.sh runs it beside
 *                         `shmem-calls OP N time` (the Rust API's same loop) in interleaved
 *                         pairs: the C path is to cost at most 1.1x the Rust API.
 *   osh_calls OP COUNT    COUNT calls of OP in the function calls_loop and nothing else, for
 *                         valgrind --tool=callgrind --toggle-collect=calls_loop (the loops of
 *                         `shmem-calls` through the C ABI; benches/tests/instructions.rs):
 *                         none, put (8 bytes, then shmem_quiet), get (8 bytes), fetch_add,
 *                         add, malloc_free (64 bytes) and team_split (a 1-PE team, destroyed).
 */
#include "common.h"

#include <stdio.h>
#include <string.h>

#define BATCHES 9

static long *x;
static long sink;

static void op_none(long i) { (void)i; }
static void op_put(long i) {
    shmem_long_put(x, &i, 1, 0);
    shmem_quiet();
}
static void op_get(long i) {
    (void)i;
    shmem_long_get(&sink, x, 1, 0);
}
static void op_fetch_add(long i) {
    (void)i;
    sink += shmem_long_atomic_fetch_add(&x[1], 1, 0);
}
static void op_add(long i) {
    (void)i;
    shmem_long_atomic_add(&x[1], 1, 0);
}
static void op_malloc_free(long i) {
    (void)i;
    shmem_free(shmem_malloc(64));
}
static void op_team_split(long i) {
    (void)i;
#if SHMEM_MAJOR_VERSION > 1 || SHMEM_MINOR_VERSION >= 5
    shmem_team_t t = SHMEM_TEAM_INVALID;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 1, NULL, 0, &t) == 0) shmem_team_destroy(t);
    else sink = -1;
#endif
}

/* The measured loop (its own function, so callgrind can count it alone). */
__attribute__((noinline)) static void calls_loop(void (*op)(long), long count) {
    for (long i = 0; i < count; i++) op(i);
}

static int count_mode(const char *name, long count) {
    static const struct {
        const char *name;
        void (*op)(long);
    } ops[] = {{"none", op_none}, {"put", op_put}, {"get", op_get}, {"fetch_add", op_fetch_add},
               {"add", op_add}, {"malloc_free", op_malloc_free}, {"team_split", op_team_split}};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        if (strcmp(ops[k].name, name) == 0) {
            calls_loop(ops[k].op, count);
            return sink < 0;
        }
    }
    fprintf(stderr, "osh_calls: unknown operation %s\n", name);
    return 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "-q") != 0) {
        shmem_init();
        x = shmem_calloc(8, sizeof(long));
        int rc = count_mode(argv[1], atol(argv[2]));
        shmem_free(x);
        shmem_finalize();
        return rc;
    }
    struct bench b;
    bench_init(&b, argc, argv);
    x = shmem_calloc(8, sizeof(long));
    long v = 1;
    const long n = b.quick ? 2000000 : 5000000;
    double put[BATCHES], amo[BATCHES];
    for (int k = 0; k < BATCHES; k++) {
        double t0 = now_sec();
        for (long i = 0; i < n; i++) {
            v = i;
            COMPILER_BARRIER();
            shmem_long_put(x, &v, 1, 0);
        }
        double t1 = now_sec();
        for (long i = 0; i < n; i++) sink += shmem_long_atomic_fetch_add(&x[1], 1, 0);
        double t2 = now_sec();
        put[k] = (t1 - t0) / (double)n;
        amo[k] = (t2 - t1) / (double)n;
    }
    printf("CHECK calls %s\n", x[0] == n - 1 && x[1] == (long)BATCHES * n && sink > 0 ? "ok" : "WRONG");
    result("c_put_8", median_of(put, BATCHES) * 1e9, "ns");
    result("c_fetch_add", median_of(amo, BATCHES) * 1e9, "ns");
    printf("INFO calls: %ld calls per batch, median of %d batches; target PE 0 of 1\n", n, BATCHES);
    shmem_free(x);
    bench_done(&b);
    return 0;
}
