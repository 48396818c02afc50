//! The artifact server of an end-to-end cluster, as the tests and `bench --flow` start it:
//! tree.rs's tree plus etcd 3.5 and containerd 1.7, the FAKE Kubernetes tools and charts,
//! and optionally the image registry's artifacts, served over HTTP on loopback (the
//! controller downloads), with the manifest that points kk at them.

use std::collections::BTreeMap;
use std::path::Path;

use super::docker::{compose_bin, docker_tgz, registry_image_tgz};
use super::docker::{COMPOSE_VERSION, DOCKER_VERSION, REGISTRY_VERSION};
use super::fakes::{serve_chart, serve_kube, FakeArtifacts};
use super::files::{copy_exec, sha256_file};
use super::tree::{build_server, manifest, Served};
use crate::http::HttpServer;

/// tree.rs's tree plus etcd 3.5 and containerd 1.7, built under `<dir>/srv` (archives
/// packed in `<dir>/scratch`) and served on loopback. Returns the served files, the server
/// and the digests by component (`etcd35`, `containerd17` for the two added).
pub fn serve_artifacts(dir: &Path) -> (Vec<Served>, HttpServer, BTreeMap<&'static str, String>) {
    let root = dir.join("srv");
    let scratch = dir.join("scratch");
    let served = build_server(&root, &scratch);
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    let etcd = super::etcd::build_etcd(&root, &scratch);
    sums.insert("etcd35", sha256_file(&root.join(&etcd.server_path)));
    sums.insert(
        "containerd17",
        sha256_file(&super::containerd::containerd_artifact(&root, &scratch)),
    );
    (served, srv, sums)
}

/// [`serve_artifacts`] plus the FAKE kubeadm/kubelet/kubectl (`kube`) and helm (`helm`) and
/// FAKE charts (`(component, version)`), and with `registry` Docker, compose and the registry
/// image ([`serve_registry`]), with the manifest written to `<dir>/artifacts.yaml`.
/// Returns the server, the digests and the fakes' digests.
pub fn serve_cluster(
    dir: &Path,
    kube: &str,
    helm: &str,
    charts: &[(&str, &str)],
    registry: bool,
) -> (HttpServer, BTreeMap<&'static str, String>, FakeArtifacts) {
    let (_, srv, sums) = serve_artifacts(dir);
    let (root, scratch) = (dir.join("srv"), dir.join("scratch"));
    let mut fa = serve_kube(&root, &scratch, kube, helm);
    for (component, version) in charts {
        serve_chart(&mut fa, &root, component, version);
    }
    let mut extra = fa.manifest_extra.clone();
    if registry {
        extra = serve_registry(&root, &scratch) + &extra;
    }
    let path = dir.join("artifacts.yaml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, manifest(&srv.url("cn/"), &sums, &extra)).unwrap();
    (srv, sums, fa)
}

/// Serves the image registry's artifacts under `root/cn/` — Docker, docker-compose and the
/// `registry` image (docker.rs builds them from Debian packages) — and returns their
/// manifest entries (with their digests).
pub fn serve_registry(root: &Path, scratch: &Path) -> String {
    let docker = root.join(format!("cn/docker/{v}/docker-{v}.tgz", v = DOCKER_VERSION));
    docker_tgz(&docker, scratch);
    let compose = root.join(format!("cn/compose/{}/docker-compose", COMPOSE_VERSION));
    copy_exec(&compose_bin(), &compose);
    let registry = root.join(format!(
        "cn/registry/{v}/docker-registry-{v}-linux-amd64.tgz",
        v = REGISTRY_VERSION
    ));
    registry_image_tgz(&registry, scratch, REGISTRY_VERSION);
    format!(
        r#"  docker:
    url: "docker/{{version}}/docker-{{version}}.tgz"
    dest: "docker/{{version}}/{{arch}}/docker-{{version}}.tgz"
    sha256:
      "{dv}": {{amd64: "{docker}"}}
  docker_compose:
    url: "compose/{{version}}/docker-compose"
    dest: "image-registry/docker-compose/{{version}}/{{arch}}/docker-compose"
    sha256:
      "{cv}": {{amd64: "{compose}"}}
  docker_registry:
    url: "registry/{{version}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    dest: "image-registry/docker-registry/{{version}}/{{arch}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    sha256:
      "{rv}": {{amd64: "{registry}"}}
"#,
        dv = DOCKER_VERSION,
        docker = sha256_file(&docker),
        cv = COMPOSE_VERSION,
        compose = sha256_file(&compose),
        rv = REGISTRY_VERSION,
        registry = sha256_file(&registry),
    )
}
