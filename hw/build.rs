//! Generates the raw bindings: the ACL runtime's (`$OUT_DIR/acl_raw.rs`) from the one table
//! that also generates the ACL stand-in's `acl/acl.h` (`sim/acl/src/table.rs`), and CANN
//! SHMEM's (`$OUT_DIR/cann_raw.rs`) from `src/cann_table.rs`, which a test compiles against the
//! CANN headers; so that the backend's signatures and the C side cannot drift apart.

use std::fmt::Write as _;
use std::path::PathBuf;

include!("../sim/acl/src/table.rs");

#[allow(unreachable_pub)]
mod cann {
    include!("src/cann_table.rs");
}

/// The Rust type of a C type of the table.
fn rust_type(c: &str) -> &'static str {
    match c.trim() {
        "aclError" | "int32_t" => "i32",
        "uint32_t" => "u32",
        "size_t" => "usize",
        "aclrtContext" | "aclrtStream" | "aclrtEvent" | "void *" => "*mut ::std::ffi::c_void",
        "aclrtContext *" | "aclrtStream *" | "aclrtEvent *" | "void **" => {
            "*mut *mut ::std::ffi::c_void"
        }
        "const void *" => "*const ::std::ffi::c_void",
        "const char *" => "*const ::std::ffi::c_char",
        "int32_t *" => "*mut i32",
        "uint32_t *" => "*mut u32",
        "size_t *" => "*mut usize",
        "aclrtRunMode *" | "int *" => "*mut ::std::ffi::c_int",
        "int" | "aclshmem_team_t" => "::std::ffi::c_int",
        "int64_t" => "i64",
        "uint64_t" => "u64",
        "aclshmemx_bootstrap_t" => "u32",
        "void" => "()",
        "aclshmemx_uniqueid_t *" => "*mut crate::cann_types::aclshmemx_uniqueid_t",
        "aclshmemx_init_attr_t *" => "*mut crate::cann_types::aclshmemx_init_attr_t",
        "aclshmem_instance_ctx *" => "*mut crate::cann_types::aclshmem_instance_ctx",
        t if ENUMS.iter().any(|(name, _, _)| *name == t) => "::std::ffi::c_int",
        t => panic!("hw/build.rs: no Rust type for the C type `{t}` of the ACL table"),
    }
}

/// `aclrtSetDevice` → `aclrt_set_device`.
fn snake(name: &str) -> String {
    let mut s = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(ch.to_ascii_lowercase());
        } else {
            s.push(ch);
        }
    }
    s
}

/// A parameter's C type (the declaration without its name).
fn param_type(p: &str) -> &str {
    let p = p.trim();
    let name_start = p
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    p[..name_start].trim()
}

/// The `Result` layer over table `table`: for every function that `returns_code`, an `unsafe fn`
/// of the same name with `try_` before it that resolves the function, calls it and turns the
/// code into a `Result` with `check`, failing with the error `fail` makes (`{call}` is the C
/// name; cudarc's "result" layer).
fn results(
    table: &str,
    check: &str,
    fail: &str,
    functions: &[(&str, &str, &str, &str)],
    returns_code: impl Fn(&str, &str) -> bool,
) -> String {
    let mut out = format!("impl {table} {{\n");
    for (ret, cname, params, src) in functions {
        if !returns_code(ret, cname) {
            continue;
        }
        let types: Vec<&str> = match params.trim() {
            "void" => Vec::new(),
            p => p.split(',').map(|a| rust_type(param_type(a))).collect(),
        };
        let args: Vec<String> = (0..types.len()).map(|i| format!("a{i}")).collect();
        let decl: Vec<String> = args
            .iter()
            .zip(&types)
            .map(|(a, t)| format!("{a}: {t}"))
            .collect();
        let field = snake(cname);
        let _ = write!(
            out,
            "    /// `{cname}({params})` ({src}), as a `Result`.\n    ///\n    /// # Safety\n    ///\n    /// The arguments meet `{cname}`'s C contract.\n    pub unsafe fn try_{field}(&self{}) -> Result<(), crate::HwError> {{\n        let f = self.{field}()?;\n        // SAFETY: the caller meets the C contract; `f` has the table's exact type.\n        let code = unsafe {{ f({}) }};\n        {check}(code).map_err(|error| {})\n    }}\n",
            decl.iter().map(|d| format!(", {d}")).collect::<String>(),
            args.join(", "),
            fail.replace("{call}", cname)
        );
    }
    out.push_str("}\n");
    out
}

/// A `shmem_dl::symbols!` table `name` of `functions`, with `resolve_all` and the C names.
fn table(name: &str, doc: &str, functions: &[(&str, &str, &str, &str)]) -> String {
    let mut out = format!("shmem_dl::symbols! {{\n    /// {doc}\n    pub struct {name} {{\n");
    let mut names = Vec::new();
    for (ret, cname, params, src) in functions {
        let args: Vec<&str> = match params.trim() {
            "void" => Vec::new(),
            p => p.split(',').map(|a| rust_type(param_type(a))).collect(),
        };
        let field = snake(cname);
        let _ = writeln!(
            out,
            "        /// `{ret} {cname}({params})` ({src}).\n        {field}: unsafe extern \"C\" fn({}) -> {} = c\"{cname}\";",
            args.join(", "),
            rust_type(ret)
        );
        names.push((field, *cname));
    }
    let _ = write!(
        out,
        "    }}\n}}\n\nimpl {name} {{\n    /// Resolves every function of the table, failing on the first that is missing.\n    pub fn resolve_all(&self) -> Result<(), shmem_dl::DlError> {{\n"
    );
    for (field, _) in &names {
        let _ = writeln!(out, "        self.{field}()?;");
    }
    out.push_str("        Ok(())\n    }\n}\n\n/// The C names of the table's functions.\npub const FUNCTION_NAMES: &[&str] = &[\n");
    for (_, cname) in &names {
        let _ = writeln!(out, "    \"{cname}\",");
    }
    out.push_str("];\n");
    out
}

fn main() {
    let mut out =
        String::from("// Generated by hw/build.rs from sim/acl/src/table.rs: do not edit.\n\n");
    for (name, value, src) in CONSTANTS {
        let v = value.trim_end_matches('U');
        let ty = if v.starts_with("0x") { "u32" } else { "i32" };
        let _ = writeln!(out, "/// `{name}` ({src}).\npub const {name}: {ty} = {v};");
    }
    for (ty, members, src) in ENUMS {
        let _ = writeln!(
            out,
            "/// The C enumeration `{ty}` ({src}).\npub type {ty} = ::std::ffi::c_int;"
        );
        for (m, v) in *members {
            let _ = writeln!(out, "/// `{m}`, a `{ty}`.\npub const {m}: {ty} = {v};");
        }
    }
    out.push_str(&table(
        "Acl",
        "The ACL runtime's functions this backend may call, resolved on first use.",
        FUNCTIONS,
    ));
    out.push_str(&results(
        "Acl",
        "AclError::check",
        "self.failed(\"{call}\", error)",
        FUNCTIONS,
        |ret, _| ret == "aclError",
    ));
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(dir.join("acl_raw.rs"), out).expect("OUT_DIR is writable");
    let cann =
        String::from("// Generated by hw/build.rs from hw/src/cann_table.rs: do not edit.\n\n")
            + &table(
                "Cann",
                "CANN SHMEM's host calls this backend may call, resolved on first use.",
                cann::FUNCTIONS,
            )
            + &results(
                "Cann",
                "ShmemError::check",
                "crate::HwError::Shmem { call: \"{call}\", error }",
                cann::FUNCTIONS,
                |_, name| cann::CODE_RETURNING.contains(&name),
            );
    std::fs::write(dir.join("cann_raw.rs"), cann).expect("OUT_DIR is writable");
    println!("cargo:rerun-if-changed=src/cann_table.rs");
    println!("cargo:rerun-if-changed=../sim/acl/src/table.rs");
}
