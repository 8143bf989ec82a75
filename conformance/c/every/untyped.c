/* untyped.c: the hand-written half of the every-symbol program (core/capi/lib/tests/every_symbol.rs):
 * main, and a checked call of every routine with no TYPENAME or SIZE — setup and query, heap,
 * ordering, contexts and sessions, signals, teams, locks, profiling. The typed routines are in
 * the generated half (every_typed, every_active_set). Runs on exactly 2 PEs; every failed check
 * prints the PE, the symbol, and what was expected and found. PE 0 ends the job with
 * shmem_global_exit: status 0 when no PE failed a check. */
#include "every.h"

#include <stdarg.h>
#include <time.h>

int every_me = -1, every_peer = -1;
shmem_ctx_t every_ctx;
unsigned char *every_d, *every_s, *every_g;

static int failures, known;

void every_fail(const char *symbol, const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    int is_known = every_known(symbol, message);
    fprintf(stderr, "PE %d: %s %s: %s\n", every_me, is_known ? "KNOWN" : "FAIL", symbol, message);
    if (is_known)
        known++;
    else
        failures++;
}

/* A value of this PE for slot `i`, and the other PE's. */
#define MINE(i) (0x0123456789ABCDEFL + 0x100L * (i) + every_me)
#define THEIRS(i) (0x0123456789ABCDEFL + 0x100L * (i) + every_peer)

/* Polls until *ivar is `value` (shmem_long_test), for at most 20 s: 1 when it came. The waits
 * below come after it: a wait for a value that never comes would block until the library's
 * timeout and end the program there. */
static int arrives(long *ivar, long value) {
    time_t end = time(NULL) + 20;
    while (!shmem_long_test(ivar, SHMEM_CMP_EQ, value))
        if (time(NULL) > end) return 0;
    return 1;
}

/* Allocation, symmetry, contents and freeing of every heap routine. */
static void heap(void) {
    int me = every_me, peer = every_peer;

    long *m = shmem_malloc(16 * sizeof(long));
    EXPECT(m != NULL, "shmem_malloc", "expected a block, got NULL");
    long *h = shmem_malloc_with_hints(4 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    EXPECT(h != NULL, "shmem_malloc_with_hints", "expected a block, got NULL");
    long *c = shmem_calloc(8, sizeof(long));
    EXPECT(c != NULL, "shmem_calloc", "expected a block, got NULL");
    long *a = shmem_align(256, 3 * sizeof(long));
    EXPECT(a != NULL && (uintptr_t)a % 256 == 0, "shmem_align", "expected a block aligned to 256, got %p", (void *)a);
    long *sm = shmalloc(4 * sizeof(long));
    EXPECT(sm != NULL, "shmalloc", "expected a block, got NULL");
    long *sa = shmemalign(128, 4 * sizeof(long));
    EXPECT(sa != NULL && (uintptr_t)sa % 128 == 0, "shmemalign", "expected a block aligned to 128, got %p", (void *)sa);
    if (!m || !h || !c || !a || !sm || !sa) return;
    for (int i = 0; i < 8; i++) EXPECT(c[i] == 0, "shmem_calloc", "element %d: expected 0, got %ld", i, c[i]);
    for (int i = 0; i < 16; i++) m[i] = MINE(i);
    for (int i = 0; i < 4; i++) h[i] = sm[i] = sa[i] = 0;
    for (int i = 0; i < 3; i++) a[i] = 0;
    shmem_barrier_all();
    /* Each block is symmetric: the other PE's copy takes a put, an atomic. */
    shmem_long_p(&h[1], MINE(1), peer);
    shmem_long_atomic_add(&h[2], MINE(2), peer);
    shmem_long_p(&a[1], MINE(3), peer);
    shmem_long_p(&sm[1], MINE(4), peer);
    shmem_long_p(&sa[2], MINE(5), peer);
    shmem_barrier_all();
    EXPECT(h[0] == 0 && h[1] == THEIRS(1) && h[2] == THEIRS(2) && h[3] == 0, "shmem_malloc_with_hints",
           "block after a put and an add: {%ld, %ld, %ld, %ld}", h[0], h[1], h[2], h[3]);
    EXPECT(a[0] == 0 && a[1] == THEIRS(3) && a[2] == 0, "shmem_align", "block after a put: {%ld, %ld, %ld}", a[0], a[1], a[2]);
    EXPECT(sm[0] == 0 && sm[1] == THEIRS(4) && sm[2] == 0, "shmalloc", "block after a put: {%ld, %ld, %ld}", sm[0], sm[1], sm[2]);
    EXPECT(sa[1] == 0 && sa[2] == THEIRS(5) && sa[3] == 0, "shmemalign", "block after a put: {%ld, %ld, %ld}", sa[1], sa[2], sa[3]);
    EXPECT(shmem_addr_accessible(m, peer) == 1, "shmem_addr_accessible", "a shmem_malloc block is not accessible");

    /* Reallocation keeps the contents, and the new block is symmetric too. */
    long *m2 = shmem_realloc(m, 64 * sizeof(long));
    EXPECT(m2 != NULL, "shmem_realloc", "expected a block, got NULL");
    long *sm2 = shrealloc(sm, 64 * sizeof(long));
    EXPECT(sm2 != NULL, "shrealloc", "expected a block, got NULL");
    if (!m2 || !sm2) return;
    for (int i = 0; i < 16; i++) EXPECT(m2[i] == MINE(i), "shmem_realloc", "element %d: expected %ld, got %ld", i, MINE(i), m2[i]);
    EXPECT(sm2[1] == THEIRS(4), "shrealloc", "element 1: expected %ld, got %ld", THEIRS(4), sm2[1]);
    m2[63] = 0;
    sm2[63] = 0;
    shmem_barrier_all();
    shmem_long_p(&m2[63], MINE(6), peer);
    shmem_long_p(&sm2[63], MINE(7), peer);
    shmem_barrier_all();
    EXPECT(m2[63] == THEIRS(6), "shmem_realloc", "the grown block's last element: expected %ld, got %ld", THEIRS(6), m2[63]);
    EXPECT(sm2[63] == THEIRS(7), "shrealloc", "the grown block's last element: expected %ld, got %ld", THEIRS(7), sm2[63]);
    shmem_barrier_all();

    /* Freed blocks are reused: a new allocation of the same size fits where they were. */
    shfree(sa);
    shfree(sm2);
    shmem_free(a);
    shmem_free(c);
    shmem_free(h);
    shmem_free(m2);
    long *again = shmem_malloc(64 * sizeof(long));
    EXPECT(again != NULL, "shmem_free", "no block after freeing: the heap leaks");
    shmem_free(again);
    (void)me;
}

/* Queries: PEs, accessibility, addresses, version and name. */
static void query(void) {
    int me = every_me, peer = every_peer;
    long *x = (long *)every_d, local = 0;

    EXPECT(shmem_pe_accessible(peer) == 1 && shmem_pe_accessible(me) == 1, "shmem_pe_accessible",
           "expected 1 for both PEs, got %d and %d", shmem_pe_accessible(me), shmem_pe_accessible(peer));
    EXPECT(shmem_addr_accessible(x, peer) == 1, "shmem_addr_accessible", "a symmetric address: expected 1");
    EXPECT(shmem_addr_accessible(&local, peer) == 0, "shmem_addr_accessible", "a stack address: expected 0");

    x[0] = MINE(0);
    x[1] = 0;
    shmem_barrier_all();
    long *px = shmem_ptr(x, peer);
    EXPECT(px != NULL && px[0] == THEIRS(0), "shmem_ptr", "expected the other PE's copy holding %ld, got %p", THEIRS(0), (void *)px);
    EXPECT(shmem_ptr(x, me) == x, "shmem_ptr", "this PE's own copy is not the address itself");
    long *tx = shmem_team_ptr(SHMEM_TEAM_WORLD, x, peer);
    EXPECT(tx == px, "shmem_team_ptr", "expected %p (shmem_ptr), got %p", (void *)px, (void *)tx);
    EXPECT(shmem_team_ptr(SHMEM_TEAM_SHARED, x, shmem_team_translate_pe(SHMEM_TEAM_WORLD, peer, SHMEM_TEAM_SHARED)) == px,
           "shmem_team_ptr", "the shared team does not reach the other PE's copy");
    if (px) px[1] = MINE(1); /* a store through the pointer lands in the other PE's copy */
    shmem_barrier_all();
    EXPECT(x[1] == THEIRS(1), "shmem_ptr", "a store through the pointer: expected %ld, got %ld", THEIRS(1), x[1]);
    shmem_barrier_all();

    int major = -1, minor = -1;
    shmem_info_get_version(&major, &minor);
    EXPECT(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "shmem_info_get_version",
           "expected %d.%d, got %d.%d", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION, major, minor);
    char name[SHMEM_MAX_NAME_LEN + 8];
    memset(name, 0x5A, sizeof name);
    shmem_info_get_name(name);
    EXPECT(memchr(name, 0, SHMEM_MAX_NAME_LEN) != NULL && strcmp(name, SHMEM_VENDOR_STRING) == 0, "shmem_info_get_name",
           "expected \"%s\", got \"%.*s\"", SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN, name);
    for (int i = SHMEM_MAX_NAME_LEN; i < SHMEM_MAX_NAME_LEN + 8; i++)
        EXPECT(name[i] == 0x5A, "shmem_info_get_name", "wrote byte %d, beyond SHMEM_MAX_NAME_LEN", i);
}

/* The routines that order and complete: each completes a put the other PE then sees. */
static void ordering(void) {
    int me = every_me, peer = every_peer;
    long *x = (long *)every_d, *px = shmem_ptr(x, peer), v;
    int pes[1] = {peer};
    for (int i = 0; i < 16; i++) x[i] = 0;
    shmem_barrier_all();

    shmem_long_p(&x[0], MINE(0), peer);
    shmem_barrier_all();
    EXPECT(x[0] == THEIRS(0), "shmem_barrier_all", "a put before the barrier: expected %ld, got %ld", THEIRS(0), x[0]);

    shmem_long_p(&x[1], MINE(1), peer);
    shmem_quiet();
    shmem_sync_all();
    EXPECT(x[1] == THEIRS(1), "shmem_sync_all", "a put quieted before the sync: expected %ld, got %ld", THEIRS(1), x[1]);

    /* Completion is seen through shmem_ptr, with no barrier in between. */
    v = MINE(2);
    shmem_long_put_nbi(&x[2], &v, 1, peer);
    shmem_quiet();
    EXPECT(px && px[2] == MINE(2), "shmem_quiet", "a put_nbi after the quiet: expected %ld, got %ld", MINE(2), px ? px[2] : 0);
    v = MINE(3);
    shmem_long_put_nbi(&x[3], &v, 1, peer);
    shmem_pe_quiet(pes, 1);
    EXPECT(px && px[3] == MINE(3), "shmem_pe_quiet", "a put_nbi after the quiet: expected %ld, got %ld", MINE(3), px ? px[3] : 0);
    v = MINE(4);
    shmem_ctx_long_put_nbi(every_ctx, &x[4], &v, 1, peer);
    shmem_ctx_quiet(every_ctx);
    EXPECT(px && px[4] == MINE(4), "shmem_ctx_quiet", "a put_nbi after the quiet: expected %ld, got %ld", MINE(4), px ? px[4] : 0);
    v = MINE(5);
    shmem_ctx_long_put_nbi(every_ctx, &x[5], &v, 1, peer);
    shmem_ctx_pe_quiet(every_ctx, pes, 1);
    EXPECT(px && px[5] == MINE(5), "shmem_ctx_pe_quiet", "a put_nbi after the quiet: expected %ld, got %ld", MINE(5), px ? px[5] : 0);

    /* A session: its stop completes the context's operations. */
    shmem_ctx_session_config_t config = {4};
    shmem_ctx_session_start(every_ctx, SHMEM_CTX_SESSION_BATCH, &config, SHMEM_CTX_SESSION_TOTAL_OPS);
    long vs[4] = {MINE(6), MINE(7), MINE(8), MINE(9)};
    for (int i = 0; i < 4; i++) shmem_ctx_long_put_nbi(every_ctx, &x[6 + i], &vs[i], 1, peer);
    shmem_ctx_session_stop(every_ctx);
    for (int i = 0; i < 4; i++)
        EXPECT(px && px[6 + i] == vs[i], "shmem_ctx_session_stop", "put %d of the session: expected %ld, got %ld", i, vs[i], px ? px[6 + i] : 0);
    shmem_ctx_quiet(every_ctx);
    shmem_barrier_all();
    EXPECT(x[6] == THEIRS(6) && x[9] == THEIRS(9), "shmem_ctx_session_start", "the session's puts: %ld, %ld", x[6], x[9]);

    /* Fences: the flag comes after the data, on the default context and on every_ctx. */
    shmem_long_p(&x[10], MINE(10), peer);
    shmem_fence();
    shmem_long_p(&x[11], 1, peer);
    shmem_ctx_long_p(every_ctx, &x[12], MINE(12), peer);
    shmem_ctx_fence(every_ctx);
    shmem_ctx_long_p(every_ctx, &x[13], 1, peer);
    if (arrives(&x[11], 1)) {
        EXPECT(x[10] == THEIRS(10), "shmem_fence", "data before the flag: expected %ld, got %ld", THEIRS(10), x[10]);
        shmem_long_wait_until(&x[11], SHMEM_CMP_EQ, 1);
    } else every_fail("shmem_fence", "the flag put after the fence never came");
    if (arrives(&x[13], 1)) {
        EXPECT(x[12] == THEIRS(12), "shmem_ctx_fence", "data before the flag: expected %ld, got %ld", THEIRS(12), x[12]);
        shmem_long_wait_until(&x[13], SHMEM_CMP_EQ, 1);
    } else every_fail("shmem_ctx_fence", "the flag put after the fence never came");
    shmem_ctx_quiet(every_ctx);
    shmem_barrier_all();
    (void)me;
}

/* Contexts: creation with options, use, and destruction. */
static void contexts(void) {
    int peer = every_peer;
    long *x = (long *)every_d;
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    x[0] = 0;
    shmem_barrier_all();
    int rc = shmem_ctx_create(SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE, &c);
    EXPECT(rc == 0 && c != SHMEM_CTX_INVALID, "shmem_ctx_create", "returned %d", rc);
    if (rc == 0) {
        shmem_ctx_long_p(c, &x[0], MINE(0), peer);
        shmem_ctx_quiet(c);
        shmem_ctx_destroy(c);
    }
    /* The default context is an exported handle. */
    shmem_ctx_long_p(SHMEM_CTX_DEFAULT, &x[1], MINE(1), peer);
    shmem_barrier_all();
    EXPECT(x[0] == THEIRS(0), "shmem_ctx_destroy", "a put quieted before the destroy: expected %ld, got %ld", THEIRS(0), x[0]);
    EXPECT(x[1] == THEIRS(1), "SHMEM_CTX_DEFAULT", "a put on the default context: expected %ld, got %ld", THEIRS(1), x[1]);
    shmem_barrier_all();
}

/* Signals: set, add, fetch and wait, with guard words around the signal. */
static void signals(void) {
    int peer = every_peer;
    uint64_t *g = (uint64_t *)every_g;
    const uint64_t guard = 0x5A5A5A5A5A5A5A5AULL, mine = 0x8123456789ABCDEFULL + (uint64_t)every_me,
                   theirs = 0x8123456789ABCDEFULL + (uint64_t)peer;
    for (int i = 0; i < 6; i++) g[i] = guard;
    shmem_barrier_all();
    shmem_signal_set(&g[1], mine, peer);
    shmem_ctx_signal_set(every_ctx, &g[3], mine + 1, peer);
    shmem_ctx_quiet(every_ctx);
    shmem_barrier_all();
    EXPECT(g[1] == theirs, "shmem_signal_set", "expected %#llx, got %#llx", (unsigned long long)theirs, (unsigned long long)g[1]);
    EXPECT(g[3] == theirs + 1, "shmem_ctx_signal_set", "expected %#llx, got %#llx", (unsigned long long)(theirs + 1), (unsigned long long)g[3]);
    EXPECT(shmem_signal_fetch(&g[1]) == theirs, "shmem_signal_fetch", "expected %#llx", (unsigned long long)theirs);
    shmem_barrier_all();
    shmem_signal_add(&g[1], 0x0102030405060708ULL, peer);
    shmem_ctx_signal_add(every_ctx, &g[3], 0x0102030405060708ULL, peer);
    shmem_ctx_quiet(every_ctx);
    shmem_barrier_all();
    EXPECT(g[1] == theirs + 0x0102030405060708ULL, "shmem_signal_add", "expected %#llx, got %#llx",
           (unsigned long long)(theirs + 0x0102030405060708ULL), (unsigned long long)g[1]);
    EXPECT(g[3] == theirs + 1 + 0x0102030405060708ULL, "shmem_ctx_signal_add", "expected %#llx, got %#llx",
           (unsigned long long)(theirs + 1 + 0x0102030405060708ULL), (unsigned long long)g[3]);
    for (int i = 0; i < 6; i += 2)
        EXPECT(g[i] == guard, "shmem_signal_add", "guard word %d: expected %#llx, got %#llx", i, (unsigned long long)guard, (unsigned long long)g[i]);
    EXPECT(g[5] == guard, "shmem_signal_set", "guard word 5 changed");
    shmem_barrier_all();
    /* The other PE sets the signal after the barrier; the wait comes once it is there. */
    shmem_signal_set(&g[5], mine, peer);
    time_t end = time(NULL) + 20;
    while (shmem_signal_fetch(&g[5]) != theirs && time(NULL) <= end) {
    }
    if (shmem_signal_fetch(&g[5]) == theirs) {
        uint64_t got = shmem_signal_wait_until(&g[5], SHMEM_CMP_EQ, theirs);
        EXPECT(got == theirs, "shmem_signal_wait_until", "expected %#llx, got %#llx", (unsigned long long)theirs, (unsigned long long)got);
    } else every_fail("shmem_signal_wait_until", "not called: the signal set never came");
    shmem_barrier_all();
}

/* Teams: queries, splits, translation, configuration, contexts of a team, sync, destruction. */
static void teams(void) {
    int me = every_me, peer = every_peer;
    long *x = (long *)every_d;

    EXPECT(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == 2, "SHMEM_TEAM_WORLD",
           "rank %d of %d", shmem_team_my_pe(SHMEM_TEAM_WORLD), shmem_team_n_pes(SHMEM_TEAM_WORLD));
    EXPECT(shmem_team_n_pes(SHMEM_TEAM_SHARED) == 2, "SHMEM_TEAM_SHARED", "expected the 2 PEs of this node, got %d",
           shmem_team_n_pes(SHMEM_TEAM_SHARED));
    int tp = shmem_team_translate_pe(SHMEM_TEAM_SHARED, shmem_team_my_pe(SHMEM_TEAM_SHARED), SHMEM_TEAM_WORLD);
    EXPECT(tp == me, "shmem_team_translate_pe", "this PE from the shared team to the world: expected %d, got %d", me, tp);

    /* PE 1 alone, as a team of one (PE 0 takes part and gets no team). */
    shmem_team_t one = SHMEM_TEAM_INVALID;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, 1, NULL, 0, &one);
    EXPECT(rc == 0, "shmem_team_split_strided", "returned %d", rc);
    EXPECT(me == 1 ? one != SHMEM_TEAM_INVALID && shmem_team_my_pe(one) == 0 && shmem_team_n_pes(one) == 1 : one == SHMEM_TEAM_INVALID,
           "shmem_team_split_strided", "PE 1 alone: this PE's team is wrong");
    EXPECT(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 1, one) == (me == 1 ? 0 : -1), "shmem_team_translate_pe",
           "world PE 1 in the team of PE 1 alone");
    if (one != SHMEM_TEAM_INVALID) shmem_team_destroy(one);

    /* Both PEs, with a context count in the configuration. */
    shmem_team_t both = SHMEM_TEAM_INVALID;
    shmem_team_config_t cfg = {3}, got = {-1};
    rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 2, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &both);
    EXPECT(rc == 0 && both != SHMEM_TEAM_INVALID && shmem_team_my_pe(both) == me && shmem_team_n_pes(both) == 2,
           "shmem_team_split_strided", "both PEs: returned %d, rank %d of %d", rc, shmem_team_my_pe(both), shmem_team_n_pes(both));
    rc = shmem_team_get_config(both, SHMEM_TEAM_NUM_CONTEXTS, &got);
    EXPECT(rc == 0 && got.num_contexts == 3, "shmem_team_get_config", "returned %d, num_contexts %d (expected 3)", rc, got.num_contexts);
    rc = shmem_team_sync(both);
    EXPECT(rc == 0, "shmem_team_sync", "returned %d", rc);

    shmem_ctx_t tc = SHMEM_CTX_INVALID;
    shmem_team_t back = SHMEM_TEAM_INVALID;
    rc = shmem_team_create_ctx(both, 0, &tc);
    EXPECT(rc == 0 && tc != SHMEM_CTX_INVALID, "shmem_team_create_ctx", "returned %d", rc);
    rc = shmem_ctx_get_team(tc, &back);
    EXPECT(rc == 0 && back == both, "shmem_ctx_get_team", "a team's context: returned %d and another team", rc);
    rc = shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &back);
    EXPECT(rc == 0 && back == SHMEM_TEAM_WORLD, "shmem_ctx_get_team", "the default context: returned %d, not the world team", rc);
    rc = shmem_ctx_get_team(every_ctx, &back);
    EXPECT(rc == 0 && back == SHMEM_TEAM_WORLD, "shmem_ctx_get_team", "a context of shmem_ctx_create: returned %d, not the world team", rc);
    x[0] = 0;
    shmem_barrier_all();
    if (tc != SHMEM_CTX_INVALID) {
        /* The team's context numbers PEs in the team. */
        shmem_ctx_long_p(tc, &x[0], MINE(0), shmem_team_translate_pe(SHMEM_TEAM_WORLD, peer, both));
        shmem_ctx_quiet(tc);
        shmem_ctx_destroy(tc);
    }
    shmem_barrier_all();
    EXPECT(x[0] == THEIRS(0), "shmem_team_create_ctx", "a put on the team's context: expected %ld, got %ld", THEIRS(0), x[0]);

    /* A 2D split with one PE per row: the x teams hold one PE, the y team both. */
    shmem_team_t xt = SHMEM_TEAM_INVALID, yt = SHMEM_TEAM_INVALID;
    rc = shmem_team_split_2d(both, 1, NULL, 0, &xt, NULL, 0, &yt);
    EXPECT(rc == 0 && shmem_team_n_pes(xt) == 1 && shmem_team_my_pe(xt) == 0 && shmem_team_n_pes(yt) == 2 && shmem_team_my_pe(yt) == me,
           "shmem_team_split_2d", "returned %d: x team %d of %d, y team %d of %d", rc, shmem_team_my_pe(xt), shmem_team_n_pes(xt),
           shmem_team_my_pe(yt), shmem_team_n_pes(yt));
    EXPECT(shmem_team_translate_pe(xt, 0, SHMEM_TEAM_WORLD) == me, "shmem_team_translate_pe", "rank 0 of the x team is not this PE");
    if (xt != SHMEM_TEAM_INVALID) shmem_team_destroy(xt);
    if (yt != SHMEM_TEAM_INVALID) shmem_team_destroy(yt);
    shmem_team_destroy(both);
    shmem_barrier_all();
}

/* Locks: a read-modify-write of a counter on PE 0 under the lock, by set_lock and by test_lock. */
static void locks(void) {
    long *lock = shmem_calloc(1, sizeof(long)), *counter = shmem_calloc(1, sizeof(long));
    if (!lock || !counter) {
        every_fail("shmem_set_lock", "no symmetric memory for the lock");
        return;
    }
    for (int i = 0; i < 10; i++) {
        shmem_set_lock(lock);
        long c = shmem_long_g(counter, 0);
        shmem_long_p(counter, c + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    for (int i = 0; i < 10; i++) {
        long tries = 0;
        while (shmem_test_lock(lock) != 0)
            if (++tries > 100000000L) {
                every_fail("shmem_test_lock", "the lock was never acquired");
                break;
            }
        long c = shmem_long_g(counter, 0);
        shmem_long_p(counter, c + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    long total = shmem_long_g(counter, 0);
    EXPECT(total == 40, "shmem_clear_lock", "a counter incremented 20 times per PE under the lock: expected 40, got %ld", total);
    shmem_barrier_all();
    shmem_free(counter);
    shmem_free(lock);
}

int main(void) {
    int initialized = -1, provided = -1, level = -1;
    shmem_query_initialized(&initialized);
    EXPECT(initialized == 0, "shmem_query_initialized", "before start_pes: expected 0, got %d", initialized);

    /* Three initializations, nested (OpenSHMEM 1.6): start_pes, shmem_init, shmem_init_thread. */
    start_pes(0);
    shmem_query_initialized(&initialized);
    EXPECT(initialized == 1, "start_pes", "shmem_query_initialized after it: expected 1, got %d", initialized);
    shmem_init();
    int rc = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    EXPECT(rc == 0, "shmem_init_thread", "returned %d", rc);
    shmem_query_thread(&level);
    EXPECT(level == provided && level >= SHMEM_THREAD_SINGLE && level <= SHMEM_THREAD_MULTIPLE, "shmem_query_thread",
           "expected the level shmem_init_thread gave (%d), got %d", provided, level);
    int me = shmem_my_pe(), n = shmem_n_pes();
    EXPECT(_my_pe() == me, "_my_pe", "expected %d, got %d", me, _my_pe());
    EXPECT(_num_pes() == n, "_num_pes", "expected %d, got %d", n, _num_pes());
    if (n != 2 || me < 0 || me > 1) {
        fprintf(stderr, "every_symbol: runs on 2 PEs, not %d (this is PE %d)\n", n, me);
        return 2;
    }
    every_me = me;
    every_peer = 1 - me;
    shmem_pcontrol(0);

    every_d = shmem_align(64, 3 * EVERY_REGION);
    if (!every_d) {
        every_fail("shmem_align", "no symmetric regions");
        return 1;
    }
    every_s = every_d + EVERY_REGION;
    every_g = every_s + EVERY_REGION;
    rc = shmem_ctx_create(0, &every_ctx);
    EXPECT(rc == 0, "shmem_ctx_create", "returned %d", rc);
    if (rc != 0) every_ctx = SHMEM_CTX_DEFAULT;
    shmem_pcontrol(1);

    every_typed();
    every_active_set();
    heap();
    query();
    ordering();
    contexts();
    signals();
    teams();
    locks();
    shmem_pcontrol(2, "ignored");

    shmem_ctx_destroy(every_ctx);
    shmem_finalize(); /* the nested shmem_init_thread and shmem_init; start_pes's stays open */
    shmem_finalize();
    shmem_query_initialized(&initialized);
    EXPECT(initialized == 1, "shmem_finalize", "after two of three: expected still initialized, got %d", initialized);

    /* The job's status: whether any PE failed a check. PE 0 ends the job; PE 1 waits for a
     * value nobody writes, which only the global exit ends. */
    int *total = shmem_calloc(2, sizeof(int));
    long *never = shmem_calloc(1, sizeof(long));
    total[0] = failures;
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &total[1], &total[0], 1);
    printf("every_symbol: PE %d: %d failed checks, %d known failures: %s\n", me, failures, known, failures ? "FAILED" : "ok");
    fflush(stdout);
    fflush(stderr);
    shmem_barrier_all();
    if (me == 0) shmem_global_exit(total[1] != 0);
    shmem_long_wait_until(never, SHMEM_CMP_EQ, 1);
    fprintf(stderr, "every_symbol: PE %d: shmem_global_exit did not end the job\n", me);
    return 3;
}
