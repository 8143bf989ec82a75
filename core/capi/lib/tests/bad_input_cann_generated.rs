//! Bad input, generated (issue 14, item 3), for CANN's C ABI: every host routine of CANN's
//! `shmem.h` (as the C++ preprocessor expands its macros, `aclshmem-c++ -E`) that takes a PE, a
//! team handle or a device address × each class of argument it has (PE, team handle, device
//! address, size, stride), one invalid value at a time, with every other argument valid. The
//! generated C++ program runs on 2 PEs, and each call must:
//! - log one `ERROR <routine>: …` line (or, where CANN's routine answers instead, return it:
//!   `aclshmem_ptr` NULL for a PE or an address it cannot reach);
//! - leave the job running: no PE ends;
//! - change nothing: a checksum of the PE's heap (read back with `aclrtMemcpy`, as the heap is
//!   device memory) is the same after the call: all of it from the first block to the heap's
//!   end, free space included, that is everything but the reserve before the first block, where
//!   barriers keep their flags; and the same again at the end, after a barrier.
//!
//! The test prints the coverage: (routine, class) pairs tested over the pairs the header has.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;

use common::{Proto, error_lines, free_ports, tail, target_dir, temp_dir, text};

/// CANN's `shmem.h` as a C++ host program sees it: every `aclshmem*` routine declared.
fn prototypes(dir: &std::path::Path) -> Vec<Proto> {
    let source = dir.join("header.cpp");
    std::fs::write(&source, "#include <shmem.h>\n").expect("a source file");
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-E", "-P"])
        .arg(&source)
        .output()
        .expect("aclshmem-c++ runs");
    assert!(out.status.success(), "{}", text(&out));
    let expanded = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let mut seen = BTreeSet::new();
    expanded
        .split([';', '{', '}'])
        .filter_map(|decl| {
            let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ");
            let decl = decl.replace("__attribute__((visibility(\"default\"))) ", "");
            let decl = decl.strip_prefix("extern \"C\" ").unwrap_or(&decl);
            if decl.starts_with("inline") || decl.contains("static ") || !decl.ends_with(')') {
                return None;
            }
            let open = decl.find("aclshmem")?;
            let (ret, rest) = decl.split_at(open);
            let (name, params) = rest.trim_end_matches(')').split_once('(')?;
            let ret = ret.trim();
            if ret.is_empty()
                || ret.contains('(')
                || !name.chars().all(|c| c.is_alphanumeric() || c == '_')
            {
                return None;
            }
            Proto::parse(ret, name, params).filter(|p| seen.insert(p.name.clone()))
        })
        .collect()
}

/// The program's heap: its `local_mem_size` (4 MiB) plus CANN's 6 MiB reserve.
const HEAP_BYTES: usize = (4 + 6) << 20;
/// Where the first block lands: past the reserve's signal area, sync pool and counters, as
/// CANN lays them out (the program checks it against `aclshmemx_get_heap_base`).
const FIRST_BLOCK: usize = 0x52_0200;

/// The argument classes, and the invalid value of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// `pe`: -1 and the number of PEs.
    Pe,
    /// An `aclshmem_team_t` argument: a handle no split returned.
    Team,
    /// An argument that must be device memory (the symmetric side, and on CANN the local side
    /// too): a host stack address.
    Address,
    /// `nelems`/`elem_size`: more than the heap holds.
    Size,
    /// `dst`/`sst` (strides) of the symmetric side: one that leads far outside the heap.
    Stride,
}

/// The parameters of `p` that must be device memory.
fn device_side(p: &Proto) -> Vec<&str> {
    p.params
        .iter()
        .filter(|(ty, n)| {
            ty.contains('*')
                && matches!(
                    n.as_str(),
                    "dest" | "source" | "dst" | "src" | "sig_addr" | "ptr"
                )
        })
        .map(|(_, n)| n.as_str())
        .collect()
}

/// The symmetric side of `p`'s transfer (the other is local device memory).
fn symmetric_side(p: &Proto) -> Option<&'static str> {
    let reads = p.name.contains("get") || p.name.ends_with("_g");
    let name = match (reads, p.has("dest")) {
        (false, true) => "dest",
        (false, false) => "dst",
        (true, true) => "source",
        (true, false) => "src",
    };
    p.has(name).then_some(name)
}

/// A call of `p`, with `set` replacing the arguments it names.
fn call(p: &Proto, set: &[(&str, &str)]) -> String {
    let symmetric = symmetric_side(p);
    let args: Vec<String> = p
        .params
        .iter()
        .map(|(ty, name)| {
            if let Some((_, v)) = set.iter().find(|(n, _)| n == name) {
                return (*v).to_owned();
            }
            match name.as_str() {
                "pe" => "next".to_owned(),
                "stream" => "nullptr".to_owned(),
                "sig_op" => "ACLSHMEM_SIGNAL_SET".to_owned(),
                "dst" | "sst" if !ty.contains('*') => format!("({ty})1"),
                "nelems" | "elem_size" | "signal" => format!("({ty})1"),
                _ if ty == "aclshmem_team_t" => "ACLSHMEM_TEAM_WORLD".to_owned(),
                // The symmetric side is the target buffer, the local side the other one.
                _ if ty.contains('*') && Some(name.as_str()) == symmetric => format!("({ty})buf"),
                "dest" | "source" | "src" | "sig_addr" | "ptr" => format!("({ty})other"),
                // Results (a new team, a configuration) go to host memory.
                _ if ty.contains('*') => format!("({ty})results"),
                _ => format!("({ty})0"),
            }
        })
        .collect();
    format!("{}({})", p.name, args.join(", "))
}

/// What a call of routine `name` must return instead of logging an error.
fn answer(name: &str) -> Option<&'static str> {
    match name {
        "aclshmem_ptr" => Some("nullptr"),
        _ => None,
    }
}

#[test]
fn every_cann_routine_refuses_one_invalid_argument_of_each_class_and_changes_nothing() {
    let dir = temp_dir("bad-input-cann-generated");
    let protos: Vec<Proto> = prototypes(&dir)
        .into_iter()
        .filter(|p| p.has("pe") || p.params.iter().any(|(t, _)| t == "aclshmem_team_t"))
        .collect();
    assert!(protos.len() > 150, "only {} routines parsed", protos.len());
    let mut c = String::from(
        "#include <acl/acl.h>\n#include <shmem.h>\n#include <cstdint>\n#include <cstdio>\n\
         #include <cstdlib>\n#include <cstring>\n\n\
         static unsigned char *buf, *other;\nstatic int failures, me;\n\n\
         /* The heap from the first block to its end (local_mem_size plus the 6 MiB reserve, less\n   \
         the reserve's part before the first block), read back as device memory. */\n\
         #define USER_BYTES ((size_t)(HEAP_BYTES - FIRST_BLOCK))\n\
         static uint64_t sum() {\n    static uint64_t *host = static_cast<uint64_t *>(std::malloc(USER_BYTES));\n    \
         if (!host || aclrtMemcpy(host, USER_BYTES, buf, USER_BYTES, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {\n        \
         std::printf(\"PE %d: cannot read the heap back\\n\", me);\n        std::exit(1);\n    }\n    \
         uint64_t s = 1469598103934665603ULL;\n    \
         for (size_t i = 0; i < USER_BYTES / 8; i++) s = (s ^ host[i]) * 1099511628211ULL;\n    \
         return s;\n}\n\n\
         #define CALL(what, cls, e) do { uint64_t b0 = sum(); e; \\\n    \
         if (sum() != b0) { std::printf(\"PE %d: %s (%s) changed the heap\\n\", me, what, cls); failures++; } \\\n    \
         std::printf(\"CALLED %s\\n\", what); } while (0)\n\n\
         int main() {\n    me = std::atoi(std::getenv(\"SHMEMRUN_PE\"));\n    \
         const int n = std::atoi(std::getenv(\"SHMEMRUN_NPES\"));\n    const int next = (me + 1) % n;\n    \
         if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(me) != ACL_SUCCESS) return 1;\n    \
         aclshmemx_init_attr_t attr;\n    attr.my_pe = me;\n    attr.n_pes = n;\n    \
         attr.local_mem_size = 4 << 20;\n    \
         std::snprintf(attr.ip_port, sizeof attr.ip_port, \"tcp://127.0.0.1:%s\", std::getenv(\"CANN_TEST_PORT\"));\n    \
         if (aclshmemx_init_attr(ACLSHMEMX_INIT_WITH_DEFAULT, &attr) != ACLSHMEM_SUCCESS) return 1;\n    \
         buf = static_cast<unsigned char *>(aclshmem_malloc(4096));\n    \
         other = static_cast<unsigned char *>(aclshmem_malloc(4096));\n    \
         static unsigned char pattern[4096];\n    std::memset(pattern, 0x5a, sizeof pattern);\n    \
         if (!buf || !other || aclrtMemcpy(buf, 4096, pattern, 4096, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS ||\n        \
         aclrtMemcpy(other, 4096, pattern, 4096, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return 1;\n    \
         if (static_cast<unsigned char *>(aclshmemx_get_heap_base(DEVICE_SIDE)) + FIRST_BLOCK != buf) {\n        \
         std::printf(\"PE %d: the first block is not %d bytes into the heap\\n\", me, FIRST_BLOCK);\n        return 1;\n    }\n    \
         long double stack[512], results[64];\n    (void)stack;\n    (void)results;\n    \
         std::setvbuf(stdout, nullptr, _IOLBF, 0);\n    aclshmem_barrier_all();\n    const uint64_t initial = sum();\n",
    );
    let mut tested: BTreeMap<(String, Class), usize> = BTreeMap::new();
    let mut applicable = 0usize;
    for p in &protos {
        let mut cases: Vec<(Class, String, String)> = Vec::new();
        if p.has("pe") {
            for bad in ["-1", "n"] {
                cases.push((Class::Pe, "pe".into(), bad.to_owned()));
            }
        }
        for (ty, name) in p.params.iter().filter(|(t, _)| t == "aclshmem_team_t") {
            cases.push((Class::Team, name.clone(), format!("({ty})77")));
        }
        for s in device_side(p) {
            cases.push((Class::Address, s.to_owned(), format!("({})stack", p.ty(s))));
        }
        for size in ["nelems", "elem_size"] {
            if p.has(size) && !device_side(p).is_empty() {
                // The most the type holds where it is narrower than size_t.
                let bad = match p.ty(size) {
                    "size_t" => "(size_t)1 << 40".to_owned(),
                    ty => format!("({ty})-1"),
                };
                cases.push((Class::Size, size.to_owned(), bad));
            }
        }
        // The stride of the symmetric side (the local side's walks the caller's own device
        // memory, which the library checks only as far as the allocation it finds).
        let stride = match symmetric_side(p) {
            Some("dest" | "dst") => "dst",
            _ => "sst",
        };
        if p.has("dst") && p.has("sst") {
            cases.push((
                Class::Stride,
                stride.to_owned(),
                "(ptrdiff_t)1 << 40".into(),
            ));
        }
        let classes: BTreeSet<Class> = cases.iter().map(|c| c.0).collect();
        applicable += classes.len();
        for (class, which, bad) in cases {
            let e = match class {
                Class::Stride => call(p, &[(&which, &bad), ("nelems", "(size_t)2")]),
                _ => call(p, &[(&which, &bad)]),
            };
            let e = match (answer(&p.name), p.ret.as_str()) {
                (Some(want), _) => format!(
                    "if ({e} != {want}) {{ std::printf(\"PE %d: {} answered wrongly\\n\", me); failures++; }}",
                    p.name
                ),
                (_, "void") => e,
                _ => format!("(void){e}"),
            };
            let _ = writeln!(c, "    CALL(\"{}\", \"{class:?}\", {e});", p.name);
            *tested.entry((p.name.clone(), class)).or_default() += 1;
        }
    }
    c.push_str(
        "    aclshmem_barrier_all();\n    \
         if (sum() != initial) { std::printf(\"PE %d: the heap changed during the calls\\n\", me); failures++; }\n    \
         aclshmem_free(other);\n    aclshmem_free(buf);\n    \
         if (aclshmem_finalize() != ACLSHMEM_SUCCESS) failures++;\n    \
         aclrtResetDevice(me);\n    aclFinalize();\n    \
         if (!failures) std::printf(\"PE %d ok\\n\", me);\n    return failures != 0;\n}\n",
    );
    let source = dir.join("bad_generated.cpp");
    std::fs::write(&source, &c).expect("the generated program");
    let exe = dir.join("bad_generated");
    let built = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-w", "-O1"])
        .arg(format!("-DHEAP_BYTES={HEAP_BYTES}"))
        .arg(format!("-DFIRST_BLOCK={FIRST_BLOCK}"))
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .output()
        .expect("aclshmem-c++ runs");
    assert!(built.status.success(), "{}", text(&built));
    let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", "2", "--timeout", "120", "--"])
        .arg(&exe)
        .env("CANN_TEST_PORT", free_ports(1).to_string())
        .env("SHMEM_TIMEOUT", "60")
        .output()
        .expect("the launcher runs");
    let text = text(&out);
    assert!(out.status.success(), "{}", tail(&text));
    assert_eq!(text.matches(" ok\n").count(), 2, "{}", tail(&text));

    // Every call that has no answer logged one error naming its routine.
    let logged = error_lines(&text);
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    for ((name, _), k) in &tested {
        if answer(name).is_none() {
            *calls.entry(name).or_default() += k * 2;
        }
    }
    let mut silent = Vec::new();
    for (name, want) in &calls {
        let got = logged.get(name).copied().unwrap_or(0);
        if got != *want {
            silent.push(format!(
                "{name}: {got} error lines for {want} refused calls"
            ));
        }
    }
    assert!(silent.is_empty(), "{}\n{}", silent.join("\n"), tail(&text));
    println!(
        "bad input, CANN ABI: {} of {applicable} (routine, class) pairs tested, {} calls per PE, {} routines",
        tested.len(),
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
