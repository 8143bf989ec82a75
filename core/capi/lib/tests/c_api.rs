//! The C ABI from C and C++: the generated header, the exported symbols, and the C and C++
//! conformance programs of `conformance/c/`, compiled with `oshcc`/`oshCC` and run with
//! `oshrun` on 1, 2 and 4 PEs.

mod common;

use std::path::Path;
use std::process::Command;

use common::procs::processes_with;
use common::{
    build, c_program, exported, oshrun, oshrun_with, repo, run, target_dir, temp_dir, text,
};

const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/shmem.h"));
const COMMITTED: &str = include_str!("../../include/shmem.h");
const EXTENSIONS: &str = include_str!("../../include/shmemx.h");

#[test]
fn the_committed_header_is_the_generated_one() {
    if GENERATED != COMMITTED {
        if std::env::var_os("SHMEM_UPDATE_HEADERS").is_some() {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/shmem.h");
            std::fs::write(&path, GENERATED).expect("writing the header");
        } else {
            panic!(
                "core/capi/include/shmem.h differs from what build.rs generates from the type \
                 table; run `SHMEM_UPDATE_HEADERS=1 cargo test -p shmem-c` to update it"
            );
        }
    }
    assert!(GENERATED.contains(&format!("\"{}\"", shmem_vendor())));
    insta::assert_snapshot!("shmem.h", GENERATED);
}

/// The vendor string the header must carry: the Rust library's.
fn shmem_vendor() -> &'static str {
    // The C library's name routine returns the core's string; the header states the same.
    concat!(
        "shmem-rs ",
        env!("CARGO_PKG_VERSION"),
        " (CANN SHMEM semantics, OpenSHMEM 1.6)"
    )
}

#[test]
fn every_routine_of_the_headers_is_exported() {
    let exported = exported();
    let declared: Vec<&str> = COMMITTED
        .lines()
        .chain(EXTENSIONS.lines())
        .filter(|l| l.ends_with(");") && !l.starts_with('#'))
        .filter_map(|l| l.split('(').next()?.rsplit([' ', '*']).next())
        .collect();
    assert!(
        declared.len() > 200,
        "the header declares only {} routines",
        declared.len()
    );
    let missing: Vec<&&str> = declared
        .iter()
        .filter(|f| !exported.contains(**f))
        .collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
    let soname = Command::new("readelf")
        .arg("-d")
        .arg(target_dir().join("libshmem.so"))
        .output()
        .expect("readelf runs");
    assert!(
        String::from_utf8_lossy(&soname.stdout).contains("Library soname: [libshmem.so]"),
        "libshmem.so has no soname"
    );
}

/// Every current OpenSHMEM 1.5 link symbol (functions and the `SHMEM_TEAM_WORLD`,
/// `SHMEM_TEAM_SHARED` and `SHMEM_CTX_DEFAULT` handles), from the specification's type tables.
const OPENSHMEM_1_5: &str = include_str!("openshmem-1.5-symbols.txt");
/// The deprecated link symbols of OpenSHMEM 1.5 that programs still call.
const OPENSHMEM_DEPRECATED: &str = include_str!("openshmem-deprecated-symbols.txt");
/// The link symbols OpenSHMEM 1.6 adds.
const OPENSHMEM_1_6: &str = include_str!("openshmem-1.6-symbols.txt");

#[test]
fn every_symbol_of_openshmem_1_5_its_deprecated_ones_and_1_6_is_exported() {
    let exported = exported();
    for (what, list, count) in [
        ("OpenSHMEM 1.5", OPENSHMEM_1_5, 1510),
        ("deprecated", OPENSHMEM_DEPRECATED, 103),
        ("OpenSHMEM 1.6", OPENSHMEM_1_6, 178),
    ] {
        let wanted: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(wanted.len(), count, "the list of {what} symbols");
        let missing: Vec<&&str> = wanted.iter().filter(|s| !exported.contains(**s)).collect();
        assert!(
            missing.is_empty(),
            "{} of {count} {what} symbols not exported: {missing:?}",
            missing.len()
        );
    }
}

#[test]
fn c_rma_program_passes_in_c99_and_c11_on_1_2_and_4_pes() {
    let dir = temp_dir("rma");
    for std in ["-std=c99", "-std=c11"] {
        let exe = build(
            env!("CARGO_BIN_EXE_oshcc"),
            "conformance/c/rma.c",
            &[std],
            &dir,
        );
        for n in [1, 2, 4] {
            let out = run(&exe, n);
            assert_eq!(
                out.matches(" ok").count(),
                n as usize,
                "{std} on {n} PEs:\n{out}"
            );
            // The refused calls were reported, one line each, and did not crash anything.
            assert!(out.contains("shmem_int_p: invalid parameter"), "{out}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Builds `conformance/c/{name}.c` with `oshcc -std={std}` and runs it on each of `pes`: every
/// PE must report itself ok.
fn c_program_passes(name: &str, std: &str, pes: &[u32]) {
    let dir = temp_dir(name);
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        &format!("conformance/c/{name}.c"),
        &[&format!("-std={std}")],
        &dir,
    );
    for &n in pes {
        let out = run(&exe, n);
        assert_eq!(
            out.matches(" ok").count(),
            n as usize,
            "{name} on {n} PEs:\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn c_amo_and_context_program_passes() {
    c_program_passes("amo", "c11", &[1, 2, 4]);
}

#[test]
fn c_p2p_signal_and_lock_program_passes() {
    c_program_passes("p2p", "c11", &[1, 2, 4]);
}

#[test]
fn c_team_and_collective_program_passes() {
    c_program_passes("coll", "c11", &[1, 2, 4, 5]);
}

#[test]
fn c_deprecated_active_set_collectives_program_passes() {
    // At 9 PEs the world's data routines meet at barriers (more than 8 members) and the even
    // PEs' by counted arrivals; below, both sets count.
    c_program_passes("active_set", "c11", &[1, 2, 4, 5, 9]);
}

#[test]
fn static_data_is_symmetric_in_pie_and_non_pie_executables() {
    let dir = temp_dir("static");
    for flags in [&["-std=c11"][..], &["-std=c11", "-no-pie"]] {
        let exe = build(
            env!("CARGO_BIN_EXE_oshcc"),
            "conformance/c/static.c",
            flags,
            &dir,
        );
        for n in [1, 2, 4] {
            let out = run(&exe, n);
            assert_eq!(out.matches(" ok").count(), n as usize, "{flags:?}:\n{out}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_process_that_dlopens_the_library_keeps_its_static_data_private() {
    let dir = temp_dir("dlopen");
    let exe = build("cc", "conformance/c/dlopen.c", &["-std=c11", "-ldl"], &dir);
    let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", "2", "--timeout", "120", "--"])
        .arg(&exe)
        .arg(target_dir().join("libshmem.so"))
        .env("SHMEM_TIMEOUT", "60")
        .output()
        .expect("oshrun runs");
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(" ok").count(), 2, "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The OSU-style C benchmarks (`benches/c/`) build with oshcc, warning-free, and one runs
/// (the comparison itself is `benches/c/compare.sh`, never a test).
#[test]
fn the_c_benchmarks_build_with_oshcc_and_run() {
    let dir = temp_dir("benches");
    for prog in [
        "osh_lat",
        "osh_bw",
        "osh_amo",
        "osh_barrier",
        "osh_coll",
        "osh_calls",
    ] {
        let exe = build(
            env!("CARGO_BIN_EXE_oshcc"),
            &format!("benches/c/{prog}.c"),
            &["-std=c11"],
            &dir,
        );
        if prog == "osh_calls" {
            let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
                .args(["-n", "1", "--timeout", "120", "--"])
                .arg(&exe)
                .arg("-q")
                .output()
                .expect("oshrun runs");
            let text = text(&out);
            assert!(
                out.status.success() && text.contains("CHECK calls ok"),
                "{text}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Bad input to every family is refused, logged in one line naming the routine, and
/// corrupts nothing; the library works afterwards.
#[test]
fn bad_input_to_every_family_is_refused_and_logged() {
    c_program_passes("bad_input", "c11", &[1, 2, 4]);
    let dir = temp_dir("bad_input_log");
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        "conformance/c/bad_input.c",
        &["-std=c11"],
        &dir,
    );
    let out = run(&exe, 1);
    for routine in [
        "shmem_malloc",
        "shmem_calloc",
        "shmem_long_put",
        "shmem_long_iput",
        "shmem_long_ibput",
        "shmem_long_atomic_fetch_add",
        "shmem_putmem_signal",
        "shmem_signal_wait_until",
        "shmem_long_wait_until",
        "shmem_set_lock",
        "shmem_ctx_create",
        "shmem_ctx_long_put",
        "shmem_team_sync",
        "shmem_long_broadcast",
        "shmem_long_alltoalls",
        "shmem_long_fcollect",
        "shmem_pe_quiet",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("ERROR {routine}: "))),
            "no line names {routine}:\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn c11_type_generic_program_passes() {
    c_program_passes("generic", "c11", &[1, 2, 4]);
}

#[test]
fn c_repeated_initialization_program_passes() {
    c_program_passes("reinit", "c11", &[1, 2, 4]);
}

#[test]
fn c_openshmem_1_6_program_passes() {
    c_program_passes("v16", "c11", &[1, 2, 4]);
}

#[test]
fn c_deprecated_routines_program_passes() {
    c_program_passes("legacy", "c99", &[1, 2, 4]);
}

#[test]
fn cpp_program_builds_with_osh_cxx_and_runs() {
    let dir = temp_dir("cpp");
    // `oshc++` (a link the build script makes beside `oshCC`) and `oshCC` itself.
    let osh_cxx = target_dir().join("oshc++");
    for tool in [
        osh_cxx.to_str().expect("a UTF-8 path"),
        env!("CARGO_BIN_EXE_oshCC"),
    ] {
        let exe = build(tool, "conformance/c/hello.cpp", &["-std=c++17"], &dir);
        for n in [1, 2, 4] {
            let out = run(&exe, n);
            assert_eq!(out.matches(": ok").count(), n as usize, "{tool}: {out}");
        }
    }
    let shown = Command::new(env!("CARGO_BIN_EXE_oshcc"))
        .args(["-show", "-o", "x", "x.c"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("-lshmem") && shown.contains("-I"),
        "oshcc -show: {shown}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs `cmd`, failing the test with its output unless it succeeds; returns its stdout.
fn succeeds(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} does not start ({e}); .ci/run installs it"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_installed_prefix_serves_oshcc_pkg_config_cmake_and_static_linking() {
    let dir = temp_dir("install");
    let prefix = dir.join("prefix");
    succeeds(
        Command::new(repo().join("core/capi/install.sh"))
            .arg(&prefix)
            .env("SHMEM_INSTALL_FROM", target_dir()),
    );
    for tool in [
        "oshcc",
        "oshCC",
        "oshc++",
        "oshcxx",
        "oshrun",
        "shmemrun",
        "aclshmem-cc",
        "aclshmem-c++",
    ] {
        assert!(prefix.join("bin").join(tool).exists(), "no bin/{tool}");
    }
    for file in [
        "include/cann/shmem.h",
        "include/cann/host/init/shmem_host_init.h",
        "include/acl/acl.h",
        "lib/libascendcl.so",
    ] {
        assert!(prefix.join(file).exists(), "no {file}");
    }
    // The installed CANN wrapper finds the installed CANN and ACL headers and libraries.
    let cann_exe = dir.join("cann-layout");
    succeeds(
        Command::new(prefix.join("bin/aclshmem-cc"))
            .args(["-std=c11", "-o"])
            .arg(&cann_exe)
            .arg(repo().join("conformance/cann/layout.c")),
    );
    assert!(succeeds(&mut Command::new(&cann_exe)).contains("layout: ok"));
    let soname = succeeds(
        Command::new("readelf")
            .arg("-d")
            .arg(prefix.join("lib/libshmem.so")),
    );
    assert!(soname.contains("Library soname: [libshmem.so]"), "{soname}");
    let oshrun = prefix.join("bin/shmemrun");
    let runs = |exe: &Path| {
        let out = succeeds(
            Command::new(&oshrun)
                .args(["-n", "2", "--timeout", "120", "--"])
                .arg(exe)
                .env("SHMEM_TIMEOUT", "60"),
        );
        assert_eq!(out.matches(" ok").count(), 2, "{}:\n{out}", exe.display());
    };
    let source = repo().join("conformance/c/rma.c");

    // The installed oshcc finds the installed headers and library, not the source tree's.
    let shown = succeeds(Command::new(prefix.join("bin/oshcc")).args(["-show", "x.c"]));
    assert!(
        shown.contains(&format!("-I{}", prefix.join("include").display())),
        "{shown}"
    );
    let exe = dir.join("rma-oshcc");
    succeeds(
        Command::new(prefix.join("bin/oshcc"))
            .args(["-std=c11", "-o"])
            .arg(&exe)
            .arg(&source),
    );
    runs(&exe);

    // pkg-config, dynamic and static.
    let pkg = |args: &[&str]| {
        let out = succeeds(
            Command::new("pkg-config")
                .args(args)
                .arg("shmem")
                .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        );
        out.split_whitespace().map(String::from).collect::<Vec<_>>()
    };
    let exe = dir.join("rma-pkgconfig");
    succeeds(
        Command::new("cc")
            .args(["-std=c11", "-o"])
            .arg(&exe)
            .arg(&source)
            .args(pkg(&["--cflags", "--libs"])),
    );
    runs(&exe);
    // Linked statically, the library finds the executable's static data in the executable
    // itself: static.c checks it is symmetric.
    let exe = dir.join("static-static");
    let system: Vec<String> = pkg(&["--static", "--libs-only-l"])
        .into_iter()
        .filter(|l| l != "-lshmem")
        .collect();
    succeeds(
        Command::new("cc")
            .args(["-std=c11", "-o"])
            .arg(&exe)
            .arg(repo().join("conformance/c/static.c"))
            .arg(format!("-I{}", repo().join("conformance/c").display()))
            .args(pkg(&["--cflags"]))
            .arg(prefix.join("lib/libshmem.a"))
            .args(system),
    );
    let needed = succeeds(Command::new("readelf").arg("-d").arg(&exe));
    assert!(
        !needed.contains("libshmem.so"),
        "linked statically:\n{needed}"
    );
    runs(&exe);

    // CMake's find_package(shmem) and the imported target shmem::shmem.
    let build = dir.join("cmake-build");
    succeeds(
        Command::new("cmake")
            .arg("-S")
            .arg(repo().join("conformance/c/cmake"))
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .arg("-DCMAKE_C_FLAGS=-std=c11"),
    );
    succeeds(Command::new("cmake").arg("--build").arg(&build));
    runs(&build.join("rma"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn shmem_version_and_shmem_info_print_once_at_start_up() {
    let dir = temp_dir("startup-info");
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        "conformance/c/v16.c",
        &["-std=c11"],
        &dir,
    );
    let with = |var: &str| {
        let out = oshrun(&exe, 2, &[(var, "1")]);
        assert!(out.status.success(), "{var}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let version = with("SHMEM_VERSION");
    assert_eq!(
        version.matches(shmem_vendor()).count(),
        1,
        "one version line:\n{version}"
    );
    assert!(!version.contains("SHMEM_SYMMETRIC_SIZE"), "{version}");
    let info = with("SHMEM_INFO");
    assert_eq!(info.matches(shmem_vendor()).count(), 1, "{info}");
    for var in [
        "SHMEM_SYMMETRIC_SIZE",
        "SHMEM_DEBUG",
        "SHMEM_VERSION",
        "SHMEM_INFO",
    ] {
        assert_eq!(
            info.matches(&format!("  {var} ")).count(),
            1,
            "{var}:\n{info}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Open MPI's `mpirun`.
fn mpirun() -> &'static Path {
    ["/usr/bin/mpirun", "/usr/local/bin/mpirun"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .expect("Open MPI's mpirun (Debian openmpi-bin; .ci/run installs it)")
}

#[test]
fn c_programs_also_run_under_open_mpi_mpirun() {
    let mpirun = mpirun();
    let dir = temp_dir("mpirun");
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        "conformance/c/reinit.c",
        &["-std=c11"],
        &dir,
    );
    // coreutils' timeout is the watchdog: mpirun stops its ranks when it is terminated.
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "10", "120"])
        .arg(mpirun)
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(&exe)
        .env("SHMEM_TIMEOUT", "60");
    for v in shmem_sim::launcher::env::ALL {
        cmd.env_remove(v);
    }
    let out = succeeds(&mut cmd);
    assert_eq!(out.matches(" ok").count(), 2, "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn shmem_global_exit_ends_the_whole_job_with_its_status() {
    let dir = temp_dir("global-exit");
    let exe = build(
        env!("CARGO_BIN_EXE_oshcc"),
        "conformance/c/global_exit.c",
        &["-std=c11"],
        &dir,
    );
    for n in [1u32, 2, 4] {
        let out = oshrun(&exe, n, &[]);
        let text = text(&out);
        assert_eq!(out.status.code(), Some(7), "on {n} PEs:\n{text}");
        assert!(
            text.contains(&format!("PE {} exits the job with 7", n - 1)),
            "{text}"
        );
        assert!(
            !text.contains("returned from") && !text.contains("passed a wait"),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A PE that returns from `main` or calls `exit()` without `shmem_finalize` (legacy
/// `start_pes` programs never call it) finalizes at exit: it stays in the job, its memory
/// reachable, until every PE has finalized.
#[test]
fn a_pe_that_leaves_main_without_finalize_stays_until_every_pe_finalizes() {
    let (dir, exe) = c_program("exit_paths", "exit-paths");
    for mode in ["return", "exit"] {
        let out = oshrun_with(&exe, 3, &[mode], &[]);
        let text = text(&out);
        assert!(out.status.success(), "{mode}:\n{text}");
        assert!(
            text.contains("PE 0 leaves without finalize"),
            "{mode}:\n{text}"
        );
        assert_eq!(text.matches(" ok").count(), 2, "{mode}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// `system()` and `fork()` after `shmem_init`: a child that exits, or returns from `main`,
/// runs the exit handlers of a process that is not the PE; it must not finalize the parent's
/// instance or touch its bootstrap connection.
#[test]
fn fork_and_system_after_init_leave_the_pe_intact() {
    let (dir, exe) = c_program("exit_paths", "exit-paths-fork");
    let out = oshrun_with(&exe, 2, &["fork"], &[]);
    let text = text(&out);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches(" ok").count(), 2, "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// When `oshrun` is killed, every PE exits soon after, also when a wrapper (`sh -c`, `timeout`,
/// `/usr/bin/time`, `perf record`) stands between the launcher and the program, so that the
/// launcher's parent-death signal does not reach it: the PEs watch the job's control pipe
/// (the lifeline). The test bounds each case by 20 s (a hang catcher) and prints the time.
#[test]
fn every_pe_exits_soon_after_the_launcher_dies_also_under_a_wrapper() {
    use std::time::{Duration, Instant};
    let (dir, exe) = c_program("exit_paths", "lifeline");
    let exe = exe.to_str().expect("a UTF-8 path").to_owned();
    let perf_data = dir.join("perf.data");
    let perf_data = perf_data.to_str().expect("a UTF-8 path");
    let perf_works = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            perf_data,
            "--",
            "true",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    let mut wrappers: Vec<(&str, Vec<String>)> = vec![
        ("none", vec![exe.clone(), "hold".into()]),
        (
            "sh -c",
            vec!["sh".into(), "-c".into(), format!("'{exe}' hold; true")],
        ),
        (
            "timeout",
            vec!["timeout".into(), "300".into(), exe.clone(), "hold".into()],
        ),
        (
            "/usr/bin/time",
            vec!["/usr/bin/time".into(), exe.clone(), "hold".into()],
        ),
    ];
    if perf_works {
        wrappers.push((
            "perf record",
            [
                "perf",
                "record",
                "-q",
                "-e",
                "cpu-clock",
                "-o",
                perf_data,
                "--",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([exe.clone(), "hold".into()])
            .collect(),
        ));
    } else {
        println!("perf record cannot run here: that wrapper is not tested");
    }
    for (k, (name, argv)) in wrappers.iter().enumerate() {
        let held = dir.join(format!("held-{k}"));
        std::fs::create_dir_all(&held).unwrap();
        let mark = format!("SHMEM_LIFELINE_TEST={}-{k}", std::process::id());
        let (key, value) = mark.split_once('=').unwrap();
        let mut launcher = Command::new(env!("CARGO_BIN_EXE_oshrun"))
            .args(["-n", "2", "--timeout", "300", "--"])
            .args(argv)
            .env("HOLD_DIR", &held)
            .env(key, value)
            .env("SHMEM_TIMEOUT", "240")
            .env("SHMEM_HANG_REPORT", "off")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("oshrun starts");
        let start = Instant::now();
        while !(held.join("pe0").exists() && held.join("pe1").exists()) {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{name}: the PEs did not initialise"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        launcher.kill().expect("the launcher can be killed");
        let killed = Instant::now();
        launcher.wait().expect("the launcher is reaped");
        while !processes_with(&mark).is_empty() {
            assert!(
                killed.elapsed() < Duration::from_secs(20),
                "{name}: processes left 20 s after the launcher's death: {:?}",
                processes_with(&mark)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        println!(
            "wrapper {name}: every process gone {:.3} s after the launcher's death",
            killed.elapsed().as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A C program's PE 2 of 4 dies (SIGKILL, `_exit`, or `exit(3)`) while the others are
/// blocked in a barrier or a wait: under `oshrun` the job ends with PE 2's status and the
/// launcher names PE 2 and how it ended; no survivor returns from its blocked call. (The
/// launcher-killed case is `every_pe_exits_soon_after_the_launcher_dies_also_under_a_wrapper`.)
#[test]
fn a_c_pe_dying_in_a_barrier_or_wait_ends_the_job_naming_it() {
    use std::time::{Duration, Instant};
    let (dir, exe) = c_program("exit_paths", "c-faults");
    for (how, code, says) in [
        ("kill", 137, "SIGKILL"),
        ("_exit", 3, "exited with status 3"),
        // A failing PE leaves at once: no finalize at exit with a non-zero status.
        ("exit", 3, "exited with status 3"),
    ] {
        for at in ["barrier", "wait"] {
            let start = Instant::now();
            let out = oshrun_with(&exe, 4, &["die", how, at], &[]);
            let took = start.elapsed();
            let text = text(&out);
            println!(
                "{how} in {at}: the job ended in {:.2} s",
                took.as_secs_f64()
            );
            assert!(took < Duration::from_secs(30), "{how} in {at}: {took:?}");
            assert_eq!(out.status.code(), Some(code), "{how} in {at}:\n{text}");
            assert!(
                text.contains("shmemrun: PE 2 ") && text.contains(says),
                "{how} in {at}:\n{text}"
            );
            assert!(!text.contains("returned from"), "{how} in {at}:\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The same PE 2 leaving without finalize under Open MPI's `mpirun`: each of the three
/// survivors fails its blocked call naming PE 2. (`orte_abort_on_non_zero_status 0` keeps
/// mpirun from killing the survivors before they notice; Open MPI's own cleanup is not ours
/// to test.)
#[test]
fn under_mpirun_the_survivors_of_a_c_pe_leaving_without_finalize_name_it() {
    let mpirun = mpirun();
    let (dir, exe) = c_program("exit_paths", "c-faults-mpirun");
    for at in ["barrier", "wait"] {
        let mut cmd = Command::new("timeout");
        cmd.args(["-k", "10", "120"])
            .arg(mpirun)
            .args(["--allow-run-as-root", "--oversubscribe"])
            .args(["--mca", "orte_abort_on_non_zero_status", "0", "-np", "4"])
            .arg(&exe)
            .args(["die", "_exit", at])
            .env("SHMEM_TIMEOUT", "60");
        for v in shmem_sim::launcher::env::ALL {
            cmd.env_remove(v);
        }
        let out = cmd.output().expect("mpirun runs");
        let text = text(&out);
        assert_ne!(
            out.status.code(),
            Some(124),
            "{at}: mpirun timed out:\n{text}"
        );
        assert_eq!(text.matches("PE 2 is gone").count(), 3, "{at}:\n{text}");
        assert!(!text.contains("returned from"), "{at}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
