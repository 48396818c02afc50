//! The image lists kk computes for the default configs (roles/download/templates/images.json.j2),
//! written out by hand from the tables they come from, for the tests to compare with.

/// The control plane images of a version, from `repo`, with kube-proxy.
pub fn control_plane(repo: &str, v: &str) -> Vec<String> {
    [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ]
    .iter()
    .map(|n| format!("{}/{}:{}", repo, n, v))
    .collect()
}

/// The images upstream's table lists for a Calico release (windows images left out), with
/// every Calico image on `docker` (kk's installation.registry) and the operator on `quay`.
pub fn calico(docker: &str, quay: &str, version: &str, operator: &str) -> Vec<String> {
    let mut names = vec![
        "ctl",
        "typha",
        "node",
        "cni",
        "csi",
        "apiserver",
        "kube-controllers",
    ];
    // v3.30 and later: the Calico ingress gateway's envoy images (upstream's table).
    if version >= "v3.30" {
        names.extend(["envoy-gateway", "envoy-proxy", "envoy-ratelimit"]);
    }
    names.push("flannel-migration-controller");
    let mut out = vec![format!("{}/tigera/operator:{}", quay, operator)];
    out.extend(
        names
            .iter()
            .map(|n| format!("{}/calico/{}:{}", docker, n, version)),
    );
    // flannel v0.24.4 for the flannel migration, in every release's table.
    out.push(format!("{}/flannel/flannel:v0.24.4", docker));
    let mut tail = vec!["dikastes", "node-driver-registrar", "pod2daemon-flexvol"];
    // v3.30 and later: Goldmane, Whisker and the certificate init container.
    if version >= "v3.30" {
        tail.extend([
            "key-cert-provisioner",
            "goldmane",
            "whisker",
            "whisker-backend",
        ]);
    }
    out.extend(
        tail.iter()
            .map(|n| format!("{}/calico/{}:{}", docker, n, version)),
    );
    out
}

/// OpenEBS local PV 4.4.0's images.
pub fn localpv(docker: &str) -> Vec<String> {
    vec![
        format!("{}/openebs/linux-utils:4.3.0", docker),
        format!("{}/openebs/provisioner-localpv:4.4.0", docker),
    ]
}
