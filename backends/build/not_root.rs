// Shared by the build scripts of the crates whose tests act as another user: `include!`d, it
// declares the cfg `not_root` and sets it unless the build runs as root, so that such tests
// are reported as ignored (with the reason) rather than passing without testing anything.

/// Declares `not_root`, and sets it unless this process's effective user is root (`Uid:` of
/// `/proc/self/status`: real, effective, saved, filesystem).
fn declare_not_root() {
    println!("cargo::rustc-check-cfg=cfg(not_root)");
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            == Some("0")
    });
    if !root {
        println!("cargo::rustc-cfg=not_root");
    }
}
