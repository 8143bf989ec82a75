//! Exported means implemented: a C program calls every OpenSHMEM symbol `libshmem.so` exports,
//! with valid arguments on 2 PEs, and checks each call's effect or result.
//!
//! The typed routines are called from C that `every_symbol/generator.rs` writes from the type
//! table the library's wrappers and header come from (`src/table.rs`, included here as
//! `build.rs` includes it), with values a wrong element type would change and sentinels around
//! every target; the untyped ones from `conformance/c/every/untyped.c`. The test checks that the
//! program's source calls every exported symbol and nothing the library lacks, then builds it
//! with `oshcc -std=c11 -Wall -Wextra -Werror` and runs it with `oshrun -n 2`.

mod common;
#[path = "every_symbol/generator.rs"]
mod generator;

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Instant;

use common::{exported_with_types, oshrun, repo, strip, temp_dir, text};

/// The type table, as `build.rs` includes it (a table entry this test does not use is no
/// warning).
#[allow(dead_code, unreachable_pub)]
mod table {
    include!("../src/table.rs");
}
use table::{
    AMO_TYPES, BITWISE_AMO_TYPES, BITWISE_REDUCE_TYPES, REDUCE_TYPES, RMA_SIZES, RMA_TYPES,
};

/// The header the program is compiled against.
const HEADER: &str = include_str!("../../include/shmem.h");

/// The hand-written half of the program.
const UNTYPED: &str = include_str!("../../../../conformance/c/every/untyped.c");

/// The OpenSHMEM names that start neither with `shmem_` nor with `SHMEM_` (all deprecated).
const LEGACY_NAMES: &[&str] = &[
    "start_pes",
    "_my_pe",
    "_num_pes",
    "shmalloc",
    "shfree",
    "shrealloc",
    "shmemalign",
];

/// The macro the header defines once it declares the deprecated active-set collectives; the
/// program calls them only under `#ifdef` of it.
const ACTIVE_SET_MACRO: &str = "SHMEM_BCAST_SYNC_SIZE";

fn is_api(name: &str) -> bool {
    name.starts_with("shmem_") || name.starts_with("SHMEM_") || LEGACY_NAMES.contains(&name)
}

/// The identifiers of some C source: those called (followed by `(`) and all of them.
#[derive(Default, Debug)]
struct Names {
    called: BTreeSet<String>,
    named: BTreeSet<String>,
}

/// The names of `c`: those outside any `#ifdef SHMEM_BCAST_SYNC_SIZE`, and those inside.
fn names(c: &str) -> (Names, Names) {
    let (mut always, mut conditional) = (Names::default(), Names::default());
    let code = strip(c);
    // The conditional lines, by their `#if…`/`#endif` nesting.
    let mut stack: Vec<bool> = Vec::new();
    let mut lines: Vec<(bool, &str)> = Vec::new();
    for line in code.lines() {
        let directive = line.trim_start().strip_prefix('#').map(str::trim_start);
        match directive {
            Some(d) if d.starts_with("if") => {
                stack.push(d.split_whitespace().eq(["ifdef", ACTIVE_SET_MACRO]));
            }
            Some(d) if d.starts_with("endif") => {
                stack.pop();
            }
            _ => lines.push((stack.contains(&true), line)),
        }
    }
    for (cond, text) in [true, false].map(|cond| {
        let text: Vec<&str> = lines
            .iter()
            .filter(|(c, _)| *c == cond)
            .map(|(_, l)| *l)
            .collect();
        (cond, text.join("\n"))
    }) {
        let into = if cond { &mut conditional } else { &mut always };
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let ch = b[i];
            if ch.is_ascii_digit() {
                // A number, with its suffixes and exponents (`0x1p-30`, `0x5AULL`).
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
            } else if ch.is_ascii_alphabetic() || ch == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let ident = &text[start..i];
                let next = b[i..].iter().find(|c| !c.is_ascii_whitespace());
                if next == Some(&b'(') {
                    into.called.insert(ident.to_string());
                }
                into.named.insert(ident.to_string());
            } else {
                i += 1;
            }
        }
    }
    (always, conditional)
}

#[test]
fn the_name_scanner_sees_calls_not_comments_strings_or_numbers() {
    let c = "/* shmem_a(1) */ x = shmem_b (2); // shmem_c(3)\n\"shmem_d(4)\"; y = 0x1p-30 + SHMEM_E;\n\
             #ifdef SHMEM_BCAST_SYNC_SIZE\n#if 1\nshmem_f(5);\n#endif\nshmem_g(6);\n#endif\nshmem_h\n(7);\n";
    let (always, conditional) = names(c);
    assert_eq!(
        always.called.iter().collect::<Vec<_>>(),
        ["shmem_b", "shmem_h"]
    );
    assert!(always.named.contains("SHMEM_E") && !always.named.contains("p"));
    assert_eq!(
        conditional.called.iter().collect::<Vec<_>>(),
        ["shmem_f", "shmem_g"]
    );
}

/// Generating the C from the type table gives the same text each time, and names every
/// family the table has.
#[test]
fn the_generated_program_covers_the_type_table() {
    let c = generator::c_source();
    assert_eq!(c, generator::c_source());
    let (always, _) = names(&c);
    for (name, _, _) in RMA_TYPES {
        for f in [
            "put",
            "get_nbi",
            "iput",
            "ibget",
            "p",
            "g",
            "put_signal_nbi",
        ] {
            assert!(always.called.contains(&format!("shmem_ctx_{name}_{f}")));
        }
        assert!(always.called.contains(&format!("shmem_{name}_alltoalls")));
    }
    for bits in RMA_SIZES {
        assert!(always.called.contains(&format!("shmem_ctx_ibput{bits}")));
    }
    for (name, _, _) in AMO_TYPES {
        assert!(
            always
                .called
                .contains(&format!("shmem_ctx_{name}_atomic_swap_nbi"))
        );
    }
    for name in BITWISE_AMO_TYPES {
        assert!(
            always
                .called
                .contains(&format!("shmem_{name}_atomic_fetch_xor"))
        );
    }
    for (name, _, _) in REDUCE_TYPES {
        assert!(always.called.contains(&format!("shmem_{name}_sum_exscan")));
    }
    for name in BITWISE_REDUCE_TYPES {
        assert!(always.called.contains(&format!("shmem_{name}_and_reduce")));
    }
}

#[test]
fn every_exported_symbol_is_called_and_does_what_it_should_on_2_pes() {
    let t0 = Instant::now();
    let exported = exported_with_types();
    let t_lib = t0.elapsed();
    let generated = generator::c_source();
    let (mut used, conditional) = names(&format!("{generated}\n{UNTYPED}"));

    // The active-set collectives count once the header declares them.
    let active_set = HEADER.contains(&format!("#define {ACTIVE_SET_MACRO} "));
    if active_set {
        used.called.extend(conditional.called.iter().cloned());
        used.named.extend(conditional.named.iter().cloned());
    } else {
        let waiting = conditional
            .called
            .iter()
            .filter(|n| is_api(n) && !used.called.contains(*n))
            .count();
        eprintln!(
            "every_symbol: the header does not declare the active-set collectives yet; {waiting} routines wait for them"
        );
    }

    // Every exported API symbol is called (a routine) or named (a data handle).
    let api: Vec<&(String, char)> = exported.iter().filter(|(s, _)| is_api(s)).collect();
    let other: Vec<&String> = exported
        .iter()
        .filter(|(s, _)| !is_api(s))
        .map(|(s, _)| s)
        .collect();
    if !other.is_empty() {
        eprintln!("every_symbol: not OpenSHMEM names, not checked: {other:?}");
    }
    let missing: Vec<&String> = api
        .iter()
        .filter(|(s, kind)| {
            if kind.eq_ignore_ascii_case(&'T') || kind.eq_ignore_ascii_case(&'W') {
                !used.called.contains(s)
            } else {
                !used.named.contains(s)
            }
        })
        .map(|(s, _)| s)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} exported symbols are not called by the every-symbol program: {missing:#?}",
        missing.len(),
        api.len()
    );
    // And the program calls nothing the library lacks.
    let names: BTreeSet<&str> = exported.iter().map(|(s, _)| s.as_str()).collect();
    let unknown: Vec<&String> = used
        .called
        .iter()
        .filter(|n| is_api(n) && !names.contains(n.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "the every-symbol program calls symbols libshmem.so does not export: {unknown:#?}"
    );
    let called = used.called.iter().filter(|n| is_api(n)).count();
    eprintln!(
        "every_symbol: {} exported OpenSHMEM symbols, all covered; the program calls {called} routines",
        api.len()
    );

    // Build: the generated half beside its own output, the hand-written half from the tree.
    let dir = temp_dir("every-symbol");
    let source = dir.join("every_typed.c");
    std::fs::write(&source, &generated).expect("writing the generated C");
    let exe = dir.join("every_symbol");
    let every = repo().join("conformance/c/every");
    let t1 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_oshcc"))
        // -O0: a quarter of -O1's time for these 20,000 lines.
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O0", "-I"])
        .arg(&every)
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .arg(every.join("untyped.c"))
        .output()
        .expect("oshcc runs");
    assert!(
        out.status.success(),
        "oshcc failed on {}:\n{}",
        source.display(),
        text(&out)
    );
    let t_build = t1.elapsed();

    let t2 = Instant::now();
    let out = oshrun(&exe, 2, &[]);
    let t_run = t2.elapsed();
    let output = text(&out);
    eprintln!(
        "every_symbol: libshmem.so ready in {t_lib:.1?}, the program built in {t_build:.1?} and ran in {t_run:.1?}"
    );

    let failed: Vec<&str> = output.lines().filter(|l| l.contains(": FAIL ")).collect();
    assert!(
        failed.is_empty(),
        "{} failed checks:\n{}\n\n(full output:\n{output})",
        failed.len(),
        failed.join("\n")
    );
    let known: Vec<&str> = output
        .lines()
        .filter_map(|l| Some(l.split_once(": KNOWN ")?.1))
        .collect();
    for (sym, check, why) in generator::KNOWN_FAILURES {
        assert!(
            known
                .iter()
                .any(|k| k.starts_with(&format!("{sym}: ")) && k.contains(check)),
            "KNOWN_FAILURES lists {sym} ({check}: {why}) but that check passed: remove the entry"
        );
        eprintln!("every_symbol: known library failure: {sym} ({check}): {why}");
    }
    for pe in 0..2 {
        assert!(
            output.contains(&format!("every_symbol: PE {pe}: 0 failed checks")),
            "PE {pe} did not complete:\n{output}"
        );
    }
    assert!(
        out.status.success(),
        "the every-symbol program ended with {}:\n{output}",
        out.status
    );
    if std::env::var_os("SHMEM_KEEP_EVERY_SYMBOL").is_some() {
        eprintln!("every_symbol: the program is kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}
