//! Replays the corpus of the fuzz target `c_abi` (`core/fuzz/corpus/c_abi/`, grown by
//! `cargo fuzz`; see `docs/reliability.md`) and the target's seeds through the same entry
//! point, in one process as the fuzzer runs them: every input must keep the entry point's
//! rules (no crash, at most one log line per call and exactly one per failed status, the
//! instance whole afterwards). `SHMEM_FUZZ_WRITE_SEEDS=1` writes the seeds into the corpus (how
//! it was started).

use std::path::{Path, PathBuf};

use shmem_c_linked::fuzzing;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fuzz/corpus/c_abi")
}

#[test]
fn every_corpus_input_and_seed_keeps_the_c_abi_rules() {
    let seeds = fuzzing::seeds();
    let dir = corpus();
    if std::env::var_os("SHMEM_FUZZ_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (k, bytes) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{k}")), bytes).unwrap();
        }
    }
    let mut inputs: Vec<(String, Vec<u8>)> = seeds
        .into_iter()
        .enumerate()
        .map(|(k, b)| (format!("seed {k}"), b))
        .collect();
    let files = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {} is missing: {e}", dir.display()));
    let mut files: Vec<PathBuf> = files.map(|f| f.expect("a corpus entry").path()).collect();
    files.sort();
    let from_corpus = files.len();
    for f in files {
        let bytes = std::fs::read(&f).expect("a corpus file");
        inputs.push((f.display().to_string(), bytes));
    }
    assert!(from_corpus > 1, "the corpus {} is empty", dir.display());
    for (name, bytes) in &inputs {
        eprintln!("c_abi: {name}");
        fuzzing::c_abi(bytes);
    }
    println!("c_abi: {} inputs", inputs.len());
}
