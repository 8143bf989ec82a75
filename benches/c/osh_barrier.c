/* shmem_barrier_all latency on all PEs (run it with 2 to 64 PEs; more PEs than cores means
 * oversubscription, and a barrier then costs scheduler hand-offs, not cache-line transfers).
 *
 *   barrier_np<N> (us): every PE runs batches of back-to-back shmem_barrier_all calls; a PE's
 *                       figure is the median of its batch means, and the row is the maximum
 *                       over PEs of those figures (they differ little: no PE can leave barrier
 *                       k before every PE entered it). Also printed: the minimum over PEs.
 *
 * Repetitions shrink with the PE count, and further when the warm-up batch shows that a batch
 * would take more than 50 ms (20 ms with -q), so a run takes seconds. Run: osh_barrier [-q]. */
#include "common.h"

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, argc, argv);
    int reps = b.npes <= 2 ? 2000 : b.npes <= 4 ? 1000 : b.npes <= 8 ? 400 : b.npes <= 16 ? 200
             : b.npes <= 32 ? 100 : 50;
    if (b.quick) reps = reps / 4 > 5 ? reps / 4 : 5;
    double target = b.quick ? 0.02 : 0.05; /* at most about this long per batch */
    double *fig = shmem_calloc((size_t)b.npes + 1, sizeof(double)); /* on PE 0: one per PE */
    if (b.me == 0) {
        printf("INFO barrier shmem_barrier_all back to back in batches; row = max over PEs of "
               "each PE's median batch mean\n");
        fflush(stdout);
    }
    double t[MAX_BATCHES];
    shmem_barrier_all();
    /* warm-up batch: a quarter of the repetitions, which also sets the batch size */
    int warm = reps / 4 > 1 ? reps / 4 : 1;
    double t0 = now_sec();
    for (int r = 0; r < warm; r++) shmem_barrier_all();
    reps = agree_reps(&fig[b.npes], (now_sec() - t0) / warm, reps, target, 5);
    for (int i = 0; i < b.batches; i++) {
        t0 = now_sec();
        for (int r = 0; r < reps; r++) shmem_barrier_all();
        t[i] = (now_sec() - t0) / reps;
    }
    shmem_double_p(&fig[b.me], median_of(t, b.batches), 0);
    shmem_barrier_all();
    if (b.me == 0) {
        double mx = fig[0], mn = fig[0];
        for (int p = 1; p < b.npes; p++) {
            if (fig[p] > mx) mx = fig[p];
            if (fig[p] < mn) mn = fig[p];
        }
        char row[64];
        snprintf(row, sizeof row, "barrier_np%d", b.npes);
        result(row, mx * 1e6, "us");
        printf("# barrier_all %3d PEs: max over PEs %10.3f us, min %10.3f us (%d per batch)\n",
               b.npes, mx * 1e6, mn * 1e6, reps);
        fflush(stdout);
    }
    bench_done(&b);
    return 0;
}
