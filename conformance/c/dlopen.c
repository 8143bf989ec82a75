/* dlopen.c: a program that does not link libshmem.so but loads it with dlopen (as a Python
 * interpreter importing shmem4py does) keeps its own static data private: shmem_init remaps
 * nothing of it, and the heap works as usual. Built with plain cc; argv[1] is libshmem.so. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static long global_word = 3;
static int failures;

#define CHECK(cond, what)                                   \
    do {                                                    \
        if (!(cond)) {                                      \
            fprintf(stderr, "dlopen.c:%d: %s\n", __LINE__, what); \
            failures++;                                     \
        }                                                   \
    } while (0)

/* Whether the mapping holding `p` is private ('p' in /proc/self/maps). */
static int private_mapping(const void *p) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = -1;
    while (f && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
            found = perms[3] == 'p';
    }
    if (f) fclose(f);
    return found;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    void (*init)(void) = (void (*)(void))dlsym(lib, "shmem_init");
    void (*fin)(void) = (void (*)(void))dlsym(lib, "shmem_finalize");
    void (*barrier_all)(void) = (void (*)(void))dlsym(lib, "shmem_barrier_all");
    int (*my_pe)(void) = (int (*)(void))dlsym(lib, "shmem_my_pe");
    int (*n_pes)(void) = (int (*)(void))dlsym(lib, "shmem_n_pes");
    int (*accessible)(const void *, int) = (int (*)(const void *, int))dlsym(lib, "shmem_addr_accessible");
    void *(*smalloc)(size_t) = (void *(*)(size_t))dlsym(lib, "shmem_malloc");
    void (*long_p)(long *, long, int) = (void (*)(long *, long, int))dlsym(lib, "shmem_long_p");
    if (!init || !fin || !barrier_all || !my_pe || !n_pes || !accessible || !smalloc || !long_p) return 2;

    init();
    int me = my_pe(), n = n_pes();
    CHECK(global_word == 3, "a global changed at init");
    CHECK(!accessible(&global_word, (me + 1) % n), "static data of a dlopen-ing process was made symmetric");
    CHECK(private_mapping(&global_word) == 1, "static data of a dlopen-ing process is not a private mapping");
    long *heap = smalloc(sizeof(long));
    *heap = -1;
    barrier_all();
    long_p(heap, 100 + me, (me + 1) % n);
    barrier_all();
    CHECK(*heap == 100 + (me + n - 1) % n, "a put into the heap");
    if (failures == 0) printf("dlopen: PE %d of %d ok\n", me, n);
    fin();
    return failures ? 1 : 0;
}
