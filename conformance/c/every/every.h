/* every.h: what the every-symbol program's two halves share. The typed routines are called
 * from C that core/capi/lib/tests/every_symbol/generator.rs writes from the type table; the
 * untyped ones from untyped.c, which also holds main. The program runs on exactly 2 PEs. */
#ifndef SHMEM_RS_EVERY_H
#define SHMEM_RS_EVERY_H

#include <shmem.h>
#include <complex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* This PE and the other one. */
extern int every_me, every_peer;
/* A context of this PE's own (shmem_ctx_create), for the shmem_ctx_* forms. */
extern shmem_ctx_t every_ctx;
/* Three symmetric regions of EVERY_REGION bytes each, 64-byte aligned: the destination of a
 * remote write (or the target of an atomic), a symmetric source, and signal words. */
#define EVERY_REGION 4096
extern unsigned char *every_d, *every_s, *every_g;

/* Reports a failed check of `symbol` (PE, symbol, what was expected and what was found) and
 * counts it, unless the generator lists the check in KNOWN_FAILURES: then it is counted apart. */
void every_fail(const char *symbol, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define EXPECT(cond, symbol, ...)                                                           \
    do {                                                                                    \
        if (!(cond)) every_fail(symbol, __VA_ARGS__);                                       \
    } while (0)

/* Generated: 1 when KNOWN_FAILURES lists this failed check of `symbol`, by a part of `message`. */
int every_known(const char *symbol, const char *message);
/* Generated: every typed routine, and the deprecated active-set collectives. */
void every_typed(void);
void every_active_set(void);

#endif
