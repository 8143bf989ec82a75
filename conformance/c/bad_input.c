/* bad_input.c: bad input to every family of the OpenSHMEM C API is refused, with one logged line
 * per call and the specification's return value, and corrupts nothing: PEs out of range,
 * addresses outside symmetric memory, misaligned or null addresses, invalid handles, sizes and
 * strides that overflow, unknown options. Guard words around every target must stay as they
 * were, and the library must still work afterwards. Collective calls get the same bad argument
 * on every PE, so every PE refuses alike. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include "check.h"

#define GUARD 0x5A5A5A5A5A5A5A5ALL

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;
    long *heap = shmem_malloc(16 * sizeof(long));
    uint64_t *sig = shmem_malloc(2 * sizeof(uint64_t));
    long on_stack[4] = {1, 2, 3, 4};
    for (int i = 0; i < 16; i++) heap[i] = GUARD;
    sig[0] = sig[1] = 0;
    shmem_barrier_all();

    /* setup and query */
    CHECK(shmem_pe_accessible(-1) == 0 && shmem_pe_accessible(n) == 0, "pe_accessible out of range");
    CHECK(shmem_addr_accessible(NULL, next) == 0, "addr_accessible(NULL)");
    CHECK(shmem_addr_accessible(on_stack, next) == 0, "addr_accessible of the stack");
    CHECK(shmem_addr_accessible(heap, n) == 0, "addr_accessible on a PE out of range");
    CHECK(shmem_ptr(on_stack, next) == NULL && shmem_ptr(heap, -1) == NULL, "shmem_ptr refused");

    /* heap: collective, the same bad size on every PE */
    CHECK(shmem_malloc(SIZE_MAX) == NULL, "malloc(SIZE_MAX)");
    CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflow");
    CHECK(shmem_align(3, 64) == NULL, "align to a non-power of two");
    long *still = shmem_malloc(sizeof(long));
    CHECK(still != NULL, "the heap works after refused allocations");
    shmem_free(still);

    /* RMA */
    long v[4] = {7, 7, 7, 7};
    shmem_long_put(heap + 4, v, 1, n);                  /* PE out of range */
    shmem_long_put(heap + 4, v, 1, -1);
    shmem_long_put(on_stack, v, 1, next);               /* not symmetric */
    shmem_long_put(heap + 4, v, SIZE_MAX / 4, next);    /* an overflowing size */
    shmem_long_iput(heap + 4, v, PTRDIFF_MAX, 1, 2, next); /* an overflowing stride */
    shmem_putmem(NULL, v, 8, next);
    shmem_long_p(heap + 4, 9, n);
    CHECK(shmem_long_g(heap + 4, n) == 0, "g from a PE out of range gives 0");
    shmem_long_ibput(heap + 4, v, 2, 2, 1, SIZE_MAX / 2, next); /* overflowing blocks */
    shmem_quiet();
    shmem_barrier_all();
    CHECK(heap[4] == GUARD && heap[5] == GUARD, "a refused put wrote");

    /* AMO */
    CHECK(shmem_long_atomic_fetch_add(heap + 6, 1, n) == 0, "fetch_add on a PE out of range");
    CHECK(shmem_long_atomic_fetch_add(on_stack, 1, next) == 0, "fetch_add on the stack");
    CHECK(shmem_long_atomic_fetch((long *)((char *)heap + 3), next) == 0, "a misaligned fetch");
    shmem_long_atomic_add(heap + 6, 1, -5);
    shmem_int_atomic_set((int *)on_stack, 1, next);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(heap[6] == GUARD && on_stack[0] == 1, "a refused atomic wrote");

    /* signals */
    shmem_putmem_signal(heap + 7, v, 8, sig, 1, 7, next);       /* unknown signal operation */
    shmem_putmem_signal(heap + 7, v, 8, (uint64_t *)on_stack, 1, SHMEM_SIGNAL_SET, next);
    shmem_putmem_signal(heap + 7, v, 8, sig, 1, SHMEM_SIGNAL_ADD, n);
    shmem_signal_add((uint64_t *)on_stack, 1, next);
    CHECK(shmem_signal_fetch((uint64_t *)on_stack) == 0, "signal_fetch of the stack");
    CHECK(shmem_signal_wait_until((uint64_t *)on_stack, SHMEM_CMP_EQ, 1) == 0, "signal_wait_until on the stack returns");
    shmem_quiet();
    shmem_barrier_all();
    CHECK(sig[0] == 0 && heap[7] == GUARD, "a refused put-with-signal wrote");

    /* point-to-point */
    shmem_long_wait_until(on_stack, SHMEM_CMP_EQ, 99);          /* not symmetric: returns */
    shmem_long_wait_until(heap + 8, 42, (long)GUARD);           /* an unknown comparison */
    CHECK(shmem_long_test(heap + 8, -1, 0) == 0, "test with a bad comparison");
    CHECK(shmem_long_test_all(on_stack, 2, NULL, SHMEM_CMP_EQ, 1) == 0, "test_all on the stack");

    /* locks */
    shmem_set_lock(on_stack);                                   /* not symmetric: refused, no hang */
    CHECK(shmem_test_lock(NULL) != 0, "test_lock(NULL) does not take a lock");
    shmem_clear_lock(on_stack);

    /* contexts */
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(1L << 20, &ctx) != 0 && ctx == SHMEM_CTX_INVALID, "unknown context options");
    shmem_ctx_t fake = (shmem_ctx_t)(void *)&on_stack[1];
    shmem_ctx_quiet(fake);
    shmem_ctx_long_put(fake, heap + 9, v, 1, next);
    shmem_ctx_destroy(fake);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    shmem_team_t t = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(fake, &t) != 0 && t == SHMEM_TEAM_INVALID, "ctx_get_team of a made-up context");

    /* teams */
    shmem_team_t bad = (shmem_team_t)(void *)&on_stack[2], out = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &out) != 0 && out == SHMEM_TEAM_INVALID, "split of no team");
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n + 1, NULL, 0, &out) != 0, "split larger than the parent");
    CHECK(shmem_team_sync(bad) != 0 && shmem_team_my_pe(bad) == -1 && shmem_team_n_pes(bad) == -1, "a made-up team");
    CHECK(shmem_team_translate_pe(bad, 0, SHMEM_TEAM_WORLD) == -1, "translate from a made-up team");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, n, SHMEM_TEAM_WORLD) == -1, "translate a PE out of range");
    CHECK(shmem_team_create_ctx(bad, 0, &ctx) != 0, "context on a made-up team");
    CHECK(shmem_team_ptr(bad, heap, 0) == NULL, "team_ptr of a made-up team");
    shmem_team_destroy(bad);
    shmem_team_destroy(SHMEM_TEAM_INVALID);

    /* collectives: the same bad argument on every PE */
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, heap + 10, heap, 1, n) != 0, "broadcast from a root out of range");
    CHECK(shmem_long_broadcast(bad, heap + 10, heap, 1, 0) != 0, "broadcast on a made-up team");
    CHECK(shmem_long_alltoalls(SHMEM_TEAM_WORLD, heap + 10, heap, 0, 1, 1) != 0, "alltoalls with a zero stride");
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, heap + 10, on_stack, 1) != 0, "reduce from the stack");
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, heap + 10, heap, SIZE_MAX / 2) != 0, "fcollect overflow");
    shmem_barrier_all();
    CHECK(heap[10] == GUARD && heap[11] == GUARD, "a refused collective wrote");

    /* 1.6 */
    int pes[2] = {next, n};
    shmem_pe_quiet(pes, 2);                                     /* a PE out of range: refused */
    shmem_pe_quiet(NULL, 1);

    /* Everything still works. */
    shmem_long_p(heap + 12, 100 + me, next);
    shmem_barrier_all();
    CHECK(heap[12] == 100 + (me + n - 1) % n, "a put after the refused calls");
    shmem_free(sig);
    shmem_free(heap);
    if (failures == 0) printf("bad_input: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
