//! The command line of the launcher, shared by `shmemrun` and `oshrun`:
//!
//! ```text
//! shmemrun -n N [--timeout SECS] [--tag-output] [--] PROGRAM ARGS…
//! shmemrun -np N PROGRAM ARGS…
//! ```
//!
//! It exits with the job's exit code; see [`crate::launcher`] for the semantics.

use std::ffi::OsString;
use std::time::Duration;

use super::{Job, MAX_PES, Output};
use clap::Parser;

const AFTER_HELP: &str = "\
Each PE is one process running PROGRAM ARGS…, with these environment variables:
  SHMEMRUN_PE            this PE's number, 0..N
  SHMEMRUN_NPES          the number of PEs, N
  SHMEMRUN_BOOTSTRAP     tcp://127.0.0.1:<port>, PE 0's bootstrap server
  SHMEMRUN_BOOTSTRAP_FD  (PE 0 only) inherited descriptor: a TCP socket bound to that
                         address and listening
  SHMEMRUN_SECRET        32 hex digits: the job's random 128-bit secret
  SHMEMRUN_JOB           the job id, unique per launch
  SHMEMRUN_CONTROL_FD    inherited descriptor: writing the line `exit <status>` to it ends
                         the whole job with <status> (global_exit)

When the PEs outnumber the CPUs, GLIBC_TUNABLES gets glibc.pthread.rseq=0 added
(unless it sets glibc.pthread.rseq already): a PE then yields its CPU at every wait,
and glibc's per-thread rseq area costs a page walk at every process switch.

PE 0 reads the launcher's standard input; the others read /dev/null.
The job stops when a PE is killed by a signal or exits with a non-zero status, on
global_exit, on timeout, or on SIGINT/SIGTERM (forwarded to the PEs): the other PEs get
SIGTERM, then SIGKILL after 1 s. The exit code is the first failing PE's status (128+N
for signal N), the global_exit status, 124 on timeout, else 0.";

/// Command-line interface of `shmemrun`.
#[derive(Debug, Parser)]
#[command(
    name = "shmemrun",
    version,
    about = "Start a SHMEM job of N PEs (one process each) on this machine",
    override_usage = "shmemrun -n N [--timeout SECS] [--tag-output] [--] PROGRAM [ARGS]...\n       shmemrun -np N PROGRAM [ARGS]...",
    after_help = AFTER_HELP
)]
struct Cli {
    /// Number of PEs to start (`-np N` works too).
    #[arg(
        short = 'n',
        long = "npes",
        visible_alias = "np",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PES))
    )]
    n_pes: u32,

    /// Stop the job after SECS seconds (exit code 124). Default: no timeout.
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    timeout: Option<Duration>,

    /// Prefix every line the PEs write with `[PE n] `.
    #[arg(long)]
    tag_output: bool,

    /// The program to run on every PE, and its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "the timeout must be a positive number of seconds, not `{text}`"
        ));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("bad timeout `{text}`: {e}"))
}

/// Rewrites the MPI-style `-np N` / `-npN` / `-np=N` into `-n`, which clap understands. Only
/// the launcher's own options are looked at: everything from PROGRAM on is left alone.
fn rewrite_np(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    if let Some(arg0) = args.next() {
        out.push(arg0);
    }
    let mut takes_value = false;
    for arg in args.by_ref() {
        if takes_value {
            takes_value = false;
            out.push(arg);
            continue;
        }
        let Some(text) = arg.to_str() else {
            out.push(arg);
            break;
        };
        if text == "--" || !text.starts_with('-') || text == "-" {
            out.push(arg);
            break;
        }
        if text == "-np" {
            out.push("-n".into());
            takes_value = true;
        } else if let Some(rest) = text.strip_prefix("-np") {
            let value = rest.strip_prefix('=').unwrap_or(rest);
            out.push(format!("--npes={value}").into());
        } else {
            takes_value = matches!(text, "-n" | "--npes" | "--np" | "--timeout");
            out.push(arg);
        }
    }
    out.extend(args);
    out
}

/// Runs the launcher's command line (`shmemrun`, `oshrun`) and exits with the job's code.
pub fn main() -> ! {
    let cli = Cli::parse_from(rewrite_np(std::env::args_os()));
    let (program, args) = match cli.command.split_first() {
        Some(split) => split,
        None => {
            eprintln!("shmemrun: error: no program given");
            std::process::exit(2);
        }
    };
    let mut job = Job::new(program)
        .args(args)
        .n_pes(cli.n_pes)
        .forward_signals(true)
        .output(if cli.tag_output {
            Output::Tagged
        } else {
            Output::Inherit
        });
    if let Some(timeout) = cli.timeout {
        job = job.timeout(timeout);
    }
    let code = match job.run() {
        Ok(report) => report.exit_code,
        Err(e) => {
            eprintln!("shmemrun: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        rewrite_np(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn np_is_rewritten_before_the_program_only() {
        assert_eq!(
            rewrite(&["shmemrun", "-np", "2", "prog", "-np", "3"]),
            ["shmemrun", "-n", "2", "prog", "-np", "3"]
        );
        assert_eq!(
            rewrite(&["shmemrun", "--timeout", "5", "-np4", "--", "-np"]),
            ["shmemrun", "--timeout", "5", "--npes=4", "--", "-np"]
        );
        assert_eq!(
            rewrite(&["shmemrun", "-np=2", "x"]),
            ["shmemrun", "--npes=2", "x"]
        );
    }

    #[test]
    fn program_arguments_keep_their_hyphens() {
        let cli = Cli::try_parse_from(rewrite_np(
            [
                "shmemrun",
                "-np",
                "2",
                "python",
                "-m",
                "x",
                "--timeout",
                "1",
            ]
            .map(OsString::from),
        ))
        .unwrap();
        assert_eq!(cli.n_pes, 2);
        assert_eq!(cli.timeout, None);
        assert_eq!(cli.command, ["python", "-m", "x", "--timeout", "1"]);
        let cli = Cli::try_parse_from(
            [
                "shmemrun",
                "-n",
                "3",
                "--tag-output",
                "--timeout",
                "0.5",
                "--",
                "prog",
                "-x",
            ]
            .map(OsString::from),
        )
        .unwrap();
        assert!(cli.tag_output);
        assert_eq!(cli.timeout, Some(Duration::from_millis(500)));
        assert_eq!(cli.command, ["prog", "-x"]);
        assert!(Cli::try_parse_from(["shmemrun", "-n", "0", "x"]).is_err());
        assert!(Cli::try_parse_from(["shmemrun", "-n", "2"]).is_err());
        assert!(Cli::try_parse_from(["shmemrun", "-n", "2", "--timeout", "-1", "x"]).is_err());
    }
}
