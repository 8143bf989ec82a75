/* The parts of the C ABI that Rust cannot express: `long double` by value and its arithmetic.
 * Compiled into libshmem by build.rs (the cc crate). The exported entry points are Rust
 * trampolines (src/longdouble.rs) that jump here, since a Rust cdylib exports only the symbols
 * Rust defines. */
#include <stddef.h>

typedef struct shmem_ctx_opaque *shmem_ctx_t;
extern void shmem_ctx_longdouble_put(shmem_ctx_t ctx, long double *dest, const long double *source,
                                     size_t nelems, int pe);
extern void shmem_ctx_longdouble_get(shmem_ctx_t ctx, long double *dest, const long double *source,
                                     size_t nelems, int pe);
extern shmem_ctx_t SHMEM_CTX_DEFAULT;

void shmem_rs_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe) {
    shmem_ctx_longdouble_put(ctx, dest, &value, 1, pe);
}

void shmem_rs_longdouble_p(long double *dest, long double value, int pe) {
    shmem_ctx_longdouble_put(SHMEM_CTX_DEFAULT, dest, &value, 1, pe);
}

long double shmem_rs_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe) {
    long double value = 0;
    shmem_ctx_longdouble_get(ctx, &value, source, 1, pe);
    return value;
}

long double shmem_rs_longdouble_g(const long double *source, int pe) {
    long double value = 0;
    shmem_ctx_longdouble_get(SHMEM_CTX_DEFAULT, &value, source, 1, pe);
    return value;
}

/* `*acc = *acc op *other` for the reductions (op: 3 max, 4 min, 5 sum, 6 prod, as
 * shmem_core::ReduceOp's order And, Or, Xor, Max, Min, Sum, Prod). */
void shmem_rs_longdouble_combine(int op, void *acc, const void *other) {
    long double *a = acc;
    long double b = *(const long double *)other;
    switch (op) {
    case 3: *a = *a > b ? *a : b; break;
    case 4: *a = *a < b ? *a : b; break;
    case 5: *a = *a + b; break;
    case 6: *a = *a * b; break;
    default: break;
    }
}
