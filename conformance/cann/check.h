// check.h: the checks of the CANN conformance programs. CHECK(cond, fmt, ...) reports a failed
// condition with the file and line and counts it in `failures`; EQ(call, want) evaluates the call
// once and reports what it gave. A program exits non-zero when `failures` is not 0.
#ifndef SHMEM_RS_CANN_CHECK_H
#define SHMEM_RS_CANN_CHECK_H

#include <cstdio>

static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            std::fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);              \
            std::fprintf(stderr, __VA_ARGS__);                                \
            std::fputc('\n', stderr);                                         \
            failures++;                                                       \
        }                                                                     \
    } while (0)

#define EQ(call, want)                                                                          \
    do {                                                                                        \
        const auto got_ = (call);                                                               \
        CHECK(got_ == (want), "%s gave %lld, want %lld", #call, (long long)got_, (long long)(want)); \
    } while (0)

#endif /* SHMEM_RS_CANN_CHECK_H */
