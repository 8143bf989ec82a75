//! `oshCC`: compile and link a C++ OpenSHMEM program against this project's headers and
//! `libshmem.so` (see `src/compiler_wrapper.rs`; `oshCC -show` prints the command).

#[path = "../compiler_wrapper.rs"]
mod compiler_wrapper;

fn main() -> std::process::ExitCode {
    compiler_wrapper::main()
}
