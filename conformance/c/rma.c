/* rma.c: setup, the symmetric heap and RMA through the OpenSHMEM C API, on any number of PEs.
 * Values that do not fit a narrower type catch a wrapper of the wrong type; the elements
 * around each target must stay untouched. Exits non-zero on the first failed check. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

/* put, get, p and g of one typed family into the right neighbour, with guard elements. */
#define TYPED(NAME, TYPE, V0, V1)                                                         \
    do {                                                                                  \
        TYPE *buf = shmem_calloc(6, sizeof(TYPE));                                        \
        TYPE src[2] = {(TYPE)(V0), (TYPE)(V1)}, back[2];                                  \
        shmem_##NAME##_put(buf + 1, src, 2, right);                                       \
        shmem_##NAME##_p(buf + 4, (TYPE)(V1), right);                                     \
        shmem_barrier_all();                                                              \
        CHECK(buf[0] == 0 && buf[3] == 0 && buf[5] == 0, #NAME ": a guard element changed"); \
        CHECK(buf[1] == (TYPE)(V0) && buf[2] == (TYPE)(V1), #NAME "_put: wrong value");   \
        CHECK(buf[4] == (TYPE)(V1), #NAME "_p: wrong value");                             \
        shmem_##NAME##_get(back, buf + 1, 2, right);                                      \
        CHECK(back[0] == (TYPE)(V0) && back[1] == (TYPE)(V1), #NAME "_get: wrong value"); \
        CHECK(shmem_##NAME##_g(buf + 4, left) == (TYPE)(V1), #NAME "_g: wrong value");    \
        shmem_barrier_all();                                                              \
        shmem_free(buf);                                                                  \
    } while (0)

int main(void) {
    double t0 = shmemx_wtime(); /* an extension of shmemx.h, usable before init */
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    CHECK(n >= 1 && me >= 0 && me < n, "my_pe %d of %d", me, n);

    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version %d.%d", major, minor);
    CHECK(strcmp(name, SHMEM_VENDOR_STRING) == 0, "vendor \"%s\"", name);

    TYPED(char, char, 'x', -3);
    TYPED(schar, signed char, -128, 127);
    TYPED(short, short, -32768, 0x7ffe);
    TYPED(int, int, -2147483647, 0x7ffffffe);
    TYPED(long, long, 0x0123456789ABCDEFL, -0x0123456789ABCDEFL);
    TYPED(longlong, long long, 0x0123456789ABCDEFLL, -5);
    TYPED(uchar, unsigned char, 0xfe, 0x81);
    TYPED(ushort, unsigned short, 0xfffe, 0x8001);
    TYPED(uint, unsigned int, 0xfffffffeu, 0x80000001u);
    TYPED(ulong, unsigned long, 0xfedcba9876543210ul, 1);
    TYPED(ulonglong, unsigned long long, 0xfedcba9876543210ull, 2);
    TYPED(float, float, 1.5f, -2.25f);
    TYPED(double, double, 3.141592653589793, -1e300);
    TYPED(longdouble, long double, 1.0L / 3.0L, -2.5e4000L);
    TYPED(int8, int8_t, -100, 100);
    TYPED(int16, int16_t, -30000, 30000);
    TYPED(int32, int32_t, -2000000000, 2000000000);
    TYPED(int64, int64_t, 0x0123456789ABCDEFLL, -0x0123456789ABCDEFLL);
    TYPED(uint8, uint8_t, 250, 5);
    TYPED(uint16, uint16_t, 65000, 5);
    TYPED(uint32, uint32_t, 4000000000u, 5);
    TYPED(uint64, uint64_t, 0xfedcba9876543210ull, 5);
    TYPED(size, size_t, (size_t)-2, 7);
    TYPED(ptrdiff, ptrdiff_t, -0x0123456789ABCDEFLL, 7);

    /* Sized, byte and non-blocking forms, and long double as bytes. */
    uint64_t *w = shmem_calloc(16, 8);
    uint64_t pattern[4] = {0x0123456789ABCDEFull, 2, 3, 4}, got[4] = {0};
    shmem_put64(w, pattern, 4, right);
    shmem_put32(w + 4, pattern, 2, right);
    shmem_putmem(w + 6, pattern, 8, right);
    shmem_put64_nbi(w + 8, pattern, 4, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(w[0] == pattern[0] && w[3] == 4, "put64");
    CHECK(w[4] == pattern[0] && w[5] == 0, "put32 moved the wrong number of bytes");
    CHECK(w[6] == pattern[0] && w[7] == 0, "putmem");
    CHECK(w[8] == pattern[0] && w[11] == 4 && w[12] == 0, "put64_nbi");
    shmem_getmem_nbi(got, w + 8, 32, right);
    shmem_quiet();
    CHECK(got[0] == pattern[0] && got[3] == 4, "getmem_nbi");
    long double ld[2] = {1.25L, -3.5L}, ldb[2] = {0};
    long double *lds = shmem_calloc(2, sizeof(long double));
    shmem_longdouble_put(lds, ld, 2, right);
    shmem_barrier_all();
    shmem_longdouble_get(ldb, lds, 2, me);
    CHECK(ldb[0] == 1.25L && ldb[1] == -3.5L, "longdouble put/get");

    /* Strided: every other element out, every third element back. */
    int *s = shmem_calloc(12, sizeof(int));
    int seq[6] = {10, 11, 12, 13, 14, 15}, out[6] = {0};
    shmem_int_iput(s, seq, 2, 1, 6, right);
    shmem_barrier_all();
    for (int i = 0; i < 12; i++)
        CHECK(s[i] == (i % 2 == 0 ? 10 + i / 2 : 0), "iput element %d is %d", i, s[i]);
    shmem_int_iget(out, s, 1, 4, 3, me);
    CHECK(out[0] == 10 && out[1] == 12 && out[2] == 14 && out[3] == 0, "iget");

    /* Peers' memory through shmem_ptr, and the accessibility queries. */
    CHECK(shmem_ptr(s, me) == s, "shmem_ptr of this PE");
    CHECK(shmem_addr_accessible(s, right) == 1, "addr_accessible");
    int on_stack = 0; /* automatic variables are not symmetric (static ones are) */
    CHECK(shmem_addr_accessible(&on_stack, right) == 0, "a local variable is not symmetric");
    CHECK(shmem_addr_accessible(&failures, right) == 1, "a static variable is symmetric");
    CHECK(shmem_pe_accessible(n) == 0 && shmem_pe_accessible(right) == 1, "pe_accessible");

    /* Bad input is logged and changes nothing: a PE out of range, an address outside the heap. */
    shmem_int_p(s, 99, n);
    shmem_int_p(&on_stack, 99, right);
    shmem_barrier_all();
    CHECK(s[1] == 0, "a refused put wrote");

    /* Hints change nothing on the simulator; pcontrol only records the level. */
    void *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(h != NULL && shmem_addr_accessible(h, right), "malloc_with_hints");
    shmem_free(h);
    shmem_pcontrol(1);

    /* realloc keeps the contents. */
    int *r = shmem_malloc(4 * sizeof(int));
    for (int i = 0; i < 4; i++) r[i] = me * 100 + i;
    r = shmem_realloc(r, 1000 * sizeof(int));
    CHECK(r != NULL && r[3] == me * 100 + 3, "realloc");
    shmem_free(r);
    shmem_free(s);
    shmem_free(lds);
    shmem_free(w);

    shmem_barrier_all();
    double t1 = shmemx_wtime();
    CHECK(t0 >= 0 && t1 > t0 && t1 - t0 < 3600, "shmemx_wtime: %g then %g", t0, t1);
    if (failures == 0) printf("rma: PE %d of %d ok\n", me, n);
    shmem_finalize();
    return failures ? 1 : 0;
}
