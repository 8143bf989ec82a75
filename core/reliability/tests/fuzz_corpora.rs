//! Replays the fuzz corpora (`core/fuzz/corpus/<target>/`, grown by `cargo fuzz`; see
//! `docs/reliability.md`) and the targets' seeds through the same entry points as ordinary
//! tests: every input must return without a panic. `SHMEM_FUZZ_WRITE_SEEDS=1` writes the seeds
//! into the corpora (how they were started).

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

#[test]
fn every_corpus_input_and_seed_runs_without_a_panic() {
    let seeds = shmem::fuzzing::seeds();
    if std::env::var_os("SHMEM_FUZZ_WRITE_SEEDS").is_some() {
        for (k, (target, bytes)) in seeds.iter().enumerate() {
            std::fs::create_dir_all(corpus(target)).unwrap();
            std::fs::write(corpus(target).join(format!("seed-{k}")), bytes).unwrap();
        }
    }
    for &(target, run) in shmem::fuzzing::TARGETS {
        let mut inputs: Vec<(String, Vec<u8>)> = seeds
            .iter()
            .filter(|(t, _)| *t == target)
            .enumerate()
            .map(|(k, (_, b))| (format!("seed {k}"), b.clone()))
            .collect();
        let dir = corpus(target);
        let files = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("the corpus {} is missing: {e}", dir.display()));
        for f in files {
            let f = f.expect("a corpus entry").path();
            let bytes = std::fs::read(&f).expect("a corpus file");
            inputs.push((f.display().to_string(), bytes));
        }
        assert!(
            inputs.len() > 1,
            "the corpus of {target} is empty ({})",
            dir.display()
        );
        for (name, bytes) in &inputs {
            let r = std::panic::catch_unwind(|| run(bytes));
            assert!(r.is_ok(), "{target}: {name} panicked");
        }
        println!("{target}: {} inputs", inputs.len());
    }
}
