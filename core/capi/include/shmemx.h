/* shmemx.h: the extensions of shmem-rs to the OpenSHMEM C API (libshmem.so), beside shmem.h.
 * Programs written for other implementations include it for their own extensions; this one
 * declares what this library adds. */
#ifndef SHMEM_RS_SHMEMX_H
#define SHMEM_RS_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds on a monotonic clock from an arbitrary fixed point of this PE (not synchronised
 * across PEs), with nanosecond resolution: for timing code, as Sandia OpenSHMEM's. Callable
 * before shmem_init. */
double shmemx_wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_RS_SHMEMX_H */
