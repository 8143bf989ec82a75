//! What the C ABI's integration tests share: building `libshmem.so`, its exported symbols, and
//! compiling and running C programs with `oshcc` and `oshrun`.
// Each test crate compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Processes by their environment (the core's test helper).
#[path = "../../../../tests/common/procs.rs"]
pub(crate) mod procs;

/// `target/<profile>`, where `libshmem.so` and the tools are, once `libshmem.so` is built.
///
/// `cargo test` builds the package's binaries (`oshcc`, `oshrun`) for these tests, but not its
/// `cdylib`, which no target links; so the tests build it themselves, once, with the same cargo
/// and profile (cargo does not hold the build directory while tests run). This keeps the
/// library the C programs link always the one of this source tree, never a stale one.
pub(crate) fn target_dir() -> PathBuf {
    shmem_conformance::libraries::c_library_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// The repository's root.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The symbols `libshmem.so` defines (`nm -D --defined-only`), each with its `nm` type letter
/// (`T` for a routine, `D` or `B` for data).
pub(crate) fn exported_with_types() -> Vec<(String, char)> {
    let lib = target_dir().join("libshmem.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    assert!(
        out.status.success(),
        "nm {}: {}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let kind = f.nth(1)?.chars().next()?;
            Some((f.next()?.to_string(), kind))
        })
        .collect()
}

/// The symbols `libshmem.so` defines.
pub(crate) fn exported() -> std::collections::HashSet<String> {
    exported_with_types().into_iter().map(|(s, _)| s).collect()
}

/// Compiles `source` (relative to the repository) with `tool` and `flags` into a temporary
/// file, returning its path.
pub(crate) fn build(tool: &str, source: &str, flags: &[&str], dir: &Path) -> PathBuf {
    build_in(tool, &repo().join(source), flags, dir)
}

/// `conformance/c/{name}.c` built with `oshcc -std=c11` in a directory of test `test`'s own:
/// the directory and the program.
pub(crate) fn c_program(name: &str, test: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(test);
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        &format!("conformance/c/{name}.c"),
        &["-std=c11"],
        &dir,
    );
    (dir, exe)
}

/// [`build`] of a source file anywhere.
pub(crate) fn build_in(tool: &str, source: &Path, flags: &[&str], dir: &Path) -> PathBuf {
    target_dir();
    let exe = dir.join(format!(
        "{}-{}",
        source.file_stem().unwrap().to_string_lossy(),
        flags.join("").replace(['-', '='], "")
    ));
    let out = Command::new(tool)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-O1", "-o"])
        .arg(&exe)
        .arg(source)
        .output()
        .expect("the compiler wrapper runs");
    assert!(
        out.status.success(),
        "{tool} {flags:?} {} failed:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `exe` on `n` PEs with `oshrun` (bounded by a timeout), with `vars` set.
pub(crate) fn oshrun(exe: &Path, n: u32, vars: &[(&str, &str)]) -> std::process::Output {
    oshrun_with(exe, n, &[], vars)
}

/// Runs `exe args` on `n` PEs with `oshrun` (a 120 s job timeout, `SHMEM_TIMEOUT=60`), with
/// `vars` set.
pub(crate) fn oshrun_with(
    exe: &Path,
    n: u32,
    args: &[&str],
    vars: &[(&str, &str)],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", &n.to_string(), "--timeout", "120", "--"])
        .arg(exe)
        .args(args)
        .env("SHMEM_TIMEOUT", "60")
        .envs(vars.iter().copied())
        .output()
        .expect("oshrun runs")
}

/// Standard output and standard error, one after the other.
pub(crate) fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `exe` on `n` PEs with `oshrun`, requires success and returns its output.
pub(crate) fn run(exe: &Path, n: u32) -> String {
    let out = oshrun(exe, n, &[]);
    let text = text(&out);
    assert!(
        out.status.success(),
        "{} on {n} PEs failed:\n{text}",
        exe.display()
    );
    text
}

/// A directory of this test's own (tests run in parallel).
pub(crate) fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shmem-c-tests-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// C or C++ source with its comments and string and character literals blanked (newlines kept).
pub(crate) fn strip(c: &str) -> String {
    #[derive(PartialEq)]
    enum S {
        Code,
        Line,
        Block,
        Str(char),
    }
    let mut out = String::with_capacity(c.len());
    let mut state = S::Code;
    let mut chars = c.chars().peekable();
    while let Some(ch) = chars.next() {
        match state {
            S::Code => match ch {
                '/' if chars.peek() == Some(&'/') => state = S::Line,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    out.push(' ');
                    state = S::Block;
                }
                '"' | '\'' => state = S::Str(ch),
                _ => {
                    out.push(ch);
                    continue;
                }
            },
            S::Line if ch == '\n' => state = S::Code,
            S::Block if ch == '*' && chars.peek() == Some(&'/') => {
                chars.next();
                out.push(' ');
                state = S::Code;
            }
            S::Str(_) if ch == '\\' => {
                if let Some(escaped) = chars.next() {
                    out.push(' ');
                    out.push(if escaped == '\n' { '\n' } else { ' ' });
                    continue;
                }
            }
            S::Str(q) if ch == q => state = S::Code,
            _ => {}
        }
        out.push(if ch == '\n' { '\n' } else { ' ' });
    }
    out
}

/// `count` consecutive ports that were free a moment ago, for CANN programs (instance 0 on the
/// first, `SHMEM_INSTANCE_PORT_RANGE` from the second). They lie below Linux's ephemeral range
/// (32768 and up), so no connection's local port takes one between this check and the program's
/// bind, and no two calls of this process hand out overlapping ports.
pub(crate) fn free_ports(count: u16) -> u16 {
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<(u16, u16)>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    // A pseudo-random start per call: this process's id and a counter, spread over 12000..32000.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let mut seed = std::process::id()
        .wrapping_mul(2_654_435_761)
        .wrapping_add(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) * 7919);
    loop {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let p = 12_000 + (seed >> 8) as u16 % 20_000;
        let end = p + count;
        let overlaps = given.iter().any(|&(a, b)| p < b && a < end);
        if !overlaps
            && (0..count).all(|k| std::net::TcpListener::bind(("127.0.0.1", p + k)).is_ok())
        {
            given.push((p, end));
            return p;
        }
    }
}

/// The end of a generated bad-input program's output, without its `CALLED` and `ERROR` lines,
/// for a failure message.
pub(crate) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("CALLED ") && !l.starts_with("ERROR "))
        .collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// How many `ERROR <routine>: …` lines `text` has for each routine.
pub(crate) fn error_lines(text: &str) -> std::collections::BTreeMap<&str, usize> {
    let mut logged = std::collections::BTreeMap::new();
    for l in text.lines() {
        if let Some(name) = l.strip_prefix("ERROR ").and_then(|r| r.split(':').next()) {
            *logged.entry(name).or_default() += 1;
        }
    }
    logged
}

/// One C prototype of a header, for the generated bad-input tests.
pub(crate) struct Proto {
    pub(crate) ret: String,
    pub(crate) name: String,
    /// Each parameter: its type and its name (a default value dropped).
    pub(crate) params: Vec<(String, String)>,
}

impl Proto {
    /// The prototype of `name`, returning `ret`, with the parameter list `list` (`void` or
    /// empty for none); `None` if a parameter lacks a type or a name.
    pub(crate) fn parse(ret: &str, name: &str, list: &str) -> Option<Proto> {
        let params: Vec<(String, String)> = list
            .split(", ")
            .map(|p| p.split(" = ").next().unwrap_or(p).trim())
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| {
                let at = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_'))? + 1;
                Some((p[..at].trim().to_owned(), p[at..].to_owned()))
            })
            .collect::<Option<_>>()?;
        let named = params.iter().all(|(t, n)| !t.is_empty() && !n.is_empty());
        named.then(|| Proto {
            ret: ret.trim().to_owned(),
            name: name.to_owned(),
            params,
        })
    }

    /// Whether it has a parameter `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.params.iter().any(|(_, n)| n == name)
    }

    /// The type of its parameter `name`.
    pub(crate) fn ty(&self, name: &str) -> &str {
        &self
            .params
            .iter()
            .find(|(_, n)| n == name)
            .expect("a parameter")
            .0
    }
}
