//! The per-call instruction gate: callgrind counts the instructions of one call, on one PE, in
//! a release build, through the Rust API (`shmem-calls`), the OpenSHMEM C ABI
//! (`benches/c/osh_calls.c`) and CANN's C ABI (`benches/c/cann_calls.cpp`), and the test fails
//! when a count grows more than 3% over the committed baseline (`benches/instructions.txt`).
//! Counts repeat exactly from run to run, unlike times on a shared VM.
//!
//! A count is `(Ir(2N calls) - Ir(N calls)) / N` inside the loop function alone (callgrind's
//! `--toggle-collect`), which cancels first-call effects, less the same for the empty loop.
//!
//! ```text
//! cargo test --release -p shmem-benches --test instructions -- --nocapture   # the table
//! SHMEM_BLESS_INSTRUCTIONS=1 cargo test -p shmem-benches --test instructions  # new baseline
//! ```
//!
//! The test builds what it measures with `cargo build --release` (cargo does not hold the
//! build directory while tests run) and needs valgrind, a C and a C++ compiler (`.ci/run`
//! installs them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use shmem_benches::harness::{free_ports, release_build};

/// Calls in the shorter loop; the longer one makes twice as many.
const N: u64 = 1000;
/// The growth over the baseline that fails the gate.
const TOLERANCE: f64 = 1.03;
const BASELINE: &str = "instructions.txt";
/// The Rust API's counts of the data path when issue 13 was taken up (commit 5d21d37).
const START: [(&str, i64); 4] = [("put", 184), ("get", 121), ("fetch_add", 73), ("add", 70)];

/// What is measured: (api, operation).
const ROWS: &[(&str, &str)] = &[
    ("rust", "put"),
    ("rust", "get"),
    ("rust", "fetch_add"),
    ("rust", "add"),
    ("rust", "switch"),
    ("rust", "malloc_free"),
    ("rust", "team_split"),
    ("rust", "lock"),
    ("c", "put"),
    ("c", "get"),
    ("c", "fetch_add"),
    ("c", "add"),
    ("c", "malloc_free"),
    ("c", "team_split"),
    ("cann", "switch"),
];

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The instructions callgrind counted in the loop function of `program` (`oshrun -n 1` runs it
/// when `launched`) doing `count` calls of `op`.
fn loop_instructions(
    rel: &Path,
    program: &Path,
    launched: bool,
    symbol: &str,
    op: &str,
    count: u64,
) -> u64 {
    let out_file = work_dir().join(format!("{op}.{count}.out"));
    let mut cmd = if launched {
        let mut c = Command::new(rel.join("oshrun"));
        c.args(["-n", "1", "--timeout", "300", "--", "valgrind"]);
        c
    } else {
        Command::new("valgrind")
    };
    let ports = free_ports(3);
    let out = cmd
        .args(["-q", "--tool=callgrind"])
        .arg(format!("--toggle-collect={symbol}"))
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(program)
        .args([op, &count.to_string()])
        .env(
            "SHMEM_INSTANCE_PORT_RANGE",
            format!("{ports}:{}", ports + 2),
        )
        .env("SHMEM_TIMEOUT", "120")
        // cargo's test environment puts the debug build's libraries first.
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap_or_else(|e| panic!("valgrind runs ({e}); .ci/run installs valgrind"));
    assert!(
        out.status.success(),
        "{} {op} {count} under callgrind failed:\n{}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).expect("callgrind wrote its profile");
    let _ = std::fs::remove_file(&out_file);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no totals in callgrind's profile of {op}"))
}

/// This test's scratch directory (the programs it builds, callgrind's profiles), made once.
fn work_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("shmem-instructions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        dir
    })
    .clone()
}

/// Instructions per call of `op`, less the empty loop's. (On one PE no call waits for another
/// thread, so the counts repeat exactly.)
fn per_call(rel: &Path, program: &Path, launched: bool, symbol: &str, op: &str) -> i64 {
    let one = |op: &str| {
        let short = loop_instructions(rel, program, launched, symbol, op, N);
        let long = loop_instructions(rel, program, launched, symbol, op, 2 * N);
        long.saturating_sub(short) as f64 / N as f64
    };
    (one(op) - one("none")).round() as i64
}

/// Compiles `source` (relative to this package) with `tool` into `dir`.
fn compile(tool: &Path, source: &str, out: &Path, std: &str) {
    let result = Command::new(tool)
        .args([std, "-O2", "-Wall", "-Wextra", "-o"])
        .arg(out)
        .arg(manifest().join(source))
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", tool.display()));
    assert!(
        result.status.success(),
        "{source} does not build:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
}

fn read_baseline() -> BTreeMap<(String, String), i64> {
    let text = std::fs::read_to_string(manifest().join(BASELINE)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 3, "a baseline line is `api operation count`: {l}");
            (
                (f[0].to_string(), f[1].to_string()),
                f[2].parse().expect("a count"),
            )
        })
        .collect()
}

fn write_baseline(now: &BTreeMap<(String, String), i64>) {
    let mut text = String::from(
        "# Instructions per call on 1 PE (callgrind, release build), net of the empty loop:\n\
         # the baseline of benches/tests/instructions.rs, which fails on growth over 3%.\n\
         # Rewritten by SHMEM_BLESS_INSTRUCTIONS=1 cargo test -p shmem-benches --test instructions\n\
         # api operation count\n",
    );
    for ((api, op), count) in now {
        text.push_str(&format!("{api} {op} {count}\n"));
    }
    std::fs::write(manifest().join(BASELINE), text).expect("the baseline is writable");
}

#[test]
fn instructions_per_call_do_not_grow() {
    // Two builds: `--bin` would also filter the C ABI package's tools (oshcc, aclshmem-c++).
    release_build(&["-p", "shmem-c", "-p", "shmem-acl"]);
    let rel = release_build(&["-p", "shmem-benches", "--bin", "shmem-calls"]);
    let dir = work_dir();
    let osh = dir.join("osh_calls");
    compile(&rel.join("oshcc"), "c/osh_calls.c", &osh, "-std=c11");
    let cann = dir.join("cann_calls");
    compile(
        &rel.join("aclshmem-c++"),
        "c/cann_calls.cpp",
        &cann,
        "-std=c++17",
    );
    let rust = rel.join("shmem-calls");

    let mut now = BTreeMap::new();
    for &(api, op) in ROWS {
        let count = match api {
            "rust" => per_call(&rel, &rust, false, "shmem_calls::calls*", op),
            "c" => per_call(&rel, &osh, true, "calls_loop*", op),
            _ => per_call(&rel, &cann, true, "calls_loop*", op),
        };
        now.insert((api.to_string(), op.to_string()), count);
    }
    let _ = std::fs::remove_dir_all(&dir);

    if std::env::var_os("SHMEM_BLESS_INSTRUCTIONS").is_some() {
        write_baseline(&now);
        return;
    }
    let baseline = read_baseline();
    let mut grown = Vec::new();
    println!("instructions per call  baseline    now  change");
    for ((api, op), &count) in &now {
        let key = (api.clone(), op.clone());
        let Some(&base) = baseline.get(&key) else {
            grown.push(format!("{api} {op}: {count}, not in the baseline"));
            continue;
        };
        let change = (count - base) as f64 / base.max(1) as f64 * 100.0;
        println!("{api:>5} {op:<16} {base:>8} {count:>6} {change:>+6.1}%");
        if count as f64 > (base as f64 * TOLERANCE).ceil() {
            grown.push(format!(
                "{api} {op}: {count} instructions per call, {change:+.1}% over the baseline {base}"
            ));
        }
    }
    // Issue 13's targets, reported: the data path at most 70% of its count when the issue was
    // taken up, the C ABIs at most 25 above the Rust API, a switch at most two lock/unlock
    // pairs and 20.
    let get = |api: &str, op: &str| now[&(api.to_string(), op.to_string())];
    for (op, before) in START {
        let target = before * 7 / 10;
        let met = if get("rust", op) <= target {
            "met"
        } else {
            "missed"
        };
        println!(
            "{op}: {} (was {before}, target at most {target}: {met})",
            get("rust", op)
        );
    }
    for op in [
        "put",
        "get",
        "fetch_add",
        "add",
        "malloc_free",
        "team_split",
    ] {
        println!(
            "C ABI over the Rust API, {op}: {:+} (target at most +25)",
            get("c", op) - get("rust", op)
        );
    }
    println!(
        "CANN C ABI over the Rust API, switch: {:+} (target at most +25)",
        get("cann", "switch") - get("rust", "switch")
    );
    println!(
        "switch: {} against two lock/unlock pairs + 20 = {}",
        get("rust", "switch"),
        2 * get("rust", "lock") + 20
    );
    assert!(
        grown.is_empty(),
        "instructions per call grew (rerun with --nocapture for the table; a deliberate change \
         rewrites the baseline with SHMEM_BLESS_INSTRUCTIONS=1):\n{}",
        grown.join("\n")
    );
}
