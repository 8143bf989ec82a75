/* Collectives over all PEs (run it with 2 and 4 PEs): broadcast (root 0), fcollect, alltoall
 * and a sum reduction of longs, for 8 B, 1 KiB and 64 KiB per PE (broadcast: the message;
 * fcollect: each PE's contribution; alltoall: each block; reduction: the vector).
 *
 * Two API forms, chosen at compile time and named in the output ("INFO coll_form"):
 *   team (OpenSHMEM 1.5):   shmem_broadcastmem, shmem_fcollectmem, shmem_alltoallmem,
 *                           shmem_long_sum_reduce on SHMEM_TEAM_WORLD. Used when the header
 *                           says 1.5 or later, unless -DUSE_ACTIVE_SET.
 *   active set (1.4):       shmem_broadcast64, shmem_fcollect64, shmem_alltoall64,
 *                           shmem_long_sum_to_all over (0, 0, npes) with pSync (and pWrk)
 *                           from shmem_malloc, two sets used alternately. Used with a 1.4
 *                           header (Open MPI 4.1) or -DUSE_ACTIVE_SET.
 *
 * Timing, identical for every library: a timed iteration is the collective followed by
 * shmem_barrier_all, so an iteration ends only when the LAST PE has returned from the
 * collective. Each PE takes the median of its batch means, and a row is the maximum over PEs:
 *   <op>_<size>_np<N>     (us)  collective + barrier_all per iteration
 *   coll_barrier_np<N>    (us)  barrier_all alone, timed the same way (its cost is inside the
 *                               rows above; the human table also shows the difference)
 * A batch has fewer iterations when the warm-up batch shows it would take over 20 ms (10 ms
 * with -q). After the timed loop each PE checks its destination; PE 0 reports a CHECK line.
 * Run: osh_coll [-q]. */
#include "common.h"

#if BENCH_SHMEM_15 && !defined(USE_ACTIVE_SET)
#define TEAM_FORM 1
#else
#define TEAM_FORM 0
#if BENCH_SHMEM_15 && defined(__GNUC__)
/* the active-set routines are deprecated in OpenSHMEM 1.5 headers */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
#endif

#define MAX_BYTES ((size_t)64 << 10)
#define MAX_ELEMS (MAX_BYTES / sizeof(long))
#define KPE 1000003l /* pattern: src[d * nelem + i] = me * KPE + d * KDST + i */
#define KDST 1009l

enum op { BCAST, FCOLLECT, ALLTOALL, REDUCE, NOPS };
static const char *op_name[NOPS] = {"bcast", "fcollect", "alltoall", "sum_reduce"};

static struct bench b;
static long *src, *dst;
static unsigned long calls;

#if !TEAM_FORM
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
#define PSYNC_LEN                                                                              \
    MAX2(MAX2(SHMEM_BCAST_SYNC_SIZE, SHMEM_REDUCE_SYNC_SIZE),                                  \
         MAX2(SHMEM_COLLECT_SYNC_SIZE, SHMEM_ALLTOALL_SYNC_SIZE))
#define PWRK_LEN MAX2(MAX_ELEMS / 2 + 1, (size_t)SHMEM_REDUCE_MIN_WRKDATA_SIZE)
static long *psync[2]; /* symmetric (shmem_malloc), alternated between calls */
static long *pwrk[2];
#endif

static void collective(enum op op, size_t bytes) {
    size_t nelem = bytes / sizeof(long);
#if TEAM_FORM
    switch (op) {
    case BCAST: shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, bytes, 0); break;
    case FCOLLECT: shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, bytes); break;
    case ALLTOALL: shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, bytes); break;
    case REDUCE: shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, nelem); break;
    default: break;
    }
#else
    long *ps = psync[calls & 1];
    switch (op) {
    case BCAST: shmem_broadcast64(dst, src, nelem, 0, 0, 0, b.npes, ps); break;
    case FCOLLECT: shmem_fcollect64(dst, src, nelem, 0, 0, b.npes, ps); break;
    case ALLTOALL: shmem_alltoall64(dst, src, nelem, 0, 0, b.npes, ps); break;
    case REDUCE:
        shmem_long_sum_to_all(dst, src, (int)nelem, 0, 0, b.npes, pwrk[calls & 1], ps);
        break;
    default: break;
    }
#endif
    calls++;
}

/* op < 0: barrier_all alone */
static double batch(int op, size_t bytes, int reps) {
    double t0 = now_sec();
    for (int r = 0; r < reps; r++) {
        if (op >= 0) collective((enum op)op, bytes);
        shmem_barrier_all();
    }
    return (now_sec() - t0) / reps;
}

/* The row's figure: the maximum over PEs of each PE's median batch mean. */
static double timed(int op, size_t bytes, int reps, double *slots) {
    double t[MAX_BATCHES];
    shmem_barrier_all();
    /* warm-up batch: a quarter of the repetitions, which also bounds the batch to ~target */
    double warm = batch(op, bytes, reps / 4 > 1 ? reps / 4 : 1);
    reps = agree_reps(&slots[b.npes], warm, reps, b.quick ? 0.01 : 0.02, 5);
    for (int i = 0; i < b.batches; i++) t[i] = batch(op, bytes, reps);
    shmem_double_p(&slots[b.me], median_of(t, b.batches), 0);
    shmem_barrier_all();
    double mx = 0;
    if (b.me == 0)
        for (int p = 0; p < b.npes; p++)
            if (slots[p] > mx) mx = slots[p];
    return mx;
}

/* Wrong words in this PE's destination after `op` on `nelem` longs per PE. */
static long check(enum op op, size_t nelem) {
    long bad = 0, np = b.npes, me = b.me;
    switch (op) {
    case BCAST: /* the 1.4 form leaves the root's dest alone */
        if (me != 0)
            for (size_t i = 0; i < nelem; i++) bad += dst[i] != (long)i;
        break;
    case FCOLLECT:
        for (long j = 0; j < np; j++)
            for (size_t i = 0; i < nelem; i++) bad += dst[j * nelem + i] != j * KPE + (long)i;
        break;
    case ALLTOALL:
        for (long j = 0; j < np; j++)
            for (size_t i = 0; i < nelem; i++)
                bad += dst[j * nelem + i] != j * KPE + me * KDST + (long)i;
        break;
    case REDUCE:
        for (size_t i = 0; i < nelem; i++) bad += dst[i] != KPE * np * (np - 1) / 2 + np * (long)i;
        break;
    default: break;
    }
    return bad;
}

int main(int argc, char **argv) {
    bench_init(&b, argc, argv);
    src = shmem_malloc(MAX_BYTES * (size_t)b.npes);
    dst = shmem_malloc(MAX_BYTES * (size_t)b.npes);
    double *slots = shmem_calloc((size_t)b.npes + 1, sizeof(double)); /* + agree_reps' */
    long *bad = shmem_calloc(1, sizeof(long)); /* on PE 0: wrong words over all PEs */
    memset(src, 0, MAX_BYTES * (size_t)b.npes);
    memset(dst, 0, MAX_BYTES * (size_t)b.npes);
#if !TEAM_FORM
    for (int k = 0; k < 2; k++) {
        psync[k] = shmem_malloc(PSYNC_LEN * sizeof(long));
        pwrk[k] = shmem_malloc(PWRK_LEN * sizeof(long));
        for (int i = 0; i < PSYNC_LEN; i++) psync[k][i] = SHMEM_SYNC_VALUE;
    }
#endif
    const int nsizes = 3;
    const size_t sizes[3] = {8, 1024, MAX_BYTES};
    if (b.me == 0) {
#if TEAM_FORM
        printf("INFO coll_form team (OpenSHMEM 1.5): shmem_broadcastmem, shmem_fcollectmem, "
               "shmem_alltoallmem, shmem_long_sum_reduce on SHMEM_TEAM_WORLD\n");
#else
        printf("INFO coll_form active-set (OpenSHMEM 1.4%s): shmem_broadcast64, "
               "shmem_fcollect64, shmem_alltoall64, shmem_long_sum_to_all with pSync/pWrk\n",
               BENCH_SHMEM_15 ? " routines, forced by -DUSE_ACTIVE_SET" : "");
#endif
        printf("INFO coll_timing per iteration: collective + shmem_barrier_all; row = max over "
               "PEs of each PE's median batch mean; coll_barrier_npN = the barrier alone\n");
        fflush(stdout);
    }

    int small = b.npes <= 2 ? 1000 : 300, large = b.npes <= 2 ? 200 : 100;
    if (b.quick) {
        small /= 4;
        large /= 4;
    }
    char row[64], label[32];
    double bar = timed(-1, 0, small, slots);
    double fig[NOPS][3];
    for (int o = 0; o < NOPS; o++) {
        for (int s = 0; s < nsizes; s++) {
            size_t bytes = sizes[s], nelem = bytes / sizeof(long);
            for (long d = 0; d < b.npes; d++)
                for (size_t i = 0; i < nelem; i++)
                    src[d * nelem + i] = b.me * KPE + d * KDST + (long)i;
            for (size_t i = 0; i < nelem * (size_t)b.npes; i++) dst[i] = -1;
            fig[o][s] = timed(o, bytes, bytes >= MAX_BYTES ? large : small, slots);
            long wrong = check((enum op)o, nelem);
            if (wrong) shmem_long_atomic_add(bad, wrong, 0);
            shmem_barrier_all();
            if (b.me == 0) {
                long v = shmem_long_atomic_fetch(bad, 0);
                shmem_long_atomic_set(bad, 0, 0);
                size_label(bytes, label, sizeof label);
                snprintf(row, sizeof row, "%s_%s_np%d", op_name[o], label, b.npes);
                if (v) printf("CHECK %s FAIL %ld wrong words over all PEs\n", row, v);
                else printf("CHECK %s ok\n", row);
                result(row, fig[o][s] * 1e6, "us");
                fflush(stdout);
            }
            shmem_barrier_all();
        }
    }
    if (b.me == 0) {
        snprintf(row, sizeof row, "coll_barrier_np%d", b.npes);
        result(row, bar * 1e6, "us");
        printf("# %d PEs, %s form; us per iteration (op + barrier_all), and minus the barrier "
               "(%.3f us)\n",
               b.npes, TEAM_FORM ? "team" : "active-set", bar * 1e6);
        printf("# %-12s", "op");
        for (int s = 0; s < nsizes; s++)
            printf(" %10s B %8s", size_label(sizes[s], label, sizeof label), "-bar");
        printf("\n");
        for (int o = 0; o < NOPS; o++) {
            printf("# %-12s", op_name[o]);
            for (int s = 0; s < nsizes; s++)
                printf(" %12.3f %8.3f", fig[o][s] * 1e6, (fig[o][s] - bar) * 1e6);
            printf("\n");
        }
        fflush(stdout);
    }
    bench_done(&b);
    return 0;
}
