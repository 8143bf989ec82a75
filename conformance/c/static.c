/* static.c: the executable's global and static variables are symmetric objects (OpenSHMEM
 * "Symmetric Data Objects"): RMA, atomic, lock, wait, collective and shmem_ptr targets, under
 * PIE and ASLR, with the values they had before shmem_init; a fork child gets a private copy. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

/* .data (initialised) and .bss (zero) objects, each with guards on both sides. */
static long data_words[6] = {-1, 11, 22, 33, 44, -1};
static long bss_words[6];
long global_counter;             /* an external symbol too */
static long lock;
static int flag;
static long forked;
static long psync[SHMEM_BCAST_SYNC_SIZE];
static uint64_t bsrc[4], bdst[4];
static long rsrc[3], rdst[3];
static long set_before_init = 5;

int main(void) {
    set_before_init = 7; /* a write before init survives it */
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK(set_before_init == 7, "a global written before shmem_init lost its value: %ld", set_before_init);
    CHECK(data_words[1] == 11 && data_words[4] == 44, "initialised data changed at init");
    CHECK(shmem_addr_accessible(data_words, next), "a .data object is not accessible on PE %d", next);
    CHECK(shmem_addr_accessible(bss_words, next), "a .bss object is not accessible on PE %d", next);
    CHECK(shmem_ptr(&global_counter, me) == (void *)&global_counter, "shmem_ptr to self");
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* RMA into .data and .bss of the next PE; the guards stay. */
    long mine[4] = {0x0123456789ABCDEFL + me, -me, me * 1000L, 0x7EDCBA9876543210L};
    shmem_long_put(&data_words[1], mine, 4, next);
    shmem_long_put(&bss_words[1], mine, 4, next);
    shmem_long_p(&bss_words[0], 0, next); /* a single element, at the edge */
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) {
        long want = i == 0 ? 0x0123456789ABCDEFL + prev : i == 1 ? -prev : i == 2 ? prev * 1000L : 0x7EDCBA9876543210L;
        CHECK(data_words[1 + i] == want && bss_words[1 + i] == want, "put into static data [%d]", i);
    }
    CHECK(data_words[0] == -1 && data_words[5] == -1 && bss_words[5] == 0, "a guard changed");
    long got[4];
    shmem_long_get(got, &data_words[1], 4, next);
    CHECK(got[0] == 0x0123456789ABCDEFL + me, "get from static data");

    /* shmem_ptr to a peer's static object is a load/store address of it. */
    long *peer = shmem_ptr(&data_words[2], next);
    CHECK(peer != NULL && *peer == -me, "shmem_ptr to PE %d's .data", next);

    /* Atomics: every PE adds to PE 0's external global. */
    shmem_long_atomic_add(&global_counter, me + 1, 0);
    long before = shmem_long_atomic_fetch_add(&global_counter, 0, 0);
    (void)before;
    shmem_barrier_all();
    if (me == 0) CHECK(global_counter == (long)n * (n + 1) / 2, "atomic_add on a global: %ld", global_counter);

    /* A static lock guarding a read-modify-write of PE 0's .bss word. */
    shmem_barrier_all();
    for (int k = 0; k < 10; k++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&bss_words[0], 0);
        shmem_long_p(&bss_words[0], v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(bss_words[0] == 10L * n, "locked increments: %ld", bss_words[0]);

    /* wait_until on a static flag set by the previous PE. */
    shmem_int_atomic_set(&flag, me + 1, next);
    shmem_int_wait_until(&flag, SHMEM_CMP_EQ, prev + 1);
    CHECK(flag == prev + 1, "wait_until on a static int");

    /* Collectives on static buffers with a static pSync. */
    for (int i = 0; i < 4; i++) bsrc[i] = 0xFEDCBA9876543210ULL + (uint64_t)i;
    shmem_broadcast64(bdst, bsrc, 4, 0, 0, 0, n, psync);
    if (me != 0) CHECK(bdst[3] == 0xFEDCBA9876543213ULL, "broadcast64 into .bss");
    for (int i = 0; i < 3; i++) rsrc[i] = me + i;
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, rdst, rsrc, 3) == 0, "sum_reduce on static data");
    CHECK(rdst[2] == (long)n * (n - 1) / 2 + 2L * n, "sum_reduce result %ld", rdst[2]);

    /* fork: the child's writes stay in the child. */
    shmem_barrier_all();
    pid_t child = fork();
    if (child == 0) {
        forked = 42;
        data_words[1] = 4242;
        _exit(forked == 42 ? 0 : 3);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child");
    CHECK(forked == 0 && data_words[1] != 4242, "a fork child's write reached the parent");
    /* ... and after the fork the parent's static data is still symmetric. */
    shmem_barrier_all();
    shmem_long_p(&forked, 100 + me, next);
    shmem_barrier_all();
    CHECK(forked == 100 + prev, "a put after fork: %ld", forked);

    if (failures == 0) printf("static: PE %d of %d ok\n", me, n);
    shmem_finalize();
    /* Static data stays usable after finalize. */
    data_words[0] = 9;
    return failures ? 1 : 0;
}
