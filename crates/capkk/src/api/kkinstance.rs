//! `KKInstance`: one machine reached over SSH and what has been done to it. KKMachine deals
//! with Cluster API; KKInstance drives the machine through its phases (bootstrap,
//! repository, binaries, container runtime, provisioning; reset on delete), each a bundled
//! playbook run by kk's engine.

use super::common::{Auth, Condition, ContainerManager, ObjectReference, Repository, Role};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Finalizer the KKInstance controller keeps until the machine is reset.
pub const KKINSTANCE_FINALIZER: &str = "kkinstance.infrastructure.cluster.x-k8s.io";

/// The desired state of a KKInstance: the machine and what it runs.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "KKInstance",
    plural = "kkinstances",
    namespaced,
    status = "KKInstanceStatus",
    shortname = "kki",
    category = "cluster-api",
    doc = "KKInstance: one machine reached over SSH and the phases run on it (bootstrap, repository, binaries, container runtime, provisioning; reset on delete).",
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.instanceState","description":"State of the instance"}"#,
    printcolumn = r#"{"name":"Address","type":"string","jsonPath":".spec.address","description":"The address kk connects to"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KKInstanceSpec {
    /// The machine's host name.
    pub name: String,
    /// The address kk connects to.
    pub address: String,
    /// The address between nodes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub internal_address: String,
    /// Its roles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<Role>,
    /// Its architecture.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arch: String,
    /// SSH auth (the cluster's, merged with the node's own).
    #[serde(default)]
    pub auth: Auth,
    /// The container runtime to install.
    #[serde(default)]
    pub container_manager: ContainerManager,
    /// The packages to install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
}

/// Where the machine is in its life.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum InstanceState {
    /// Created, not yet worked on.
    #[serde(rename = "pending")]
    Pending,
    /// Its phases are running.
    #[serde(rename = "bootstrapping")]
    Bootstrapping,
    /// Provisioned: the node runs.
    #[serde(rename = "running")]
    Running,
    /// Being reset after delete.
    #[serde(rename = "cleaning")]
    Cleaning,
    /// Reset: free for another machine.
    #[serde(rename = "cleaned")]
    Cleaned,
}

/// What the controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KKInstanceStatus {
    /// The state.
    #[serde(
        default,
        rename = "instanceState",
        skip_serializing_if = "Option::is_none"
    )]
    pub state: Option<InstanceState>,
    /// The Node this machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<ObjectReference>,
    /// A terminal problem that needs a person, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The same, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// One condition per phase (`InstanceBootstrapped`, `InstanceRepositoryReady`,
    /// `InstanceBinariesReady`, `InstanceCRIReady`, `InstanceProvisioned`) and `Ready`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
