//! What the loaded CANN SHMEM has, and which releases are loaded. CANN SHMEM's
//! `aclshmem_info_get_version` reports 1.1 whatever the release, so the features are found by
//! probing symbols: the multi-instance calls (`aclshmemx_instance_ctx_set`/`_get`,
//! `aclshmemx_finalize`) first ship in v1.5.0, and `aclshmemx_quiet_on_stream` arrived after
//! v1.3.0 (`cann-shmem-updates.md`). The release itself is read from the install's
//! `version.info`, and the runtime's from `aclrtGetVersion`, to be reported once at init.

use std::path::Path;

use shmem_dl::Library;

/// The calls of the loaded CANN SHMEM that not every release has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// `aclshmemx_instance_ctx_set`, `aclshmemx_instance_ctx_get` and `aclshmemx_finalize`
    /// (v1.5.0): instances other than 0.
    pub multi_instance: bool,
    /// `aclshmemx_quiet_on_stream` (after v1.3.0); without it a quiet is a stream
    /// synchronisation.
    pub quiet_on_stream: bool,
}

/// The calls that make up multi-instance support.
const MULTI_INSTANCE: [&std::ffi::CStr; 3] = [
    c"aclshmemx_instance_ctx_set",
    c"aclshmemx_instance_ctx_get",
    c"aclshmemx_finalize",
];

impl Features {
    /// What `shmem` (a loaded CANN SHMEM) has.
    pub fn probe(shmem: &Library) -> Features {
        Features {
            multi_instance: MULTI_INSTANCE.iter().all(|s| shmem.address(s).is_ok()),
            quiet_on_stream: shmem.address(c"aclshmemx_quiet_on_stream").is_ok(),
        }
    }

    /// `Ok` if instance `id` can be created with the loaded CANN SHMEM, else why not (CANN's
    /// `ACLSHMEM_NOT_SUPPORTED` case), naming the missing call and the release that has it.
    pub fn check_instance(&self, id: u64, shmem: &Library) -> Result<(), String> {
        if id == 0 || self.multi_instance {
            return Ok(());
        }
        let missing: Vec<String> = MULTI_INSTANCE
            .iter()
            .filter(|s| shmem.address(s).is_err())
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        Err(format!(
            "instance {id} needs CANN SHMEM's multi-instance calls (v1.5.0 and later), but {} has no {}",
            shmem.path(),
            missing.join(", ")
        ))
    }
}

/// The release recorded in the `version.info` of the install that holds `library` (the file
/// beside it, or in one of its three parent directories): the value of its `version` (or
/// `Version`, or `version_dir`) line.
pub fn release_of(library: &Path) -> Option<String> {
    let dirs = library.ancestors().skip(1).take(4);
    dirs.map(|d| d.join("version.info"))
        .find_map(|f| std::fs::read_to_string(f).ok())
        .and_then(|text| version_line(&text))
}

/// The version in the text of a `version.info`.
fn version_line(text: &str) -> Option<String> {
    let value = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
    };
    ["version", "Version", "version_dir"]
        .into_iter()
        .find_map(value)
        .filter(|v| !v.is_empty())
}

/// One line on the loaded libraries, for the report at init: where each was found, the CANN
/// SHMEM release (`version.info`) and what it has, and the runtime's version (`aclrtGetVersion`).
pub fn report(acl: &crate::Acl, shmem: &Library) -> String {
    let shmem_release = release_of(Path::new(shmem.path())).unwrap_or_else(|| "unknown".into());
    let runtime = acl
        .aclrt_get_version()
        .ok()
        .and_then(|f| {
            let (mut major, mut minor, mut patch) = (0, 0, 0);
            // SAFETY: `aclrtGetVersion(int32_t *, int32_t *, int32_t *)` writes three integers.
            let rc = unsafe { f(&mut major, &mut minor, &mut patch) };
            (rc == 0).then(|| format!("{major}.{minor}.{patch}"))
        })
        .unwrap_or_else(|| "unknown".into());
    let f = Features::probe(shmem);
    format!(
        "CANN SHMEM {} (release {shmem_release}; multi-instance {}, quiet_on_stream {}), ACL runtime {} (version {runtime})",
        shmem.path(),
        if f.multi_instance { "yes" } else { "no" },
        if f.quiet_on_stream { "yes" } else { "no" },
        acl.library().path(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_the_install_s_version_info() {
        let root = std::env::temp_dir().join(format!("shmem-hw-version-{}", std::process::id()));
        let lib = root.join("shmem/lib");
        std::fs::create_dir_all(&lib).unwrap();
        assert_eq!(release_of(&lib.join("libshmem.so")), None);
        std::fs::write(
            root.join("version.info"),
            "required_ascend_hdk_version>=\"25.0.RC1.1\"\nversion_dir=8.5.0.alpha001\n",
        )
        .unwrap();
        assert_eq!(
            release_of(&lib.join("libshmem.so")).as_deref(),
            Some("8.5.0.alpha001")
        );
        std::fs::write(lib.join("version.info"), "Version=1.5.1\n").unwrap();
        assert_eq!(
            release_of(&lib.join("libshmem.so")).as_deref(),
            Some("1.5.1")
        );
        let _ = std::fs::remove_dir_all(root);
    }
}
