//! The `image` module against a real registry (Debian's `docker-registry`, started by
//! the test on loopback) and real OCI image layouts the test builds.

mod common;

use common::Project;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

fn sha(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

fn put_blob(dir: &Path, data: &[u8]) -> String {
    let d = sha(data);
    let p = dir.join("blobs/sha256").join(&d[7..]);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
    d
}

/// A one-layer image for one platform; returns the manifest's descriptor.
fn image(dir: &Path, arch: &str) -> Value {
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
    let layer_d = put_blob(dir, &layer);
    let config = serde_json::to_vec(&json!({"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": [sha(&tar)]}})).unwrap();
    let config_d = put_blob(dir, &config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_d, "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer_d, "size": layer.len()}]
    }))
    .unwrap();
    let md = put_blob(dir, &manifest);
    json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": manifest.len(), "platform": {"os": "linux", "architecture": arch}})
}

/// An OCI layout holding `name` as a two-platform index.
fn layout(dir: &Path, name: &str) -> String {
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
struct RegistryServer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn registry() -> RegistryServer {
    registry_with_auth(None)
}

/// A registry that requires basic auth (htpasswd, bcrypt) when `user` is given.
fn registry_with_auth(user: Option<(&str, &str)>) -> RegistryServer {
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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = dir.path().join("config.yml");
    std::fs::write(
        &cfg,
        format!("version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete: {{enabled: true}}\nhttp:\n  addr: 127.0.0.1:{}\n{}", dir.path().join("data").display(), port, auth),
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

fn index_entry(dir: &Path) -> Value {
    let idx: Value =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    idx["manifests"][0].clone()
}

#[test]
fn push_pull_keep_lists_and_filter_platforms() {
    let reg = registry();
    let p = Project::new();
    let name = format!("127.0.0.1:{}/kk/app:v1", reg.port);
    let src = p.path("src");
    let digest = layout(&src, &name);
    p.file("inventory.yaml", "all:\n  hosts:\n    localhost: {ansible_connection: local}\n").file(
        "site.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  vars:
    auths: [{registry: "{{ reg }}", plain_http: true}]
  tasks:
    - name: push
      image: {src: "local://{{ playbook_dir }}/src", dest: "oci://{{ image }}", auths: "{{ auths }}"}
    - name: pull
      image: {src: "oci://{{ image }}", dest: "local://{{ playbook_dir }}/back", auths: "{{ auths }}"}
    - name: pull arm64
      image:
        manifests: ["{{ image }}"]
        src: "oci://{{ module.image.reference.registry }}/{{ module.image.reference.repository }}:{{ module.image.reference.reference }}"
        dest: "local://{{ playbook_dir }}/arm"
        platform: linux/arm64
        auths: "{{ auths }}"
"#,
    );
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let r = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    r.code(0);
    assert_eq!(r.status("push", "localhost"), "changed", "{}", r.describe());
    // The pulled layout holds the same list, digest for digest.
    let back = index_entry(&p.path("back"));
    assert_eq!(back["digest"], json!(digest));
    let list: Value = serde_json::from_slice(
        &std::fs::read(p.path("back/blobs/sha256").join(&digest[7..])).unwrap(),
    )
    .unwrap();
    assert_eq!(
        list["manifests"].as_array().unwrap().len(),
        2,
        "a manifest list stays a list"
    );
    // The platform filter keeps one.
    let arm = index_entry(&p.path("arm"));
    let arm_list: Value = serde_json::from_slice(
        &std::fs::read(
            p.path("arm/blobs/sha256")
                .join(&arm["digest"].as_str().unwrap()[7..]),
        )
        .unwrap(),
    )
    .unwrap();
    let plats: Vec<&str> = arm_list["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(plats, ["arm64"]);
    // Copying again changes nothing.
    let again = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    again.code(0);
    assert_eq!(
        again.recap("localhost")["changed"],
        0,
        "{}",
        again.describe()
    );
    // A tampered blob is refused.
    let first_layer = {
        let m: Value = serde_json::from_slice(
            &std::fs::read(
                p.path("back/blobs/sha256")
                    .join(&list["manifests"][0]["digest"].as_str().unwrap()[7..]),
            )
            .unwrap(),
        )
        .unwrap();
        m["layers"][0]["digest"].as_str().unwrap().to_string()
    };
    std::fs::write(
        src.join("blobs/sha256").join(&first_layer[7..]),
        b"tampered",
    )
    .unwrap();
    let p2 = format!("127.0.0.1:{}/kk/other:v1", reg.port);
    let mut idx: Value =
        serde_json::from_slice(&std::fs::read(src.join("index.json")).unwrap()).unwrap();
    idx["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] = json!(p2);
    std::fs::write(src.join("index.json"), serde_json::to_vec(&idx).unwrap()).unwrap();
    let bad = p.run_json(&[
        "-e",
        &format!("image={}", p2),
        "-e",
        &format!("reg={}", reg_addr),
    ]);
    bad.code(2);
    assert!(
        bad.result("push", "localhost")["result"]["msg"]
            .as_str()
            .unwrap()
            .contains("refusing a corrupted or tampered blob"),
        "{}",
        bad.describe()
    );
}

#[test]
fn registry_credentials_are_used_and_wrong_ones_refused() {
    let reg = registry_with_auth(Some(("kk", "s3cret-pw")));
    let p = Project::new();
    let name = format!("127.0.0.1:{}/kk/private:v1", reg.port);
    layout(&p.path("src"), &name);
    p.file(
        "inventory.yaml",
        "all:\n  hosts:\n    localhost: {ansible_connection: local}\n",
    )
    .file(
        "site.yaml",
        r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - name: push
      image:
        src: "local://{{ playbook_dir }}/src"
        dest: "oci://{{ image }}"
        auths: [{registry: "{{ reg }}", plain_http: true, username: kk, password: "{{ pw }}"}]
"#,
    );
    let reg_addr = format!("127.0.0.1:{}", reg.port);
    let ok = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
        "-e",
        "pw=s3cret-pw",
    ]);
    ok.code(0);
    assert_eq!(
        ok.status("push", "localhost"),
        "changed",
        "{}",
        ok.describe()
    );
    assert!(!ok.stdout.contains("s3cret-pw"), "the password leaked");
    let bad = p.run_json(&[
        "-e",
        &format!("image={}", name),
        "-e",
        &format!("reg={}", reg_addr),
        "-e",
        "pw=wrong",
    ]);
    bad.code(2);
    let msg = bad.result("push", "localhost")["result"]["msg"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("refused the credentials") || msg.contains("401"),
        "{}",
        msg
    );
}
