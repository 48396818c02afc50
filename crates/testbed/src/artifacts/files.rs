//! File helpers every artifact is built with: copying executables, packing tarballs as
//! upstream ships them, digests, and the shell stand-ins for tools without a Debian package.

use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

/// Hex sha256 of a file: what manifests and `download.sha256` give kk to check.
pub fn sha256_file(p: &Path) -> String {
    let data = std::fs::read(p).unwrap_or_else(|e| panic!("reading {}: {}", p.display(), e));
    hex::encode(Sha256::digest(&data))
}

/// `tar czf out -C dir names…` with fast compression (parents of `out` created): the
/// archive layouts upstream releases use.
pub fn tar_gz(out: &Path, dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let status = Command::new("bash")
        .arg("-c")
        .arg("set -o pipefail; tar -cf - -C \"$1\" \"${@:3}\" | gzip -1 > \"$2\"")
        .arg("bash")
        .arg(dir)
        .arg(out)
        .args(names)
        .status()
        .unwrap();
    assert!(status.success(), "packing {}", out.display());
}

/// Copies an executable (parents created), keeping its mode.
pub fn copy_exec(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {}", from.display(), e));
}

/// Writes a FAKE stand-in script for a tool that has no Debian package: it says it is one.
pub fn fake(to: &Path, name: &str) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(
        to,
        format!(
            "#!/bin/sh\necho 'FAKE {} (a kk test stand-in, not the real tool)'\n",
            name
        ),
    )
    .unwrap();
}
