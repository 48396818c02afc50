//! The Docker and image-registry artifacts of tests/image_registry.rs, built from Debian
//! packages (unpacked by scripts/unpack-debs) in upstream's layouts under `binary_dir`:
//! - `docker/<v>/amd64/docker-<v>.tgz`: Docker's static-tarball layout
//!   `docker/{docker,dockerd,docker-proxy,docker-init,containerd,containerd-shim-runc-v2,ctr,runc}`
//!   from trixie's docker.io 26.1.5 (dockerd, docker-proxy), docker-cli (docker),
//!   containerd 1.7.24, tini (tini-static as docker-init) and bookworm's runc 1.1.5;
//! - `image-registry/docker-compose/<v>/amd64/docker-compose`: trixie's docker-compose 2.26.1;
//! - `image-registry/docker-registry/<v>/amd64/docker-registry-<v>-linux-amd64.tgz`: a
//!   `registry:<v>` image built here from bookworm's docker-registry 2.8.2 binary (and the
//!   libc it links), in the archive format `docker load` reads (manifest.json + blobs);
//! - `cri-dockerd/<v>/amd64/cri-dockerd-<v>.amd64.tgz`: a FAKE cri-dockerd (no Debian
//!   package): a Python script that answers `--version`, makes the real one's sandbox
//!   checkpoint directory, tells systemd it is ready and sleeps.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use super::debian::unpacked;
use super::files::{copy_exec, tar_gz};
use super::oci::{put_blob, sha};

/// The Docker version the tests install (trixie's docker.io; the config sets it).
pub const DOCKER_VERSION: &str = "26.1.5";
/// The docker-compose version served (trixie's docker-compose).
pub const COMPOSE_VERSION: &str = "v2.26.1";
/// The `registry` image's version (bookworm's docker-registry).
pub const REGISTRY_VERSION: &str = "2.8.2";
/// The FAKE cri-dockerd's version (no Debian package).
pub const CRIDOCKERD_VERSION: &str = "v0.3.21";

/// trixie's docker-compose v2 binary (also used to validate compose files).
pub fn compose_bin() -> PathBuf {
    unpacked(
        "trixie",
        "docker-compose",
        "usr/libexec/docker/cli-plugins/docker-compose",
    )
}

/// Docker's static tarball at `out`.
pub fn docker_tgz(out: &Path, scratch: &Path) {
    let d = scratch.join("docker-static");
    let files = [
        ("trixie", "docker-cli", "usr/bin/docker", "docker"),
        ("trixie", "docker.io", "usr/sbin/dockerd", "dockerd"),
        (
            "trixie",
            "docker.io",
            "usr/sbin/docker-proxy",
            "docker-proxy",
        ),
        ("trixie", "tini", "usr/bin/tini-static", "docker-init"),
        ("trixie", "containerd", "usr/bin/containerd", "containerd"),
        (
            "trixie",
            "containerd",
            "usr/bin/containerd-shim-runc-v2",
            "containerd-shim-runc-v2",
        ),
        ("trixie", "containerd", "usr/bin/ctr", "ctr"),
        ("bookworm", "runc", "usr/sbin/runc", "runc"),
    ];
    for (suite, pkg, path, name) in files {
        copy_exec(&unpacked(suite, pkg, path), &d.join("docker").join(name));
    }
    tar_gz(out, &d, &["docker"]);
}

/// A FAKE cri-dockerd in cri-dockerd's release layout (`cri-dockerd/cri-dockerd`).
pub fn fake_cri_dockerd_tgz(out: &Path, scratch: &Path) {
    let d = scratch.join("cri-dockerd");
    let bin = d.join("cri-dockerd/cri-dockerd");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::write(
        &bin,
        r#"#!/usr/bin/python3
# FAKE cri-dockerd (a kk test stand-in, not the real tool: cri-dockerd has no Debian
# package). `--version` prints a version; otherwise it makes its sandbox checkpoint directory
# (<--cri-dockerd-root-directory, default /var/lib/cri-dockerd>/sandbox, as the real one does
# when it starts), tells systemd it is ready and sleeps.
import os, socket, sys, time
if "--version" in sys.argv:
    print("cri-dockerd 0.3.21 (FAKE kk test stand-in)")
    sys.exit(0)
root = "/var/lib/cri-dockerd"
for i, a in enumerate(sys.argv):
    if a == "--cri-dockerd-root-directory" and i + 1 < len(sys.argv):
        root = sys.argv[i + 1]
    elif a.startswith("--cri-dockerd-root-directory="):
        root = a.split("=", 1)[1]
os.makedirs(os.path.join(root, "sandbox"), mode=0o700, exist_ok=True)
addr = os.environ.get("NOTIFY_SOCKET")
if addr:
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"READY=1", addr)
print("FAKE cri-dockerd: ready, args:", " ".join(sys.argv[1:]), flush=True)
while True:
    time.sleep(3600)
"#,
    )
    .unwrap();
    let st = Command::new("chmod").arg("755").arg(&bin).status().unwrap();
    assert!(st.success());
    tar_gz(out, &d, &["cri-dockerd"]);
}

/// The `registry:<version>` image as a `docker load` archive at `out`: one layer
/// with /bin/registry (bookworm's docker-registry) and the C library it links, blobs stored
/// with the OCI helpers of oci.rs, manifest.json naming the tag.
pub fn registry_image_tgz(out: &Path, scratch: &Path, version: &str) {
    let root = scratch.join("registry-rootfs");
    copy_exec(
        &unpacked("bookworm", "docker-registry", "usr/bin/docker-registry"),
        &root.join("bin/registry"),
    );
    // The binary links only libc (checked with ldd when this was written); the dynamic
    // loader and libc of this machine (Debian 12, like the binary) go in beside it.
    for lib in [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
    ] {
        let real = std::fs::canonicalize(lib).unwrap();
        copy_exec(&real, &root.join(lib.trim_start_matches('/')));
    }
    for dir in ["etc/docker/registry", "var/lib/registry", "tmp"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let layer = Command::new("tar")
        .args(["--owner=0", "--group=0", "--numeric-owner", "--sort=name"])
        .args(["--mtime=@0", "-C"])
        .arg(&root)
        .args(["-cf", "-", "bin", "lib", "lib64", "etc", "var", "tmp"])
        .output()
        .unwrap();
    assert!(layer.status.success(), "packing the registry layer");
    let layer = layer.stdout;
    let img = scratch.join("registry-image");
    let layer_d = put_blob(&img, &layer);
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64", "os": "linux",
        "config": {
            "Entrypoint": ["/bin/registry"],
            "Cmd": ["serve", "/etc/docker/registry/config.yml"],
            "ExposedPorts": {"5000/tcp": {}}
        },
        "rootfs": {"type": "layers", "diff_ids": [sha(&layer)]}
    }))
    .unwrap();
    let config_d = put_blob(&img, &config);
    let blob = |d: &str| format!("blobs/sha256/{}", &d[7..]);
    std::fs::write(
        img.join("manifest.json"),
        serde_json::to_vec(&json!([{
            "Config": blob(&config_d),
            "RepoTags": [format!("registry:{}", version)],
            "Layers": [blob(&layer_d)]
        }]))
        .unwrap(),
    )
    .unwrap();
    tar_gz(out, &img, &["manifest.json", "blobs"]);
}

/// Fills `bin` (binary_dir) with the artifacts the image registry playbook reads.
pub fn binary_dir(bin: &Path, scratch: &Path) {
    docker_tgz(
        &bin.join(format!(
            "docker/{v}/amd64/docker-{v}.tgz",
            v = DOCKER_VERSION
        )),
        scratch,
    );
    copy_exec(
        &compose_bin(),
        &bin.join(format!(
            "image-registry/docker-compose/{}/amd64/docker-compose",
            COMPOSE_VERSION
        )),
    );
    registry_image_tgz(
        &bin.join(format!(
            "image-registry/docker-registry/{v}/amd64/docker-registry-{v}-linux-amd64.tgz",
            v = REGISTRY_VERSION
        )),
        scratch,
        REGISTRY_VERSION,
    );
    fake_cri_dockerd_tgz(
        &bin.join(format!(
            "cri-dockerd/{v}/amd64/cri-dockerd-{b}.amd64.tgz",
            v = CRIDOCKERD_VERSION,
            b = CRIDOCKERD_VERSION.trim_start_matches('v')
        )),
        scratch,
    );
}
