//! Writes the typed half of the CANN every-symbol C++ program from one small type table: CANN's
//! 11 host RMA types (`ACLSHMEM_TYPE_FUNC`), the 10 of them its point-to-point routines have
//! (`ACLSHMEM_P2P_SYNC_TYPE_FUNC`, all but `double`) and its 5 element sizes
//! (`ACLSHMEM_SIZE_FUNC`). For each typed or sized routine it writes a call with values that a
//! wrong element type would change, and a check of everything the call may and may not write.
//! The untyped routines and `main` are hand-written (`conformance/cann/every/untyped.cpp`, which
//! `#include`s this half).
//!
//! The program only reaches symmetric memory through CANN's calls: values are staged with
//! `aclshmem_<T>_p` to this PE (`aclshmem_uint8_p` byte by byte for the sized routines) and read
//! back with `aclshmem_<T>_g` after a barrier, since host RMA completes at the next
//! synchronisation and `_g` is not ordered after queued puts. Every target has sentinel elements
//! around it, checked too. Integer values have the top bit of every byte set (negative in every
//! signed type, so a wrong sign extension shows) and differ in every byte; real values are
//! non-integral (`3.140625f`, `1.25e10 + 0.375`) and negative; a "near" value differs from its
//! value in the top byte only.

use std::fmt::Write as _;

/// Checks that fail because of a bug of the library, not of this test: the symbol, a part of
/// the failed check's message that identifies the check, and the reason. Such a failure is
/// reported as KNOWN and does not fail the test; an entry that no failure matches fails it
/// (the bug is fixed: remove the entry).
pub(crate) const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

/// CANN's host types: NAME, C type, and whether the point-to-point routines have it (CANN's
/// `ACLSHMEM_P2P_SYNC_TYPE_FUNC` is `ACLSHMEM_TYPE_FUNC` without `double`).
pub(crate) const TYPES: &[(&str, &str, bool)] = &[
    ("float", "float", true),
    ("double", "double", false),
    ("int8", "int8_t", true),
    ("int16", "int16_t", true),
    ("int32", "int32_t", true),
    ("int64", "int64_t", true),
    ("uint8", "uint8_t", true),
    ("uint16", "uint16_t", true),
    ("uint32", "uint32_t", true),
    ("uint64", "uint64_t", true),
    ("char", "char", true),
];

/// CANN's element sizes in bits (`ACLSHMEM_SIZE_FUNC`).
pub(crate) const SIZES: &[usize] = &[8, 16, 32, 64, 128];

/// The operations of a typed RMA family: `aclshmem_<NAME>_<op>`.
pub(crate) const TYPED_OPS: &[&str] = &[
    "put",
    "put_nbi",
    "get",
    "get_nbi",
    "iput",
    "iget",
    "p",
    "g",
    "put_signal",
    "put_signal_nbi",
];

/// The operations of a sized RMA family: `aclshmem_<op><BITS>[_suffix]`, as (op, suffix).
pub(crate) const SIZED_OPS: &[(&str, &str)] = &[
    ("put", ""),
    ("put", "_nbi"),
    ("get", ""),
    ("get", "_nbi"),
    ("iput", ""),
    ("iget", ""),
    ("put", "_signal"),
    ("put", "_signal_nbi"),
];

/// The point-to-point operations of a type: `aclshmem_<NAME>_<op>`.
pub(crate) const P2P_OPS: &[&str] = &[
    "wait_until",
    "wait",
    "wait_until_all",
    "wait_until_any",
    "wait_until_some",
    "wait_until_all_vector",
    "wait_until_any_vector",
    "wait_until_some_vector",
    "test",
    "test_any",
    "test_some",
    "test_all_vector",
    "test_any_vector",
    "test_some_vector",
];

/// Every typed and sized symbol the generated half is written to call.
pub(crate) fn symbols() -> Vec<String> {
    let mut v = Vec::new();
    for (name, _, p2p) in TYPES {
        v.extend(TYPED_OPS.iter().map(|op| format!("aclshmem_{name}_{op}")));
        if *p2p {
            v.extend(P2P_OPS.iter().map(|op| format!("aclshmem_{name}_{op}")));
        }
    }
    for bits in SIZES {
        v.extend(
            SIZED_OPS
                .iter()
                .map(|(op, suffix)| format!("aclshmem_{op}{bits}{suffix}")),
        );
    }
    v
}

/// How a type's test values are made and shown.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// An integer type (`char` included, signed or not as the platform has it).
    Int,
    /// A real type: the magnitude of its values (a non-integral constant of the type).
    Real(&'static str),
    /// `n` opaque bytes: the element of a sized routine.
    Bytes(usize),
}

/// One element type of the program: the suffix of its helpers, the C type, its kind.
struct Ty {
    n: String,
    c: String,
    kind: Kind,
}

impl Ty {
    /// A NAME of the table and its C type.
    fn typed(name: &str, c: &str) -> Ty {
        let kind = match c {
            "float" => Kind::Real("3.140625f"),
            "double" => Kind::Real("(1.25e10 + 0.375)"),
            _ => Kind::Int,
        };
        Ty {
            n: name.into(),
            c: c.into(),
            kind,
        }
    }

    /// The element of `bits` bits of the sized routines.
    fn sized(bits: usize) -> Ty {
        let bytes = bits / 8;
        Ty {
            n: format!("b{bytes}"),
            c: format!("every_b{bytes}"),
            kind: Kind::Bytes(bytes),
        }
    }

    /// `template` with `@N@` (helper suffix) and `@T@` (C type) filled in.
    fn fill(&self, template: &str) -> String {
        template.replace("@N@", &self.n).replace("@T@", &self.c)
    }
}

/// The helpers of one type: values `v_N(k)` (k in 0..=13), positive values `p_N(k)`,
/// `near_N(x)`, the sentinel `s_N()`, the type's maximum `big_N()`, `eq_N`, `show_N`, and the
/// symmetric-memory accessors: `stage_N` (puts values into this PE's copy), `fetch_N` (reads
/// them back) and `check_N` (reads and reports every differing element).
fn helpers(t: &Ty) -> String {
    let (specific, stage, fetch) = match t.kind {
        Kind::Int => (
            "\
static inline @T@ v_@N@(int k) { return (@T@)(0x81A3C5E789ABCDEFULL + (unsigned long long)k * 0x0101010101010101ULL); }
static inline @T@ p_@N@(int k) { return (@T@)(0x0102030405060708ULL + (unsigned long long)k * 0x0101010101010101ULL); }
static inline @T@ near_@N@(@T@ x) { return (@T@)(x ^ (@T@)(1ULL << (sizeof(@T@) * 8 - 2))); }
static inline @T@ s_@N@() { return (@T@)0x5A5A5A5A5A5A5A5AULL; }
static inline @T@ big_@N@() { return std::numeric_limits<@T@>::max(); }
static inline bool eq_@N@(@T@ a, @T@ b) { return a == b; }
static inline void show_@N@(char *b, @T@ x) {
    const unsigned long long bits = (unsigned long long)(std::make_unsigned<@T@>::type)x;
    if (std::is_signed<@T@>::value) std::snprintf(b, 96, \"%lld (%#llx)\", (long long)x, bits);
    else std::snprintf(b, 96, \"%llu (%#llx)\", bits, bits);
}
"
            .to_string(),
            "aclshmem_@N@_p(sym + i, vals[i], every_me);",
            "out[i] = aclshmem_@N@_g(sym + i, every_me);",
        ),
        Kind::Real(magnitude) => (
            "\
static inline @T@ v_@N@(int k) { return -(@M@ + (@T@)k); }
static inline @T@ p_@N@(int k) { return (@T@)0.5 + (@T@)(2 * k); }
static inline @T@ near_@N@(@T@ x) { return x + (@T@)1024; }
static inline @T@ s_@N@() { return (@T@)4242.5; }
static inline @T@ big_@N@() { return std::numeric_limits<@T@>::max(); }
static inline bool eq_@N@(@T@ a, @T@ b) { return a == b; }
static inline void show_@N@(char *b, @T@ x) { std::snprintf(b, 96, \"%.17g (%a)\", (double)x, (double)x); }
"
            .replace("@M@", magnitude),
            "aclshmem_@N@_p(sym + i, vals[i], every_me);",
            "out[i] = aclshmem_@N@_g(sym + i, every_me);",
        ),
        Kind::Bytes(n) => (
            "\
struct @T@ {
    unsigned char b[@BYTES@];
};
static inline @T@ v_@N@(int k) {
    @T@ x;
    for (int j = 0; j < @BYTES@; j++) x.b[j] = (unsigned char)((k * 16 + j) ^ 0xA5);
    return x;
}
static inline @T@ s_@N@() {
    @T@ x;
    std::memset(x.b, 0x5A, sizeof x.b);
    return x;
}
static inline bool eq_@N@(@T@ a, @T@ b) { return std::memcmp(a.b, b.b, sizeof a.b) == 0; }
static inline void show_@N@(char *s, @T@ x) {
    for (int j = 0; j < @BYTES@; j++) std::snprintf(s + 2 * j, 3, \"%02x\", x.b[j]);
}
"
            .replace("@BYTES@", &n.to_string()),
            "for (int j = 0; j < @BYTES@; j++) aclshmem_uint8_p(&sym[i].b[j], vals[i].b[j], every_me);",
            "for (int j = 0; j < @BYTES@; j++) out[i].b[j] = aclshmem_uint8_g(&sym[i].b[j], every_me);",
        ),
    };
    let bytes = match t.kind {
        Kind::Bytes(n) => n,
        _ => 0,
    };
    let common = format!(
        "\
static inline void stage_@N@(@T@ *sym, const @T@ *vals, size_t n) {{
    for (size_t i = 0; i < n; i++) {{ {stage} }}
}}
static inline void fetch_@N@(@T@ *sym, @T@ *out, size_t n) {{
    for (size_t i = 0; i < n; i++) {{ {fetch} }}
}}
static inline void same_@N@(const char *sym, const char *what, const @T@ *got, const @T@ *want, size_t n) {{
    for (size_t i = 0; i < n; i++)
        if (!eq_@N@(got[i], want[i])) {{
            char e[96], g[96];
            show_@N@(e, want[i]);
            show_@N@(g, got[i]);
            every_fail(sym, \"%s[%zu]: expected %s, got %s\", what, i, e, g);
        }}
}}
static inline void check_@N@(const char *sym, const char *what, @T@ *at, const @T@ *want, size_t n) {{
    @T@ got[EVERY_MAX_ELEMS];
    fetch_@N@(at, got, n);
    same_@N@(sym, what, got, want, n);
}}
"
    )
    .replace("@BYTES@", &bytes.to_string());
    t.fill(&format!("/* {} */\n{specific}{common}\n", t.c))
}

/// One checked call in braces: the lines of `body` with `@SYM@` the routine.
fn block(t: &Ty, sym: &str, comment: &str, body: &str) -> String {
    let mut s = format!("    {{ /* {sym}: {comment} */\n");
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(s, "        {line}");
    }
    s.push_str("    }\n");
    t.fill(&s).replace("@SYM@", sym)
}

/// Sets this PE's destination `dest` to sentinels and its source `s` to filler with this PE's
/// three values at `at` (a C expression of `i`), runs `more`, then a barrier.
fn stage_source(dest: &str, at: &str, more: &str) -> String {
    format!(
        "@T@ w[16], x[16];
fill(w, 16, s_@N@());
stage_@N@({dest}, w, 16);
fill(x, 16, v_@N@(13));
for (int i = 0; i < 3; i++) x[{at}] = v_@N@(me * 4 + i + 1);
stage_@N@(s, x, 16);
{more}
aclshmem_barrier_all();"
    )
}

/// Checks destination `dest`: the other PE's three values at `at(i)`, sentinels elsewhere.
fn expect_peer(dest: &str, at: &str, what: &str) -> String {
    format!(
        "for (int i = 0; i < 3; i++) w[{at}] = v_@N@(peer * 4 + i + 1);
check_@N@(\"@SYM@\", \"{what}\", {dest}, w, 16);"
    )
}

/// Under strict mode, queued work runs only at a synchronisation: the destination `dest` of
/// this PE still holds its sentinels before the barrier.
fn strict_stale(dest: &str) -> String {
    format!(
        "if (every_strict) check_@N@(\"@SYM@\", \"before the barrier under SHMEM_SIM_STRICT=1 (queued until a synchronisation)\", {dest}, w, 16);"
    )
}

/// The RMA and put-with-signal routines of one family: typed (`name` is a NAME) or sized
/// (`bits`).
fn rma(t: &Ty, name: Option<&str>, bits: usize) -> String {
    let sym = |op: &str, suffix: &str| match name {
        Some(n) => format!("aclshmem_{n}_{op}{suffix}"),
        None => format!("aclshmem_{op}{bits}{suffix}"),
    };
    let fname = name.map_or_else(|| format!("rma_{bits}"), |n| format!("rma_{n}"));
    let mut s = t.fill(&format!(
        "static void {fname}() {{
    const int me = every_me, peer = every_peer;
    @T@ *d = (@T@ *)every_d, *s = (@T@ *)every_s, *l = (@T@ *)every_l;
    int32_t *sig = (int32_t *)every_g;
"
    ));
    for suffix in ["", "_nbi"] {
        s += &block(
            t,
            &sym("put", suffix),
            "this PE's s[2..5) to the other PE's d[1..4)",
            &format!(
                "{}\n@SYM@(d + 1, s + 2, 3, peer);\naclshmem_barrier_all();\n{}\ncheck_@N@(\"@SYM@\", \"source\", s, x, 16);",
                stage_source("d", "2 + i", ""),
                expect_peer("d", "1 + i", "dest")
            ),
        );
    }
    for suffix in ["", "_nbi"] {
        s += &block(
            t,
            &sym("get", suffix),
            "the other PE's s[2..5) to this PE's l[1..4)",
            &format!(
                "{}\n@SYM@(l + 1, s + 2, 3, peer);\n{}\naclshmem_barrier_all();\n{}",
                stage_source("l", "2 + i", ""),
                strict_stale("l"),
                expect_peer("l", "1 + i", "dest")
            ),
        );
    }
    s += &block(
        t,
        &sym("iput", ""),
        "this PE's s[0], s[3], s[6] (source stride 3) to the other PE's d[1], d[3], d[5] (stride 2)",
        &format!(
            "{}\n@SYM@(d + 1, s, 2, 3, 3, peer);\naclshmem_barrier_all();\n{}",
            stage_source("d", "3 * i", ""),
            expect_peer("d", "1 + 2 * i", "dest")
        ),
    );
    s += &block(
        t,
        &sym("iget", ""),
        "the other PE's s[2], s[5], s[8] (source stride 3) to this PE's l[1], l[3], l[5] (stride 2)",
        &format!(
            "{}\n@SYM@(l + 1, s + 2, 2, 3, 3, peer);\n{}\naclshmem_barrier_all();\n{}",
            stage_source("l", "2 + 3 * i", ""),
            strict_stale("l"),
            expect_peer("l", "1 + 2 * i", "dest")
        ),
    );
    if name.is_some() {
        s += &block(
            t,
            &sym("p", ""),
            "one element to the other PE's d[2]",
            "@T@ w[16];
fill(w, 16, s_@N@());
stage_@N@(d, w, 16);
aclshmem_barrier_all();
@SYM@(d + 2, v_@N@(me * 4 + 3), peer);
if (every_strict) {
    @T@ early[1] = {aclshmem_@N@_g(d + 2, peer)};
    same_@N@(\"@SYM@\", \"the other PE's element read with _g before the barrier under SHMEM_SIM_STRICT=1 (queued until a synchronisation)\", early, w, 1);
}
aclshmem_barrier_all();
w[2] = v_@N@(peer * 4 + 3);
check_@N@(\"@SYM@\", \"dest\", d, w, 16);",
        );
        s += &block(
            t,
            &sym("g", ""),
            "the other PE's s[2], and this PE's",
            "@T@ x[16];
fill(x, 16, v_@N@(13));
x[2] = v_@N@(me * 4 + 3);
stage_@N@(s, x, 16);
aclshmem_barrier_all();
@T@ got[2] = {@SYM@(s + 2, peer), @SYM@(s + 3, me)};
const @T@ want[2] = {v_@N@(peer * 4 + 3), v_@N@(13)};
same_@N@(\"@SYM@\", \"value\", got, want, 2);
aclshmem_barrier_all();",
        );
    }
    // Put with signal: SET from the blocking form, ADD from the non-blocking one. The receiver
    // waits for the signal, then reads the data without a barrier: the data comes first.
    let sig_arg = if name.is_some() {
        "(uint8_t *)(sig + 1)"
    } else {
        "sig + 1"
    };
    for (suffix, op, want) in [
        (
            "_signal",
            "ACLSHMEM_SIGNAL_SET",
            "(int32_t)(0x81A3C5E7u + (uint32_t)peer)",
        ),
        (
            "_signal_nbi",
            "ACLSHMEM_SIGNAL_ADD",
            "(int32_t)(0x10000001u + 0x81A3C5E7u + (uint32_t)peer)",
        ),
    ] {
        s += &block(
            t,
            &sym("put", suffix),
            &format!(
                "this PE's s[2..5) to the other PE's d[1..4), then its int32_t signal word sig[1] ({op})"
            ),
            &format!(
                "{}
@SYM@(d + 1, s + 2, 3, {sig_arg}, (int32_t)(0x81A3C5E7u + (uint32_t)me), {op}, peer);
sw[1] = {want};
if (signal_arrives(sig + 1, sw[1])) {{
    aclshmem_signal_wait_until(sig + 1, ACLSHMEM_CMP_EQ, sw[1]);
    {}
}} else {{
    every_fail(\"@SYM@\", \"the signal word never became %d (20 s)\", sw[1]);
}}
aclshmem_barrier_all();
check_int32(\"@SYM@\", \"signal words\", sig, sw, 3);",
                stage_source(
                    "d",
                    "2 + i",
                    "int32_t sw[3] = {EVERY_SIG_SENTINEL, 0x10000001, EVERY_SIG_SENTINEL};\nstage_int32(sig, sw, 3);"
                ),
                expect_peer("d", "1 + i", "dest, once the signal is seen").replace('\n', "\n    ")
            ),
        );
    }
    s.push_str("}\n\n");
    s
}

/// The point-to-point routines of one type. Values are staged with `aclshmem_<T>_p` to this PE
/// and tested at once: a host wait or test runs after the default stream's queued work. Each
/// wait is called only when a test says it returns (a wrong wait would block until the
/// library's timeout). `res_out`, `indices`, `status` and `cmp_values` are reached through
/// `untyped.cpp`'s helpers: `fresh_*` sets a sentinel and hands the address over, `got_*` reads
/// the result back (host memory, as this library's C ABI takes them).
fn p2p(t: &Ty) -> String {
    let template = "\
static inline bool arrives_@N@(@T@ *ivar, @T@ value) {
    const time_t end = std::time(nullptr) + 20;
    for (;;) {
        aclshmem_@N@_test(ivar, ACLSHMEM_CMP_EQ, value, fresh_t());
        if (got_t() == 1) return true;
        if (std::time(nullptr) > end) return false;
    }
}

static void p2p_@N@() {
    const int me = every_me, peer = every_peer;
    @T@ *iv = (@T@ *)every_d, *cv = (@T@ *)every_cv;
    @T@ w[5], c[3];
    const auto set_cv = [&]() { std::memcpy(cv, c, sizeof c); };
    const @T@ v1 = v_@N@(1), v2 = v_@N@(2), v3 = v_@N@(3);
    const int *st = every_status; /* {0, 1, 0}: element 1 is excluded */
    size_t ix[5], r, first;
    int t;

    /* aclshmem_@N@_wait_until, aclshmem_@N@_test: the other PE puts the value */
    fill(w, 5, s_@N@());
    stage_@N@(iv, w, 5);
    aclshmem_barrier_all();
    aclshmem_@N@_p(iv + 1, v_@N@(me * 4 + 1), peer);
    w[1] = v_@N@(peer * 4 + 1);
    if (arrives_@N@(iv + 1, w[1])) aclshmem_@N@_wait_until(iv + 1, ACLSHMEM_CMP_EQ, w[1]);
    else every_fail(\"aclshmem_@N@_wait_until\", \"not called: aclshmem_@N@_test never saw the other PE's value (20 s)\");
    check_@N@(\"aclshmem_@N@_wait_until\", \"ivar\", iv, w, 5);
    for (int k = 0; k < 6; k++) {
        aclshmem_@N@_test(iv + 1, every_cmps[k], w[1], fresh_t());
        t = got_t();
        EXPECT(t == every_with_itself[k], \"aclshmem_@N@_test\", \"%s its own value: expected %d, got %d\", every_cmp_names[k], every_with_itself[k], t);
        aclshmem_@N@_test(iv + 1, every_cmps[k], big_@N@(), fresh_t());
        t = got_t();
        EXPECT(t == every_with_max[k], \"aclshmem_@N@_test\", \"%s the type's maximum: expected %d, got %d\", every_cmp_names[k], every_with_max[k], t);
    }
    aclshmem_@N@_test(iv + 1, ACLSHMEM_CMP_EQ, near_@N@(w[1]), fresh_t());
    t = got_t();
    EXPECT(t == 0, \"aclshmem_@N@_test\", \"EQ a value that differs only in the top byte: expected 0, got %d\", t);
    aclshmem_@N@_test(iv + 1, ACLSHMEM_CMP_LT, p_@N@(0), fresh_t());
    t = got_t();
    EXPECT(t == (std::is_signed<@T@>::value ? 1 : 0), \"aclshmem_@N@_test\",
           \"LT a positive value (the value is negative in a signed type): expected %d, got %d\", std::is_signed<@T@>::value ? 1 : 0, t);
    aclshmem_@N@_test(iv + 1, 99, w[1], fresh_t());
    t = got_t();
    EXPECT(t == 0, \"aclshmem_@N@_test\", \"comparison 99 (not an ACLSHMEM_CMP_*): expected CANN's 0, got %d\", t);
    aclshmem_barrier_all();

    /* aclshmem_@N@_wait: returns once the variable differs from the value */
    fill(w, 5, s_@N@());
    w[2] = v1;
    stage_@N@(iv, w, 5);
    aclshmem_@N@_test(iv + 2, ACLSHMEM_CMP_NE, near_@N@(v1), fresh_t());
    t = got_t();
    if (t == 1) aclshmem_@N@_wait(iv + 2, near_@N@(v1));
    else every_fail(\"aclshmem_@N@_wait\", \"not called: aclshmem_@N@_test NE a value differing in the top byte gave %d\", t);
    check_@N@(\"aclshmem_@N@_wait\", \"ivar\", iv, w, 5);

    /* aclshmem_@N@_wait_until_all: element 1 differs in its top byte, and is excluded */
    fill(w, 5, s_@N@());
    w[1] = v1;
    w[2] = near_@N@(v1);
    w[3] = v1;
    stage_@N@(iv, w, 5);
    fill(c, 3, v1);
    set_cv();
    aclshmem_@N@_test_all_vector(iv + 1, 3, nullptr, ACLSHMEM_CMP_EQ, cv, fresh_t());
    t = got_t();
    EXPECT(t == 0, \"aclshmem_@N@_test_all_vector\", \"EQ one value, every element: expected 0, got %d\", t);
    aclshmem_@N@_test_all_vector(iv + 1, 3, st, ACLSHMEM_CMP_EQ, cv, fresh_t());
    t = got_t();
    EXPECT(t == 1, \"aclshmem_@N@_test_all_vector\", \"EQ one value, element 1 excluded: expected 1, got %d\", t);
    if (t == 1) aclshmem_@N@_wait_until_all(iv + 1, 3, st, ACLSHMEM_CMP_EQ, v1);
    else every_fail(\"aclshmem_@N@_wait_until_all\", \"not called: aclshmem_@N@_test_all_vector says it would block\");
    check_@N@(\"aclshmem_@N@_wait_until_all\", \"ivars\", iv, w, 5);

    /* aclshmem_@N@_test_any, aclshmem_@N@_wait_until_any: only element 2 qualifies */
    fill(w, 5, s_@N@());
    w[1] = near_@N@(v1);
    w[2] = v1;
    w[3] = v1;
    stage_@N@(iv, w, 5);
    aclshmem_@N@_test_any(iv + 1, 1, nullptr, ACLSHMEM_CMP_EQ, v1, fresh_r());
    r = got_r();
    EXPECT(r == SIZE_MAX, \"aclshmem_@N@_test_any\", \"no element matches: expected SIZE_MAX, got %zu\", r);
    aclshmem_@N@_test_any(iv + 1, 3, st, ACLSHMEM_CMP_EQ, v1, fresh_r());
    first = got_r();
    EXPECT(first == 2, \"aclshmem_@N@_test_any\", \"expected index 2, got %zu\", first);
    aclshmem_@N@_test_any(iv + 1, 3, st, 99, v1, fresh_r());
    r = got_r();
    EXPECT(r == SIZE_MAX, \"aclshmem_@N@_test_any\", \"comparison 99 (not an ACLSHMEM_CMP_*): expected CANN's SIZE_MAX, got %zu\", r);
    if (first == 2) {
        aclshmem_@N@_wait_until_any(iv + 1, 3, st, ACLSHMEM_CMP_EQ, v1, fresh_r());
        r = got_r();
        EXPECT(r == 2, \"aclshmem_@N@_wait_until_any\", \"expected index 2, got %zu\", r);
    } else {
        every_fail(\"aclshmem_@N@_wait_until_any\", \"not called: aclshmem_@N@_test_any says it would block\");
    }
    check_@N@(\"aclshmem_@N@_wait_until_any\", \"ivars\", iv, w, 5);

    /* aclshmem_@N@_test_some, aclshmem_@N@_wait_until_some: elements 0 and 2 (1 is excluded) */
    fill(w, 5, s_@N@());
    w[1] = v1;
    w[2] = v1;
    w[3] = v1;
    stage_@N@(iv, w, 5);
    aclshmem_@N@_test_some(iv + 1, 3, fresh_ix(), nullptr, ACLSHMEM_CMP_EQ, near_@N@(v1), fresh_r());
    r = got_r();
    EXPECT(r == 0, \"aclshmem_@N@_test_some\", \"EQ a value differing in the top byte: expected 0, got %zu\", r);
    aclshmem_@N@_test_some(iv + 1, 3, fresh_ix(), st, ACLSHMEM_CMP_EQ, v1, fresh_r());
    r = got_r();
    got_ix(ix);
    EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL, \"aclshmem_@N@_test_some\",
           \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL ? \"intact\" : \"overwritten\");
    if (r == 2) {
        aclshmem_@N@_wait_until_some(iv + 1, 3, fresh_ix(), st, ACLSHMEM_CMP_EQ, v1, fresh_r());
        r = got_r();
        got_ix(ix);
        EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL, \"aclshmem_@N@_wait_until_some\",
               \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL ? \"intact\" : \"overwritten\");
    } else {
        every_fail(\"aclshmem_@N@_wait_until_some\", \"not called: aclshmem_@N@_test_some says it would block\");
    }
    check_@N@(\"aclshmem_@N@_wait_until_some\", \"ivars\", iv, w, 5);

    /* aclshmem_@N@_test_all_vector, aclshmem_@N@_wait_until_all_vector: element 1 differs in its top byte */
    fill(w, 5, s_@N@());
    w[1] = v1;
    w[2] = near_@N@(v2);
    w[3] = v3;
    stage_@N@(iv, w, 5);
    c[0] = v1;
    c[1] = v2;
    c[2] = v3;
    set_cv();
    aclshmem_@N@_test_all_vector(iv + 1, 3, nullptr, ACLSHMEM_CMP_EQ, cv, fresh_t());
    t = got_t();
    EXPECT(t == 0, \"aclshmem_@N@_test_all_vector\", \"every element: expected 0, got %d\", t);
    aclshmem_@N@_test_all_vector(iv + 1, 3, st, ACLSHMEM_CMP_EQ, cv, fresh_t());
    t = got_t();
    EXPECT(t == 1, \"aclshmem_@N@_test_all_vector\", \"element 1 excluded: expected 1, got %d\", t);
    if (t == 1) aclshmem_@N@_wait_until_all_vector(iv + 1, 3, st, ACLSHMEM_CMP_EQ, cv);
    else every_fail(\"aclshmem_@N@_wait_until_all_vector\", \"not called: aclshmem_@N@_test_all_vector says it would block\");
    check_@N@(\"aclshmem_@N@_wait_until_all_vector\", \"ivars\", iv, w, 5);
    same_@N@(\"aclshmem_@N@_wait_until_all_vector\", \"cmp_values\", cv, c, 3);

    /* aclshmem_@N@_test_any_vector, aclshmem_@N@_wait_until_any_vector: element 0 differs, 1 is excluded */
    fill(w, 5, s_@N@());
    w[1] = v1;
    w[2] = v2;
    w[3] = v3;
    stage_@N@(iv, w, 5);
    c[0] = near_@N@(v1);
    c[1] = v2;
    c[2] = v3;
    set_cv();
    aclshmem_@N@_test_any_vector(iv + 1, 1, nullptr, ACLSHMEM_CMP_EQ, cv, fresh_r());
    r = got_r();
    EXPECT(r == SIZE_MAX, \"aclshmem_@N@_test_any_vector\", \"only element 0, which differs: expected SIZE_MAX, got %zu\", r);
    aclshmem_@N@_test_any_vector(iv + 1, 3, st, ACLSHMEM_CMP_EQ, cv, fresh_r());
    first = got_r();
    EXPECT(first == 2, \"aclshmem_@N@_test_any_vector\", \"expected index 2, got %zu\", first);
    if (first == 2) {
        aclshmem_@N@_wait_until_any_vector(iv + 1, 3, st, ACLSHMEM_CMP_EQ, cv, fresh_r());
        r = got_r();
        EXPECT(r == 2, \"aclshmem_@N@_wait_until_any_vector\", \"expected index 2, got %zu\", r);
    } else {
        every_fail(\"aclshmem_@N@_wait_until_any_vector\", \"not called: aclshmem_@N@_test_any_vector says it would block\");
    }
    check_@N@(\"aclshmem_@N@_wait_until_any_vector\", \"ivars\", iv, w, 5);

    /* aclshmem_@N@_test_some_vector, aclshmem_@N@_wait_until_some_vector: GE, element 1 is below the type's maximum */
    c[0] = v1;
    c[1] = big_@N@();
    c[2] = v3;
    set_cv();
    aclshmem_@N@_test_some_vector(iv + 1, 3, fresh_ix(), nullptr, ACLSHMEM_CMP_GE, cv, fresh_r());
    r = got_r();
    got_ix(ix);
    EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL, \"aclshmem_@N@_test_some_vector\",
           \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL ? \"intact\" : \"overwritten\");
    if (r == 2) {
        aclshmem_@N@_wait_until_some_vector(iv + 1, 3, fresh_ix(), nullptr, ACLSHMEM_CMP_GE, cv, fresh_r());
        r = got_r();
        got_ix(ix);
        EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL, \"aclshmem_@N@_wait_until_some_vector\",
               \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == EVERY_IX_SENTINEL && ix[4] == EVERY_IX_SENTINEL ? \"intact\" : \"overwritten\");
    } else {
        every_fail(\"aclshmem_@N@_wait_until_some_vector\", \"not called: aclshmem_@N@_test_some_vector says it would block\");
    }
    check_@N@(\"aclshmem_@N@_wait_until_some_vector\", \"ivars\", iv, w, 5);
    aclshmem_barrier_all();
}

";
    t.fill(template)
}

/// The whole generated C++ source (`#include`d by `untyped.cpp` after its shared definitions).
pub(crate) fn cpp_source() -> String {
    let mut s = String::from(
        "// Generated by core/capi/lib/tests/cann_every_symbol/generator.rs: the typed half of the CANN\n\
         // every-symbol program, #included by conformance/cann/every/untyped.cpp. Do not edit.\n\n",
    );
    s.push_str(
        "static int every_known(const char *symbol, const char *message) {\n    static const char *const known[][2] = {",
    );
    for (sym, check, _) in KNOWN_FAILURES {
        let _ = write!(s, "{{\"{sym}\", \"{check}\"}}, ");
    }
    s.push_str(
        "{nullptr, nullptr}};\n    for (int i = 0; known[i][0]; i++)\n        if (std::strcmp(known[i][0], symbol) == 0 && std::strstr(message, known[i][1])) return 1;\n    return 0;\n}\n\n",
    );
    let typed: Vec<Ty> = TYPES.iter().map(|(n, c, _)| Ty::typed(n, c)).collect();
    let sized: Vec<Ty> = SIZES.iter().map(|&b| Ty::sized(b)).collect();
    for t in typed.iter().chain(&sized) {
        s += &helpers(t);
    }
    let mut calls = Vec::new();
    for (t, (name, _, _)) in typed.iter().zip(TYPES) {
        s += &rma(t, Some(name), 0);
        calls.push(format!("rma_{name}"));
    }
    for (t, bits) in sized.iter().zip(SIZES) {
        s += &rma(t, None, *bits);
        calls.push(format!("rma_{bits}"));
    }
    for (t, (name, _, is_p2p)) in typed.iter().zip(TYPES) {
        if *is_p2p {
            s += &p2p(t);
            calls.push(format!("p2p_{name}"));
        }
    }
    s.push_str("static void every_typed() {\n");
    for c in calls {
        let _ = writeln!(s, "    {c}();");
    }
    s.push_str("}\n");
    s
}
