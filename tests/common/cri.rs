//! Test-side pieces for tests/cri.rs: the containerd artifact and the busybox OCI image
//! (crates/testbed's `testbed::artifacts::{containerd, oci}`), and a real registry (Debian's
//! `docker-registry`) with TLS and htpasswd auth listening on the test bed's bridge, where
//! the test hosts reach it.
//!
//! runc (bookworm 1.1.5) and crictl come from the shared artifact server
//! (`testbed::artifacts::tree`). crictl there is a clearly named FAKE: no Debian release
//! packages cri-tools, so there is no real crictl to serve.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

pub use testbed::artifacts::containerd::*;
pub use testbed::artifacts::oci::busybox_layout;

/// A port free on `ip` now (the registry's name must be known before certs/init runs).
pub fn free_port(ip: IpAddr) -> u16 {
    std::net::TcpListener::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
