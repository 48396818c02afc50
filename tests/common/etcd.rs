//! The etcd artifact of tests/etcd.rs: Debian trixie's etcd 3.5.16 (etcd and etcdutl from
//! etcd-server, etcdctl from etcd-client, unpacked by scripts/unpack-debs) repacked in
//! upstream's release layout, `etcd-v3.5.16-linux-amd64/{etcd,etcdctl,etcdutl}` in
//! `etcd-v3.5.16-linux-amd64.tar.gz`, served under the test server's `cn/` zone.

use std::path::Path;

use super::artifacts::{copy_exec, tar_gz, unpacked, Served};

/// The etcd version the test installs: the newest Debian has (trixie), the closest to
/// kk's version matrix (v3.5.15 … v3.5.24 for Kubernetes 1.28–1.33).
pub const ETCD_VERSION: &str = "v3.5.16";

/// Packs the etcd tarball under `root` (the server tree); returns what it serves.
pub fn build_etcd(root: &Path, scratch: &Path) -> Served {
    let top = format!("etcd-{}-linux-amd64", ETCD_VERSION);
    let dir = scratch.join("etcd-3.5");
    copy_exec(
        &unpacked("trixie", "etcd-server", "usr/bin/etcd"),
        &dir.join(&top).join("etcd"),
    );
    copy_exec(
        &unpacked("trixie", "etcd-server", "usr/bin/etcdutl"),
        &dir.join(&top).join("etcdutl"),
    );
    copy_exec(
        &unpacked("trixie", "etcd-client", "usr/bin/etcdctl"),
        &dir.join(&top).join("etcdctl"),
    );
    let file = format!("{}.tar.gz", top);
    let server_path = format!("cn/etcd/{}/{}", ETCD_VERSION, file);
    tar_gz(&root.join(&server_path), &dir, &[&top]);
    Served {
        component: "etcd",
        version: ETCD_VERSION,
        server_path,
        dest: format!("etcd/{}/amd64/{}", ETCD_VERSION, file),
    }
}
