/* put_loop.c: N one-element shmem_long_put calls to the next PE, for counting the instructions
 * one call costs through a library's C ABI (the difference of two runs, so that start-up and
 * shutdown cancel out):
 *
 *   target/release/oshcc -O2 -o put_loop benches/oshmem/put_loop.c
 *   for n in 1000 11000; do
 *     target/release/oshrun -n 1 -- valgrind --tool=callgrind --callgrind-out-file=cg.$n ./put_loop $n
 *   done    # (I refs of 11000 - I refs of 1000) / 10000 = instructions per put
 */
#include <shmem.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    shmem_init();
    long *x = shmem_calloc(8, sizeof(long));
    long v = 1;
    int peer = (shmem_my_pe() + 1) % shmem_n_pes();
    for (int i = 0; i < iters; i++) shmem_long_put(x, &v, 1, peer);
    shmem_barrier_all();
    shmem_free(x);
    shmem_finalize();
    return 0;
}
