//! The process's resource limits an instance needs.

/// Raises this process's soft descriptor limit to its hard limit, once. Every live instance
/// holds a few descriptors (PE 0 of an instance one per peer), so many instances need more
/// than the usual soft limit of 1024; the hard limit is the administrator's choice.
pub(crate) fn raise_descriptor_limit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let l = getrlimit(Resource::Nofile);
        if let (Some(cur), max) = (l.current, l.maximum)
            && max.is_none_or(|m| m > cur)
        {
            let wanted = max.unwrap_or(1 << 20).min(1 << 20);
            if let Err(e) = setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: Some(wanted),
                    maximum: max,
                },
            ) {
                tracing::debug!("could not raise the descriptor limit from {cur} to {wanted}: {e}");
            }
        }
    });
}
