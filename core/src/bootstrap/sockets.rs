//! The process's registry of unique-id sockets: the socket [`UniqueId::new`] bound (bound,
//! not listening) cannot live in the `Copy` id, so it waits here, keyed by the id's secret
//! and descriptor, until init takes it ([`UniqueId::take_listener`]). An id that is never
//! used keeps its socket open until the process ends, as CANN's does.
//!
//! [`UniqueId::new`]: super::UniqueId::new
//! [`UniqueId::take_listener`]: super::UniqueId::take_listener

use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use super::lock;

/// Bound sockets of the ids this process made, with their secrets.
static LISTENERS: Mutex<Vec<([u8; 16], TcpListener)>> = Mutex::new(Vec::new());

/// Keeps `l`, the socket of the id with `secret`.
pub(crate) fn keep(secret: [u8; 16], l: TcpListener) {
    lock(&LISTENERS).push((secret, l));
}

/// Removes and returns the socket of the id with `secret` whose descriptor is `fd`.
pub(crate) fn take(secret: &[u8; 16], fd: i32) -> Option<TcpListener> {
    let mut reg = lock(&LISTENERS);
    let i = reg
        .iter()
        .position(|(s, l)| s == secret && l.as_raw_fd() == fd)?;
    Some(reg.swap_remove(i).1)
}
