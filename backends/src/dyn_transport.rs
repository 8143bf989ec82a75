//! The object-safe mirror of [`Transport`], for choosing a transport at run time.

use std::any::Any;
use std::ptr::NonNull;

use crate::{
    AmoOp, Pe, Profile, Signal, Strided, Transport, TransportError, WaitCtl, Watch, Width,
};

/// A completion queue of some transport, behind a trait object.
pub trait DynQueue: Any + Send + Sync {
    /// `self` as `&dyn Any`, for downcasting to the transport's queue type.
    fn as_any(&self) -> &dyn Any;
}

impl<Q: Any + Send + Sync> DynQueue for Q {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl std::fmt::Debug for dyn DynQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DynQueue")
    }
}

/// The object-safe form of [`Transport`]; every `Transport` implements it.
///
/// Queues passed to a `DynTransport` must come from its own [`DynTransport::new_queue`]; a queue
/// of another transport type is a programming error and panics.
#[allow(missing_docs, clippy::too_many_arguments, clippy::missing_safety_doc)]
pub trait DynTransport: Send + Sync {
    fn profile(&self) -> &Profile;
    fn my_pe(&self) -> Pe;
    fn n_pes(&self) -> u32;
    fn segment_size(&self) -> usize;
    fn segment_ptr(&self, pe: Pe) -> Option<NonNull<u8>>;
    fn new_queue(&self) -> Box<dyn DynQueue>;
    fn put(&self, q: &dyn DynQueue, pe: Pe, dst: usize, src: &[u8]) -> Result<(), TransportError>;
    fn get(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError>;
    fn fill(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// See [`Transport::put_nbi`] for the safety contract.
    unsafe fn put_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError>;
    /// See [`Transport::get_nbi`] for the safety contract.
    unsafe fn get_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError>;
    fn iput(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: Strided,
        src: &[u8],
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    fn iget(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: Strided,
        dst: &mut [u8],
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError>;
    fn atomic(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError>;
    /// See [`Transport::atomic_nbi`] for the safety contract.
    unsafe fn atomic_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<(), TransportError>;
    fn signal(&self, q: &dyn DynQueue, pe: Pe, sig: Signal) -> Result<(), TransportError>;
    fn put_signal(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: &[u8],
        sig: Signal,
    ) -> Result<(), TransportError>;
    /// See [`Transport::put_signal_nbi`] for the safety contract.
    unsafe fn put_signal_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
        sig: Signal,
    ) -> Result<(), TransportError>;
    fn fence(&self, q: &dyn DynQueue) -> Result<(), TransportError>;
    fn quiet(&self, q: &dyn DynQueue) -> Result<(), TransportError>;
    fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError>;
    fn wait_local(
        &self,
        watch: Watch,
        pred: &mut dyn FnMut() -> bool,
        ctl: &WaitCtl<'_>,
    ) -> Result<(), TransportError>;
}

fn queue<T: Transport>(q: &dyn DynQueue) -> &T::Queue {
    q.as_any()
        .downcast_ref::<T::Queue>()
        .expect("a completion queue was used with a transport that did not create it")
}

impl<T: Transport> DynTransport for T {
    fn profile(&self) -> &Profile {
        Transport::profile(self)
    }
    fn my_pe(&self) -> Pe {
        Transport::my_pe(self)
    }
    fn n_pes(&self) -> u32 {
        Transport::n_pes(self)
    }
    fn segment_size(&self) -> usize {
        Transport::segment_size(self)
    }
    fn segment_ptr(&self, pe: Pe) -> Option<NonNull<u8>> {
        Transport::segment_ptr(self, pe)
    }
    fn new_queue(&self) -> Box<dyn DynQueue> {
        Box::new(Transport::new_queue(self))
    }
    fn put(&self, q: &dyn DynQueue, pe: Pe, dst: usize, src: &[u8]) -> Result<(), TransportError> {
        Transport::put(self, queue::<T>(q), pe, dst, src)
    }
    fn get(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: usize,
        dst: &mut [u8],
    ) -> Result<(), TransportError> {
        Transport::get(self, queue::<T>(q), pe, src, dst)
    }
    fn fill(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        byte: u8,
        len: usize,
    ) -> Result<(), TransportError> {
        Transport::fill(self, queue::<T>(q), pe, dst, byte, len)
    }
    unsafe fn put_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller upholds `Transport::put_nbi`'s contract, which this forwards.
        unsafe { Transport::put_nbi(self, queue::<T>(q), pe, dst, src, len) }
    }
    unsafe fn get_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller upholds `Transport::get_nbi`'s contract, which this forwards.
        unsafe { Transport::get_nbi(self, queue::<T>(q), pe, src, dst, len) }
    }
    fn iput(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: Strided,
        src: &[u8],
        src_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        Transport::iput(
            self,
            queue::<T>(q),
            pe,
            dst,
            src,
            src_layout,
            elem_size,
            nelems,
        )
    }
    fn iget(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        src: Strided,
        dst: &mut [u8],
        dst_layout: Strided,
        elem_size: usize,
        nelems: usize,
    ) -> Result<(), TransportError> {
        Transport::iget(
            self,
            queue::<T>(q),
            pe,
            src,
            dst,
            dst_layout,
            elem_size,
            nelems,
        )
    }
    fn atomic(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
    ) -> Result<u64, TransportError> {
        Transport::atomic(self, queue::<T>(q), pe, offset, width, op)
    }
    unsafe fn atomic_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        offset: usize,
        width: Width,
        op: AmoOp,
        fetch: *mut u8,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller upholds `Transport::atomic_nbi`'s contract, which this forwards.
        unsafe { Transport::atomic_nbi(self, queue::<T>(q), pe, offset, width, op, fetch) }
    }
    fn signal(&self, q: &dyn DynQueue, pe: Pe, sig: Signal) -> Result<(), TransportError> {
        Transport::signal(self, queue::<T>(q), pe, sig)
    }
    fn put_signal(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: &[u8],
        sig: Signal,
    ) -> Result<(), TransportError> {
        Transport::put_signal(self, queue::<T>(q), pe, dst, src, sig)
    }
    unsafe fn put_signal_nbi(
        &self,
        q: &dyn DynQueue,
        pe: Pe,
        dst: usize,
        src: *const u8,
        len: usize,
        sig: Signal,
    ) -> Result<(), TransportError> {
        // SAFETY: the caller upholds `Transport::put_signal_nbi`'s contract, which this forwards.
        unsafe { Transport::put_signal_nbi(self, queue::<T>(q), pe, dst, src, len, sig) }
    }
    fn fence(&self, q: &dyn DynQueue) -> Result<(), TransportError> {
        Transport::fence(self, queue::<T>(q))
    }
    fn quiet(&self, q: &dyn DynQueue) -> Result<(), TransportError> {
        Transport::quiet(self, queue::<T>(q))
    }
    fn load(&self, offset: usize, width: Width) -> Result<u64, TransportError> {
        Transport::load(self, offset, width)
    }
    fn wait_local(
        &self,
        watch: Watch,
        pred: &mut dyn FnMut() -> bool,
        ctl: &WaitCtl<'_>,
    ) -> Result<(), TransportError> {
        Transport::wait_local(self, watch, pred, ctl)
    }
}

#[cfg(test)]
mod tests {
    use crate::Strided;

    #[test]
    fn strided_span_covers_both_directions() {
        assert_eq!(
            Strided {
                first: 100,
                stride: 8
            }
            .span(4, 3),
            Some((100, 120))
        );
        assert_eq!(
            Strided {
                first: 100,
                stride: -8
            }
            .span(4, 3),
            Some((84, 104))
        );
        assert_eq!(
            Strided {
                first: 4,
                stride: -8
            }
            .span(4, 2),
            None
        );
        assert_eq!(
            Strided {
                first: 7,
                stride: 0
            }
            .span(2, 10),
            Some((7, 9))
        );
        assert_eq!(
            Strided {
                first: 7,
                stride: 3
            }
            .span(2, 0),
            Some((7, 7))
        );
    }
}
