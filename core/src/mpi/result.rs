//! Layer 2: one `Result`-returning wrapper per MPI function.
//!
//! Each wrapper resolves its symbol (a missing one is an error), passes correctly sized
//! buffers and out-parameters, and turns a non-`MPI_SUCCESS` return into an [`MpiError`]
//! carrying the code and its `MPI_Error_string` text. The wrappers know nothing about MPI's
//! state rules (initialised, thread level, live handles); the safe layer in `mod.rs` enforces
//! those, which is what the `# Safety` sections ask of it.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use super::error::MpiError;
use super::sys::{self, Library, MPI_MAX_ERROR_STRING, MPI_SUCCESS, MpiComm, handle_ptr};

/// `Ok` for `MPI_SUCCESS`, else the code with its text.
fn check(lib: &Library, call: &'static str, rc: c_int) -> Result<(), MpiError> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::failed(call, rc, &error_string(lib, rc)))
    }
}

/// `MPI_Error_string`: the text of an error code (a placeholder if it has none).
pub(crate) fn error_string(lib: &Library, code: c_int) -> String {
    let Ok(f) = lib.error_string() else {
        return "(no text: MPI_Error_string is unavailable)".to_owned();
    };
    let mut buf: [c_char; MPI_MAX_ERROR_STRING] = [0; MPI_MAX_ERROR_STRING];
    let mut len: c_int = 0;
    // SAFETY: the signature matches mpi.h; `buf` holds MPI_MAX_ERROR_STRING characters, the
    // size mpi.h requires, and `len` is a valid out-parameter. The call reads a static table
    // and may be made at any time.
    let rc = unsafe { f(code, buf.as_mut_ptr(), &mut len) };
    if rc != MPI_SUCCESS {
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

/// `MPI_Initialized` (callable at any time, from any thread).
pub(crate) fn initialized(lib: &Library) -> Result<bool, MpiError> {
    let f = lib.initialized()?;
    let mut flag: c_int = 0;
    // SAFETY: the signature matches mpi.h; `flag` is a valid out-parameter. MPI allows this
    // call before MPI_Init, after MPI_Finalize and from any thread.
    check(lib, "MPI_Initialized", unsafe { f(&mut flag) })?;
    Ok(flag != 0)
}

/// `MPI_Finalized` (callable at any time, from any thread).
pub(crate) fn finalized(lib: &Library) -> Result<bool, MpiError> {
    let f = lib.finalized()?;
    let mut flag: c_int = 0;
    // SAFETY: as for MPI_Initialized: a valid out-parameter, callable at any time.
    check(lib, "MPI_Finalized", unsafe { f(&mut flag) })?;
    Ok(flag != 0)
}

/// `MPI_Init_thread(NULL, NULL, required, &provided)`; returns `provided`.
///
/// # Safety
///
/// MPI is neither initialised nor finalised, and no other thread initialises it concurrently.
pub(crate) unsafe fn init_thread(lib: &Library, required: c_int) -> Result<c_int, MpiError> {
    let f = lib.init_thread()?;
    let mut provided: c_int = 0;
    // SAFETY: the signature matches mpi.h; MPI allows NULL argc/argv; `provided` is a valid
    // out-parameter; the caller guarantees the state precondition.
    let rc = unsafe { f(ptr::null_mut(), ptr::null_mut(), required, &mut provided) };
    check(lib, "MPI_Init_thread", rc)?;
    Ok(provided)
}

/// `MPI_Query_thread`: the thread level MPI provides.
///
/// # Safety
///
/// MPI is initialised and not finalised.
pub(crate) unsafe fn query_thread(lib: &Library) -> Result<c_int, MpiError> {
    let f = lib.query_thread()?;
    let mut provided: c_int = 0;
    // SAFETY: the signature matches mpi.h; a valid out-parameter; MPI is initialised (the
    // caller's guarantee) and this call is allowed from any thread.
    check(lib, "MPI_Query_thread", unsafe { f(&mut provided) })?;
    Ok(provided)
}

/// `MPI_Is_thread_main`: whether the calling thread is the one that initialised MPI.
///
/// # Safety
///
/// MPI is initialised and not finalised.
pub(crate) unsafe fn is_thread_main(lib: &Library) -> Result<bool, MpiError> {
    let f = lib.is_thread_main()?;
    let mut flag: c_int = 0;
    // SAFETY: the signature matches mpi.h; a valid out-parameter; MPI is initialised (the
    // caller's guarantee) and this call is allowed from any thread.
    check(lib, "MPI_Is_thread_main", unsafe { f(&mut flag) })?;
    Ok(flag != 0)
}

/// `MPI_Finalize`.
///
/// # Safety
///
/// MPI is initialised and not finalised, no MPI call is in progress in another thread, and
/// none will be made afterwards.
pub(crate) unsafe fn finalize(lib: &Library) -> Result<(), MpiError> {
    let f = lib.finalize()?;
    // SAFETY: the signature matches mpi.h; the caller guarantees the state precondition.
    check(lib, "MPI_Finalize", unsafe { f() })
}

/// `MPI_Comm_dup`: a new communicator with the same group.
///
/// # Safety
///
/// MPI is initialised and not finalised, `comm` is a valid communicator (not
/// `MPI_COMM_NULL`), and the thread level allows this call from this thread now.
pub(crate) unsafe fn comm_dup(lib: &Library, comm: MpiComm) -> Result<MpiComm, MpiError> {
    let f = lib.comm_dup()?;
    let mut new: MpiComm = ptr::null_mut();
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee); `new` is
    // a valid out-parameter for the new handle.
    check(lib, "MPI_Comm_dup", unsafe { f(comm, &mut new) })?;
    Ok(new)
}

/// `MPI_Comm_split`: the new communicator (`MPI_COMM_NULL` for color `MPI_UNDEFINED`).
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn comm_split(
    lib: &Library,
    comm: MpiComm,
    color: c_int,
    key: c_int,
) -> Result<MpiComm, MpiError> {
    let f = lib.comm_split()?;
    let mut new: MpiComm = ptr::null_mut();
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee); `new` is
    // a valid out-parameter for the new handle.
    check(lib, "MPI_Comm_split", unsafe {
        f(comm, color, key, &mut new)
    })?;
    Ok(new)
}

/// `MPI_Comm_free`.
///
/// # Safety
///
/// As for [`comm_dup`]; besides, `comm` is not a predefined communicator, no call on it is in
/// progress in another thread and it is not used afterwards.
pub(crate) unsafe fn comm_free(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = lib.comm_free()?;
    let mut handle = comm;
    // SAFETY: the signature matches mpi.h; `handle` is a valid, freeable communicator (the
    // caller's guarantee), passed by address as MPI_Comm_free requires (it is set to
    // MPI_COMM_NULL, which we discard).
    check(lib, "MPI_Comm_free", unsafe { f(&mut handle) })
}

/// `MPI_Comm_rank`.
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn comm_rank(lib: &Library, comm: MpiComm) -> Result<c_int, MpiError> {
    let f = lib.comm_rank()?;
    let mut rank: c_int = 0;
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee); `rank` is
    // a valid out-parameter.
    check(lib, "MPI_Comm_rank", unsafe { f(comm, &mut rank) })?;
    Ok(rank)
}

/// `MPI_Comm_size`.
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn comm_size(lib: &Library, comm: MpiComm) -> Result<c_int, MpiError> {
    let f = lib.comm_size()?;
    let mut size: c_int = 0;
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee); `size` is
    // a valid out-parameter.
    check(lib, "MPI_Comm_size", unsafe { f(comm, &mut size) })?;
    Ok(size)
}

/// `MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)`: failures on `comm` are returned as
/// codes instead of aborting the job.
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn comm_set_errors_return(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = lib.comm_set_errhandler()?;
    let errors_return = handle_ptr(lib.handles().errors_return);
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee);
    // `errors_return` is `&ompi_mpi_errors_return`, Open MPI's MPI_ERRORS_RETURN.
    check(lib, "MPI_Comm_set_errhandler", unsafe {
        f(comm, errors_return)
    })
}

/// `MPI_Barrier`.
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn barrier(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = lib.barrier()?;
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee).
    check(lib, "MPI_Barrier", unsafe { f(comm) })
}

/// `MPI_Allgather` of `send.len()` `MPI_BYTE`s per rank into `recv`, which must hold exactly
/// `send.len()` bytes per rank of `comm` (checked here, against `MPI_Comm_size`). Every rank
/// must pass the same `send.len()`.
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn allgather_bytes(
    lib: &Library,
    comm: MpiComm,
    send: &[u8],
    recv: &mut [u8],
) -> Result<(), MpiError> {
    const CALL: &str = "MPI_Allgather";
    let f = lib.allgather()?;
    let count = c_int::try_from(send.len()).map_err(|_| {
        MpiError::usage(
            CALL,
            format!(
                "{} bytes per rank exceed MPI's count limit ({} bytes)",
                send.len(),
                c_int::MAX
            ),
        )
    })?;
    // SAFETY: forwarded from the caller.
    let size = unsafe { comm_size(lib, comm) }?;
    let expected = usize::try_from(size)
        .ok()
        .and_then(|n| n.checked_mul(send.len()));
    if expected != Some(recv.len()) {
        return Err(MpiError::usage(
            CALL,
            format!(
                "the receive buffer holds {} bytes, but {size} ranks x {} bytes are expected",
                recv.len(),
                send.len()
            ),
        ));
    }
    let byte = handle_ptr(lib.handles().byte);
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee); `byte` is
    // `&ompi_mpi_byte`, Open MPI's MPI_BYTE, so counts are bytes; `send` holds `count` bytes
    // and `recv` exactly `count` bytes per rank of `comm` (checked above); MPI only reads
    // `send` (hence the const cast) and only writes within `recv`.
    let rc = unsafe {
        f(
            send.as_ptr().cast::<c_void>(),
            count,
            byte,
            recv.as_mut_ptr().cast::<c_void>(),
            count,
            byte,
            comm,
        )
    };
    check(lib, CALL, rc)
}

/// `MPI_Abort`: ends every process of `comm`'s job with `code` (normally does not return).
///
/// # Safety
///
/// As for [`comm_dup`].
pub(crate) unsafe fn abort(lib: &Library, comm: MpiComm, code: c_int) -> Result<(), MpiError> {
    let f = lib.abort()?;
    // SAFETY: the signature matches mpi.h; `comm` is valid (the caller's guarantee).
    check(lib, "MPI_Abort", unsafe { f(comm, code) })
}

/// The name of a thread level, for messages.
pub(crate) fn thread_level_name(level: c_int) -> &'static str {
    match level {
        sys::MPI_THREAD_SINGLE => "MPI_THREAD_SINGLE",
        sys::MPI_THREAD_FUNNELED => "MPI_THREAD_FUNNELED",
        sys::MPI_THREAD_SERIALIZED => "MPI_THREAD_SERIALIZED",
        sys::MPI_THREAD_MULTIPLE => "MPI_THREAD_MULTIPLE",
        _ => "an unknown thread level",
    }
}
