//! CAPKK's custom resources (`infrastructure.cluster.x-k8s.io/v1beta1`), the same shapes
//! as KubeKey's CAPKK so its manifests apply unchanged; the CRD YAML is generated from
//! these types (`kk-capkk crds`).

mod common;
mod kkcluster;
mod kkinstance;
mod kkmachine;

pub use common::*;
pub use kkcluster::*;
pub use kkinstance::*;
pub use kkmachine::*;

/// The API group every CAPKK kind belongs to (Cluster API's infrastructure group).
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The one version served.
pub const VERSION: &str = "v1beta1";
