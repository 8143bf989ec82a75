//! The compiler wrapper behind `oshcc` (C), `oshCC` and `oshcxx` (C++): compile and link an
//! OpenSHMEM program against this project's headers and `libshmem.so`; and behind
//! `aclshmem-cc` and `aclshmem-cxx` (`aclshmem-c++`): a CANN SHMEM host program against CANN's
//! headers (`include/cann`), the ACL stand-in's (`acl/acl.h`), `libshmem.so` and
//! `libascendcl.so`.
//!
//! ```text
//! oshcc -O2 -o hello hello.c       # cc -O2 -o hello hello.c -I<include> -L<lib> -Wl,-rpath,<lib> -lshmem
//! oshcc -show                      # prints the command instead of running it
//! aclshmem-c++ -o host host.cpp    # c++ -o host host.cpp -I<include>/cann -I<acl> -L<lib> … -lshmem -lascendcl
//! aclshmem-c++ -cpu-debug -o k k.cpp # kernel source as host code (clang++ where it is found)
//! ```
//!
//! `-cpu-debug` compiles CANN kernel source for the simulator's AI cores, as AscendC's CPU-debug
//! build does: it defines `__CCE_KT_TEST__` (so that CANN's `shmem.h` gives the device API) and
//! `ASCENDC_CPU_DEBUG`, the vector-core macros `__DAV_C220_VEC__` and `__NPU_ARCH__=2201`, puts
//! the AscendC subset (`kernel_operator.h`, `tikicpulib.h`) on the include path, and ignores
//! bisheng's attributes. Its compiler is `clang++` when `OSHCC_CXX` does not say otherwise and
//! clang++ is on the `PATH`: clang's address spaces make `__ubuf__` pointers UB offsets
//! (`ascendc/stub_def.h`).
//!
//! Used in place (after `cargo build`), the headers are `core/capi/include/` (and
//! `sim/acl/include/`) and the libraries sit beside the tool in `target/<profile>/`; in an
//! installed prefix they are `<prefix>/include` and `<prefix>/lib`. `OSHCC_CC` and `OSHCC_CXX`
//! choose the compilers.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Where the headers (OpenSHMEM's, and the ACL stand-in's) and the libraries are, for a tool
/// at `exe`.
fn locate(exe: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dir = exe.parent().unwrap_or(Path::new("."));
    let prefix = dir.parent().unwrap_or(dir);
    let installed = (prefix.join("include/shmem.h"), prefix.join("lib"));
    if installed.0.is_file() && installed.1.join("libshmem.so").is_file() {
        return (prefix.join("include"), prefix.join("include"), installed.1);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let in_tree = manifest.join("../include");
    let acl = manifest.join("../../../sim/acl/include");
    (in_tree, acl, dir.to_path_buf())
}

/// Whether `tool` is an executable in a directory of the `PATH`.
fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(tool)).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    })
}

/// Runs the wrapper for the tool this process was started as.
pub(crate) fn main() -> ExitCode {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("oshcc"));
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cxx = name.contains("CC") || name.contains("cxx") || name.contains("++");
    let cann = name.starts_with("aclshmem");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "-show" || a == "--show");
    let kernel = cann && args.iter().any(|a| a == "-cpu-debug" || a == "--cpu-debug");
    let compiler = match (cxx, std::env::var("OSHCC_CXX"), std::env::var("OSHCC_CC")) {
        (true, Ok(c), _) => c,
        (true, Err(_), _) if kernel && on_path("clang++") => "clang++".into(),
        (true, Err(_), _) => "c++".into(),
        (false, _, Ok(c)) => c,
        (false, _, Err(_)) => "cc".into(),
    };
    let (include, acl_include, lib) = locate(&exe);
    let user: Vec<&String> = args
        .iter()
        .filter(|a| {
            !matches!(
                a.as_str(),
                "-show" | "--show" | "-cpu-debug" | "--cpu-debug"
            )
        })
        .collect();
    let link = !user
        .iter()
        .any(|a| matches!(a.as_str(), "-c" | "-S" | "-E" | "-M" | "-MM"));
    let mut cmd = Command::new(&compiler);
    if kernel {
        let clang = compiler.contains("clang");
        cmd.args([
            "-D__CCE_KT_TEST__=1",
            "-DASCENDC_CPU_DEBUG=1",
            "-D__DAV_C220_VEC__=1",
            "-D__NPU_ARCH__=2201",
            "-pthread",
            if clang {
                "-Wno-unknown-attributes"
            } else {
                "-Wno-attributes"
            },
        ])
        .arg(format!("-I{}", include.join("cann/ascendc").display()));
    }
    if cann {
        cmd.args(&user)
            .arg(format!("-I{}", include.join("cann").display()))
            .arg(format!("-I{}", acl_include.display()));
    } else {
        cmd.args(&user).arg(format!("-I{}", include.display()));
    }
    if link {
        cmd.arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-lshmem");
        if cann {
            cmd.arg("-lascendcl");
        }
    }
    if show {
        let shown: Vec<String> = std::iter::once(compiler.clone())
            .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        println!("{}", shown.join(" "));
        return ExitCode::SUCCESS;
    }
    match cmd.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("{name}: cannot run {compiler}: {e}");
            ExitCode::from(127)
        }
    }
}
