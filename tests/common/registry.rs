//! A real container registry (Debian's `docker-registry`, started on loopback) and
//! OCI image layouts built by the test (crates/testbed's `testbed::artifacts::oci`), shared
//! by tests/image.rs and tests/download_images.rs.

use std::path::Path;

pub use testbed::artifacts::oci::{layout, sha};

/// A real registry on a free loopback port, stopped on drop.
pub struct RegistryServer {
    child: std::process::Child,
    /// The loopback port it listens on.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl RegistryServer {
    /// Stops the registry now (a test checking offline behaviour), not only on drop.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A registry without authentication.
pub fn registry() -> RegistryServer {
    registry_with_auth(None)
}

/// A registry that requires basic auth (htpasswd, bcrypt) when `user` is given.
pub fn registry_with_auth(user: Option<(&str, &str)>) -> RegistryServer {
    start(user, None)
}

/// A registry served over HTTPS with this certificate and key (PEM files).
pub fn registry_with_tls(cert: &Path, key: &Path) -> RegistryServer {
    start(None, Some((cert, key)))
}

fn start(user: Option<(&str, &str)>, tls: Option<(&Path, &Path)>) -> RegistryServer {
    let dir = tempfile::tempdir().unwrap();
    let mut auth = String::new();
    if let Some((u, pw)) = user {
        let htpasswd = dir.path().join("htpasswd");
        let st = std::process::Command::new("htpasswd")
            .args(["-Bbc", &htpasswd.display().to_string(), u, pw])
            .output()
            .expect("htpasswd (apache2-utils) is installed");
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
        auth = format!(
            "auth:\n  htpasswd:\n    realm: kk\n    path: {}\n",
            htpasswd.display()
        );
    }
    let tls = match tls {
        Some((cert, key)) => format!(
            "  tls:\n    certificate: {}\n    key: {}\n",
            cert.display(),
            key.display()
        ),
        None => String::new(),
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = dir.path().join("config.yml");
    std::fs::write(
        &cfg,
        format!("version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{}\n{}{}", dir.path().join("data").display(), port, tls, auth),
    )
    .unwrap();
    let child = std::process::Command::new("docker-registry")
        .args(["serve", &cfg.display().to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("docker-registry is installed (scripts/test installs it)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "registry did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    RegistryServer {
        child,
        port,
        _dir: dir,
    }
}

/// `curl -s <args>` from the controller: the body and the HTTP code (registry checks).
pub fn curl(args: &[&str]) -> (String, String) {
    let out = std::process::Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl is installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (body.to_string(), code.to_string())
}

/// Pushes a small two-platform image ([`layout`]) under each full reference of `refs` into
/// the plain-HTTP registry `reg` (`127.0.0.1:<port>`), with kk's `image` module: the
/// registry then serves every name a test's image list needs.
pub fn push_images(p: &super::Project, reg: &str, refs: &[String]) {
    for (i, r) in refs.iter().enumerate() {
        layout(&p.path(&format!("images-src/{}", i)), r);
    }
    p.file(
        "push-images.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - name: push
      loop: "{{ refs | from_json }}"
      image: {src: "local://{{ playbook_dir }}/images-src/{{ i }}", dest: "oci://{{ item }}", auths: [{registry: "{{ reg }}", plain_http: true}]}
      loop_control: {index_var: i}
"#,
    );
    p.kk(&[
        "run",
        "push-images.yaml",
        "--output",
        "json",
        "-e",
        &format!("refs={}", serde_json::to_string(refs).unwrap()),
        "-e",
        &format!("reg={}", reg),
    ])
    .code(0);
}
