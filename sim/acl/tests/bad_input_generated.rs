//! Bad input, generated (issue 14, item 3), for the ACL runtime stand-in: every function of its
//! table (`src/table.rs`, from which `acl/acl.h` is generated) × each class of argument it has,
//! one invalid value at a time, every other argument valid. The generated C program runs on
//! device 0 of 2, and each call must return an ACL error code (never `ACL_SUCCESS`), write
//! exactly one `[ACL stand-in] ERROR <function>:` line, and leave a checksum of two device
//! buffers unchanged.
//!
//! | class | parameters | invalid value |
//! |---|---|---|
//! | out-pointer | `T *name` that receives a result | NULL |
//! | device address | `void *devPtr`, the device side of a copy | a host stack address |
//! | handle | `aclrtStream`, `aclrtEvent`, `aclrtContext` | a destroyed handle (NULL too, except for a stream, where NULL is the default stream) |
//! | device | `deviceId`, `peerDeviceId` | -1, and the device count |
//! | size | `size`, `count`, `maxCount` | 2^60 bytes |
//! | enumeration | `kind`, `policy`, `attr` | 99 |

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;

mod common;

use common::compile_c;

include!("../src/table.rs");

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    OutPointer,
    DeviceAddress,
    Handle,
    Device,
    Size,
    Enumeration,
}

/// The valid value of parameter `name` of type `ty` in a call of `f`.
fn valid(f: &str, ty: &str, name: &str) -> String {
    match (ty, name) {
        ("aclrtStream", _) => "s".into(),
        ("aclrtEvent", _) => "ev".into(),
        ("aclrtContext", _) => "ctx".into(),
        ("aclrtContext *", _) => "&ctx_out".into(),
        ("aclrtStream *", _) => "&s_out".into(),
        ("aclrtEvent *", _) => "&ev_out".into(),
        ("void **", _) => "&p_out".into(),
        ("aclrtRunMode *", _) => "&mode_out".into(),
        ("int32_t *", _) => "&i_out".into(),
        ("uint32_t *", _) => "&u_out".into(),
        ("size_t *", _) => "&z_out".into(),
        (_, "deviceId") => "0".into(),
        (_, "peerDeviceId") => "1".into(),
        (_, "devPtr") if f == "aclrtFree" => "victim".into(),
        (_, "devPtr") => "dev".into(),
        (_, "hostPtr") => "host".into(),
        (_, "dst") => "other".into(),
        (_, "src") => "dev".into(),
        (_, "destMax" | "maxCount") => "4096".into(),
        (_, "count" | "size") => "64".into(),
        (_, "kind") => "ACL_MEMCPY_DEVICE_TO_DEVICE".into(),
        (_, "policy") => "ACL_MEM_MALLOC_HUGE_FIRST".into(),
        (_, "attr") => "(aclrtMemAttr)0".into(),
        (_, "timeout") => "1000".into(),
        _ => "0".into(),
    }
}

/// The cases of `f`: (class, parameter, invalid value).
fn cases(params: &[(String, String)]) -> Vec<(Class, String, String)> {
    let mut out = Vec::new();
    for (ty, name) in params {
        let n = name.clone();
        match (ty.as_str(), name.as_str()) {
            (t, _) if t.ends_with('*') && !t.starts_with("const") && t != "void *" => {
                out.push((Class::OutPointer, n, "NULL".into()));
            }
            ("void *" | "const void *", "devPtr" | "dst" | "src") => {
                out.push((Class::DeviceAddress, n, format!("({ty})stack")));
            }
            ("aclrtStream", _) => out.push((Class::Handle, n, "dead_s".into())),
            ("aclrtEvent", _) => {
                out.push((Class::Handle, n.clone(), "dead_ev".into()));
                out.push((Class::Handle, n, "NULL".into()));
            }
            ("aclrtContext", _) => {
                out.push((Class::Handle, n.clone(), "dead_ctx".into()));
                out.push((Class::Handle, n, "NULL".into()));
            }
            (_, "deviceId" | "peerDeviceId") => {
                out.push((Class::Device, n.clone(), "-1".into()));
                out.push((Class::Device, n, "2".into()));
            }
            // (`destMax` and `maxCount` are the caller's word for its buffer's size: a larger
            // one than the buffer is a lie no runtime can always catch.)
            ("size_t", "size" | "count") => {
                out.push((Class::Size, n, "(size_t)1 << 60".into()));
            }
            (_, "kind" | "policy" | "attr") => {
                out.push((Class::Enumeration, n, format!("({ty})99")));
            }
            _ => {}
        }
    }
    out
}

fn params(list: &str) -> Vec<(String, String)> {
    list.split(", ")
        .filter(|p| *p != "void")
        .map(|p| {
            let at = p
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            (p[..at].trim().to_owned(), p[at..].to_owned())
        })
        .collect()
}

#[test]
fn every_acl_function_refuses_one_invalid_argument_of_each_class_and_changes_nothing() {
    let mut c = String::from(
        "#include <acl/acl.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n\n\
         static void *dev, *other;\nstatic int failures;\n\n\
         static uint64_t sum(void) {\n    static unsigned char h[2][4096];\n    \
         aclrtMemcpy(h[0], 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST);\n    \
         aclrtMemcpy(h[1], 4096, other, 4096, ACL_MEMCPY_DEVICE_TO_HOST);\n    \
         uint64_t s = 1469598103934665603ULL;\n    \
         for (int i = 0; i < 8192; i++) s = (s ^ h[i / 4096][i % 4096]) * 1099511628211ULL;\n    \
         return s;\n}\n\n\
         #define CALL(what, cls, e) do { uint64_t b0 = sum(); aclError r = (e); \\\n    \
         if (r == ACL_SUCCESS) { printf(\"%s (%s) succeeded\\n\", what, cls); failures++; } \\\n    \
         if (sum() != b0) { printf(\"%s (%s) changed device memory\\n\", what, cls); failures++; } \\\n    \
         fprintf(stderr, \"CALLED %s\\n\", what); } while (0)\n\n\
         int main(void) {\n    setvbuf(stdout, NULL, _IONBF, 0);\n    \
         if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;\n    \
         void *victim = NULL, *host = NULL;\n    \
         if (aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST) || aclrtMalloc(&other, 4096, ACL_MEM_MALLOC_HUGE_FIRST) ||\n        \
         aclrtMalloc(&victim, 64, ACL_MEM_MALLOC_HUGE_FIRST) || aclrtMallocHost(&host, 64)) return 1;\n    \
         static unsigned char pattern[4096];\n    memset(pattern, 0x5a, sizeof pattern);\n    \
         aclrtMemcpy(dev, 4096, pattern, 4096, ACL_MEMCPY_HOST_TO_DEVICE);\n    \
         aclrtMemcpy(other, 4096, pattern, 4096, ACL_MEMCPY_HOST_TO_DEVICE);\n    \
         aclrtStream s, dead_s;\n    aclrtEvent ev, dead_ev;\n    aclrtContext ctx, dead_ctx;\n    \
         if (aclrtCreateStream(&s) || aclrtCreateStream(&dead_s) || aclrtDestroyStream(dead_s) ||\n        \
         aclrtCreateEvent(&ev) || aclrtCreateEvent(&dead_ev) || aclrtDestroyEvent(dead_ev) ||\n        \
         aclrtCreateContext(&ctx, 0) ||\n        \
         aclrtCreateContext(&dead_ctx, 0) || aclrtDestroyContext(dead_ctx)) return 1;\n    \
         aclrtStream s_out; aclrtEvent ev_out; aclrtContext ctx_out; void *p_out;\n    \
         aclrtRunMode mode_out; int32_t i_out; uint32_t u_out; size_t z_out;\n    \
         (void)s_out; (void)ev_out; (void)ctx_out; (void)p_out; (void)mode_out; (void)i_out; (void)u_out; (void)z_out;\n    \
         unsigned char stack[4096];\n    memset(stack, 0, sizeof stack);\n",
    );
    let mut tested: BTreeMap<(&str, Class), usize> = BTreeMap::new();
    let mut applicable = 0;
    for (ret, name, list, _) in FUNCTIONS {
        if *ret != "aclError" || matches!(*name, "aclInit" | "aclFinalize") {
            continue;
        }
        let ps = params(list);
        let cs = cases(&ps);
        applicable += cs.iter().map(|c| c.0).collect::<BTreeSet<_>>().len();
        for (class, which, bad) in cs {
            let args: Vec<String> = ps
                .iter()
                .map(|(ty, n)| match *n == which {
                    true => bad.clone(),
                    false => valid(name, ty, n),
                })
                .collect();
            let _ = writeln!(
                c,
                "    CALL(\"{name}\", \"{class:?}\", {name}({}));",
                args.join(", ")
            );
            *tested.entry((name, class)).or_default() += 1;
        }
    }
    c.push_str(
        "    aclrtSynchronizeStream(s);\n    aclrtDestroyStream(s);\n    aclrtDestroyEvent(ev);\n    \
         aclrtFree(victim);\n    aclrtFree(other);\n    aclrtFree(dev);\n    aclrtFreeHost(host);\n    \
         aclrtResetDevice(0);\n    aclFinalize();\n    \
         if (!failures) printf(\"bad input: ok\\n\");\n    return failures != 0;\n}\n",
    );
    let dir = std::env::temp_dir().join(format!("acl-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let source = dir.join("bad_generated.c");
    std::fs::write(&source, &c).expect("the generated program");
    let exe = dir.join("bad_generated");
    compile_c(&source, &exe, &["-w"]);
    let run = Command::new(&exe)
        .env("SHMEM_SIM_DEVICE_COUNT", "2")
        .env_remove("SHMEM_SIM_STRICT")
        .env_remove("SHMEM_SIM_DEVICE_HOST_ACCESS")
        .output()
        .expect("the program runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.contains("bad input: ok"),
        "{stdout}\n{}",
        stderr.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    // Exactly one error line per refused call, naming the function.
    let mut logged: BTreeMap<&str, usize> = BTreeMap::new();
    for l in stderr.lines() {
        if let Some(name) = l
            .strip_prefix("[ACL stand-in] ERROR ")
            .and_then(|r| r.split(':').next())
        {
            *logged.entry(name).or_default() += 1;
        }
    }
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    for ((name, _), k) in &tested {
        *calls.entry(name).or_default() += k;
    }
    let wrong: Vec<String> = calls
        .iter()
        .filter(|(n, k)| logged.get(*n).copied().unwrap_or(0) != **k)
        .map(|(n, k)| {
            format!(
                "{n}: {} lines for {k} calls",
                logged.get(n).copied().unwrap_or(0)
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    println!(
        "bad input, ACL stand-in: {} of {applicable} (function, class) pairs tested, {} calls, {} functions",
        tested.len(),
        tested.values().sum::<usize>(),
        calls.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}
