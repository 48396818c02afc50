//! A real container registry (Debian's `docker-registry`, started on loopback) and
//! OCI image layouts built by the test, shared by tests/image.rs and
//! tests/download_images.rs.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// `sha256:<hex>` of the bytes (an OCI digest).
pub fn sha(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// Stores a blob in the OCI layout at `dir`; returns its digest.
pub fn put_blob(dir: &Path, data: &[u8]) -> String {
    let d = sha(data);
    let p = dir.join("blobs/sha256").join(&d[7..]);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
    d
}

/// A one-layer image for one platform; returns the manifest's descriptor.
pub fn image(dir: &Path, arch: &str) -> Value {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("hello.txt"),
        format!("hello from {}\n", arch),
    )
    .unwrap();
    let tar = std::process::Command::new("tar")
        .args([
            "-C",
            &work.path().display().to_string(),
            "-cf",
            "-",
            "hello.txt",
        ])
        .output()
        .unwrap()
        .stdout;
    let mut gz = std::process::Command::new("gzip")
        .arg("-n")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    gz.stdin.take().unwrap().write_all(&tar).unwrap();
    let layer = gz.wait_with_output().unwrap().stdout;
    let config = json!({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": [sha(&tar)]}});
    let (md, size) = put_manifest(dir, &config, &layer);
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": size, "platform": {"os": "linux", "architecture": arch}})
}

/// Stores a one-layer image's config, gzipped layer and manifest in the OCI layout at
/// `dir`; returns the manifest's digest and size.
pub fn put_manifest(dir: &Path, config: &Value, layer_gz: &[u8]) -> (String, usize) {
    let layer_d = put_blob(dir, layer_gz);
    let config = serde_json::to_vec(config).unwrap();
    let config_d = put_blob(dir, &config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_d, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_d, "size": layer_gz.len()}]
    }))
    .unwrap();
    (put_blob(dir, &manifest), manifest.len())
}

/// An OCI layout holding `name` as a two-platform index.
pub fn layout(dir: &Path, name: &str) -> String {
    let a = image(dir, "amd64");
    let b = image(dir, "arm64");
    let index = serde_json::to_vec(&json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [a, b]})).unwrap();
    let d = put_blob(dir, &index);
    std::fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    std::fs::write(
        dir.join("index.json"),
        serde_json::to_vec(&json!({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": d, "size": index.len(), "annotations": {"org.opencontainers.image.ref.name": name}}]})).unwrap(),
    )
    .unwrap();
    d
}

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
