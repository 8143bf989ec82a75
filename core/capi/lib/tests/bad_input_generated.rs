//! Bad input, generated (issue 14, item 3), for the OpenSHMEM C ABI: every routine of
//! `shmem.h` × each class of argument it has (PE, context handle, symmetric address, size,
//! stride), one invalid value at a time, with every other argument valid. A C program is
//! generated from the committed header, run on 2 PEs, and each call must:
//! - log one `ERROR <routine>: …` line (or, for the routines whose specification gives an
//!   answer instead, return it: `shmem_pe_accessible`, `shmem_addr_accessible` 0 and
//!   `shmem_ptr`, `shmem_team_ptr` NULL, for a PE or an address they cannot reach);
//! - leave the job running: no PE ends;
//! - change nothing: a checksum of the PE's heap is the same after the call: all of it from the
//!   first block to the heap's end (free space included), that is everything but the reserve
//!   before the first block, where barriers keep their flags; and the same again at the end,
//!   after a barrier, for a write that a peer's call made while this PE was between checks.
//!
//! The test prints the coverage: (routine, class) pairs tested over the pairs the header has.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use common::{Proto, build_in, error_lines, oshrun_with, repo, tail, temp_dir, text};

/// The prototypes of `shmem.h` that take a PE number (the C++ overloads excluded).
fn prototypes() -> Vec<Proto> {
    let header = std::fs::read_to_string(repo().join("core/capi/include/shmem.h"))
        .expect("the committed header");
    let mut seen = std::collections::BTreeSet::new();
    header
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("inline") && l.ends_with(");"))
        .filter_map(|l| {
            let open = l.find("shmem_")?;
            let (ret, rest) = l.split_at(open);
            let (name, params) = rest.trim_end_matches(");").split_once('(')?;
            Proto::parse(ret, name, params).filter(|p| p.has("pe") && p.ty("pe") == "int")
        })
        .filter(|p| seen.insert(p.name.clone()))
        .collect()
}

/// The argument classes, and the invalid value of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// `pe`: -1 and the number of PEs.
    Pe,
    /// `ctx`: a pointer that no `shmem_ctx_create` returned.
    Context,
    /// An argument that must be symmetric: a local stack address.
    Address,
    /// `nelems`: more elements than the heap holds.
    Size,
    /// `dst`/`sst` of the symmetric side: a stride that leads far outside the heap.
    Stride,
}

/// The parameters of `p` that must be symmetric addresses.
fn symmetric(p: &Proto) -> Vec<&str> {
    let reads = p.name.contains("get") || p.name.ends_with("_g");
    let fetch_only = p.name.ends_with("atomic_fetch") || p.name.ends_with("atomic_fetch_nbi");
    p.params
        .iter()
        .map(|(_, n)| n.as_str())
        .filter(|&n| match n {
            "sig_addr" => true,
            "dest" => !(reads && p.params.iter().any(|(_, n)| n == "source")),
            "source" => reads || fetch_only,
            _ => false,
        })
        .collect()
}

/// A call of `p`, with `set` replacing the arguments it names.
fn call(p: &Proto, set: &[(&str, &str)]) -> String {
    let args: Vec<String> = p
        .params
        .iter()
        .map(|(ty, name)| {
            if let Some((_, v)) = set.iter().find(|(n, _)| n == name) {
                return (*v).to_owned();
            }
            match name.as_str() {
                "pe" => "next".to_owned(),
                "ctx" => "SHMEM_CTX_DEFAULT".to_owned(),
                "team" => "SHMEM_TEAM_WORLD".to_owned(),
                "sig_op" => "SHMEM_SIGNAL_SET".to_owned(),
                "nelems" | "nblocks" | "bsize" | "dst" | "sst" | "signal" => format!("({ty})1"),
                // The fetched value goes to a local word.
                "fetch" => format!("({ty})local"),
                _ if ty.contains('*') => format!("({ty})buf"),
                _ => format!("({ty})0"),
            }
        })
        .collect();
    format!("{}({})", p.name, args.join(", "))
}

/// What a call of routine `name` must return instead of logging an error, if the
/// specification gives it an answer for a PE or an address it cannot reach.
fn answer(name: &str) -> Option<&'static str> {
    match name {
        "shmem_pe_accessible" | "shmem_addr_accessible" => Some("0"),
        "shmem_ptr" | "shmem_team_ptr" => Some("NULL"),
        _ => None,
    }
}

/// The programs' `SHMEM_SYMMETRIC_SIZE`.
const SYMMETRIC_SIZE: &str = "4M";
/// Their heap: `SHMEM_SYMMETRIC_SIZE` plus CANN's 6 MiB reserve.
const HEAP_BYTES: usize = (4 + 6) << 20;
/// Where the first block lands: past the reserve's signal area, sync pool and counters, as
/// CANN lays them out (the programs check that the heap then ends where this says).
const FIRST_BLOCK: usize = 0x52_0200;

/// Builds the C program `c` in a directory of its own (named for `test`), runs it on 2 PEs,
/// requires both to end well, and returns the directory and the output.
fn run_on_two_pes(test: &str, c: &str) -> (std::path::PathBuf, String) {
    let dir = temp_dir(test);
    let source = dir.join("generated.c");
    std::fs::write(&source, c).expect("the generated program");
    let heap = format!("-DHEAP_BYTES={HEAP_BYTES}");
    let first = format!("-DFIRST_BLOCK={FIRST_BLOCK}");
    let exe = build_in(
        env!("CARGO_BIN_EXE_oshcc"),
        &source,
        &["-std=c11", "-w", "-O2", &heap, &first],
        &dir,
    );
    let out = oshrun_with(&exe, 2, &[], &[("SHMEM_SYMMETRIC_SIZE", SYMMETRIC_SIZE)]);
    let text = text(&out);
    assert!(out.status.success(), "{}", tail(&text));
    assert_eq!(text.matches(" ok\n").count(), 2, "{}", tail(&text));
    (dir, text)
}

/// The C statement that makes call `e` of `p`: a check of its answer where the specification
/// gives one (a failure printed with `who`, a format for the C expression `arg`), else the call.
fn statement(p: &Proto, e: &str, who: &str, arg: &str) -> String {
    match (answer(&p.name), p.ret.as_str()) {
        (Some(want), _) => format!(
            "if ({e} != {want}) {{ printf(\"{who}: {} answered wrongly\\n\", {arg}); failures++; }}",
            p.name
        ),
        (_, "void") => e.to_owned(),
        _ => format!("(void){e}"),
    }
}

#[test]
fn every_routine_refuses_one_invalid_argument_of_each_class_and_changes_nothing() {
    let protos = prototypes();
    assert!(protos.len() > 1000, "only {} routines parsed", protos.len());
    let mut c = String::from(
        "#include <shmem.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n\n\
         static unsigned char *buf;\nstatic int failures;\n\n\
         /* The heap from the first block to its end: SHMEM_SYMMETRIC_SIZE plus the 6 MiB reserve,\n   \
         less the reserve's part before the first block. */\n\
         #define USER_BYTES ((size_t)(HEAP_BYTES - FIRST_BLOCK))\n\
         static uint64_t sum(void) {\n    const uint64_t *w = (const uint64_t *)buf;\n    \
         uint64_t s = 1469598103934665603ULL;\n    \
         for (size_t i = 0; i < USER_BYTES / 8; i++) s = (s ^ w[i]) * 1099511628211ULL;\n    return s;\n}\n\n\
         #define CALL(what, class, e) do { uint64_t b0 = sum(); e; \\\n    \
         if (sum() != b0) { printf(\"PE %d: %s (%s) changed the heap\\n\", me, what, class); failures++; } \\\n    \
         printf(\"CALLED %s\\n\", what); } while (0)\n\n\
         int main(void) {\n    shmem_init();\n    int me = shmem_my_pe(), n = shmem_n_pes(), next = (me + 1) % n;\n    \
         buf = shmem_malloc(4096);\n    long double local[64];\n    unsigned char stack[4096];\n    \
         memset(buf, 0x5a, 4096);\n    \
         if (!shmem_addr_accessible(buf + USER_BYTES - 1, me) || shmem_addr_accessible(buf + USER_BYTES, me)) {\n        \
         printf(\"PE %d: the heap does not end %zu bytes past the first block\\n\", me, USER_BYTES);\n        return 1;\n    }\n    \
         shmem_barrier_all();\n    const uint64_t initial = sum();\n    (void)stack;\n    (void)local;\n",
    );
    // (routine, class) → calls made.
    let mut tested: BTreeMap<(String, Class), usize> = BTreeMap::new();
    let mut applicable = 0usize;
    for p in &protos {
        let names: Vec<&str> = p.params.iter().map(|(_, n)| n.as_str()).collect();
        let mut cases: Vec<(Class, &str, String)> = Vec::new();
        for bad in ["-1", "n"] {
            cases.push((Class::Pe, "pe", bad.to_owned()));
        }
        if names.contains(&"ctx") {
            cases.push((Class::Context, "ctx", "(shmem_ctx_t)(uintptr_t)0x10".into()));
        }
        for s in symmetric(p) {
            let ty = &p
                .params
                .iter()
                .find(|(_, n)| n == s)
                .expect("a parameter")
                .0;
            cases.push((Class::Address, s, format!("({ty})stack")));
        }
        if names.contains(&"nelems") && p.params.iter().any(|(t, _)| t.contains('*')) {
            cases.push((Class::Size, "nelems", "(size_t)1 << 40".into()));
        }
        // The stride of the symmetric side (that of the local side walks the caller's own
        // memory, which no library can check): two elements, the second 2^40 elements on.
        for (side, stride) in [("dest", "dst"), ("source", "sst")] {
            let symmetric_side = symmetric(p).contains(&side);
            if symmetric_side && names.contains(&stride) && !names.contains(&"nblocks") {
                cases.push((Class::Stride, stride, "(ptrdiff_t)1 << 40".into()));
            }
        }
        let classes: std::collections::BTreeSet<Class> = cases.iter().map(|c| c.0).collect();
        applicable += classes.len();
        for (class, which, bad) in cases {
            // A stride matters from the second element on.
            let e = match class {
                Class::Stride => call(p, &[(which, &bad), ("nelems", "(size_t)2")]),
                _ => call(p, &[(which, &bad)]),
            };
            let e = statement(p, &e, "PE %d", "me");
            let _ = writeln!(c, "    CALL(\"{}\", \"{class:?}\", {e});", p.name);
            *tested.entry((p.name.clone(), class)).or_default() += 1;
        }
    }
    c.push_str(
        "    shmem_barrier_all();\n    \
         if (sum() != initial) { printf(\"PE %d: the heap changed during the calls\\n\", me); failures++; }\n    \
         shmem_free(buf);\n    shmem_finalize();\n    \
         if (!failures) printf(\"PE %d ok\\n\", me);\n    return failures != 0;\n}\n",
    );
    let (dir, text) = run_on_two_pes("bad-input-generated", &c);

    // Every call that has no specified answer logged one error naming its routine, or the
    // routine it forwards to (the `long double` `p` and `g`, written in C over put and get).
    let logged = error_lines(&text);
    fn forwarded(name: &str) -> &str {
        match name {
            "shmem_longdouble_p" | "shmem_ctx_longdouble_p" => "shmem_ctx_longdouble_put",
            "shmem_longdouble_g" | "shmem_ctx_longdouble_g" => "shmem_ctx_longdouble_get",
            n => n,
        }
    }
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    for ((name, _), k) in &tested {
        if answer(name).is_none() {
            *calls.entry(forwarded(name)).or_default() += k * 2;
        }
    }
    for (name, want) in &calls {
        let got = logged.get(name).copied().unwrap_or(0);
        assert!(
            got >= *want,
            "{name}: {got} error lines for {want} refused calls"
        );
    }
    let pairs = tested.len();
    println!(
        "bad input, C ABI: {pairs} of {applicable} (routine, class) pairs tested, {} calls per PE, {} routines",
        tested.values().sum::<usize>(),
        protos.len()
    );
    let mut by_class: BTreeMap<Class, usize> = BTreeMap::new();
    for (_, class) in tested.keys() {
        *by_class.entry(*class).or_default() += 1;
    }
    println!("by class: {by_class:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The state class: every routine of `shmem.h` that takes a PE, called before `shmem_init`
/// and again after `shmem_finalize`, with arguments that would be valid in a job. Each must
/// log one `ERROR <routine>: instance 0 is not initialized` line (or give its specified
/// answer), return at once, and leave the process running to the end.
#[test]
fn every_routine_called_outside_init_and_finalize_is_refused_and_returns() {
    let protos = prototypes();
    let mut calls = String::new();
    for p in &protos {
        let e = call(p, &[("pe", "1")]);
        let e = statement(p, &e, "%s", "when");
        let _ = writeln!(calls, "    {e};");
    }
    let c = format!(
        "#include <shmem.h>\n#include <stdint.h>\n#include <stdio.h>\n\n\
         static unsigned char buf[4096];\nstatic int failures;\n\n\
         static void all(const char *when) {{\n    long double local[64];\n    (void)local;\n{calls}}}\n\n\
         int main(void) {{\n    all(\"before init\");\n    shmem_init();\n    int me = shmem_my_pe();\n    \
         shmem_barrier_all();\n    shmem_finalize();\n    all(\"after finalize\");\n    \
         if (!failures) printf(\"PE %d ok\\n\", me);\n    return failures != 0;\n}}\n"
    );
    let (dir, text) = run_on_two_pes("bad-input-state", &c);
    let refused = text
        .lines()
        .filter(|l| l.starts_with("ERROR ") && l.contains("is not initialized"))
        .count();
    let answering = protos.iter().filter(|p| answer(&p.name).is_some()).count();
    // Two PEs, two rounds; the `long double` `p` and `g` log under put and get.
    let want = 2 * 2 * (protos.len() - answering);
    assert_eq!(refused, want, "{}", tail(&text));
    println!(
        "bad input, state: {} routines x 2 states, {} refusals on 2 PEs",
        protos.len(),
        refused
    );
    let _ = std::fs::remove_dir_all(dir);
}
