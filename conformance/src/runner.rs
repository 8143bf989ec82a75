//! The conformance runner: trials for libtest-mimic in the test process, and the PE side in
//! the processes it launches.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use libtest_mimic::{Arguments, Failed, Trial};
use shmem_sim::launcher::{Job, JobReport, Output, PeEnd};

use crate::{Case, Ctx, Expect, Need, Via, cases};

/// The most PEs alive at once across all running trials.
pub const PE_SLOTS: u32 = 8;
/// The variable that tells a launched process which case to run.
pub const CASE_VAR: &str = "SHMEM_CONFORMANCE_CASE";
/// The variable with the trial's port block, `first:count`.
pub const PORTS_VAR: &str = "SHMEM_CONFORMANCE_PORTS";
/// Set to `1` for the full tier.
pub const FULL_VAR: &str = "SHMEM_CONFORMANCE_FULL";
/// The variable naming the backend under test.
pub const BACKEND_VAR: &str = "SHMEM_BACKEND";

/// Environment every trial's PEs get for the backend under test (for `hw`: where the
/// stand-ins are).
static BACKEND_ENV: std::sync::OnceLock<Vec<(&'static str, String)>> = std::sync::OnceLock::new();

/// Why the hw trials cannot run on this machine's devices (`SHMEM_HW_SUITE=devices`).
static NO_DEVICE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The variable that runs the `hw` trials on this machine's NPUs (`devices`) instead of the
/// stand-ins.
pub const HW_SUITE_VAR: &str = "SHMEM_HW_SUITE";

fn on_devices() -> bool {
    std::env::var(HW_SUITE_VAR).is_ok_and(|v| v.trim() == "devices")
}

/// Ports handed out to trials: blocks of `PORT_BLOCK` in `[PORT_BASE, PORT_BASE + PORT_SPAN)`,
/// below Linux's ephemeral range so no client connection can take one.
const PORT_BASE: u16 = 20000;
const PORT_SPAN: u16 = 12000;
const PORT_BLOCK: u16 = 300;

fn full_tier() -> bool {
    matches!(
        std::env::var(FULL_VAR).as_deref(),
        Ok("1" | "true" | "yes" | "on")
    )
}

/// The entry point of a conformance test binary for `backend`.
pub fn main(backend: &'static str) -> ! {
    if let Ok(name) = std::env::var(CASE_VAR) {
        run_pe(&name, backend)
    }
    if backend == "hw" && on_devices() {
        // The vendor's libraries as the environment finds them (CANN's set_env.sh), on the
        // NPUs of this machine; without any, every trial is reported ignored.
        if let Err(why) = crate::stand_ins::devices() {
            eprintln!("conformance: every hw trial is ignored: {why}");
            let _ = NO_DEVICE.set(why);
        }
    } else if backend == "hw" {
        match crate::stand_ins::build() {
            Ok(env) => {
                let _ = BACKEND_ENV.set(env);
            }
            Err(e) => {
                eprintln!("conformance: {e}");
                std::process::exit(1)
            }
        }
    }
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(4);
    }
    libtest_mimic::run(&args, trials(backend)).exit()
}

/// Runs case `name` on this PE and exits: 0 on success, 1 on a failed check, 101 on a panic.
fn run_pe(name: &str, backend: &'static str) -> ! {
    let Some(case) = cases::all().into_iter().find(|c| c.name == name) else {
        eprintln!("no conformance case named {name}");
        std::process::exit(2)
    };
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u32>().ok());
    let ids = [
        ("SHMEMRUN_PE", "SHMEMRUN_NPES"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ];
    let Some((pe, n)) = ids.iter().find_map(|(r, s)| Some((var(r)?, var(s)?))) else {
        eprintln!("a conformance PE must be started by a launcher (shmemrun or mpirun)");
        std::process::exit(2)
    };
    let ports = std::env::var(PORTS_VAR)
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((PORT_BASE, PORT_BLOCK));
    let ctx = Ctx::new(pe, n, backend, full_tier(), ports);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (case.run)(&ctx)));
    use std::io::Write;
    let _ = std::io::stdout().flush();
    match result {
        Ok(Ok(())) => std::process::exit(0),
        Ok(Err(f)) => {
            eprintln!("PE {pe}/{n}: {f}");
            std::process::exit(1)
        }
        Err(_) => {
            eprintln!("PE {pe}/{n}: the case panicked");
            std::process::exit(101)
        }
    }
}

/// Every trial of the suite for `backend`.
pub fn trials(backend: &'static str) -> Vec<Trial> {
    let full = full_tier();
    let mut out = Vec::new();
    for case in cases::all() {
        let mut counts: Vec<u32> = case.pes.to_vec();
        if full {
            counts.extend(
                case.full_pes
                    .iter()
                    .copied()
                    .filter(|n| !case.pes.contains(n)),
            );
        }
        for n in counts {
            let name = format!("{}::pes{n}", case.name);
            // A trial that cannot run here is ignored, never passed, and says why.
            let missing = if let Some(why) = NO_DEVICE.get().filter(|_| backend == "hw") {
                Some(why.as_str())
            } else if let Some(why) = case.needs.iter().find_map(|n| n.missing_on(backend)) {
                Some(why)
            } else if case.needs_ipv6 && !has_ipv6_loopback() {
                Some("this host has no IPv6 loopback address")
            } else if case.via == Via::Mpirun && mpirun().is_none() {
                Some("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
            } else {
                None
            };
            let trial = match (missing, case.via) {
                (Some(why), _) => {
                    eprintln!("conformance: {name} is ignored: {why}");
                    Trial::test(name, || Ok(())).with_ignored_flag(true)
                }
                (None, Via::Shmemrun) => Trial::test(name, move || run_trial(case, n, backend)),
                (None, Via::Mpirun) => {
                    let m = mpirun().expect("checked above");
                    Trial::test(name, move || run_mpirun_trial(case, n, backend, &m))
                }
            };
            out.push(trial.with_kind(backend));
        }
    }
    out
}

/// Whether this host can listen on the IPv6 loopback address.
fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

/// Counting semaphore over PE slots.
struct Slots {
    free: Mutex<u32>,
    cv: Condvar,
}

static SLOTS: Slots = Slots {
    free: Mutex::new(PE_SLOTS),
    cv: Condvar::new(),
};

struct SlotGuard(u32);

impl Slots {
    fn acquire(&'static self, n: u32) -> SlotGuard {
        let n = n.min(PE_SLOTS);
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free < n {
            free = self.cv.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= n;
        SlotGuard(n)
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        *SLOTS.free.lock().unwrap_or_else(|p| p.into_inner()) += self.0;
        SLOTS.cv.notify_all();
    }
}

/// The port blocks of running trials. A block is lent to one trial at a time, and a returned
/// block goes to the back of the line, so a listener still closing on it (or a straggling
/// client) never meets the next trial that uses it.
struct PortBlocks {
    /// Blocks not lent out, in the order they are handed out.
    free: Mutex<std::collections::VecDeque<u16>>,
}

static PORT_BLOCKS: PortBlocks = PortBlocks {
    free: Mutex::new(std::collections::VecDeque::new()),
};

/// A block of ports lent to one trial; returned when dropped.
struct PortLease(u16);

impl PortLease {
    fn range(&self) -> (u16, u16) {
        (self.0, PORT_BLOCK)
    }
}

impl Drop for PortLease {
    fn drop(&mut self) {
        let mut free = PORT_BLOCKS.free.lock().unwrap_or_else(|p| p.into_inner());
        free.push_back(self.0);
    }
}

/// Lends a free block: never one another running trial of this suite holds (there are more
/// blocks than trials can run at once, [`PE_SLOTS`]), and preferably one whose probe ports are
/// free, in case another program (another suite) listens there.
fn next_ports() -> PortLease {
    let mut free = PORT_BLOCKS.free.lock().unwrap_or_else(|p| p.into_inner());
    if free.is_empty() {
        let blocks = PORT_SPAN / PORT_BLOCK;
        // Start at an offset from the process id, so two suites started at once begin apart.
        let first = std::process::id() as u16 % blocks;
        free.extend((0..blocks).map(|k| PORT_BASE + (first + k) % blocks * PORT_BLOCK));
    }
    let probe = |base: u16| {
        [0, 1, 2, 255]
            .iter()
            .all(|d| std::net::TcpListener::bind(("127.0.0.1", base + d)).is_ok())
    };
    let pick = (0..free.len()).find(|&i| probe(free[i])).unwrap_or(0);
    PortLease(
        free.remove(pick)
            .expect("more port blocks than trials running at once"),
    )
}

fn run_trial(case: Case, n: u32, backend: &'static str) -> Result<(), Failed> {
    let _slots = SLOTS.acquire(n);
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let lease = next_ports();
    let (first, count) = lease.range();
    let mut job = Job::new(&exe)
        .n_pes(n)
        .env(CASE_VAR, case.name)
        .env(PORTS_VAR, format!("{first}:{count}"))
        .env(BACKEND_VAR, backend)
        .env("SHMEM_SIM_STRICT", if case.strict { "1" } else { "0" })
        .env("SHMEM_TIMEOUT", "30")
        .env("RUST_BACKTRACE", "1")
        .timeout(Duration::from_secs(case.timeout_secs))
        .output(Output::Capture)
        .quiet(true);
    for (k, v) in BACKEND_ENV.get().into_iter().flatten() {
        job = job.env(k, v);
    }
    for (k, v) in case.env {
        job = job.env(k, v);
    }
    if case.needs.contains(&Need::CLibrary) {
        job = job.env(
            crate::cases::C_LIBRARY_VAR,
            crate::libraries::c_library_dir()?.join("libshmem.so"),
        );
    }
    if let Expect::PeKilled { .. } = case.expect {
        job = job.keep_going(true);
    }
    let report = job
        .run()
        .map_err(|e| format!("could not launch the trial: {e}"))?;
    judge(&case, &report).map_err(|why| Failed::from(describe(&why, &report)))
}

fn judge(case: &Case, report: &JobReport) -> Result<(), String> {
    match case.expect {
        Expect::AllPass => {
            if report.success() && report.pes.iter().all(|p| p.end == PeEnd::Exited(0)) {
                Ok(())
            } else {
                Err(report
                    .failure
                    .clone()
                    .unwrap_or_else(|| format!("the job exited with {}", report.exit_code)))
            }
        }
        Expect::PeKilled { pe } => {
            for p in &report.pes {
                let ok = if p.pe == pe {
                    matches!(p.end, PeEnd::Signaled(s) if s.0 == 9)
                } else {
                    p.end == PeEnd::Exited(0)
                };
                if !ok {
                    return Err(format!(
                        "expected PE {pe} killed by SIGKILL and the others to exit 0; {p}"
                    ));
                }
            }
            Ok(())
        }
    }
}

fn describe(why: &str, report: &JobReport) -> String {
    let mut s = format!("{why}\n");
    if let Some(seed) = report.strict_seed {
        s.push_str(&format!(
            "  strict completion mode: replay with SHMEM_SIM_STRICT_SEED={seed}\n"
        ));
    }
    for p in &report.pes {
        s.push_str(&format!("  {p}\n"));
    }
    for o in &report.outputs {
        let failed = report
            .pes
            .get(o.pe as usize)
            .is_none_or(|p| !matches!(p.end, PeEnd::Exited(0)));
        if !failed && report.outputs.len() > 1 {
            continue;
        }
        for (name, text) in [("stdout", o.stdout_text()), ("stderr", o.stderr_text())] {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                continue;
            }
            s.push_str(&format!("  --- PE {} {name} (last lines) ---\n", o.pe));
            for l in &lines[lines.len().saturating_sub(40)..] {
                s.push_str(&format!("  {l}\n"));
            }
        }
    }
    s
}

/// Open MPI's `mpirun`, by absolute path (installing Open MPI also installs an `oshrun` and
/// other tools whose names clash with ours, so nothing is taken from `PATH`).
fn mpirun() -> Option<std::path::PathBuf> {
    [
        "/usr/bin/mpirun",
        "/usr/local/bin/mpirun",
        "/opt/openmpi/bin/mpirun",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|p| p.is_file())
}

/// Runs a trial under `mpirun -np n`, with the watchdog of the case.
fn run_mpirun_trial(
    case: Case,
    n: u32,
    backend: &'static str,
    mpirun: &std::path::Path,
) -> Result<(), Failed> {
    use std::process::{Command, Stdio};
    let _slots = SLOTS.acquire(n);
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
    let lease = next_ports();
    let (first, count) = lease.range();
    let mut cmd = Command::new(mpirun);
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &n.to_string(),
    ])
    .arg(&exe)
    .env(CASE_VAR, case.name)
    .env(PORTS_VAR, format!("{first}:{count}"))
    .env(BACKEND_VAR, backend)
    .env("SHMEM_SIM_STRICT", if case.strict { "1" } else { "0" })
    .env("SHMEM_TIMEOUT", "30")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for v in shmem_sim::launcher::env::ALL {
        cmd.env_remove(v);
    }
    for (k, v) in BACKEND_ENV.get().into_iter().flatten() {
        cmd.env(k, v);
    }
    for (k, v) in case.env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", mpirun.display()))?;
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = done_tx.send(());
        out
    });
    let timed_out = done_rx
        .recv_timeout(Duration::from_secs(case.timeout_secs))
        .is_err();
    if timed_out && let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        // mpirun stops its ranks when it is terminated.
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let out = waiter
        .join()
        .map_err(|_| "the mpirun waiter panicked")?
        .map_err(|e| format!("waiting for mpirun: {e}"))?;
    if !timed_out && out.status.success() {
        return Ok(());
    }
    let mut msg = if timed_out {
        format!("mpirun timed out after {} s", case.timeout_secs)
    } else {
        format!("mpirun exited with {}", out.status)
    };
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(text);
        let lines: Vec<&str> = text.lines().collect();
        if !lines.is_empty() {
            msg.push_str(&format!("\n  --- {name} (last lines) ---\n"));
            for l in &lines[lines.len().saturating_sub(40)..] {
                msg.push_str(&format!("  {l}\n"));
            }
        }
    }
    Err(msg.into())
}
