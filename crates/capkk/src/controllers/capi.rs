//! The few fields of Cluster API's own kinds (`cluster.x-k8s.io/v1beta1` Cluster and
//! Machine) the controllers read. Only reading: unknown fields are ignored, and these
//! types are never written back, so nothing of Cluster API's objects is lost.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// Cluster API's API group.
pub const GROUP: &str = "cluster.x-k8s.io";
/// The annotation that pauses reconciliation of one object.
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

/// What CAPKK reads of a Cluster's spec.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta1",
    kind = "Cluster",
    plural = "clusters",
    namespaced,
    status = "ClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Stops reconciliation of the whole cluster.
    #[serde(default)]
    pub paused: bool,
    /// The infrastructure cluster (our KKCluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<Reference>,
}

/// What CAPKK reads of a Cluster's status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Cluster API copied the KKCluster's `status.ready`.
    #[serde(default)]
    pub infrastructure_ready: bool,
}

/// A reference to another object (Cluster API's `corev1.ObjectReference` subset).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// Its kind.
    #[serde(default)]
    pub kind: String,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its apiVersion.
    #[serde(default)]
    pub api_version: String,
}

/// What CAPKK reads of a Machine's spec.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta1",
    kind = "Machine",
    plural = "machines",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// The Cluster's name.
    #[serde(default)]
    pub cluster_name: String,
    /// The bootstrap provider's output.
    #[serde(default)]
    pub bootstrap: Bootstrap,
    /// The Kubernetes version (`v1.33.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The infrastructure machine (our KKMachine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<Reference>,
}

/// A Machine's bootstrap: the Secret holding its bootstrap data, once the bootstrap
/// provider has written it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// The Secret's name (keys `value` and `format`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_name: Option<String>,
}

/// The name of the owner of `kind` in Cluster API's group, from the ownerReferences.
pub fn owner_name(meta: &kube::api::ObjectMeta, group: &str, kind: &str) -> Option<String> {
    meta.owner_references.as_ref()?.iter().find_map(|o| {
        let g = o.api_version.split('/').next().unwrap_or("");
        (o.kind == kind && g == group).then(|| o.name.clone())
    })
}

/// The object of `kind` a Cluster API object's `infrastructureRef` names, in its
/// namespace: how a change of a Cluster or Machine wakes the KKCluster or KKMachine up.
pub fn infrastructure_object<K>(
    meta: &kube::api::ObjectMeta,
    reference: Option<&Reference>,
    kind: &str,
) -> Option<kube::runtime::reflector::ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()>,
{
    let r = reference.filter(|r| r.kind == kind && !r.name.is_empty())?;
    Some(kube::runtime::reflector::ObjectRef::new(&r.name).within(meta.namespace.as_deref()?))
}
