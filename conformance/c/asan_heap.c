/* asan_heap.c: AddressSanitizer sees the symmetric heap (built with -fsanitize=address).
 *
 *   asan_heap inside      writes every byte of a 13-byte shmem_malloc block and of a
 *                         shmem_calloc'd and a shmem_realloc'd one, frees them: no report.
 *   asan_heap overrun     writes the byte just past a 13-byte block: AddressSanitizer reports
 *                         it (use-after-poison) and the PE ends.
 *   asan_heap after-free  writes into a block after shmem_free: reported likewise.
 *
 * Every PE that completes its part prints "PE <n> ok". */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "inside";
    shmem_init();
    int me = shmem_my_pe();
    volatile char *p = shmem_malloc(13);
    CHECK(p != NULL, "shmem_malloc(13) failed");
    if (!strcmp(mode, "overrun") && me == 0) {
        p[13] = 1;
        printf("PE 0 wrote past its block unreported\n");
        return 1;
    }
    for (int i = 0; i < 13; i++) p[i] = (char)i;
    long *z = shmem_calloc(3, sizeof(long));
    CHECK(z != NULL && z[0] == 0 && z[2] == 0, "shmem_calloc(3, 8) failed or is not zeroed");
    z[2] = 7;
    long *r = shmem_realloc(z, 64 * sizeof(long));
    CHECK(r != NULL && r[2] == 7, "shmem_realloc kept not the contents");
    r[63] = 1;
    shmem_barrier_all();
    shmem_free((void *)p);
    if (!strcmp(mode, "after-free") && me == 0) {
        p[0] = 1;
        printf("PE 0 wrote into a freed block unreported\n");
        return 1;
    }
    shmem_free(r);
    shmem_finalize();
    if (!failures) printf("PE %d ok\n", me);
    return failures != 0;
}
