//! Test-side pieces for tests/cri.rs: the containerd artifact in upstream's layout built
//! from Debian trixie's containerd 1.7.24, a small OCI image holding Debian's static
//! busybox, and a real registry (Debian's `docker-registry`) with TLS and htpasswd auth
//! listening on the test bed's bridge, where the test hosts reach it.
//!
//! runc (bookworm 1.1.5) and crictl come from the shared artifact server
//! (tests/common/artifacts.rs). crictl there is a clearly named FAKE: no Debian release
//! packages cri-tools, so there is no real crictl to serve.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::artifacts::{copy_exec, tar_gz, unpacked};
use super::registry::{put_manifest, sha};

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

/// A port free on `ip` now (the registry's name must be known before certs/init runs).
pub fn free_port(ip: IpAddr) -> u16 {
    std::net::TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An OCI image layout at `dir` holding one linux/amd64 image named `name` (the
/// `org.opencontainers.image.ref.name` kk's `image` module pushes): one layer with
/// Debian's static busybox as `/bin/busybox`. Returns the manifest digest.
pub fn busybox_layout(dir: &Path, name: &str) -> String {
    let work = tempfile::tempdir().unwrap();
    copy_exec(
        &unpacked("bookworm", "busybox-static", "bin/busybox"),
        &work.path().join("bin/busybox"),
    );
    let tar = Command::new("tar")
        .args(["--owner=0", "--group=0", "--numeric-owner", "-C"])
        .arg(work.path())
        .args(["-cf", "-", "bin"])
        .output()
        .unwrap()
        .stdout;
    // gzip reads a file (a pipe both ways would deadlock on a 2 MB layer).
    let tar_file = work.path().join("layer.tar");
    std::fs::write(&tar_file, &tar).unwrap();
    let layer = Command::new("gzip")
        .args(["-n", "-c"])
        .arg(&tar_file)
        .output()
        .unwrap()
        .stdout;
    let config = json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Cmd": ["/bin/busybox", "sh"]},
        "rootfs": {"type": "layers", "diff_ids": [sha(&tar)]}
    });
    let (md, size) = put_manifest(dir, &config, &layer);
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": size,
            "platform": {"os": "linux", "architecture": "amd64"},
            "annotations": {"org.opencontainers.image.ref.name": name}}]}))
        .unwrap(),
    )
    .unwrap();
    md
}

/// Debian's `docker-registry` serving HTTPS with `cert`/`key` and htpasswd (bcrypt) auth
/// for `user`, on `ip:port`, stopped on drop.
pub struct TlsRegistry {
    child: std::process::Child,
    /// `ip:port`, the registry name clients use.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for TlsRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn tls_registry(
    ip: IpAddr,
    port: u16,
    cert: &Path,
    key: &Path,
    user: &str,
    password: &str,
) -> TlsRegistry {
    let dir = tempfile::tempdir().unwrap();
    let htpasswd = dir.path().join("htpasswd");
    let st = Command::new("htpasswd")
        .args(["-Bbc", &htpasswd.display().to_string(), user, password])
        .output()
        .expect("htpasswd (apache2-utils) is installed");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let cfg = dir.path().join("config.yml");
    std::fs::write(
        &cfg,
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem:\n    rootdirectory: {data}\nhttp:\n  addr: {ip}:{port}\n  tls:\n    certificate: {cert}\n    key: {key}\nauth:\n  htpasswd:\n    realm: kk\n    path: {htpasswd}\n",
            data = dir.path().join("data").display(),
            ip = ip,
            port = port,
            cert = cert.display(),
            key = key.display(),
            htpasswd = htpasswd.display(),
        ),
    )
    .unwrap();
    let child = Command::new("docker-registry")
        .args(["serve", &cfg.display().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("docker-registry is installed (scripts/test installs it)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect((ip, port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "registry did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    TlsRegistry {
        child,
        addr: format!("{}:{}", ip, port),
        _dir: dir,
    }
}
