//! Fuzz target `bootstrap_url`: see `shmem::fuzzing::bootstrap_url`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem::fuzzing::bootstrap_url(data));
