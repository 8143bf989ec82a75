//! Fuzz target `server_session`: see `shmem::fuzzing::server_session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem::fuzzing::server_session(data));
