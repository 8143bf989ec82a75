//! Generates the typed families of the C ABI and the header `shmem.h` from one type table
//! (`src/table.rs`), and gives `libshmem.so` its soname.

use std::fmt::Write as _;
use std::path::PathBuf;

include!("src/table.rs");
include!("../../../backends/build/not_root.rs");

/// One generated routine: its C prototype (for the header) and its Rust definition.
struct Routine {
    proto: String,
    rust: String,
}

const SAFETY: &str = "///\n/// # Safety\n///\n/// The routine's C contract: every pointer is valid for the elements the call names.\n";

/// Emits `shmem_{name}` and its context form `shmem_ctx_{name}`: `c_ret`/`rust_ret` are the
/// return types ("void"/"()" for none), `params` the (C declaration, Rust declaration) pairs
/// after the context, and `body` the Rust body, in which `ctx` is the context handle.
fn emit(
    out: &mut Vec<Routine>,
    name: &str,
    c_ret: &str,
    rust_ret: &str,
    params: &[(String, String)],
    body: &str,
) {
    let c_params: Vec<&str> = params.iter().map(|(c, _)| c.as_str()).collect();
    let r_params: Vec<&str> = params.iter().map(|(_, r)| r.as_str()).collect();
    let ret = if rust_ret == "()" {
        String::new()
    } else {
        format!(" -> {rust_ret}")
    };
    for ctx in [false, true] {
        let f = if ctx {
            format!("shmem_ctx_{name}")
        } else {
            format!("shmem_{name}")
        };
        let (c_all, r_all, ctx_let) = if ctx {
            (
                std::iter::once("shmem_ctx_t ctx")
                    .chain(c_params.iter().copied())
                    .collect::<Vec<_>>(),
                std::iter::once("ctx: crate::ctx::shmem_ctx_t")
                    .chain(r_params.iter().copied())
                    .collect::<Vec<_>>(),
                "",
            )
        } else {
            (
                c_params.clone(),
                r_params.clone(),
                "    let ctx = crate::ctx::default();\n    let _ = ctx;\n",
            )
        };
        let c_all = if c_all.is_empty() {
            "void".to_string()
        } else {
            c_all.join(", ")
        };
        out.push(Routine {
            proto: format!("{c_ret} {f}({c_all});"),
            rust: format!(
                "/// `{f}`.\n{SAFETY}#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn {f}({}){ret} {{\n{ctx_let}    let name = \"{f}\";\n    // SAFETY: forwarded from the C contract.\n    unsafe {{ {body} }}\n}}\n",
                r_all.join(", ")
            ),
        });
    }
}

fn p(c: impl Into<String>, r: impl Into<String>) -> (String, String) {
    (c.into(), r.into())
}

fn rma_routines(out: &mut Vec<Routine>) {
    // (TYPENAME, C type, Rust element type, element size expression, sized family)
    let mut families: Vec<(String, String, String, String, bool)> = RMA_TYPES
        .iter()
        .map(|(n, c, r)| {
            (
                format!("{n}_"),
                c.to_string(),
                r.to_string(),
                format!("size_of::<{r}>()"),
                false,
            )
        })
        .collect();
    for bits in RMA_SIZES {
        families.push((
            bits.to_string(),
            "void".into(),
            "u8".into(),
            format!("{}", bits / 8),
            true,
        ));
    }
    families.push(("mem".into(), "void".into(), "u8".into(), "1".into(), true));
    for (name, c, r, size, sized) in &families {
        // shmem_TYPENAME_put, shmem_put32, shmem_putmem; shmem_put32_nbi, …
        let nm = |op: &str| {
            if *sized {
                let (base, suffix) = op.split_once('_').map_or((op, ""), |(b, s)| (b, s));
                if suffix.is_empty() {
                    format!("{base}{name}")
                } else {
                    format!("{base}{name}_{suffix}")
                }
            } else {
                format!("{name}{op}")
            }
        };
        let (ptr, cptr) = (format!("{c} *"), format!("const {c} *"));
        for (op, call, nbi) in [
            ("put", "put", false),
            ("get", "get", false),
            ("put_nbi", "put", true),
            ("get_nbi", "get", true),
        ] {
            emit(
                out,
                &nm(op),
                "void",
                "()",
                &[
                    p(format!("{ptr}dest"), format!("dest: *mut {r}")),
                    p(format!("{cptr}source"), format!("source: *const {r}")),
                    p("size_t nelems", "nelems: usize"),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "crate::rma::{call}(name, ctx, dest.cast(), source.cast(), nelems, {size}, pe, {nbi})"
                ),
            );
        }
        if name == "mem" {
            continue; // there is no iputmem or igetmem
        }
        for op in ["iput", "iget"] {
            emit(
                out,
                &nm(op),
                "void",
                "()",
                &[
                    p(format!("{ptr}dest"), format!("dest: *mut {r}")),
                    p(format!("{cptr}source"), format!("source: *const {r}")),
                    p("ptrdiff_t dst", "dst: isize"),
                    p("ptrdiff_t sst", "sst: isize"),
                    p("size_t nelems", "nelems: usize"),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "crate::rma::{op}(name, ctx, dest.cast(), source.cast(), dst, sst, nelems, {size}, pe)"
                ),
            );
        }
        // OpenSHMEM 1.6's interleaved block transfers.
        for (op, remote_dest) in [("ibput", true), ("ibget", false)] {
            emit(
                out,
                &nm(op),
                "void",
                "()",
                &[
                    p(format!("{ptr}dest"), format!("dest: *mut {r}")),
                    p(format!("{cptr}source"), format!("source: *const {r}")),
                    p("ptrdiff_t dst", "dst: isize"),
                    p("ptrdiff_t sst", "sst: isize"),
                    p("size_t bsize", "bsize: usize"),
                    p("size_t nblocks", "nblocks: usize"),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "crate::rma::iblock(name, ctx, dest.cast(), source.cast(), dst, sst, bsize, nblocks, {size}, pe, {remote_dest})"
                ),
            );
        }
        // p and g pass one element by value: not for the sized families, nor for long double
        // (which Rust cannot take by value; a C shim will serve it).
        if !sized && name != "longdouble_" {
            emit(
                out,
                &nm("p"),
                "void",
                "()",
                &[
                    p(format!("{c} *dest"), format!("dest: *mut {r}")),
                    p(format!("{c} value"), format!("value: {r}")),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "crate::rma::put(name, ctx, dest.cast(), (&raw const value).cast(), 1, {size}, pe, false)"
                ),
            );
            emit(
                out,
                &nm("g"),
                c,
                r,
                &[
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "let mut value = <{r}>::default(); crate::rma::get(name, ctx, (&raw mut value).cast(), source.cast(), 1, {size}, pe, false); value"
                ),
            );
        }
    }
}

/// The `AmoOp` of a typed atomic's Rust call (`atomic_fetch_add(value, pe)`): the one
/// operation enum every generated atomic passes to `crate::amo::run`.
fn amo_op(call: &str) -> String {
    let (method, args) = call.split_once('(').expect("a call");
    let args: Vec<&str> = args.trim_end_matches(')').split(", ").collect();
    let bits = |a: &str| format!("shmem_core::Scalar::to_bits({a})");
    let op = method
        .trim_start_matches("atomic_")
        .trim_start_matches("fetch_");
    match (op, args.as_slice()) {
        ("fetch", _) => "shmem_core::AmoOp::Fetch".into(),
        ("set", [v, _]) => format!("shmem_core::AmoOp::Set({})", bits(v)),
        ("swap", [v, _]) => format!("shmem_core::AmoOp::Swap({})", bits(v)),
        ("compare_swap", [c, v, _]) => format!(
            "shmem_core::AmoOp::CompareSwap {{ cond: {}, value: {} }}",
            bits(c),
            bits(v)
        ),
        ("inc", _) => "shmem_core::AmoOp::Add(1)".into(),
        ("add", [v, _]) => format!("shmem_core::AmoOp::Add({})", bits(v)),
        ("and", [v, _]) => format!("shmem_core::AmoOp::And({})", bits(v)),
        ("or", [v, _]) => format!("shmem_core::AmoOp::Or({})", bits(v)),
        ("xor", [v, _]) => format!("shmem_core::AmoOp::Xor({})", bits(v)),
        _ => panic!("no AmoOp for {call}"),
    }
}

fn amo_routines(out: &mut Vec<Routine>) {
    for (name, c, r) in AMO_TYPES {
        let standard = !matches!(*name, "float" | "double");
        let bitwise = BITWISE_AMO_TYPES.contains(name);
        let dest = || p(format!("{c} *dest"), format!("dest: *mut {r}"));
        let value = |n: &str| p(format!("{c} {n}"), format!("{n}: {r}"));
        let pe = || p("int pe", "pe: c_int");
        let fetch = || p(format!("{c} *fetch"), format!("fetch: *mut {r}"));
        let run = |call: &str, fetching: bool| {
            let f = if fetching { "run" } else { "run_void" };
            format!("crate::amo::{f}(name, ctx, dest, pe, {})", amo_op(call))
        };
        let mut ops: Vec<(&str, bool, Vec<&str>, String)> = vec![
            ("fetch", true, vec![], "atomic_fetch(pe)".into()),
            ("set", false, vec!["value"], "atomic_set(value, pe)".into()),
            ("swap", true, vec!["value"], "atomic_swap(value, pe)".into()),
        ];
        if standard {
            ops.extend([
                (
                    "compare_swap",
                    true,
                    vec!["cond", "value"],
                    "atomic_compare_swap(cond, value, pe)".to_string(),
                ),
                ("fetch_inc", true, vec![], "atomic_fetch_inc(pe)".into()),
                ("inc", false, vec![], "atomic_inc(pe)".into()),
                (
                    "fetch_add",
                    true,
                    vec!["value"],
                    "atomic_fetch_add(value, pe)".into(),
                ),
                ("add", false, vec!["value"], "atomic_add(value, pe)".into()),
            ]);
        }
        if bitwise {
            for b in ["and", "or", "xor"] {
                ops.push((
                    Box::leak(format!("fetch_{b}").into_boxed_str()),
                    true,
                    vec!["value"],
                    format!("atomic_fetch_{b}(value, pe)"),
                ));
                ops.push((b, false, vec!["value"], format!("atomic_{b}(value, pe)")));
            }
        }
        for (op, fetching, args, call) in &ops {
            let mut params = vec![if *op == "fetch" {
                p(format!("const {c} *source"), format!("source: *const {r}"))
            } else {
                dest()
            }];
            params.extend(args.iter().map(|a| value(a)));
            params.push(pe());
            let body = if *op == "fetch" {
                "let dest = source.cast_mut(); ".to_string() + &run(call, true)
            } else {
                run(call, *fetching)
            };
            let (c_ret, r_ret) = if *fetching { (*c, *r) } else { ("void", "()") };
            emit(
                out,
                &format!("{name}_atomic_{op}"),
                c_ret,
                r_ret,
                &params,
                &body,
            );
            // The non-blocking fetching forms: the value is delivered to `*fetch`, which a
            // failed call leaves untouched.
            if *fetching {
                let mut nbi = vec![fetch()];
                nbi.extend(params.iter().cloned());
                let source = if *op == "fetch" {
                    "let dest = source.cast_mut(); "
                } else {
                    ""
                };
                emit(
                    out,
                    &format!("{name}_atomic_{op}_nbi"),
                    "void",
                    "()",
                    &nbi,
                    &format!(
                        "{source}crate::amo::run_nbi(name, ctx, dest, pe, {}, fetch)",
                        amo_op(call)
                    ),
                );
            }
        }
    }
}

/// Emits `shmem_{name}` alone (the routines with no context form).
fn emit_plain(
    out: &mut Vec<Routine>,
    name: &str,
    c_ret: &str,
    rust_ret: &str,
    params: &[(String, String)],
    body: &str,
) {
    let mut both = Vec::new();
    emit(&mut both, name, c_ret, rust_ret, params, body);
    out.push(both.remove(0));
}

fn p2p_routines(out: &mut Vec<Routine>) {
    for (name, c, r) in AMO_TYPES
        .iter()
        .filter(|(n, _, _)| !matches!(*n, "float" | "double"))
    {
        let ivar = || p(format!("{c} *ivar"), format!("ivar: *mut {r}"));
        let ivars = || p(format!("{c} *ivars"), format!("ivars: *mut {r}"));
        let nelems = || p("size_t nelems", "nelems: usize");
        let indices = || p("size_t *indices", "indices: *mut usize");
        let status = || p("const int *status", "status: *const c_int");
        let cmp = || p("int cmp", "cmp: c_int");
        let value = || p(format!("{c} cmp_value"), format!("cmp_value: {r}"));
        let values = || {
            p(
                format!("const {c} *cmp_values"),
                format!("cmp_values: *const {r}"),
            )
        };
        let set = "let v = crate::p2p::view(ivars, nelems)?; let st = crate::p2p::status(status, nelems); let c = crate::p2p::cmp(cmp)?;";
        emit_plain(
            out,
            &format!("{name}_wait_until"),
            "void",
            "()",
            &[ivar(), cmp(), value()],
            "crate::p2p::run(name, 1, (), (), || crate::p2p::view(ivar, 1)?.elem(0).wait_until(crate::p2p::cmp(cmp)?, cmp_value).map(drop))",
        );
        emit_plain(
            out,
            &format!("{name}_test"),
            "int",
            "c_int",
            &[ivar(), cmp(), value()],
            "crate::p2p::run(name, 1, 0, 0, || Ok(c_int::from(crate::p2p::view(ivar, 1)?.elem(0).test(crate::p2p::cmp(cmp)?, cmp_value)?)))",
        );
        for vector in [false, true] {
            let (sfx, rhs, arg) = if vector {
                (
                    "_vector",
                    values(),
                    "crate::p2p::values(cmp_values, nelems)?",
                )
            } else {
                ("", value(), "cmp_value")
            };
            emit_plain(
                out,
                &format!("{name}_wait_until_all{sfx}"),
                "void",
                "()",
                &[ivars(), nelems(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, (), (), || {{ {set} v.wait_until_all{sfx}(st, c, {arg}) }})"
                ),
            );
            emit_plain(
                out,
                &format!("{name}_wait_until_any{sfx}"),
                "size_t",
                "usize",
                &[ivars(), nelems(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, usize::MAX, usize::MAX, || {{ {set} Ok(v.wait_until_any{sfx}(st, c, {arg})?.unwrap_or(usize::MAX)) }})"
                ),
            );
            emit_plain(
                out,
                &format!("{name}_wait_until_some{sfx}"),
                "size_t",
                "usize",
                &[ivars(), nelems(), indices(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, 0, 0, || {{ {set} v.wait_until_some{sfx}(crate::p2p::indices(indices, nelems)?, st, c, {arg}) }})"
                ),
            );
            emit_plain(
                out,
                &format!("{name}_test_all{sfx}"),
                "int",
                "c_int",
                &[ivars(), nelems(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, 1, 0, || {{ {set} Ok(c_int::from(v.test_all{sfx}(st, c, {arg})?)) }})"
                ),
            );
            emit_plain(
                out,
                &format!("{name}_test_any{sfx}"),
                "size_t",
                "usize",
                &[ivars(), nelems(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, usize::MAX, usize::MAX, || {{ {set} Ok(v.test_any{sfx}(st, c, {arg})?.unwrap_or(usize::MAX)) }})"
                ),
            );
            emit_plain(
                out,
                &format!("{name}_test_some{sfx}"),
                "size_t",
                "usize",
                &[ivars(), nelems(), indices(), status(), cmp(), rhs.clone()],
                &format!(
                    "crate::p2p::run(name, nelems, 0, 0, || {{ {set} v.test_some{sfx}(crate::p2p::indices(indices, nelems)?, st, c, {arg}) }})"
                ),
            );
        }
    }
}

fn signal_routines(out: &mut Vec<Routine>) {
    let mut families: Vec<(String, String, String, String, bool)> = RMA_TYPES
        .iter()
        .map(|(n, c, r)| {
            (
                format!("{n}_"),
                c.to_string(),
                r.to_string(),
                format!("size_of::<{r}>()"),
                false,
            )
        })
        .collect();
    for bits in RMA_SIZES {
        families.push((
            bits.to_string(),
            "void".into(),
            "u8".into(),
            format!("{}", bits / 8),
            true,
        ));
    }
    families.push(("mem".into(), "void".into(), "u8".into(), "1".into(), true));
    for (name, c, r, size, sized) in &families {
        for nbi in ["", "_nbi"] {
            let f = if *sized {
                format!("put{name}_signal{nbi}")
            } else {
                format!("{name}put_signal{nbi}")
            };
            emit(
                out,
                &f,
                "void",
                "()",
                &[
                    p(format!("{c} *dest"), format!("dest: *mut {r}")),
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    p("size_t nelems", "nelems: usize"),
                    p("uint64_t *sig_addr", "sig_addr: *mut u64"),
                    p("uint64_t signal", "signal: u64"),
                    p("int sig_op", "sig_op: c_int"),
                    p("int pe", "pe: c_int"),
                ],
                &format!(
                    "crate::p2p::put_signal(name, ctx, dest.cast(), source.cast(), nelems, {size}, sig_addr, signal, sig_op, pe)"
                ),
            );
        }
    }
}

fn coll_routines(out: &mut Vec<Routine>) {
    let team = || p("shmem_team_t team", "team: crate::team::shmem_team_t");
    let mut families: Vec<(String, String, String)> = RMA_TYPES
        .iter()
        .map(|(n, c, r)| (format!("{n}_"), c.to_string(), r.to_string()))
        .collect();
    families.push((String::new(), "void".into(), "u8".into()));
    for (name, c, r) in &families {
        // shmem_int_broadcast, or shmem_broadcastmem
        let nm = |op: &str| {
            if name.is_empty() {
                format!("{op}mem")
            } else {
                format!("{name}{op}")
            }
        };
        let dest = || p(format!("{c} *dest"), format!("dest: *mut {r}"));
        let source = || p(format!("const {c} *source"), format!("source: *const {r}"));
        let nelems = || p("size_t nelems", "nelems: usize");
        emit_plain(
            out,
            &nm("broadcast"),
            "int",
            "c_int",
            &[
                team(),
                dest(),
                source(),
                nelems(),
                p("int PE_root", "pe_root: c_int"),
            ],
            "crate::coll::broadcast(name, team, dest, source, nelems, pe_root)",
        );
        for op in ["collect", "fcollect", "alltoall"] {
            emit_plain(
                out,
                &nm(op),
                "int",
                "c_int",
                &[team(), dest(), source(), nelems()],
                &format!("crate::coll::{op}(name, team, dest, source, nelems)"),
            );
        }
        emit_plain(
            out,
            &nm("alltoalls"),
            "int",
            "c_int",
            &[
                team(),
                dest(),
                source(),
                p("ptrdiff_t dst", "dst: isize"),
                p("ptrdiff_t sst", "sst: isize"),
                nelems(),
            ],
            "crate::coll::alltoalls(name, team, dest, source, dst, sst, nelems)",
        );
    }
    let extra: &[(&str, &str, &str)] = &[
        ("longdouble", "long double", "crate::longdouble::LongDouble"),
        ("complexd", "double _Complex", "shmem_core::Complex64"),
        ("complexf", "float _Complex", "shmem_core::Complex32"),
    ];
    for (name, c, r) in REDUCE_TYPES.iter().chain(extra) {
        let ops: &[(&str, &str)] = match *name {
            "float" | "double" | "longdouble" => &[
                ("max", "Max"),
                ("min", "Min"),
                ("sum", "Sum"),
                ("prod", "Prod"),
            ],
            "complexd" | "complexf" => &[("sum", "Sum"), ("prod", "Prod")],
            _ if BITWISE_REDUCE_TYPES.contains(name) => &[
                ("and", "And"),
                ("or", "Or"),
                ("xor", "Xor"),
                ("max", "Max"),
                ("min", "Min"),
                ("sum", "Sum"),
                ("prod", "Prod"),
            ],
            _ => &[
                ("max", "Max"),
                ("min", "Min"),
                ("sum", "Sum"),
                ("prod", "Prod"),
            ],
        };
        for (op, inclusive) in [("sum_inscan", true), ("sum_exscan", false)] {
            emit_plain(
                out,
                &format!("{name}_{op}"),
                "int",
                "c_int",
                &[
                    team(),
                    p(format!("{c} *dest"), format!("dest: *mut {r}")),
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    p("size_t nelems", "nelems: usize"),
                ],
                &format!("crate::coll::scan(name, {inclusive}, team, dest, source, nelems)"),
            );
        }
        for (op, rop) in ops {
            emit_plain(
                out,
                &format!("{name}_{op}_reduce"),
                "int",
                "c_int",
                &[
                    team(),
                    p(format!("{c} *dest"), format!("dest: *mut {r}")),
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    p("size_t nreduce", "nreduce: usize"),
                ],
                &format!(
                    "crate::coll::reduce(name, shmem_core::ReduceOp::{rop}, team, dest, source, nreduce)"
                ),
            );
        }
    }
}

/// A `to_all` reduction type: TYPENAME, C type, Rust type and its operators.
type ToAllType<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)]);

/// The deprecated active-set reductions, `shmem_TYPENAME_OP_to_all` with `pWrk` and `pSync`
/// (OpenSHMEM 1.5 table `activesetreducetypes`); the other active-set routines are written in
/// `src/active_set.rs`.
fn active_set_routines(out: &mut Vec<Routine>) {
    const ALL: &[(&str, &str)] = &[
        ("and", "And"),
        ("or", "Or"),
        ("xor", "Xor"),
        ("max", "Max"),
        ("min", "Min"),
        ("sum", "Sum"),
        ("prod", "Prod"),
    ];
    let types: &[ToAllType<'_>] = &[
        ("short", "short", "i16", ALL),
        ("int", "int", "i32", ALL),
        ("long", "long", "i64", ALL),
        ("longlong", "long long", "i64", ALL),
        ("float", "float", "f32", &ALL[3..]),
        ("double", "double", "f64", &ALL[3..]),
        (
            "longdouble",
            "long double",
            "crate::longdouble::LongDouble",
            &ALL[3..],
        ),
        (
            "complexd",
            "double _Complex",
            "shmem_core::Complex64",
            &ALL[5..],
        ),
        (
            "complexf",
            "float _Complex",
            "shmem_core::Complex32",
            &ALL[5..],
        ),
    ];
    for (name, c, r, ops) in types {
        for (op, rop) in *ops {
            emit_plain(
                out,
                &format!("{name}_{op}_to_all"),
                "void",
                "()",
                &[
                    p(format!("{c} *dest"), format!("dest: *mut {r}")),
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    p("int nreduce", "nreduce: c_int"),
                    p("int PE_start", "pe_start: c_int"),
                    p("int logPE_stride", "log_pe_stride: c_int"),
                    p("int PE_size", "pe_size: c_int"),
                    p(format!("{c} *pWrk"), format!("p_wrk: *mut {r}")),
                    p("long *pSync", "p_sync: *mut std::ffi::c_long"),
                ],
                &format!(
                    "crate::active_set::to_all(name, shmem_core::ReduceOp::{rop}, dest, source, nreduce, pe_start, log_pe_stride, pe_size, p_wrk, p_sync)"
                ),
            );
        }
    }
}

/// A deprecated atomic: its name, whether it fetches, its parameters and the Rust call.
type LegacyOp<'a> = (&'a str, bool, Vec<(String, String)>, &'a str);

/// The deprecated routines programs and benchmarks still call: the pre-1.4 atomic names, the
/// `short`/`ushort` point-to-point forms and `shmem_TYPENAME_wait`.
fn deprecated_routines(out: &mut Vec<Routine>) {
    for (name, c, r) in AMO_TYPES
        .iter()
        .filter(|(n, _, _)| matches!(*n, "float" | "double" | "int" | "long" | "longlong"))
    {
        let extended_only = matches!(*name, "float" | "double");
        let dest = || p(format!("{c} *dest"), format!("dest: *mut {r}"));
        let value = |n: &str| p(format!("{c} {n}"), format!("{n}: {r}"));
        let pe = || p("int pe", "pe: c_int");
        let mut ops: Vec<LegacyOp<'_>> = vec![
            (
                "fetch",
                true,
                vec![
                    p(format!("const {c} *source"), format!("source: *const {r}")),
                    pe(),
                ],
                "atomic_fetch(pe)",
            ),
            (
                "set",
                false,
                vec![dest(), value("value"), pe()],
                "atomic_set(value, pe)",
            ),
            (
                "swap",
                true,
                vec![dest(), value("value"), pe()],
                "atomic_swap(value, pe)",
            ),
        ];
        if !extended_only {
            ops.extend([
                (
                    "cswap",
                    true,
                    vec![dest(), value("cond"), value("value"), pe()],
                    "atomic_compare_swap(cond, value, pe)",
                ),
                ("finc", true, vec![dest(), pe()], "atomic_fetch_inc(pe)"),
                ("inc", false, vec![dest(), pe()], "atomic_inc(pe)"),
                (
                    "fadd",
                    true,
                    vec![dest(), value("value"), pe()],
                    "atomic_fetch_add(value, pe)",
                ),
                (
                    "add",
                    false,
                    vec![dest(), value("value"), pe()],
                    "atomic_add(value, pe)",
                ),
            ]);
        }
        for (op, fetching, params, call) in ops {
            let f = if fetching { "run" } else { "run_void" };
            let pre = if op == "fetch" {
                "let dest = source.cast_mut(); "
            } else {
                ""
            };
            let (c_ret, r_ret) = if fetching { (*c, *r) } else { ("void", "()") };
            emit_plain(
                out,
                &format!("{name}_{op}"),
                c_ret,
                r_ret,
                &params,
                &format!(
                    "{pre}crate::amo::{f}(name, ctx, dest, pe, {})",
                    amo_op(call)
                ),
            );
        }
    }
    for (name, c, r) in [
        ("short", "short", "i16"),
        ("ushort", "unsigned short", "u16"),
    ] {
        emit_plain(
            out,
            &format!("{name}_wait_until"),
            "void",
            "()",
            &[
                p(format!("{c} *ivar"), format!("ivar: *mut {r}")),
                p("int cmp", "cmp: c_int"),
                p(format!("{c} cmp_value"), format!("cmp_value: {r}")),
            ],
            "crate::p2p::run(name, 1, (), (), || crate::p2p::view(ivar, 1)?.elem(0).wait_until(crate::p2p::cmp(cmp)?, cmp_value).map(drop))",
        );
        emit_plain(
            out,
            &format!("{name}_test"),
            "int",
            "c_int",
            &[
                p(format!("{c} *ivar"), format!("ivar: *mut {r}")),
                p("int cmp", "cmp: c_int"),
                p(format!("{c} cmp_value"), format!("cmp_value: {r}")),
            ],
            "crate::p2p::run(name, 1, 0, 0, || Ok(c_int::from(crate::p2p::view(ivar, 1)?.elem(0).test(crate::p2p::cmp(cmp)?, cmp_value)?)))",
        );
    }
    for (name, c, r) in [
        ("short", "short", "i16"),
        ("int", "int", "i32"),
        ("long", "long", "i64"),
        ("longlong", "long long", "i64"),
    ] {
        emit_plain(
            out,
            &format!("{name}_wait"),
            "void",
            "()",
            &[
                p(format!("{c} *ivar"), format!("ivar: *mut {r}")),
                p(format!("{c} cmp_value"), format!("cmp_value: {r}")),
            ],
            "crate::p2p::run(name, 1, (), (), || crate::p2p::view(ivar, 1)?.elem(0).wait(cmp_value).map(drop))",
        );
    }
    emit_plain(
        out,
        "wait_until",
        "void",
        "()",
        &[
            p("long *ivar", "ivar: *mut i64"),
            p("int cmp", "cmp: c_int"),
            p("long cmp_value", "cmp_value: i64"),
        ],
        "crate::p2p::run(name, 1, (), (), || crate::p2p::view(ivar, 1)?.elem(0).wait_until(crate::p2p::cmp(cmp)?, cmp_value).map(drop))",
    );
    emit_plain(
        out,
        "wait",
        "void",
        "()",
        &[
            p("long *ivar", "ivar: *mut i64"),
            p("long cmp_value", "cmp_value: i64"),
        ],
        "crate::p2p::run(name, 1, (), (), || crate::p2p::view(ivar, 1)?.elem(0).wait(cmp_value).map(drop))",
    );
}

/// The C types a C11 type-generic routine dispatches on: every standard type of the typed
/// families (the fixed-width and `size_t`/`ptrdiff_t` names are typedefs of these, so they
/// dispatch too, and `_Generic` must not list one type twice).
const GENERIC_TYPES: &[(&str, &str)] = &[
    ("float", "float"),
    ("double", "double"),
    ("longdouble", "long double"),
    ("char", "char"),
    ("schar", "signed char"),
    ("short", "short"),
    ("int", "int"),
    ("long", "long"),
    ("longlong", "long long"),
    ("uchar", "unsigned char"),
    ("ushort", "unsigned short"),
    ("uint", "unsigned int"),
    ("ulong", "unsigned long"),
    ("ulonglong", "unsigned long long"),
    ("complexf", "float _Complex"),
    ("complexd", "double _Complex"),
];

/// The C11 type-generic routines (`shmem_put`, `shmem_atomic_add`, `shmem_sum_reduce`, …): the
/// generic name and the argument, in the form without a context, whose pointer type picks the
/// typed routine. Routines with a context form take an optional leading `shmem_ctx_t`.
const GENERICS: &[(&str, usize)] = &[
    ("put", 0),
    ("get", 0),
    ("p", 0),
    ("g", 0),
    ("iput", 0),
    ("iget", 0),
    ("ibput", 0),
    ("ibget", 0),
    ("put_nbi", 0),
    ("get_nbi", 0),
    ("put_signal", 0),
    ("put_signal_nbi", 0),
    ("atomic_fetch", 0),
    ("atomic_set", 0),
    ("atomic_swap", 0),
    ("atomic_compare_swap", 0),
    ("atomic_fetch_inc", 0),
    ("atomic_inc", 0),
    ("atomic_fetch_add", 0),
    ("atomic_add", 0),
    ("atomic_fetch_and", 0),
    ("atomic_and", 0),
    ("atomic_fetch_or", 0),
    ("atomic_or", 0),
    ("atomic_fetch_xor", 0),
    ("atomic_xor", 0),
    ("atomic_fetch_nbi", 0),
    ("atomic_swap_nbi", 0),
    ("atomic_compare_swap_nbi", 0),
    ("atomic_fetch_inc_nbi", 0),
    ("atomic_fetch_add_nbi", 0),
    ("atomic_fetch_and_nbi", 0),
    ("atomic_fetch_or_nbi", 0),
    ("atomic_fetch_xor_nbi", 0),
    ("wait_until", 0),
    ("wait_until_all", 0),
    ("wait_until_any", 0),
    ("wait_until_some", 0),
    ("wait_until_all_vector", 0),
    ("wait_until_any_vector", 0),
    ("wait_until_some_vector", 0),
    ("test", 0),
    ("test_all", 0),
    ("test_any", 0),
    ("test_some", 0),
    ("test_all_vector", 0),
    ("test_any_vector", 0),
    ("test_some_vector", 0),
    ("broadcast", 1),
    ("collect", 1),
    ("fcollect", 1),
    ("alltoall", 1),
    ("alltoalls", 1),
    ("and_reduce", 1),
    ("or_reduce", 1),
    ("xor_reduce", 1),
    ("max_reduce", 1),
    ("min_reduce", 1),
    ("sum_reduce", 1),
    ("prod_reduce", 1),
    ("sum_inscan", 1),
    ("sum_exscan", 1),
];

/// The `_Generic` selection of `shmem_{prefix}T_{name}` on argument `arg`, over the types for
/// which the library has that routine.
fn generic_selection(
    defined: &std::collections::HashSet<&str>,
    prefix: &str,
    name: &str,
    arg: usize,
) -> String {
    let mut s = format!("_Generic(SHMEM_C11_ARG{arg}(__VA_ARGS__)");
    for (typename, c) in GENERIC_TYPES {
        let f = format!("shmem_{prefix}{typename}_{name}");
        if defined.contains(f.as_str()) {
            let _ = write!(s, ", \\\n    {c} *: {f}, const {c} *: {f}");
        }
    }
    s.push_str(", \\\n    default: SHMEM_C11_TYPE_ERROR)");
    s
}

/// The C11 type-generic macros, for the routines the header declares.
fn generic_macros(routines: &[Routine]) -> String {
    let defined: std::collections::HashSet<&str> = routines
        .iter()
        .map(|r| r.proto.as_str())
        .chain(SETUP_PROTOS.iter().copied())
        .filter_map(|p| p.split_once('(')?.0.rsplit([' ', '*']).next())
        .collect();
    let mut h = String::from(
        "#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)\n\
/* C11 type-generic routines: the typed routine is picked by the type of the first pointer\n\
 * argument (the second for a team collective), after an optional shmem_ctx_t. An argument of\n\
 * no typed family selects SHMEM_C11_TYPE_ERROR, which does not compile. */\n\
struct shmem_c11_argument_type_has_no_typed_routine;\n\
#define SHMEM_C11_TYPE_ERROR ((struct shmem_c11_argument_type_has_no_typed_routine *)0)\n\
#define SHMEM_C11_ARG0_(a, ...) a\n#define SHMEM_C11_ARG0(...) SHMEM_C11_ARG0_(__VA_ARGS__, 0)\n\
#define SHMEM_C11_ARG1_(a, b, ...) b\n#define SHMEM_C11_ARG1(...) SHMEM_C11_ARG1_(__VA_ARGS__, 0, 0)\n\
#define SHMEM_C11_ARG2_(a, b, c, ...) c\n#define SHMEM_C11_ARG2(...) SHMEM_C11_ARG2_(__VA_ARGS__, 0, 0, 0)\n\n",
    );
    for (name, arg) in GENERICS {
        let plain = generic_selection(&defined, "", name, *arg);
        let any_ctx = GENERIC_TYPES
            .iter()
            .any(|(t, _)| defined.contains(format!("shmem_ctx_{t}_{name}").as_str()));
        if any_ctx {
            let ctx = generic_selection(&defined, "ctx_", name, arg + 1);
            let _ = writeln!(
                h,
                "#define shmem_{name}(...) _Generic(SHMEM_C11_ARG0(__VA_ARGS__), \\\n  shmem_ctx_t: {ctx}, \\\n  default: {plain})(__VA_ARGS__)\n"
            );
        } else {
            let _ = writeln!(h, "#define shmem_{name}(...) {plain}(__VA_ARGS__)\n");
        }
    }
    h.push_str("#endif /* C11 */\n\n");
    h
}

/// A prototype's parts: return type, name, and parameters (declaration, name).
struct Proto<'a> {
    ret: &'a str,
    name: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

fn parse_proto(proto: &str) -> Option<Proto<'_>> {
    let (head, rest) = proto.split_once('(')?;
    let params = rest.strip_suffix(");")?;
    let name = head.rsplit([' ', '*']).next()?;
    let ret = head[..head.len() - name.len()].trim_end();
    let params = match params {
        "void" => Vec::new(),
        ps => ps
            .split(", ")
            .map(|d| (d, d.rsplit([' ', '*']).next().unwrap_or(d)))
            .collect(),
    };
    Some(Proto { ret, name, params })
}

/// The type-generic routines for C++: an overload of `shmem_{name}` (and of its context form)
/// for every type with a typed routine, each calling it, from the same tables as the C11
/// macros. They have C++ linkage, so they sit outside the header's `extern "C"` block.
fn cxx_overloads(routines: &[Routine]) -> String {
    let protos: std::collections::HashMap<&str, &str> = routines
        .iter()
        .map(|r| r.proto.as_str())
        .chain(SETUP_PROTOS.iter().copied())
        .filter_map(|p| Some((parse_proto(p)?.name, p)))
        .collect();
    let mut h = String::from(
        "#if defined(__cplusplus)
/* The type-generic routines for C++: overloads picked by the type of the first pointer
 * argument (the second for a team collective), with an optional leading shmem_ctx_t. */
",
    );
    // The parameter types of a declaration list, without the names.
    let types = |params: &[(&str, &str)]| -> Vec<String> {
        params
            .iter()
            .map(|(d, a)| d[..d.len() - a.len()].trim_end().to_string())
            .collect()
    };
    for (name, _) in GENERICS {
        // A C routine of the generic name itself (the deprecated `shmem_wait_until` on a
        // `long`) is the overload for its own signature.
        let plain = protos
            .get(format!("shmem_{name}").as_str())
            .and_then(|p| parse_proto(p))
            .map(|p| types(&p.params));
        for prefix in ["", "ctx_"] {
            for (typename, _) in GENERIC_TYPES {
                let typed = format!("shmem_{prefix}{typename}_{name}");
                let Some(Proto { ret, params, .. }) =
                    protos.get(typed.as_str()).and_then(|p| parse_proto(p))
                else {
                    continue;
                };
                if plain.as_ref() == Some(&types(&params)) {
                    continue;
                }
                let decls: Vec<&str> = params.iter().map(|(d, _)| *d).collect();
                let args: Vec<&str> = params.iter().map(|(_, a)| *a).collect();
                let ret_kw = if ret == "void" { "" } else { "return " };
                let _ = writeln!(
                    h,
                    "inline {ret} shmem_{name}({}) {{ {ret_kw}{typed}({}); }}",
                    decls.join(", "),
                    args.join(", ")
                );
            }
        }
    }
    h.push_str(
        "#endif /* C++ */

",
    );
    h
}

fn header(routines: &[Routine]) -> String {
    let mut h = String::new();
    let legacy = legacy_constants();
    h.push_str(
        &"/* shmem.h: the OpenSHMEM C API of shmem-rs (libshmem.so).\n * Generated by core/capi/lib/build.rs from src/table.rs: do not edit. */\n\
#ifndef SHMEM_RS_SHMEM_H\n#define SHMEM_RS_SHMEM_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n\
#define SHMEM_MAJOR_VERSION 1\n#define SHMEM_MINOR_VERSION 6\n#define SHMEM_MAX_NAME_LEN 256\n\
#define SHMEM_VENDOR_STRING \"shmem-rs 0.1.0 (CANN SHMEM semantics, OpenSHMEM 1.6)\"\n\n\
#define SHMEM_THREAD_SINGLE 0\n#define SHMEM_THREAD_FUNNELED 1\n#define SHMEM_THREAD_SERIALIZED 2\n#define SHMEM_THREAD_MULTIPLE 3\n\n\
typedef struct shmem_ctx_opaque *shmem_ctx_t;\ntypedef struct shmem_team_opaque *shmem_team_t;\ntypedef struct { int num_contexts; } shmem_team_config_t;\ntypedef struct { size_t total_ops; } shmem_ctx_session_config_t;\n#define SHMEM_CTX_SESSION_BATCH 1L\n#define SHMEM_CTX_SESSION_TOTAL_OPS 1L\n#define SHMEM_TEAM_INVALID ((shmem_team_t)0)\n#define SHMEM_TEAM_NUM_CONTEXTS 1L\n#define SHMEM_CTX_SERIALIZED 1\n#define SHMEM_CTX_PRIVATE 2\n#define SHMEM_CTX_NOSTORE 4\n#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)\n\n#define SHMEM_CMP_EQ 0\n#define SHMEM_CMP_NE 1\n#define SHMEM_CMP_GT 2\n#define SHMEM_CMP_GE 3\n#define SHMEM_CMP_LT 4\n#define SHMEM_CMP_LE 5\n#define SHMEM_SIGNAL_SET 0\n#define SHMEM_SIGNAL_ADD 1\n#define SHMEM_MALLOC_ATOMICS_REMOTE 1L\n#define SHMEM_MALLOC_SIGNAL_REMOTE 2L\n\n{legacy}#ifdef __cplusplus\nextern \"C\" {\n#endif\n\nextern shmem_ctx_t SHMEM_CTX_DEFAULT;\nextern shmem_team_t SHMEM_TEAM_WORLD;\nextern shmem_team_t SHMEM_TEAM_SHARED;\n\n"
            .replace("{legacy}", &legacy),
    );
    for p in SETUP_PROTOS {
        let _ = writeln!(h, "{p}");
    }
    h.push('\n');
    for r in routines {
        let _ = writeln!(h, "{}", r.proto);
    }
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n");
    h.push_str(&generic_macros(routines));
    h.push_str(&cxx_overloads(routines));
    h.push_str("#endif /* SHMEM_RS_SHMEM_H */\n");
    h
}

/// shmem4py (PyPI) picks the features of an OpenSHMEM library by the vendor macros of the
/// implementations it knows and, for any other, defines static stand-ins that clash with this
/// header's declarations. The header says which features it has, so that
/// `OSHCC=oshcc pip install shmem4py` builds against it unmodified: every one.
const PYSHMEM_FEATURES: &[&str] = &[
    "shmem_malloc_with_hints",
    "shmem_team_t",
    "SHMEM_CTX_INVALID",
    "shmem_amo_nbi",
    "shmem_put_signal",
    "shmem_signal_fetch",
    "shmem_signal_wait_until",
    "shmem_broadcast",
    "shmem_collect",
    "shmem_fcollect",
    "shmem_alltoall",
    "shmem_alltoalls",
    "shmem_broadcastmem",
    "shmem_collectmem",
    "shmem_fcollectmem",
    "shmem_alltoallmem",
    "shmem_alltoallsmem",
    "shmem_reduce",
    "shmem_wait_test_many",
    "shmem_pcontrol",
];

/// The deprecated constants of the active-set collectives and their pre-1.3 `_SHMEM_` names,
/// which older programs still use.
fn legacy_constants() -> String {
    let mut h =
        String::from("/* Deprecated: the pSync and pWrk sizes of the active-set collectives. */\n");
    let sizes = [
        "SYNC_SIZE",
        "BARRIER_SYNC_SIZE",
        "BCAST_SYNC_SIZE",
        "COLLECT_SYNC_SIZE",
        "REDUCE_SYNC_SIZE",
        "ALLTOALL_SYNC_SIZE",
        "ALLTOALLS_SYNC_SIZE",
    ];
    for prefix in ["SHMEM_", "_SHMEM_"] {
        for s in sizes {
            let _ = writeln!(h, "#define {prefix}{s} {PSYNC_WORDS}");
        }
        let _ = writeln!(h, "#define {prefix}SYNC_VALUE 0L");
        let _ = writeln!(h, "#define {prefix}REDUCE_MIN_WRKDATA_SIZE 1");
    }
    for (i, c) in ["EQ", "NE", "GT", "GE", "LT", "LE"].iter().enumerate() {
        let _ = writeln!(h, "#define _SHMEM_CMP_{c} {i}");
    }
    h.push_str("\n/* The features shmem4py (PyPI) tests for: every one is here. */\n");
    for f in PYSHMEM_FEATURES {
        let _ = writeln!(h, "#define PySHMEM_HAVE_{f} 1");
    }
    h.push('\n');
    h
}

/// The hand-written routines of `src/setup.rs`, `src/heap.rs` and `src/rma.rs`, as the header
/// declares them.
const SETUP_PROTOS: &[&str] = &[
    "void shmem_init(void);",
    "int shmem_init_thread(int requested, int *provided);",
    "void shmem_query_thread(int *provided);",
    "void shmem_finalize(void);",
    "void shmem_global_exit(int status);",
    "int shmem_my_pe(void);",
    "int shmem_n_pes(void);",
    "int shmem_pe_accessible(int pe);",
    "int shmem_addr_accessible(const void *addr, int pe);",
    "void *shmem_ptr(const void *dest, int pe);",
    "void shmem_info_get_version(int *major, int *minor);",
    "void shmem_info_get_name(char *name);",
    "void shmem_barrier_all(void);",
    "void shmem_sync_all(void);",
    "void shmem_quiet(void);",
    "void shmem_fence(void);",
    "int shmem_ctx_create(long options, shmem_ctx_t *ctx);",
    "void shmem_ctx_destroy(shmem_ctx_t ctx);",
    "void shmem_ctx_quiet(shmem_ctx_t ctx);",
    "void shmem_ctx_fence(shmem_ctx_t ctx);",
    "void shmem_pe_quiet(const int *target_pes, size_t npes);",
    "void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes);",
    "void shmem_ctx_session_start(shmem_ctx_t ctx, long options, const shmem_ctx_session_config_t *config, long config_mask);",
    "void shmem_ctx_session_stop(shmem_ctx_t ctx);",
    "void shmem_query_initialized(int *initialized);",
    "void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);",
    "uint64_t shmem_signal_fetch(const uint64_t *sig_addr);",
    "uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);",
    "void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);",
    "void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);",
    "void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);",
    "void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);",
    "int shmem_team_my_pe(shmem_team_t team);",
    "int shmem_team_n_pes(shmem_team_t team);",
    "int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);",
    "int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);",
    "int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size, const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);",
    "int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config, long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config, long yaxis_mask, shmem_team_t *yaxis_team);",
    "void shmem_team_destroy(shmem_team_t team);",
    "int shmem_team_sync(shmem_team_t team);",
    "int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);",
    "int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);",
    "void shmem_longdouble_p(long double *dest, long double value, int pe);",
    "void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe);",
    "long double shmem_longdouble_g(const long double *source, int pe);",
    "long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe);",
    "void shmem_set_lock(long *lock);",
    "void shmem_clear_lock(long *lock);",
    "int shmem_test_lock(long *lock);",
    "void *shmem_malloc(size_t size);",
    "void *shmem_malloc_with_hints(size_t size, long hints);",
    "void start_pes(int npes);",
    "int _my_pe(void);",
    "int _num_pes(void);",
    "void *shmalloc(size_t size);",
    "void shfree(void *ptr);",
    "void *shrealloc(void *ptr, size_t size);",
    "void *shmemalign(size_t alignment, size_t size);",
    "void shmem_pcontrol(const int level, ...);",
    "void *shmem_calloc(size_t count, size_t size);",
    "void *shmem_align(size_t alignment, size_t size);",
    "void *shmem_realloc(void *ptr, size_t size);",
    "void shmem_free(void *ptr);",
    "void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
    "void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);",
];

/// `oshc++` beside `oshCC` and `aclshmem-c++` beside `aclshmem-cxx` in `target/<profile>`:
/// Cargo cannot name a binary with a `+`, and C++ users (and build systems that look for those
/// names) expect them there once the package is built. The links are the only files this
/// script writes outside `OUT_DIR`
/// (`target/<profile>/build/shmem-c-*/out`); it may dangle until `oshCC` is linked.
fn link_osh_cxx() {
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    let Some(profile_dir) = std::path::Path::new(&out).ancestors().nth(3) else {
        return;
    };
    for (link, to) in [("oshc++", "oshCC"), ("aclshmem-c++", "aclshmem-cxx")] {
        let link = profile_dir.join(link);
        if std::fs::symlink_metadata(&link).is_err() {
            // A failure (a read-only target directory) only leaves the `CC`/`cxx` name.
            let _ = std::os::unix::fs::symlink(to, &link);
        }
    }
}

/// Makes `libshmem.so` depend on the ACL runtime (`DT_NEEDED libascendcl.so`), as CANN's does,
/// found beside it (`RUNPATH $ORIGIN`): in `target/<profile>` and in an installed `lib/` the
/// stand-in is there. The runtime is built as a separate library of the workspace, possibly after
/// this one, so the link names a stub with the runtime's soname, as vendors ship stubs of their
/// driver libraries; `libshmem.so` uses no symbol of it at link time (the simulator finds the
/// stand-in's private interface at run time, `sim/src/device_window.rs`).
fn link_ascendcl() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("ascendcl-stub");
    std::fs::create_dir_all(&dir).expect("creating the stub's directory");
    let src = dir.join("stub.c");
    std::fs::write(
        &src,
        "/* A link stub with the soname of the ACL runtime: gives libshmem.so its DT_NEEDED. */\n\
         int aclsim_link_stub(void) { return 0; }\n",
    )
    .expect("writing the stub");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args(["-shared", "-fPIC", "-Wl,-soname,libascendcl.so", "-o"])
        .arg(dir.join("libascendcl.so"))
        .arg(&src)
        .status()
        .expect("the C compiler runs");
    assert!(
        status.success(),
        "building the libascendcl.so link stub failed"
    );
    println!("cargo:rustc-cdylib-link-arg=-L{}", dir.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--push-state,--no-as-needed,-lascendcl,--pop-state");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
}

fn main() {
    // The same sources build `shmem-c-linked` (`linked/`, an rlib for in-process fuzzing),
    // whose manifest sits one directory below; only `shmem-c` makes the C libraries.
    let c_library = std::env::var("CARGO_PKG_NAME").as_deref() == Ok("shmem-c");
    let root = if c_library { "" } else { "../" };
    println!("cargo:rerun-if-changed={root}src/table.rs");
    println!("cargo:rerun-if-changed={root}../../../backends/build/not_root.rs");
    declare_not_root();
    println!("cargo:rerun-if-changed={root}build.rs");
    println!("cargo:rerun-if-changed={root}src/longdouble.c");
    // What Rust cannot express: `long double` by value and its arithmetic.
    cc::Build::new()
        .file(format!("{root}src/longdouble.c"))
        .warnings(true)
        .compile("shmem_longdouble");
    if c_library {
        // C programs link against libshmem.so and find it again by this name.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libshmem.so");
        link_ascendcl();
        link_osh_cxx();
    }
    let mut routines = Vec::new();
    rma_routines(&mut routines);
    amo_routines(&mut routines);
    p2p_routines(&mut routines);
    signal_routines(&mut routines);
    coll_routines(&mut routines);
    deprecated_routines(&mut routines);
    active_set_routines(&mut routines);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let rust: String = routines
        .iter()
        .map(|r| r.rust.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(out.join("rma_typed.rs"), rust).expect("writing the generated wrappers");
    std::fs::write(out.join("shmem.h"), header(&routines)).expect("writing the generated header");
}
