/* osh_calls.c: the per-call cost of the C ABI, on one PE (the target is this PE, as in the
 * Rust side's `shmem-calls`): N calls of shmem_long_put of one element (8 bytes) and of
 * shmem_long_atomic_fetch_add, timed as a whole, in batches; prints the median batch's time
 * per call. compare.sh runs it beside `shmem-calls OP N time` (the Rust API's same loop) in
 * interleaved pairs: the C path is to cost at most 1.1x the Rust API.
 *
 *   osh_calls [-q]
 */
#include "common.h"

#include <stdio.h>

#define BATCHES 9

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, argc, argv);
    long *x = shmem_calloc(8, sizeof(long));
    long v = 1, sink = 0;
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
