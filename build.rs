//! Rebuilds `kk` when the bundled playbooks, roles or builtin data change: they are
//! compiled in with `include_dir!`, which cargo does not track by itself.
fn main() {
    for dir in ["builtin", "playbooks", "roles"] {
        println!("cargo:rerun-if-changed={}", dir);
    }
}
