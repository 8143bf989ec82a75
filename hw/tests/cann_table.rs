//! The CANN SHMEM table (`hw/src/cann_table.rs`) against the CANN headers: every entry is
//! compiled as a function pointer of exactly the table's type, initialised with the header's
//! function, so a signature that differs fails to compile; and every function of the table
//! resolves in this project's `libshmem.so`, which implements those headers.

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(unreachable_pub, dead_code)]
mod table {
    include!("../src/cann_table.rs");
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

#[test]
fn every_entry_has_the_signature_the_cann_headers_declare() {
    let mut src = String::from("#include \"shmem.h\"\n\n");
    for (i, (ret, name, params, _)) in table::FUNCTIONS.iter().enumerate() {
        src.push_str(&format!(
            "using t{i} = {ret} (*)({params});\nstatic const t{i} p{i} = &{name};\n"
        ));
    }
    src.push_str("int main() { return 0; }\n");
    let dir = std::env::temp_dir().join(format!("shmem-hw-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("table.cpp");
    std::fs::write(&file, &src).unwrap();
    let out = Command::new("c++")
        .args([
            "-std=c++17",
            "-fsyntax-only",
            "-Werror",
            "-Wno-unused-variable",
        ])
        .arg(format!(
            "-I{}",
            repo().join("core/capi/include/cann").display()
        ))
        .arg(format!("-I{}", repo().join("sim/acl/include").display()))
        .arg(&file)
        .output()
        .expect("c++ runs");
    assert!(
        out.status.success(),
        "the table and the CANN headers differ:\n{}\n{src}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}
