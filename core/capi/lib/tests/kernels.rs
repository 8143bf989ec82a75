//! C++ kernels on the simulator's AI cores: CANN-style kernel source compiled as host code with
//! `aclshmem-c++ -cpu-debug` (CANN's `shmem.h` with the device API, the AscendC subset and
//! `ICPU_RUN_KF`), run by the launcher on 1, 2 and 4 PEs. The examples of
//! `core/capi/examples/` and the C++ `kernel::` cases of `conformance/cann/kernels/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{free_ports, repo, target_dir, temp_dir, text};

/// Compiles `source` as kernel code into `dir` with `extra` flags (and `OSHCC_CXX` from `env`),
/// warnings as errors.
fn compile(source: &str, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let exe = dir.join(
        Path::new(source)
            .file_stem()
            .expect("a file name")
            .to_string_lossy()
            .into_owned(),
    );
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args([
            "-cpu-debug",
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
        ])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(repo().join(source))
        .envs(env.iter().copied())
        .output()
        .expect("aclshmem-c++ runs");
    assert!(out.status.success(), "{source}:\n{}", text(&out));
    exe
}

/// Runs `exe` on `n` PEs under `oshrun` with CANN's ports and `env`; its output, required to
/// succeed.
fn run(exe: &Path, n: u32, env: &[(&str, &str)]) -> String {
    let port = free_ports(17);
    let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", &n.to_string(), "--timeout", "150", "--"])
        .arg(exe)
        .env("CANN_TEST_PORT", port.to_string())
        .env("ALLGATHER_PORT", port.to_string())
        .env(
            "SHMEM_INSTANCE_PORT_RANGE",
            format!("{}:{}", port + 1, port + 16),
        )
        .env("SHMEM_TIMEOUT", "60")
        .envs(env.iter().copied())
        .output()
        .expect("the launcher runs");
    let t = text(&out);
    assert!(out.status.success(), "{} on {n} PEs:\n{t}", exe.display());
    t
}

/// clang++, which the kernel build needs for `__ubuf__` addresses (`.ci/run` installs it).
fn require_clang() {
    let found = Command::new("clang++").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "clang++ is not installed: kernels that dereference UB addresses need it (apt-get install clang)"
    );
}

#[test]
fn the_cpp_allgather_example_verifies_both_data_paths_on_1_2_and_4_pes() {
    require_clang();
    let dir = temp_dir("kernel-allgather");
    let exe = compile("core/capi/examples/allgather_kernel.cpp", &dir, &[], &[]);
    for (n, strict) in [(1, "0"), (2, "0"), (4, "0"), (4, "1")] {
        let t = run(&exe, n, &[("SHMEM_SIM_STRICT", strict)]);
        assert_eq!(t.matches(" verified").count(), 4 * n as usize, "{t}");
        assert!(
            t.contains("on 16 blocks verified") && t.contains("on 8 blocks verified"),
            "{t}"
        );
        assert!(!t.contains("FAILED"), "{t}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_cpp_multi_instance_example_switches_among_three_instances_in_one_launch() {
    let dir = temp_dir("kernel-multi-instance");
    let exe = compile(
        "core/capi/examples/multi_instance_kernel.cpp",
        &dir,
        &[],
        &[],
    );
    let t = run(&exe, 4, &[]);
    assert_eq!(t.matches("every value verified").count(), 4, "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn kernels_build_with_gcc_where_ub_addresses_are_offsets_the_calls_translate() {
    // g++ has no address spaces in C++: `__ubuf__` is empty, UB pointers are offsets that the
    // SHMEM and AscendC calls translate (a raw dereference of one would fault).
    let dir = temp_dir("kernel-gcc");
    let exe = compile(
        "core/capi/examples/multi_instance_kernel.cpp",
        &dir,
        &[],
        &[("OSHCC_CXX", "g++")],
    );
    let t = run(&exe, 2, &[]);
    assert_eq!(t.matches("every value verified").count(), 2, "{t}");
    let api = compile(
        "conformance/cann/kernels/device_api.cpp",
        &dir,
        &[],
        &[("OSHCC_CXX", "g++")],
    );
    let t = run(&api, 2, &[("KERNEL_CASE", "rma")]);
    assert_eq!(t.matches("device API ok").count(), 2, "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cpp_kernel_cases_cover_the_device_api_on_1_2_and_4_pes() {
    require_clang();
    let dir = temp_dir("kernel-device-api");
    let exe = compile("conformance/cann/kernels/device_api.cpp", &dir, &[], &[]);
    for n in [1, 2, 4] {
        let t = run(&exe, n, &[]);
        assert_eq!(
            t.matches("device API ok").count(),
            n as usize,
            "{n} PEs:\n{t}"
        );
        let quiet = "quiet orders 8 blocks' puts before their flags ok";
        assert_eq!(t.matches(quiet).count(), n as usize, "{t}");
        let state = "instance state at its device address and the MTE configuration ok";
        assert_eq!(t.matches(state).count(), n as usize, "{t}");
        for blocks in [1, 8, 48] {
            let line = format!("barrier_all across {blocks} blocks of {n} PEs ok");
            assert_eq!(t.matches(&line).count(), n as usize, "{line}:\n{t}");
        }
        // Each limit ends its launch with one line naming the kernel, the block and the call.
        for want in [
            "kernel too_many_for_sync, block 0: SyncAll: the launch has 49 blocks but the NPU 48 vector cores",
            "kernel bad_pe, block 0: aclshmem_int32_p: PE 99 is not a PE of instance 0",
            "kernel not_symmetric, block 0: aclshmem_int32_p: ",
            "kernel bad_ub, block 0: aclshmemx_mte_put_nbi: 8192 bytes at UB offset 194560 do not fit",
            "kernel bad_event, block 0: aclshmemx_mte_put_nbi: sync_id 9 is not an event id",
            "kernel bad_copy, block 0: DataCopy: DataCopy moves whole 32-byte blocks",
            "kernel host_call, block 0: aclshmem_sync_all: a host call, not a device call",
            "kernel nested, block 0: ICPU_RUN_KF: kernel host_call launched from a kernel",
            "kernel staged, block 0: aclshmemx_set_mte_config: 16384 bytes at UB offset 194560 do not fit",
            // An `_on_stream` host call is a 1-block kernel, reported by the stream's synchronise.
            "kernel aclshmemx_putmem_on_stream, block 0: aclshmemx_set_mte_config: 16384 bytes",
        ] {
            assert_eq!(t.matches(want).count(), n as usize, "{want}:\n{t}");
        }
    }
    // 8 PEs of up to 48 blocks: 384 simulated cores on this machine's CPUs.
    let t = run(&exe, 8, &[("KERNEL_CASE", "barrier")]);
    for blocks in [1, 8, 48] {
        let line = format!("barrier_all across {blocks} blocks of 8 PEs ok");
        assert_eq!(t.matches(&line).count(), 8, "{t}");
    }
    // Under strict mode (transfers held until a quiet or a synchronisation) quiet still orders
    // the puts before the flags.
    for n in [2, 4] {
        let t = run(
            &exe,
            n,
            &[("KERNEL_CASE", "quiet"), ("SHMEM_SIM_STRICT", "1")],
        );
        let line = "quiet orders 8 blocks' puts before their flags ok";
        assert_eq!(t.matches(line).count(), n as usize, "{t}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn in_one_process_a_kernel_dereferences_device_memory_and_host_code_faults_on_it() {
    require_clang();
    let dir = temp_dir("kernel-fault");
    let exe = compile("conformance/cann/kernels/device_api.cpp", &dir, &[], &[]);
    let port = free_ports(1);
    let out = Command::new(env!("CARGO_BIN_EXE_oshrun"))
        .args(["-n", "1", "--timeout", "60", "--"])
        .arg(&exe)
        .env("CANN_TEST_PORT", port.to_string())
        .env("KERNEL_CASE", "fault")
        .env("SHMEM_TIMEOUT", "30")
        .output()
        .expect("the launcher runs");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("PE 0: the kernel dereferenced device memory"),
        "{t}"
    );
    assert!(!t.contains("the host read"), "{t}");
    assert!(t.contains("was killed by signal 11 (SIGSEGV)"), "{t}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn multi_instance_kernels_route_per_block_and_fail_naming_kernel_block_and_call() {
    let dir = temp_dir("kernel-routing");
    let exe = compile("conformance/cann/kernels/routing.cpp", &dir, &[], &[]);
    for n in [1, 2, 4] {
        let t = run(&exe, n, &[]);
        assert_eq!(
            t.matches("instance routing in kernels ok").count(),
            n as usize,
            "{t}"
        );
        assert!(
            t.contains("kernel unselected, block 0: aclshmem_my_pe: no instance is selected: a MULTI_INSTANCE kernel must call aclshmemx_instance_ctx_set(id)"),
            "{t}"
        );
        assert!(
            t.contains("kernel unknown, block 0: aclshmemx_instance_ctx_set: instance 7 is not initialised on this PE"),
            "{t}"
        );
        assert!(
            t.contains("kernel engines, block 0: aclshmemx_sdma_put_nbi: instance 1 did not enable the SDMA engine"),
            "{t}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_multi_instance_the_instance_calls_do_not_compile() {
    let dir = temp_dir("kernel-no-multi");
    for compiler in ["clang++", "g++"] {
        let out = Command::new(target_dir().join("aclshmem-c++"))
            .args(["-cpu-debug", "-c", "-o"])
            .arg(dir.join("k.o"))
            .arg(repo().join("conformance/cann/kernels/no_multi_instance.cpp"))
            .env("OSHCC_CXX", compiler)
            .output()
            .expect("aclshmem-c++ runs");
        let t = text(&out);
        assert!(!out.status.success(), "{compiler} compiled it:\n{t}");
        assert!(
            t.contains("requires macro MULTI_INSTANCE to be defined!"),
            "{compiler}:\n{t}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_wrapper_shows_the_cpu_debug_build() {
    let out = Command::new(target_dir().join("aclshmem-c++"))
        .args(["-cpu-debug", "-show", "k.cpp"])
        .output()
        .expect("aclshmem-c++ runs");
    let t = text(&out);
    for want in [
        "-D__CCE_KT_TEST__=1",
        "-DASCENDC_CPU_DEBUG=1",
        "include/cann/ascendc",
        "-lshmem -lascendcl",
    ] {
        assert!(t.contains(want), "{want}: {t}");
    }
}
