//! Fuzz target `unique_id`: see `shmem::fuzzing::unique_id`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem::fuzzing::unique_id(data));
