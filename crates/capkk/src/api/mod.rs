//! CAPKK's custom resources (`infrastructure.cluster.x-k8s.io/v1beta1`), the same shapes
//! as KubeKey's CAPKK so its manifests apply unchanged; the CRD YAML is generated from
//! these types (`kk-capkk crds`). There is no admission webhook: the controllers call
//! [`default_kkcluster`] & co. and then [`validate_kkcluster`] & co. on what they read.

mod common;
pub mod crd;
mod defaults;
pub mod formats;
mod kkcluster;
mod kkinstance;
mod kkmachine;
pub mod manifests;
mod validate;
#[cfg(test)]
mod validate_tests;

pub use common::*;
pub use defaults::*;
pub use kkcluster::*;
pub use kkinstance::*;
pub use kkmachine::*;
pub use validate::*;

/// The API group every CAPKK kind belongs to (Cluster API's infrastructure group).
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The one version served.
pub const VERSION: &str = "v1beta1";
