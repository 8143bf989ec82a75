/* check.h: the failure counter and CHECK macro of the C conformance programs. A failed check
 * prints the PE, the place and the message, and the program exits non-zero at the end. */
#ifndef SHMEM_RS_CONFORMANCE_CHECK_H
#define SHMEM_RS_CONFORMANCE_CHECK_H

#include <shmem.h>
#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "PE %d: %s:%d: ", shmem_my_pe(), __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

#endif
