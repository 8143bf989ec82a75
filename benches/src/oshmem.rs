//! Running the same measurements through Open MPI's OpenSHMEM (`oshcc`, `oshrun`), when it is
//! installed, so that both libraries are measured side by side in one run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C benchmark, compiled into the benchmark binary so it runs from any directory.
const SOURCE: &str = include_str!("../oshmem/oshmem_bench.c");

/// Parses `RESULT <key> <value>` lines.
pub fn parse_results(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            (it.next()? == "RESULT").then_some(())?;
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// Parses `NOTE <text>` lines: what the C side says it measured instead of a routine its
/// library lacks.
pub fn parse_notes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("NOTE "))
        .map(|n| n.trim().to_string())
        .collect()
}

/// An OpenSHMEM installation: the compiler wrapper and the launcher, looked up in standard
/// places only (never ours: Open MPI also installs programs named `oshrun`).
#[derive(Debug, Clone)]
pub struct Oshmem {
    oshcc: PathBuf,
    oshrun: PathBuf,
    binary: PathBuf,
}

fn find(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/local/bin", "/opt/openmpi/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

impl Oshmem {
    /// Finds Open MPI's `oshcc` and `oshrun` and compiles the benchmark into `dir`.
    pub fn prepare(dir: &Path) -> Result<Oshmem, String> {
        let oshcc =
            find("oshcc").ok_or("oshcc not found (install openmpi-bin and libopenmpi-dev)")?;
        let oshrun = find("oshrun").ok_or("oshrun not found")?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let src = dir.join("oshmem_bench.c");
        let binary = dir.join("oshmem_bench");
        std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
        let out = Command::new(&oshcc)
            .args(["-O2", "-o"])
            .arg(&binary)
            .arg(&src)
            .output()
            .map_err(|e| format!("running {}: {e}", oshcc.display()))?;
        if !out.status.success() {
            return Err(format!(
                "oshcc failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Oshmem {
            oshcc,
            oshrun,
            binary,
        })
    }

    /// Runs the benchmark in `mode` on `n_pes` PEs and returns its results.
    pub fn run(&self, mode: &str, n_pes: u32) -> Result<BTreeMap<String, f64>, String> {
        self.run_with_notes(mode, n_pes).map(|(results, _)| results)
    }

    /// Runs the benchmark in `mode` on `n_pes` PEs and returns its results and its notes (see
    /// [`parse_notes`]).
    pub fn run_with_notes(
        &self,
        mode: &str,
        n_pes: u32,
    ) -> Result<(BTreeMap<String, f64>, Vec<String>), String> {
        let out = Command::new(&self.oshrun)
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "-np",
                &n_pes.to_string(),
            ])
            .arg(&self.binary)
            .arg(mode)
            .env("OMPI_MCA_plm_rsh_agent", "")
            .output()
            .map_err(|e| format!("running {}: {e}", self.oshrun.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let results = parse_results(&stdout);
        if results.is_empty() {
            return Err(format!(
                "oshrun -np {n_pes} gave no results (status {}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        Ok((results, parse_notes(&stdout)))
    }

    /// The compiler wrapper used.
    pub fn oshcc(&self) -> &Path {
        &self.oshcc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_notes() {
        let out = "RESULT amo_add_rate 1.5e-8\nNOTE OpenSHMEM 1.4: emulated\nnoise\nRESULT bad x\n";
        let r = parse_results(out);
        assert_eq!(r.len(), 1);
        assert_eq!(r["amo_add_rate"], 1.5e-8);
        assert_eq!(
            parse_notes(out),
            vec!["OpenSHMEM 1.4: emulated".to_string()]
        );
    }
}
