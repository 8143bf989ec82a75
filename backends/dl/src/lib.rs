//! Run-time loading of C libraries, as cudarc's dynamic loading does it but without its panics.
//!
//! Nothing links against the library at build time. A [`Library`] is `dlopen`ed from an exact
//! path ([`Library::open`]) or from the first of several candidate names and paths that loads
//! and passes a caller-supplied check ([`Library::open_first`]). Functions are resolved on
//! first use, one [`Lazy`] slot per symbol, through a table that [`symbols!`] declares; a
//! missing library or symbol is a [`DlError`] naming what is missing and every place looked,
//! never a panic.
//!
//! ```
//! use std::ffi::c_double;
//!
//! shmem_dl::symbols! {
//!     /// The bits of the C math library this example calls.
//!     pub struct LibM {
//!         /// `double cos(double)`
//!         cos: unsafe extern "C" fn(c_double) -> c_double = c"cos";
//!     }
//! }
//!
//! // SAFETY: loading the C math library runs no initialiser with preconditions.
//! let (lib, ()) = unsafe { shmem_dl::Library::open_first("libm", &["libm.so.6"], |_| Ok(())) }?;
//! // SAFETY: `cos` has exactly the type declared above in every C library.
//! let m = unsafe { LibM::new(lib) };
//! let cos = m.cos()?; // resolved now, cached afterwards
//! // SAFETY: `cos` is a pure function of its argument.
//! assert_eq!(unsafe { cos(0.0) }, 1.0);
//! # Ok::<(), shmem_dl::DlError>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]

use std::error::Error;
use std::ffi::{CStr, OsStr, c_int, c_void};
use std::fmt;
use std::ptr::NonNull;
use std::sync::OnceLock;

use libloading::os::unix::{Library as Handle, RTLD_GLOBAL, RTLD_NOW};

/// One place a library was looked for, and why it was not taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The name or path passed to `dlopen`.
    pub place: String,
    /// `dlopen`'s error, or the check's reason for refusing the library.
    pub reason: String,
}

impl Attempt {
    fn new(place: String, reason: String) -> Attempt {
        Attempt { place, reason }
    }
}

/// What went wrong loading a library or resolving one of its symbols.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DlError {
    /// No candidate loaded and passed the check.
    #[error("could not load {what}; tried {}", list(.attempts))]
    NotLoaded {
        /// What was being loaded.
        what: String,
        /// Every place looked, in order.
        attempts: Vec<Attempt>,
    },
    /// The library has no such symbol (or it resolves to a null address).
    #[error("{library} has no symbol `{symbol}`: {reason}")]
    MissingSymbol {
        /// The library, as it was opened.
        library: String,
        /// The symbol.
        symbol: String,
        /// `dlsym`'s error.
        reason: String,
    },
}

fn list(attempts: &[Attempt]) -> String {
    let each: Vec<String> = attempts.iter().map(Attempt::to_string).collect();
    match each.is_empty() {
        true => "no place".into(),
        false => each.join("; "),
    }
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.reason)
    }
}

/// The loader's message with its causes (`dlerror`'s text is libloading's error source).
fn describe(e: &libloading::Error) -> String {
    let chain = std::iter::successors(Some(e as &(dyn Error + 'static)), |&e| e.source());
    chain.map(|e| e.to_string()).collect::<Vec<_>>().join(": ")
}

/// An opened C library. It is closed when dropped; tables keep it for as long as its
/// functions may be called.
pub struct Library {
    handle: Handle,
    path: String,
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library").field("path", &self.path).finish()
    }
}

impl Library {
    /// `dlopen`s exactly `path` (a path, or a name for the loader's search path) with
    /// `RTLD_NOW | RTLD_GLOBAL`: a broken installation fails here rather than at a first
    /// call, and plugins that the library loads itself can resolve its symbols.
    ///
    /// # Safety
    ///
    /// Loading runs the library's initialisers: they must be sound to run in this process,
    /// now, from this thread.
    pub unsafe fn open(path: impl AsRef<OsStr>) -> Result<Library, DlError> {
        // SAFETY: forwarded.
        unsafe { Library::open_with(path, RTLD_NOW | RTLD_GLOBAL) }
    }

    /// `dlopen`s exactly `path` with `flags` (for example `RTLD_NOW | RTLD_LOCAL |
    /// RTLD_DEEPBIND`, so that a library whose symbols share names with the program's binds
    /// its own calls to itself).
    ///
    /// # Safety
    ///
    /// As for [`Library::open`].
    pub unsafe fn open_with(path: impl AsRef<OsStr>, flags: c_int) -> Result<Library, DlError> {
        let os = path.as_ref();
        // SAFETY: the caller vouches for the library's initialisers.
        let opened = unsafe { Handle::open(Some(os), flags) };
        let path = os.to_string_lossy().into_owned();
        let handle = opened.map_err(|e| {
            let attempts = vec![Attempt::new(path.clone(), describe(&e))];
            let what = path.clone();
            DlError::NotLoaded { what, attempts }
        })?;
        Ok(Library { handle, path })
    }

    /// Opens the first of `candidates` that loads and for which `check` returns `Ok`, and
    /// returns it with what `check` returned. A library that `check` refuses is closed again.
    /// The error lists every candidate with its reason.
    ///
    /// # Safety
    ///
    /// As for [`Library::open`], for every candidate.
    pub unsafe fn open_first<T>(
        what: &str,
        candidates: &[impl AsRef<OsStr>],
        check: impl FnMut(&Library) -> Result<T, String>,
    ) -> Result<(Library, T), DlError> {
        // SAFETY: forwarded.
        unsafe { Library::open_first_with(what, candidates, RTLD_NOW | RTLD_GLOBAL, check) }
    }

    /// [`Library::open_first`], opening each candidate with `flags`.
    ///
    /// # Safety
    ///
    /// As for [`Library::open`], for every candidate.
    pub unsafe fn open_first_with<T>(
        what: &str,
        candidates: &[impl AsRef<OsStr>],
        flags: c_int,
        mut check: impl FnMut(&Library) -> Result<T, String>,
    ) -> Result<(Library, T), DlError> {
        let mut attempts = Vec::new();
        for c in candidates {
            // SAFETY: forwarded from the caller.
            match unsafe { Library::open_with(c, flags) } {
                Ok(lib) => match check(&lib) {
                    Ok(t) => return Ok((lib, t)),
                    Err(reason) => attempts.push(Attempt::new(lib.path.clone(), reason)),
                },
                Err(DlError::NotLoaded { attempts: a, .. }) => attempts.extend(a),
                Err(e) => return Err(e),
            }
        }
        let what = what.to_owned();
        Err(DlError::NotLoaded { what, attempts })
    }

    /// The name or path the library was opened by.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The address of `symbol` (a function or an object), never dereferenced here.
    pub fn address(&self, symbol: &CStr) -> Result<NonNull<c_void>, DlError> {
        let missing = |reason: String| DlError::MissingSymbol {
            library: self.path.clone(),
            symbol: symbol.to_string_lossy().into_owned(),
            reason,
        };
        // SAFETY: the symbol is looked up as an untyped address, which is what every symbol
        // is; nothing is read through it.
        let sym =
            unsafe { self.handle.get::<*mut c_void>(symbol) }.map_err(|e| missing(describe(&e)))?;
        NonNull::new(sym.into_raw()).ok_or_else(|| missing("it resolves to a null address".into()))
    }

    /// The function `symbol`, as a `T`.
    ///
    /// # Safety
    ///
    /// `T` must be the exact function-pointer type of the C function `symbol`.
    pub unsafe fn function<T: Copy>(&self, symbol: &CStr) -> Result<T, DlError> {
        const { assert!(size_of::<T>() == size_of::<*mut c_void>()) };
        let p = self.address(symbol)?.as_ptr();
        // SAFETY: `T` is pointer-sized (asserted above) and, by the caller's guarantee, the
        // type of the non-null function at `p`.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
    }
}

/// A symbol resolved on first use; the outcome, a missing symbol included, is kept.
#[derive(Debug, Default)]
pub struct Lazy<T>(OnceLock<Result<T, DlError>>);

impl<T: Copy> Lazy<T> {
    /// An unresolved slot.
    pub const fn new() -> Lazy<T> {
        Lazy(OnceLock::new())
    }

    /// Whether resolution was attempted.
    pub fn is_resolved(&self) -> bool {
        self.0.get().is_some()
    }

    /// Resolves `symbol` in `lib` the first time, then returns the kept outcome.
    ///
    /// # Safety
    ///
    /// As for [`Library::function`]; `lib` must be the same library on every call.
    pub unsafe fn get(&self, lib: &Library, symbol: &CStr) -> Result<T, DlError> {
        // SAFETY: forwarded from the caller.
        let r = self.0.get_or_init(|| unsafe { lib.function::<T>(symbol) });
        r.clone()
    }
}

/// Declares a table of lazily resolved functions over one [`Library`]: a struct that owns the
/// library, one [`Lazy`] slot per entry and one accessor per entry that resolves on first use.
///
/// Each entry reads `name: fn-type = c"symbol";`. The table is made with the `unsafe fn
/// new(library)` the macro generates, whose caller promises that every declared type is the C
/// type of its symbol; the accessors are then safe, and calling what they return is `unsafe`
/// as for any C function. See the [crate documentation](crate) for an example.
#[macro_export]
macro_rules! symbols {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$doc:meta])* $field:ident: $ty:ty = $symbol:literal; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        $vis struct $name {
            library: $crate::Library,
            $( $field: $crate::Lazy<$ty>, )*
        }

        impl $name {
            /// Wraps `library`; no symbol is resolved yet.
            ///
            /// # Safety
            ///
            /// Every type declared in this table must be the exact C type of its symbol in
            /// `library`.
            $vis unsafe fn new(library: $crate::Library) -> Self {
                Self { library, $( $field: $crate::Lazy::new(), )* }
            }

            /// The library the functions come from.
            #[allow(dead_code)]
            $vis fn library(&self) -> &$crate::Library {
                &self.library
            }

            $(
                $(#[$doc])*
                $vis fn $field(&self) -> ::std::result::Result<$ty, $crate::DlError> {
                    let symbol: &::std::ffi::CStr = $symbol;
                    // SAFETY: `new`'s caller promised that the declared type is the C type of
                    // this symbol in `self.library`, which is the only library used.
                    unsafe { self.$field.get(&self.library, symbol) }
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_double, c_int};

    use super::*;

    symbols! {
        struct LibM {
            cos: unsafe extern "C" fn(c_double) -> c_double = c"cos";
            abs: unsafe extern "C" fn(c_int) -> c_int = c"abs";
            nope: unsafe extern "C" fn() = c"shmem_dl_no_such_symbol";
        }
    }

    fn libm() -> LibM {
        // SAFETY: the C math library's initialisers have no preconditions.
        let lib = unsafe { Library::open("libm.so.6") }.expect("glibc's libm");
        // SAFETY: the types above are the C declarations of cos and abs; `nope` is never
        // called (it does not resolve).
        unsafe { LibM::new(lib) }
    }

    #[test]
    fn symbols_resolve_on_first_use_and_stay_resolved() {
        let m = libm();
        assert!(!m.cos.is_resolved() && !m.abs.is_resolved());
        let cos = m.cos().expect("cos");
        assert!(m.cos.is_resolved() && !m.abs.is_resolved());
        // SAFETY: cos is pure.
        assert_eq!(unsafe { cos(0.0) }, 1.0);
        // SAFETY: abs is pure.
        assert_eq!(unsafe { m.abs().expect("abs")(-3) }, 3);
        assert_eq!(m.library().path(), "libm.so.6");
    }

    #[test]
    fn a_missing_symbol_is_an_error_naming_it_and_stays_missing() {
        let m = libm();
        let e = m.nope().unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(&e, DlError::MissingSymbol { symbol, .. } if symbol == "shmem_dl_no_such_symbol")
        );
        assert!(
            text.contains("libm.so.6") && text.contains("shmem_dl_no_such_symbol"),
            "{text}"
        );
        assert!(m.nope.is_resolved());
        assert_eq!(m.nope().unwrap_err(), e);
        // The other symbols are unaffected.
        assert!(m.cos().is_ok());
    }

    #[test]
    fn a_missing_library_lists_every_place_looked() {
        // SAFETY: only libm loads, whose initialisers have no preconditions.
        let e = unsafe {
            Library::open_first(
                "the test library",
                &[
                    "/nonexistent/shmem-dl/libx.so",
                    "libshmem-dl-nonexistent.so",
                    "libm.so.6",
                ],
                |lib| Err::<(), _>(format!("{} is not the right library", lib.path())),
            )
        }
        .unwrap_err();
        let DlError::NotLoaded { what, attempts } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(what, "the test library");
        let places: Vec<&str> = attempts.iter().map(|a| a.place.as_str()).collect();
        assert_eq!(
            places,
            [
                "/nonexistent/shmem-dl/libx.so",
                "libshmem-dl-nonexistent.so",
                "libm.so.6"
            ]
        );
        let text = e.to_string();
        assert!(
            text.contains("/nonexistent/shmem-dl/libx.so: ") && text.contains("No such file"),
            "{text}"
        );
        assert!(
            text.contains("libm.so.6: libm.so.6 is not the right library"),
            "{text}"
        );
        // SAFETY: nothing loads.
        let e = unsafe { Library::open("/nonexistent/shmem-dl/liby.so") }.unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/shmem-dl/liby.so"),
            "{e}"
        );
    }

    #[test]
    fn the_check_picks_a_later_candidate_and_its_result_is_returned() {
        let mut seen = Vec::new();
        // SAFETY: libc and libm have initialisers without preconditions.
        let (lib, n) = unsafe {
            Library::open_first("a library with cos", &["libc.so.6", "libm.so.6"], |lib| {
                seen.push(lib.path().to_owned());
                lib.address(c"cos")
                    .map(|_| seen.len())
                    .map_err(|e| e.to_string())
            })
        }
        .expect("libm has cos");
        assert_eq!(lib.path(), "libm.so.6");
        assert_eq!(n, seen.len());
    }
}
