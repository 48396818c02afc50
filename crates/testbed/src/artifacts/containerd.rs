//! containerd in upstream's release layout, built from Debian trixie's containerd 1.7.24
//! (tests/cri.rs installs it; every end-to-end cluster serves it).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::debian::unpacked;
use super::files::{copy_exec, tar_gz};

/// The containerd version served (Debian trixie's package, `1.7.24~ds1`).
pub const CONTAINERD_VERSION: &str = "v1.7.24";

/// containerd's archive as upstream ships it (`bin/containerd`, `bin/containerd-shim-runc-v2`,
/// `bin/ctr`), from Debian trixie's containerd package, written to
/// `<root>/cn/containerd/v1.7.24/containerd-1.7.24-linux-amd64.tar.gz` (the URL the test
/// manifest gives containerd in zone cn). Returns that path.
pub fn containerd_artifact(root: &Path, scratch: &Path) -> PathBuf {
    let dir = scratch.join("containerd-1.7");
    for b in ["containerd", "containerd-shim-runc-v2", "ctr"] {
        copy_exec(
            &unpacked("trixie", "containerd", &format!("usr/bin/{}", b)),
            &dir.join("bin").join(b),
        );
    }
    let out = root
        .join("cn/containerd")
        .join(CONTAINERD_VERSION)
        .join("containerd-1.7.24-linux-amd64.tar.gz");
    tar_gz(&out, &dir, &["bin"]);
    out
}

/// What `containerd --version` of the served binary says its version is (e.g.
/// `1.7.24~ds1`): run on this machine, so the test compares the hosts' server version with
/// the artifact itself, not with a constant.
pub fn containerd_artifact_version() -> String {
    let out = Command::new(unpacked("trixie", "containerd", "usr/bin/containerd"))
        .arg("--version")
        .output()
        .expect("run the artifact's containerd --version");
    // "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+deb13u1"
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(2)
        .unwrap_or_default()
        .to_string()
}
