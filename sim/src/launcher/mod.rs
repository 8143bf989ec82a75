//! The job launcher behind `shmemrun`: starts the PEs of a job as child processes, supervises
//! them, and ends the job as a whole.
//!
//! ```no_run
//! use std::time::Duration;
//! use shmem_sim::launcher::{Job, Output};
//!
//! let report = Job::new("/bin/sh")
//!     .args(["-c", "echo hello from PE $SHMEMRUN_PE"])
//!     .n_pes(4)
//!     .timeout(Duration::from_secs(30))
//!     .output(Output::Capture)
//!     .run()?;
//! assert_eq!(report.exit_code, 0);
//! # Ok::<(), shmem_sim::launcher::LaunchError>(())
//! ```
//!
//! # What a job does
//!
//! - Each PE is one process that sees the variables of [`env`](mod@env) (its number, the PE count, the
//!   bootstrap address and, on PE 0, the bootstrap listener, the job secret and id, and the
//!   control pipe). PE 0 inherits the launcher's standard input; the other PEs read from
//!   `/dev/null`.
//! - Every PE gets `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with the launcher. (Linux ties this to
//!   the launcher *thread* that started it: [`Job::run`] reaps every PE before it returns, so the
//!   calling thread outlives its PEs.)
//! - The launcher polls all PEs without blocking on any one of them, and the control pipe. The
//!   job ends early when a PE dies by a signal or exits with a non-zero status, when a PE asks
//!   for `global_exit`, when the timeout passes, or (with [`Job::forward_signals`]) when the
//!   launcher receives SIGINT or SIGTERM. Then it prints one line to standard error that says
//!   what happened, sends SIGTERM (or the forwarded signal) to the PEs still running, SIGKILL
//!   after a grace period ([`Job::kill_grace`], at most 2 s) and reaps them; the whole stop is
//!   over within about 4 s of the event. A PE that exits with 0 while others run is normal. A
//!   non-zero exit becomes the job's cause 50 ms later, unless a PE that died by a signal, or
//!   the PE the bootstrap server reported lost (`lost <pe>` on the control pipe), ends
//!   meanwhile: the PEs that notice a dead peer may exit before its own end is visible.
//! - The job's exit code ([`JobReport::exit_code`]) is the status of the first PE that failed,
//!   in the order the launcher saw them (128 + N for a PE killed by signal N); the status given
//!   to `global_exit`; 124 after a timeout; 128 + N after a forwarded signal N; else 0.
//!
//! Signals go to each PE's process only (PEs stay in the launcher's process group, so a
//! terminal's Ctrl-C reaches them directly too); processes a PE starts itself are its own
//! business.

pub mod cli;
pub mod env;
mod output;
pub use output::stderr_line;
mod program;
mod signals;
mod spawn;
mod supervise;

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// The most PEs one job may have (CANN SHMEM's `ACLSHMEM_MAX_PES`).
pub const MAX_PES: u32 = 16384;

/// The default time between SIGTERM and SIGKILL when the launcher stops PEs.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(1);

/// The longest grace period [`Job::kill_grace`] accepts; longer values are clamped.
pub const MAX_KILL_GRACE: Duration = Duration::from_secs(2);

/// How many bytes of each stream of each PE [`Output::Capture`] keeps by default (the last ones).
pub const DEFAULT_CAPTURE_LIMIT: usize = 1 << 20;

/// The exit code of a job that timed out (as with coreutils `timeout`).
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// Where the PEs' standard output and standard error go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The PEs share the launcher's standard output and standard error.
    #[default]
    Inherit,
    /// Each line a PE writes is forwarded to the launcher's stream of the same kind, prefixed
    /// with `[PE n] `. Lines are forwarded whole (never interleaved with another PE's); a last
    /// line without a newline is completed when the stream ends; a line longer than 64 KiB is
    /// split.
    Tagged,
    /// Both streams of every PE are collected in memory ([`JobReport::outputs`]), keeping the
    /// last [`Job::capture_limit`] bytes of each.
    Capture,
}

/// A job: a program, its arguments, the number of PEs and how to run them.
///
/// Built with chained calls and started with [`Job::run`]; a `Job` can be run several times.
#[derive(Debug, Clone)]
pub struct Job {
    program: OsString,
    args: Vec<OsString>,
    n_pes: u32,
    env: Vec<(OsString, Option<OsString>)>,
    pe_env: Vec<(u32, OsString, OsString)>,
    timeout: Option<Duration>,
    output: Output,
    kill_grace: Duration,
    capture_limit: usize,
    forward_signals: bool,
    quiet: bool,
    keep_going: bool,
}

impl Job {
    /// A job running `program` (looked up in `PATH` like `execvp` when it has no `/`) on one PE,
    /// with no arguments, no timeout and inherited output.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Job {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            n_pes: 1,
            env: Vec::new(),
            pe_env: Vec::new(),
            timeout: None,
            output: Output::Inherit,
            kill_grace: DEFAULT_KILL_GRACE,
            capture_limit: DEFAULT_CAPTURE_LIMIT,
            forward_signals: false,
            quiet: false,
            keep_going: false,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets the number of PEs (1 ..= [`MAX_PES`]; checked by [`Job::run`]).
    pub fn n_pes(mut self, n_pes: u32) -> Self {
        self.n_pes = n_pes;
        self
    }

    /// Sets an environment variable for every PE. The variables of [`env`](mod@env) cannot be set or
    /// removed this way: they are the launcher's alone, and such settings are ignored.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an environment variable for every PE.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// Sets an environment variable for PE `pe` only (applied after [`Job::env`]; the variables
    /// of [`env`](mod@env) are ignored here too).
    pub fn pe_env(mut self, pe: u32, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.pe_env
            .push((pe, key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Stops the job with exit code 124 if it is still running after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Chooses where the PEs' output goes.
    pub fn output(mut self, output: Output) -> Self {
        self.output = output;
        self
    }

    /// Sets the time between SIGTERM and SIGKILL when stopping PEs (default 1 s, at most 2 s).
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace.min(MAX_KILL_GRACE);
        self
    }

    /// Sets how many bytes of each stream [`Output::Capture`] keeps per PE (the last ones).
    pub fn capture_limit(mut self, bytes: usize) -> Self {
        self.capture_limit = bytes;
        self
    }

    /// While the job runs, catch SIGINT and SIGTERM sent to this process, forward them to the
    /// PEs and stop the job (exit code 128 + N). Off by default, since it changes process-wide
    /// signal handlers; `shmemrun` turns it on. The previous handlers are restored when the job
    /// ends, and a signal this process ignores stays ignored.
    pub fn forward_signals(mut self, forward: bool) -> Self {
        self.forward_signals = forward;
        self
    }

    /// Do not print the launcher's own one-line reports to standard error (they are still in
    /// [`JobReport::failure`]).
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.quiet = quiet;
        self
    }

    /// Let the other PEs run on when one dies or fails, instead of stopping them (for tests of
    /// how survivors notice a dead peer). The job's exit code is still the first failure's;
    /// a timeout, a `global_exit` or a forwarded signal still stop everyone.
    pub fn keep_going(mut self, keep_going: bool) -> Self {
        self.keep_going = keep_going;
        self
    }

    /// Whether the other PEs run on after a failure (see [`Job::keep_going`]).
    pub(crate) fn keeps_going(&self) -> bool {
        self.keep_going
    }

    /// Starts the PEs, supervises them until every one has ended, and reports.
    ///
    /// Errors are returned only when the job could not be started (bad configuration, missing
    /// program, no resources); any PE already started is stopped and reaped first. Everything
    /// that happens once the job runs is in the [`JobReport`].
    pub fn run(&self) -> Result<JobReport, LaunchError> {
        supervise::run(self)
    }
}

/// A signal number, shown with its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(pub i32);

impl Signal {
    /// The conventional name (`SIGKILL`), if the number is a standard Linux signal.
    pub fn name(self) -> Option<&'static str> {
        signals::name(self.0)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "signal {} ({name})", self.0),
            None => write!(f, "signal {}", self.0),
        }
    }
}

/// How a process ended, as `waitpid` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this status.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(Signal),
}

impl Termination {
    /// The shell-style exit code: the status, or 128 + N for signal N.
    pub fn exit_code(self) -> i32 {
        match self {
            Termination::Exited(code) => code,
            Termination::Signaled(sig) => 128 + sig.0,
        }
    }

    /// Whether this is a successful exit (status 0).
    pub fn success(self) -> bool {
        self == Termination::Exited(0)
    }
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Termination::Exited(code) => write!(f, "exited with status {code}"),
            Termination::Signaled(sig) => write!(f, "was killed by {sig}"),
        }
    }
}

/// How one PE ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeEnd {
    /// It exited by itself with this status.
    Exited(i32),
    /// It was killed by a signal the launcher did not send.
    Signaled(Signal),
    /// The launcher stopped it (after another PE failed, a `global_exit` or a forwarded
    /// signal); this is how it then ended.
    Stopped(Termination),
    /// The launcher stopped it because the job timed out; this is how it then ended.
    TimedOut(Termination),
    /// Its end could not be observed: it did not go away even after SIGKILL, or its status was
    /// collected by someone else (for example with SIGCHLD ignored). The text says which.
    Lost(String),
}

/// One PE's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeOutcome {
    /// The PE number.
    pub pe: u32,
    /// Its process id.
    pub pid: u32,
    /// How it ended.
    pub end: PeEnd,
}

impl fmt::Display for PeOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PE {} (pid {}) ", self.pe, self.pid)?;
        match &self.end {
            PeEnd::Exited(code) => write!(f, "exited with status {code}"),
            PeEnd::Signaled(sig) => write!(f, "was killed by {sig}"),
            PeEnd::Stopped(how) => write!(f, "was stopped by the launcher ({how})"),
            PeEnd::TimedOut(how) => write!(f, "timed out ({how})"),
            PeEnd::Lost(why) => write!(f, "was lost: {why}"),
        }
    }
}

/// Why the launcher ended a job before all its PEs ended by themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// A PE died by a signal or exited with a non-zero status.
    PeFailed {
        /// The PE.
        pe: u32,
        /// Its process id.
        pid: u32,
        /// How it ended.
        how: Termination,
    },
    /// A PE asked for `global_exit(status)` on the control pipe.
    GlobalExit {
        /// The status asked for.
        status: i32,
        /// The PE that asked, when the request named it.
        pe: Option<u32>,
    },
    /// The timeout passed.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// The launcher received this signal and forwarded it.
    Signal(Signal),
}

impl StopCause {
    /// The job exit code this cause gives.
    pub fn exit_code(&self) -> i32 {
        match self {
            StopCause::PeFailed { how, .. } => how.exit_code(),
            StopCause::GlobalExit { status, .. } => *status,
            StopCause::TimedOut { .. } => TIMEOUT_EXIT_CODE,
            StopCause::Signal(sig) => 128 + sig.0,
        }
    }
}

/// What one PE wrote, in [`Output::Capture`] mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The PE number.
    pub pe: u32,
    /// The last bytes of its standard output.
    pub stdout: Vec<u8>,
    /// The last bytes of its standard error.
    pub stderr: Vec<u8>,
    /// How many earlier bytes of standard output were dropped to respect the limit.
    pub stdout_dropped: u64,
    /// How many earlier bytes of standard error were dropped to respect the limit.
    pub stderr_dropped: u64,
}

impl CapturedOutput {
    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stdout)
    }

    /// Standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.stderr)
    }
}

/// The outcome of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// The job's exit code (see the [module documentation](self)).
    pub exit_code: i32,
    /// Every PE's outcome, indexed by PE number.
    pub pes: Vec<PeOutcome>,
    /// Why the launcher stopped the job, if it did.
    pub cause: Option<StopCause>,
    /// The launcher's one-line account of that (what it printed, without the `shmemrun: `
    /// prefix).
    pub failure: Option<String>,
    /// In [`Output::Capture`] mode, each PE's output (indexed by PE number); else empty.
    pub outputs: Vec<CapturedOutput>,
    /// From the start of the first PE until the last one was reaped.
    pub elapsed: Duration,
    /// From the stop event until the last PE was reaped, if the launcher stopped the job.
    pub stop_duration: Option<Duration>,
    /// The seed of the strict completion mode, when the PEs ran in it: with
    /// `SHMEM_SIM_STRICT_SEED` set to it, a run replays the same choices.
    pub strict_seed: Option<u64>,
}

impl JobReport {
    /// Whether the job succeeded (exit code 0).
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

/// Why a job could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The PE count is zero or above [`MAX_PES`].
    #[error("a job needs between 1 and {MAX_PES} PEs, not {n_pes}")]
    BadPeCount {
        /// The count asked for.
        n_pes: u32,
    },
    /// [`Job::pe_env`] named a PE the job does not have.
    #[error("an environment variable is set for PE {pe}, but the job has only {n_pes} PEs")]
    PeOutOfRange {
        /// The PE named.
        pe: u32,
        /// The PE count.
        n_pes: u32,
    },
    /// The program name is empty.
    #[error("no program to run (empty program name)")]
    EmptyProgram,
    /// The program was not found.
    #[error("program `{}` not found{}", program.display(), searched_note(searched))]
    ProgramNotFound {
        /// The program as given.
        program: PathBuf,
        /// The `PATH` searched, when the name had no `/`.
        searched: Option<OsString>,
    },
    /// The program exists but cannot be executed.
    #[error("program `{}` is not an executable file", path.display())]
    NotExecutable {
        /// The file found.
        path: PathBuf,
    },
    /// Starting a PE failed.
    #[error("cannot start PE {pe} (`{}`): {source}{}", program.display(), limit_hint(source))]
    Spawn {
        /// The PE.
        pe: u32,
        /// The program.
        program: PathBuf,
        /// The error from the system.
        source: io::Error,
    },
    /// Setting up the job (sockets, pipes, signal handlers) failed.
    #[error("cannot set up the job ({what}): {source}")]
    Setup {
        /// What was being set up.
        what: &'static str,
        /// The error from the system.
        source: io::Error,
    },
}

/// The limit that stopped a spawn, if one did, after a colon.
fn limit_hint(source: &io::Error) -> String {
    shmem_backend::tasks_refused(source).map_or_else(String::new, |l| format!(": {l}"))
}

fn searched_note(searched: &Option<OsString>) -> String {
    match searched {
        Some(path) => format!(" in PATH ({})", path.to_string_lossy()),
        None => String::new(),
    }
}

impl LaunchError {
    /// The exit code a command-line launcher should use for this error: 127 for a missing
    /// program, 126 for one that cannot be executed, else 1 (as shells do).
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::ProgramNotFound { .. } => 127,
            LaunchError::NotExecutable { .. } => 126,
            _ => 1,
        }
    }
}
