//! A local mirror of the upstream download sites, for the offline tests: every file the
//! default config of a Kubernetes minor selects (the URLs of kk's builtin/artifacts.yaml, the
//! versions of roles/defaults/vars/<minor>.yaml), at `<root>/<host>/<path>` of its upstream
//! URL — the layout kk's `zone: http://<mirror>/` reads.
//!
//! The bytes are real where Debian packages the software — etcd 3.5.16 and containerd 1.7.24
//! (trixie), runc 1.1.5 and the CNI plugins (bookworm), Docker and docker-compose (trixie), the
//! `registry` image (bookworm's docker-registry) — and FAKE where no registry here carries it
//! (kubeadm, kubelet, kubectl, helm, calicoctl: tests/fakes; crictl: a stand-in script; the
//! charts: fakes.rs). Each is served under the minor's default version's name,
//! so its bytes differ from upstream's: [`build`] returns their sha256 for the config's
//! `download.sha256`.

use std::collections::BTreeMap;
use std::path::Path;

use super::debian::{cni_plugins_tgz, debian_file};
use super::files::{copy_exec, fake, sha256_file, tar_gz};
use super::{load_yaml, repo};

/// The components the default config selects, with the image registry's when `registry`.
const CLUSTER: [&str; 12] = [
    "etcd",
    "kubelet",
    "kubeadm",
    "kubectl",
    "cni_plugins",
    "helm",
    "crictl",
    "containerd",
    "runc",
    "calicoctl",
    "calico",
    "localpv_provisioner",
];
const REGISTRY: [&str; 3] = ["docker", "docker_compose", "docker_registry"];

/// A string at `path` (dot-separated) of a YAML document.
fn at<'a>(doc: &'a serde_json::Value, path: &str) -> &'a str {
    path.split('.')
        .fold(doc, |v, k| &v[k])
        .as_str()
        .unwrap_or_else(|| panic!("no {} in the minor's defaults", path))
}

/// The version a component takes in `minor`'s defaults (`vars`).
fn version(vars: &serde_json::Value, component: &str) -> String {
    let path = match component {
        "kubelet" | "kubeadm" | "kubectl" => "default_kube_version",
        "helm" => "kubernetes.helm_version",
        "etcd" => "etcd.etcd_version",
        "cni_plugins" => "cni.cni_plugins_version",
        "calico" | "calicoctl" => "cni.calico_version",
        "localpv_provisioner" => "storage_class.localpv_provisioner_version",
        "docker_compose" => "image_registry.dockercompose_version",
        "docker_registry" => "image_registry.docker_registry_version",
        other => return at(vars, &format!("cri.{}_version", other)).to_string(),
    };
    at(vars, path).to_string()
}

/// Writes the file of `component` at `version` to `out`.
fn artifact(component: &str, version: &str, out: &Path, scratch: &Path) {
    let scratch = scratch.join(format!("{}-{}", component, version));
    match component {
        "etcd" => super::etcd::etcd_tgz(out, &scratch, version),
        "kubelet" | "kubeadm" | "kubectl" | "calicoctl" => {
            super::fakes::fake_tool(version, out);
        }
        "helm" => super::fakes::helm_tarball(version, out, &scratch),
        "crictl" => {
            fake(&scratch.join("crictl"), "crictl");
            tar_gz(out, &scratch, &["crictl"]);
        }
        "containerd" => {
            let built = super::containerd::containerd_artifact(&scratch, &scratch.join("build"));
            copy_exec(&built, out);
        }
        "runc" => copy_exec(&debian_file("runc", "/sbin/runc"), out),
        "cni_plugins" => cni_plugins_tgz(out),
        "calico" => super::fakes::fake_chart("tigera-operator", version, out),
        "localpv_provisioner" => super::fakes::fake_chart("localpv-provisioner", version, out),
        "docker" => super::docker::docker_tgz(out, &scratch),
        "docker_compose" => copy_exec(&super::docker::compose_bin(), out),
        "docker_registry" => super::docker::registry_image_tgz(out, &scratch, version),
        other => panic!("the mirror has no {}", other),
    }
}

/// Serves under `root` every amd64 file the default config of `minor` (e.g. "v1.30")
/// selects, with the image registry's (Docker, compose, the registry image) when
/// `registry`. Returns component → sha256 of what is served, and the versions served.
pub fn build(
    root: &Path,
    scratch: &Path,
    minor: &str,
    registry: bool,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let vars = load_yaml(&repo().join(format!("roles/defaults/vars/{}.yaml", minor)));
    let manifest = load_yaml(&repo().join("builtin/artifacts.yaml"));
    let mut sums = BTreeMap::new();
    let mut versions = BTreeMap::new();
    let extra: &[&str] = if registry { &REGISTRY } else { &[] };
    for component in CLUSTER.iter().chain(extra) {
        let v = version(&vars, component);
        let m = &manifest["components"][component];
        // `url` is upstream's without the scheme; `url_full` has one.
        let pattern = m["url"]
            .as_str()
            .map(str::to_string)
            .or_else(|| {
                m["url_full"]
                    .as_str()
                    .map(|u| u.split_once("://").unwrap().1.to_string())
            })
            .unwrap_or_else(|| panic!("no URL for {} in builtin/artifacts.yaml", component));
        let path = pattern
            .replace("{version_bare}", v.trim_start_matches('v'))
            .replace("{version}", &v)
            .replace("{uname_arch}", "x86_64")
            .replace("{arch}", "amd64");
        let out = root.join(&path);
        artifact(component, &v, &out, scratch);
        sums.insert(component.to_string(), sha256_file(&out));
        versions.insert(component.to_string(), v);
    }
    (sums, versions)
}
