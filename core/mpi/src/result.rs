//! Layer 2: one `Result`-returning wrapper per MPI function.
//!
//! Each wrapper resolves its function (a missing one is an error), passes correctly sized
//! buffers and out-parameters, and turns a non-`MPI_SUCCESS` return into an [`MpiError`]
//! carrying the code and its `MPI_Error_string` text. The wrappers know nothing about MPI's
//! state rules (initialised, thread level, live handles); the safe layer in `lib.rs` enforces
//! those, which is what the `# Safety` sections ask of it.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use shmem_dl::DlError;

use crate::error::MpiError;
use crate::sys::{Library, MPI_MAX_ERROR_STRING, MPI_SUCCESS, MpiComm, handle_ptr};

/// The function, or an error naming the call.
fn func<T>(call: &'static str, f: Result<T, DlError>) -> Result<T, MpiError> {
    f.map_err(|e| MpiError::missing(call, e))
}

/// `Ok` for `MPI_SUCCESS`, else the code with its text.
fn check(lib: &Library, call: &'static str, rc: c_int) -> Result<(), MpiError> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::failed(call, rc, &error_string(lib, rc)))
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

/// `MPI_Initialized` or `MPI_Finalized` (callable at any time, from any thread).
pub(crate) fn state_flag(lib: &Library, finalized: bool) -> Result<bool, MpiError> {
    let (call, f) = if finalized {
        ("MPI_Finalized", lib.f.finalized())
    } else {
        ("MPI_Initialized", lib.f.initialized())
    };
    let f = func(call, f)?;
    let mut flag: c_int = 0;
    // SAFETY: `flag` is a valid out-parameter. MPI allows these two calls before MPI_Init,
    // after MPI_Finalize and from any thread.
    check(lib, call, unsafe { f(&mut flag) })?;
    Ok(flag != 0)
}

/// `MPI_Init_thread(NULL, NULL, required, &provided)`; returns `provided`.
///
/// # Safety
///
/// MPI is neither initialised nor finalised, and no other thread initialises it concurrently.
pub(crate) unsafe fn init_thread(lib: &Library, required: c_int) -> Result<c_int, MpiError> {
    let f = func("MPI_Init_thread", lib.f.init_thread())?;
    let mut provided: c_int = 0;
    // SAFETY: MPI allows NULL argc/argv; `provided` is a valid out-parameter; the caller
    // guarantees the state precondition.
    let rc = unsafe { f(ptr::null_mut(), ptr::null_mut(), required, &mut provided) };
    check(lib, "MPI_Init_thread", rc)?;
    Ok(provided)
}

/// `MPI_Query_thread` (`is_main == false`: the thread level MPI provides) or
/// `MPI_Is_thread_main` (`true`: 1 if the calling thread initialised MPI).
///
/// # Safety
///
/// MPI is initialised and not finalised.
pub(crate) unsafe fn thread_query(lib: &Library, is_main: bool) -> Result<c_int, MpiError> {
    let (call, f) = if is_main {
        ("MPI_Is_thread_main", lib.f.is_thread_main())
    } else {
        ("MPI_Query_thread", lib.f.query_thread())
    };
    let f = func(call, f)?;
    let mut out: c_int = 0;
    // SAFETY: a valid out-parameter; MPI is initialised (the caller's guarantee) and both calls
    // are allowed from any thread.
    check(lib, call, unsafe { f(&mut out) })?;
    Ok(out)
}

/// `MPI_Finalize`.
///
/// # Safety
///
/// MPI is initialised and not finalised, no MPI call is in progress in another thread, and
/// none will be made afterwards.
pub(crate) unsafe fn finalize(lib: &Library) -> Result<(), MpiError> {
    let f = func("MPI_Finalize", lib.f.finalize())?;
    // SAFETY: the caller guarantees the state precondition.
    check(lib, "MPI_Finalize", unsafe { f() })
}

/// `MPI_Comm_dup` (`split == None`) or `MPI_Comm_split(comm, color, key)`: the new
/// communicator (`MPI_COMM_NULL` for color `MPI_UNDEFINED`).
///
/// # Safety
///
/// MPI is initialised and not finalised, `comm` is a valid communicator (not
/// `MPI_COMM_NULL`), and the thread level allows this call from this thread now.
pub(crate) unsafe fn comm_new(
    lib: &Library,
    comm: MpiComm,
    split: Option<(c_int, c_int)>,
) -> Result<MpiComm, MpiError> {
    let mut new: MpiComm = ptr::null_mut();
    let (call, rc) = match split {
        None => {
            let f = func("MPI_Comm_dup", lib.f.comm_dup())?;
            // SAFETY: `comm` is valid (the caller's guarantee); `new` is a valid out-parameter.
            ("MPI_Comm_dup", unsafe { f(comm, &mut new) })
        }
        Some((color, key)) => {
            let f = func("MPI_Comm_split", lib.f.comm_split())?;
            // SAFETY: as for MPI_Comm_dup.
            ("MPI_Comm_split", unsafe { f(comm, color, key, &mut new) })
        }
    };
    check(lib, call, rc)?;
    Ok(new)
}

/// `MPI_Comm_free`.
///
/// # Safety
///
/// As for [`comm_new`]; besides, `comm` is not a predefined communicator, no call on it is in
/// progress in another thread and it is not used afterwards.
pub(crate) unsafe fn comm_free(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = func("MPI_Comm_free", lib.f.comm_free())?;
    let mut handle = comm;
    // SAFETY: `handle` is a valid, freeable communicator (the caller's guarantee), passed by
    // address as MPI_Comm_free requires (it is set to MPI_COMM_NULL, which we discard).
    check(lib, "MPI_Comm_free", unsafe { f(&mut handle) })
}

/// `MPI_Comm_rank` (`size == false`) or `MPI_Comm_size` (`true`).
///
/// # Safety
///
/// As for [`comm_new`].
pub(crate) unsafe fn comm_query(
    lib: &Library,
    comm: MpiComm,
    size: bool,
) -> Result<c_int, MpiError> {
    let (call, f) = if size {
        ("MPI_Comm_size", lib.f.comm_size())
    } else {
        ("MPI_Comm_rank", lib.f.comm_rank())
    };
    let f = func(call, f)?;
    let mut out: c_int = 0;
    // SAFETY: `comm` is valid (the caller's guarantee); `out` is a valid out-parameter.
    check(lib, call, unsafe { f(comm, &mut out) })?;
    Ok(out)
}

/// `MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)`: failures on `comm` are returned as
/// codes instead of aborting the job.
///
/// # Safety
///
/// As for [`comm_new`].
pub(crate) unsafe fn comm_set_errors_return(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = func("MPI_Comm_set_errhandler", lib.f.comm_set_errhandler())?;
    let errors_return = handle_ptr(lib.handles.errors_return);
    // SAFETY: `comm` is valid (the caller's guarantee); `errors_return` is
    // `&ompi_mpi_errors_return`, Open MPI's MPI_ERRORS_RETURN.
    check(lib, "MPI_Comm_set_errhandler", unsafe {
        f(comm, errors_return)
    })
}

/// `MPI_Barrier`.
///
/// # Safety
///
/// As for [`comm_new`].
pub(crate) unsafe fn barrier(lib: &Library, comm: MpiComm) -> Result<(), MpiError> {
    let f = func("MPI_Barrier", lib.f.barrier())?;
    // SAFETY: `comm` is valid (the caller's guarantee).
    check(lib, "MPI_Barrier", unsafe { f(comm) })
}

/// `MPI_Allgather` of `send.len()` `MPI_BYTE`s per rank into `recv`, which must hold exactly
/// `send.len()` bytes per rank of `comm` (checked here, against `MPI_Comm_size`). Every rank
/// must pass the same `send.len()`.
///
/// # Safety
///
/// As for [`comm_new`].
pub(crate) unsafe fn allgather_bytes(
    lib: &Library,
    comm: MpiComm,
    send: &[u8],
    recv: &mut [u8],
) -> Result<(), MpiError> {
    const CALL: &str = "MPI_Allgather";
    let f = func(CALL, lib.f.allgather())?;
    let count = c_int::try_from(send.len()).map_err(|_| {
        MpiError::usage(
            CALL,
            format!("{} bytes per rank exceed MPI's count limit", send.len()),
        )
    })?;
    // SAFETY: forwarded from the caller.
    let size = unsafe { comm_query(lib, comm, true) }?;
    if usize::try_from(size)
        .ok()
        .and_then(|n| n.checked_mul(send.len()))
        != Some(recv.len())
    {
        return Err(MpiError::usage(
            CALL,
            format!(
                "the receive buffer holds {} bytes, but {size} ranks x {} bytes are expected",
                recv.len(),
                send.len()
            ),
        ));
    }
    let byte = handle_ptr(lib.handles.byte);
    // SAFETY: `comm` is valid (the caller's guarantee); `byte` is `&ompi_mpi_byte`, Open MPI's
    // MPI_BYTE, so counts are bytes; `send` holds `count` bytes and `recv` exactly `count` bytes
    // per rank of `comm` (checked above); MPI only reads `send` and only writes within `recv`.
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
/// As for [`comm_new`].
pub(crate) unsafe fn abort(lib: &Library, comm: MpiComm, code: c_int) -> Result<(), MpiError> {
    let f = func("MPI_Abort", lib.f.abort())?;
    // SAFETY: `comm` is valid (the caller's guarantee).
    check(lib, "MPI_Abort", unsafe { f(comm, code) })
}
