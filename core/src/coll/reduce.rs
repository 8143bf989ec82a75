//! Reductions: and, or, xor, max, min, sum and product over a team.

use bytemuck::{Pod, Zeroable};
use shmem_backend::{Local, LocalMut, SignalOp};

use super::{Bytes, REDUCE_SLOT, RS_MIN_BYTES, check_len};
use crate::error::{Error, Result};
use crate::sym::SymSlice;
use crate::team::{RADIX, Team, words};

/// Bytes of the pieces a reduce-scatter owner combines at a time: its running result and one
/// member's part, both within the L2 cache.
const PIECE_BYTES: usize = 32 << 10;

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
}

/// A `float _Complex` (`complexf` in OpenSHMEM's tables).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Complex32 {
    /// The real part.
    pub re: f32,
    /// The imaginary part.
    pub im: f32,
}

/// A `double _Complex` (`complexd` in OpenSHMEM's tables).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Complex64 {
    /// The real part.
    pub re: f64,
    /// The imaginary part.
    pub im: f64,
}

/// A type that reductions accept, with the operators OpenSHMEM's type table allows for it.
pub trait Reducible: Pod + Send + Sync + 'static {
    /// Whether `op` is defined for the type.
    fn supports(op: ReduceOp) -> bool;
    /// `a op b`; only called with a supported `op`.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(_: ReduceOp) -> bool {
                true
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                }
            }
        }
    )*};
}
int_reducible!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! float_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Sum | ReduceOp::Prod)
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Sum => a + b,
                    ReduceOp::Prod => a * b,
                    _ => unreachable!("checked by supports"),
                }
            }
        }
    )*};
}
float_reducible!(f32, f64);

macro_rules! complex_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn supports(op: ReduceOp) -> bool {
                matches!(op, ReduceOp::Sum | ReduceOp::Prod)
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => Self { re: a.re + b.re, im: a.im + b.im },
                    ReduceOp::Prod => Self { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re },
                    _ => unreachable!("checked by supports"),
                }
            }
        }
    )*};
}
complex_reducible!(Complex32, Complex64);

/// `acc[i] = acc[i] op other[i]`, with `other` the bytes of as many `T`s.
fn combine_into<T: Reducible>(op: ReduceOp, acc: &mut [T], other: &[u8]) {
    let copied: Vec<T>;
    let other: &[T] = match bytemuck::try_cast_slice(other) {
        Ok(v) => v,
        Err(_) => {
            copied = bytemuck::pod_collect_to_vec(other);
            &copied
        }
    };
    // One loop per operator, so that the operator is a constant inside the loop.
    macro_rules! each {
        ($op:expr) => {
            for (a, b) in acc.iter_mut().zip(other) {
                *a = T::combine($op, *a, *b);
            }
        };
    }
    match op {
        ReduceOp::And => each!(ReduceOp::And),
        ReduceOp::Or => each!(ReduceOp::Or),
        ReduceOp::Xor => each!(ReduceOp::Xor),
        ReduceOp::Max => each!(ReduceOp::Max),
        ReduceOp::Min => each!(ReduceOp::Min),
        ReduceOp::Sum => each!(ReduceOp::Sum),
        ReduceOp::Prod => each!(ReduceOp::Prod),
    }
}

impl Team {
    /// Combines every member's `source` element-wise with `op` into `dest` on every member
    /// (`shmem_<op>_reduce`). `dest` and `source` have the same length and may be the same
    /// array. An operator the type does not support (bitwise operators on floating point,
    /// ordering on complex numbers) is refused.
    pub fn reduce<T: Reducible>(
        &self,
        op: ReduceOp,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.coll_prologue([dest.home, source.home])?;
        check_len("reduce", "source", source.len(), dest.len())?;
        if !T::supports(op) {
            return Err(Error::InvalidParam(format!(
                "{op:?} is not a reduction of {}",
                std::any::type_name::<T>()
            )));
        }
        let overlap = source.offset() < dest.offset() + dest.byte_len()
            && dest.offset() < source.offset() + source.byte_len();
        if overlap && source.offset() != dest.offset() {
            return Err(Error::InvalidParam(
                "reduce: source and dest must be the same array or not overlap".into(),
            ));
        }
        let n = self.n_pes();
        if n > 1 && n <= RADIX + 1 && dest.byte_len() >= RS_MIN_BYTES {
            return self.reduce_scatter_allgather(op, dest, source);
        }
        let r = self.my_pe();
        let sz = std::mem::size_of::<T>();
        let per_chunk = (REDUCE_SLOT / sz).max(1);
        let first_child = r * RADIX + 1;
        let children = if first_child < n {
            (n - first_child).min(RADIX)
        } else {
            0
        };
        let mut c = self.state.coll();
        let mut lo = 0;
        loop {
            let hi = (lo + per_chunk).min(dest.len());
            let bytes = (hi - lo) * sz;
            c.chunk += 1;
            let chunk = c.chunk;
            let mut acc: Vec<T> =
                bytemuck::pod_collect_to_vec(&self.read_own(source.offset() + lo * sz, bytes)?);
            if children > 0 {
                c.up += u64::from(children);
                self.wait_word(words::UP, c.up, "the partial results of a reduction")?;
                for i in 0..children {
                    combine_into(op, &mut acc, &self.read_own(self.reduce_slot(i), bytes)?);
                }
            }
            let at = dest.offset() + lo * sz;
            if r == 0 {
                self.write_own(at, bytemuck::cast_slice(&acc))?;
            } else {
                let parent = (r - 1) / RADIX;
                let slot = self.reduce_slot((r - 1) % RADIX);
                self.put_signal_word(
                    parent,
                    slot,
                    Bytes::Host(bytemuck::cast_slice(&acc)),
                    words::UP,
                    SignalOp::Add,
                    1,
                )?;
                self.wait_word(words::DOWN, chunk, "the result of a reduction")?;
                acc = bytemuck::pod_collect_to_vec(&self.read_own(at, bytes)?);
            }
            for k in first_child..first_child + children {
                self.put_signal_word(
                    k,
                    at,
                    Bytes::Host(bytemuck::cast_slice(&acc)),
                    words::DOWN,
                    SignalOp::Set,
                    chunk,
                )?;
            }
            lo = hi;
            if lo >= dest.len() {
                break;
            }
        }
        Ok(())
    }

    /// The reduction as a reduce-scatter by pulling and an allgather by pushing. Once every
    /// member has entered (a sync), member `j` owns segment `j` of the array: a piece at a
    /// time, it gets that piece of every member's `source`, combines them and puts the result
    /// into every member's `dest`; then it signals each member once. A member returns once
    /// every owner has signalled it. Segment `j` of a member's arrays is read and written by
    /// owner `j` alone, which writes a piece only after it has read that piece everywhere, so
    /// the reduction may be in place; and a member's signals all come after its reads, so no
    /// member returns (and reuses its `source`) while an owner still reads it. Two phases
    /// whatever the size (a chunked reduce-scatter through the scratch took two per 48 KiB),
    /// and each element is copied once less.
    fn reduce_scatter_allgather<T: Reducible>(
        &self,
        op: ReduceOp,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        let n = self.n_pes();
        let me = self.my_pe();
        let sz = std::mem::size_of::<T>();
        let seg = dest.len().div_ceil(n as usize);
        let mine = (me as usize * seg).min(dest.len())..((me as usize + 1) * seg).min(dest.len());
        let piece = (PIECE_BYTES / sz).max(1).min(mine.len());
        let mut acc: Vec<T> = vec![T::zeroed(); piece];
        let mut part: Vec<T> = vec![T::zeroed(); piece];
        let get = |rank: u32, at: usize, into: &mut [T]| -> Result<()> {
            let to = LocalMut::Host(bytemuck::cast_slice_mut(into));
            // SAFETY: see the comment on the impl in `coll/mod.rs`: `at` lies in `source`, a
            // view of the heap, and the member is a PE of the instance.
            unsafe { self.t().get(self.q(), self.pe_of(rank), at, to) }
        };
        self.sync()?;
        let mut c = self.state.coll();
        let mut lo = mine.start;
        while lo < mine.end {
            let m = (mine.end - lo).min(piece);
            let at = lo * sz;
            get(me, source.offset() + at, &mut acc[..m])?;
            // From the next rank on, so that the owners do not all read one member at once.
            for k in (1..n).map(|d| (me + d) % n) {
                get(k, source.offset() + at, &mut part[..m])?;
                combine_into(op, &mut acc[..m], bytemuck::cast_slice(&part[..m]));
            }
            let result: &[u8] = bytemuck::cast_slice(&acc[..m]);
            for j in (0..n).filter(|&j| j != me) {
                // SAFETY: as above, in `dest`.
                unsafe {
                    self.t().put(
                        self.q(),
                        self.pe_of(j),
                        dest.offset() + at,
                        Local::Host(result),
                    )
                }?;
            }
            self.write_own(dest.offset() + at, result)?;
            lo += m;
        }
        // The signals come after the puts to the same member.
        self.t().fence(self.q())?;
        for j in (0..n).filter(|&j| j != me) {
            self.signal_word(j, words::RESULT, SignalOp::Add, 1)?;
        }
        c.result += u64::from(n) - 1;
        self.wait_word(
            words::RESULT,
            c.result,
            "the result segments of a reduction",
        )
    }

    /// `shmem_and_reduce`.
    pub fn and_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::And, dest, source)
    }

    /// `shmem_or_reduce`.
    pub fn or_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Or, dest, source)
    }

    /// `shmem_xor_reduce`.
    pub fn xor_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Xor, dest, source)
    }

    /// `shmem_max_reduce`.
    pub fn max_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Max, dest, source)
    }

    /// `shmem_min_reduce`.
    pub fn min_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Min, dest, source)
    }

    /// `shmem_sum_reduce`.
    pub fn sum_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Sum, dest, source)
    }

    /// `shmem_prod_reduce`.
    pub fn prod_reduce<T: Reducible>(
        &self,
        dest: SymSlice<'_, T>,
        source: SymSlice<'_, T>,
    ) -> Result<()> {
        self.reduce(ReduceOp::Prod, dest, source)
    }
}
