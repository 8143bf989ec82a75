//! Selecting the hw backend with no CANN libraries present fails at init with an error naming
//! what is missing and every place looked, and no panic. The test runs itself as a child
//! process with an environment that has no CANN anywhere.

use std::process::Command;

const CHILD: &str = "SHMEM_HW_SELECTION_CHILD";

#[test]
fn selecting_hw_without_cann_names_what_is_missing_and_where_it_looked() {
    if std::env::var_os(CHILD).is_some() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let attrs = shmem::Attributes::new(0, 1, &format!("tcp://127.0.0.1:{port}"), 2 << 20);
        match shmem::Instance::init(&attrs) {
            Ok(_) => println!("UNEXPECTED: init on hw succeeded"),
            Err(e) => println!("INIT FAILED: {e} (code {})", e.code() as i32),
        }
        return;
    }
    let empty = std::env::temp_dir().join(format!("shmem-hw-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "selecting_hw_without_cann_names_what_is_missing_and_where_it_looked",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("SHMEM_BACKEND", "hw")
        .env("LD_LIBRARY_PATH", &empty)
        .env("ASCEND_HOME_PATH", &empty)
        .env_remove("ASCEND_TOOLKIT_HOME")
        .env_remove("SHMEM_HOME_PATH")
        .env_remove("SHMEM_HW_ACL_LIBRARY")
        .env_remove("SHMEM_HW_SHMEM_LIBRARY")
        .output()
        .expect("the test runs itself");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        text.contains("INIT FAILED: not supported: the hw backend needs libascendcl.so: could not load libascendcl.so; tried"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}/lib64/libascendcl.so", empty.display())),
        "{text}"
    );
    assert!(
        text.contains("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"),
        "{text}"
    );
    assert!(text.contains("(code -100)"), "{text}");
    let _ = std::fs::remove_dir_all(empty);
}
