/* Put and get bandwidth and message rate, PE 0 -> PE 1 (2 PEs; others idle), 1 B to 4 MiB in
 * powers of 4, in windows of W messages to the same destination:
 *
 *   put:     W x shmem_putmem     then shmem_quiet   (as OSU osu_oshm_put_mr)
 *   put_nbi: W x shmem_putmem_nbi then shmem_quiet   (as OSU osu_oshm_put_mr_nb)
 *   get:     W x shmem_getmem     (blocking, so no quiet)
 *   get_nbi: W x shmem_getmem_nbi then shmem_quiet   (as OSU osu_oshm_get_mr_nb)
 *
 * W = 64, or fewer for large messages (at most 64 MiB per window, at least 4 messages). A batch
 * is several windows; the figure is the median of the batch means of the time per message:
 * <op>_bw_<size> in GB/s (1e9 B/s) and <op>_mr_<size> in million messages per second. Unlike
 * OSU, every message of a window goes to the same offset (the buffers stay at 2 x 4 MiB), so
 * data that fits in the caches stays there, as in the memcpy calibration. PE 1 waits in
 * shmem_barrier_all meanwhile. Run: osh_bw [-q]. */
#include "common.h"

enum op { PUT, PUT_NBI, GET, GET_NBI, NOPS };
static const char *op_name[NOPS] = {"put", "put_nbi", "get", "get_nbi"};

static double batch(enum op op, uint8_t *sym_dst, uint8_t *sym_src, size_t n, int window,
                    int windows) {
    double t0 = now_sec();
    for (int w = 0; w < windows; w++) {
        switch (op) {
        case PUT:
            for (int i = 0; i < window; i++) shmem_putmem(sym_dst, sym_src, n, 1);
            shmem_quiet();
            break;
        case PUT_NBI:
            for (int i = 0; i < window; i++) shmem_putmem_nbi(sym_dst, sym_src, n, 1);
            shmem_quiet();
            break;
        case GET:
            for (int i = 0; i < window; i++) shmem_getmem(sym_dst, sym_src, n, 1);
            break;
        case GET_NBI:
            for (int i = 0; i < window; i++) shmem_getmem_nbi(sym_dst, sym_src, n, 1);
            shmem_quiet();
            break;
        default: break;
        }
    }
    return (now_sec() - t0) / ((double)window * windows);
}

int main(int argc, char **argv) {
    struct bench b;
    bench_init(&b, argc, argv);
    if (b.npes < 2) {
        if (b.me == 0) fprintf(stderr, "osh_bw needs at least 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    uint8_t *src = shmem_malloc(P2P_MAX_SIZE);
    uint8_t *dst = shmem_malloc(P2P_MAX_SIZE);
    memset(src, 0, P2P_MAX_SIZE);
    memset(dst, 0, P2P_MAX_SIZE);
    long *bad = shmem_calloc(1, sizeof(long));
    if (b.me == 0) {
        printf("INFO bw windows of W messages to one destination then shmem_quiet (none after "
               "blocking gets); W=64, fewer above 1 MiB; PE 0 -> PE 1, heap buffers\n");
        printf("# %-10s", "size");
        for (int o = 0; o < NOPS; o++) printf(" %9s GB/s %6s Mmsg/s", op_name[o], "");
        printf("\n");
    }
    shmem_barrier_all();

    char label[32], row[64];
    for (size_t n = P2P_MIN_SIZE; n <= P2P_MAX_SIZE; n *= P2P_SIZE_STEP) {
        int window = 64;
        while (window > 4 && (size_t)window * n > ((size_t)64 << 20)) window /= 2;
        /* windows per batch: about 16 MiB per batch, 1 to 64 windows */
        long w = (16l << 20) / ((long)n * window);
        int windows = w < 1 ? 1 : w > 64 ? 64 : (int)w;
        if (b.quick) windows = windows / 4 > 1 ? windows / 4 : 1;
        double bw[NOPS], mr[NOPS];
        for (int o = 0; o < NOPS; o++) {
            shmem_barrier_all();
            if (b.me == 0) {
                double t[MAX_BATCHES];
                batch((enum op)o, dst, src, n, window, windows);
                for (int i = 0; i < b.batches; i++)
                    t[i] = batch((enum op)o, dst, src, n, window, windows);
                double per_msg = median_of(t, b.batches);
                bw[o] = (double)n / per_msg * 1e-9;
                mr[o] = 1e-6 / per_msg;
            }
        }
        /* a check: one put of a pattern, read back on PE 1 */
        if (b.me == 0) {
            for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 31u + n);
            shmem_putmem_nbi(dst, src, n, 1);
            shmem_quiet();
        }
        shmem_barrier_all();
        if (b.me == 1) {
            size_t badb = 0;
            for (size_t i = 0; i < n; i++) badb += dst[i] != (uint8_t)(i * 31u + n);
            if (badb) shmem_long_atomic_inc(bad, 0);
        }
        if (b.me == 0) {
            size_label(n, label, sizeof label);
            for (int o = 0; o < NOPS; o++) {
                snprintf(row, sizeof row, "%s_bw_%s", op_name[o], label);
                result(row, bw[o], "GB/s");
                snprintf(row, sizeof row, "%s_mr_%s", op_name[o], label);
                result(row, mr[o], "Mmsg/s");
            }
            printf("# %-10zu", n);
            for (int o = 0; o < NOPS; o++) printf(" %14.3f %13.3f", bw[o], mr[o]);
            printf("\n");
            fflush(stdout);
        }
        shmem_barrier_all();
    }
    if (b.me == 0) {
        long v = shmem_long_atomic_fetch(bad, 0);
        if (v) printf("CHECK bw_put_nbi_data FAIL %ld sizes delivered wrong bytes\n", v);
        else printf("CHECK bw_put_nbi_data ok\n");
        fflush(stdout);
    }
    bench_done(&b);
    return 0;
}
