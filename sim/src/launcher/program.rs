//! Finding the program to run, the way `execvp` does, so a missing program is reported before
//! any PE starts.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::Access;

use super::LaunchError;

/// The search path `execvp` uses when `PATH` is unset.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Resolves `program` against `path` (the `PATH` the PEs will see; `None` when unset).
pub(super) fn resolve(program: &OsStr, path: Option<&OsStr>) -> Result<PathBuf, LaunchError> {
    if program.is_empty() {
        return Err(LaunchError::EmptyProgram);
    }
    if program.as_bytes().contains(&b'/') {
        let candidate = Path::new(program);
        return match check(candidate) {
            Found::Executable => Ok(candidate.to_owned()),
            Found::NotExecutable => Err(LaunchError::NotExecutable {
                path: candidate.to_owned(),
            }),
            Found::Missing => Err(LaunchError::ProgramNotFound {
                program: candidate.to_owned(),
                searched: None,
            }),
        };
    }
    let search: OsString = path.map_or_else(|| DEFAULT_PATH.into(), OsStr::to_owned);
    let mut not_executable = None;
    for dir in search.as_bytes().split(|&b| b == b':') {
        // An empty entry means the current directory (POSIX).
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(program);
        match check(&candidate) {
            Found::Executable => return Ok(candidate),
            Found::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Found::Missing => {}
        }
    }
    match not_executable {
        Some(path) => Err(LaunchError::NotExecutable { path }),
        None => Err(LaunchError::ProgramNotFound {
            program: PathBuf::from(program),
            searched: Some(search),
        }),
    }
}

enum Found {
    Executable,
    NotExecutable,
    Missing,
}

fn check(candidate: &Path) -> Found {
    match std::fs::metadata(candidate) {
        Err(_) => Found::Missing,
        Ok(meta) if !meta.is_file() => Found::NotExecutable,
        Ok(_) => match rustix::fs::access(candidate, Access::EXEC_OK) {
            Ok(()) => Found::Executable,
            Err(_) => Found::NotExecutable,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh_in_path() {
        let found = resolve(OsStr::new("sh"), Some(OsStr::new("/nonexistent::/bin"))).unwrap();
        assert!(found.ends_with("sh"));
    }

    #[test]
    fn missing_program_is_named() {
        let err = resolve(OsStr::new("no-such-program-xyz"), Some(OsStr::new("/bin"))).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("no-such-program-xyz") && text.contains("/bin"),
            "{text}"
        );
        let err = resolve(OsStr::new("/no/such/file"), None).unwrap_err();
        assert!(err.to_string().contains("/no/such/file"));
        assert!(matches!(
            resolve(OsStr::new("/"), None),
            Err(LaunchError::NotExecutable { .. })
        ));
        assert!(matches!(
            resolve(OsStr::new(""), None),
            Err(LaunchError::EmptyProgram)
        ));
    }
}
