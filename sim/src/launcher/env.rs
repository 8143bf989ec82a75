//! The environment contract between `shmemrun` and the PEs it starts.
//!
//! Every PE of a job is started with these variables (any value of them inherited from the
//! launcher's own environment is removed first, so a nested launch never leaks a parent job's
//! values):
//!
//! | variable | given to | value |
//! |---|---|---|
//! | [`SHMEMRUN_PE`](PE) | every PE | this PE's number, `0..n` |
//! | [`SHMEMRUN_NPES`](NPES) | every PE | the number of PEs `n` (at least 1) |
//! | [`SHMEMRUN_BOOTSTRAP`](BOOTSTRAP) | every PE | `tcp://127.0.0.1:<port>`: where PE 0's bootstrap server listens |
//! | [`SHMEMRUN_BOOTSTRAP_FD`](BOOTSTRAP_FD) | PE 0 only | number of an inherited descriptor: a TCP socket already bound to that address and listening; PE 0 serves on it |
//! | [`SHMEMRUN_SECRET`](SECRET) | every PE | 32 lowercase hex digits: a random 128-bit secret of this job |
//! | [`SHMEMRUN_JOB`](JOB) | every PE | a job id, unique per launch (`<launcher pid>-<random hex>`) |
//! | [`SHMEMRUN_CONTROL_FD`](CONTROL_FD) | every PE | number of an inherited descriptor: the write end of the job's control pipe |
//!
//! Beyond the contract, the launcher adds `glibc.pthread.rseq=0` to a PE's `GLIBC_TUNABLES`
//! when the job's PEs outnumber the CPUs and the tunables do not set it already (see
//! `spawn::tunables` for why).
//!
//! The launcher binds the bootstrap socket itself (to `127.0.0.1:0`), so there is no race for a
//! port between launching and serving. Both descriptors are inherited only by the PEs that are
//! meant to have them; in the launcher they stay close-on-exec. The launcher places them at
//! small fixed numbers (today the control pipe at 3 and the bootstrap socket at 4, so that even
//! `dash` can redirect to them), but a PE must read the numbers from the variables.
//!
//! # The control pipe
//!
//! A PE ends the whole job (OpenSHMEM `shmem_global_exit`) by writing one line to the control
//! descriptor:
//!
//! ```text
//! exit <status>\n          e.g. `echo "exit 7" >&$SHMEMRUN_CONTROL_FD` from a shell
//! exit <status> <pe>\n     the same, naming the calling PE (what request_global_exit writes)
//! ```
//!
//! The launcher then stops every other PE and the job's exit code is `<status>`. The calling PE
//! is expected to exit by itself right after writing the line (it is killed if it has not
//! exited when the other PEs' grace period ends). A line of at most `PIPE_BUF` bytes is written
//! atomically, so requests of several PEs never mix.
//!
//! [`launched_pe`] parses the variables on the PE side and [`request_global_exit`] writes the
//! control line.
//!
//! # The lifeline
//!
//! The launcher keeps the only read end of the control pipe. When it dies, the write end in
//! every PE reports an error, whichever process holds it: [`watch_lifeline`] turns that into
//! the PE's exit. (The launcher's parent-death signal reaches only its own children, not a PE
//! started under `sh -c`, `timeout` or another wrapper.)

use std::ffi::OsString;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{BorrowedFd, FromRawFd, IntoRawFd, RawFd};
use std::sync::{Mutex, PoisonError};

use rustix::fs::FileType;

/// Variable holding this PE's number, `0..n`.
pub const PE: &str = "SHMEMRUN_PE";
/// Variable holding the number of PEs of the job.
pub const NPES: &str = "SHMEMRUN_NPES";
/// Variable holding `tcp://127.0.0.1:<port>`, the address of PE 0's bootstrap server.
pub const BOOTSTRAP: &str = "SHMEMRUN_BOOTSTRAP";
/// Variable (PE 0 only) holding the number of an inherited, bound and listening TCP socket.
pub const BOOTSTRAP_FD: &str = "SHMEMRUN_BOOTSTRAP_FD";
/// Variable holding the job secret: 32 lowercase hex digits (128 random bits).
pub const SECRET: &str = "SHMEMRUN_SECRET";
/// Variable holding the job id, unique per launch.
pub const JOB: &str = "SHMEMRUN_JOB";
/// Variable holding the number of the inherited write end of the job's control pipe.
pub const CONTROL_FD: &str = "SHMEMRUN_CONTROL_FD";

/// Every variable of the contract.
pub const ALL: [&str; 7] = [PE, NPES, BOOTSTRAP, BOOTSTRAP_FD, SECRET, JOB, CONTROL_FD];

/// Length of the job secret in bytes.
pub const SECRET_BYTES: usize = 16;

/// The scheme prefix of [`BOOTSTRAP`].
pub const BOOTSTRAP_SCHEME: &str = "tcp://";

/// What a PE started by the launcher learns from its environment.
#[derive(Debug)]
pub struct LaunchInfo {
    /// This PE's number, `0..n_pes`.
    pub pe: u32,
    /// The number of PEs of the job.
    pub n_pes: u32,
    /// The bootstrap address as given, `tcp://127.0.0.1:<port>`.
    pub bootstrap: String,
    /// The bootstrap address, parsed.
    pub bootstrap_addr: SocketAddr,
    /// PE 0's listening bootstrap socket. Present only on PE 0 and only in the first
    /// [`launched_pe`] call of the process (the descriptor has a single owner).
    pub bootstrap_listener: Option<TcpListener>,
    /// The job secret.
    pub secret: [u8; SECRET_BYTES],
    /// The job id.
    pub job: String,
    /// The number of the control descriptor (see [`request_global_exit`]).
    pub control_fd: RawFd,
}

/// A malformed launcher environment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// A variable of the contract is missing while others are present.
    #[error(
        "{var} is not set although SHMEMRUN_PE/SHMEMRUN_NPES are: incomplete launcher environment"
    )]
    Missing {
        /// The missing variable.
        var: &'static str,
    },
    /// A variable has a value that does not follow the contract.
    #[error("{var}={value:?} is malformed: expected {expected}")]
    Invalid {
        /// The variable.
        var: &'static str,
        /// Its value (lossily converted to UTF-8).
        value: String,
        /// What the contract expects.
        expected: &'static str,
    },
    /// `SHMEMRUN_PE` is not below `SHMEMRUN_NPES`.
    #[error("SHMEMRUN_PE={pe} is out of range for SHMEMRUN_NPES={n_pes}")]
    PeOutOfRange {
        /// The PE number given.
        pe: u32,
        /// The PE count given.
        n_pes: u32,
    },
    /// `SHMEMRUN_BOOTSTRAP_FD` was given to a PE other than 0.
    #[error("SHMEMRUN_BOOTSTRAP_FD is set on PE {pe}; only PE 0 receives the bootstrap socket")]
    BootstrapFdOnWrongPe {
        /// The PE that has it.
        pe: u32,
    },
    /// A descriptor variable names a descriptor that is not what the contract says.
    #[error("{var}={fd} is not usable: {reason}")]
    BadDescriptor {
        /// The variable.
        var: &'static str,
        /// The descriptor number.
        fd: RawFd,
        /// What is wrong with it.
        reason: String,
    },
}

/// The variables parsed, before any descriptor is touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParsedEnv {
    pub(crate) pe: u32,
    pub(crate) n_pes: u32,
    pub(crate) bootstrap: String,
    pub(crate) bootstrap_addr: SocketAddr,
    pub(crate) bootstrap_fd: Option<RawFd>,
    pub(crate) secret: [u8; SECRET_BYTES],
    pub(crate) job: String,
    pub(crate) control_fd: RawFd,
}

/// Parses this process's launcher environment.
///
/// Returns `Ok(None)` when the process was not started by the launcher (neither `SHMEMRUN_PE`
/// nor `SHMEMRUN_NPES` is set), and an error naming the variable when any value is malformed.
/// On PE 0 the first call takes ownership of the inherited bootstrap socket (after checking that
/// it is a listening socket bound to the announced address, and making it close-on-exec so the
/// PE's own children do not inherit it); later calls return `bootstrap_listener: None`.
pub fn launched_pe() -> Result<Option<LaunchInfo>, EnvError> {
    let Some(parsed) = parse_env(&|name| std::env::var_os(name))? else {
        return Ok(None);
    };
    let bootstrap_listener = match parsed.bootstrap_fd {
        Some(fd) => take_bootstrap_listener(fd, parsed.bootstrap_addr)?,
        None => None,
    };
    Ok(Some(LaunchInfo {
        pe: parsed.pe,
        n_pes: parsed.n_pes,
        bootstrap: parsed.bootstrap,
        bootstrap_addr: parsed.bootstrap_addr,
        bootstrap_listener,
        secret: parsed.secret,
        job: parsed.job,
        control_fd: parsed.control_fd,
    }))
}

/// Asks the launcher to end the whole job with `status` (OpenSHMEM `shmem_global_exit`).
///
/// Writes `exit <status> <pe>\n` to the control descriptor in one `write`. The caller should
/// exit right after. Fails if `SHMEMRUN_CONTROL_FD` is absent (the process was not started by
/// the launcher) or malformed, or if the descriptor is not a pipe or the write fails (for
/// example `EPIPE` when the launcher is gone).
pub fn request_global_exit(status: i32) -> io::Result<()> {
    let pe = std::env::var(PE).ok().and_then(|v| v.parse::<u32>().ok());
    write_control(&control_line(status, pe))
}

/// Tells the launcher that PE `pe` of the job was lost (its bootstrap connection closed without
/// finalize), so that the launcher blames it rather than a PE that exits because it noticed.
/// The bootstrap server of the launcher's job calls it; fails as [`request_global_exit`] does.
pub fn report_lost(pe: u32) -> io::Result<()> {
    write_control(&format!("lost {pe}\n"))
}

/// The control descriptor named by `SHMEMRUN_CONTROL_FD`, checked to be a pipe or socket.
fn control_descriptor() -> io::Result<BorrowedFd<'static>> {
    let Some(raw) = std::env::var_os(CONTROL_FD) else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "SHMEMRUN_CONTROL_FD is not set: this process was not started by shmemrun",
        ));
    };
    let fd =
        parse_fd(CONTROL_FD, &raw).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: the descriptor number comes from the launcher contract, which reserves it for
    // this purpose in every PE for the life of the process; nothing here closes it. If it is not
    // open the kernel reports EBADF, which is returned as an error.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let stat = rustix::fs::fstat(fd)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::Fifo && kind != FileType::Socket {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("SHMEMRUN_CONTROL_FD names a {kind:?}, not the launcher's control pipe"),
        ));
    }
    Ok(fd)
}

/// Ends this process soon after the launcher dies: the lifeline.
///
/// The launcher holds the only read end of the control pipe, so when it dies, however it dies,
/// the pipe's write end that every PE inherits reports an error. A thread of this process
/// waits for that in `poll` (it uses no CPU until then) and then exits the process with status
/// 1 and one line on standard error. This reaches PEs that the launcher's parent-death signal
/// does not: a program started under a wrapper (`sh -c`, `timeout`, `/usr/bin/time`,
/// `perf record`) is not the launcher's child.
///
/// Does nothing when the process was not started by `shmemrun` (or `SHMEMRUN_CONTROL_FD` no
/// longer names the write end of a pipe), and at most once per process (a forked child does not
/// inherit the thread, so it is not watched). Returns whether the lifeline is being watched.
pub fn watch_lifeline() -> bool {
    static WATCHING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WATCHING.get_or_init(start_lifeline)
}

/// [`watch_lifeline`]'s one start: the watching thread, if there is a lifeline.
fn start_lifeline() -> bool {
    // Only the write end of a pipe: a program that closed the launcher's descriptor and reused
    // its number for something else must not be ended when that closes.
    let pipe_write_end = |fd: &BorrowedFd<'static>| {
        let fifo = rustix::fs::fstat(fd)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Fifo);
        let mode = rustix::fs::fcntl_getfl(fd).map(|f| f & rustix::fs::OFlags::RWMODE);
        fifo && mode.is_ok_and(|m| m == rustix::fs::OFlags::WRONLY)
    };
    control_descriptor().ok().filter(pipe_write_end).is_some_and(|fd| {
        let pe = std::env::var(PE).unwrap_or_else(|_| "?".into());
        std::thread::Builder::new()
            .name("shmem-lifeline".into())
            .spawn(move || {
                wait_for_launcher_death(fd);
                super::stderr_line(format_args!(
                    "shmem: PE {pe}: the launcher is gone (the job's control pipe has no reader); exiting"
                ));
                // SAFETY: `_exit` ends the process at once; the job is over, and running the
                // process's exit handlers (which finalize with peers) would only wait for them.
                unsafe { libc::_exit(1) }
            })
            .is_ok()
    })
}

/// Blocks until `fd`, the write end of the control pipe, has no reader any more.
fn wait_for_launcher_death(fd: BorrowedFd<'static>) {
    use rustix::event::{PollFd, PollFlags};
    loop {
        // No events requested: poll reports only POLLERR (a pipe without readers) and POLLHUP.
        let mut fds = [PollFd::new(&fd, PollFlags::empty())];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) if !fds[0].revents().is_empty() => return,
            Ok(_) | Err(rustix::io::Errno::INTR) => continue,
            // The descriptor was closed under us (EBADF, a program bug): no lifeline left.
            Err(_) => std::thread::park(),
        }
    }
}

/// Writes one control line to the control descriptor in one `write`.
fn write_control(line: &str) -> io::Result<()> {
    let fd = control_descriptor()?;
    loop {
        match rustix::io::write(fd, line.as_bytes()) {
            Ok(n) if n == line.len() => return Ok(()),
            Ok(n) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!(
                        "short write to the control pipe ({n} of {} bytes)",
                        line.len()
                    ),
                ));
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The control line asking for `global_exit(status)`, optionally naming the calling PE.
pub(crate) fn control_line(status: i32, pe: Option<u32>) -> String {
    match pe {
        Some(pe) => format!("exit {status} {pe}\n"),
        None => format!("exit {status}\n"),
    }
}

/// A request read from the control pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitRequest {
    pub(crate) status: i32,
    pub(crate) pe: Option<u32>,
}

/// A line of the control pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// `exit <status> [<pe>]`: `global_exit`.
    Exit(ExitRequest),
    /// `lost <pe>`: the bootstrap server saw PE `pe` go without finalize.
    Lost(u32),
}

/// Parses one control line (without its newline).
pub(crate) fn parse_control_line(line: &[u8]) -> Result<Control, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8".to_owned())?;
    let text = text.trim_end_matches('\r');
    if let Some(pe) = text.strip_prefix("lost ") {
        return pe
            .trim()
            .parse()
            .map(Control::Lost)
            .map_err(|_| format!("bad PE number in {text:?} (expected `lost <pe>`)"));
    }
    parse_exit(text).map(Control::Exit)
}

/// Parses `exit <status> [<pe>]`.
fn parse_exit(text: &str) -> Result<ExitRequest, String> {
    let mut words = text.split_ascii_whitespace();
    if words.next() != Some("exit") {
        return Err(format!(
            "unknown request {text:?} (expected `exit <status> [<pe>]` or `lost <pe>`)"
        ));
    }
    let status = match words.next().map(str::parse::<i32>) {
        Some(Ok(status)) => status,
        _ => {
            return Err(format!(
                "bad request {text:?} (expected `exit <status> [<pe>]`)"
            ));
        }
    };
    let pe = match words.next().map(str::parse::<u32>) {
        None => None,
        Some(Ok(pe)) => Some(pe),
        Some(Err(_)) => {
            return Err(format!(
                "bad PE number in {text:?} (expected `exit <status> [<pe>]`)"
            ));
        }
    };
    if words.next().is_some() {
        return Err(format!(
            "trailing words in {text:?} (expected `exit <status> [<pe>]`)"
        ));
    }
    Ok(ExitRequest { status, pe })
}

/// Encodes a secret as the 32 lowercase hex digits of [`SECRET`].
pub(crate) fn encode_secret(secret: &[u8; SECRET_BYTES]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(2 * SECRET_BYTES);
    for byte in secret {
        // Writing into a String cannot fail.
        let _ = write!(text, "{byte:02x}");
    }
    text
}

fn decode_secret(text: &str) -> Option<[u8; SECRET_BYTES]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * SECRET_BYTES {
        return None;
    }
    let nibble = |d: u8| match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        _ => None,
    };
    let mut secret = [0u8; SECRET_BYTES];
    for (byte, pair) in secret.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(secret)
}

fn invalid(var: &'static str, value: &OsString, expected: &'static str) -> EnvError {
    EnvError::Invalid {
        var,
        value: value.to_string_lossy().into_owned(),
        expected,
    }
}

fn parse_fd(var: &'static str, value: &OsString) -> Result<RawFd, EnvError> {
    const EXPECTED: &str = "a descriptor number of at least 3";
    match value.to_str().map(str::parse::<RawFd>) {
        Some(Ok(fd)) if fd >= 3 => Ok(fd),
        _ => Err(invalid(var, value, EXPECTED)),
    }
}

/// Parses the contract's variables through `get` (the process environment, or a test's map).
pub(crate) fn parse_env(
    get: &dyn Fn(&'static str) -> Option<OsString>,
) -> Result<Option<ParsedEnv>, EnvError> {
    let (pe_raw, npes_raw) = match (get(PE), get(NPES)) {
        (None, None) => return Ok(None),
        (Some(_), None) => return Err(EnvError::Missing { var: NPES }),
        (None, Some(_)) => return Err(EnvError::Missing { var: PE }),
        (Some(pe), Some(npes)) => (pe, npes),
    };
    let required = |var: &'static str| get(var).ok_or(EnvError::Missing { var });

    let pe = pe_raw
        .to_str()
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or_else(|| invalid(PE, &pe_raw, "a PE number (decimal)"))?;
    let n_pes = npes_raw
        .to_str()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| invalid(NPES, &npes_raw, "a positive PE count (decimal)"))?;
    if pe >= n_pes {
        return Err(EnvError::PeOutOfRange { pe, n_pes });
    }

    let bootstrap_raw = required(BOOTSTRAP)?;
    let (bootstrap, bootstrap_addr) = bootstrap_raw
        .to_str()
        .and_then(|url| {
            let addr = url
                .strip_prefix(BOOTSTRAP_SCHEME)?
                .parse::<SocketAddr>()
                .ok()?;
            Some((url.to_owned(), addr))
        })
        .ok_or_else(|| invalid(BOOTSTRAP, &bootstrap_raw, "tcp://<ip>:<port>"))?;

    let bootstrap_fd = match get(BOOTSTRAP_FD) {
        None => None,
        Some(_) if pe != 0 => return Err(EnvError::BootstrapFdOnWrongPe { pe }),
        Some(raw) => Some(parse_fd(BOOTSTRAP_FD, &raw)?),
    };

    let secret_raw = required(SECRET)?;
    let secret = secret_raw
        .to_str()
        .and_then(decode_secret)
        .ok_or_else(|| invalid(SECRET, &secret_raw, "32 lowercase hex digits"))?;

    let job_raw = required(JOB)?;
    let job = job_raw
        .to_str()
        .filter(|j| !j.is_empty() && !j.contains(char::is_whitespace))
        .map(str::to_owned)
        .ok_or_else(|| invalid(JOB, &job_raw, "a non-empty job id without spaces"))?;

    let control_fd = parse_fd(CONTROL_FD, &required(CONTROL_FD)?)?;

    Ok(Some(ParsedEnv {
        pe,
        n_pes,
        bootstrap,
        bootstrap_addr,
        bootstrap_fd,
        secret,
        job,
        control_fd,
    }))
}

/// Whether this process already owns the inherited bootstrap socket.
static BOOTSTRAP_TAKEN: Mutex<bool> = Mutex::new(false);

fn take_bootstrap_listener(
    fd: RawFd,
    expected: SocketAddr,
) -> Result<Option<TcpListener>, EnvError> {
    let bad = |reason: String| EnvError::BadDescriptor {
        var: BOOTSTRAP_FD,
        fd,
        reason,
    };
    let mut taken = BOOTSTRAP_TAKEN
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if *taken {
        return Ok(None);
    }
    {
        // SAFETY: the descriptor number comes from the launcher contract, which hands it to
        // PE 0 for this purpose; it is only inspected here (fstat, getsockopt, fcntl) while the
        // lock is held, and never closed. A descriptor that is not open makes these calls fail
        // with EBADF, which is reported.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let stat = rustix::fs::fstat(borrowed).map_err(|e| bad(e.to_string()))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Socket {
            return Err(bad("not a socket".into()));
        }
        match rustix::net::sockopt::socket_acceptconn(borrowed) {
            Ok(true) => {}
            Ok(false) => return Err(bad("the socket is not listening".into())),
            Err(e) => return Err(bad(e.to_string())),
        }
        rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::CLOEXEC)
            .map_err(|e| bad(e.to_string()))?;
    }
    // SAFETY: the descriptor is an open, listening socket (checked above) that the launcher
    // handed to this process to own; `BOOTSTRAP_TAKEN` (held locked) guarantees that ownership
    // is taken at most once per process, so no second owner can close it.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    match listener.local_addr() {
        Ok(addr) if addr == expected => {
            *taken = true;
            Ok(Some(listener))
        }
        other => {
            // Not ours to keep: hand the descriptor back without closing it.
            let _ = listener.into_raw_fd();
            Err(bad(match other {
                Ok(addr) => format!("bound to {addr}, but SHMEMRUN_BOOTSTRAP says {expected}"),
                Err(e) => e.to_string(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&'static str, &str)]) -> HashMap<&'static str, OsString> {
        pairs.iter().map(|&(k, v)| (k, OsString::from(v))).collect()
    }

    fn good() -> HashMap<&'static str, OsString> {
        env_of(&[
            (PE, "1"),
            (NPES, "4"),
            (BOOTSTRAP, "tcp://127.0.0.1:4567"),
            (SECRET, "00112233445566778899aabbccddeeff"),
            (JOB, "123-abcd"),
            (CONTROL_FD, "9"),
        ])
    }

    fn parse(map: &HashMap<&'static str, OsString>) -> Result<Option<ParsedEnv>, EnvError> {
        parse_env(&|k| map.get(k).cloned())
    }

    #[test]
    fn absent_means_not_launched() {
        assert!(matches!(parse(&HashMap::new()), Ok(None)));
    }

    #[test]
    fn parses_a_good_environment() {
        let parsed = parse(&good()).unwrap().unwrap();
        assert_eq!(parsed.pe, 1);
        assert_eq!(parsed.n_pes, 4);
        assert_eq!(parsed.bootstrap_addr, "127.0.0.1:4567".parse().unwrap());
        assert_eq!(parsed.secret[0], 0x00);
        assert_eq!(parsed.secret[15], 0xff);
        assert_eq!(parsed.job, "123-abcd");
        assert_eq!(parsed.control_fd, 9);
        assert_eq!(parsed.bootstrap_fd, None);
        assert_eq!(
            encode_secret(&parsed.secret),
            "00112233445566778899aabbccddeeff"
        );
    }

    #[test]
    fn rejects_malformed_values() {
        let cases: &[(&'static str, &str)] = &[
            (PE, "x"),
            (PE, "4"),
            (NPES, "0"),
            (BOOTSTRAP, "127.0.0.1:1"),
            (BOOTSTRAP, "tcp://localhost"),
            (SECRET, "00112233445566778899AABBCCDDEEFF"),
            (SECRET, "0011"),
            (JOB, ""),
            (CONTROL_FD, "1"),
            (CONTROL_FD, "-5"),
            (BOOTSTRAP_FD, "7"),
        ];
        for &(var, value) in cases {
            let mut map = good();
            map.insert(var, value.into());
            let err = parse(&map).expect_err(var);
            assert!(err.to_string().contains("SHMEMRUN_"), "{err}");
        }
        let mut map = good();
        map.remove(SECRET);
        assert!(matches!(
            parse(&map),
            Err(EnvError::Missing { var: SECRET })
        ));
    }

    #[test]
    fn bootstrap_fd_only_on_pe_zero() {
        let mut map = good();
        map.insert(PE, "0".into());
        map.insert(BOOTSTRAP_FD, "5".into());
        assert_eq!(parse(&map).unwrap().unwrap().bootstrap_fd, Some(5));
    }

    #[test]
    fn control_lines_round_trip() {
        for (status, pe) in [(0, None), (7, Some(3)), (-1, Some(0))] {
            let line = control_line(status, pe);
            let req = parse_control_line(line.trim_end().as_bytes()).unwrap();
            assert_eq!(req, Control::Exit(ExitRequest { status, pe }));
        }
        assert_eq!(parse_control_line(b"lost 12").unwrap(), Control::Lost(12));
        assert!(parse_control_line(b"lost x").is_err());
        assert!(parse_control_line(b"quit 3").is_err());
        assert!(parse_control_line(b"exit").is_err());
        assert!(parse_control_line(b"exit x").is_err());
        assert!(parse_control_line(b"exit 1 2 3").is_err());
        assert_eq!(
            parse_control_line(b"exit 5\r").unwrap(),
            Control::Exit(ExitRequest {
                status: 5,
                pe: None
            })
        );
    }
}
