//! Generates the Rust API's bad-input calls (issue 14, item 3): every public method of the
//! `shmem` crate's program-facing types, read from the crate's source with `syn`, × each class
//! of argument it has (PE, address, size, stride, handle, state), one invalid value at a time
//! with every other argument valid. `src/cases/bad_input.rs` runs them; what cannot be
//! generated is listed with the reason, so the coverage is counted, not assumed.
//!
//! The output, `$OUT_DIR/rust_api_bad_input.rs`, holds `CALLS` (one closure per call) and
//! `NOT_GENERATED` (entry, class, why).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quote::ToTokens;

/// Elements in the fixture's buffers and local arrays (what a valid length is).
const LEN: usize = 16;

// The argument classes, shared with the case that runs the calls.
include!("src/cases/bad_input_class.rs");

/// One public method.
struct Method {
    /// The impl's self type, as written (`SymElem<'a, i64>`).
    self_ty: String,
    /// Its last path segment's name (`SymElem`).
    ty: String,
    name: String,
    receiver: Receiver,
    params: Vec<(String, String)>,
    ret: String,
    /// Whether it is an `unsafe fn`.
    unsafe_fn: bool,
    /// The method's own type parameters (the generated call names each: `u64`, or `f32` for a
    /// device float `F`).
    generics: Vec<String>,
    /// Whether the doc comment has a `# Panics` section.
    panics: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Receiver {
    None,
    Ref,
    Mut,
    Value,
}

/// A parameter's valid value, its invalid one and its class; `None` when the generator does
/// not know how to make one.
struct Arg {
    good: String,
    bad: Option<(Class, String)>,
}

impl Arg {
    /// A parameter with no invalid value of a class.
    fn good(g: &str) -> Result<Arg, String> {
        Ok(Arg {
            good: g.into(),
            bad: None,
        })
    }

    /// A parameter whose valid value is `g` and whose invalid one, of class `c`, is `b`.
    fn bad(g: &str, c: Class, b: &str) -> Result<Arg, String> {
        Ok(Arg {
            good: g.into(),
            bad: Some((c, b.into())),
        })
    }
}

fn main() {
    let core = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../core/src");
    println!("cargo:rerun-if-changed={}", core.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/cases/bad_input_class.rs");
    let mut methods = Vec::new();
    walk(&core, &mut methods);
    methods.sort_by(|a, b| (&a.ty, &a.name, &a.self_ty).cmp(&(&b.ty, &b.name, &b.self_ty)));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("rust_api_bad_input.rs");
    std::fs::write(out, generate(&methods)).unwrap();
}

/// Every `.rs` file under `dir` but the bootstrap's internals and unit tests.
fn walk(dir: &Path, out: &mut Vec<Method>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "bootstrap") {
                walk(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && p.file_name().is_some_and(|n| n != "tests.rs")
        {
            let text = std::fs::read_to_string(&p).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            collect(&file.items, out);
        }
    }
}

fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .replace(' ', "")
        .replace("'_", "")
        .replace("'a", "")
        .replace("'env", "")
        .replace("<,", "<")
}

/// Whether `attrs` keep the item out of an ordinary build (`#[cfg(...)]`) or the docs.
fn hidden(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") || (a.path().is_ident("doc") && tokens(&a.meta).contains("hidden"))
    })
}

fn collect(items: &[syn::Item], out: &mut Vec<Method>) {
    for item in items {
        match item {
            syn::Item::Mod(m) if !hidden(&m.attrs) => {
                if let Some((_, items)) = &m.content {
                    collect(items, out);
                }
            }
            syn::Item::Impl(imp) if imp.trait_.is_none() && !hidden(&imp.attrs) => {
                let syn::Type::Path(tp) = &*imp.self_ty else {
                    continue;
                };
                let ty = tp.path.segments.last().unwrap().ident.to_string();
                for it in &imp.items {
                    let syn::ImplItem::Fn(f) = it else { continue };
                    if !matches!(f.vis, syn::Visibility::Public(_)) || hidden(&f.attrs) {
                        continue;
                    }
                    let docs: String = f
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("doc"))
                        .map(|a| tokens(&a.meta))
                        .collect();
                    let mut receiver = Receiver::None;
                    let mut params = Vec::new();
                    for input in &f.sig.inputs {
                        match input {
                            syn::FnArg::Receiver(r) => {
                                receiver = match (&r.reference, &r.mutability) {
                                    (Some(_), Some(_)) => Receiver::Mut,
                                    (Some(_), None) => Receiver::Ref,
                                    (None, _) => Receiver::Value,
                                }
                            }
                            syn::FnArg::Typed(p) => {
                                params.push((tokens(&p.pat).replace("mut", ""), tokens(&p.ty)))
                            }
                        }
                    }
                    out.push(Method {
                        self_ty: tokens(&imp.self_ty),
                        ty: ty.clone(),
                        name: f.sig.ident.to_string(),
                        receiver,
                        params,
                        ret: match &f.sig.output {
                            syn::ReturnType::Default => "()".into(),
                            syn::ReturnType::Type(_, t) => tokens(t),
                        },
                        unsafe_fn: f.sig.unsafety.is_some(),
                        generics: f
                            .sig
                            .generics
                            .params
                            .iter()
                            .filter_map(|g| match g {
                                syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                                _ => None,
                            })
                            .collect(),
                        panics: docs.contains("#Panics"),
                    });
                }
            }
            _ => {}
        }
    }
}

/// The types whose methods a program calls on a running job, and what is out of scope.
fn scope(ty: &str) -> Result<(), &'static str> {
    match ty {
        "Instance" | "Team" | "Context" | "CtxRef" | "SymBuf" | "SymSlice" | "SymElem"
        | "NbiScope" | "LockGuard" | "Device" | "MultiDevice" => Ok(()),
        _ => Err("not a handle of a running job (a builder, a value type or an error)"),
    }
}

/// Whether the method's result can say it refused: a `Result`, an `Option` or a `bool`.
fn fallible(ret: &str) -> bool {
    ret.starts_with("Result<")
        || ret.starts_with("Option<")
        || ret == "bool"
        || ret == "KernelResult"
}

/// The element type of the fixture a receiver of `self_ty` works on.
fn elem(m: &Method) -> &'static str {
    if m.self_ty.contains("i64") {
        "i64"
    } else {
        "u64"
    }
}

/// The receiver's expression: valid, of a destroyed handle, of a finalized instance.
fn receiver(m: &Method, class: Option<Class>) -> Result<String, String> {
    let e = elem(m);
    let buf = if e == "i64" { "ibuf" } else { "buf" };
    let owner = match class {
        Some(Class::State) => "f.dead.",
        _ => "f.",
    };
    let clone = if m.receiver == Receiver::Value {
        ".clone()"
    } else {
        ""
    };
    Ok(match (m.ty.as_str(), class) {
        ("Instance", _) => format!("{owner}inst"),
        ("Team", Some(Class::Handle)) => format!("f.dead_team{clone}"),
        ("Team", _) => format!("{owner}team{clone}"),
        ("Context", Some(Class::Handle)) => format!("f.dead_ctx{clone}"),
        ("Context", _) => format!("{owner}ctx{clone}"),
        ("CtxRef", Some(Class::Handle)) => "f.dead_ctx.as_ref()".into(),
        ("CtxRef", _) => format!("{owner}ctx.as_ref()"),
        ("SymBuf", Some(Class::State)) if m.receiver != Receiver::Ref && e == "u64" => {
            "f.dead.spare()".into()
        }
        ("SymBuf", _) if m.receiver != Receiver::Ref && e == "u64" => "f.fresh_buf()".into(),
        ("SymBuf", _) => format!("{owner}{buf}"),
        ("SymSlice", _) => format!("{owner}{buf}.as_slice()"),
        ("SymElem", _) => format!("{owner}{buf}.elem(0)"),
        ("LockGuard", _) => return Err("a held lock: the lock cases cover its release".into()),
        (other, _) => return Err(format!("no fixture of {other}")),
    })
}

/// The classes a receiver of this type has itself.
fn receiver_classes(m: &Method) -> Vec<Class> {
    match m.ty.as_str() {
        "Team" | "Context" | "CtxRef" | "NbiScope" => vec![Class::Handle, Class::State],
        _ if m.receiver != Receiver::None => vec![Class::State],
        _ => vec![],
    }
}

/// The valid value of a parameter of type `ty` that has no invalid one of a class (host and
/// device calls alike): a word, an operator, an option.
fn plain_value(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "T" | "S" | "F" | "u64" | "i64" | "i32" => "Default::default()",
        "Cmp" => "Cmp::Eq",
        "AmoOp" => "AmoOp::Fetch",
        "SignalOp" => "SignalOp::Set",
        "ReduceOp" => "ReduceOp::Sum",
        "CtxOptions" => "CtxOptions::NONE",
        "TeamConfig" => "TeamConfig::default()",
        _ => return None,
    })
}

/// A parameter's values. `sized` says whether the method has a separate count (then a slice
/// argument's length is not what is checked).
fn arg(name: &str, ty: &str, sized: bool) -> Result<Arg, String> {
    let n = LEN;
    let (good, bad) = (Arg::good, Arg::bad);
    match (name, ty) {
        (_, "Pe") | ("pe" | "root", "u32") => bad("f.pe", Class::Pe, "f.bad_pe"),
        (_, "&[Pe]") => bad("&[f.pe]", Class::Pe, "&[f.bad_pe]"),
        (_, "&[T]") if sized => good("&f.src[..]"),
        (_, "&[T]") => bad("&f.src[..]", Class::Size, "&f.long_src[..]"),
        (_, "&mut[T]") if sized => good("&mut dst[..]"),
        (_, "&mut[T]") => bad("&mut dst[..]", Class::Size, "&mut long_dst[..]"),
        (_, "&mutT") => good("&mut fetch"),
        (_, "&mut[usize]") => bad("&mut idx[..]", Class::Size, "&mut idx[..1]"),
        (_, "implRangeBounds<usize>") => bad(&format!("0..{n}"), Class::Size, &format!("0..{}", n + 1)),
        (_, "&Attributes") => Err("attributes: Attributes::validate and the init cases check them".into()),
        (_, "&Stream") => good("&f.stream"),
        (_, "&str") => good("\"bad_input\""),
        ("block_dim", "u32") => bad("1", Class::Size, "0"),
        (_, t) if t.starts_with("implFn(&mutDevice") => good("|_d| Ok(())"),
        // The scope's result type is the call's one type parameter (named `u64`).
        (_, t) if t.starts_with("implFnOnce(&NbiScope") => good("|_s| 0u64"),
        (_, "DeviceRange") => Err(
            "a DeviceRange, which only register_device (an unsafe fn, memory the caller vouches for) makes".into(),
        ),
        (_, "&[u8]") => good("&[0u8; 8][..]"),
        (_, "&mut[u8]") => good("&mut [0u8; 8][..]"),
        (_, "Option<&[i32]>") => bad(
            &format!("Some(&[0i32; {n}][..])"),
            Class::Size,
            &format!("Some(&[0i32; {}][..])", n + 1),
        ),
        (_, t) if t.starts_with("*const") => bad(
            "f.buf.as_ptr().cast_const().cast()",
            Class::Address,
            "f.not_heap().cast_const().cast()",
        ),
        (_, t) if t.starts_with("*mut") => {
            bad("f.buf.as_ptr().cast()", Class::Address, "f.not_heap().cast()")
        }
        (_, t) if t.starts_with("SymSlice<") => bad(
            "f.buf2.as_slice()",
            Class::Address,
            "f.foreign.as_slice()",
        ),
        (_, t) if t.starts_with("SymElem<") => {
            bad("f.buf2.elem(0)", Class::Address, "f.foreign.elem(0)")
        }
        ("len" | "nelems" | "new_len" | "count", "usize") => {
            bad(&n.to_string(), Class::Size, "usize::MAX / 16")
        }
        // Two blocks of half the buffer: a stride then moves the second block.
        ("bsize", "usize") => bad(&(n / 2).to_string(), Class::Size, "usize::MAX / 16"),
        ("nblocks", "usize") => bad("2", Class::Size, "usize::MAX / 16"),
        ("index" | "start", "usize") => bad("0", Class::Size, &n.to_string()),
        ("alignment", "usize") => bad("8", Class::Size, "3"),
        ("offset", "usize") => bad("f.buf.offset()", Class::Address, "f.inst.heap_size()"),
        ("dst" | "sst", "usize") => bad("1", Class::Stride, "usize::MAX / 16"),
        (_, "isize") => bad("1", Class::Stride, "isize::MAX / 16"),
        ("start", "i32") => bad("0", Class::Pe, "f.bad_pe as i32"),
        ("stride", "i32") => bad("1", Class::Stride, "0"),
        ("size", "i32") => bad("2", Class::Size, "f.bad_pe as i32 + 1"),
        ("xrange", "i32") => bad("1", Class::Size, "0"),
        (_, "&Team") => bad("&f.team", Class::Handle, "&f.dead_team"),
        (_, "&Context") => bad("&f.ctx", Class::Handle, "&f.dead_ctx"),
        (_, "&Instance") => bad("&f.inst", Class::State, "&f.dead.inst"),
        (_, t) if plain_value(t).is_some() => good(plain_value(t).unwrap_or_default()),
        _ => Err(format!("parameter {name}: {ty}")),
    }
}

/// A device-side parameter's values (`v` is the fixture's `DeviceArgs`, moved into the kernel).
/// The symmetric side of a copy (the destination of a put, the source of a get), a signal
/// word and an atomic's target are addresses the device can check; the local side is any
/// memory the core can reach, which nothing can check.
fn dev_arg(m: &Method, name: &str, ty: &str) -> Result<Arg, String> {
    let n = LEN;
    let (good, bad) = (Arg::good, Arg::bad);
    let getting = m.name.contains("get") || m.name == "g";
    let symmetric = match name {
        "dst" => !getting,
        "src" => getting,
        "addr" | "sig" => true,
        _ => false,
    };
    match (name, ty) {
        (_, t) if t.starts_with('*') && symmetric => {
            let word = if name == "sig" { "v.sig" } else { "v.sym" };
            bad(&format!("{word} as _"), Class::Address, "v.outside as _")
        }
        (_, t) if t.starts_with('*') => good("v.local as _"),
        ("pe", "u32") => bad("v.pe", Class::Pe, "v.bad_pe"),
        ("len" | "nelems", "usize") => bad(&n.to_string(), Class::Size, "usize::MAX / 16"),
        ("buf" | "ub" | "offset", "usize") => bad("0", Class::Size, "shmem::UB_SIZE"),
        ("ub_size", "usize") => bad("1024", Class::Size, "2 * shmem::UB_SIZE"),
        ("sync_id", "u32") => bad("0", Class::Handle, "8"),
        // An instance id: this PE's first instance, or one no PE initialised.
        ("id", "u64") => bad("v.id", Class::Handle, "u64::MAX"),
        ("param", "NonContiguousCopyParam") => bad(
            "NonContiguousCopyParam { repeat: 2, length: 4, src_ld: 4, dst_ld: 4 }",
            Class::Stride,
            "NonContiguousCopyParam { repeat: 2, length: 4, src_ld: u32::MAX / 2, dst_ld: u32::MAX / 2 }",
        ),
        (_, "&crate::Team") => bad("&v.team", Class::Handle, "&v.dead_team"),
        (_, t) if plain_value(t).is_some() => good(plain_value(t).unwrap_or_default()),
        _ => Err(format!("parameter {name}: {ty}")),
    }
}

/// `CALLS` and `NOT_GENERATED`.
fn generate(methods: &[Method]) -> String {
    let mut calls = String::new();
    let mut skipped = String::new();
    let mut skip = |entry: &str, class: Option<Class>, why: &str| {
        let class = class.map_or("None".to_string(), |c| format!("Some(Class::{c:?})"));
        writeln!(skipped, "    ({entry:?}, {class}, {why:?}),").unwrap();
    };
    for m in methods {
        let entry = format!("{}::{}", m.ty, m.name);
        if let Err(why) = scope(&m.ty) {
            skip(&entry, None, why);
            continue;
        }
        if !fallible(&m.ret) && !m.panics {
            skip(
                &entry,
                None,
                "returns a plain value and documents no panic: nothing to refuse with",
            );
            continue;
        }
        let sized = m.params.iter().any(|(n, t)| {
            t == "usize" && matches!(n.as_str(), "len" | "nelems" | "bsize" | "nblocks")
        });
        let device = m.ty == "Device" || m.ty == "MultiDevice";
        let args: Result<Vec<Arg>, String> = m
            .params
            .iter()
            .map(|(n, t)| {
                if device {
                    dev_arg(m, n, t)
                } else {
                    arg(n, t, sized)
                }
            })
            .collect();
        let args = match args {
            Ok(a) => a,
            Err(why) => {
                skip(&entry, None, &format!("the generator cannot make {why}"));
                continue;
            }
        };
        // One call per invalid argument, then the receiver's own classes.
        let mut variants: Vec<(Class, Option<usize>)> = args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.bad.as_ref().map(|(c, _)| (*c, Some(i))))
            .collect();
        if m.ty == "MultiDevice" && m.name != "instance_ctx_set" {
            // A block of a multi-instance kernel starts with no instance selected.
            variants.push((Class::State, None));
        } else if device {
            // A kernel runs only on a live instance (`Instance::launch` refuses a finalized
            // one), and a block has no handle of its own.
        } else if fallible(&m.ret) {
            variants.extend(receiver_classes(m).into_iter().map(|c| (c, None)));
        } else {
            for c in receiver_classes(m) {
                skip(
                    &entry,
                    Some(c),
                    "makes a value and reports nothing: the call that uses the value refuses",
                );
            }
        }
        // A method whose only refusal is a documented panic returns a plain value.
        let verdict = |call: String| {
            let call = if m.unsafe_fn {
                format!("unsafe {{ {call} }}")
            } else {
                call
            };
            if fallible(&m.ret) {
                format!("verdict({call})")
            } else {
                format!("{{ let _ = {call}; Verdict::Accepted }}")
            }
        };
        if m.unsafe_fn {
            variants.retain(|&(class, _)| {
                let vouched = matches!(class, Class::Address | Class::Size | Class::Stride);
                if vouched {
                    skip(
                        &entry,
                        Some(class),
                        "an unsafe fn: the caller vouches for its pointers and lengths (# Safety)",
                    );
                }
                !vouched
            });
        }
        if variants.is_empty() {
            skip(
                &entry,
                None,
                "no argument of a class and no state of its own to make invalid",
            );
        }
        for (class, bad_at) in variants {
            let recv_class = if bad_at.is_none() { Some(class) } else { None };
            let list: Vec<&str> = args
                .iter()
                .enumerate()
                .map(|(i, a)| match (&a.bad, Some(i) == bad_at) {
                    (Some((_, b)), true) => b.as_str(),
                    _ => a.good.as_str(),
                })
                .collect();
            let list = list.join(", ");
            let what = bad_at.map_or("the receiver".to_string(), |i| m.params[i].0.clone());
            let name = if m.generics.is_empty() {
                m.name.clone()
            } else {
                let tys: Vec<&str> = m
                    .generics
                    .iter()
                    .map(|g| if g == "F" { "f32" } else { "u64" })
                    .collect();
                format!("{}::<{}>", m.name, tys.join(", "))
            };
            let body = if device {
                let launch = if m.ty == "MultiDevice" {
                    "multi_kernel"
                } else {
                    "kernel"
                };
                format!(
                    "let v = f.device_args(); f.{launch}(move |d| {})",
                    verdict(format!("d.{name}({list})"))
                )
            } else if m.ty == "NbiScope" {
                let opener = match recv_class {
                    Some(Class::Handle) => "f.dead_ctx",
                    Some(Class::State) => "f.dead.inst",
                    _ => "f.inst",
                };
                verdict(format!(
                    "{opener}.nbi(|s| s.{name}({list})).and_then(|r| r)"
                ))
            } else if m.receiver == Receiver::None {
                let path = if m.self_ty.contains("T>") {
                    format!("{}::<{}>", m.ty, elem(m))
                } else {
                    m.ty.clone()
                };
                verdict(format!("{path}::{name}({list})"))
            } else {
                match receiver(m, recv_class) {
                    Ok(r) => verdict(format!("{r}.{name}({list})")),
                    Err(why) => {
                        skip(&entry, Some(class), &why);
                        continue;
                    }
                }
            };
            // Locals a call's `&mut` arguments borrow (for a non-blocking call, beyond its scope).
            let e = elem(m);
            let locals = format!(
                "let (mut fetch, mut dst, mut long_dst, mut idx) = \
                 (0{e}, [0{e}; {LEN}], [0{e}; {}], [0usize; {LEN}]); \
                 let _ = (&mut fetch, &mut dst, &mut long_dst, &mut idx);",
                LEN + 1
            );
            writeln!(
                calls,
                "    Call {{ entry: {entry:?}, class: Class::{class:?}, arg: {what:?}, \
                 panics: {}, run: |f| {{ {locals} {body} }} }},",
                m.panics
            )
            .unwrap();
        }
    }
    format!(
        "/// The generated calls.\npub static CALLS: &[Call] = &[\n{calls}];\n\n\
         /// The public methods (and classes) the generator made no call for, and why.\n\
         pub static NOT_GENERATED: &[(&str, Option<Class>, &str)] = &[\n{skipped}];\n"
    )
}
