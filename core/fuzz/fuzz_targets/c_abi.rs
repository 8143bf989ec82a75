//! Fuzz target `c_abi`: see `shmem_c_linked::fuzzing::c_abi`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| shmem_c_linked::fuzzing::c_abi(data));
