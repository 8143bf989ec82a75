/* p2p.c: point-to-point waits and tests, put-with-signal, signals and locks through the
 * OpenSHMEM C API. Exits non-zero on the first failed check. */
#include <shmem.h>
#include <stdio.h>
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    long *flags = shmem_calloc((size_t)n, sizeof(long));
    uint64_t *sig = shmem_calloc(2, sizeof(uint64_t));
    int *data = shmem_calloc(64, sizeof(int));
    long *lock = shmem_calloc(1, sizeof(long));
    long *counter = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();

    /* Every PE raises its flag on PE 0, which waits for all of them in several ways. */
    shmem_long_p(&flags[me], me + 1, 0);
    if (me == 0) {
        shmem_long_wait_until_all(flags, (size_t)n, NULL, SHMEM_CMP_GT, 0);
        CHECK(shmem_long_test_all(flags, (size_t)n, NULL, SHMEM_CMP_GT, 0) == 1, "test_all");
        size_t any = shmem_long_wait_until_any(flags, (size_t)n, NULL, SHMEM_CMP_EQ, (long)n);
        CHECK(any == (size_t)(n - 1), "wait_until_any found %zu", any);
        size_t idx[64];
        size_t k = shmem_long_test_some(flags, (size_t)n, idx, NULL, SHMEM_CMP_GE, 1);
        CHECK(k == (size_t)n && idx[0] == 0, "test_some found %zu", k);
        long want[64];
        for (int i = 0; i < n; i++) want[i] = i + 1;
        shmem_long_wait_until_all_vector(flags, (size_t)n, NULL, SHMEM_CMP_EQ, want);
        int status[64] = {0};
        status[0] = 1; /* excluded */
        CHECK(shmem_long_test_any(flags, 1, status, SHMEM_CMP_EQ, 1) == SIZE_MAX,
              "an excluded element was found");
        CHECK(shmem_long_test(&flags[0], SHMEM_CMP_EQ, 1) == 1, "test");
        CHECK(shmem_long_test_all(flags, 0, NULL, SHMEM_CMP_EQ, 99) == 1, "test_all of nothing");
    }
    shmem_barrier_all();

    /* Put-with-signal around the ring: the data is there once the signal is. */
    int payload[64];
    for (int i = 0; i < 64; i++) payload[i] = me * 1000 + i;
    shmem_int_put_signal(data, payload, 64, &sig[0], 7, SHMEM_SIGNAL_SET, right);
    uint64_t got = shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, 7);
    CHECK(got == 7, "signal_wait_until returned %llu", (unsigned long long)got);
    CHECK(data[0] == left * 1000 && data[63] == left * 1000 + 63, "put_signal data");
    shmem_barrier_all();
    /* Signal adds from every PE (1.6), and the sized non-blocking form with ADD. */
    shmem_signal_add(&sig[1], 2, 0);
    shmem_put32_signal_nbi(data, payload, 1, &sig[1], 1, SHMEM_SIGNAL_ADD, 0);
    shmem_quiet();
    if (me == 0) {
        shmem_uint64_wait_until(&sig[1], SHMEM_CMP_EQ, 3 * (uint64_t)n);
        CHECK(shmem_signal_fetch(&sig[1]) == 3 * (uint64_t)n, "signal adds");
    }
    shmem_barrier_all();

    /* A lock around a read-modify-write of a counter on PE 0. */
    for (int i = 0; i < 20; i++) {
        shmem_set_lock(lock);
        long c = shmem_long_g(counter, 0);
        shmem_long_p(counter, c + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    CHECK(shmem_long_g(counter, 0) == 20L * n, "lock: counter %ld", shmem_long_g(counter, 0));
    if (me == 0) {
        CHECK(shmem_test_lock(lock) == 0, "test_lock on a free lock");
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();

    /* Bad input is refused: a bad comparison, a word outside the heap. */
    CHECK(shmem_long_test(&flags[0], 42, 0) == 0, "a bad comparison matched");
    long local = 0;
    CHECK(shmem_long_test(&local, SHMEM_CMP_EQ, 0) == 0, "a word outside the heap");

    shmem_free(counter);
    shmem_free(lock);
    shmem_free(data);
    shmem_free(sig);
    shmem_free(flags);
    if (failures == 0) printf("p2p: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
