//! Logging at the C boundary. A C caller gets only a code, so every failed call logs one line
//! here, at ERROR; warnings CANN's contract requires (a duplicate instance id) reach a person
//! even when no subscriber is installed.
//!
//! [`init`] installs a subscriber for programs that have none (C programs), at the level of
//! `SHMEM_LOG_LEVEL` (`DEBUG`, `INFO`, `WARN`, `ERROR`, `FATAL`, as in CANN; default `WARN`, or
//! `DEBUG` when OpenSHMEM's `SHMEM_DEBUG` is set to anything but `0`). A
//! program that installed its own `tracing` subscriber keeps it. The level can change while the
//! program runs ([`set_level`], CANN's `aclshmemx_set_log_level`), and the lines can go to a
//! function of the program instead of standard error ([`set_extern_logger`], CANN's
//! `aclshmemx_set_extern_logger`).

use std::ffi::{CString, c_char, c_int};
use std::fmt::{self, Write as _};
use std::sync::Once;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::dynamic_filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

static INIT: Once = Once::new();

/// CANN's log levels: 0 DEBUG, 1 INFO, 2 WARN, 3 ERROR, 4 FATAL.
const DEBUG: u8 = 0;
const WARN: u8 = 2;
const ERROR: u8 = 3;
const FATAL: u8 = 4;

/// The lowest CANN level shown.
static LEVEL: AtomicU8 = AtomicU8::new(WARN);

/// The program's log function (`void (*)(int level, const char *msg)`), or 0 for standard error.
static SINK: AtomicUsize = AtomicUsize::new(0);

/// A C log function, as CANN's `aclshmemx_set_extern_logger` takes it.
pub type ExternLogger = extern "C" fn(level: c_int, msg: *const c_char);

/// The CANN level `SHMEM_LOG_LEVEL` names, if it is set to one.
fn env_level() -> Option<u8> {
    let v = std::env::var("SHMEM_LOG_LEVEL").ok()?;
    match v.trim().to_ascii_uppercase().as_str() {
        "DEBUG" => Some(DEBUG),
        "INFO" => Some(1),
        "WARN" => Some(WARN),
        "ERROR" => Some(ERROR),
        "FATAL" => Some(FATAL),
        _ => None,
    }
}

/// The CANN level of a `tracing` level (TRACE shows with DEBUG).
fn cann_level(l: &Level) -> u8 {
    match *l {
        Level::ERROR => ERROR,
        Level::WARN => WARN,
        Level::INFO => 1,
        _ => DEBUG,
    }
}

/// Whether a line of this library at `m`'s level is shown now. FATAL shows the ERROR lines: a
/// failed call always leaves its one line.
fn shown(m: &Metadata<'_>) -> bool {
    m.target().starts_with("shmem")
        && cann_level(m.level()) >= LEVEL.load(Ordering::Relaxed).min(ERROR)
}

/// Installs the C ABI's subscriber unless the program already has one.
pub fn init() {
    INIT.call_once(|| {
        // OpenSHMEM's SHMEM_DEBUG (any value but 0) asks for debugging messages, unless
        // SHMEM_LOG_LEVEL says otherwise.
        let debug = std::env::var("SHMEM_DEBUG").is_ok_and(|v| v.trim() != "0");
        let level = env_level().unwrap_or(if debug { DEBUG } else { WARN });
        LEVEL.store(level, Ordering::Relaxed);
        let stderr = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_target(false)
            .without_time()
            .with_ansi(false)
            .with_filter(dynamic_filter_fn(|m, _| {
                shown(m) && SINK.load(Ordering::Acquire) == 0
            }));
        let sink = ExternSink.with_filter(dynamic_filter_fn(|m, _| {
            shown(m) && SINK.load(Ordering::Acquire) != 0
        }));
        let _ = tracing_subscriber::registry()
            .with(stderr)
            .with(sink)
            .try_init();
    });
}

/// Sets the lowest level shown (CANN's 0 DEBUG … 4 FATAL), unless `SHMEM_LOG_LEVEL` names one,
/// which wins, as in CANN. A level outside 0..=4 is refused and changes nothing.
pub fn set_level(level: i32) -> Result<(), String> {
    let level = env_level().map_or(level, i32::from);
    let l = u8::try_from(level)
        .ok()
        .filter(|l| *l <= FATAL)
        .ok_or_else(|| format!("log level {level} is not 0 (DEBUG) to 4 (FATAL)"))?;
    init();
    LEVEL.store(l, Ordering::Relaxed);
    Ok(())
}

/// Sends the lines to `f` (with CANN's level and the line) instead of standard error; `None`
/// sends them to standard error again.
pub fn set_extern_logger(f: Option<ExternLogger>) {
    init();
    SINK.store(f.map_or(0, |f| f as usize), Ordering::Release);
}

/// The layer that hands each line to the program's log function.
struct ExternSink;

/// Collects an event's message and fields into one line.
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl<S: Subscriber> Layer<S> for ExternSink {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let f = SINK.load(Ordering::Acquire);
        if f == 0 {
            return;
        }
        let mut line = Line(String::new());
        event.record(&mut line);
        let msg = CString::new(line.0.replace('\0', " ")).unwrap_or_default();
        // SAFETY: `f` was stored from an `ExternLogger` by `set_extern_logger`.
        let f: ExternLogger = unsafe { std::mem::transmute::<usize, ExternLogger>(f) };
        f(
            c_int::from(cann_level(event.metadata().level())),
            msg.as_ptr(),
        );
    }
}

/// A warning that must reach a person: through the subscriber when one is installed, to
/// standard error otherwise.
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{args}");
    } else {
        eprintln!("shmem: WARN {args}");
    }
}
