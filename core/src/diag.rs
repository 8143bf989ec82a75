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
        shmem_sim::launcher::stderr_line(format_args!("shmem: WARN {args}"));
    }
}
