// The one type table of the C ABI: the generated wrappers (`build.rs`) and the generated
// header both come from it. Plain data, so that the build script can include it.

/// The standard RMA types (OpenSHMEM 1.5 table `stdrmatypes`): TYPENAME, the C type, and the
/// Rust type of one element (`long double` is moved as 16 opaque bytes).
pub const RMA_TYPES: &[(&str, &str, &str)] = &[
    ("float", "float", "f32"),
    ("double", "double", "f64"),
    ("longdouble", "long double", "[u8; 16]"),
    ("char", "char", "i8"),
    ("schar", "signed char", "i8"),
    ("short", "short", "i16"),
    ("int", "int", "i32"),
    ("long", "long", "i64"),
    ("longlong", "long long", "i64"),
    ("uchar", "unsigned char", "u8"),
    ("ushort", "unsigned short", "u16"),
    ("uint", "unsigned int", "u32"),
    ("ulong", "unsigned long", "u64"),
    ("ulonglong", "unsigned long long", "u64"),
    ("int8", "int8_t", "i8"),
    ("int16", "int16_t", "i16"),
    ("int32", "int32_t", "i32"),
    ("int64", "int64_t", "i64"),
    ("uint8", "uint8_t", "u8"),
    ("uint16", "uint16_t", "u16"),
    ("uint32", "uint32_t", "u32"),
    ("uint64", "uint64_t", "u64"),
    ("size", "size_t", "usize"),
    ("ptrdiff", "ptrdiff_t", "isize"),
];

/// The element sizes, in bits, of the sized RMA routines (`shmem_put32`, `shmem_iget128`, …).
pub const RMA_SIZES: &[usize] = &[8, 16, 32, 64, 128];

/// The extended AMO types (`fetch`, `set`, `swap`); all but `float` and `double` are the
/// standard AMO types, which have every other atomic too: TYPENAME, C type, Rust type.
pub const AMO_TYPES: &[(&str, &str, &str)] = &[
    ("float", "float", "f32"),
    ("double", "double", "f64"),
    ("int", "int", "i32"),
    ("long", "long", "i64"),
    ("longlong", "long long", "i64"),
    ("uint", "unsigned int", "u32"),
    ("ulong", "unsigned long", "u64"),
    ("ulonglong", "unsigned long long", "u64"),
    ("int32", "int32_t", "i32"),
    ("int64", "int64_t", "i64"),
    ("uint32", "uint32_t", "u32"),
    ("uint64", "uint64_t", "u64"),
    ("size", "size_t", "usize"),
    ("ptrdiff", "ptrdiff_t", "isize"),
];

/// The bitwise AMO types (`and`, `or`, `xor` and their fetching forms).
pub const BITWISE_AMO_TYPES: &[&str] =
    &["uint", "ulong", "ulonglong", "int32", "int64", "uint32", "uint64"];

/// The team-based reduction types (OpenSHMEM 1.5 table `teamreducetypes`) but `long double`
/// and the complex types, which a later part serves: TYPENAME, C type, Rust type.
pub const REDUCE_TYPES: &[(&str, &str, &str)] = &[
    ("char", "char", "i8"),
    ("schar", "signed char", "i8"),
    ("short", "short", "i16"),
    ("int", "int", "i32"),
    ("long", "long", "i64"),
    ("longlong", "long long", "i64"),
    ("ptrdiff", "ptrdiff_t", "isize"),
    ("uchar", "unsigned char", "u8"),
    ("ushort", "unsigned short", "u16"),
    ("uint", "unsigned int", "u32"),
    ("ulong", "unsigned long", "u64"),
    ("ulonglong", "unsigned long long", "u64"),
    ("int8", "int8_t", "i8"),
    ("int16", "int16_t", "i16"),
    ("int32", "int32_t", "i32"),
    ("int64", "int64_t", "i64"),
    ("uint8", "uint8_t", "u8"),
    ("uint16", "uint16_t", "u16"),
    ("uint32", "uint32_t", "u32"),
    ("uint64", "uint64_t", "u64"),
    ("size", "size_t", "usize"),
    ("float", "float", "f32"),
    ("double", "double", "f64"),
];

/// The reduction types with AND, OR and XOR.
pub const BITWISE_REDUCE_TYPES: &[&str] = &[
    "uchar", "ushort", "uint", "ulong", "ulonglong", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "size",
];

/// The `long` words of `pSync` the deprecated active-set collectives use: every
/// `SHMEM_*_SYNC_SIZE` of the header.
pub const PSYNC_WORDS: usize = 3;
