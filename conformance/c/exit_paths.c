/* exit_paths.c: how a PE leaves, and what a process may do after shmem_init.
 *
 *   exit_paths return  legacy start_pes program; PE 0 returns from main without finalize
 *                      right after a barrier, and must stay in the job (its implicit
 *                      finalize) until the others, one second later, have read its memory.
 *   exit_paths exit    the same, PE 0 calling exit(0).
 *   exit_paths fork    after shmem_init, system() and a forked child that exits (running the
 *                      exit handlers) and one that returns from main; the parent PE goes on
 *                      with a barrier, a ring get and finalize.
 *   exit_paths die <how> <where>
 *                      PE 2 of 4 ends itself one second after the others are blocked in
 *                      <where> (barrier: shmem_barrier_all; wait: shmem_long_wait_until on a
 *                      word PE 2 would set); <how> is kill (SIGKILL), _exit (status 3, no
 *                      exit handlers) or exit (status 3: a failing PE does not finalize at
 *                      exit). The survivors must not return.
 *   exit_paths ring    every PE passes a barrier, puts 1 into the next PE's word, waits for
 *                      its own, passes another barrier and finalizes: the calls where the
 *                      library's own fault points (SHMEM_FAULT, in a libshmem.so built with
 *                      the fault-injection feature) make a PE die, leave or stop.
 *   exit_paths maps <spare>
 *                      before shmem_init, fills this process's memory mappings up to
 *                      vm.max_map_count less <spare> (one region whose pages alternate
 *                      between two protections, so that each is a mapping of its own), then
 *                      runs the ring: init must succeed or fail naming vm.max_map_count.
 *   exit_paths hold    initialise, create $HOLD_DIR/pe<N>, then block forever in a wait on a
 *                      word nobody writes (for the launcher-death test).
 *   exit_paths sigbus  PE 1 of 2 stands for a system that cannot supply a page of its heap:
 *                      it maps an empty memory object over one page of a shmem_malloc block
 *                      (a page past the object's end, which the kernel answers with SIGBUS, as
 *                      it does when memory runs short), then touches it. The library must
 *                      name the heap, PE and sizes before the PE ends by SIGBUS.
 *
 * Every PE that completes its part prints "PE <n> ok". */
#define _GNU_SOURCE
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static long pid_of_pe0;
static long counter;
static long word;

/* Whether process `pid` exists and has not exited (a zombie's state is 'Z'). */
static int running(long pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

static int leave_early(int by_exit) {
    start_pes(0);
    int me = _my_pe(), n = _num_pes();
    if (me == 0) pid_of_pe0 = (long)getpid();
    shmem_barrier_all();
    if (me == 0) {
        printf("PE 0 leaves without finalize\n");
        fflush(stdout);
        if (by_exit) exit(0);
        return 0;
    }
    long pid0 = shmem_long_g(&pid_of_pe0, 0);
    sleep(1);
    CHECK(running(pid0), "PE 0 (pid %ld) is gone before the others finalized", pid0);
    long before = shmem_long_atomic_fetch_add(&counter, 1, 0);
    CHECK(before >= 0 && before < n - 1, "PE 0's counter read %ld", before);
    if (!failures) printf("PE %d ok\n", me);
    return failures != 0;
}

static int forks(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    word = me;
    shmem_barrier_all();
    CHECK(system("exit 0") == 0, "system() after shmem_init failed");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) exit(0); /* runs the exit handlers in the child */
    CHECK(child > 0, "fork failed");
    int status = -1;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the exiting child ended with status %#x", status);
    fflush(stdout);
    child = fork();
    if (child == 0) return -1; /* main returns in the child */
    CHECK(child > 0, "fork failed");
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the returning child ended with status %#x", status);
    shmem_barrier_all();
    long got = shmem_long_g(&word, (me + 1) % n);
    CHECK(got == (me + 1) % n, "ring get read %ld", got);
    shmem_barrier_all();
    shmem_finalize();
    if (!failures) printf("PE %d ok\n", me);
    return failures != 0;
}

static int die(const char *how, const char *where) {
    shmem_init();
    int me = shmem_my_pe();
    shmem_barrier_all();
    if (me == 2) {
        fflush(stdout);
        sleep(1);
        if (!strcmp(how, "kill")) raise(SIGKILL);
        if (!strcmp(how, "exit")) exit(3);
        _exit(3);
    }
    if (!strcmp(where, "barrier"))
        shmem_barrier_all();
    else
        shmem_long_wait_until(&word, SHMEM_CMP_EQ, 1);
    printf("PE %d returned from the %s although PE 2 is dead\n", me, where);
    return 1;
}

static int ring(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_barrier_all();
    shmem_long_p(&word, 1, (me + 1) % n);
    shmem_long_wait_until(&word, SHMEM_CMP_EQ, 1);
    shmem_barrier_all();
    shmem_finalize();
    printf("PE %d ok\n", me);
    return 0;
}

/* The lines of /proc/self/maps: this process's memory mappings. */
static long mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    long lines = 0;
    for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
    fclose(f);
    return lines;
}

static int maps(int spare) {
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    long max = 0;
    if (!f || fscanf(f, "%ld", &max) != 1) {
        printf("cannot read vm.max_map_count\n");
        return 1;
    }
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    long want = max - spare - mappings();
    if (want > (1L << 22)) {
        printf("vm.max_map_count = %ld: more mappings than this test makes\n", max);
        return 1;
    }
    if (want > 1) {
        char *region = mmap(NULL, (size_t)want * (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (region == MAP_FAILED) {
            printf("cannot map %ld pages\n", want);
            return 1;
        }
        for (long i = 1; i < want; i += 2)
            if (mprotect(region + i * page, (size_t)page, PROT_NONE) != 0) {
                printf("mprotect failed at page %ld of %ld\n", i, want);
                return 1;
            }
    }
    return ring();
}

static int hold(void) {
    shmem_init();
    const char *dir = getenv("HOLD_DIR");
    shmem_barrier_all();
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/pe%d", dir, shmem_my_pe());
        FILE *f = fopen(path, "w");
        if (f) fclose(f);
    }
    shmem_long_wait_until(&word, SHMEM_CMP_EQ, -1);
    return 1;
}

static int sigbus(void) {
    shmem_init();
    long page = sysconf(_SC_PAGESIZE);
    char *block = shmem_malloc(4 * (size_t)page);
    CHECK(block != NULL, "shmem_malloc failed");
    shmem_barrier_all();
    if (shmem_my_pe() == 1) {
        char *hole = (char *)(((unsigned long)block + (unsigned long)page) & ~(unsigned long)(page - 1));
        int fd = memfd_create("empty", MFD_CLOEXEC);
        CHECK(fd >= 0, "memfd_create failed");
        CHECK(mmap(hole, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == hole,
              "mmap failed");
        fflush(stdout);
        hole[0] = 1;
        printf("PE 1 wrote a page the system cannot supply\n");
        return 1;
    }
    shmem_barrier_all();
    printf("PE 0 passed a barrier without PE 1\n");
    return 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "return")) return leave_early(0);
    if (!strcmp(mode, "exit")) return leave_early(1);
    if (!strcmp(mode, "fork")) {
        int r = forks();
        return r < 0 ? 0 : r;
    }
    if (!strcmp(mode, "hold")) return hold();
    if (!strcmp(mode, "ring")) return ring();
    if (!strcmp(mode, "maps") && argc > 2) return maps(atoi(argv[2]));
    if (!strcmp(mode, "sigbus")) return sigbus();
    if (!strcmp(mode, "die") && argc > 3) return die(argv[2], argv[3]);
    fprintf(stderr, "usage: exit_paths return|exit|fork|hold|sigbus|die kill|_exit|exit barrier|wait\n");
    return 2;
}
