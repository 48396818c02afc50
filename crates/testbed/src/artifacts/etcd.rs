//! The etcd artifact of tests/etcd.rs: Debian trixie's etcd 3.5.16 (etcd and etcdutl from
//! etcd-server, etcdctl from etcd-client, unpacked by scripts/unpack-debs) repacked in
//! upstream's release layout, `etcd-v3.5.16-linux-amd64/{etcd,etcdctl,etcdutl}` in
//! `etcd-v3.5.16-linux-amd64.tar.gz`, served under the test server's `cn/` zone.

use std::path::Path;

use super::debian::unpacked;
use super::files::{copy_exec, tar_gz};
use super::tree::Served;

/// The etcd version the test installs: the newest Debian has (trixie), the closest to
/// kk's version matrix (v3.5.6 … v3.5.24 for Kubernetes 1.23–1.33).
pub const ETCD_VERSION: &str = "v3.5.16";

/// Packs the etcd tarball under `root` (the server tree); returns what it serves.
pub fn build_etcd(root: &Path, scratch: &Path) -> Served {
    let file = format!("etcd-{}-linux-amd64.tar.gz", ETCD_VERSION);
    let server_path = format!("cn/etcd/{}/{}", ETCD_VERSION, file);
    etcd_tgz(&root.join(&server_path), scratch, ETCD_VERSION);
    Served {
        component: "etcd",
        version: ETCD_VERSION,
        server_path,
        dest: format!("etcd/{}/amd64/{}", ETCD_VERSION, file),
    }
}

/// Debian's etcd in upstream's release layout at `out`, named as release `version`
/// (`etcd-<version>-linux-amd64/{etcd,etcdctl,etcdutl}`): the bytes are 3.5.16's whatever
/// the name says (the offline test's mirror serves them under each minor's default version).
pub fn etcd_tgz(out: &Path, scratch: &Path, version: &str) {
    let top = format!("etcd-{}-linux-amd64", version);
    let dir = scratch.join(format!("etcd-tgz-{}", version));
    for (package, bin) in [
        ("etcd-server", "etcd"),
        ("etcd-server", "etcdutl"),
        ("etcd-client", "etcdctl"),
    ] {
        copy_exec(
            &unpacked("trixie", package, &format!("usr/bin/{}", bin)),
            &dir.join(&top).join(bin),
        );
    }
    tar_gz(out, &dir, &[&top]);
}
