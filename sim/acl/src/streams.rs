//! Streams and events. An `aclrtStream` is a handle of the simulator's stream executor
//! ([`shmem_sim::Stream::into_raw`]); NULL names the current device's default stream. An event
//! records a position in a stream.

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::sync::Mutex;
use std::time::Duration;

use shmem_sim::Stream;

use crate::state::{
    AclResult, RT_EVENT_SYNC_TIMEOUT, RT_INTERNAL_ERROR, RT_INVALID_HANDLE, RT_PARAM_INVALID,
    RT_STREAM_SYNC_TIMEOUT, current_device, fail, lock,
};

/// The live stream handles made by `aclrtCreateStream`.
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);
/// Each device's default stream.
static DEFAULTS: Mutex<Option<HashMap<i32, Stream>>> = Mutex::new(None);

/// A new stream (strict under `SHMEM_SIM_STRICT`).
fn new_stream() -> AclResult<Stream> {
    Stream::from_env().or_else(|e| fail(RT_PARAM_INVALID, e.to_string()))
}

/// `aclrtCreateStream`.
pub(crate) fn create() -> AclResult<*mut c_void> {
    let p = new_stream()?.into_raw();
    lock(&LIVE)
        .get_or_insert_with(HashSet::new)
        .insert(p as usize);
    Ok(p)
}

/// `aclrtDestroyStream`: the stream's remaining work runs first.
pub(crate) fn destroy(p: *mut c_void) -> AclResult<()> {
    if p.is_null() {
        return crate::state::null("stream");
    }
    if !lock(&LIVE)
        .as_mut()
        .is_some_and(|l| l.remove(&(p as usize)))
    {
        return fail(RT_INVALID_HANDLE, format!("{p:p} is not a live stream"));
    }
    // SAFETY: it was live: a pointer from `Stream::into_raw`, now unlisted and not used again.
    let s = unsafe { Stream::from_raw(p) };
    // SAFETY: as above; `s` holds its own count.
    unsafe { Stream::destroy_raw(p) };
    s.synchronize()
        .or_else(|e| fail(RT_INTERNAL_ERROR, e.to_string()))
}

/// The stream a handle names: a created one, or (NULL) the current device's default stream.
pub(crate) fn resolve(p: *mut c_void) -> AclResult<Stream> {
    if p.is_null() {
        let device = current_device()?;
        let mut d = lock(&DEFAULTS);
        let map = d.get_or_insert_with(HashMap::new);
        if let Some(s) = map.get(&device) {
            return Ok(s.clone());
        }
        let s = new_stream()?;
        map.insert(device, s.clone());
        return Ok(s);
    }
    if !lock(&LIVE)
        .as_ref()
        .is_some_and(|l| l.contains(&(p as usize)))
    {
        return fail(RT_INVALID_HANDLE, format!("{p:p} is not a live stream"));
    }
    // SAFETY: a live handle came from `Stream::into_raw` and is not destroyed yet.
    Ok(unsafe { Stream::from_raw(p) })
}

/// A timeout in ms: -1 waits forever, below -1 is 107000.
fn timeout(ms: i32) -> AclResult<Option<Duration>> {
    match ms {
        -1 => Ok(None),
        t if t < -1 => fail(RT_PARAM_INVALID, format!("timeout {t} ms")),
        t => Ok(Some(Duration::from_millis(t as u64))),
    }
}

/// `aclrtSynchronizeStream[WithTimeout]`: waits for the stream's work; reports its first
/// failure since the last synchronisation.
pub(crate) fn synchronize(p: *mut c_void, ms: i32) -> AclResult<()> {
    let s = resolve(p)?;
    if let Some(t) = timeout(ms)?
        && !s.wait_for_timeout(s.submitted(), t)
    {
        return fail(
            RT_STREAM_SYNC_TIMEOUT,
            format!("the stream's work did not finish in {ms} ms"),
        );
    }
    s.synchronize().or_else(|e| {
        fail(
            RT_INTERNAL_ERROR,
            format!("a task of the stream failed: {e}"),
        )
    })
}

/// An event: where it was last recorded.
#[derive(Default)]
pub(crate) struct Event {
    at: Mutex<Option<(Stream, u64)>>,
}

static EVENTS: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// `aclrtCreateEvent[WithFlag]`.
pub(crate) fn create_event() -> *mut c_void {
    let p = Box::into_raw(Box::<Event>::default()) as usize;
    lock(&EVENTS).get_or_insert_with(HashSet::new).insert(p);
    p as *mut c_void
}

fn event(p: *mut c_void) -> AclResult<&'static Event> {
    if p.is_null() {
        return crate::state::null("event");
    }
    if !lock(&EVENTS)
        .as_ref()
        .is_some_and(|l| l.contains(&(p as usize)))
    {
        return fail(RT_INVALID_HANDLE, format!("{p:p} is not a live event"));
    }
    // SAFETY: a listed event is a leaked `Box<Event>` until `destroy_event` (which the program
    // may not call while it uses the event).
    Ok(unsafe { &*(p as *const Event) })
}

/// `aclrtDestroyEvent`.
pub(crate) fn destroy_event(p: *mut c_void) -> AclResult<()> {
    event(p)?;
    lock(&EVENTS).as_mut().map(|l| l.remove(&(p as usize)));
    // SAFETY: it was listed, so it is a leaked `Box<Event>`, and no longer listed.
    drop(unsafe { Box::from_raw(p as *mut Event) });
    Ok(())
}

/// `aclrtRecordEvent`: the event completes when the stream's work enqueued so far has run.
pub(crate) fn record(e: *mut c_void, s: *mut c_void) -> AclResult<()> {
    let (e, s) = (event(e)?, resolve(s)?);
    let n = s.enqueue(|| Ok(()));
    *lock(&e.at) = Some((s, n));
    Ok(())
}

/// `aclrtSynchronizeEvent[WithTimeout]`.
pub(crate) fn synchronize_event(e: *mut c_void, ms: i32) -> AclResult<()> {
    let e = event(e)?;
    let t = timeout(ms)?;
    let Some((s, n)) = lock(&e.at).clone() else {
        return Ok(()); // never recorded: complete
    };
    match t {
        None => s.wait_for(n),
        Some(t) => {
            if !s.wait_for_timeout(n, t) {
                return fail(
                    RT_EVENT_SYNC_TIMEOUT,
                    format!("the event did not complete in {ms} ms"),
                );
            }
        }
    }
    Ok(())
}

/// `aclrtStreamWaitEvent`: work enqueued on `s` later waits for the event.
pub(crate) fn wait_event(s: *mut c_void, e: *mut c_void) -> AclResult<()> {
    let (s, e) = (resolve(s)?, event(e)?);
    if let Some((other, n)) = lock(&e.at).clone() {
        s.enqueue(move || {
            other.wait_for(n);
            Ok(())
        });
    }
    Ok(())
}
