//! `KKCluster`: the machines a cluster may use (their SSH access and roles), its control
//! plane endpoint and load balancer, where components are downloaded from, and the image
//! registry. Cluster API's infrastructure-cluster contract: `spec.controlPlaneEndpoint`,
//! `status.ready`, `status.failureDomains`.

use super::common::{ApiEndpoint, Auth, Condition, Role};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Finalizer the KKCluster controller keeps until the cluster's instances are released.
pub const KKCLUSTER_FINALIZER: &str = "kkcluster.infrastructure.cluster.x-k8s.io";

/// The desired state of a KKCluster.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "KKCluster",
    plural = "kkclusters",
    namespaced,
    status = "KKClusterStatus",
    shortname = "kkc",
    category = "cluster-api",
    doc = "KKCluster: the machines reachable over SSH a Cluster API cluster may use, its control plane endpoint and load balancer, component downloads and image registry.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']","description":"Cluster to which this KKCluster belongs"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.ready","description":"Cluster infrastructure is ready"}"#,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.controlPlaneEndpoint.host","description":"API endpoint"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KKClusterSpec {
    /// `kubernetes` (the default) or `k3s`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub distribution: String,
    /// The machines the cluster may use.
    pub nodes: Nodes,
    /// Where the API server answers; set by the controller from the load balancer when empty.
    #[serde(default)]
    pub control_plane_endpoint: ApiEndpoint,
    /// The kube-vip address in front of the control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_load_balancer: Option<KKLoadBalancerSpec>,
    /// Where component binaries are downloaded from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
    /// The image registry the machines pull from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<Registry>,
}

/// The machines of a cluster: a default SSH auth and the instances.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Nodes {
    /// SSH auth for every instance that does not set its own.
    #[serde(default)]
    pub auth: Auth,
    /// The machines.
    pub instances: Vec<InstanceInfo>,
}

/// One machine a KKMachine may be given.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceInfo {
    /// The machine's host name (also the KKInstance's name).
    #[schemars(length(min = 1))]
    pub name: String,
    /// The address kk connects to.
    pub address: String,
    /// The address the cluster uses between nodes (the `address` when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub internal_address: String,
    /// What the machine may be; defaults to control-plane and worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<Role>,
    /// `amd64` (the default) or `arm64`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arch: String,
    /// This machine's SSH auth, over the cluster-wide one.
    #[serde(default)]
    pub auth: Auth,
}

/// The control plane's load balancer (kube-vip on the control-plane machines).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KKLoadBalancerSpec {
    /// A free address in the machines' subnet that kube-vip holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
}

/// Where component binaries come from: a zone's mirror, a file server, per-file overrides.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// `cn` picks the mirrors in China; empty: the upstream URLs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,
    /// A file server holding every binary under the upstream paths.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// Per-binary URL, path and checksum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Override>,
}

/// One binary's download, replacing the default.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    /// Which component: `kubeadm`, `kubelet`, `containerd`, …
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Its architecture.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arch: String,
    /// Its version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// A full URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// A path on `component.host`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The file's sha256.
    #[serde(default)]
    pub checksum: Checksum,
}

/// A download's expected sha256: the value, or where to read it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checksum {
    /// 64 hex digits.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{64}$"))]
    pub value: String,
    /// A path on `component.host` holding the checksum.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

/// The image registry the machines' runtime pulls from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Registry {
    /// host[:port] of the private registry.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub private_registry: String,
    /// Registries reached without TLS verification.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub insecure_registries: Vec<String>,
    /// Mirrors of the public registries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registry_mirrors: Vec<String>,
    /// Replaces the namespace of every image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace_override: String,
    /// How to log in to it.
    #[serde(default)]
    pub auth: RegistryAuth,
}

/// Login and TLS settings of the private registry.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryAuth {
    /// User name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// Password.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub password: String,
    /// Skip TLS verification.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
    /// Plain HTTP.
    #[serde(
        default,
        rename = "plainHTTP",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub plain_http: bool,
    /// Directory of the registry's certificates.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub certs_path: String,
    /// CA file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    /// Client certificate.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    /// Client key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_file: String,
}

/// What the controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KKClusterStatus {
    /// The infrastructure is ready: the control plane endpoint is set (Cluster API waits
    /// for this before creating machines).
    #[serde(default)]
    pub ready: bool,
    /// Failure domains machines may be spread over (none for plain SSH machines; kept for
    /// the contract).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_domains: BTreeMap<String, FailureDomain>,
    /// A terminal problem that needs a person, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The same, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Conditions (`Ready`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Cluster API's `FailureDomainSpec`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomain {
    /// Whether control-plane machines may go there.
    #[serde(default)]
    pub control_plane: bool,
    /// Free-form attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}
