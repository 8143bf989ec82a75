//! `aclshmem-cxx` (and `aclshmem-c++`, a link to it): compile and link a CANN SHMEM host
//! program in C++ against CANN's headers, the ACL stand-in's, `libshmem.so` and
//! `libascendcl.so` (see `src/compiler_wrapper.rs`; `-show` prints the command).

#[path = "../compiler_wrapper.rs"]
mod compiler_wrapper;

fn main() -> std::process::ExitCode {
    compiler_wrapper::main()
}
