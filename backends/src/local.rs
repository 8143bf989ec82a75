//! The local side of a data movement: host memory, a range of this PE's own segment, or
//! device memory.

/// Where the bytes a put sends come from.
///
/// The core has checked the variant before a transport sees it: a [`Local::Segment`] lies
/// inside this PE's segment and a [`Local::Device`] inside device memory registered with the
/// instance.
///
/// ```
/// use shmem_backend::Local;
/// let data = [1u8, 2, 3];
/// assert_eq!(Local::Host(&data).len(), 3);
/// assert_eq!(Local::Segment { offset: 64, len: 8 }.len(), 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Local<'a> {
    /// Host memory, lent for the call (for non-blocking operations, until the next quiet).
    Host(&'a [u8]),
    /// `len` bytes at `offset` of this PE's own segment (CANN's symmetric source addresses).
    Segment {
        /// The first byte, as an offset into the segment.
        offset: usize,
        /// The number of bytes.
        len: usize,
    },
    /// `len` bytes of device memory at device address `addr` (on the simulator, memory of this
    /// process that stands for device memory).
    Device {
        /// The device address of the first byte.
        addr: u64,
        /// The number of bytes.
        len: usize,
    },
}

impl Local<'_> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        match self {
            Local::Host(b) => b.len(),
            Local::Segment { len, .. } | Local::Device { len, .. } => *len,
        }
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the bytes a get fetches go to; the counterpart of [`Local`].
#[derive(Debug, PartialEq, Eq)]
pub enum LocalMut<'a> {
    /// Host memory, lent for the call (for non-blocking operations, until the next quiet).
    Host(&'a mut [u8]),
    /// `len` bytes at `offset` of this PE's own segment.
    Segment {
        /// The first byte, as an offset into the segment.
        offset: usize,
        /// The number of bytes.
        len: usize,
    },
    /// `len` bytes of device memory at device address `addr`.
    Device {
        /// The device address of the first byte.
        addr: u64,
        /// The number of bytes.
        len: usize,
    },
}

impl LocalMut<'_> {
    /// The number of bytes.
    pub fn len(&self) -> usize {
        match self {
            LocalMut::Host(b) => b.len(),
            LocalMut::Segment { len, .. } | LocalMut::Device { len, .. } => *len,
        }
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
