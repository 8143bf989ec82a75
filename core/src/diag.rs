//! Diagnostics that a contract requires to reach a person (CANN's warning for a duplicate
//! instance id, a lock guard that could not clear its lock): through the program's `tracing`
//! subscriber when it installed one, to standard error otherwise. The library installs no
//! subscriber of its own, and it does not log the errors it returns.

use std::fmt;

/// Emits a warning.
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{args}");
    } else {
        stderr_line(format_args!("shmem: WARN {args}"));
    }
}

/// Writes `args` and a newline to standard error in one write, so that another PE's line on the
/// same standard error cannot land inside this one (`eprintln!` writes the pieces of its format
/// one by one on the unbuffered stream).
pub(crate) fn stderr_line(args: fmt::Arguments<'_>) {
    let line = format!("{args}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}
