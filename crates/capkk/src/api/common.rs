//! Types shared by the CAPKK kinds: SSH auth, roles, the pieces of the Cluster API
//! contract (endpoint, conditions, addresses) and the machine's software settings.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Label on KKMachines and KKInstances naming the KKCluster they belong to.
pub const KKCLUSTER_LABEL: &str = "kkcluster.infrastructure.cluster.x-k8s.io/cluster-name";
/// Label Cluster API puts on every object of a cluster (the Cluster's name).
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// What a machine is in the cluster; an instance serves the machines whose roles it has.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
pub enum Role {
    /// Runs the API server, etcd and the other control-plane components.
    #[serde(rename = "control-plane")]
    ControlPlane,
    /// The older name of `control-plane`, accepted as KubeKey does.
    #[serde(rename = "master")]
    Master,
    /// Runs workloads.
    #[serde(rename = "worker")]
    Worker,
}

/// SSH authentication of a node; a node's own fields override the cluster-wide ones.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Auth {
    /// The login user.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The login password (prefer `secret`: a password here is readable by anyone who
    /// can read the object).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub password: String,
    /// The SSH port (22 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "port_schema")]
    pub port: Option<u16>,
    /// A private key, PEM text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub private_key: String,
    /// A private key file on the controller's filesystem.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub private_key_path: String,
    /// A Secret in the controller's namespace whose `password` / `privateKey` keys fill
    /// the fields left empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub secret: String,
    /// Connection timeout, a Go duration string such as `30s` (KubeKey's format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// A port's schema: schemars would say `format: uint16`, a format Kubernetes does not know
/// (API servers warn about it); `int32` from 1 to 65535 is what the API server checks.
fn port_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": 65535,
        "nullable": true
    })
}

/// Where the control plane's API server answers (Cluster API's `APIEndpoint`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEndpoint {
    /// Host name or address.
    #[serde(default)]
    pub host: String,
    /// Port (6443 by convention).
    #[serde(default)]
    pub port: i32,
}

impl ApiEndpoint {
    /// Whether both host and port are set (Cluster API's `IsValid`).
    pub fn is_valid(&self) -> bool {
        !self.host.is_empty() && self.port != 0
    }
}

/// One observed condition, Cluster API's v1beta1 `Condition` (type, status, severity,
/// reason, message, last transition).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// What the condition is about, e.g. `Ready`, `BootstrapSucceeded`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// `Error`, `Warning` or `Info` when the status is `False`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub severity: String,
    /// When the status last changed, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// One CamelCase word saying why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A machine's address as Cluster API reports it (`status.addresses`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineAddress {
    /// `InternalIP`, `ExternalIP`, `Hostname`, …
    #[serde(rename = "type")]
    pub type_: String,
    /// The address itself.
    pub address: String,
}

/// A reference to another object (the Node of a KKInstance).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// Its kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its namespace (empty for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Its UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Its apiVersion.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
}

/// The container runtime a machine gets.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerManager {
    /// The CRI socket of a runtime already installed (kk then installs none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cri_socket: String,
    /// `containerd` or `docker`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The runtime's version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// crictl's version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub crictl_version: String,
    /// cri-dockerd's version (docker only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cri_dockerd_version: String,
}

/// The operating system packages a machine gets, and from where.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    /// `""`: install no packages; `none`: the machine's own repositories; `auto`: the
    /// offline repository (ISO or directory) of the machine's OS release; any other value:
    /// that ISO, image or repository directory under the controller's `repository/`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub iso: String,
    /// Refresh the package lists first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub update: bool,
    /// Packages to install besides the ones Kubernetes needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
}
