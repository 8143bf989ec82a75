//! The config store's wire format (our own; not CANN's): serde types encoded with `postcard`,
//! each frame behind a little-endian `u32` length prefix of at most [`MAX_FRAME`] bytes.
//!
//! A frame's payload is a request or reply id followed by a message: `(u64, Hello)` first,
//! then `(u64, Request)` from a PE; `(u64, Reply)` from the server, where id [`NOTICE`] marks
//! a notice (a `Failed` reply nobody asked for: a lost peer, a global exit). In postcard a
//! tuple is the concatenation of its fields, so the server encodes an allgather's `Gathered`
//! reply once and sends it to every PE behind a per-PE [`head`].
//!
//! A length above the limit is refused as soon as its four bytes arrive, before the body is
//! read; a payload that does not decode, or has bytes left over, is refused too. Either way
//! the peer that sent it is disconnected with the reason.

use std::fmt;
use std::io::{self, Read};

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use super::error::{BootstrapError, BootstrapErrorKind, RefuseReason};

/// The longest frame payload sent or accepted.
pub(crate) const MAX_FRAME: usize = 64 << 20;
/// Opens every [`Hello`]: not our protocol otherwise.
pub(crate) const MAGIC: [u8; 4] = *b"SHMB";
/// The largest greeting a server reads from a connection that has not greeted yet (a
/// [`Hello`] takes a few dozen bytes).
pub(crate) const MAX_GREETING: usize = 4096;
/// The protocol version; a server refuses PEs of another one.
pub(crate) const VERSION: u16 = 2;
/// The id of server notices.
pub(crate) const NOTICE: u64 = 0;

/// A PE's greeting, the first frame of its connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) struct Hello {
    /// [`MAGIC`].
    pub(crate) magic: [u8; 4],
    /// [`VERSION`].
    pub(crate) version: u16,
    /// The job secret.
    pub(crate) secret: [u8; 16],
    /// The PE's rank.
    pub(crate) rank: u32,
    /// The number of PEs the PE believes the job has.
    pub(crate) n_pes: u32,
    /// The instance the PE wants to join.
    pub(crate) instance_id: u64,
}

/// What every version's [`Hello`] starts with, so another version can be refused clearly.
#[derive(serde::Deserialize)]
pub(crate) struct HelloHead {
    /// The protocol magic.
    pub(crate) magic: [u8; 4],
    /// The protocol version.
    pub(crate) version: u16,
}

/// A PE's request; the PE waits for one reply to each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) enum Request {
    /// `Barrier(seq)`: the PE's `seq`-th collective call (1 = the init rendezvous), a barrier.
    Barrier(u64),
    /// `Allgather(seq, data)`: the PE's `seq`-th collective call, an allgather of its `data`.
    Allgather(u64, Blob),
    /// The PE is finalizing: its next close is not a loss.
    Bye,
    /// `Exit(status)`: the PE ends the job (`global_exit`).
    Exit(i32),
}

/// The server's answer to a request (or, with id [`NOTICE`], a notice).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub(crate) enum Reply {
    /// The greeting is accepted.
    Accept,
    /// The greeting is refused, and why; the server closes the connection.
    Refuse(RefuseReason, String),
    /// Success without data.
    Done,
    /// An allgather's result, indexed by rank.
    Gathered(Vec<Blob>),
    /// The request failed (or, as a notice, the job is broken).
    Failed(BootstrapErrorKind, String),
}

/// Bytes that serde encodes as one length-prefixed block rather than one element at a time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Blob(pub(crate) Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Blob, D::Error> {
        struct Bytes;
        impl Visitor<'_> for Bytes {
            type Value = Blob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Blob, E> {
                Ok(Blob(v.to_vec()))
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

/// The length prefix and the id of a frame whose message (`body_len` encoded bytes) follows.
pub(crate) fn head(id: u64, body_len: usize) -> Result<Vec<u8>, BootstrapError> {
    let id = postcard::to_stdvec(&id)
        .map_err(|e| BootstrapError::invalid("encoding an id").with_source(e))?;
    let len = id.len() + body_len;
    let prefix = u32::try_from(len)
        .ok()
        .filter(|&l| l as usize <= MAX_FRAME)
        .ok_or_else(|| {
            let m =
                format!("a bootstrap frame of {len} bytes exceeds the limit of {MAX_FRAME} bytes");
            BootstrapError::invalid(m)
        })?;
    let mut out = prefix.to_le_bytes().to_vec();
    out.extend_from_slice(&id);
    Ok(out)
}

/// A message's postcard encoding, to send behind one or more [`head`]s.
pub(crate) fn body(msg: &impl Serialize) -> Result<Vec<u8>, BootstrapError> {
    postcard::to_stdvec(msg)
        .map_err(|e| BootstrapError::invalid("encoding a bootstrap frame").with_source(e))
}

/// The whole frame `(id, msg)`.
pub(crate) fn encode(id: u64, msg: &impl Serialize) -> Result<Vec<u8>, BootstrapError> {
    let body = body(msg)?;
    let mut out = head(id, body.len())?;
    out.extend_from_slice(&body);
    Ok(out)
}

/// Decodes a frame's payload as `(id, T)`, all of it.
pub(crate) fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<(u64, T), BootstrapError> {
    match postcard::take_from_bytes::<(u64, T)>(payload) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(BootstrapError::protocol(format!(
            "a bootstrap frame has {} bytes after its message",
            rest.len()
        ))),
        Err(e) => Err(BootstrapError::protocol("a bootstrap frame does not decode").with_source(e)),
    }
}

/// The id and the start of a greeting, whatever its version; `None` if it is not one.
pub(crate) fn peek_hello(payload: &[u8]) -> Option<(u64, HelloHead)> {
    postcard::take_from_bytes::<(u64, HelloHead)>(payload)
        .ok()
        .map(|(h, _)| h)
}

/// Bytes read from one stream, cut into frames. It holds at most one frame in progress plus
/// one read, because a length is checked as soon as its four bytes are in.
#[derive(Debug, Default)]
pub(crate) struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
}

/// The most one read asks for.
const READ_CHUNK: usize = 64 << 10;
/// What a read asks for when no frame in progress needs more: idle connections (a process
/// may hold hundreds, one per instance) keep only this much.
const SMALL_READ: usize = 4 << 10;

/// The payload length that the first four bytes of `avail` announce, once they are in.
fn announced(avail: &[u8]) -> Option<usize> {
    let prefix = avail.get(..4)?.try_into().expect("four bytes");
    Some(u32::from_le_bytes(prefix) as usize)
}

impl FrameBuf {
    /// One `read` from `r`; `Ok(0)` means the peer closed its side. Errors (`WouldBlock`
    /// included) are passed through.
    pub(crate) fn read_from(&mut self, r: &mut impl Read) -> io::Result<usize> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > 4 * SMALL_READ {
                self.buf = Vec::new();
            }
        } else if self.start > self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let avail = &self.buf[self.start..];
        let lacking = announced(avail).map_or(0, |len| (4 + len).saturating_sub(avail.len()));
        let want = lacking.clamp(SMALL_READ, READ_CHUNK);
        let end = self.buf.len();
        self.buf.resize(end + want, 0);
        let n = r.read(&mut self.buf[end..]);
        self.buf.truncate(end + *n.as_ref().unwrap_or(&0));
        self.release_if_empty();
        n
    }

    /// Frees the buffer once everything in it is consumed: PE 0's server holds a connection
    /// per PE, and 4 KiB kept by each idle one was 4 MiB of PE 0's memory at 1,024 PEs.
    fn release_if_empty(&mut self) {
        if self.start == self.buf.len() && self.buf.capacity() != 0 {
            self.buf = Vec::new();
            self.start = 0;
        }
    }

    /// The payload of the next complete frame, if one is buffered; an error for a length
    /// above [`MAX_FRAME`], before its body is read.
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, BootstrapError> {
        self.next_frame_within(MAX_FRAME)
    }

    /// [`FrameBuf::next_frame`] with a lower limit: `max` bytes (a greeting is small, and a
    /// connection that has not greeted yet is not trusted with a large buffer).
    pub(crate) fn next_frame_within(
        &mut self,
        max: usize,
    ) -> Result<Option<&[u8]>, BootstrapError> {
        let avail = &self.buf[self.start..];
        let Some(len) = announced(avail) else {
            self.release_if_empty();
            return Ok(None);
        };
        if len > max {
            return Err(BootstrapError::protocol(format!(
                "a bootstrap frame announces {len} bytes, above the limit of {max} bytes"
            )));
        }
        if avail.len() < 4 + len {
            return Ok(None);
        }
        let s = self.start + 4;
        self.start = s + len;
        Ok(Some(&self.buf[s..s + len]))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn hello() -> Hello {
        Hello {
            magic: MAGIC,
            version: VERSION,
            secret: [7; 16],
            rank: 3,
            n_pes: 8,
            instance_id: 255,
        }
    }

    fn requests() -> Vec<Request> {
        vec![
            Request::Barrier(1),
            Request::Allgather(9, Blob(vec![0xAB; 1000])),
            Request::Allgather(u64::MAX, Blob::default()),
            Request::Bye,
            Request::Exit(-3),
        ]
    }

    fn replies() -> Vec<Reply> {
        vec![
            Reply::Accept,
            Reply::Refuse(RefuseReason::SecretMismatch, "another job".into()),
            Reply::Done,
            Reply::Gathered(vec![Blob(vec![]), Blob(vec![1]), Blob(vec![2, 3])]),
            Reply::Failed(
                BootstrapErrorKind::Timeout {
                    missing: vec![3, 5],
                },
                "late".into(),
            ),
            Reply::Failed(
                BootstrapErrorKind::GlobalExit { pe: 1, status: 9 },
                "exit".into(),
            ),
            Reply::Failed(BootstrapErrorKind::PeerLost { pe: 2 }, "gone".into()),
        ]
    }

    fn frames_of(stream: &[u8]) -> Vec<Vec<u8>> {
        let mut fb = FrameBuf::default();
        let mut r = stream;
        let mut out = Vec::new();
        while fb.read_from(&mut r).unwrap() > 0 {
            while let Some(f) = fb.next_frame().unwrap() {
                out.push(f.to_vec());
            }
        }
        out
    }

    #[test]
    fn every_message_round_trips_through_a_stream() {
        let mut stream = encode(1, &hello()).unwrap();
        for (i, r) in requests().iter().enumerate() {
            stream.extend(encode(i as u64 + 2, r).unwrap());
        }
        for r in &replies() {
            stream.extend(encode(77, r).unwrap());
        }
        let frames = frames_of(&stream);
        assert_eq!(decode::<Hello>(&frames[0]).unwrap(), (1, hello()));
        let n = requests().len();
        for (i, r) in requests().into_iter().enumerate() {
            assert_eq!(
                decode::<Request>(&frames[1 + i]).unwrap(),
                (i as u64 + 2, r)
            );
        }
        for (i, r) in replies().into_iter().enumerate() {
            assert_eq!(decode::<Reply>(&frames[1 + n + i]).unwrap(), (77, r));
        }
    }

    #[test]
    fn a_shared_body_behind_its_own_head_is_the_plain_encoding() {
        let reply = Reply::Gathered(vec![Blob(vec![5; 300]), Blob(vec![6; 70_000])]);
        let shared = body(&reply).unwrap();
        for id in [1, 127, 128, u64::MAX] {
            let mut framed = head(id, shared.len()).unwrap();
            framed.extend_from_slice(&shared);
            assert_eq!(framed, encode(id, &reply).unwrap());
        }
    }

    #[test]
    fn another_version_is_still_recognised() {
        let old = Hello {
            version: 1,
            ..hello()
        };
        let f = &frames_of(&encode(4, &old).unwrap())[0];
        let (id, h) = peek_hello(f).expect("a greeting");
        assert_eq!((id, h.magic, h.version), (4, MAGIC, 1));
        assert!(peek_hello(&[1]).is_none());
    }

    #[test]
    fn an_idle_connection_keeps_no_buffer() {
        let wire = encode(3, &Request::Barrier(1)).unwrap();
        let mut fb = FrameBuf::default();
        let (first, rest) = wire.split_at(5);
        fb.read_from(&mut &first[..]).unwrap();
        assert!(fb.next_frame().unwrap().is_none());
        assert!(fb.buf.capacity() > 0, "a frame in progress keeps its bytes");
        fb.read_from(&mut &rest[..]).unwrap();
        assert!(fb.next_frame().unwrap().is_some());
        assert!(fb.next_frame().unwrap().is_none());
        assert_eq!(fb.buf.capacity(), 0);
        // A read that finds nothing leaves nothing either.
        fb.read_from(&mut &[][..]).unwrap();
        assert_eq!(fb.buf.capacity(), 0);
    }

    #[test]
    fn oversize_and_garbage_frames_are_refused() {
        // A length above the limit is refused from its four bytes, before any body.
        let mut fb = FrameBuf::default();
        let mut r = &((MAX_FRAME + 1) as u32).to_le_bytes()[..];
        fb.read_from(&mut r).unwrap();
        let e = fb.next_frame().unwrap_err();
        assert_eq!(e.kind(), &BootstrapErrorKind::Protocol);
        assert!(e.to_string().contains("above the limit"), "{e}");
        // An HTTP request announces 0x20544547 bytes ("GET "): refused the same way.
        let mut fb = FrameBuf::default();
        fb.read_from(&mut &b"GET / HTTP/1.1\r\n\r\n"[..]).unwrap();
        assert!(fb.next_frame().is_err());
        // Bytes that do not decode, and bytes left over.
        let e = decode::<Request>(&[1, 0xFF, 0xFF]).unwrap_err();
        assert_eq!(e.kind(), &BootstrapErrorKind::Protocol);
        assert!(
            std::error::Error::source(&e).is_some(),
            "postcard's error is the source"
        );
        let mut long = body(&(5u64, Request::Bye)).unwrap();
        long.push(0);
        assert!(
            decode::<Request>(&long)
                .unwrap_err()
                .to_string()
                .contains("1 bytes after")
        );
        // A frame that would exceed the limit is not encoded.
        let big = Request::Allgather(1, Blob(vec![0; MAX_FRAME]));
        assert_eq!(
            encode(1, &big).unwrap_err().kind(),
            &BootstrapErrorKind::Invalid
        );
    }

    #[test]
    fn frames_reassemble_byte_by_byte() {
        let mut stream = Vec::new();
        for r in &requests() {
            stream.extend(encode(3, r).unwrap());
        }
        let mut fb = FrameBuf::default();
        let mut got = Vec::new();
        for b in &stream {
            fb.read_from(&mut std::slice::from_ref(b)).unwrap();
            while let Some(f) = fb.next_frame().unwrap() {
                got.push(decode::<Request>(f).unwrap().1);
            }
        }
        assert_eq!(got, requests());
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode::<Request>(&bytes);
            let _ = decode::<Reply>(&bytes);
            let _ = decode::<Hello>(&bytes);
            let _ = peek_hello(&bytes);
            let mut fb = FrameBuf::default();
            let _ = fb.read_from(&mut &bytes[..]);
            while let Ok(Some(_)) = fb.next_frame() {}
        }
    }
}
