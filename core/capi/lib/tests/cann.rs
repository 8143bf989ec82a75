//! CANN SHMEM host programs (C++17, CANN's `shmem.h` from `core/capi/include/cann/`) against
//! libshmem.so's CANN ABI, started by the launcher with each PE passing its own `my_pe`,
//! `n_pes` and `ip_port`, as CANN's examples do.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_ports, repo, target_dir, temp_dir, text};

/// Compiles the C++ program `source` (relative to the repository) into `exe` with the
/// CANN-style wrapper `aclshmem-c++` (a link the build script makes to `aclshmem-cxx`),
/// warnings as errors.
fn compile(source: &str, exe: &std::path::Path) {
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(exe)
        .arg(repo().join(source))
        .output()
        .expect("aclshmem-c++ runs");
    assert!(out.status.success(), "{source}:\n{}", text(&out));
}

/// Runs `exe` with `args` on `n` PEs under `oshrun` (a 120 s job timeout, `SHMEM_TIMEOUT=60`),
/// with CANN's ports (instance 0 on a free port in `CANN_TEST_PORT`, `SHMEM_INSTANCE_PORT_RANGE`
/// above it for instance 1) and `env`.
fn run_cann(
    exe: &std::path::Path,
    n: u32,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let port = free_ports(3);
    Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", &n.to_string(), "--timeout", "120", "--"])
        .arg(exe)
        .args(args)
        .env("CANN_TEST_PORT", port.to_string())
        .env(
            "SHMEM_INSTANCE_PORT_RANGE",
            format!("{}:{}", port + 1, port + 2),
        )
        .env("SHMEM_TIMEOUT", "60")
        .envs(env.iter().copied())
        .output()
        .expect("the launcher runs")
}

#[test]
fn a_cann_host_program_runs_its_init_heap_team_and_multi_instance_flow() {
    let dir = temp_dir("cann-host");
    let exe = dir.join("host");
    compile("conformance/cann/host.cpp", &exe);
    let shown = Command::new(env!("CARGO_BIN_EXE_aclshmem-cxx"))
        .args(["-show", "x.cpp"])
        .output()
        .expect("aclshmem-cxx runs");
    let shown = text(&shown);
    assert!(
        shown.contains("include/cann") && shown.contains("-lshmem -lascendcl"),
        "{shown}"
    );
    for (n, strict) in [(1, "0"), (2, "0"), (4, "0"), (2, "1")] {
        let out = run_cann(&exe, n, &[], &[("SHMEM_SIM_STRICT", strict)]);
        let t = text(&out);
        assert!(out.status.success(), "{n} PEs:\n{t}");
        assert_eq!(t.matches(" ok").count(), n as usize, "{n} PEs:\n{t}");
        // A refused call is one line naming it, with CANN's code.
        assert!(
            t.contains("ERROR aclshmemx_init_attr: invalid value: local_mem_size is 0 (code -2)"),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cann_headers_from_plain_c_have_cann_layouts_and_values() {
    let dir = temp_dir("cann-layout");
    let exe = dir.join("layout");
    let out = Command::new(target_dir().join("aclshmem-cc"))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(repo().join("conformance/cann/layout.c"))
        .output()
        .expect("aclshmem-cc runs");
    assert!(out.status.success(), "{}", text(&out));
    let run = Command::new(&exe).output().expect("the program runs");
    assert!(
        run.status.success() && text(&run).contains("layout: ok"),
        "{}",
        text(&run)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// CANN's multi-instance example flow (`conformance/cann/multi_instance.cpp`) on 4 PEs, started
/// as CANN's examples start PEs (one process each, given its PE, the PE count and the address),
/// then by `shmemrun`; under strict mode both times.
#[test]
fn cann_multi_instance_example_runs_as_cann_starts_it_and_under_shmemrun() {
    let dir = temp_dir("cann-multi");
    let exe = dir.join("multi_instance");
    compile("conformance/cann/multi_instance.cpp", &exe);
    let env = |c: &mut Command, port: u16| {
        // Instances 1 to 5 take ports start + 1 to start + 5.
        c.env("SHMEM_INSTANCE_PORT_RANGE", format!("{port}:{}", port + 6))
            .env("SHMEM_TIMEOUT", "60")
            .env("SHMEM_SIM_STRICT", "1");
    };

    // As CANN's run.sh: four processes, no launcher, on a node of 8 simulated NPUs. A watchdog
    // ends them all if one hangs.
    let port = free_ports(7);
    let mut pes = Vec::new();
    for pe in 0..4 {
        let log = std::fs::File::create(dir.join(format!("pe{pe}.log"))).expect("a log file");
        let mut c = Command::new(&exe);
        c.args([
            "4",
            &pe.to_string(),
            &format!("tcp://127.0.0.1:{port}"),
            "0",
        ])
        .env("SHMEM_SIM_DEVICE_COUNT", "8")
        .env_remove("SHMEMRUN_PE")
        .env_remove("SHMEMRUN_NPES")
        .stdout(log.try_clone().expect("the log again"))
        .stderr(log);
        env(&mut c, port);
        pes.push(c.spawn().expect("a PE starts"));
    }
    let deadline = Instant::now() + Duration::from_secs(150);
    let mut codes = vec![None; pes.len()];
    while codes.iter().any(Option::is_none) {
        for (pe, child) in pes.iter_mut().enumerate() {
            if codes[pe].is_none() {
                codes[pe] = child.try_wait().expect("wait for a PE");
            }
        }
        if Instant::now() > deadline {
            for child in &mut pes {
                let _ = child.kill();
                let _ = child.wait();
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let logs: String = (0..4)
        .map(|pe| std::fs::read_to_string(dir.join(format!("pe{pe}.log"))).unwrap_or_default())
        .collect();
    for (pe, code) in codes.iter().enumerate() {
        assert!(
            code.is_some_and(|c| c.success()),
            "PE {pe} ended with {code:?} (None: killed by the watchdog):\n{logs}"
        );
    }
    assert_eq!(logs.matches(" ok").count(), 4, "{logs}");

    // With shmemrun.
    let port = free_ports(7);
    let mut c = Command::new(env!("CARGO_BIN_EXE_oshrun"));
    c.args(["-n", "4", "--timeout", "150", "--"])
        .arg(&exe)
        .stdin(Stdio::null());
    env(&mut c, port);
    let out = c.output().expect("the launcher runs");
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(t.matches(" ok").count(), 4, "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

/// An installed prefix (`core/capi/install.sh`) serves CANN programs as a CANN install does:
/// `set_env.sh` sets CANN's variables for it, `$ASCEND_HOME_PATH/lib64` holds `libascendcl.so`,
/// and CMake's `find_package(shmem)` gives the target `shmem::cann`, whose program runs.
#[test]
fn an_installed_prefix_serves_cann_programs_with_set_env_and_cmake() {
    let dir = temp_dir("cann-install");
    let prefix = dir.join("prefix");
    let out = Command::new(repo().join("core/capi/install.sh"))
        .arg(&prefix)
        .env("SHMEM_INSTALL_FROM", target_dir())
        .output()
        .expect("install.sh runs");
    assert!(out.status.success(), "{}", text(&out));
    assert!(prefix.join("lib64/libascendcl.so").exists());

    // set_env.sh, sourced from elsewhere, names the prefix.
    let out = Command::new("bash")
        .arg("-c")
        .arg(
            ". ./prefix/set_env.sh && echo \"$SHMEM_HOME_PATH|$ASCEND_HOME_PATH|$ASCEND_TOOLKIT_HOME\" \
             && command -v aclshmem-c++ && echo \"$LD_LIBRARY_PATH\"",
        )
        .current_dir(&dir)
        .env("LD_LIBRARY_PATH", "/elsewhere")
        .output()
        .expect("bash runs");
    let t = text(&out);
    let p = prefix
        .canonicalize()
        .expect("the prefix")
        .display()
        .to_string();
    assert!(out.status.success(), "{t}");
    assert!(t.contains(&format!("{p}|{p}|{p}")), "{t}");
    assert!(t.contains(&format!("{p}/bin/aclshmem-c++")), "{t}");
    assert!(t.contains(&format!("{p}/lib:/elsewhere")), "{t}");

    // find_package(shmem) and shmem::cann.
    let build = dir.join("cmake-build");
    for args in [
        vec![
            "-S".into(),
            repo().join("conformance/cann/cmake").display().to_string(),
            "-B".into(),
            build.display().to_string(),
            format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
        ],
        vec!["--build".into(), build.display().to_string()],
    ] {
        let out = Command::new("cmake")
            .args(&args)
            .output()
            .expect("cmake runs");
        assert!(out.status.success(), "cmake {args:?}:\n{}", text(&out));
    }
    let port = free_ports(7);
    // The installed launcher runs a program of the build on `n` PEs; its output, required to
    // succeed.
    let shmemrun = |n: &str, exe: &str| {
        let out = Command::new(prefix.join("bin/shmemrun"))
            .args(["-n", n, "--timeout", "150", "--"])
            .arg(build.join(exe))
            .env("SHMEM_INSTANCE_PORT_RANGE", format!("{port}:{}", port + 6))
            .env("SHMEM_TIMEOUT", "60")
            .output()
            .expect("shmemrun runs");
        let t = text(&out);
        assert!(out.status.success(), "{exe}: {t}");
        t
    };
    let t = shmemrun("4", "multi_instance");
    assert_eq!(t.matches(" ok").count(), 4, "{t}");
    // A kernel built with shmem::cpu_debug.
    let t = shmemrun("2", "multi_instance_kernel");
    assert_eq!(t.matches("every value verified").count(), 2, "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

/// CANN's heaps are device memory (`conformance/cann/device_memory.cpp`): the ACL runtime's
/// copies reach them and SHMEM's calls do, host code faults on them and the launcher names the
/// PE and the signal; `SHMEM_SIM_DEVICE_HOST_ACCESS=1` lets host code in.
#[test]
fn cann_heaps_are_device_memory_that_host_code_faults_on() {
    let dir = temp_dir("cann-device");
    let exe = dir.join("device_memory");
    compile("conformance/cann/device_memory.cpp", &exe);
    let run = |args: &[&str], host_access: &str| {
        let env = [
            ("SHMEM_SIM_DEVICE_HOST_ACCESS", host_access),
            ("SHMEM_SIM_STRICT", "1"),
        ];
        let out = run_cann(&exe, 2, args, &env);
        (out.status.success(), text(&out))
    };
    let (ok, t) = run(&[], "0");
    assert!(ok, "{t}");
    assert_eq!(t.matches(" ok").count(), 2, "{t}");
    // libshmem.so depends on the ACL runtime, found beside it.
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(target_dir().join("libshmem.so"))
        .output()
        .expect("readelf runs");
    let dynamic = text(&dynamic);
    assert!(
        dynamic.contains("Shared library: [libascendcl.so]")
            && dynamic.contains("Library runpath: [$ORIGIN]"),
        "{dynamic}"
    );
    let (ok, t) = run(&["touch"], "0");
    assert!(!ok, "a host store to device memory must fault:\n{t}");
    assert!(
        t.contains("PE 1 (pid") && t.contains("was killed by signal 11 (SIGSEGV)"),
        "{t}"
    );
    let (ok, t) = run(&["touch"], "1");
    assert!(ok, "{t}");
    assert!(t.contains("host code stored 42"), "{t}");
    assert_eq!(t.matches(" ok").count(), 2, "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Bad input at CANN's entry points (`conformance/cann/bad_input.cpp`): CANN's code, exactly one
/// log line per refused call, no crash, and both instances keep working.
#[test]
fn bad_input_at_cann_entry_points_gets_one_line_and_harms_nothing() {
    let dir = temp_dir("cann-bad");
    let exe = dir.join("bad_input");
    compile("conformance/cann/bad_input.cpp", &exe);
    for strict in ["0", "1"] {
        let out = run_cann(&exe, 2, &[], &[("SHMEM_SIM_STRICT", strict)]);
        let t = text(&out);
        assert!(out.status.success(), "{t}");
        assert_eq!(t.matches(" ok").count(), 2, "{t}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let bad: usize = stdout
            .lines()
            .filter_map(|l| l.split("bad calls: ").nth(1))
            .map(|n| n.trim().parse::<usize>().expect("a count"))
            .sum();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines = stderr.lines().filter(|l| l.starts_with("ERROR ")).count();
        assert!(
            bad > 0 && lines == bad,
            "{bad} bad calls, {lines} ERROR lines:\n{t}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// CANN's `shmem_*`/`shmemx_*` aliases in the headers name CANN entry points (or CANN's types),
/// so a program written with them links.
#[test]
fn every_cann_alias_names_an_entry_point_or_a_type() {
    let entry: std::collections::BTreeSet<&str> = include_str!("cann-host-symbols.txt")
        .lines()
        .map(str::trim)
        .collect();
    let mut dirs = vec![repo().join("core/capi/include/cann")];
    let (mut aliases, mut wrong) = (0, Vec::new());
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("the header directory") {
            let path = e.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a header");
            for line in text.lines() {
                let mut w = line.split_whitespace();
                if let (Some("#define"), Some(name), Some(target), None) =
                    (w.next(), w.next(), w.next(), w.next())
                {
                    if !(name.starts_with("shmem_") || name.starts_with("shmemx_")) {
                        continue;
                    }
                    aliases += 1;
                    let is_type = target.starts_with("aclshmem") && target.ends_with("_t")
                        || target == "aclshmem_decrypt_handler";
                    if !entry.contains(target) && !is_type {
                        wrong.push(format!("{}: {name} -> {target}", path.display()));
                    }
                }
            }
        }
    }
    assert!(aliases > 100, "only {aliases} aliases found");
    assert!(
        wrong.is_empty(),
        "aliases of nothing:\n{}",
        wrong.join("\n")
    );
}
