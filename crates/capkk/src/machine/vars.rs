//! A [`Job`] as the variables the phase playbooks and the shared roles read: the same
//! names a `kk create cluster` Config gives them (`kubernetes.kube_version`, `cri.*`,
//! `zone`, `download.artifact_url` / `download.sha256`, …), so the roles need no CAPKK
//! special case, plus a few `capkk_*` variables only the phase playbooks read.

use serde_json::{json, Map, Value};

use super::{Job, MachineError, Phase};
use crate::api::{Component, Override};

/// The Kubernetes version used for the version matrix when a Job names none (the phases
/// before `Binary` only read OS settings from it).
pub const FALLBACK_KUBE_VERSION: &str = "v1.33.0";

/// The download role's component names, and the names CAPKK's overrides may use for them.
const COMPONENTS: &[(&str, &[&str])] = &[
    ("kubeadm", &["kubeadm"]),
    ("kubelet", &["kubelet"]),
    ("kubectl", &["kubectl"]),
    (
        "cni_plugins",
        &["cni_plugins", "kubecni", "cni", "cni-plugins"],
    ),
    ("crictl", &["crictl"]),
    ("containerd", &["containerd"]),
    ("runc", &["runc"]),
    ("docker", &["docker"]),
    ("cridockerd", &["cridockerd", "cri-dockerd"]),
    ("etcd", &["etcd"]),
    ("helm", &["helm"]),
];

/// Where an override's `version` goes: the Config key that pins the component's version
/// (the Kubernetes binaries follow the Machine's version instead).
fn version_key(component: &str) -> Option<(&'static str, &'static str)> {
    Some(match component {
        "cni_plugins" => ("cni", "cni_plugins_version"),
        "crictl" => ("cri", "crictl_version"),
        "containerd" => ("cri", "containerd_version"),
        "runc" => ("cri", "runc_version"),
        "docker" => ("cri", "docker_version"),
        "cridockerd" => ("cri", "cridockerd_version"),
        "etcd" => ("etcd", "etcd_version"),
        "helm" => ("kubernetes", "helm_version"),
        _ => return None,
    })
}

/// A bad Job: nothing on the machine can fix it, so it is not retried.
fn bad(message: String) -> MachineError {
    MachineError {
        message,
        retryable: false,
    }
}

/// Sets `map[a][b] = v`, creating `map[a]`.
fn put(map: &mut Map<String, Value>, a: &str, b: &str, v: Value) {
    let entry = map
        .entry(a.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = entry {
        m.insert(b.to_string(), v);
    }
}

/// The variables of `phase` for `job` (the Config layer of the run).
pub fn config(phase: Phase, job: &Job) -> Result<Map<String, Value>, MachineError> {
    let mut c = Map::new();
    let kube_version = match job.kubernetes_version.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => format!("v{}", v.trim_start_matches('v')),
        None if phase == Phase::Binary => return Err(bad(
            "the binary phase needs the Machine's Kubernetes version (spec.version), found none"
                .into(),
        )),
        None => FALLBACK_KUBE_VERSION.to_string(),
    };
    put(&mut c, "kubernetes", "kube_version", json!(kube_version));
    // The Kubernetes of Cluster API's kubeadm: etcd is the control plane's stacked one.
    put(&mut c, "etcd", "deployment_type", json!("internal"));

    let cm = &job.instance.container_manager;
    let manager = if cm.type_.is_empty() {
        "containerd"
    } else {
        cm.type_.as_str()
    };
    if !["containerd", "docker"].contains(&manager) {
        return Err(bad(format!(
            "containerManager.type is `{}`; expected containerd or docker",
            manager
        )));
    }
    put(&mut c, "cri", "container_manager", json!(manager));
    if !cm.version.is_empty() {
        let key = if manager == "docker" {
            "docker_version"
        } else {
            "containerd_version"
        };
        put(&mut c, "cri", key, json!(version_of(manager, &cm.version)));
    }
    if !cm.crictl_version.is_empty() {
        put(
            &mut c,
            "cri",
            "crictl_version",
            json!(v_prefixed(&cm.crictl_version)),
        );
    }
    if !cm.cri_dockerd_version.is_empty() {
        put(
            &mut c,
            "cri",
            "cridockerd_version",
            json!(v_prefixed(&cm.cri_dockerd_version)),
        );
    }
    if !cm.cri_socket.is_empty() {
        put(&mut c, "cri", "cri_socket", json!(cm.cri_socket));
    }
    c.insert("capkk_cri_socket".into(), json!(cm.cri_socket));

    let arch = if job.instance.arch.is_empty() {
        "amd64"
    } else {
        job.instance.arch.as_str()
    };
    put(&mut c, "download", "arch", json!([arch]));
    if let Some(component) = &job.cluster.component {
        downloads(&mut c, component, arch, &kube_version)?;
    }
    if let Some(r) = &job.cluster.registry {
        let mut mirrors = r.registry_mirrors.clone();
        if mirrors.is_empty() {
            mirrors.push("https://registry-1.docker.io".into());
        }
        let mut reg = Map::new();
        reg.insert("mirrors".into(), json!(mirrors));
        reg.insert("insecure_registries".into(), json!(r.insecure_registries));
        if !r.private_registry.is_empty() {
            if !r.auth.password.is_empty() {
                kk_engine::vault::redact::remember(&r.auth.password);
            }
            reg.insert(
                "auths".into(),
                json!([{
                    "registry": r.private_registry,
                    "username": r.auth.username,
                    "password": r.auth.password,
                    "skip_tls_verify": r.auth.insecure_skip_verify,
                    "plain_http": r.auth.plain_http,
                    "ca_file": r.auth.ca_file,
                    "cert_file": r.auth.cert_file,
                    "key_file": r.auth.key_file,
                }]),
            );
        }
        put(&mut c, "cri", "registry", Value::Object(reg));
    }

    let repo = job.instance.repository.clone().unwrap_or_default();
    c.insert(
        "capkk_repository".into(),
        json!({"iso": repo.iso, "update": repo.update, "packages": repo.packages}),
    );
    Ok(c)
}

/// A component's version as the roles and the manifest spell it: Docker's bare
/// (`26.1.5`), every other one with a `v` (`v1.7.24`).
fn version_of(component: &str, v: &str) -> String {
    if component == "docker" {
        v.trim_start_matches('v').to_string()
    } else {
        v_prefixed(v)
    }
}

/// `v1.7.24` from `1.7.24` or `v1.7.24`.
fn v_prefixed(v: &str) -> String {
    format!("v{}", v.trim_start_matches('v'))
}

/// component.zone / host / overrides as the download role's `zone`,
/// `download.artifact_url.<c>` and `download.sha256.<c>` (and the versions they pin).
fn downloads(
    c: &mut Map<String, Value>,
    component: &Component,
    arch: &str,
    kube_version: &str,
) -> Result<(), MachineError> {
    let host = component.host.trim_end_matches('/');
    let host = if host.is_empty() || host.contains("://") {
        host.to_string()
    } else {
        format!("https://{}", host)
    };
    if !host.is_empty() {
        // A file server with every file under its upstream path: the role's mirror zone.
        c.insert("zone".into(), json!(format!("{}/", host)));
    } else if !component.zone.is_empty() {
        c.insert("zone".into(), json!(component.zone));
    }
    let mut urls = Map::new();
    let mut sums = Map::new();
    for o in &component.overrides {
        let Some(name) = component_name(&o.id) else {
            let known: Vec<&str> = COMPONENTS
                .iter()
                .flat_map(|(_, a)| a.iter().copied())
                .collect();
            return Err(bad(format!(
                "component.overrides: id `{}` is not a component kk downloads; expected one of {}",
                o.id,
                known.join(", ")
            )));
        };
        if !o.arch.is_empty() && o.arch != arch {
            continue;
        }
        if is_kube(name) && !o.version.is_empty() && v_prefixed(&o.version) != kube_version {
            continue;
        }
        apply_override(c, &mut urls, &mut sums, name, o, &host)?;
    }
    if !urls.is_empty() {
        put(c, "download", "artifact_url", Value::Object(urls));
    }
    if !sums.is_empty() {
        put(c, "download", "sha256", Value::Object(sums));
    }
    Ok(())
}

fn is_kube(name: &str) -> bool {
    matches!(name, "kubeadm" | "kubelet" | "kubectl")
}

/// The download role's name for an override id.
fn component_name(id: &str) -> Option<&'static str> {
    COMPONENTS
        .iter()
        .find(|(_, aliases)| aliases.contains(&id))
        .map(|(name, _)| *name)
}

fn apply_override(
    c: &mut Map<String, Value>,
    urls: &mut Map<String, Value>,
    sums: &mut Map<String, Value>,
    name: &str,
    o: &Override,
    host: &str,
) -> Result<(), MachineError> {
    if !o.version.is_empty() {
        if let Some((area, key)) = version_key(name) {
            put(c, area, key, json!(version_of(name, &o.version)));
        }
    }
    let url = if !o.url.is_empty() {
        o.url.clone()
    } else if !o.path.is_empty() {
        if host.is_empty() {
            return Err(bad(format!(
                "component.overrides `{}`: path `{}` needs component.host (the file server it is on); give the full url instead",
                o.id, o.path
            )));
        }
        format!("{}/{}", host, o.path.trim_start_matches('/'))
    } else {
        String::new()
    };
    if !url.is_empty() {
        urls.insert(name.into(), json!(url));
    }
    let sum = o.checksum.value.trim().to_ascii_lowercase();
    if !sum.is_empty() {
        if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad(format!(
                "component.overrides `{}`: checksum `{}` is not a sha256 (64 hex digits)",
                o.id, o.checksum.value
            )));
        }
        sums.insert(name.into(), json!(sum));
    } else if !o.checksum.path.is_empty() {
        return Err(bad(format!(
            "component.overrides `{}`: checksum.path is not supported (kk verifies against a digest it is given); set checksum.value to the file's sha256",
            o.id
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Checksum, KKClusterSpec};

    fn job_with(overrides: Vec<Override>, host: &str) -> Job {
        Job {
            kubernetes_version: Some("1.33.1".into()),
            cluster: KKClusterSpec {
                component: Some(Component {
                    zone: "cn".into(),
                    host: host.into(),
                    overrides,
                }),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn overrides_become_urls_digests_and_versions() {
        let sum = "a".repeat(64);
        let job = job_with(
            vec![
                Override {
                    id: "kubecni".into(),
                    version: "1.1.1".into(),
                    path: "/cni.tgz".into(),
                    checksum: Checksum {
                        value: sum.to_uppercase(),
                        path: String::new(),
                    },
                    ..Default::default()
                },
                Override {
                    id: "kubeadm".into(),
                    version: "v1.20.0".into(),
                    url: "http://elsewhere/kubeadm".into(),
                    ..Default::default()
                },
            ],
            "files.local:8080",
        );
        let c = config(Phase::Binary, &job).unwrap();
        assert_eq!(c["kubernetes"]["kube_version"], "v1.33.1");
        assert_eq!(c["zone"], "https://files.local:8080/");
        assert_eq!(
            c["download"]["artifact_url"]["cni_plugins"],
            "https://files.local:8080/cni.tgz"
        );
        assert_eq!(c["download"]["sha256"]["cni_plugins"], sum.as_str());
        assert_eq!(c["cni"]["cni_plugins_version"], "v1.1.1");
        // An override of another Kubernetes version does not apply.
        assert!(c["download"]["artifact_url"].get("kubeadm").is_none());
    }

    #[test]
    fn bad_overrides_are_refused_without_retry() {
        for (o, want) in [
            (
                Override {
                    id: "kubelett".into(),
                    ..Default::default()
                },
                "kubelett",
            ),
            (
                Override {
                    id: "runc".into(),
                    checksum: Checksum {
                        value: "abc".into(),
                        path: String::new(),
                    },
                    ..Default::default()
                },
                "not a sha256",
            ),
            (
                Override {
                    id: "runc".into(),
                    path: "runc".into(),
                    ..Default::default()
                },
                "component.host",
            ),
        ] {
            let e = config(Phase::Binary, &job_with(vec![o], "")).unwrap_err();
            assert!(!e.retryable);
            assert!(e.message.contains(want), "{}", e.message);
        }
        let mut job = job_with(vec![], "");
        job.kubernetes_version = None;
        assert!(config(Phase::Binary, &job).is_err());
        assert!(config(Phase::Bootstrap, &job).is_ok());
        job.instance.container_manager.type_ = "podman".into();
        assert!(config(Phase::Bootstrap, &job)
            .unwrap_err()
            .message
            .contains("podman"));
    }
}
