//! Fuzz target `frames`: see `shmem::fuzzing::frames`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem::fuzzing::frames(data));
