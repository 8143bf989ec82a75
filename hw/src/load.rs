//! Finding and loading the vendor libraries, as cudarc loads CUDA but without its panics.
//!
//! **Where.** Each library is looked for in order (every place is kept for the error):
//!
//! - the ACL runtime, `libascendcl.so`: the path in `SHMEM_HW_ACL_LIBRARY` if set (and nowhere
//!   else), then `lib64/` of `ASCEND_HOME_PATH` and of `ASCEND_TOOLKIT_HOME` (what CANN's
//!   `set_env.sh` exports), then the standard install roots
//!   (`/usr/local/Ascend/ascend-toolkit/latest`, `/usr/local/Ascend/latest`), then every
//!   directory of `LD_LIBRARY_PATH`, then the loader's own search (the name alone);
//! - CANN SHMEM, `libshmem.so`: the path in `SHMEM_HW_SHMEM_LIBRARY` if set, then
//!   `shmem/lib/` and `lib/` of `SHMEM_HOME_PATH` (CANN SHMEM installs apart from the toolkit;
//!   its `set_env.sh` exports that root), then `/usr/local/Ascend/shmem/latest`, then the
//!   `LD_LIBRARY_PATH` directories. Never the name alone: that would return this project's own
//!   `libshmem.so`, which a C program on this backend has loaded already.
//!
//! **Never itself.** A candidate that is the file this code runs from (same device and inode)
//! is refused: `dlopen` of an already loaded file returns that object, and the backend would
//! call itself. A candidate must also have CANN SHMEM's `aclshmemx_init_attr`.
//!
//! **Isolation.** CANN's `libshmem.so` exports the same names as ours. It is opened with
//! `RTLD_LOCAL | RTLD_DEEPBIND`, so that its calls to its own functions bind to its own
//! definitions, not to ours that come first in the global scope, and its names are not added to
//! the global scope. `dlmopen` into a new link-map namespace would isolate it too, but would
//! also give it a second copy of the ACL runtime, whose per-process state (devices, contexts,
//! streams) must be the one the program initialised. The ACL runtime itself is opened
//! `RTLD_GLOBAL`, before CANN SHMEM, so that CANN SHMEM's dependency on it resolves to that one
//! copy. CANN SHMEM's own dependencies (`memfabric_hybrid/lib`, beside `shmem/lib`) are found as
//! its `set_env.sh` sets them up, through `LD_LIBRARY_PATH`.
//!
//! Nothing here panics: a library that cannot be found is a [`LoadError`] naming it and every
//! place looked, with why each was not taken.

use std::ffi::{CStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use shmem_dl::{DlError, Library};

/// The ACL runtime's file name.
pub const ACL_LIBRARY: &str = "libascendcl.so";
/// CANN SHMEM's file name.
pub const SHMEM_LIBRARY: &str = "libshmem.so";
/// The call every CANN SHMEM library has.
const SHMEM_PROBE: &CStr = c"aclshmemx_init_attr";
/// The call every ACL runtime has.
const ACL_PROBE: &CStr = c"aclrtSetDevice";

/// Why the vendor libraries could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A library was not found, or every copy found was refused.
    #[error("the hw backend needs {library}: {cause}")]
    NotFound {
        /// `libascendcl.so` or `libshmem.so`.
        library: &'static str,
        /// Every place looked, and why each was not taken.
        cause: DlError,
    },
}

/// The environment that decides where the libraries are looked for (a snapshot, so that the
/// search is a function of it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    /// `SHMEM_HW_ACL_LIBRARY`: the ACL runtime's path, and the only place looked.
    pub acl_library: Option<PathBuf>,
    /// `SHMEM_HW_SHMEM_LIBRARY`: CANN SHMEM's path, and the only place looked.
    pub shmem_library: Option<PathBuf>,
    /// `ASCEND_HOME_PATH`.
    pub ascend_home: Option<PathBuf>,
    /// `ASCEND_TOOLKIT_HOME`.
    pub toolkit_home: Option<PathBuf>,
    /// `SHMEM_HOME_PATH`.
    pub shmem_home: Option<PathBuf>,
    /// `LD_LIBRARY_PATH`.
    pub ld_library_path: Option<OsString>,
}

impl Places {
    /// The process environment's.
    pub fn from_env() -> Places {
        let path = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Places {
            acl_library: path("SHMEM_HW_ACL_LIBRARY"),
            shmem_library: path("SHMEM_HW_SHMEM_LIBRARY"),
            ascend_home: path("ASCEND_HOME_PATH"),
            toolkit_home: path("ASCEND_TOOLKIT_HOME"),
            shmem_home: path("SHMEM_HOME_PATH"),
            ld_library_path: std::env::var_os("LD_LIBRARY_PATH"),
        }
    }

    fn ld_dirs(&self) -> Vec<PathBuf> {
        self.ld_library_path
            .as_ref()
            .map(|p| {
                std::env::split_paths(p)
                    .filter(|d| !d.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Where the ACL runtime is looked for, in order.
    pub fn acl_candidates(&self) -> Vec<PathBuf> {
        if let Some(p) = &self.acl_library {
            return vec![p.clone()];
        }
        let mut dirs: Vec<PathBuf> = [&self.ascend_home, &self.toolkit_home]
            .into_iter()
            .flatten()
            .map(|h| h.join("lib64"))
            .collect();
        dirs.extend(
            [
                "/usr/local/Ascend/ascend-toolkit/latest",
                "/usr/local/Ascend/latest",
            ]
            .map(|r| Path::new(r).join("lib64")),
        );
        dirs.extend(self.ld_dirs());
        let mut c = unique(dirs.into_iter().map(|d| d.join(ACL_LIBRARY)));
        c.push(PathBuf::from(ACL_LIBRARY));
        c
    }

    /// Where CANN SHMEM is looked for, in order (never the bare name: see the module).
    pub fn shmem_candidates(&self) -> Vec<PathBuf> {
        if let Some(p) = &self.shmem_library {
            return vec![p.clone()];
        }
        let mut dirs = Vec::new();
        if let Some(h) = &self.shmem_home {
            dirs.push(h.join("shmem/lib"));
            dirs.push(h.join("lib"));
        }
        dirs.push(PathBuf::from("/usr/local/Ascend/shmem/latest/shmem/lib"));
        dirs.extend(self.ld_dirs());
        unique(dirs.into_iter().map(|d| d.join(SHMEM_LIBRARY)))
    }
}

/// `paths` without repeats, in order.
fn unique(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The file this code runs from (the executable, or the shared library that contains it), as
/// device and inode.
fn own_file() -> Option<(u64, u64)> {
    let mut info: libc::Dl_info = empty_dl_info();
    let here = own_file as *const () as *const libc::c_void;
    // SAFETY: `dladdr` fills `info` for an address of this process; `here` is one.
    if unsafe { libc::dladdr(here, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: `dli_fname` is a C string owned by the loader, valid while the object is loaded.
    let name = unsafe { CStr::from_ptr(info.dli_fname) };
    use std::os::unix::ffi::OsStrExt;
    identity(Path::new(std::ffi::OsStr::from_bytes(name.to_bytes())))
}

/// An all-zero `Dl_info` (plain pointers).
fn empty_dl_info() -> libc::Dl_info {
    libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    }
}

/// A file's device and inode.
fn identity(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

/// The two vendor libraries, loaded.
#[derive(Debug)]
pub struct Libraries {
    /// The ACL runtime.
    pub acl: Library,
    /// CANN SHMEM.
    pub shmem: Library,
}

/// Loads the ACL runtime and then CANN SHMEM from the places `places` gives.
///
/// # Safety
///
/// Loading runs the libraries' initialisers: the files found must be the vendor libraries (or
/// ABI-compatible stand-ins) whose initialisers are sound to run in this process now.
pub unsafe fn load(places: &Places) -> Result<Libraries, LoadError> {
    // SAFETY: forwarded.
    let (acl, ()) = unsafe {
        Library::open_first_with(
            ACL_LIBRARY,
            &places.acl_candidates(),
            libc::RTLD_NOW | libc::RTLD_GLOBAL,
            |lib| has(lib, ACL_PROBE, "the ACL runtime"),
        )
    }
    .map_err(|cause| LoadError::NotFound {
        library: ACL_LIBRARY,
        cause,
    })?;
    let (mut refused, rest) = not_itself(places.shmem_candidates(), own_file());
    // SAFETY: forwarded.
    let opened = unsafe {
        Library::open_first_with(
            SHMEM_LIBRARY,
            &rest,
            libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND,
            |lib| has(lib, SHMEM_PROBE, "CANN SHMEM").and_then(|()| not_a_program_build(lib)),
        )
    };
    match opened {
        Ok((shmem, ())) => Ok(Libraries { acl, shmem }),
        Err(DlError::NotLoaded { what, attempts }) => {
            refused.extend(attempts);
            Err(LoadError::NotFound {
                library: SHMEM_LIBRARY,
                cause: DlError::NotLoaded {
                    what,
                    attempts: refused,
                },
            })
        }
        Err(cause) => Err(LoadError::NotFound {
            library: SHMEM_LIBRARY,
            cause,
        }),
    }
}

/// `candidates` split into those that are the file `me` (refused, with the reason) and the
/// others.
fn not_itself(
    candidates: Vec<PathBuf>,
    me: Option<(u64, u64)>,
) -> (Vec<shmem_dl::Attempt>, Vec<PathBuf>) {
    let mut refused = Vec::new();
    let mut rest = Vec::new();
    for c in candidates {
        match (identity(&c), me) {
            (Some(id), Some(me)) if id == me => refused.push(shmem_dl::Attempt {
                place: c.display().to_string(),
                reason: "this is shmem-rs's own library, which the backend must never call".into(),
            }),
            _ => rest.push(c),
        }
    }
    (refused, rest)
}

/// `Ok` unless `lib` is one of this project's `libshmem.so` builds other than a stand-in (the
/// library programs link, which selects backends itself and would call back into this one).
fn not_a_program_build(lib: &Library) -> Result<(), String> {
    type Kind = unsafe extern "C" fn() -> *const std::ffi::c_char;
    // SAFETY: in this project's libraries the symbol has this type (`build_kind.rs`).
    let Ok(kind) = (unsafe { lib.function::<Kind>(c"shmemrs_library_kind") }) else {
        return Ok(()); // CANN's own
    };
    // SAFETY: the function returns a static C string.
    let kind = unsafe { CStr::from_ptr(kind()) };
    if kind == c"stand-in" {
        Ok(())
    } else {
        Err(format!(
            "this is shmem-rs's own libshmem.so (a {} build), not CANN SHMEM; the CI's stand-in is built with the stand-in feature",
            kind.to_string_lossy()
        ))
    }
}

/// `Ok` if `lib` has `symbol`, else why it is not `what`.
fn has(lib: &Library, symbol: &CStr, what: &str) -> Result<(), String> {
    lib.address(symbol)
        .map(drop)
        .map_err(|_| format!("not {what}: it has no `{}`", symbol.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places {
            ascend_home: Some("/opt/cann".into()),
            toolkit_home: Some("/opt/toolkit".into()),
            shmem_home: Some("/opt/shmem".into()),
            ld_library_path: Some("/l1::/l2".into()),
            ..Places::default()
        }
    }

    #[test]
    fn the_runtime_is_looked_for_as_cann_installs_it_then_on_the_library_path() {
        let c = places().acl_candidates();
        let want: Vec<PathBuf> = [
            "/opt/cann/lib64/libascendcl.so",
            "/opt/toolkit/lib64/libascendcl.so",
            "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so",
            "/usr/local/Ascend/latest/lib64/libascendcl.so",
            "/l1/libascendcl.so",
            "/l2/libascendcl.so",
            "libascendcl.so",
        ]
        .map(PathBuf::from)
        .to_vec();
        assert_eq!(c, want);
    }

    #[test]
    fn cann_shmem_is_looked_for_under_its_own_root_and_never_by_bare_name() {
        let c = places().shmem_candidates();
        let want: Vec<PathBuf> = [
            "/opt/shmem/shmem/lib/libshmem.so",
            "/opt/shmem/lib/libshmem.so",
            "/usr/local/Ascend/shmem/latest/shmem/lib/libshmem.so",
            "/l1/libshmem.so",
            "/l2/libshmem.so",
        ]
        .map(PathBuf::from)
        .to_vec();
        assert_eq!(c, want);
    }

    #[test]
    fn an_explicit_path_is_the_only_place_looked() {
        let p = Places {
            acl_library: Some("/x/acl.so".into()),
            shmem_library: Some("/x/shmem.so".into()),
            ..places()
        };
        assert_eq!(p.acl_candidates(), vec![PathBuf::from("/x/acl.so")]);
        assert_eq!(p.shmem_candidates(), vec![PathBuf::from("/x/shmem.so")]);
    }

    #[test]
    fn without_the_libraries_the_error_names_what_is_missing_and_every_place() {
        let dir = std::env::temp_dir().join(format!("shmem-hw-none-{}", std::process::id()));
        let p = Places {
            ascend_home: Some(dir.clone()),
            ld_library_path: Some(dir.clone().into_os_string()),
            ..Places::default()
        };
        // SAFETY: nothing that loads is a vendor library here: every candidate is missing, or a
        // system library without the runtime's symbol, which is closed again.
        let e = unsafe { load(&p) }.expect_err("no CANN SHMEM here");
        // The runtime may be found by its bare name (a test's library path holds the
        // project's stand-in); CANN SHMEM never is, so one of the two is missing, named with
        // every place looked.
        let text = e.to_string();
        let library = match &e {
            LoadError::NotFound { library, .. } => *library,
        };
        assert!(
            text.starts_with(&format!("the hw backend needs {library}: could not load")),
            "{text}"
        );
        let in_dir = match library {
            ACL_LIBRARY => format!("{}/lib64/libascendcl.so", dir.display()),
            _ => format!("{}/libshmem.so", dir.display()),
        };
        assert!(text.contains(&in_dir), "{text}");
        assert!(text.contains("No such file or directory"), "{text}");
    }

    #[test]
    fn the_backend_refuses_the_file_it_runs_from() {
        // The test executable plays this project's libshmem.so: the file this code is in.
        let me = std::env::current_exe().expect("the test knows its path");
        assert_eq!(
            own_file(),
            identity(&me),
            "the test runs from its executable"
        );
        let other = PathBuf::from("/nonexistent/libshmem.so");
        let (refused, rest) = not_itself(vec![me.clone(), other.clone()], own_file());
        assert_eq!(rest, vec![other]);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].place, me.display().to_string());
        assert!(
            refused[0].reason.contains("own library"),
            "{:?}",
            refused[0]
        );
    }

    #[test]
    fn a_library_without_the_runtime_s_calls_is_refused_saying_so() {
        let p = Places {
            acl_library: Some("libc.so.6".into()),
            ..Places::default()
        };
        // SAFETY: the C library is loaded already; it is refused and closed again.
        let e = unsafe { load(&p) }.expect_err("libc is not the ACL runtime");
        let text = e.to_string();
        assert!(
            text.contains("libc.so.6: not the ACL runtime: it has no `aclrtSetDevice`"),
            "{text}"
        );
    }
}
