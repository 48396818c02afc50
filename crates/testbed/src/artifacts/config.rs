//! The parts of an end-to-end cluster config (under `spec:`) that match what serve.rs
//! serves and what the test hosts can do: the downloads and OS init, etcd and containerd.

use std::collections::BTreeMap;
use std::path::Path;

use super::fakes::FakeArtifacts;

/// The end of an end-to-end config (under `spec:`): downloads from the artifact server
/// (runc under /mirror/ of `mirror`; the digests of etcd 3.5, containerd 1.7 and the FAKE tools
/// and charts, which the manifest has no entry for), and the OS init the test hosts need (they
/// share this machine's kernel: no kernel-global sysctls, no time sync; swap off only when the
/// machine has none).
pub fn config_downloads_and_native(
    manifest: &Path,
    mirror: &str,
    sums: &BTreeMap<&str, String>,
    fa: &FakeArtifacts,
) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let fake_sums: String = fa
        .sha256
        .iter()
        .map(|(c, s)| format!("      {}: \"{}\"\n", c, s))
        .collect();
    format!(
        r#"  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{mirror}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      etcd: "{etcd}"
      containerd: "{containerd}"
{fake_sums}  native:
    disable_swap: {swap}
    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]
    ntp:
      enabled: false
"#,
        manifest = manifest.display(),
        mirror = mirror,
        etcd = sums["etcd35"],
        containerd = sums["containerd17"],
        fake_sums = fake_sums,
        swap = swaps.lines().count() <= 1,
    )
}

/// The etcd and runtime part of an end-to-end config (under `spec:`): external etcd and
/// containerd at the versions [`serve_artifacts`](super::serve::serve_artifacts) serves,
/// runc and crictl of the shared tree, containerd's data root on the hosts' tmpfs (its
/// overlayfs snapshotter cannot sit on their overlay root; see tests/cri.rs).
pub fn config_etcd_and_containerd() -> String {
    format!(
        r#"  etcd: {{deployment_type: external, etcd_version: {etcd}}}
  cri:
    container_manager: containerd
    containerd_version: {containerd}
    runc_version: v1.1.5
    crictl_version: v1.34.0
    containerd:
      data_root: /tmp/kk-containerd
"#,
        etcd = super::etcd::ETCD_VERSION,
        containerd = super::containerd::CONTAINERD_VERSION,
    )
}

/// A whole cluster config for the served artifacts, as the lifecycle test and `bench
/// --flow` use it: Kubernetes `kube` behind haproxy, external etcd and containerd
/// ([`config_etcd_and_containerd`]), calico, the local storage class, the docker-registry
/// with `password`, and the downloads and OS init of [`config_downloads_and_native`].
pub fn cluster_config(
    kube: &str,
    password: &str,
    manifest: &Path,
    mirror: &str,
    sums: &BTreeMap<&str, String>,
    fa: &FakeArtifacts,
) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes:
    kube_version: {kube}
    control_plane_endpoint: {{type: haproxy}}
{etcd_cri}    docker_version: "{docker}"
  cni:
    type: calico
    cni_plugins_version: v1.1.1
    calico:
      values:
        installation: {{calicoNetwork: {{bgp: Disabled}}}}
  storage_class:
    local: {{enabled: true}}
    nfs: {{enabled: false}}
  image_registry:
    type: docker-registry
    docker_registry_version: "{registry}"
    dockercompose_version: {compose}
    auth:
      password: "{password}"
{tail}"#,
        etcd_cri = config_etcd_and_containerd(),
        docker = super::docker::DOCKER_VERSION,
        registry = super::docker::REGISTRY_VERSION,
        compose = super::docker::COMPOSE_VERSION,
        tail = config_downloads_and_native(manifest, mirror, sums, fa),
    )
}
