//! `KKMachine` (one Cluster API Machine's infrastructure: which instance it got, its
//! provider ID) and `KKMachineTemplate` (what KubeadmControlPlane and MachineDeployment
//! copy KKMachines from). Cluster API's infrastructure-machine contract:
//! `spec.providerID`, `status.ready`, `status.addresses`, failure fields.

use super::common::{Condition, ContainerManager, MachineAddress, Repository, Role};
use super::kkinstance::InstanceState;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Finalizer the KKMachine controller keeps until its instance is released.
pub const KKMACHINE_FINALIZER: &str = "kkmachine.infrastructure.cluster.x-k8s.io";

/// The desired state of a KKMachine.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "KKMachine",
    plural = "kkmachines",
    namespaced,
    status = "KKMachineStatus",
    shortname = "kkm",
    category = "cluster-api",
    doc = "KKMachine: the infrastructure of one Cluster API Machine: the KKInstance it got and its provider ID.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']","description":"Cluster to which this KKMachine belongs"}"#,
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".status.instanceState","description":"State of the instance"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.ready","description":"Machine ready status"}"#,
    printcolumn = r#"{"name":"InstanceID","type":"string","jsonPath":".spec.instanceID","description":"The KKInstance this machine got"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KKMachineSpec {
    /// `kk://<namespace>/<instance name>`, set once the node is up; Cluster API matches it
    /// with the Node's `spec.providerID`.
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    /// The KKInstance this machine got.
    #[serde(
        default,
        rename = "instanceID",
        skip_serializing_if = "Option::is_none"
    )]
    pub instance_id: Option<String>,
    /// The roles an instance must have to be picked.
    #[serde(default)]
    pub roles: Vec<Role>,
    /// The container runtime to install.
    #[serde(default)]
    pub container_manager: ContainerManager,
    /// The packages to install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<Repository>,
}

/// What the controller observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KKMachineStatus {
    /// The instance is provisioned and the node runs.
    #[serde(default)]
    pub ready: bool,
    /// The instance's addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// The instance's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<InstanceState>,
    /// A terminal problem that needs a person, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The same, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// Conditions (`InstanceReady`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The desired state of a KKMachineTemplate: the KKMachine spec to copy.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "KKMachineTemplate",
    plural = "kkmachinetemplates",
    namespaced,
    shortname = "kkmt",
    category = "cluster-api",
    doc = "KKMachineTemplate: the KKMachine spec KubeadmControlPlane and MachineDeployment copy for each new machine."
)]
#[serde(rename_all = "camelCase")]
pub struct KKMachineTemplateSpec {
    /// The KKMachine every copy starts from.
    pub template: KKMachineTemplateResource,
}

/// A template's object: the spec a new KKMachine gets.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KKMachineTemplateResource {
    /// The KKMachine spec.
    pub spec: KKMachineSpec,
}
