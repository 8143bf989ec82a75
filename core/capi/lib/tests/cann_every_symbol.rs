//! Exported means implemented, for CANN's host ABI: a C++ program calls every one of CANN
//! SHMEM's 350 host entry points (`cann-host-symbols.txt`) with valid arguments on 2 PEs, and
//! checks each call's return code or effect.
//!
//! The typed and sized routines are called from C++ that `cann_every_symbol/generator.rs`
//! writes from its table of CANN's types and sizes, with values a wrong element type would
//! change and sentinels around every target; the others from
//! `conformance/cann/every/untyped.cpp`, which holds `main` and `#include`s the generated half.
//! The test checks that the program's source calls all 350 names and that `libshmem.so` exports
//! them, builds the program with `aclshmem-c++ -std=c++17 -Wall -Wextra -Werror`, and runs it
//! with `oshrun -n 2`, as is and under `SHMEM_SIM_STRICT=1` (queued work runs only at a
//! synchronisation, so a missing one shows every time).

mod common;
#[path = "cann_every_symbol/generator.rs"]
mod generator;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{exported, free_ports, repo, strip, target_dir, temp_dir, text};

/// CANN's 350 host entry points, one a line (from CANN's headers, run through the
/// preprocessor).
const SYMBOLS: &str = include_str!("cann-host-symbols.txt");

/// The hand-written half of the program.
const UNTYPED: &str = include_str!("../../../../conformance/cann/every/untyped.cpp");

/// The file name under which the generated half is written and `#include`d.
const GENERATED_NAME: &str = "cann_every_typed.inc";

/// CANN's host entry points.
fn cann_symbols() -> BTreeSet<&'static str> {
    SYMBOLS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Whether `name` is in CANN's namespace of host calls.
fn is_cann(name: &str) -> bool {
    name.starts_with("aclshmem") || name == "util_get_ffts_config"
}

/// The identifiers of C++ source that are called: followed (after blanks) by `(`, outside
/// comments and literals. Numbers (`0x5A5A5A5AULL`, `1.25e10`) are skipped whole.
fn called(c: &str) -> BTreeSet<String> {
    let code = strip(c);
    let b = code.as_bytes();
    let mut names = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
        } else if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if b[i..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'(') {
                names.insert(code[start..i].to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_name_scanner_sees_calls_not_comments_strings_or_numbers() {
    let c = "/* aclshmem_a(1) */ x = aclshmem_b (2); // aclshmem_c(3)\n\"aclshmem_d(4)\"; \
             y = 0x5AULL + 1.25e10 + 'q' + aclshmem_e;\nconst char s[] = \"\\\"aclshmem_f(\";\naclshmem_g\n(7);";
    assert_eq!(
        called(c).iter().collect::<Vec<_>>(),
        ["aclshmem_b", "aclshmem_g"]
    );
}

#[test]
fn the_list_holds_cann_s_350_host_entry_points_and_libshmem_exports_them_all() {
    let lines: Vec<&str> = SYMBOLS.lines().filter(|l| !l.trim().is_empty()).collect();
    let symbols = cann_symbols();
    assert_eq!(lines.len(), 350, "the list of CANN's host entry points");
    assert_eq!(symbols.len(), 350, "the list has duplicates");
    assert!(symbols.iter().all(|s| is_cann(s)), "{symbols:?}");
    let exported = exported();
    let missing: Vec<&&str> = symbols.iter().filter(|s| !exported.contains(**s)).collect();
    assert!(
        missing.is_empty(),
        "{} of CANN's 350 host entry points are not exported by libshmem.so: {missing:?}",
        missing.len()
    );
}

/// Generating the C++ from the table gives the same text each time; it calls every typed and
/// sized routine of the table, and only CANN's own names.
#[test]
fn the_generated_program_covers_the_type_table() {
    let cpp = generator::cpp_source();
    assert_eq!(cpp, generator::cpp_source());
    let calls = called(&cpp);
    let want: BTreeSet<String> = generator::symbols().into_iter().collect();
    assert_eq!(
        generator::TYPES.len() * generator::TYPED_OPS.len()
            + generator::TYPES.iter().filter(|t| t.2).count() * generator::P2P_OPS.len()
            + generator::SIZES.len() * generator::SIZED_OPS.len(),
        290,
        "CANN's typed and sized host routines: 11 x 10, 10 x 14 and 5 x 8"
    );
    assert_eq!(want.len(), 290);
    let missing: Vec<&String> = want.iter().filter(|s| !calls.contains(*s)).collect();
    assert!(missing.is_empty(), "not called: {missing:?}");
    let cann = cann_symbols();
    let unknown: Vec<&String> = want.iter().filter(|s| !cann.contains(s.as_str())).collect();
    assert!(
        unknown.is_empty(),
        "not CANN host entry points: {unknown:?}"
    );
}

/// One run of the program: its output, and how long it took.
fn run(exe: &std::path::Path, strict: bool) -> (std::process::Output, Duration) {
    let port = free_ports(3);
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", "2", "--timeout", "120", "--"])
        .arg(exe)
        .env("CANN_TEST_PORT", port.to_string())
        .env(
            "SHMEM_INSTANCE_PORT_RANGE",
            format!("{}:{}", port + 1, port + 2),
        )
        .env("SHMEM_TIMEOUT", "60")
        .env("SHMEM_SIM_STRICT", if strict { "1" } else { "0" })
        // PE 0's unique id on the loopback interface, whatever else the machine has.
        .env("SHMEM_UID_SOCK_IFNAME", "lo")
        // The program sets the log level itself; the variable would win over it.
        .env_remove("SHMEM_LOG_LEVEL")
        .output()
        .expect("the launcher runs");
    (out, t.elapsed())
}

#[test]
fn every_cann_entry_point_is_called_and_does_what_it_should_on_2_pes() {
    let symbols = cann_symbols();
    let generated = generator::cpp_source();
    let by_generated = called(&generated);
    let by_hand = called(UNTYPED);
    let missing: Vec<&&str> = symbols
        .iter()
        .filter(|s| !by_generated.contains(**s) && !by_hand.contains(**s))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of CANN's 350 host entry points are not called by the every-symbol program: {missing:#?}",
        missing.len()
    );
    let unknown: Vec<&String> = by_generated
        .iter()
        .chain(&by_hand)
        .filter(|n| is_cann(n) && !symbols.contains(n.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "the every-symbol program calls names that are not CANN host entry points: {unknown:#?}"
    );
    let generated_only = symbols
        .iter()
        .filter(|s| by_generated.contains(**s) && !by_hand.contains(**s))
        .count();
    let hand_only = symbols
        .iter()
        .filter(|s| by_hand.contains(**s) && !by_generated.contains(**s))
        .count();
    eprintln!(
        "cann_every_symbol: all 350 called: {} by the generated half ({generated_only} only there), {} by untyped.cpp ({hand_only} only there)",
        symbols
            .iter()
            .filter(|s| by_generated.contains(**s))
            .count(),
        symbols.iter().filter(|s| by_hand.contains(**s)).count(),
    );

    // Build: the generated half beside the program, #included by the hand-written half.
    let dir = temp_dir("cann-every-symbol");
    std::fs::write(dir.join(GENERATED_NAME), &generated).expect("writing the generated C++");
    let exe = dir.join("cann_every_symbol");
    let t = Instant::now();
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(&dir)
        .arg("-o")
        .arg(&exe)
        .arg(repo().join("conformance/cann/every/untyped.cpp"))
        .output()
        .expect("aclshmem-c++ runs");
    assert!(
        out.status.success(),
        "aclshmem-c++ failed on conformance/cann/every/untyped.cpp with {}:\n{}",
        dir.join(GENERATED_NAME).display(),
        text(&out)
    );
    eprintln!("cann_every_symbol: built in {:.1?}", t.elapsed());

    let mut known_seen: Vec<String> = Vec::new();
    for strict in [false, true] {
        let mode = if strict {
            "under SHMEM_SIM_STRICT=1"
        } else {
            "as is"
        };
        let (out, took) = run(&exe, strict);
        let output = text(&out);
        eprintln!("cann_every_symbol: ran {mode} in {took:.1?}");
        let failed: Vec<&str> = output.lines().filter(|l| l.contains(": FAIL ")).collect();
        assert!(
            failed.is_empty(),
            "{} failed checks {mode}:\n{}\n\n(full output:\n{output})",
            failed.len(),
            failed.join("\n")
        );
        known_seen.extend(
            output
                .lines()
                .filter_map(|l| Some(l.split_once(": KNOWN ")?.1.to_string())),
        );
        for pe in 0..2 {
            assert!(
                output.contains(&format!("cann_every_symbol: PE {pe}: 0 failed checks")),
                "PE {pe} did not complete {mode}:\n{output}"
            );
        }
        assert!(
            out.status.success(),
            "the every-symbol program ended with {} {mode}:\n{output}",
            out.status
        );
    }
    for (sym, check, why) in generator::KNOWN_FAILURES {
        assert!(
            known_seen
                .iter()
                .any(|k| k.starts_with(&format!("{sym}: ")) && k.contains(check)),
            "KNOWN_FAILURES lists {sym} ({check}: {why}) but that check passed in both runs: remove the entry"
        );
        eprintln!("cann_every_symbol: known library failure: {sym} ({check}): {why}");
    }
    if std::env::var_os("SHMEM_KEEP_EVERY_SYMBOL").is_some() {
        eprintln!(
            "cann_every_symbol: the program is kept in {}",
            dir.display()
        );
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}
