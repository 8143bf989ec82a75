//! Layer 2: one `Result`-returning wrapper per MPI function.
//!
//! Each wrapper resolves its function (a missing one is an error), passes its arguments and
//! a correctly typed out-parameter, and turns a non-`MPI_SUCCESS` return into an [`MpiError`]
//! carrying the code and its `MPI_Error_string` text. Most are declared by [`wrappers!`], one
//! line each; those that build buffers are written out. The wrappers know nothing about MPI's
//! state rules (initialised, thread level, valid handles); the safe layer in `lib.rs` enforces
//! those, which is what the `# Safety` sections ask of it.

use std::ffi::{c_char, c_int, c_void};

use crate::error::MpiError;
use crate::sys::{Library, MPI_MAX_ERROR_STRING, MPI_SUCCESS, MpiComm, MpiErrhandler, handle_ptr};

/// `Ok` for `MPI_SUCCESS`, else the code with its text.
fn check(lib: &Library, call: &'static str, rc: c_int) -> Result<(), MpiError> {
    match rc {
        MPI_SUCCESS => Ok(()),
        rc => Err(MpiError::failed(call, rc, &error_string(lib, rc))),
    }
}

/// `MPI_Error_string`: the text of an error code (a placeholder if it has none).
fn error_string(lib: &Library, code: c_int) -> String {
    let Ok(f) = lib.f.error_string() else {
        return "(no text: MPI_Error_string is unavailable)".to_owned();
    };
    let mut buf: [c_char; MPI_MAX_ERROR_STRING] = [0; MPI_MAX_ERROR_STRING];
    let mut len: c_int = 0;
    // SAFETY: `buf` holds MPI_MAX_ERROR_STRING characters, the size mpi.h requires, and `len`
    // is a valid out-parameter. The call reads a static table and may be made at any time.
    if unsafe { f(code, buf.as_mut_ptr(), &mut len) } != MPI_SUCCESS {
        return format!("(no text for MPI error code {code})");
    }
    let len = usize::try_from(len).unwrap_or(0).min(buf.len());
    let bytes: Vec<u8> = buf[..len]
        .iter()
        .map(|&c| c.to_ne_bytes()[0])
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Declares wrappers: `fn name(args) -> Out = "MPI_Name";` calls the function `name` of the
/// [`Functions`](crate::sys::Functions) table with `args` and, when an `Out` is given, a
/// pointer to a zeroed out-parameter of that type (the C function's last parameter), which it
/// returns on success.
macro_rules! wrappers {
    (@out) => { () };
    (@out $out:ty) => { $out };
    (@call $lib:ident, $f:ident, $call:literal, ($($arg:ident),*)) => {
        // SAFETY: the caller's guarantees are the call's preconditions.
        check($lib, $call, unsafe { $f($($arg),*) })
    };
    (@call $lib:ident, $f:ident, $call:literal, ($($arg:ident),*) -> $out:ty) => {{
        // SAFETY: every out-parameter type in the table is an integer or a raw pointer, for
        // which all zero bytes are a valid value.
        let mut out: $out = unsafe { std::mem::zeroed() };
        // SAFETY: the caller's guarantees are the call's preconditions, and `out` is a valid
        // out-parameter of the type MPI writes there.
        check($lib, $call, unsafe { $f($($arg,)* &mut out) })?;
        Ok(out)
    }};
    ($(
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty),*) $(-> $out:ty)? = $call:literal;
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// MPI is initialised and not finalised (only `MPI_Initialized` and `MPI_Finalized`
        /// may be called at any time), every handle is valid for the call, every pointer is
        /// valid for what MPI does with it, and the thread level allows the call from this
        /// thread now.
        pub(crate) unsafe fn $name(
            lib: &Library,
            $($arg: $ty),*
        ) -> Result<wrappers!(@out $($out)?), MpiError> {
            let f = lib.f.$name().map_err(|e| MpiError::missing($call, e))?;
            wrappers!(@call lib, f, $call, ($($arg),*) $(-> $out)?)
        }
    )*};
}

wrappers! {
    /// `MPI_Initialized`: non-zero once MPI is initialised (also after it is finalised).
    fn initialized() -> c_int = "MPI_Initialized";
    /// `MPI_Finalized`: non-zero once MPI is finalised.
    fn finalized() -> c_int = "MPI_Finalized";
    /// `MPI_Query_thread`: the thread level MPI provides.
    fn query_thread() -> c_int = "MPI_Query_thread";
    /// `MPI_Is_thread_main`: non-zero if the calling thread initialised MPI.
    fn is_thread_main() -> c_int = "MPI_Is_thread_main";
    /// `MPI_Init_thread`: the thread level MPI provides. MPI is neither initialised nor
    /// finalised, and no other thread initialises it concurrently.
    fn init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int) -> c_int
        = "MPI_Init_thread";
    /// `MPI_Finalize`. No MPI call may be in progress in another thread, nor made afterwards.
    fn finalize() = "MPI_Finalize";
    /// `MPI_Comm_dup`: a new communicator.
    fn comm_dup(comm: MpiComm) -> MpiComm = "MPI_Comm_dup";
    /// `MPI_Comm_split`: the new communicator (`MPI_COMM_NULL` for color `MPI_UNDEFINED`).
    fn comm_split(comm: MpiComm, color: c_int, key: c_int) -> MpiComm = "MPI_Comm_split";
    /// `MPI_Comm_free` of `*comm`, which MPI sets to `MPI_COMM_NULL`. The communicator is not
    /// predefined, no call on it is in progress in another thread, and it is not used after.
    fn comm_free(comm: *mut MpiComm) = "MPI_Comm_free";
    /// `MPI_Comm_rank`.
    fn comm_rank(comm: MpiComm) -> c_int = "MPI_Comm_rank";
    /// `MPI_Comm_size`.
    fn comm_size(comm: MpiComm) -> c_int = "MPI_Comm_size";
    /// `MPI_Comm_set_errhandler` (the safe layer passes `MPI_ERRORS_RETURN`).
    fn comm_set_errhandler(comm: MpiComm, handler: MpiErrhandler) = "MPI_Comm_set_errhandler";
    /// `MPI_Barrier`.
    fn barrier(comm: MpiComm) = "MPI_Barrier";
    /// `MPI_Abort`: ends every process of `comm`'s job with `code` (normally does not return).
    fn abort(comm: MpiComm, code: c_int) = "MPI_Abort";
}

/// `MPI_Allgather` of `send.len()` `MPI_BYTE`s per rank into `recv`, which must hold exactly
/// `send.len()` bytes per rank of `comm` (checked here, against `MPI_Comm_size`). Every rank
/// must pass the same `send.len()`.
///
/// # Safety
///
/// As for the [`wrappers!`].
pub(crate) unsafe fn allgather_bytes(
    lib: &Library,
    comm: MpiComm,
    send: &[u8],
    recv: &mut [u8],
) -> Result<(), MpiError> {
    const CALL: &str = "MPI_Allgather";
    let f = lib.f.allgather().map_err(|e| MpiError::missing(CALL, e))?;
    let count = c_int::try_from(send.len()).map_err(|_| {
        let m = format!("{} bytes per rank exceed MPI's count limit", send.len());
        MpiError::usage(CALL, m)
    })?;
    // SAFETY: forwarded from the caller.
    let size = unsafe { comm_size(lib, comm) }?;
    let bytes_for = |ranks: usize| ranks.checked_mul(send.len());
    let expected = usize::try_from(size).ok().and_then(bytes_for);
    if expected != Some(recv.len()) {
        let (got, n) = (recv.len(), send.len());
        let m = format!(
            "the receive buffer holds {got} bytes, but {size} ranks x {n} bytes are expected"
        );
        return Err(MpiError::usage(CALL, m));
    }
    let byte = handle_ptr(lib.handles.byte);
    let send = send.as_ptr().cast::<c_void>();
    let recv = recv.as_mut_ptr().cast::<c_void>();
    // SAFETY: `comm` is valid (the caller's guarantee); `byte` is `&ompi_mpi_byte`, Open MPI's
    // MPI_BYTE, so counts are bytes; `send` holds `count` bytes and `recv` exactly `count` bytes
    // per rank of `comm` (checked above); MPI only reads `send` and only writes within `recv`.
    let rc = unsafe { f(send, count, byte, recv, count, byte, comm) };
    check(lib, CALL, rc)
}
