//! The C and C++ conformance programs under the checkers C programmers debug with: built with
//! `-fsanitize=address,undefined -fno-sanitize-recover=all`, and run under valgrind's
//! memcheck with `--error-exitcode=1`. Any report fails the test. In a sanitized program the
//! library poisons the free space of the symmetric heap, so AddressSanitizer also reports an
//! overrun past a `shmem_malloc` block.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{build, free_ports, target_dir, temp_dir, text};

const SANITIZE: [&str; 4] = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
];

/// Runs `exe args` on `n` PEs under `oshrun`, with the sanitizers stopping at the first error
/// and leak checking on, and `env`.
fn oshrun(exe: &Path, n: u32, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", &n.to_string(), "--timeout", "180", "--"])
        .arg(exe)
        .args(args)
        .env("SHMEM_TIMEOUT", "120")
        .env("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("oshrun runs")
}

/// No sanitizer said anything.
fn assert_no_report(what: &str, text: &str) {
    for needle in [
        "ERROR: AddressSanitizer",
        "ERROR: LeakSanitizer",
        "runtime error:",
    ] {
        assert!(!text.contains(needle), "{what}: {needle}\n{text}");
    }
}

#[test]
fn c_and_cpp_conformance_programs_pass_under_address_and_undefined_behaviour_sanitizers() {
    let dir = temp_dir("sanitizers");
    let c_programs: [(&str, &[&str]); 12] = [
        ("rma", &[]),
        ("amo", &[]),
        ("p2p", &[]),
        ("coll", &[]),
        ("active_set", &[]),
        ("static", &[]),
        ("legacy", &[]),
        ("generic", &[]),
        ("v16", &[]),
        ("reinit", &[]),
        ("bad_input", &[]),
        ("exit_paths", &["fork"]),
    ];
    for (name, args) in c_programs {
        let exe = build(
            env!("CARGO_BIN_EXE_oshcc"),
            &format!("conformance/c/{name}.c"),
            &[&["-std=c11"][..], &SANITIZE].concat(),
            &dir,
        );
        // A forked child's leak check counts what the parent's other threads hold as lost
        // (those threads do not exist in the child), so the fork case runs without it.
        let leaks = if args == ["fork"] {
            vec![("ASAN_OPTIONS", "detect_leaks=0:halt_on_error=1".to_string())]
        } else {
            vec![]
        };
        let out = oshrun(&exe, 2, args, &leaks);
        let text = text(&out);
        assert_no_report(name, &text);
        assert!(out.status.success(), "{name}:\n{text}");
        assert_eq!(text.matches(" ok").count(), 2, "{name}:\n{text}");
    }

    let exe = build(
        env!("CARGO_BIN_EXE_oshCC"),
        "conformance/c/hello.cpp",
        &SANITIZE,
        &dir,
    );
    let out = oshrun(&exe, 2, &[], &[]);
    let hello = text(&out);
    assert_no_report("hello.cpp", &hello);
    assert!(out.status.success(), "hello.cpp:\n{hello}");
    assert_eq!(hello.matches(": ok").count(), 2, "hello.cpp:\n{hello}");

    // CANN's C++ host programs, with CANN's ports (see tests/cann.rs).
    let acl_cxx = target_dir().join("aclshmem-c++");
    for name in ["host", "bad_input"] {
        let exe = build(
            acl_cxx.to_str().expect("a UTF-8 path"),
            &format!("conformance/cann/{name}.cpp"),
            &[&["-std=c++17"][..], &SANITIZE].concat(),
            &dir,
        );
        let port = free_ports(3);
        let env = [
            ("CANN_TEST_PORT", port.to_string()),
            (
                "SHMEM_INSTANCE_PORT_RANGE",
                format!("{}:{}", port + 1, port + 2),
            ),
        ];
        let out = oshrun(&exe, 2, &[], &env);
        let text = text(&out);
        assert_no_report(name, &text);
        assert!(out.status.success(), "CANN {name}:\n{text}");
        assert_eq!(text.matches(" ok").count(), 2, "CANN {name}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `conformance/c/asan_heap.c`: writing every byte of heap blocks is fine, and the byte just
/// past a 13-byte block, or a byte of a freed block, is reported where the program wrote it.
#[test]
fn address_sanitizer_reports_an_overrun_past_a_shmem_malloc_block_and_a_use_after_free() {
    let dir = temp_dir("asan-heap");
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        "conformance/c/asan_heap.c",
        &[&["-std=c11"][..], &SANITIZE].concat(),
        &dir,
    );
    let out = oshrun(&exe, 2, &["inside"], &[]);
    let inside = text(&out);
    assert_no_report("inside", &inside);
    assert!(out.status.success(), "inside:\n{inside}");
    assert_eq!(inside.matches(" ok").count(), 2, "inside:\n{inside}");
    for (mode, line) in [
        ("overrun", "asan_heap.c:23"),
        ("after-free", "asan_heap.c:37"),
    ] {
        let out = oshrun(&exe, 2, &[mode], &[]);
        let text = text(&out);
        assert!(!out.status.success(), "{mode}:\n{text}");
        assert!(
            text.contains("ERROR: AddressSanitizer: use-after-poison"),
            "{mode}:\n{text}"
        );
        assert!(
            text.contains("SUMMARY: AddressSanitizer: use-after-poison") && text.contains(line),
            "{mode}: the report does not point at {line}:\n{text}"
        );
        assert!(!text.contains("unreported"), "{mode}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Under valgrind's memcheck the library starts, static data is still symmetric (nothing relies
/// on a system call or auxiliary-vector form valgrind lacks), and memcheck finds no error; in a
/// program that does not fork (`coll.c`), no definite leak either. (A forked child's leak check
/// counts what the parent's other threads hold as lost: those threads do not exist in the
/// child.)
#[test]
fn a_c_job_runs_clean_under_valgrind() {
    let dir = temp_dir("valgrind");
    for (name, leaks) in [("static", false), ("coll", true)] {
        let exe = build(
            env!("CARGO_BIN_EXE_oshcc"),
            &format!("conformance/c/{name}.c"),
            &["-std=c11", "-g"],
            &dir,
        );
        let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
            .args(["-n", "2", "--timeout", "300", "--", "valgrind", "-q"])
            .args(["--error-exitcode=1", "--child-silent-after-fork=yes"])
            .args(if leaks { &LEAKS[..] } else { &[] })
            .arg(&exe)
            .env("SHMEM_TIMEOUT", "240")
            .output()
            .unwrap_or_else(|e| panic!("oshrun runs ({e}); .ci/run installs valgrind"));
        let text = text(&out);
        assert!(out.status.success(), "{name}:\n{text}");
        assert!(!valgrind_said_something(&text), "{name}:\n{text}");
        assert_eq!(text.matches(" ok").count(), 2, "{name}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// memcheck's leak settings: a definite leak is reported and fails the run.
const LEAKS: [&str; 3] = [
    "--leak-check=full",
    "--show-leak-kinds=definite",
    "--errors-for-leak-kinds=definite",
];

/// Whether valgrind printed a line of its own (`==<pid>== …`).
fn valgrind_said_something(text: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("==")
            .and_then(|r| r.split_once("=="))
            .is_some_and(|(pid, _)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    })
}
