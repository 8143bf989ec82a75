//! Fuzz target `environment`: see `shmem::fuzzing::environment`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem::fuzzing::environment(data));
