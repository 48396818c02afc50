//! Everything that installs CAPKK in a management cluster, as `kk-capkk manifests` prints
//! it: the generated CRDs, then the committed RBAC and Deployment under `config/`, in the
//! order the kustomizations list them (`kubectl apply -k crates/capkk/config` builds the
//! same objects). Embedded so the binary alone can install itself.

use super::crd::crds_yaml;

/// The image the committed Deployment names; `manifests(Some(image))` replaces it.
pub const DEFAULT_IMAGE: &str = "localhost/kk-capkk:latest";
/// The namespace the manager runs in.
pub const NAMESPACE: &str = "capkk-system";

/// The files of `config/` besides the CRDs, `(path under config/, text)`: the Namespace
/// first (objects in it cannot be created before it), the others after the CRDs.
pub const FILES: &[(&str, &str)] = &[
    (
        "manager/namespace.yaml",
        include_str!("../../config/manager/namespace.yaml"),
    ),
    (
        "rbac/service_account.yaml",
        include_str!("../../config/rbac/service_account.yaml"),
    ),
    (
        "rbac/role.yaml",
        include_str!("../../config/rbac/role.yaml"),
    ),
    (
        "rbac/role_binding.yaml",
        include_str!("../../config/rbac/role_binding.yaml"),
    ),
    (
        "rbac/leader_election_role.yaml",
        include_str!("../../config/rbac/leader_election_role.yaml"),
    ),
    (
        "rbac/leader_election_role_binding.yaml",
        include_str!("../../config/rbac/leader_election_role_binding.yaml"),
    ),
    (
        "manager/manager.yaml",
        include_str!("../../config/manager/manager.yaml"),
    ),
];

/// The Namespace, the CRDs and the other `FILES` as one YAML stream in an order
/// `kubectl apply -f -` can create them in, with the manager's image replaced by `image`
/// when given.
pub fn manifests(image: Option<&str>) -> String {
    let mut out = String::new();
    for (i, (_, text)) in FILES.iter().enumerate() {
        if i == 1 {
            out.push_str(&crds_yaml());
        }
        out.push_str("---\n");
        let text = match image {
            Some(img) => text.replace(
                &format!("image: {}", DEFAULT_IMAGE),
                &format!("image: {}", img),
            ),
            None => text.to_string(),
        };
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
#[path = "manifests_tests.rs"]
mod tests;
