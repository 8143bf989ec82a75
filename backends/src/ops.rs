//! Operators shared by every layer: comparisons, signal operations, atomic operations and the
//! widths and scalar kinds they act on.

/// A comparison operator of the point-to-point synchronisation routines.
///
/// The discriminants are CANN SHMEM's `aclshmem_cmp_op_type_t` values (`ACLSHMEM_CMP_EQ = 0` …
/// `ACLSHMEM_CMP_LE = 5`); OpenSHMEM leaves the values of `SHMEM_CMP_*` to the implementation and
/// this workspace uses the same numbers there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Cmp {
    /// Equal.
    Eq = 0,
    /// Not equal.
    Ne = 1,
    /// Greater than.
    Gt = 2,
    /// Greater than or equal.
    Ge = 3,
    /// Less than.
    Lt = 4,
    /// Less than or equal.
    Le = 5,
}

impl Cmp {
    /// Every operator, in numeric order.
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Ge, Cmp::Lt, Cmp::Le];

    /// The operator with CANN's numeric value `raw`, if there is one.
    pub fn from_raw(raw: i32) -> Option<Cmp> {
        Cmp::ALL.get(usize::try_from(raw).ok()?).copied()
    }

    /// Evaluates `lhs <op> rhs`.
    pub fn eval<T: PartialOrd>(self, lhs: T, rhs: T) -> bool {
        match self {
            Cmp::Eq => lhs == rhs,
            Cmp::Ne => lhs != rhs,
            Cmp::Gt => lhs > rhs,
            Cmp::Ge => lhs >= rhs,
            Cmp::Lt => lhs < rhs,
            Cmp::Le => lhs <= rhs,
        }
    }
}

/// The update a signal operation applies to a signal word.
///
/// The discriminants are CANN's `ACLSHMEM_SIGNAL_SET = 0` and `ACLSHMEM_SIGNAL_ADD = 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum SignalOp {
    /// Overwrite the signal word with the value.
    Set = 0,
    /// Atomically add the value to the signal word.
    Add = 1,
}

impl SignalOp {
    /// The operator with CANN's numeric value `raw`, if there is one.
    pub fn from_raw(raw: i32) -> Option<SignalOp> {
        match raw {
            0 => Some(SignalOp::Set),
            1 => Some(SignalOp::Add),
            _ => None,
        }
    }
}

/// The width of a remote atomic, a signal word or a waited-on word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 1 byte.
    W8,
    /// 2 bytes.
    W16,
    /// 4 bytes.
    W32,
    /// 8 bytes.
    W64,
}

impl Width {
    /// The width in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Width::W8 => 1,
            Width::W16 => 2,
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    /// The width of `bytes` bytes, if it is 1, 2, 4 or 8.
    pub const fn from_bytes(bytes: usize) -> Option<Width> {
        match bytes {
            1 => Some(Width::W8),
            2 => Some(Width::W16),
            4 => Some(Width::W32),
            8 => Some(Width::W64),
            _ => None,
        }
    }

    /// Keeps the low `self.bytes()` bytes of `v`.
    pub const fn truncate(self, v: u64) -> u64 {
        match self {
            Width::W8 => v & 0xff,
            Width::W16 => v & 0xffff,
            Width::W32 => v & 0xffff_ffff,
            Width::W64 => v,
        }
    }
}

/// A remote atomic memory operation. Operands are bit patterns of the operation's [`Width`],
/// held in the low bits of a `u64`; every operation returns the previous value of the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmoOp {
    /// Read the word.
    Fetch,
    /// Write the value.
    Set(u64),
    /// Write the value and return the old one.
    Swap(u64),
    /// Write `value` if the word equals `cond`.
    CompareSwap {
        /// The value the word must hold for the swap to happen.
        cond: u64,
        /// The value written when it does.
        value: u64,
    },
    /// Add `0` (two's complement, wrapping).
    Add(u64),
    /// Bitwise and with `0`.
    And(u64),
    /// Bitwise or with `0`.
    Or(u64),
    /// Bitwise exclusive or with `0`.
    Xor(u64),
}

impl AmoOp {
    /// Whether the operation can modify the word (everything but [`AmoOp::Fetch`]).
    pub const fn writes(self) -> bool {
        !matches!(self, AmoOp::Fetch)
    }
}

/// The type of a scalar that a comparison reads, which decides how its bits are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// `int8_t` (and `char` where it is signed).
    I8,
    /// `int16_t`.
    I16,
    /// `int32_t`.
    I32,
    /// `int64_t`.
    I64,
    /// `uint8_t`.
    U8,
    /// `uint16_t`.
    U16,
    /// `uint32_t`.
    U32,
    /// `uint64_t`.
    U64,
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl ScalarKind {
    /// The width of the scalar.
    pub const fn width(self) -> Width {
        match self {
            ScalarKind::I8 | ScalarKind::U8 => Width::W8,
            ScalarKind::I16 | ScalarKind::U16 => Width::W16,
            ScalarKind::I32 | ScalarKind::U32 | ScalarKind::F32 => Width::W32,
            ScalarKind::I64 | ScalarKind::U64 | ScalarKind::F64 => Width::W64,
        }
    }

    /// Compares two bit patterns of this kind (held in the low bits of `u64`s) with `op`.
    pub fn compare(self, op: Cmp, lhs: u64, rhs: u64) -> bool {
        match self {
            ScalarKind::I8 => op.eval(lhs as u8 as i8, rhs as u8 as i8),
            ScalarKind::I16 => op.eval(lhs as u16 as i16, rhs as u16 as i16),
            ScalarKind::I32 => op.eval(lhs as u32 as i32, rhs as u32 as i32),
            ScalarKind::I64 => op.eval(lhs as i64, rhs as i64),
            ScalarKind::U8 => op.eval(lhs as u8, rhs as u8),
            ScalarKind::U16 => op.eval(lhs as u16, rhs as u16),
            ScalarKind::U32 => op.eval(lhs as u32, rhs as u32),
            ScalarKind::U64 => op.eval(lhs, rhs),
            ScalarKind::F32 => op.eval(f32::from_bits(lhs as u32), f32::from_bits(rhs as u32)),
            ScalarKind::F64 => op.eval(f64::from_bits(lhs), f64::from_bits(rhs)),
        }
    }
}

/// A Rust scalar type that maps onto a [`ScalarKind`], with conversions to and from the bit
/// pattern the transport works with.
pub trait Scalar: Copy + PartialOrd + Send + Sync + 'static {
    /// The scalar kind of `Self`.
    const KIND: ScalarKind;
    /// The bit pattern of `self`, zero-extended into a `u64`.
    fn to_bits(self) -> u64;
    /// The value whose bit pattern is the low bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

macro_rules! int_scalar {
    ($($t:ty => $kind:ident as $u:ty),* $(,)?) => {$(
        impl Scalar for $t {
            const KIND: ScalarKind = ScalarKind::$kind;
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
    )*};
}

int_scalar!(
    i8 => I8 as u8, i16 => I16 as u16, i32 => I32 as u32, i64 => I64 as u64,
    u8 => U8 as u8, u16 => U16 as u16, u32 => U32 as u32, u64 => U64 as u64,
);

#[cfg(target_pointer_width = "64")]
int_scalar!(isize => I64 as u64, usize => U64 as u64);

impl Scalar for f32 {
    const KIND: ScalarKind = ScalarKind::F32;
    fn to_bits(self) -> u64 {
        u64::from(f32::to_bits(self))
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl Scalar for f64 {
    const KIND: ScalarKind = ScalarKind::F64;
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmp_values_match_cann() {
        for (i, c) in Cmp::ALL.iter().enumerate() {
            assert_eq!(*c as i32, i as i32);
            assert_eq!(Cmp::from_raw(i as i32), Some(*c));
        }
        assert_eq!(Cmp::from_raw(6), None);
        assert_eq!(Cmp::from_raw(-1), None);
    }

    #[test]
    fn signed_comparisons_use_the_sign() {
        let minus_one = (-1i32).to_bits();
        assert!(ScalarKind::I32.compare(Cmp::Lt, minus_one, 0));
        assert!(ScalarKind::U32.compare(Cmp::Gt, minus_one, 0));
        assert!(ScalarKind::F64.compare(Cmp::Lt, (-0.5f64).to_bits(), 0.25f64.to_bits()));
    }

    #[test]
    fn scalar_round_trips() {
        assert_eq!(i8::from_bits((-5i8).to_bits()), -5);
        assert_eq!((-5i8).to_bits(), 0xfb);
        assert_eq!(<f32 as Scalar>::from_bits(Scalar::to_bits(1.5f32)), 1.5);
        assert_eq!(Width::W16.truncate(0x1_2345), 0x2345);
    }
}
