//! Writes the typed half of the every-symbol C program from the type table (`src/table.rs`),
//! the one the library's wrappers and header come from: a call of every typed routine, with
//! values that a wrong element type would change, and a check of everything it may and may not
//! write. The untyped routines and `main` are hand-written (`conformance/c/every/untyped.c`).
//!
//! Every check fills the elements around its target with a sentinel and checks them too. Integer
//! values have the top bit of each byte width set (negative in every signed type) and differ
//! from one another in every byte; real values are non-integral and carry a tail that the next
//! narrower real type cannot hold; a "near" value differs from its value only in the top byte.

use std::fmt::Write as _;

use crate::{
    AMO_TYPES, BITWISE_AMO_TYPES, BITWISE_REDUCE_TYPES, REDUCE_TYPES, RMA_SIZES, RMA_TYPES,
};

/// Checks that fail because of a bug of the library, not of this test: the symbol, a part of
/// the failed check's message that identifies the check, and the reason. Such a failure is
/// reported as KNOWN and does not fail the test; an entry that no failure matches fails it
/// (the bug is fixed: remove the entry).
pub(crate) const KNOWN_FAILURES: &[(&str, &str, &str)] = &[];

/// The reduction types the table leaves to a later part of the generator (as `build.rs` does):
/// `long double` and the complex types.
const EXTRA_REDUCE_TYPES: &[(&str, &str)] = &[
    ("longdouble", "long double"),
    ("complexd", "double _Complex"),
    ("complexf", "float _Complex"),
];

/// The deprecated pre-1.4 atomic names exist for these AMO types (`fetch`, `set` and `swap`
/// only for the two real ones).
const DEPRECATED_AMO_TYPES: &[&str] = &["float", "double", "int", "long", "longlong"];

/// The deprecated `shmem_TYPENAME_wait`.
const DEPRECATED_WAIT_TYPES: &[&str] = &["short", "int", "long", "longlong"];

/// The deprecated `short`/`ushort` point-to-point routines.
const DEPRECATED_P2P_TYPES: &[&str] = &["short", "ushort"];

/// The deprecated active-set reductions (`shmem_TYPENAME_OP_to_all`, OpenSHMEM 1.5 table
/// `asetreducetypes`): TYPENAME and its operations.
const TO_ALL_TYPES: &[(&str, &[&str])] = &[
    ("short", &["and", "or", "xor", "max", "min", "sum", "prod"]),
    ("int", &["and", "or", "xor", "max", "min", "sum", "prod"]),
    ("long", &["and", "or", "xor", "max", "min", "sum", "prod"]),
    (
        "longlong",
        &["and", "or", "xor", "max", "min", "sum", "prod"],
    ),
    ("float", &["max", "min", "sum", "prod"]),
    ("double", &["max", "min", "sum", "prod"]),
    ("longdouble", &["max", "min", "sum", "prod"]),
    ("complexf", &["sum", "prod"]),
    ("complexd", &["sum", "prod"]),
];

/// How a C type's test values are made and shown.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Any integer type.
    Int,
    /// A real type, with the tail of its values (a constant of the type).
    Real(&'static str),
    /// A complex type: its `CMPLX` macro and its `creal`/`cimag`.
    Complex(&'static str, &'static str, &'static str),
    /// `n` opaque bytes: the element of a sized (`put32`) or `mem` routine.
    Bytes(usize),
}

/// One C type of the program: the suffix of its helpers (its TYPENAME), the C type, its kind.
#[derive(Clone, Debug)]
struct Ty {
    n: String,
    c: String,
    kind: Kind,
}

impl Ty {
    /// A TYPENAME of the table, its C type and its Rust type.
    fn typed(name: &str, c: &str, rust: &str) -> Ty {
        let kind = match (name, rust) {
            ("complexf", _) => Kind::Complex("CMPLXF", "crealf", "cimagf"),
            ("complexd", _) => Kind::Complex("CMPLX", "creal", "cimag"),
            (_, "f32") => Kind::Real("0"),
            (_, "f64") => Kind::Real("0x1p-30"),
            // `long double` is 16 opaque bytes in the table; its tail does not fit a double.
            ("longdouble", _) => Kind::Real("0x1p-56L"),
            _ => Kind::Int,
        };
        Ty {
            n: name.into(),
            c: c.into(),
            kind,
        }
    }

    /// The element of `bytes` bytes of the sized and `mem` routines.
    fn bytes(bytes: usize) -> Ty {
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

/// The C type of every TYPENAME the program uses.
fn type_of(name: &str) -> Ty {
    RMA_TYPES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(n, c, r)| Ty::typed(n, c, r))
        .or_else(|| {
            EXTRA_REDUCE_TYPES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(n, c)| Ty::typed(n, c, ""))
        })
        .unwrap_or_else(|| panic!("no C type for TYPENAME {name}"))
}

/// Every type that gets helpers: the RMA types, the extra reduction types, the byte elements.
fn all_types() -> Vec<Ty> {
    let mut v: Vec<Ty> = RMA_TYPES
        .iter()
        .map(|(n, c, r)| Ty::typed(n, c, r))
        .collect();
    v.extend(
        EXTRA_REDUCE_TYPES
            .iter()
            .filter(|(n, _)| !v.iter().any(|t| t.n == *n))
            .map(|(n, c)| Ty::typed(n, c, ""))
            .collect::<Vec<_>>(),
    );
    let mut sizes: Vec<usize> = RMA_SIZES.iter().map(|b| b / 8).collect();
    sizes.push(1);
    sizes.sort_unstable();
    sizes.dedup();
    v.extend(sizes.into_iter().map(Ty::bytes));
    v
}

/// The helpers of one type: values `v_N(k)` (k in 0..=14), positive values `p_N(k)`, small
/// multipliers `m_N(k)`, `near_N(x)`, the sentinel `s_N()`, `eq_N`, `show_N`, `set_N` and
/// `check_N`, which reports every differing element.
fn helpers(t: &Ty) -> String {
    let specific = match t.kind {
        Kind::Int => "\
static inline @T@ v_@N@(int k) { return (@T@)(0x8123456789ABCDEFULL + (unsigned long long)k * 0x0101010101010101ULL); }
static inline @T@ p_@N@(int k) { return (@T@)(0x0102030405060708ULL + (unsigned long long)k * 0x0101010101010101ULL); }
static inline @T@ m_@N@(int k) { return (@T@)(EVERY_SIGNED(@T@) ? -(k + 2) : (k + 2)); }
static inline @T@ near_@N@(@T@ x) { return (@T@)(x ^ (@T@)((@T@)1 << (sizeof(@T@) * 8 - 2))); }
static inline @T@ s_@N@(void) { return (@T@)0x5A5A5A5A5A5A5A5AULL; }
static inline int eq_@N@(@T@ a, @T@ b) { return a == b; }
static inline void show_@N@(char *b, @T@ x) {
    if (EVERY_SIGNED(@T@)) snprintf(b, 96, \"%lld (%#llx)\", (long long)x, (unsigned long long)x);
    else snprintf(b, 96, \"%llu (%#llx)\", (unsigned long long)x, (unsigned long long)x);
}
"
        .to_string(),
        Kind::Real(tail) => "\
static inline @T@ v_@N@(int k) { return -((@T@)1.25 + (@T@)k) - (@T@)@TAIL@; }
static inline @T@ p_@N@(int k) { return (@T@)0.5 + (@T@)(2 * k) + (@T@)2 * (@T@)@TAIL@; }
static inline @T@ m_@N@(int k) { return (@T@)1.5 + (@T@)k; }
static inline @T@ near_@N@(@T@ x) { return x + (@T@)1024; }
static inline @T@ s_@N@(void) { return (@T@)4242.5; }
static inline int eq_@N@(@T@ a, @T@ b) { return a == b; }
static inline void show_@N@(char *b, @T@ x) { snprintf(b, 96, \"%.21Lg (%La)\", (long double)x, (long double)x); }
"
        .replace("@TAIL@", tail),
        Kind::Complex(cmplx, re, im) => "\
static inline @T@ v_@N@(int k) { return @CMPLX@(-(1.25 + k), 0.5 + k); }
static inline @T@ p_@N@(int k) { return @CMPLX@(0.5 + 2 * k, 0.75); }
static inline @T@ m_@N@(int k) { return @CMPLX@(1.5 + k, -0.5); }
static inline @T@ near_@N@(@T@ x) { return x + 1024; }
static inline @T@ s_@N@(void) { return @CMPLX@(4242.5, -4242.5); }
static inline int eq_@N@(@T@ a, @T@ b) { return a == b; }
static inline void show_@N@(char *b, @T@ x) { snprintf(b, 96, \"%.17g%+.17gi\", (double)@RE@(x), (double)@IM@(x)); }
"
        .replace("@CMPLX@", cmplx)
        .replace("@RE@", re)
        .replace("@IM@", im),
        Kind::Bytes(n) => "\
typedef struct { unsigned char b[@BYTES@]; } @T@;
static inline @T@ v_@N@(int k) { @T@ x; for (int j = 0; j < @BYTES@; j++) x.b[j] = (unsigned char)((k * 16 + j) ^ 0xA5); return x; }
static inline @T@ s_@N@(void) { @T@ x; memset(x.b, 0x5A, sizeof x.b); return x; }
static inline int eq_@N@(@T@ a, @T@ b) { return memcmp(a.b, b.b, sizeof a.b) == 0; }
static inline void show_@N@(char *s, @T@ x) { for (int j = 0; j < @BYTES@; j++) snprintf(s + 2 * j, 3, \"%02x\", x.b[j]); }
"
        .replace("@BYTES@", &n.to_string()),
    };
    t.fill(&format!(
        "/* {c} */\n{specific}\
static inline void set_@N@(@T@ *a, size_t n, @T@ x) {{ for (size_t i = 0; i < n; i++) a[i] = x; }}
static inline void check_@N@(const char *sym, const char *what, const @T@ *got, const @T@ *want, size_t n) {{
    for (size_t i = 0; i < n; i++)
        if (!eq_@N@(got[i], want[i])) {{
            char e[96], g[96];
            show_@N@(e, want[i]);
            show_@N@(g, got[i]);
            every_fail(sym, \"%s[%zu]: expected %s, got %s\", what, i, e, g);
        }}
}}

",
        c = t.c
    ))
}

/// One checked call: `setup`, a barrier, `call` and `quiet`, a barrier, then `check`.
fn block(t: &Ty, sym: &str, setup: &str, call: &str, quiet: &str, check: &str) -> String {
    let mut s = format!("    /* {sym} */\n");
    for part in [
        setup,
        "shmem_barrier_all();",
        call,
        quiet,
        "shmem_barrier_all();",
        check,
    ] {
        for line in part.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(s, "    {line}");
        }
    }
    t.fill(&s).replace("@SYM@", sym)
}

/// The name of operation `op` of an RMA family: `shmem_[ctx_]TYPENAME_op`, or for a sized or
/// `mem` family `shmem_[ctx_]put32`, `shmem_[ctx_]put32_nbi`, `shmem_[ctx_]putmem_signal`, ….
fn rma_name(infix: &str, sized: bool, ctx: bool, op: &str) -> String {
    let c = if ctx { "ctx_" } else { "" };
    if !sized {
        return format!("shmem_{c}{infix}_{op}");
    }
    match op.split_once('_') {
        Some((base, suffix)) => format!("shmem_{c}{base}{infix}_{suffix}"),
        None => format!("shmem_{c}{op}{infix}"),
    }
}

/// An RMA family: TYPENAME (or SIZE, or `mem`), its element type, and whether it is sized.
struct Family {
    infix: String,
    ty: Ty,
    sized: bool,
}

fn rma_families() -> Vec<Family> {
    let mut v: Vec<Family> = RMA_TYPES
        .iter()
        .map(|(n, c, r)| Family {
            infix: n.to_string(),
            ty: Ty::typed(n, c, r),
            sized: false,
        })
        .collect();
    v.extend(RMA_SIZES.iter().map(|bits| Family {
        infix: bits.to_string(),
        ty: Ty::bytes(bits / 8),
        sized: true,
    }));
    v.push(Family {
        infix: "mem".into(),
        ty: Ty::bytes(1),
        sized: true,
    });
    v
}

/// The RMA and put-with-signal routines of one family, each also in its context form.
fn rma(f: &Family) -> String {
    let t = &f.ty;
    let mem = f.infix == "mem";
    let mut s = t.fill(&format!(
        "static void rma_{}(void) {{\n    int me = every_me, peer = every_peer;\n    @T@ *d = (@T@ *)every_d, *s = (@T@ *)every_s, l[16], w[16];\n    uint64_t *g = (uint64_t *)every_g;\n",
        f.infix
    ));
    let remote_dest_check = "set_@N@(w, 16, s_@N@());\n";
    for ctx in [false, true] {
        let name = |op: &str| rma_name(&f.infix, f.sized, ctx, op);
        let c = if ctx { "every_ctx, " } else { "" };
        // Remote completion: a context's operations need its quiet; the non-blocking ones
        // on the default context get one too.
        let (q, qn) = if ctx {
            ("shmem_ctx_quiet(every_ctx);", "shmem_ctx_quiet(every_ctx);")
        } else {
            ("", "shmem_quiet();")
        };
        for (op, quiet) in [("put", q), ("put_nbi", qn)] {
            s += &block(
                t,
                &name(op),
                "set_@N@(d, 16, s_@N@());\nfor (int i = 0; i < 3; i++) l[i] = v_@N@(me * 4 + i + 1);",
                &format!("@SYM@({c}d + 1, l, 3, peer);"),
                quiet,
                &format!(
                    "{remote_dest_check}for (int i = 0; i < 3; i++) w[1 + i] = v_@N@(peer * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
                ),
            );
        }
        for (op, quiet) in [("get", q), ("get_nbi", qn)] {
            s += &block(
                t,
                &name(op),
                "set_@N@(s, 16, v_@N@(13));\nfor (int i = 0; i < 3; i++) s[2 + i] = v_@N@(me * 4 + i + 1);\nset_@N@(l, 16, s_@N@());",
                &format!("@SYM@({c}l + 1, s + 2, 3, peer);"),
                quiet,
                "set_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) w[1 + i] = v_@N@(peer * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", l, w, 16);",
            );
        }
        if !mem {
            // Strided: 3 elements, destination stride 2, source stride 3.
            s += &block(
                t,
                &name("iput"),
                "set_@N@(d, 16, s_@N@());\nset_@N@(l, 16, v_@N@(13));\nfor (int i = 0; i < 3; i++) l[3 * i] = v_@N@(me * 4 + i + 1);",
                &format!("@SYM@({c}d + 1, l, 2, 3, 3, peer);"),
                q,
                "set_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) w[1 + 2 * i] = v_@N@(peer * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);",
            );
            s += &block(
                t,
                &name("iget"),
                "set_@N@(s, 16, v_@N@(13));\nfor (int i = 0; i < 3; i++) s[2 + 3 * i] = v_@N@(me * 4 + i + 1);\nset_@N@(l, 16, s_@N@());",
                &format!("@SYM@({c}l + 1, s + 2, 2, 3, 3, peer);"),
                q,
                "set_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) w[1 + 2 * i] = v_@N@(peer * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", l, w, 16);",
            );
            // Blocks: 2 blocks of 2 elements, destination stride 3, source stride 4.
            s += &block(
                t,
                &name("ibput"),
                "set_@N@(d, 16, s_@N@());\nset_@N@(l, 16, v_@N@(13));\nfor (int b = 0; b < 2; b++) for (int j = 0; j < 2; j++) l[4 * b + j] = v_@N@(me * 4 + 2 * b + j + 1);",
                &format!("@SYM@({c}d + 1, l, 3, 4, 2, 2, peer);"),
                q,
                "set_@N@(w, 16, s_@N@());\nfor (int b = 0; b < 2; b++) for (int j = 0; j < 2; j++) w[1 + 3 * b + j] = v_@N@(peer * 4 + 2 * b + j + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);",
            );
            s += &block(
                t,
                &name("ibget"),
                "set_@N@(s, 16, v_@N@(13));\nfor (int b = 0; b < 2; b++) for (int j = 0; j < 2; j++) s[2 + 4 * b + j] = v_@N@(me * 4 + 2 * b + j + 1);\nset_@N@(l, 16, s_@N@());",
                &format!("@SYM@({c}l + 1, s + 2, 3, 4, 2, 2, peer);"),
                q,
                "set_@N@(w, 16, s_@N@());\nfor (int b = 0; b < 2; b++) for (int j = 0; j < 2; j++) w[1 + 3 * b + j] = v_@N@(peer * 4 + 2 * b + j + 1);\ncheck_@N@(\"@SYM@\", \"dest\", l, w, 16);",
            );
        }
        if !f.sized {
            s += &block(
                t,
                &name("p"),
                "set_@N@(d, 16, s_@N@());",
                &format!("@SYM@({c}d + 2, v_@N@(me * 4 + 3), peer);"),
                q,
                "set_@N@(w, 16, s_@N@());\nw[2] = v_@N@(peer * 4 + 3);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);",
            );
            s += &block(
                t,
                &name("g"),
                "set_@N@(s, 16, v_@N@(13));\ns[2] = v_@N@(me * 4 + 3);",
                &format!("l[0] = @SYM@({c}s + 2, peer);"),
                "",
                "w[0] = v_@N@(peer * 4 + 3);\ncheck_@N@(\"@SYM@\", \"value\", l, w, 1);",
            );
        }
        // Put-with-signal: SET from the blocking form, ADD from the non-blocking one.
        for (op, quiet, sig_op, want) in [
            (
                "put_signal",
                q,
                "SHMEM_SIGNAL_SET",
                "0x8123456789ABCDEFULL + (uint64_t)peer",
            ),
            (
                "put_signal_nbi",
                qn,
                "SHMEM_SIGNAL_ADD",
                "0x1000000000000001ULL + 0x8123456789ABCDEFULL + (uint64_t)peer",
            ),
        ] {
            s += &block(
                t,
                &name(op),
                "set_@N@(d, 16, s_@N@());\nfor (int i = 0; i < 3; i++) l[i] = v_@N@(me * 4 + i + 1);\nset_uint64(g, 3, s_uint64());\ng[1] = 0x1000000000000001ULL;",
                &format!(
                    "@SYM@({c}d + 1, l, 3, g + 1, 0x8123456789ABCDEFULL + (uint64_t)me, {sig_op}, peer);"
                ),
                quiet,
                &format!(
                    "set_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) w[1 + i] = v_@N@(peer * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);\n{{\n    uint64_t gw[3] = {{s_uint64(), {want}, s_uint64()}};\n    check_uint64(\"@SYM@\", \"signal\", g, gw, 3);\n}}"
                ),
            );
        }
    }
    s.push_str("}\n\n");
    s
}

/// An atomic operation: its name, whether it returns the old value, its operands after the
/// target (C, computed by the calling PE `me`), and the target's new value (computed by the
/// target PE from its old value `@OLD@` and the caller `peer`).
struct AmoOp {
    op: &'static str,
    fetching: bool,
    args: &'static [&'static str],
    new: &'static str,
}

const fn amo_op(
    op: &'static str,
    fetching: bool,
    args: &'static [&'static str],
    new: &'static str,
) -> AmoOp {
    AmoOp {
        op,
        fetching,
        args,
        new,
    }
}

const SET_ARG: &[&str] = &["v_@N@(me * 4 + 2)"];
const SET_NEW: &str = "v_@N@(peer * 4 + 2)";
const CSWAP_ARGS: &[&str] = &["v_@N@(peer * 4 + 1)", "v_@N@(me * 4 + 2)"];
const ADD_ARG: &[&str] = &["p_@N@(me + 1)"];
const ADD_NEW: &str = "(@T@)(@OLD@ + p_@N@(peer + 1))";
const INC_NEW: &str = "(@T@)(@OLD@ + 1)";

const EXTENDED_OPS: &[AmoOp] = &[
    amo_op("fetch", true, &[], "@OLD@"),
    amo_op("set", false, SET_ARG, SET_NEW),
    amo_op("swap", true, SET_ARG, SET_NEW),
];

const STANDARD_OPS: &[AmoOp] = &[
    amo_op("compare_swap", true, CSWAP_ARGS, SET_NEW),
    amo_op("fetch_inc", true, &[], INC_NEW),
    amo_op("inc", false, &[], INC_NEW),
    amo_op("fetch_add", true, ADD_ARG, ADD_NEW),
    amo_op("add", false, ADD_ARG, ADD_NEW),
];

const BITWISE_OPS: &[AmoOp] = &[
    amo_op(
        "fetch_and",
        true,
        SET_ARG,
        "(@T@)(@OLD@ & v_@N@(peer * 4 + 2))",
    ),
    amo_op("and", false, SET_ARG, "(@T@)(@OLD@ & v_@N@(peer * 4 + 2))"),
    amo_op(
        "fetch_or",
        true,
        SET_ARG,
        "(@T@)(@OLD@ | v_@N@(peer * 4 + 2))",
    ),
    amo_op("or", false, SET_ARG, "(@T@)(@OLD@ | v_@N@(peer * 4 + 2))"),
    amo_op(
        "fetch_xor",
        true,
        SET_ARG,
        "(@T@)(@OLD@ ^ v_@N@(peer * 4 + 2))",
    ),
    amo_op("xor", false, SET_ARG, "(@T@)(@OLD@ ^ v_@N@(peer * 4 + 2))"),
];

/// The deprecated names: (old name, the operation it is).
const DEPRECATED_OPS: &[(&str, &str)] = &[
    ("fetch", "fetch"),
    ("set", "set"),
    ("swap", "swap"),
    ("cswap", "compare_swap"),
    ("finc", "fetch_inc"),
    ("inc", "inc"),
    ("fadd", "fetch_add"),
    ("add", "add"),
];

/// One checked atomic on the other PE's target, whose neighbours are sentinels: `sym` does
/// `o`, non-blocking (`nbi`, delivering to `f[1]`) or not, on context `ctx`.
fn amo_block(t: &Ty, sym: &str, o: &AmoOp, nbi: bool, ctx: bool) -> String {
    let c = if ctx { "every_ctx, " } else { "" };
    let mut args = vec![if nbi { "f + 1, a + 1" } else { "a + 1" }.to_string()];
    args.extend(o.args.iter().map(|a| a.to_string()));
    args.push("peer".into());
    let call = format!("@SYM@({c}{})", args.join(", "));
    let mut call = if o.fetching && !nbi {
        format!("f[1] = {call};")
    } else {
        format!("{call};")
    };
    if matches!(o.op, "compare_swap") && !nbi {
        // First a compare that fails in the top byte only: nothing changes.
        call = format!(
            "f[0] = @SYM@({c}a + 1, near_@N@(v_@N@(peer * 4 + 1)), v_@N@(me * 4 + 3), peer);\nw[0] = v_@N@(peer * 4 + 1);\ncheck_@N@(\"@SYM@\", \"fetched by a failing compare\", f, w, 1);\nf[0] = s_@N@();\n{call}"
        );
    }
    let quiet = match (ctx, nbi) {
        (true, _) => "shmem_ctx_quiet(every_ctx);",
        (false, true) => "shmem_quiet();",
        (false, false) => "",
    };
    let mut check = String::new();
    if o.fetching {
        check += "set_@N@(w, 3, s_@N@());\nw[1] = v_@N@(peer * 4 + 1);\ncheck_@N@(\"@SYM@\", \"fetched\", f, w, 3);\n";
    }
    let _ = write!(
        check,
        "set_@N@(w, 3, s_@N@());\nw[1] = {};\ncheck_@N@(\"@SYM@\", \"target\", a, w, 3);",
        o.new.replace("@OLD@", "v_@N@(me * 4 + 1)")
    );
    block(
        t,
        sym,
        "set_@N@(a, 3, s_@N@());\na[1] = v_@N@(me * 4 + 1);\nset_@N@(f, 3, s_@N@());",
        &call,
        quiet,
        &check,
    )
}

/// Every atomic of one AMO type, each also non-blocking (the fetching ones) and in context form;
/// and the deprecated names.
fn amo(name: &str) -> String {
    let t = type_of(name);
    let mut ops: Vec<&AmoOp> = EXTENDED_OPS.iter().collect();
    if !matches!(name, "float" | "double") {
        ops.extend(STANDARD_OPS);
    }
    if BITWISE_AMO_TYPES.contains(&name) {
        ops.extend(BITWISE_OPS);
    }
    let mut s = t.fill(&format!(
        "static void amo_{name}(void) {{\n    int me = every_me, peer = every_peer;\n    @T@ *a = (@T@ *)every_d, f[3], w[3];\n"
    ));
    for ctx in [false, true] {
        let c = if ctx { "ctx_" } else { "" };
        for o in &ops {
            s += &amo_block(
                &t,
                &format!("shmem_{c}{name}_atomic_{}", o.op),
                o,
                false,
                ctx,
            );
            if o.fetching {
                s += &amo_block(
                    &t,
                    &format!("shmem_{c}{name}_atomic_{}_nbi", o.op),
                    o,
                    true,
                    ctx,
                );
            }
        }
    }
    if DEPRECATED_AMO_TYPES.contains(&name) {
        for (old, op) in DEPRECATED_OPS {
            if let Some(o) = ops.iter().find(|o| o.op == *op) {
                s += &amo_block(&t, &format!("shmem_{name}_{old}"), o, false, false);
            }
        }
    }
    s.push_str("}\n\n");
    s
}

/// The point-to-point routines of one standard AMO type, on a value the other PE puts and on
/// values set here. Each wait is called only when the matching test says it returns: a wrong
/// wait would block until the library's timeout, and end the program there.
fn p2p(name: &str) -> String {
    let t = type_of(name);
    let template = "\
static void p2p_@N@(void) {
    int me = every_me, peer = every_peer, t, st[3] = {0, 1, 0};
    @T@ *iv = (@T@ *)every_d, w[5], cv[3];
    @T@ v1 = v_@N@(1), v2 = v_@N@(2), v3 = v_@N@(3);
    size_t ix[5], r;
    const size_t sx = (size_t)0x5A5A5A5A5A5A5A5AULL;

    /* shmem_@N@_test, shmem_@N@_wait_until: the other PE has put the value (as bytes) */
    set_@N@(iv, 5, s_@N@());
    shmem_barrier_all();
    cv[0] = v_@N@(me * 4 + 1);
    shmem_putmem(iv + 1, cv, sizeof cv[0], peer);
    shmem_barrier_all();
    set_@N@(w, 5, s_@N@());
    w[1] = v_@N@(peer * 4 + 1);
    t = shmem_@N@_test(iv + 1, SHMEM_CMP_EQ, w[1]);
    EXPECT(t == 1, \"shmem_@N@_test\", \"EQ its value: expected 1, got %d\", t);
    if (t == 1) shmem_@N@_wait_until(iv + 1, SHMEM_CMP_EQ, w[1]);
    else every_fail(\"shmem_@N@_wait_until\", \"not called: test says it would block\");
    check_@N@(\"shmem_@N@_wait_until\", \"ivar\", iv, w, 5);
    t = shmem_@N@_test(iv + 1, SHMEM_CMP_EQ, near_@N@(w[1]));
    EXPECT(t == 0, \"shmem_@N@_test\", \"EQ a value that differs in the top byte: expected 0, got %d\", t);
    t = shmem_@N@_test(iv + 1, SHMEM_CMP_LT, p_@N@(0));
    EXPECT(t == EVERY_SIGNED(@T@), \"shmem_@N@_test\", \"LT a positive value: expected %d, got %d\", EVERY_SIGNED(@T@), t);
    shmem_barrier_all();

    /* shmem_@N@_test_all, shmem_@N@_wait_until_all: element 1 differs, and is excluded */
    set_@N@(iv, 5, s_@N@());
    iv[1] = v1; iv[2] = near_@N@(v1); iv[3] = v1;
    memcpy(w, iv, sizeof w);
    t = shmem_@N@_test_all(iv + 1, 3, NULL, SHMEM_CMP_EQ, v1);
    EXPECT(t == 0, \"shmem_@N@_test_all\", \"with every element: expected 0, got %d\", t);
    t = shmem_@N@_test_all(iv + 1, 3, st, SHMEM_CMP_EQ, v1);
    EXPECT(t == 1, \"shmem_@N@_test_all\", \"with element 1 excluded: expected 1, got %d\", t);
    if (t == 1) shmem_@N@_wait_until_all(iv + 1, 3, st, SHMEM_CMP_EQ, v1);
    else every_fail(\"shmem_@N@_wait_until_all\", \"not called: test_all says it would block\");
    check_@N@(\"shmem_@N@_wait_until_all\", \"ivars\", iv, w, 5);

    /* shmem_@N@_test_any, shmem_@N@_wait_until_any: only element 2 qualifies */
    set_@N@(iv, 5, s_@N@());
    iv[1] = near_@N@(v1); iv[2] = v1; iv[3] = v1;
    memcpy(w, iv, sizeof w);
    r = shmem_@N@_test_any(iv + 1, 1, NULL, SHMEM_CMP_EQ, v1);
    EXPECT(r == SIZE_MAX, \"shmem_@N@_test_any\", \"with no match: expected SIZE_MAX, got %zu\", r);
    r = shmem_@N@_test_any(iv + 1, 3, st, SHMEM_CMP_EQ, v1);
    EXPECT(r == 2, \"shmem_@N@_test_any\", \"expected index 2, got %zu\", r);
    if (r == 2) {
        r = shmem_@N@_wait_until_any(iv + 1, 3, st, SHMEM_CMP_EQ, v1);
        EXPECT(r == 2, \"shmem_@N@_wait_until_any\", \"expected index 2, got %zu\", r);
    } else every_fail(\"shmem_@N@_wait_until_any\", \"not called: test_any says it would block\");
    check_@N@(\"shmem_@N@_wait_until_any\", \"ivars\", iv, w, 5);

    /* shmem_@N@_test_some, shmem_@N@_wait_until_some: elements 0 and 2 (1 is excluded) */
    set_@N@(iv, 5, s_@N@());
    iv[1] = v1; iv[2] = v1; iv[3] = v1;
    memcpy(w, iv, sizeof w);
    for (int i = 0; i < 5; i++) ix[i] = sx;
    r = shmem_@N@_test_some(iv + 1, 3, ix + 1, NULL, SHMEM_CMP_EQ, near_@N@(v1));
    EXPECT(r == 0, \"shmem_@N@_test_some\", \"with no match: expected 0, got %zu\", r);
    r = shmem_@N@_test_some(iv + 1, 3, ix + 1, st, SHMEM_CMP_EQ, v1);
    EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == sx && ix[4] == sx, \"shmem_@N@_test_some\",
           \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == sx && ix[4] == sx ? \"intact\" : \"overwritten\");
    if (r == 2) {
        for (int i = 0; i < 5; i++) ix[i] = sx;
        r = shmem_@N@_wait_until_some(iv + 1, 3, ix + 1, st, SHMEM_CMP_EQ, v1);
        EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == sx && ix[4] == sx, \"shmem_@N@_wait_until_some\",
               \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == sx && ix[4] == sx ? \"intact\" : \"overwritten\");
    } else every_fail(\"shmem_@N@_wait_until_some\", \"not called: test_some says it would block\");
    check_@N@(\"shmem_@N@_wait_until_some\", \"ivars\", iv, w, 5);

    /* shmem_@N@_test_all_vector, shmem_@N@_wait_until_all_vector: element 1 differs in its top byte */
    set_@N@(iv, 5, s_@N@());
    iv[1] = v1; iv[2] = near_@N@(v2); iv[3] = v3;
    cv[0] = v1; cv[1] = v2; cv[2] = v3;
    memcpy(w, iv, sizeof w);
    t = shmem_@N@_test_all_vector(iv + 1, 3, NULL, SHMEM_CMP_EQ, cv);
    EXPECT(t == 0, \"shmem_@N@_test_all_vector\", \"with every element: expected 0, got %d\", t);
    t = shmem_@N@_test_all_vector(iv + 1, 3, st, SHMEM_CMP_EQ, cv);
    EXPECT(t == 1, \"shmem_@N@_test_all_vector\", \"with element 1 excluded: expected 1, got %d\", t);
    if (t == 1) shmem_@N@_wait_until_all_vector(iv + 1, 3, st, SHMEM_CMP_EQ, cv);
    else every_fail(\"shmem_@N@_wait_until_all_vector\", \"not called: test_all_vector says it would block\");
    check_@N@(\"shmem_@N@_wait_until_all_vector\", \"ivars\", iv, w, 5);

    /* shmem_@N@_test_any_vector, shmem_@N@_wait_until_any_vector: element 0 differs, 1 is excluded */
    set_@N@(iv, 5, s_@N@());
    iv[1] = v1; iv[2] = v2; iv[3] = v3;
    cv[0] = near_@N@(v1); cv[1] = v2; cv[2] = v3;
    memcpy(w, iv, sizeof w);
    r = shmem_@N@_test_any_vector(iv + 1, 3, st, SHMEM_CMP_EQ, cv);
    EXPECT(r == 2, \"shmem_@N@_test_any_vector\", \"expected index 2, got %zu\", r);
    if (r == 2) {
        r = shmem_@N@_wait_until_any_vector(iv + 1, 3, st, SHMEM_CMP_EQ, cv);
        EXPECT(r == 2, \"shmem_@N@_wait_until_any_vector\", \"expected index 2, got %zu\", r);
    } else every_fail(\"shmem_@N@_wait_until_any_vector\", \"not called: test_any_vector says it would block\");
    check_@N@(\"shmem_@N@_wait_until_any_vector\", \"ivars\", iv, w, 5);

    /* shmem_@N@_test_some_vector, shmem_@N@_wait_until_some_vector: GE, element 1 is below */
    set_@N@(iv, 5, s_@N@());
    iv[1] = v1; iv[2] = v2; iv[3] = v3;
    cv[0] = v1; cv[1] = near_@N@(v2); cv[2] = v2;
    memcpy(w, iv, sizeof w);
    for (int i = 0; i < 5; i++) ix[i] = sx;
    r = shmem_@N@_test_some_vector(iv + 1, 3, ix + 1, NULL, SHMEM_CMP_GE, cv);
    EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == sx && ix[4] == sx, \"shmem_@N@_test_some_vector\",
           \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == sx && ix[4] == sx ? \"intact\" : \"overwritten\");
    if (r == 2) {
        for (int i = 0; i < 5; i++) ix[i] = sx;
        r = shmem_@N@_wait_until_some_vector(iv + 1, 3, ix + 1, NULL, SHMEM_CMP_GE, cv);
        EXPECT(r == 2 && ix[1] == 0 && ix[2] == 2 && ix[0] == sx && ix[4] == sx, \"shmem_@N@_wait_until_some_vector\",
               \"expected 2 indices {0, 2}, got %zu: {%zu, %zu}, guards %s\", r, ix[1], ix[2], ix[0] == sx && ix[4] == sx ? \"intact\" : \"overwritten\");
    } else every_fail(\"shmem_@N@_wait_until_some_vector\", \"not called: test_some_vector says it would block\");
    check_@N@(\"shmem_@N@_wait_until_some_vector\", \"ivars\", iv, w, 5);
    shmem_barrier_all();
}

";
    t.fill(template)
}

/// The deprecated point-to-point routines: `short`/`ushort` `wait_until` and `test`,
/// `shmem_TYPENAME_wait`, `shmem_wait_until` and `shmem_wait` (both on `long`).
fn p2p_deprecated() -> String {
    let mut s = String::from("static void p2p_deprecated(void) {\n");
    let wait_until = |t: &Ty, wait_until: &str, test: &str| {
        t.fill(&format!(
            "    {{ /* {wait_until}, {test} */
        @T@ *iv = (@T@ *)every_d, w[3], v1 = v_@N@(1);
        int t;
        set_@N@(iv, 3, s_@N@());
        iv[1] = v1;
        memcpy(w, iv, sizeof w);
        t = {test}(iv + 1, SHMEM_CMP_EQ, near_@N@(v1));
        EXPECT(t == 0, \"{test}\", \"EQ a value that differs in the top byte: expected 0, got %d\", t);
        t = {test}(iv + 1, SHMEM_CMP_EQ, v1);
        EXPECT(t == 1, \"{test}\", \"EQ its value: expected 1, got %d\", t);
        if (t == 1) {wait_until}(iv + 1, SHMEM_CMP_EQ, v1);
        else every_fail(\"{wait_until}\", \"not called: {test} says it would block\");
        check_@N@(\"{wait_until}\", \"ivar\", iv, w, 3);
    }}
"
        ))
    };
    let wait = |t: &Ty, wait: &str, test: &str| {
        t.fill(&format!(
            "    {{ /* {wait}: returns once the variable differs from the value */
        @T@ *iv = (@T@ *)every_d, w[3], v1 = v_@N@(1);
        int t;
        set_@N@(iv, 3, s_@N@());
        iv[1] = v1;
        memcpy(w, iv, sizeof w);
        t = {test}(iv + 1, SHMEM_CMP_NE, near_@N@(v1));
        if (t == 1) {wait}(iv + 1, near_@N@(v1));
        else every_fail(\"{wait}\", \"not called: {test} says it would block\");
        check_@N@(\"{wait}\", \"ivar\", iv, w, 3);
    }}
"
        ))
    };
    for name in DEPRECATED_P2P_TYPES {
        s += &wait_until(
            &type_of(name),
            &format!("shmem_{name}_wait_until"),
            &format!("shmem_{name}_test"),
        );
    }
    for name in DEPRECATED_WAIT_TYPES {
        s += &wait(
            &type_of(name),
            &format!("shmem_{name}_wait"),
            &format!("shmem_{name}_test"),
        );
    }
    let long = type_of("long");
    s += &wait_until(&long, "shmem_wait_until", "shmem_long_test");
    s += &wait(&long, "shmem_wait", "shmem_long_test");
    s.push_str("}\n\n");
    s
}

/// How a collective is called: the team form (returns 0 on success) or an active-set form
/// (`void`, over PEs 0 and 1 with a pSync array), whose broadcast does not write the root.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Team,
    ActiveSet,
}

impl Form {
    /// The call statement of `sym` with the routine's own arguments `args` and `psync`.
    fn call(self, sym: &str, args: &str, psync: &str) -> String {
        match self {
            Form::Team => format!("rc = {sym}(SHMEM_TEAM_WORLD, {args});"),
            Form::ActiveSet => format!("{sym}({args}, 0, 0, 2, {psync});\nrc = 0;"),
        }
    }
}

/// Broadcast (from PE 1), collect (PE 0 brings 1 element, PE 1 two), fcollect, alltoall and
/// alltoalls (destination stride 2, source stride 3) of one element type; `names` gives the
/// routine for each of the five.
fn collectives(t: &Ty, form: Form, names: [&str; 5]) -> String {
    let [broadcast, collect, fcollect, alltoall, alltoalls] = names;
    let rc = "EXPECT(rc == 0, \"@SYM@\", \"returned %d\", rc);\nset_@N@(w, 16, s_@N@());\n";
    let setup = "set_@N@(d, 16, s_@N@());\nset_@N@(s, 16, v_@N@(13));\n";
    let root_writes = if form == Form::Team { "1" } else { "me != 1" };
    let mut s = String::new();
    s += &block(
        t,
        broadcast,
        &format!("{setup}for (int i = 0; i < 3; i++) s[1 + i] = v_@N@(me * 4 + i + 1);"),
        &match form {
            Form::Team => format!("rc = {broadcast}(SHMEM_TEAM_WORLD, d + 1, s + 1, 3, 1);"),
            Form::ActiveSet => {
                format!("{broadcast}(d + 1, s + 1, 3, 1, 0, 0, 2, every_ps_bcast);\nrc = 0;")
            }
        },
        "",
        &format!(
            "{rc}if ({root_writes}) for (int i = 0; i < 3; i++) w[1 + i] = v_@N@(4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    );
    s += &block(
        t,
        collect,
        &format!("{setup}for (int i = 0; i < 2; i++) s[1 + i] = v_@N@(me * 4 + i + 1);"),
        &form.call(collect, "d + 1, s + 1, (size_t)me + 1", "every_ps_collect"),
        "",
        &format!(
            "{rc}w[1] = v_@N@(1);\nw[2] = v_@N@(5);\nw[3] = v_@N@(6);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    );
    s += &block(
        t,
        fcollect,
        &format!("{setup}for (int i = 0; i < 2; i++) s[1 + i] = v_@N@(me * 4 + i + 1);"),
        &form.call(fcollect, "d + 1, s + 1, 2", "every_ps_collect"),
        "",
        &format!(
            "{rc}for (int p = 0; p < 2; p++) for (int i = 0; i < 2; i++) w[1 + 2 * p + i] = v_@N@(p * 4 + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    );
    s += &block(
        t,
        alltoall,
        &format!(
            "{setup}for (int k = 0; k < 2; k++) for (int i = 0; i < 2; i++) s[1 + 2 * k + i] = v_@N@(me * 4 + 2 * k + i + 1);"
        ),
        &form.call(alltoall, "d + 1, s + 1, 2", "every_ps_alltoall"),
        "",
        &format!(
            "{rc}for (int j = 0; j < 2; j++) for (int i = 0; i < 2; i++) w[1 + 2 * j + i] = v_@N@(j * 4 + 2 * me + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    );
    s += &block(
        t,
        alltoalls,
        &format!(
            "{setup}for (int k = 0; k < 2; k++) for (int i = 0; i < 2; i++) s[1 + 3 * (2 * k + i)] = v_@N@(me * 4 + 2 * k + i + 1);"
        ),
        &form.call(alltoalls, "d + 1, s + 1, 2, 3, 2", "every_ps_alltoalls"),
        "",
        &format!(
            "{rc}for (int j = 0; j < 2; j++) for (int i = 0; i < 2; i++) w[1 + 2 * (2 * j + i)] = v_@N@(j * 4 + 2 * me + i + 1);\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    );
    s
}

/// The operands of a reduction on PE 0 (`a`) and PE 1 (`b`), element `i`, and their result.
fn reduce_operands(op: &str) -> (&'static str, &'static str, &'static str) {
    match op {
        "and" => ("v_@N@(i + 1)", "(@T@)~p_@N@(i + 1)", "(@T@)(a & b)"),
        "or" => ("v_@N@(i + 1)", "(@T@)~p_@N@(i + 1)", "(@T@)(a | b)"),
        "xor" => ("v_@N@(i + 1)", "(@T@)~p_@N@(i + 1)", "(@T@)(a ^ b)"),
        "max" => ("v_@N@(i + 1)", "p_@N@(i + 1)", "a > b ? a : b"),
        "min" => ("v_@N@(i + 1)", "p_@N@(i + 1)", "a < b ? a : b"),
        "sum" => ("v_@N@(i + 1)", "p_@N@(i + 1)", "(@T@)(a + b)"),
        "prod" => ("m_@N@(i)", "p_@N@(i + 1)", "(@T@)(a * b)"),
        _ => panic!("no reduction {op}"),
    }
}

/// One reduction of 3 elements by `sym`, team-based or active-set.
fn reduce_block(t: &Ty, sym: &str, op: &str, form: Form) -> String {
    let (a, b, result) = reduce_operands(op);
    let call = match form {
        Form::Team => format!("rc = {sym}(SHMEM_TEAM_WORLD, d + 1, s + 1, 3);"),
        Form::ActiveSet => {
            format!("{sym}(d + 1, s + 1, 3, 0, 0, 2, (@T@ *)every_wrk, every_ps_reduce);\nrc = 0;")
        }
    };
    block(
        t,
        sym,
        &format!(
            "set_@N@(d, 16, s_@N@());\nset_@N@(s, 16, v_@N@(13));\nfor (int i = 0; i < 3; i++) s[1 + i] = me == 0 ? {a} : {b};"
        ),
        &call,
        "",
        &format!(
            "EXPECT(rc == 0, \"@SYM@\", \"returned %d\", rc);\nset_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) {{\n    @T@ a = {a}, b = {b};\n    w[1 + i] = {result};\n}}\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
        ),
    )
}

/// A function body's declarations for the collectives of one type.
fn coll_head(t: &Ty, fname: &str) -> String {
    t.fill(&format!(
        "static void {fname}(void) {{\n    int me = every_me, rc;\n    @T@ *d = (@T@ *)every_d, *s = (@T@ *)every_s, w[16];\n    (void)me;\n"
    ))
}

/// The team collectives of one RMA family (TYPENAME or `mem`).
fn coll(infix: &str, t: &Ty) -> String {
    let names: Vec<String> = ["broadcast", "collect", "fcollect", "alltoall", "alltoalls"]
        .iter()
        .map(|op| {
            if infix == "mem" {
                format!("shmem_{op}mem")
            } else {
                format!("shmem_{infix}_{op}")
            }
        })
        .collect();
    let names: [&str; 5] = std::array::from_fn(|i| names[i].as_str());
    let mut s = coll_head(t, &format!("coll_{infix}"));
    s += &collectives(t, Form::Team, names);
    s.push_str("}\n\n");
    s
}

/// The reductions and scans of one reduction type, with the operations `ops`.
fn reduce(name: &str, ops: &[&str]) -> String {
    let t = type_of(name);
    let mut s = coll_head(&t, &format!("reduce_{name}"));
    for op in ops {
        s += &reduce_block(&t, &format!("shmem_{name}_{op}_reduce"), op, Form::Team);
    }
    // Scans: PE 0's exclusive sum is not specified; only its neighbours are checked there.
    let (a, b, _) = reduce_operands("sum");
    for (op, want) in [
        ("sum_inscan", "me == 0 ? a : (@T@)(a + b)"),
        ("sum_exscan", "me == 1 ? a : d[1 + i]"),
    ] {
        s += &block(
            &t,
            &format!("shmem_{name}_{op}"),
            &format!(
                "set_@N@(d, 16, s_@N@());\nset_@N@(s, 16, v_@N@(13));\nfor (int i = 0; i < 3; i++) s[1 + i] = me == 0 ? {a} : {b};"
            ),
            "rc = @SYM@(SHMEM_TEAM_WORLD, d + 1, s + 1, 3);",
            "",
            &format!(
                "EXPECT(rc == 0, \"@SYM@\", \"returned %d\", rc);\nset_@N@(w, 16, s_@N@());\nfor (int i = 0; i < 3; i++) {{\n    @T@ a = {a}, b = {b};\n    (void)b;\n    w[1 + i] = {want};\n}}\ncheck_@N@(\"@SYM@\", \"dest\", d, w, 16);"
            ),
        );
    }
    s.push_str("}\n\n");
    s
}

/// The operations of a team reduction type, as `build.rs` gives them.
fn reduce_ops(name: &str) -> &'static [&'static str] {
    match name {
        "float" | "double" | "longdouble" => &["max", "min", "sum", "prod"],
        "complexd" | "complexf" => &["sum", "prod"],
        _ if BITWISE_REDUCE_TYPES.contains(&name) => {
            &["and", "or", "xor", "max", "min", "sum", "prod"]
        }
        _ => &["max", "min", "sum", "prod"],
    }
}

/// The deprecated active-set collectives, compiled only once the header declares them (it
/// defines `SHMEM_BCAST_SYNC_SIZE` then). pSync arrays are symmetric, set to
/// `SHMEM_SYNC_VALUE` and published by a barrier before their first use.
fn active_set() -> String {
    let mut s = String::from(
        "#ifdef SHMEM_BCAST_SYNC_SIZE\n\
static long *every_ps_barrier, *every_ps_sync, *every_ps_bcast, *every_ps_collect, *every_ps_reduce,\n    *every_ps_alltoall, *every_ps_alltoalls;\n\
static void *every_wrk;\n\n",
    );
    for bits in [32usize, 64] {
        let t = Ty::bytes(bits / 8);
        let names: Vec<String> = ["broadcast", "collect", "fcollect", "alltoall", "alltoalls"]
            .iter()
            .map(|op| format!("shmem_{op}{bits}"))
            .collect();
        let names: [&str; 5] = std::array::from_fn(|i| names[i].as_str());
        s += &coll_head(&t, &format!("as_coll{bits}"));
        s += &collectives(&t, Form::ActiveSet, names);
        s.push_str("}\n\n");
    }
    for (name, ops) in TO_ALL_TYPES {
        let t = type_of(name);
        s += &coll_head(&t, &format!("as_reduce_{name}"));
        for op in *ops {
            s += &reduce_block(
                &t,
                &format!("shmem_{name}_{op}_to_all"),
                op,
                Form::ActiveSet,
            );
        }
        s.push_str("}\n\n");
    }
    s.push_str(
        "static long *every_psync(size_t n) {
    long *p = shmem_malloc(n * sizeof(long));
    for (size_t i = 0; p && i < n; i++) p[i] = SHMEM_SYNC_VALUE;
    return p;
}
#endif

void every_active_set(void) {
#ifdef SHMEM_BCAST_SYNC_SIZE
    int me = every_me, peer = every_peer;
    long *x = (long *)every_d, w[4];
    int nwrk = 3 / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE ? 3 / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    every_ps_barrier = every_psync(SHMEM_BARRIER_SYNC_SIZE);
    every_ps_sync = every_psync(SHMEM_BARRIER_SYNC_SIZE);
    every_ps_bcast = every_psync(SHMEM_BCAST_SYNC_SIZE);
    every_ps_collect = every_psync(SHMEM_COLLECT_SYNC_SIZE);
    every_ps_reduce = every_psync(SHMEM_REDUCE_SYNC_SIZE);
    every_ps_alltoall = every_psync(SHMEM_ALLTOALL_SYNC_SIZE);
    every_ps_alltoalls = every_psync(SHMEM_ALLTOALLS_SYNC_SIZE);
    every_wrk = shmem_malloc((size_t)nwrk * 32);
    shmem_barrier_all();

    /* shmem_barrier completes this PE's puts; shmem_sync only synchronizes (after a quiet) */
    set_long(x, 4, s_long());
    shmem_barrier_all();
    shmem_long_p(x + 1, v_long(me * 4 + 1), peer);
    shmem_barrier(0, 0, 2, every_ps_barrier);
    set_long(w, 4, s_long());
    w[1] = v_long(peer * 4 + 1);
    check_long(\"shmem_barrier\", \"dest\", x, w, 2); /* x[2] takes the next put already */
    shmem_long_p(x + 2, v_long(me * 4 + 2), peer);
    shmem_quiet();
    shmem_sync(0, 0, 2, every_ps_sync);
    w[2] = v_long(peer * 4 + 2);
    check_long(\"shmem_sync\", \"dest\", x, w, 4);
    shmem_barrier_all();

    as_coll32();
    as_coll64();
",
    );
    for (name, _) in TO_ALL_TYPES {
        let _ = writeln!(s, "    as_reduce_{name}();");
    }
    s.push_str(
        "    shmem_barrier_all();
    shmem_free(every_wrk);
    shmem_free(every_ps_alltoalls);
    shmem_free(every_ps_alltoall);
    shmem_free(every_ps_reduce);
    shmem_free(every_ps_collect);
    shmem_free(every_ps_bcast);
    shmem_free(every_ps_sync);
    shmem_free(every_ps_barrier);
#endif
}
",
    );
    s
}

/// The whole generated C source.
pub(crate) fn c_source() -> String {
    let mut s = String::from(
        "/* Generated by core/capi/lib/tests/every_symbol/generator.rs from src/table.rs: the typed half\n * of the every-symbol program. Do not edit. */\n#include \"every.h\"\n\n#define EVERY_SIGNED(T) ((T)-1 < (T)1)\n\n",
    );
    s.push_str("int every_known(const char *symbol, const char *message) {\n    static const char *const known[][2] = {");
    for (sym, check, _) in KNOWN_FAILURES {
        let _ = write!(s, "{{\"{sym}\", \"{check}\"}}, ");
    }
    s.push_str("{NULL, NULL}};\n    for (int i = 0; known[i][0]; i++)\n        if (strcmp(known[i][0], symbol) == 0 && strstr(message, known[i][1])) return 1;\n    return 0;\n}\n\n");
    for t in all_types() {
        s += &helpers(&t);
    }
    let mut calls = Vec::new();
    for f in rma_families() {
        s += &rma(&f);
        calls.push(format!("rma_{}", f.infix));
    }
    for (name, _, _) in AMO_TYPES {
        s += &amo(name);
        calls.push(format!("amo_{name}"));
    }
    for (name, _, _) in AMO_TYPES
        .iter()
        .filter(|(n, _, _)| !matches!(*n, "float" | "double"))
    {
        s += &p2p(name);
        calls.push(format!("p2p_{name}"));
    }
    s += &p2p_deprecated();
    calls.push("p2p_deprecated".into());
    for (name, _, _) in RMA_TYPES {
        s += &coll(name, &type_of(name));
        calls.push(format!("coll_{name}"));
    }
    s += &coll("mem", &Ty::bytes(1));
    calls.push("coll_mem".into());
    let reduce_types = REDUCE_TYPES
        .iter()
        .map(|(n, _, _)| *n)
        .chain(EXTRA_REDUCE_TYPES.iter().map(|(n, _)| *n));
    for name in reduce_types {
        s += &reduce(name, reduce_ops(name));
        calls.push(format!("reduce_{name}"));
    }
    s += &active_set();
    s.push_str("void every_typed(void) {\n");
    for c in calls {
        let _ = writeln!(s, "    {c}();");
    }
    s.push_str("}\n");
    s
}
