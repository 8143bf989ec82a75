//! Setting up a job, and the supervision loop that runs it to its end.
//!
//! The loop never blocks on one PE: each round it reads the control pipe, collects the status
//! of every PE that has ended (`waitpid` with `WNOHANG`, once a `waitid` that leaves the child
//! unreaped says one has), checks the timeout, the stop deadlines
//! and the forwarded signals, and then sleeps in `poll` for at most [`TICK`] on the control
//! pipe, the signal self-pipe and the PEs' output pipes.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::pipe::PipeFlags;
use rustix::process::{Pid, Resource, Signal as RxSignal};

use super::env::{self, Control, ExitRequest, SECRET_BYTES};
use super::output::{self, Kind, Sink, Stream};
use super::signals::Forwarding;
use super::spawn::{self, Shared};
use super::{
    Job, JobReport, LaunchError, MAX_PES, Output, PeEnd, PeOutcome, Signal, StopCause, Termination,
    program,
};

/// The longest sleep of one supervision round (also the latency of noticing a PE's end).
const TICK: Duration = Duration::from_millis(5);
/// How long a PE's non-zero exit waits to become the job's cause, in case a PE that died by a
/// signal shows up meanwhile: survivors that noticed a dead peer through the bootstrap can exit
/// before the dead PE's own end is visible (its sockets close before it becomes a zombie).
const SETTLE: Duration = Duration::from_millis(50);
/// How long to wait for PEs to go away after SIGKILL before giving up on them.
const REAP_AFTER_KILL: Duration = Duration::from_secs(2);
/// How long to keep reading output after the last PE was reaped (a PE's own children may still
/// hold its pipes).
const OUTPUT_DRAIN: Duration = Duration::from_millis(100);
/// A control request longer than this is garbage.
const MAX_CONTROL_LINE: usize = 256;
/// At most this many PE numbers are listed in a message.
const MAX_LISTED: usize = 32;

fn setup(what: &'static str) -> impl FnOnce(io::Error) -> LaunchError {
    move |source| LaunchError::Setup { what, source }
}

/// Runs `job` to its end (see [`Job::run`]).
pub(super) fn run(job: &Job) -> Result<JobReport, LaunchError> {
    if job.n_pes == 0 || job.n_pes > MAX_PES {
        return Err(LaunchError::BadPeCount { n_pes: job.n_pes });
    }
    if let Some(&(pe, _, _)) = job.pe_env.iter().find(|(pe, _, _)| *pe >= job.n_pes) {
        return Err(LaunchError::PeOutOfRange {
            pe,
            n_pes: job.n_pes,
        });
    }
    let program = program::resolve(&job.program, job_path(job).as_deref())?;

    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(setup("binding the bootstrap socket"))?;
    let addr = listener
        .local_addr()
        .map_err(setup("binding the bootstrap socket"))?;
    let bootstrap_fd = spawn::above_stdio(OwnedFd::from(listener))
        .map_err(setup("binding the bootstrap socket"))?;
    let (control_r, control_w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)
        .map_err(|e| setup("creating the control pipe")(e.into()))?;
    let control_r = spawn::above_stdio(control_r).map_err(setup("creating the control pipe"))?;
    let control_w = spawn::above_stdio(control_w).map_err(setup("creating the control pipe"))?;
    rustix::io::ioctl_fionbio(&control_r, true)
        .map_err(|e| setup("creating the control pipe")(e.into()))?;

    let secret: [u8; SECRET_BYTES] = rand::random();
    let job_id = format!(
        "{}-{:08x}",
        rustix::process::getpid().as_raw_nonzero(),
        rand::random::<u32>()
    );
    raise_fd_limit(job);
    let signals = if job.forward_signals {
        Forwarding::install().map_err(setup("installing the SIGINT/SIGTERM handlers"))?
    } else {
        None
    };

    let strict = spawn::strict_seed(job);
    let shared = Shared {
        strict_seed: strict.filter(|&(_, picked)| picked).map(|(seed, _)| seed),
        cpus: crate::settings::usable_cpus(),
        job,
        program: &program,
        bootstrap_url: format!("{}{addr}", env::BOOTSTRAP_SCHEME),
        secret_hex: env::encode_secret(&secret),
        job_id,
        control_w: control_w.as_fd(),
        bootstrap_fd: bootstrap_fd.as_fd(),
    };
    let start = Instant::now();
    let mut pes: Vec<Pe> = Vec::with_capacity(job.n_pes as usize);
    let mut streams = Vec::new();
    for pe in 0..job.n_pes {
        let started = match spawn::spawn_pe(&shared, pe) {
            Ok(started) => started,
            Err(e) => {
                abort(&mut pes);
                return Err(e);
            }
        };
        pes.push(Pe {
            pe,
            pid: started.child.id(),
            child: started.child,
            end: None,
            signalled: false,
        });
        for (kind, fd) in [
            (Kind::Stdout, started.stdout),
            (Kind::Stderr, started.stderr),
        ] {
            let Some(fd) = fd else { continue };
            match Stream::new(pe, kind, fd, job.capture_limit) {
                Ok(stream) => streams.push(stream),
                Err(e) => {
                    abort(&mut pes);
                    return Err(setup("reading the PEs' output")(e));
                }
            }
        }
    }
    // The PEs hold their copies now; the launcher keeps only the control pipe's read end.
    drop(shared);
    drop(control_w);
    drop(bootstrap_fd);

    let supervisor = Supervisor {
        job,
        pes,
        streams,
        control: Some(control_r),
        control_buf: Vec::new(),
        signals,
        sink: Sink::default(),
        start,
        deadline: job.timeout.map(|t| start + t),
        stopping: None,
        failure: None,
        first_failure: None,
        held: None,
        lost: None,
    };
    let mut report = supervisor.supervise();
    report.strict_seed = strict.map(|(seed, _)| seed);
    if let Some((seed, _)) = strict
        && !report.success()
    {
        // A failure in strict mode may depend on the order it chose: name the seed.
        tracing::error!("the job ran in strict mode with SHMEM_SIM_STRICT_SEED={seed}");
        if !job.quiet {
            super::stderr_line(format_args!(
                "shmemrun: ERROR the job ran in strict completion mode; replay its order with SHMEM_SIM_STRICT_SEED={seed}"
            ));
        }
    }
    Ok(report)
}

/// The `PATH` the PEs will see (the job's setting, else the launcher's).
fn job_path(job: &Job) -> Option<OsString> {
    match job.env.iter().rev().find(|(key, _)| key == "PATH") {
        Some((_, value)) => value.clone(),
        None => std::env::var_os("PATH"),
    }
}

/// Raises the soft descriptor limit if the output pipes of many PEs need it.
fn raise_fd_limit(job: &Job) {
    let per_pe = if job.output == Output::Inherit { 0 } else { 2 };
    let needed = u64::from(job.n_pes) * per_pe + 64;
    let limit = rustix::process::getrlimit(Resource::Nofile);
    if let Some(current) = limit.current
        && current < needed
    {
        let wanted = limit.maximum.map_or(needed, |max| needed.min(max));
        let raised = rustix::process::Rlimit {
            current: Some(wanted),
            maximum: limit.maximum,
        };
        if let Err(e) = rustix::process::setrlimit(Resource::Nofile, raised) {
            tracing::debug!("could not raise the descriptor limit to {wanted}: {e}");
        }
    }
}

/// Kills and reaps the PEs started so far (when a later one could not be started).
fn abort(pes: &mut [Pe]) {
    for pe in pes.iter_mut() {
        let _ = pe.child.kill();
    }
    for pe in pes.iter_mut() {
        // SIGKILL was sent: this wait is short.
        let _ = pe.child.wait();
    }
}

/// One PE under supervision.
#[derive(Debug)]
struct Pe {
    pe: u32,
    pid: u32,
    child: Child,
    /// How it ended, once reaped.
    end: Option<PeEnd>,
    /// The launcher sent it a signal to stop it. (A PE that named itself in a `global_exit`
    /// request gets no SIGTERM, only SIGKILL if it has not exited by the end of the grace.)
    signalled: bool,
}

/// A stop in progress.
#[derive(Debug)]
struct Stopping {
    cause: StopCause,
    at: Instant,
    kill_at: Instant,
    give_up_at: Instant,
    killed: bool,
}

#[derive(Debug)]
struct Supervisor<'a> {
    job: &'a Job,
    pes: Vec<Pe>,
    streams: Vec<Stream>,
    control: Option<OwnedFd>,
    control_buf: Vec<u8>,
    signals: Option<Forwarding>,
    sink: Sink,
    start: Instant,
    deadline: Option<Instant>,
    stopping: Option<Stopping>,
    failure: Option<String>,
    /// With `keep_going`: the first PE that failed, which did not stop the job.
    first_failure: Option<(u32, u32, Termination)>,
    /// A PE's non-zero exit, held for [`SETTLE`] before it stops the job (until then).
    held: Option<((u32, u32, Termination), Instant)>,
    /// The first PE the bootstrap server reported lost (`lost <pe>` on the control pipe).
    lost: Option<u32>,
}

impl Supervisor<'_> {
    fn supervise(mut self) -> JobReport {
        let mut buf = vec![0u8; 64 * 1024];
        let mut gave_up = false;
        loop {
            self.read_control();
            self.reap();
            if self.pes.iter().all(|p| p.end.is_some()) {
                break;
            }
            let now = Instant::now();
            if let Some(sig) = self.signals.as_ref().and_then(Forwarding::take) {
                self.on_signal(sig, now);
            }
            if let (None, Some(deadline), Some(after)) =
                (&self.stopping, self.deadline, self.job.timeout)
                && now >= deadline
            {
                self.begin_stop(StopCause::TimedOut { after }, now);
            }
            if let Some((killed, kill_at, give_up_at)) = self
                .stopping
                .as_ref()
                .map(|s| (s.killed, s.kill_at, s.give_up_at))
            {
                if !killed && now >= kill_at {
                    self.kill_remaining();
                }
                if now >= give_up_at {
                    gave_up = true;
                    break;
                }
            }
            self.wait_for_events(now, &mut buf);
        }
        let reaped_at = Instant::now();
        if gave_up {
            for pe in self.pes.iter_mut().filter(|p| p.end.is_none()) {
                pe.end = Some(PeEnd::Lost(format!(
                    "still present {} s after SIGKILL",
                    REAP_AFTER_KILL.as_secs()
                )));
            }
        }
        self.drain_output(&mut buf);
        self.report(reaped_at)
    }

    /// Reads and acts on requests from the control pipe.
    fn read_control(&mut self) {
        let mut chunk = [0u8; 512];
        while let Some(fd) = &self.control {
            match rustix::io::read(fd, &mut chunk) {
                Ok(0) => self.control = None,
                Ok(n) => self.control_buf.extend_from_slice(&chunk[..n]),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(e) => {
                    tracing::warn!("reading the control pipe failed: {e}");
                    self.control = None;
                }
            }
        }
        while let Some(end) = self.control_buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.control_buf.drain(..=end).collect();
            match env::parse_control_line(&line[..end]) {
                Ok(Control::Exit(request)) => self.on_exit_request(request),
                Ok(Control::Lost(pe)) => {
                    self.lost.get_or_insert(pe);
                }
                Err(why) => self.say(&format!("ignoring a request on the control pipe: {why}")),
            }
        }
        if self.control_buf.len() > MAX_CONTROL_LINE {
            self.say("ignoring an overlong request on the control pipe");
            self.control_buf.clear();
        }
    }

    fn on_exit_request(&mut self, request: ExitRequest) {
        if self.stopping.is_some() {
            tracing::debug!(
                ?request,
                "global_exit request while already stopping: ignored"
            );
            return;
        }
        let pe = request.pe.filter(|&pe| pe < self.job.n_pes);
        let cause = StopCause::GlobalExit {
            status: request.status,
            pe,
        };
        self.begin_stop(cause, Instant::now());
    }

    /// Collects the status of every PE that has ended; the first failure stops the job.
    fn reap(&mut self) {
        let mut failed = None;
        let mut any = false;
        // One `waitid` that reaps nothing tells whether any child has ended; only then does
        // each running PE get its own `waitpid` (at 1,024 PEs those were 1,024 system calls
        // every round, a fifth of a CPU taken from the PEs).
        let ended = rustix::process::waitid(
            rustix::process::WaitId::All,
            rustix::process::WaitIdOptions::EXITED
                | rustix::process::WaitIdOptions::NOHANG
                | rustix::process::WaitIdOptions::NOWAIT,
        );
        let check_each = !matches!(ended, Ok(None));
        for p in self
            .pes
            .iter_mut()
            .filter(|p| check_each && p.end.is_none())
        {
            match p.child.try_wait() {
                Ok(None) => {}
                Ok(Some(status)) => {
                    any = true;
                    let how = termination(status);
                    p.end = Some(match (&self.stopping, p.signalled, how) {
                        (Some(stop), true, how)
                            if matches!(stop.cause, StopCause::TimedOut { .. }) =>
                        {
                            PeEnd::TimedOut(how)
                        }
                        (_, true, how) => PeEnd::Stopped(how),
                        (_, false, Termination::Exited(code)) => PeEnd::Exited(code),
                        (_, false, Termination::Signaled(sig)) => PeEnd::Signaled(sig),
                    });
                    // Of the failures seen in one pass (their order is unknown), a death by
                    // signal is the likelier cause: PEs that exit non-zero at the same moment
                    // are usually reacting to it (they noticed the dead peer).
                    let signalled = matches!(how, Termination::Signaled(_));
                    let better = match failed {
                        None => !how.success(),
                        Some((_, _, Termination::Exited(_))) => signalled,
                        Some(_) => false,
                    };
                    if better {
                        failed = Some((p.pe, p.pid, how));
                    }
                }
                Err(e) => {
                    any = true;
                    p.end = Some(PeEnd::Lost(format!("waitpid failed: {e}")));
                }
            }
        }
        if any && self.stopping.is_none() {
            // A PE that asked for global_exit and then exited wrote its request before its
            // exit became visible: read it now, so the cause is the request.
            self.read_control();
        }
        if let (None, Some((pe, pid, how))) = (&self.stopping, failed) {
            if self.job.keeps_going() {
                if self.first_failure.is_none() {
                    self.first_failure = Some((pe, pid, how));
                    self.say(&format!(
                        "PE {pe} (pid {pid}) {how}; the other PEs keep running"
                    ));
                }
            } else if matches!(how, Termination::Signaled(_)) {
                self.held = None;
                self.begin_stop(StopCause::PeFailed { pe, pid, how }, Instant::now());
            } else if self.held.is_none() {
                self.held = Some(((pe, pid, how), Instant::now() + SETTLE));
            }
        }
        let all_ended = self.pes.iter().all(|p| p.end.is_some());
        if let (None, Some((held, until))) = (&self.stopping, self.held) {
            // The PE the bootstrap server saw go first is the cause once its end is visible.
            let lost = self
                .lost
                .and_then(|l| self.pes.get(l as usize))
                .and_then(|p| match p.end {
                    Some(PeEnd::Exited(c)) if c != 0 => Some((p.pe, p.pid, Termination::Exited(c))),
                    _ => None,
                });
            if let Some((pe, pid, how)) =
                lost.or_else(|| (all_ended || Instant::now() >= until).then_some(held))
            {
                self.held = None;
                self.begin_stop(StopCause::PeFailed { pe, pid, how }, Instant::now());
            }
        }
    }

    fn on_signal(&mut self, sig: i32, now: Instant) {
        if self.stopping.is_none() {
            self.begin_stop(StopCause::Signal(Signal(sig)), now);
        } else if let Some(stop) = &mut self.stopping {
            // A second signal while stopping: do not wait for the grace period.
            stop.kill_at = now;
        }
    }

    /// Announces the stop, signals the PEs still running and sets the deadlines.
    fn begin_stop(&mut self, cause: StopCause, now: Instant) {
        let running: Vec<u32> = self
            .pes
            .iter()
            .filter(|p| p.end.is_none())
            .map(|p| p.pe)
            .collect();
        let exempt = match cause {
            StopCause::GlobalExit { pe, .. } => pe,
            _ => None,
        };
        let others = running.iter().filter(|&&pe| Some(pe) != exempt).count();
        let message = describe(&cause, &running, others);
        self.say(&message);
        self.failure = Some(message);

        let sig = match cause {
            StopCause::Signal(Signal(sig)) => {
                RxSignal::from_named_raw(sig).unwrap_or(RxSignal::TERM)
            }
            _ => RxSignal::TERM,
        };
        for p in self.pes.iter_mut().filter(|p| p.end.is_none()) {
            if Some(p.pe) == exempt {
                continue;
            }
            send(p, sig);
            p.signalled = true;
        }
        let kill_at = now + self.job.kill_grace;
        self.stopping = Some(Stopping {
            cause,
            at: now,
            kill_at,
            give_up_at: kill_at + REAP_AFTER_KILL,
            killed: false,
        });
    }

    fn kill_remaining(&mut self) {
        for p in self.pes.iter_mut().filter(|p| p.end.is_none()) {
            tracing::info!(
                pe = p.pe,
                pid = p.pid,
                "still running after the grace period: SIGKILL"
            );
            send(p, RxSignal::KILL);
            p.signalled = true;
        }
        if let Some(stop) = &mut self.stopping {
            stop.killed = true;
        }
    }

    /// Sleeps until something happens or the next deadline, at most one [`TICK`]; forwards or
    /// keeps the output that arrived.
    fn wait_for_events(&mut self, now: Instant, buf: &mut [u8]) {
        let mut wake = now + TICK;
        if let Some(stop) = &self.stopping {
            wake = wake.min(if stop.killed {
                stop.give_up_at
            } else {
                stop.kill_at
            });
        } else if let Some(deadline) = self.deadline {
            wake = wake.min(deadline);
        }
        if let Some((_, until)) = self.held {
            wake = wake.min(until);
        }
        let ready = self.poll(wake.saturating_duration_since(now), true);
        let mode = self.job.output;
        for index in ready {
            self.streams[index].pump(mode, &mut self.sink, buf);
        }
    }

    /// Polls the control pipe, the signal pipe (if `all`) and the open output streams; returns
    /// the indices of the streams that are ready.
    fn poll(&self, timeout: Duration, all: bool) -> Vec<usize> {
        let mut fds = Vec::with_capacity(self.streams.len() + 2);
        let mut owners = Vec::with_capacity(self.streams.len() + 2);
        if all {
            if let Some(fd) = &self.control {
                fds.push(PollFd::from_borrowed_fd(fd.as_fd(), PollFlags::IN));
                owners.push(None);
            }
            if let Some(signals) = &self.signals {
                fds.push(PollFd::from_borrowed_fd(signals.wake_fd(), PollFlags::IN));
                owners.push(None);
            }
        }
        for (index, stream) in self.streams.iter().enumerate() {
            if let Some(fd) = stream.fd() {
                fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                owners.push(Some(index));
            }
        }
        let timeout = Timespec::try_from(timeout).unwrap_or(Timespec {
            tv_sec: 0,
            tv_nsec: 5_000_000,
        });
        if fds.is_empty() {
            std::thread::sleep(Duration::try_from(timeout).unwrap_or(TICK));
            return Vec::new();
        }
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) => {}
            Err(Errno::INTR) => return Vec::new(),
            Err(e) => {
                tracing::warn!("poll failed: {e}");
                std::thread::sleep(TICK);
                return Vec::new();
            }
        }
        fds.iter()
            .zip(owners)
            .filter(|(fd, _)| !fd.revents().is_empty())
            .filter_map(|(_, owner)| owner)
            .collect()
    }

    /// After the last PE was reaped: reads what is left in the output pipes, for a short while.
    fn drain_output(&mut self, buf: &mut [u8]) {
        let mode = self.job.output;
        let until = Instant::now() + OUTPUT_DRAIN;
        while self.streams.iter().any(Stream::is_open) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            for index in self.poll(until - now, false) {
                self.streams[index].pump(mode, &mut self.sink, buf);
            }
        }
        for stream in &mut self.streams {
            stream.close(mode, &mut self.sink);
        }
    }

    fn report(mut self, reaped_at: Instant) -> JobReport {
        let pes: Vec<PeOutcome> = self
            .pes
            .iter_mut()
            .map(|p| PeOutcome {
                pe: p.pe,
                pid: p.pid,
                end: p
                    .end
                    .take()
                    .unwrap_or_else(|| PeEnd::Lost("never reaped".into())),
            })
            .collect();
        let mut exit_code = match (&self.stopping, self.first_failure) {
            (Some(s), _) => s.cause.exit_code(),
            (None, Some((_, _, how))) => how.exit_code(),
            (None, None) => 0,
        };
        if self.stopping.is_none()
            && let Some((pe, pid, how)) = self.first_failure
        {
            self.failure = Some(format!("PE {pe} (pid {pid}) {how}"));
        }
        if self.stopping.is_none()
            && let Some(lost) = pes.iter().find(|p| matches!(p.end, PeEnd::Lost(_)))
        {
            let message = lost.to_string();
            self.say(&message);
            self.failure = Some(message);
            exit_code = 1;
        }
        let outputs = if self.job.output == Output::Capture {
            output::collect(&self.streams, self.job.n_pes)
        } else {
            Vec::new()
        };
        JobReport {
            exit_code,
            pes,
            cause: self.stopping.as_ref().map(|s| s.cause.clone()),
            failure: self.failure.take(),
            outputs,
            elapsed: reaped_at.saturating_duration_since(self.start),
            stop_duration: self
                .stopping
                .as_ref()
                .map(|s| reaped_at.saturating_duration_since(s.at)),
            strict_seed: None,
        }
    }

    /// Prints one line of the launcher's own to standard error (unless quiet).
    fn say(&self, message: &str) {
        tracing::info!("{message}");
        if !self.job.quiet {
            super::stderr_line(format_args!("shmemrun: {message}"));
        }
    }
}

fn termination(status: ExitStatus) -> Termination {
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(sig)) => Termination::Signaled(Signal(sig)),
        // Neither exited nor signalled cannot be a final status; report it as a failure.
        (None, None) => Termination::Exited(status.into_raw()),
    }
}

fn send(pe: &Pe, sig: RxSignal) {
    // The PE is not reaped yet, so its pid cannot have been reused.
    let Some(pid) = i32::try_from(pe.pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    if let Err(e) = rustix::process::kill_process(pid, sig) {
        tracing::debug!(pe = pe.pe, pid = pe.pid, "sending {sig:?} failed: {e}");
    }
}

/// The launcher's one-line account of a stop.
fn describe(cause: &StopCause, running: &[u32], others: usize) -> String {
    let stopping_others = match others {
        0 => "no other PE is running".to_owned(),
        1 => "stopping the other PE".to_owned(),
        n => format!("stopping the other {n} PEs"),
    };
    match cause {
        StopCause::PeFailed { pe, pid, how } => {
            format!("PE {pe} (pid {pid}) {how}; {stopping_others}")
        }
        StopCause::GlobalExit {
            status,
            pe: Some(pe),
        } => format!("PE {pe} called global_exit({status}); {stopping_others}"),
        StopCause::GlobalExit { status, pe: None } => format!(
            "global_exit({status}) was requested on the control pipe; {}",
            match others {
                0 => "no PE is running".to_owned(),
                n => format!(
                    "stopping the {n} running PE{}",
                    if n == 1 { "" } else { "s" }
                ),
            }
        ),
        StopCause::TimedOut { after } => format!(
            "timed out after {}; PEs still running: {}",
            seconds(*after),
            list(running)
        ),
        StopCause::Signal(sig) => {
            let name = sig.name().map_or_else(|| sig.to_string(), str::to_owned);
            format!(
                "received {name}; forwarding it to the {} running PE{} and stopping them",
                running.len(),
                if running.len() == 1 { "" } else { "s" }
            )
        }
    }
}

/// `30 s`, `0.25 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        let text = format!("{:.3}", d.as_secs_f64());
        format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// `0, 3, 5` (shortened after [`MAX_LISTED`] entries).
fn list(pes: &[u32]) -> String {
    if pes.is_empty() {
        return "none".to_owned();
    }
    let mut text = String::new();
    for (i, pe) in pes.iter().take(MAX_LISTED).enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let _ = write!(text, "{pe}");
    }
    if pes.len() > MAX_LISTED {
        let _ = write!(text, ", … ({} more)", pes.len() - MAX_LISTED);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let failed = StopCause::PeFailed {
            pe: 2,
            pid: 4242,
            how: Termination::Signaled(Signal(9)),
        };
        assert_eq!(
            describe(&failed, &[0, 1, 3], 3),
            "PE 2 (pid 4242) was killed by signal 9 (SIGKILL); stopping the other 3 PEs"
        );
        let timeout = StopCause::TimedOut {
            after: Duration::from_secs(30),
        };
        assert_eq!(
            describe(&timeout, &[0, 3], 2),
            "timed out after 30 s; PEs still running: 0, 3"
        );
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        let many: Vec<u32> = (0..40).collect();
        assert!(list(&many).ends_with("… (8 more)"));
    }
}
