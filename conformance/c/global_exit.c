/* global_exit.c: shmem_global_exit(status) from one PE ends every PE of the job, including
 * PEs blocked in a barrier, and the job's exit status is that status. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *flag = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    if (me == n - 1) {
        printf("global_exit: PE %d exits the job with 7\n", me);
        fflush(stdout);
        shmem_global_exit(7);
        printf("global_exit: PE %d returned from shmem_global_exit\n", me);
        return 1;
    }
    /* The other PEs wait for a value nobody writes: only the global exit ends them. */
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
    printf("global_exit: PE %d passed a wait nobody satisfied\n", me);
    shmem_finalize();
    return 1;
}
