/* osh_idle.c: what a PE blocked in a barrier costs the machine. PE 1 sleeps SECONDS (default
 * 10) before it enters shmem_barrier_all; every other PE enters at once and waits. PE 0 prints
 * the CPU time (user + system, getrusage) it used while blocked, and that time as a share of
 * the wait: a library that sleeps while it waits uses almost none.
 *
 *   osh_idle [SECONDS]     (2 PEs or more)
 *
 * RESULT idle_cpu_share <percent> %; RESULT idle_wait <seconds> s */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_sec(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    shmem_init();
    int me = shmem_my_pe();
    if (shmem_n_pes() < 2) {
        if (me == 0) fprintf(stderr, "osh_idle: needs 2 PEs or more\n");
        shmem_finalize();
        return 2;
    }
    shmem_barrier_all();
    if (me == 1) {
        struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&ts, NULL);
    }
    double t0 = now_sec(), c0 = cpu_sec();
    shmem_barrier_all();
    double wait = now_sec() - t0, cpu = cpu_sec() - c0;
    if (me == 0) {
        printf("RESULT idle_wait %.3f s\n", wait);
        printf("RESULT idle_cpu_share %.3f %%\n", 100.0 * cpu / wait);
        printf("DONE\n");
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
