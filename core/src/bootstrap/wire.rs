//! The config store's wire protocol (our own; not CANN's).
//!
//! # Frames
//!
//! Every message is one frame: a 16-byte header followed by `len` bytes of body. All integers
//! are little-endian.
//!
//! ```text
//! offset size field
//!      0    2 frame magic 0x5348 ("HS" on the wire)
//!      2    2 kind        (table below)
//!      4    4 len         body length, at most MAX_BODY (64 MiB)
//!      8    8 request id  chosen by the client, echoed in the response; 0 = server notice
//! ```
//!
//! A frame with another magic, an unknown kind, a length above the cap, a body that is too
//! short for its fields, or bytes left over after them is rejected with a [`WireError`]; the
//! peer that sent it is disconnected. No allocation is made from a length before it has been
//! checked against the bytes actually present.
//!
//! # Body encodings
//!
//! `str` and `bytes` are a `u32` length followed by that many bytes (`str` is UTF-8).
//!
//! | kind | name | body |
//! |---|---|---|
//! | 0x01 | Hello | `u32 protocol magic "SHMB"`, `u16 version`, `u16 0`, `[u8;16] secret`, `u32 rank`, `u32 n_pes`, `u64 instance_id` |
//! | 0x02 | Set | `str key`, `bytes value` |
//! | 0x03 | Get | `str key`, `u64 wait_ms` (0 = fail at once if absent, `u64::MAX` = wait forever) |
//! | 0x04 | Add | `str key`, `i64 delta` |
//! | 0x05 | Remove | `str key` |
//! | 0x06 | Barrier | `u64 seq` (the client's count of its collective calls, 1 = init rendezvous) |
//! | 0x07 | Allgather | `u64 seq`, `bytes mine` |
//! | 0x08 | Bye | — |
//! | 0x09 | Exit | `i32 status` |
//! | 0x81 | Accept | `u16 server version` |
//! | 0x82 | Refuse | `u8 reason`, `str message` |
//! | 0x83 | Done | — |
//! | 0x84 | Value | `bytes value` |
//! | 0x85 | Counter | `i64 new value` |
//! | 0x86 | Gathered | `u32 count`, `count` × `bytes` (indexed by rank) |
//! | 0x87 | Failed | `u8 code`, then: 1 NotFound `str key`; 2 Timeout `str what`, `u64 after_ms`, `u32 count`, `count` × `u32 rank`; 3 PeerLost `u32 rank`, `str detail`; 4 GlobalExit `u32 rank`, `i32 status`; 5 Protocol `str message`; 6 Invalid `str message` |
//! | 0xC1 | PeerLost notice | `u32 rank`, `str reason` (request id 0) |
//! | 0xC2 | Exit notice | `u32 rank`, `i32 status` (request id 0) |
//!
//! A session: the client sends Hello, the server answers Accept or Refuse (and closes). Then
//! the client sends requests, one at a time, and each gets exactly one response with its
//! request id; notices may arrive between them at any time.

use std::io::{self, Read};

/// Marks the start of every frame.
pub(crate) const FRAME_MAGIC: u16 = 0x5348;
/// Size of a frame header.
pub(crate) const HEADER_LEN: usize = 16;
/// Largest frame body accepted or sent.
pub(crate) const MAX_BODY: usize = 64 << 20;
/// Longest key accepted by the server.
pub(crate) const MAX_KEY: usize = 4096;
/// Identifies our bootstrap protocol inside Hello.
pub(crate) const PROTOCOL_MAGIC: u32 = u32::from_le_bytes(*b"SHMB");
/// Version of this protocol; a server refuses clients of another version.
pub(crate) const PROTOCOL_VERSION: u16 = 1;
/// Request id of server-pushed notices.
pub(crate) const NOTICE_ID: u64 = 0;
/// `wait_ms` of a Get that waits without limit.
pub(crate) const WAIT_FOREVER: u64 = u64::MAX;

/// Frame kinds.
pub(crate) mod kind {
    /// Hello.
    pub(crate) const HELLO: u16 = 0x01;
    /// Set.
    pub(crate) const SET: u16 = 0x02;
    /// Get.
    pub(crate) const GET: u16 = 0x03;
    /// Add.
    pub(crate) const ADD: u16 = 0x04;
    /// Remove.
    pub(crate) const REMOVE: u16 = 0x05;
    /// Barrier.
    pub(crate) const BARRIER: u16 = 0x06;
    /// Allgather.
    pub(crate) const ALLGATHER: u16 = 0x07;
    /// Bye.
    pub(crate) const BYE: u16 = 0x08;
    /// Exit.
    pub(crate) const EXIT: u16 = 0x09;
    /// Accept.
    pub(crate) const ACCEPT: u16 = 0x81;
    /// Refuse.
    pub(crate) const REFUSE: u16 = 0x82;
    /// Done.
    pub(crate) const DONE: u16 = 0x83;
    /// Value.
    pub(crate) const VALUE: u16 = 0x84;
    /// Counter.
    pub(crate) const COUNTER: u16 = 0x85;
    /// Gathered.
    pub(crate) const GATHERED: u16 = 0x86;
    /// Failed.
    pub(crate) const FAILED: u16 = 0x87;
    /// PeerLost notice.
    pub(crate) const NOTICE_PEER_LOST: u16 = 0xC1;
    /// Exit notice.
    pub(crate) const NOTICE_EXIT: u16 = 0xC2;
}

/// A frame or body that does not follow the protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    /// The header does not start with [`FRAME_MAGIC`]: not our protocol, or a desynchronised
    /// stream.
    #[error("not a SHMEM bootstrap frame (magic {found:#06x}, expected {FRAME_MAGIC:#06x})")]
    BadMagic {
        /// What was found.
        found: u16,
    },
    /// A body longer than [`MAX_BODY`].
    #[error("frame of {len} bytes exceeds the limit of {MAX_BODY} bytes")]
    TooLarge {
        /// Its length.
        len: u64,
    },
    /// A kind this side does not know or does not expect.
    #[error("unexpected frame kind {kind:#06x}")]
    UnknownKind {
        /// The kind.
        kind: u16,
    },
    /// The body ends before its fields do.
    #[error("{what} frame is truncated")]
    Truncated {
        /// Which frame.
        what: &'static str,
    },
    /// Bytes left after the last field.
    #[error("{what} frame has {extra} bytes after its fields")]
    Trailing {
        /// Which frame.
        what: &'static str,
        /// How many.
        extra: usize,
    },
    /// A string that is not UTF-8.
    #[error("{what} frame carries a string that is not UTF-8")]
    BadUtf8 {
        /// Which frame.
        what: &'static str,
    },
    /// An enumeration byte out of range.
    #[error("{what} frame has unknown code {code}")]
    UnknownCode {
        /// Which frame.
        what: &'static str,
        /// The code.
        code: u8,
    },
    /// A notice with a request id, or a response with id 0.
    #[error("frame kind {kind:#06x} with request id {id} (notices use 0, responses never do)")]
    BadId {
        /// The kind.
        kind: u16,
        /// The id.
        id: u64,
    },
}

/// A frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Frame kind.
    pub(crate) kind: u16,
    /// Body length.
    pub(crate) len: u32,
    /// Request id (0 for notices).
    pub(crate) request_id: u64,
}

impl Header {
    /// Encodes the header.
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..2].copy_from_slice(&FRAME_MAGIC.to_le_bytes());
        h[2..4].copy_from_slice(&self.kind.to_le_bytes());
        h[4..8].copy_from_slice(&self.len.to_le_bytes());
        h[8..16].copy_from_slice(&self.request_id.to_le_bytes());
        h
    }

    /// Decodes and checks a header (magic and length cap; the kind is checked by the decoders).
    pub(crate) fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, WireError> {
        let magic = u16::from_le_bytes([b[0], b[1]]);
        if magic != FRAME_MAGIC {
            return Err(WireError::BadMagic { found: magic });
        }
        let kind = u16::from_le_bytes([b[2], b[3]]);
        let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if len as usize > MAX_BODY {
            return Err(WireError::TooLarge {
                len: u64::from(len),
            });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[8..16]);
        Ok(Header {
            kind,
            len,
            request_id: u64::from_le_bytes(id),
        })
    }
}

/// The client's greeting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    /// Protocol version the client speaks.
    pub(crate) version: u16,
    /// The job secret.
    pub(crate) secret: [u8; 16],
    /// The client's PE number.
    pub(crate) rank: u32,
    /// Number of PEs the client believes the job has.
    pub(crate) n_pes: u32,
    /// Instance the client wants to join.
    pub(crate) instance_id: u64,
}

/// A client request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Handshake.
    Hello(Hello),
    /// Insert or overwrite a key.
    Set {
        /// Key.
        key: String,
        /// Value.
        value: Vec<u8>,
    },
    /// Read a key, optionally waiting for it to appear.
    Get {
        /// Key.
        key: String,
        /// 0 = fail at once if absent; [`WAIT_FOREVER`] = no limit; else milliseconds.
        wait_ms: u64,
    },
    /// Add to a decimal counter (created at 0).
    Add {
        /// Key.
        key: String,
        /// Increment.
        delta: i64,
    },
    /// Delete a key.
    Remove {
        /// Key.
        key: String,
    },
    /// The client's `seq`-th collective call, a barrier.
    Barrier {
        /// Collective sequence number (1 = init rendezvous).
        seq: u64,
    },
    /// The client's `seq`-th collective call, an allgather.
    Allgather {
        /// Collective sequence number.
        seq: u64,
        /// This PE's contribution.
        data: Vec<u8>,
    },
    /// The client is finalizing; the next close is not a loss.
    Bye,
    /// The client ends the job (global_exit).
    Exit {
        /// Exit status.
        status: i32,
    },
}

/// Why the server refused a Hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RefuseReason {
    /// The job secret differs: the client belongs to another job.
    SecretMismatch,
    /// The rank is not below the server's n_pes.
    RankOutOfRange,
    /// Another live connection has this rank.
    RankAlreadyConnected,
    /// The client's n_pes differs from PE 0's.
    NPesMismatch,
    /// The client wants another instance.
    InstanceMismatch,
    /// The client speaks another protocol version.
    ProtocolVersion,
    /// The rank was lost or called global_exit in this job; it cannot rejoin.
    RankGone,
    /// The server is finishing (a previous incarnation of the job); retry to reach the next.
    ShuttingDown,
}

impl RefuseReason {
    /// Wire code.
    pub(crate) fn code(self) -> u8 {
        match self {
            RefuseReason::SecretMismatch => 1,
            RefuseReason::RankOutOfRange => 2,
            RefuseReason::RankAlreadyConnected => 3,
            RefuseReason::NPesMismatch => 4,
            RefuseReason::InstanceMismatch => 5,
            RefuseReason::ProtocolVersion => 6,
            RefuseReason::RankGone => 7,
            RefuseReason::ShuttingDown => 8,
        }
    }

    /// From a wire code.
    pub(crate) fn from_code(c: u8) -> Option<RefuseReason> {
        Some(match c {
            1 => RefuseReason::SecretMismatch,
            2 => RefuseReason::RankOutOfRange,
            3 => RefuseReason::RankAlreadyConnected,
            4 => RefuseReason::NPesMismatch,
            5 => RefuseReason::InstanceMismatch,
            6 => RefuseReason::ProtocolVersion,
            7 => RefuseReason::RankGone,
            8 => RefuseReason::ShuttingDown,
            _ => return None,
        })
    }

    /// Whether a connecting client should try again (until its init timeout).
    pub(crate) fn is_retryable(self) -> bool {
        matches!(self, RefuseReason::ShuttingDown)
    }
}

/// Why a request failed, as the server reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Get without wait, or Remove, of an absent key.
    NotFound {
        /// Key.
        key: String,
    },
    /// A wait expired.
    Timeout {
        /// What did not happen (a full sentence fragment naming who).
        what: String,
        /// How long the server waited, in milliseconds.
        after_ms: u64,
        /// Ranks that did not arrive, ascending.
        missing: Vec<u32>,
    },
    /// A rank's connection closed without Bye.
    PeerLost {
        /// The lost rank.
        rank: u32,
        /// How it was lost.
        detail: String,
    },
    /// A rank called global_exit.
    GlobalExit {
        /// Who.
        rank: u32,
        /// With which status.
        status: i32,
    },
    /// The request contradicts the protocol (collective sequence or kind mismatch, ...).
    Protocol {
        /// Explanation.
        message: String,
    },
    /// The request is well formed but not acceptable (key too long, counter overflow, ...).
    Invalid {
        /// Explanation.
        message: String,
    },
}

/// A server response to one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Response {
    /// Hello accepted.
    Accept {
        /// Server protocol version.
        version: u16,
    },
    /// Hello refused; the server closes the connection.
    Refuse {
        /// Why.
        reason: RefuseReason,
        /// Human-readable explanation.
        message: String,
    },
    /// Success without data.
    Done,
    /// Get result.
    Value(Vec<u8>),
    /// Add result.
    Counter(i64),
    /// Allgather result, indexed by rank.
    Gathered(Vec<Vec<u8>>),
    /// The request failed.
    Failed(Failure),
}

/// An unsolicited server message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A rank's connection closed without Bye.
    PeerLost {
        /// The rank.
        rank: u32,
        /// How.
        reason: String,
    },
    /// A rank called global_exit.
    Exit {
        /// The rank.
        rank: u32,
        /// Its status.
        status: i32,
    },
}

/// Anything a server sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ServerFrame {
    /// A response to request `id`.
    Response {
        /// Request id.
        id: u64,
        /// The response.
        response: Response,
    },
    /// A notice.
    Notice(Notice),
}

// ---------------------------------------------------------------------------------------------
// Encoding

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) -> Result<(), WireError> {
    let len = u32::try_from(b.len()).map_err(|_| WireError::TooLarge {
        len: b.len() as u64,
    })?;
    put_u32(out, len);
    out.extend_from_slice(b);
    Ok(())
}

/// Appends a frame of `kind`/`id` whose body `body` writes; fails (leaving `out` as it was)
/// if the body exceeds [`MAX_BODY`].
fn frame(
    out: &mut Vec<u8>,
    kind: u16,
    id: u64,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let start = out.len();
    out.extend_from_slice(&[0u8; HEADER_LEN]);
    let r = body(out);
    let len = out.len() - start - HEADER_LEN;
    if let Err(e) = r {
        out.truncate(start);
        return Err(e);
    }
    if len > MAX_BODY {
        out.truncate(start);
        return Err(WireError::TooLarge { len: len as u64 });
    }
    let h = Header {
        kind,
        len: len as u32,
        request_id: id,
    };
    out[start..start + HEADER_LEN].copy_from_slice(&h.encode());
    Ok(())
}

/// Appends the frame of request `req` with id `id` to `out`.
pub(crate) fn encode_request(out: &mut Vec<u8>, id: u64, req: &Request) -> Result<(), WireError> {
    match req {
        Request::Hello(h) => frame(out, kind::HELLO, id, |o| {
            put_u32(o, PROTOCOL_MAGIC);
            o.extend_from_slice(&h.version.to_le_bytes());
            o.extend_from_slice(&0u16.to_le_bytes());
            o.extend_from_slice(&h.secret);
            put_u32(o, h.rank);
            put_u32(o, h.n_pes);
            o.extend_from_slice(&h.instance_id.to_le_bytes());
            Ok(())
        }),
        Request::Set { key, value } => frame(out, kind::SET, id, |o| {
            put_bytes(o, key.as_bytes())?;
            put_bytes(o, value)
        }),
        Request::Get { key, wait_ms } => frame(out, kind::GET, id, |o| {
            put_bytes(o, key.as_bytes())?;
            o.extend_from_slice(&wait_ms.to_le_bytes());
            Ok(())
        }),
        Request::Add { key, delta } => frame(out, kind::ADD, id, |o| {
            put_bytes(o, key.as_bytes())?;
            o.extend_from_slice(&delta.to_le_bytes());
            Ok(())
        }),
        Request::Remove { key } => frame(out, kind::REMOVE, id, |o| put_bytes(o, key.as_bytes())),
        Request::Barrier { seq } => frame(out, kind::BARRIER, id, |o| {
            o.extend_from_slice(&seq.to_le_bytes());
            Ok(())
        }),
        Request::Allgather { seq, data } => frame(out, kind::ALLGATHER, id, |o| {
            o.extend_from_slice(&seq.to_le_bytes());
            put_bytes(o, data)
        }),
        Request::Bye => frame(out, kind::BYE, id, |_| Ok(())),
        Request::Exit { status } => frame(out, kind::EXIT, id, |o| {
            o.extend_from_slice(&status.to_le_bytes());
            Ok(())
        }),
    }
}

/// The body of a Gathered response (encoded once, shared by every rank's reply).
pub(crate) fn gathered_body<'a>(
    parts: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, WireError> {
    let mut o = Vec::new();
    let n = u32::try_from(parts.len()).map_err(|_| WireError::TooLarge { len: u64::MAX })?;
    put_u32(&mut o, n);
    for p in parts {
        put_bytes(&mut o, p)?;
        if o.len() > MAX_BODY {
            return Err(WireError::TooLarge {
                len: o.len() as u64,
            });
        }
    }
    Ok(o)
}

/// Appends the frame of response `resp` to request `id`.
pub(crate) fn encode_response(
    out: &mut Vec<u8>,
    id: u64,
    resp: &Response,
) -> Result<(), WireError> {
    match resp {
        Response::Accept { version } => frame(out, kind::ACCEPT, id, |o| {
            o.extend_from_slice(&version.to_le_bytes());
            Ok(())
        }),
        Response::Refuse { reason, message } => frame(out, kind::REFUSE, id, |o| {
            o.push(reason.code());
            put_bytes(o, message.as_bytes())
        }),
        Response::Done => frame(out, kind::DONE, id, |_| Ok(())),
        Response::Value(v) => frame(out, kind::VALUE, id, |o| put_bytes(o, v)),
        Response::Counter(c) => frame(out, kind::COUNTER, id, |o| {
            o.extend_from_slice(&c.to_le_bytes());
            Ok(())
        }),
        Response::Gathered(parts) => {
            let body = gathered_body(parts.iter().map(Vec::as_slice))?;
            frame(out, kind::GATHERED, id, |o| {
                o.extend_from_slice(&body);
                Ok(())
            })
        }
        Response::Failed(f) => frame(out, kind::FAILED, id, |o| {
            match f {
                Failure::NotFound { key } => {
                    o.push(1);
                    put_bytes(o, key.as_bytes())?;
                }
                Failure::Timeout {
                    what,
                    after_ms,
                    missing,
                } => {
                    o.push(2);
                    put_bytes(o, what.as_bytes())?;
                    o.extend_from_slice(&after_ms.to_le_bytes());
                    let n = u32::try_from(missing.len()).map_err(|_| WireError::TooLarge {
                        len: missing.len() as u64,
                    })?;
                    put_u32(o, n);
                    for r in missing {
                        put_u32(o, *r);
                    }
                }
                Failure::PeerLost { rank, detail } => {
                    o.push(3);
                    put_u32(o, *rank);
                    put_bytes(o, detail.as_bytes())?;
                }
                Failure::GlobalExit { rank, status } => {
                    o.push(4);
                    put_u32(o, *rank);
                    o.extend_from_slice(&status.to_le_bytes());
                }
                Failure::Protocol { message } => {
                    o.push(5);
                    put_bytes(o, message.as_bytes())?;
                }
                Failure::Invalid { message } => {
                    o.push(6);
                    put_bytes(o, message.as_bytes())?;
                }
            }
            Ok(())
        }),
    }
}

/// Appends the frame of a notice.
pub(crate) fn encode_notice(out: &mut Vec<u8>, n: &Notice) -> Result<(), WireError> {
    match n {
        Notice::PeerLost { rank, reason } => frame(out, kind::NOTICE_PEER_LOST, NOTICE_ID, |o| {
            put_u32(o, *rank);
            put_bytes(o, reason.as_bytes())
        }),
        Notice::Exit { rank, status } => frame(out, kind::NOTICE_EXIT, NOTICE_ID, |o| {
            put_u32(o, *rank);
            o.extend_from_slice(&status.to_le_bytes());
            Ok(())
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// A bounds-checked reader over one frame body.
struct Body<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Body<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Self {
        Body { buf, pos: 0, what }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or(WireError::Truncated { what: self.what })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, WireError> {
        let b = self.bytes()?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| WireError::BadUtf8 { what: self.what })
    }

    /// Checks a claimed element count against the bytes left (each element needs at least
    /// `min_size` bytes), so that no allocation is made from a forged count.
    fn count(&mut self, min_size: usize) -> Result<usize, WireError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_size) > self.buf.len() - self.pos {
            return Err(WireError::Truncated { what: self.what });
        }
        Ok(n)
    }

    fn finish(self) -> Result<(), WireError> {
        let extra = self.buf.len() - self.pos;
        if extra != 0 {
            return Err(WireError::Trailing {
                what: self.what,
                extra,
            });
        }
        Ok(())
    }
}

/// Result of decoding the first part of a Hello: the magic and version, which decide whether
/// the rest can be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HelloDecode {
    /// Same protocol and version: the full greeting.
    Ok(Hello),
    /// Our protocol, another version (the rest is not decoded).
    OtherVersion(u16),
    /// Not our protocol at all.
    NotOurs,
}

/// Decodes a Hello body.
pub(crate) fn decode_hello(body: &[u8]) -> Result<HelloDecode, WireError> {
    let mut b = Body::new(body, "Hello");
    if b.u32()? != PROTOCOL_MAGIC {
        return Ok(HelloDecode::NotOurs);
    }
    let version = b.u16()?;
    if version != PROTOCOL_VERSION {
        return Ok(HelloDecode::OtherVersion(version));
    }
    let _reserved = b.u16()?;
    let secret = b.array::<16>()?;
    let rank = b.u32()?;
    let n_pes = b.u32()?;
    let instance_id = b.u64()?;
    b.finish()?;
    Ok(HelloDecode::Ok(Hello {
        version,
        secret,
        rank,
        n_pes,
        instance_id,
    }))
}

/// Decodes a request frame (Hello included, which must be of our version).
pub(crate) fn decode_request(h: &Header, body: &[u8]) -> Result<Request, WireError> {
    let req = match h.kind {
        kind::HELLO => {
            return match decode_hello(body)? {
                HelloDecode::Ok(hello) => Ok(Request::Hello(hello)),
                HelloDecode::OtherVersion(_) | HelloDecode::NotOurs => {
                    Err(WireError::UnknownKind { kind: h.kind })
                }
            };
        }
        kind::SET => {
            let mut b = Body::new(body, "Set");
            let key = b.string()?;
            let value = b.bytes()?.to_vec();
            b.finish()?;
            Request::Set { key, value }
        }
        kind::GET => {
            let mut b = Body::new(body, "Get");
            let key = b.string()?;
            let wait_ms = b.u64()?;
            b.finish()?;
            Request::Get { key, wait_ms }
        }
        kind::ADD => {
            let mut b = Body::new(body, "Add");
            let key = b.string()?;
            let delta = b.i64()?;
            b.finish()?;
            Request::Add { key, delta }
        }
        kind::REMOVE => {
            let mut b = Body::new(body, "Remove");
            let key = b.string()?;
            b.finish()?;
            Request::Remove { key }
        }
        kind::BARRIER => {
            let mut b = Body::new(body, "Barrier");
            let seq = b.u64()?;
            b.finish()?;
            Request::Barrier { seq }
        }
        kind::ALLGATHER => {
            let mut b = Body::new(body, "Allgather");
            let seq = b.u64()?;
            let data = b.bytes()?.to_vec();
            b.finish()?;
            Request::Allgather { seq, data }
        }
        kind::BYE => {
            Body::new(body, "Bye").finish()?;
            Request::Bye
        }
        kind::EXIT => {
            let mut b = Body::new(body, "Exit");
            let status = b.i32()?;
            b.finish()?;
            Request::Exit { status }
        }
        k => return Err(WireError::UnknownKind { kind: k }),
    };
    if h.request_id == NOTICE_ID {
        return Err(WireError::BadId {
            kind: h.kind,
            id: h.request_id,
        });
    }
    Ok(req)
}

/// Decodes a frame sent by the server.
pub(crate) fn decode_server_frame(h: &Header, body: &[u8]) -> Result<ServerFrame, WireError> {
    let is_notice = matches!(h.kind, kind::NOTICE_PEER_LOST | kind::NOTICE_EXIT);
    if is_notice != (h.request_id == NOTICE_ID) {
        return Err(WireError::BadId {
            kind: h.kind,
            id: h.request_id,
        });
    }
    let response = match h.kind {
        kind::NOTICE_PEER_LOST => {
            let mut b = Body::new(body, "PeerLost notice");
            let rank = b.u32()?;
            let reason = b.string()?;
            b.finish()?;
            return Ok(ServerFrame::Notice(Notice::PeerLost { rank, reason }));
        }
        kind::NOTICE_EXIT => {
            let mut b = Body::new(body, "Exit notice");
            let rank = b.u32()?;
            let status = b.i32()?;
            b.finish()?;
            return Ok(ServerFrame::Notice(Notice::Exit { rank, status }));
        }
        kind::ACCEPT => {
            let mut b = Body::new(body, "Accept");
            let version = b.u16()?;
            b.finish()?;
            Response::Accept { version }
        }
        kind::REFUSE => {
            let mut b = Body::new(body, "Refuse");
            let code = b.u8()?;
            let reason = RefuseReason::from_code(code).ok_or(WireError::UnknownCode {
                what: "Refuse",
                code,
            })?;
            let message = b.string()?;
            b.finish()?;
            Response::Refuse { reason, message }
        }
        kind::DONE => {
            Body::new(body, "Done").finish()?;
            Response::Done
        }
        kind::VALUE => {
            let mut b = Body::new(body, "Value");
            let v = b.bytes()?.to_vec();
            b.finish()?;
            Response::Value(v)
        }
        kind::COUNTER => {
            let mut b = Body::new(body, "Counter");
            let c = b.i64()?;
            b.finish()?;
            Response::Counter(c)
        }
        kind::GATHERED => {
            let mut b = Body::new(body, "Gathered");
            let n = b.count(4)?;
            let mut parts = Vec::with_capacity(n);
            for _ in 0..n {
                parts.push(b.bytes()?.to_vec());
            }
            b.finish()?;
            Response::Gathered(parts)
        }
        kind::FAILED => {
            let mut b = Body::new(body, "Failed");
            let code = b.u8()?;
            let f = match code {
                1 => Failure::NotFound { key: b.string()? },
                2 => {
                    let what = b.string()?;
                    let after_ms = b.u64()?;
                    let n = b.count(4)?;
                    let mut missing = Vec::with_capacity(n);
                    for _ in 0..n {
                        missing.push(b.u32()?);
                    }
                    Failure::Timeout {
                        what,
                        after_ms,
                        missing,
                    }
                }
                3 => Failure::PeerLost {
                    rank: b.u32()?,
                    detail: b.string()?,
                },
                4 => Failure::GlobalExit {
                    rank: b.u32()?,
                    status: b.i32()?,
                },
                5 => Failure::Protocol {
                    message: b.string()?,
                },
                6 => Failure::Invalid {
                    message: b.string()?,
                },
                c => {
                    return Err(WireError::UnknownCode {
                        what: "Failed",
                        code: c,
                    });
                }
            };
            b.finish()?;
            Response::Failed(f)
        }
        k => return Err(WireError::UnknownKind { kind: k }),
    };
    Ok(ServerFrame::Response {
        id: h.request_id,
        response,
    })
}

// ---------------------------------------------------------------------------------------------
// Stream reassembly

/// Bytes read from one stream, cut into frames. Memory is bounded by one maximal frame plus
/// one read chunk, because a header is validated as soon as its 16 bytes are present. The
/// storage is reused between reads (no zeroing per read) and given back after a large frame.
#[derive(Debug, Default)]
pub(crate) struct FrameBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

/// Bytes read per `read` call.
pub(crate) const READ_CHUNK: usize = 64 << 10;

/// Bytes read per `read` call when no frame in progress needs more: idle connections (a
/// process may hold hundreds, one per instance) keep only this much.
const SMALL_READ: usize = 4 << 10;

/// An empty buffer larger than this is released rather than kept.
const KEEP_AT_MOST: usize = 4 * SMALL_READ;

/// What one [`FrameBuf::read_from`] call saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadOutcome {
    /// This many bytes arrived.
    Data(usize),
    /// The peer closed its side.
    Eof,
}

impl FrameBuf {
    /// An empty buffer.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    /// Bytes held that are not yet part of a returned frame.
    pub(crate) fn pending(&self) -> usize {
        self.end - self.start
    }

    /// Makes room for `n` more bytes after `end`.
    fn make_room(&mut self, n: usize) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > KEEP_AT_MOST {
                self.buf = Vec::new();
            }
        } else if self.start > 0 && self.buf.len() - self.end < n {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < n {
            self.buf.resize(self.end + n, 0);
        }
    }

    #[cfg(test)]
    /// Appends bytes (used by tests and by callers that read elsewhere).
    pub(crate) fn extend(&mut self, data: &[u8]) {
        self.make_room(data.len());
        self.buf[self.end..self.end + data.len()].copy_from_slice(data);
        self.end += data.len();
    }

    /// How much the next read should ask for: what the frame in progress still lacks (at
    /// least [`SMALL_READ`], at most [`READ_CHUNK`]), else [`SMALL_READ`].
    fn read_size(&self) -> usize {
        let avail = &self.buf[self.start..self.end];
        let Some(hb) = avail
            .get(..HEADER_LEN)
            .and_then(|h| <&[u8; HEADER_LEN]>::try_from(h).ok())
        else {
            return SMALL_READ;
        };
        match Header::decode(hb) {
            Ok(h) => (HEADER_LEN + h.len as usize)
                .saturating_sub(avail.len())
                .clamp(SMALL_READ, READ_CHUNK),
            Err(_) => SMALL_READ,
        }
    }

    /// One `read` of up to [`READ_CHUNK`] bytes from `r`. Errors (`WouldBlock` included) are
    /// passed through.
    pub(crate) fn read_from(&mut self, r: &mut impl Read) -> io::Result<ReadOutcome> {
        let want = self.read_size();
        self.make_room(want);
        let n = r.read(&mut self.buf[self.end..self.end + want])?;
        if n == 0 {
            return Ok(ReadOutcome::Eof);
        }
        self.end += n;
        Ok(ReadOutcome::Data(n))
    }

    /// The next complete frame, if one is buffered. An invalid header is an error at once,
    /// before its body arrives.
    pub(crate) fn next_frame(&mut self) -> Result<Option<(Header, &[u8])>, WireError> {
        let avail = &self.buf[self.start..self.end];
        if avail.len() < HEADER_LEN {
            return Ok(None);
        }
        let mut hb = [0u8; HEADER_LEN];
        hb.copy_from_slice(&avail[..HEADER_LEN]);
        let h = Header::decode(&hb)?;
        let total = HEADER_LEN + h.len as usize;
        if avail.len() < total {
            return Ok(None);
        }
        let body_start = self.start + HEADER_LEN;
        self.start += total;
        Ok(Some((
            h,
            &self.buf[body_start..body_start + h.len as usize],
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all_requests() -> Vec<Request> {
        vec![
            Request::Hello(Hello {
                version: PROTOCOL_VERSION,
                secret: [7; 16],
                rank: 3,
                n_pes: 8,
                instance_id: 255,
            }),
            Request::Set {
                key: "k".into(),
                value: vec![1, 2, 3],
            },
            Request::Set {
                key: String::new(),
                value: vec![],
            },
            Request::Get {
                key: "key".into(),
                wait_ms: 0,
            },
            Request::Get {
                key: "key".into(),
                wait_ms: WAIT_FOREVER,
            },
            Request::Add {
                key: "c".into(),
                delta: -5,
            },
            Request::Remove { key: "c".into() },
            Request::Barrier { seq: 1 },
            Request::Allgather {
                seq: 9,
                data: vec![0xAB; 1000],
            },
            Request::Bye,
            Request::Exit { status: -3 },
        ]
    }

    fn all_responses() -> Vec<Response> {
        vec![
            Response::Accept { version: 1 },
            Response::Refuse {
                reason: RefuseReason::SecretMismatch,
                message: "another job".into(),
            },
            Response::Done,
            Response::Value(b"v".to_vec()),
            Response::Counter(i64::MIN),
            Response::Gathered(vec![vec![], vec![1], vec![2, 3]]),
            Response::Failed(Failure::NotFound { key: "x".into() }),
            Response::Failed(Failure::Timeout {
                what: "PE 3 never arrived".into(),
                after_ms: 300,
                missing: vec![3, 5],
            }),
            Response::Failed(Failure::PeerLost {
                rank: 2,
                detail: "closed".into(),
            }),
            Response::Failed(Failure::GlobalExit { rank: 1, status: 9 }),
            Response::Failed(Failure::Protocol {
                message: "seq".into(),
            }),
            Response::Failed(Failure::Invalid {
                message: "key".into(),
            }),
        ]
    }

    fn split(bytes: &[u8]) -> (Header, &[u8]) {
        let mut hb = [0u8; HEADER_LEN];
        hb.copy_from_slice(&bytes[..HEADER_LEN]);
        let h = Header::decode(&hb).unwrap();
        assert_eq!(h.len as usize, bytes.len() - HEADER_LEN);
        (h, &bytes[HEADER_LEN..])
    }

    #[test]
    fn requests_round_trip() {
        for (i, r) in all_requests().into_iter().enumerate() {
            let mut out = Vec::new();
            encode_request(&mut out, 100 + i as u64, &r).unwrap();
            let (h, body) = split(&out);
            assert_eq!(h.request_id, 100 + i as u64);
            assert_eq!(decode_request(&h, body).unwrap(), r);
        }
    }

    #[test]
    fn responses_and_notices_round_trip() {
        for r in all_responses() {
            let mut out = Vec::new();
            encode_response(&mut out, 42, &r).unwrap();
            let (h, body) = split(&out);
            assert_eq!(
                decode_server_frame(&h, body).unwrap(),
                ServerFrame::Response {
                    id: 42,
                    response: r
                }
            );
        }
        for n in [
            Notice::PeerLost {
                rank: 4,
                reason: "eof".into(),
            },
            Notice::Exit { rank: 0, status: 1 },
        ] {
            let mut out = Vec::new();
            encode_notice(&mut out, &n).unwrap();
            let (h, body) = split(&out);
            assert_eq!(h.request_id, NOTICE_ID);
            assert_eq!(
                decode_server_frame(&h, body).unwrap(),
                ServerFrame::Notice(n)
            );
        }
    }

    #[test]
    fn header_checks() {
        let mut h = Header {
            kind: kind::DONE,
            len: 0,
            request_id: 1,
        }
        .encode();
        h[0] = 0x47; // "GET / HTTP" and friends
        assert!(matches!(
            Header::decode(&h),
            Err(WireError::BadMagic { .. })
        ));
        let h = Header {
            kind: kind::SET,
            len: (MAX_BODY + 1) as u32,
            request_id: 1,
        }
        .encode();
        assert!(matches!(
            Header::decode(&h),
            Err(WireError::TooLarge { .. })
        ));
        let h = Header {
            kind: kind::SET,
            len: MAX_BODY as u32,
            request_id: 1,
        }
        .encode();
        assert!(Header::decode(&h).is_ok());
    }

    #[test]
    fn bad_bodies_are_errors() {
        let hdr = |kind, len, id| Header {
            kind,
            len,
            request_id: id,
        };
        // Truncated.
        let mut out = Vec::new();
        encode_request(
            &mut out,
            1,
            &Request::Set {
                key: "abc".into(),
                value: vec![1; 10],
            },
        )
        .unwrap();
        let (h, body) = split(&out);
        for cut in 0..body.len() {
            let e = decode_request(&hdr(h.kind, cut as u32, 1), &body[..cut]).unwrap_err();
            assert!(matches!(e, WireError::Truncated { .. }), "{cut}: {e}");
        }
        // Trailing bytes.
        let mut long = body.to_vec();
        long.push(0);
        assert!(matches!(
            decode_request(&hdr(h.kind, long.len() as u32, 1), &long),
            Err(WireError::Trailing { extra: 1, .. })
        ));
        // Unknown kind; a response kind sent to the server; a request kind sent to a client.
        assert!(matches!(
            decode_request(&hdr(0x55, 0, 1), &[]),
            Err(WireError::UnknownKind { .. })
        ));
        assert!(matches!(
            decode_request(&hdr(kind::DONE, 0, 1), &[]),
            Err(WireError::UnknownKind { .. })
        ));
        assert!(matches!(
            decode_server_frame(&hdr(kind::BYE, 0, 1), &[]),
            Err(WireError::UnknownKind { .. })
        ));
        // Ids: requests and responses never use 0, notices always do.
        assert!(matches!(
            decode_request(&hdr(kind::BYE, 0, 0), &[]),
            Err(WireError::BadId { .. })
        ));
        assert!(matches!(
            decode_server_frame(&hdr(kind::DONE, 0, 0), &[]),
            Err(WireError::BadId { .. })
        ));
        let mut out = Vec::new();
        encode_notice(&mut out, &Notice::Exit { rank: 1, status: 2 }).unwrap();
        let (h, body) = split(&out);
        assert!(matches!(
            decode_server_frame(&hdr(h.kind, h.len, 5), body),
            Err(WireError::BadId { .. })
        ));
        // Non-UTF-8 key.
        let body = [2, 0, 0, 0, 0xFF, 0xFE, 0, 0, 0, 0];
        assert!(matches!(
            decode_request(&hdr(kind::SET, 10, 1), &body),
            Err(WireError::BadUtf8 { .. })
        ));
        // A forged element count does not allocate.
        let body = [0xFF, 0xFF, 0xFF, 0xFF];
        assert!(matches!(
            decode_server_frame(&hdr(kind::GATHERED, 4, 1), &body),
            Err(WireError::Truncated { .. })
        ));
        // Unknown codes.
        assert!(matches!(
            decode_server_frame(&hdr(kind::FAILED, 1, 1), &[99]),
            Err(WireError::UnknownCode { .. })
        ));
        assert!(matches!(
            decode_server_frame(&hdr(kind::REFUSE, 5, 1), &[99, 0, 0, 0, 0]),
            Err(WireError::UnknownCode { .. })
        ));
    }

    #[test]
    fn hello_versions() {
        let mut out = Vec::new();
        let hello = Hello {
            version: PROTOCOL_VERSION,
            secret: [1; 16],
            rank: 0,
            n_pes: 1,
            instance_id: 0,
        };
        encode_request(&mut out, 1, &Request::Hello(hello.clone())).unwrap();
        let (_, body) = split(&out);
        assert_eq!(decode_hello(body).unwrap(), HelloDecode::Ok(hello));
        let mut other = body.to_vec();
        other[4..6].copy_from_slice(&7u16.to_le_bytes());
        assert_eq!(decode_hello(&other).unwrap(), HelloDecode::OtherVersion(7));
        other[0] = b'X';
        assert_eq!(decode_hello(&other).unwrap(), HelloDecode::NotOurs);
        assert!(decode_hello(&[1, 2]).is_err());
    }

    #[test]
    fn oversized_frames_are_not_encoded() {
        let mut out = vec![9u8];
        let big = Request::Allgather {
            seq: 1,
            data: vec![0; MAX_BODY],
        };
        assert!(matches!(
            encode_request(&mut out, 1, &big),
            Err(WireError::TooLarge { .. })
        ));
        assert_eq!(
            out,
            vec![9u8],
            "a failed encode leaves the buffer as it was"
        );
        let parts = [vec![0u8; MAX_BODY / 2], vec![0u8; MAX_BODY / 2]];
        assert!(gathered_body(parts.iter().map(Vec::as_slice)).is_err());
    }

    #[test]
    fn frame_buf_reassembles_byte_by_byte() {
        let mut stream = Vec::new();
        for (i, r) in all_requests().iter().enumerate() {
            encode_request(&mut stream, i as u64 + 1, r).unwrap();
        }
        let mut fb = FrameBuf::new();
        let mut got = Vec::new();
        for b in &stream {
            fb.extend(std::slice::from_ref(b));
            while let Some((h, body)) = fb.next_frame().unwrap() {
                got.push(decode_request(&h, body).unwrap());
            }
        }
        assert_eq!(got, all_requests());
        assert_eq!(fb.pending(), 0);
    }

    #[test]
    fn frame_buf_rejects_garbage_header_early() {
        let mut fb = FrameBuf::new();
        fb.extend(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(matches!(fb.next_frame(), Err(WireError::BadMagic { .. })));
        let mut fb = FrameBuf::new();
        let h = Header {
            kind: kind::SET,
            len: u32::MAX,
            request_id: 1,
        }
        .encode();
        fb.extend(&h);
        assert!(matches!(fb.next_frame(), Err(WireError::TooLarge { .. })));
    }

    #[test]
    fn frame_buf_reads_from_a_reader() {
        let mut stream = Vec::new();
        encode_request(
            &mut stream,
            5,
            &Request::Allgather {
                seq: 2,
                data: vec![3; 200_000],
            },
        )
        .unwrap();
        let mut r = io::Cursor::new(stream);
        let mut fb = FrameBuf::new();
        let mut frames = 0;
        loop {
            match fb.read_from(&mut r).unwrap() {
                ReadOutcome::Eof => break,
                ReadOutcome::Data(_) => {
                    while let Some((h, body)) = fb.next_frame().unwrap() {
                        assert_eq!(h.request_id, 5);
                        assert!(matches!(
                            decode_request(&h, body).unwrap(),
                            Request::Allgather { seq: 2, .. }
                        ));
                        frames += 1;
                    }
                }
            }
        }
        assert_eq!(frames, 1);
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), kind in any::<u16>(), id in any::<u64>()) {
            let h = Header { kind, len: bytes.len() as u32, request_id: id };
            let _ = decode_request(&h, &bytes);
            let _ = decode_server_frame(&h, &bytes);
            let _ = decode_hello(&bytes);
            let mut fb = FrameBuf::new();
            fb.extend(&bytes);
            while let Ok(Some(_)) = fb.next_frame() {}
        }

        #[test]
        fn mutated_frames_never_panic(which in 0usize..11, pos in any::<usize>(), val in any::<u8>()) {
            let reqs = all_requests();
            let mut out = Vec::new();
            encode_request(&mut out, 1, &reqs[which % reqs.len()]).unwrap();
            let p = pos % out.len();
            out[p] = val;
            let mut fb = FrameBuf::new();
            fb.extend(&out);
            if let Ok(Some((h, body))) = fb.next_frame() {
                let _ = decode_request(&h, body);
                let _ = decode_server_frame(&h, body);
            }
        }
    }
}
