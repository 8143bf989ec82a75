//! The PEs' output streams in [`Output::Tagged`] and [`Output::Capture`] modes: non-blocking
//! reads from the pipes, line tagging, and bounded capture.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;

use super::{CapturedOutput, Output};

/// Writes `args` and a newline to standard error in one write. The processes of a job share the
/// launcher's standard error (unless it tags or captures the PEs' streams), and `eprintln!` or
/// `writeln!` on that unbuffered stream write the pieces of their format one by one, so another
/// process's line could land inside this one.
pub fn stderr_line(args: std::fmt::Arguments<'_>) {
    let line = format!("{args}\n");
    let _ = io::stderr().lock().write_all(line.as_bytes());
}

/// A partial line longer than this is forwarded as a line of its own.
const MAX_LINE: usize = 64 * 1024;

/// The most bytes read from one stream per supervision round, so that a PE that writes without
/// pause cannot starve the rest of the loop.
const MAX_READ_PER_ROUND: usize = 1 << 20;

/// Which stream of a PE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Stdout,
    Stderr,
}

/// The last `limit` bytes of a stream.
#[derive(Debug)]
struct Tail {
    bytes: VecDeque<u8>,
    limit: usize,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        if data.len() >= self.limit {
            self.dropped += (self.bytes.len() + data.len() - self.limit) as u64;
            self.bytes.clear();
            self.bytes.extend(&data[data.len() - self.limit..]);
            return;
        }
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.limit);
        self.bytes.drain(..excess);
        self.dropped += excess as u64;
        self.bytes.extend(data);
    }
}

/// One output stream of one PE, read by the launcher.
#[derive(Debug)]
pub(super) struct Stream {
    pe: u32,
    kind: Kind,
    fd: Option<OwnedFd>,
    /// [`Output::Tagged`]: the incomplete last line.
    partial: Vec<u8>,
    /// [`Output::Capture`]: what was kept.
    tail: Tail,
}

impl Stream {
    /// Wraps the read end of a PE's pipe (made non-blocking here).
    pub(super) fn new(pe: u32, kind: Kind, fd: OwnedFd, capture_limit: usize) -> io::Result<Self> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(Stream {
            pe,
            kind,
            fd: Some(fd),
            partial: Vec::new(),
            tail: Tail {
                bytes: VecDeque::new(),
                limit: capture_limit,
                dropped: 0,
            },
        })
    }

    /// The descriptor to poll, while the stream is open.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(AsFd::as_fd)
    }

    /// Whether the stream is still open.
    pub(super) fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Reads what is available (up to a bound) and forwards or keeps it.
    pub(super) fn pump(&mut self, mode: Output, sink: &mut Sink, buf: &mut [u8]) {
        let mut total = 0;
        let mut out = Vec::new();
        while let Some(fd) = &self.fd {
            match rustix::io::read(fd, &mut *buf) {
                Ok(0) => {
                    self.fd = None;
                    self.finish_into(mode, &mut out);
                }
                Ok(n) => {
                    let data = &buf[..n];
                    match mode {
                        Output::Capture => self.tail.push(data),
                        _ => self.tag(data, &mut out),
                    }
                    total += n;
                    if total >= MAX_READ_PER_ROUND {
                        break;
                    }
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => break,
                Err(e) => {
                    tracing::warn!(pe = self.pe, "reading a PE's output failed: {e}");
                    self.fd = None;
                    self.finish_into(mode, &mut out);
                }
            }
        }
        sink.write(self.kind, &out);
    }

    /// Stops reading (the job is over): forwards an incomplete last line.
    pub(super) fn close(&mut self, mode: Output, sink: &mut Sink) {
        if self.fd.take().is_some() {
            let mut out = Vec::new();
            self.finish_into(mode, &mut out);
            sink.write(self.kind, &out);
        }
    }

    fn prefix(&self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = write!(out, "[PE {}] ", self.pe);
    }

    fn tag(&mut self, mut data: &[u8], out: &mut Vec<u8>) {
        while let Some(end) = data.iter().position(|&b| b == b'\n') {
            self.prefix(out);
            out.append(&mut self.partial);
            out.extend_from_slice(&data[..=end]);
            data = &data[end + 1..];
        }
        self.partial.extend_from_slice(data);
        while self.partial.len() >= MAX_LINE {
            self.prefix(out);
            out.extend(self.partial.drain(..MAX_LINE));
            out.push(b'\n');
        }
    }

    fn finish_into(&mut self, mode: Output, out: &mut Vec<u8>) {
        if mode == Output::Tagged && !self.partial.is_empty() {
            self.prefix(out);
            out.append(&mut self.partial);
            out.push(b'\n');
        }
    }

    /// What was captured.
    pub(super) fn captured(&self) -> (Vec<u8>, u64) {
        (self.tail.bytes.iter().copied().collect(), self.tail.dropped)
    }
}

/// The launcher's own standard output and error, as the destination of tagged lines.
#[derive(Debug, Default)]
pub(super) struct Sink {
    stdout_broken: bool,
    stderr_broken: bool,
}

impl Sink {
    /// Writes complete lines to the launcher's stream of the given kind. A stream that fails
    /// (for example a closed pipe) is given up; the job goes on.
    pub(super) fn write(&mut self, kind: Kind, bytes: &[u8]) {
        let broken = match kind {
            Kind::Stdout => &mut self.stdout_broken,
            Kind::Stderr => &mut self.stderr_broken,
        };
        if *broken || bytes.is_empty() {
            return;
        }
        let result = match kind {
            Kind::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
            Kind::Stderr => {
                let mut err = io::stderr().lock();
                err.write_all(bytes).and_then(|()| err.flush())
            }
        };
        if let Err(e) = result {
            tracing::warn!("forwarding PE output to the launcher's {kind:?} failed: {e}");
            *broken = true;
        }
    }
}

/// Collects the captured output of all PEs (streams in PE order, stdout before stderr).
pub(super) fn collect(streams: &[Stream], n_pes: u32) -> Vec<CapturedOutput> {
    let mut outputs: Vec<CapturedOutput> = (0..n_pes)
        .map(|pe| CapturedOutput {
            pe,
            ..CapturedOutput::default()
        })
        .collect();
    for stream in streams {
        let Some(slot) = outputs.get_mut(stream.pe as usize) else {
            continue;
        };
        let (bytes, dropped) = stream.captured();
        match stream.kind {
            Kind::Stdout => {
                slot.stdout = bytes;
                slot.stdout_dropped = dropped;
            }
            Kind::Stderr => {
                slot.stderr = bytes;
                slot.stderr_dropped = dropped;
            }
        }
    }
    outputs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut tail = Tail {
            bytes: VecDeque::new(),
            limit: 4,
            dropped: 0,
        };
        tail.push(b"ab");
        tail.push(b"cde");
        assert_eq!(tail.bytes.iter().copied().collect::<Vec<_>>(), b"bcde");
        assert_eq!(tail.dropped, 1);
        tail.push(b"0123456");
        assert_eq!(tail.bytes.iter().copied().collect::<Vec<_>>(), b"3456");
        assert_eq!(tail.dropped, 8);
    }

    #[test]
    fn tagging_emits_whole_lines() {
        let (r, _w) = rustix::pipe::pipe().unwrap();
        let mut stream = Stream::new(3, Kind::Stdout, r, 16).unwrap();
        let mut out = Vec::new();
        stream.tag(b"one\ntw", &mut out);
        assert_eq!(out, b"[PE 3] one\n");
        out.clear();
        stream.tag(b"o\nthree", &mut out);
        assert_eq!(out, b"[PE 3] two\n");
        out.clear();
        stream.finish_into(Output::Tagged, &mut out);
        assert_eq!(out, b"[PE 3] three\n");
    }
}
