//! OCI image layouts built on this machine, in the blob/manifest layout registries and kk's
//! `image` module read: small test images (one per platform, or Debian's static busybox) and
//! the blob helpers the `registry` image archive (docker.rs) is made with.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::debian::unpacked;
use super::files::copy_exec;

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
    let tar = Command::new("tar")
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
    let mut gz = Command::new("gzip")
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
