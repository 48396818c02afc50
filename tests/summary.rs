//! The summary at the end of `kk create cluster` (playbooks/install/summary.yaml, role
//! `summary`), on the controller only: `--limit localhost` leaves out the play that probes
//! the nodes, so the nodes' versions are the crafted inventory variables the probes would
//! have set (kubernetes_installed_version, etcd_installed_version, summary_cri_version).
//! No test hosts: the nodes are never contacted.

use crate::common;

use common::Project;

fn playbook() -> String {
    format!(
        "{}/playbooks/install/summary.yaml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Runs the summary and returns its lines.
fn summary(p: &Project, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--limit", "localhost"];
    args.extend_from_slice(extra);
    let r = p.kk_flow(&["run", &playbook()], &args);
    r.code(0);
    r.msg("Summary | What was installed where", "localhost")
        .as_array()
        .unwrap_or_else(|| panic!("no summary lines\n{}", r.describe()))
        .iter()
        .map(|l| l.as_str().unwrap_or_default().to_string())
        .collect()
}

const INVENTORY: &str = r#"apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
spec:
  hosts:
    cp1: {internal_ipv4: 10.0.0.11, kubernetes_installed_version: v1.30.8, summary_cri_version: 1.7.24, etcd_installed_version: v3.5.16}
    cp2: {internal_ipv4: 10.0.0.12, kubernetes_installed_version: v1.30.8, summary_cri_version: 1.7.24, etcd_installed_version: v3.5.16}
    w1: {internal_ipv4: 10.0.0.21, internal_ipv6: "fd00::21", kubernetes_installed_version: v1.30.8, summary_cri_version: 1.7.24}
    cp3: {internal_ipv4: 10.0.0.13, kubernetes_installed_version: v1.30.8, summary_cri_version: 1.7.24, etcd_installed_version: v3.5.16}
    reg: {internal_ipv4: 10.0.0.31}
    other: {internal_ipv4: 10.0.0.99}
  groups:
    k8s_cluster:
      groups: [kube_control_plane, kube_worker]
    kube_control_plane:
      hosts: [cp1, cp2, cp3]
    kube_worker:
      hosts: [w1]
    etcd:
      hosts: [cp1, cp2, cp3]
    image_registry:
      hosts: [reg]
    nfs:
      hosts: [reg]
"#;

#[test]
fn summary_says_what_was_installed_where() {
    let p = Project::new();
    p.file("inventory.yaml", INVENTORY).file(
        "config.yaml",
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes:
    kube_version: v1.30.8
    control_plane_endpoint: {host: lb.kk-summary.invalid, type: kube-vip, kube_vip: {address: 10.0.0.100}}
  cni: {type: cilium, cilium_version: 1.16.3, multi_cni: multus, multus_version: v4.2.0}
  image_registry: {type: docker-registry}
  addons:
    - {name: my-app, namespace: apps}
    - {name: dashboard}
  addons_builtin: {node_feature_discovery: {enabled: true}}
  storage_class: {nfs: {enabled: true, server: reg, path: /srv/nfs}}
"#,
    );
    let lines = summary(&p, &[]);
    let kubeconfig = format!(
        "{}/kubeconfig",
        p.dir().canonicalize().unwrap().join("wd").display()
    );
    let want = vec![
        "Cluster installed by kk".to_string(),
        "Kubernetes: v1.30.8 on 4 nodes (3 control plane, 1 worker); kubeadm init on cp1".into(),
        "Control plane endpoint: https://lb.kk-summary.invalid:6443 (kube_vip: kube-vip announces 10.0.0.100 from the control plane nodes)".into(),
        "etcd: external v3.5.16, members: cp1 https://10.0.0.11:2379, cp2 https://10.0.0.12:2379, cp3 https://10.0.0.13:2379".into(),
        "Container runtime: containerd 1.7.24".into(),
        "Network: cilium 1.16.3, multi-CNI multus v4.2.0; pods 10.233.64.0/18, services 10.233.0.0/18".into(),
        "DNS: CoreDNS 10.233.0.3 (domain cluster.local), NodeLocalDNS 169.254.25.10".into(),
        "Storage classes: openebs-hostpath (OpenEBS local PV under /var/openebs/local, default), nfs-client (NFS 10.0.0.31:/srv/nfs)".into(),
        "Add-ons: node_feature_discovery 0.17.3 (namespace node-feature-discovery), my-app (namespace apps), dashboard (namespace default)".into(),
        "Image registry: docker-registry on reg (10.0.0.31)".into(),
        "Nodes:".into(),
        "  cp1 10.0.0.11 [control-plane, etcd] kubelet v1.30.8, containerd 1.7.24, etcd v3.5.16".into(),
        "  cp2 10.0.0.12 [control-plane, etcd] kubelet v1.30.8, containerd 1.7.24, etcd v3.5.16".into(),
        "  w1 10.0.0.21, fd00::21 [worker] kubelet v1.30.8, containerd 1.7.24".into(),
        "  cp3 10.0.0.13 [control-plane, etcd] kubelet v1.30.8, containerd 1.7.24, etcd v3.5.16".into(),
        "  reg 10.0.0.31 [registry, nfs]".into(),
        format!("Kubeconfig: {kubeconfig} (not written yet: the kubernetes part did not run)"),
        format!("  export KUBECONFIG={kubeconfig}; kubectl get nodes"),
        "  lb.kk-summary.invalid does not resolve on this machine: first add \"10.0.0.100 lb.kk-summary.invalid\" to /etc/hosts (the kube-vip address)".into(),
    ];
    assert_eq!(lines, want);
    // Deterministic: the same lines again.
    assert_eq!(summary(&p, &[]), want);
}

#[test]
fn summary_of_a_fresh_cluster_with_a_local_endpoint() {
    let p = Project::new();
    // No probes' results yet (as under --check on fresh hosts): the configured versions.
    p.file(
        "inventory.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nspec:\n  hosts:\n    solo: {internal_ipv4: 10.0.0.5}\n  groups:\n    k8s_cluster:\n      groups: [kube_control_plane]\n    kube_control_plane:\n      hosts: [solo]\n",
    )
    .file(
        "config.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  kubernetes:\n    kube_version: v1.34.3\n    control_plane_endpoint: {host: localhost}\n  etcd: {deployment_type: internal}\n  cri: {container_manager: containerd, containerd_version: v1.7.24}\n  cni: {type: none}\n  storage_class: {local: {enabled: false}}\n",
    )
    .file("wd/kubeconfig", "apiVersion: v1\nkind: Config\n");
    let kubeconfig = format!(
        "{}/kubeconfig",
        p.dir().canonicalize().unwrap().join("wd").display()
    );
    let lines = summary(&p, &[]);
    let want = vec![
        "Cluster installed by kk".to_string(),
        "Kubernetes: v1.34.3 (configured; not installed yet) on 1 node (1 control plane, 0 workers; control planes are schedulable, no workers); kubeadm init on solo".into(),
        "Control plane endpoint: https://localhost:6443 (local: /etc/hosts points control plane nodes at themselves and workers at solo 10.0.0.5)".into(),
        "etcd: internal (kubeadm runs it on the control plane nodes: solo)".into(),
        "Container runtime: containerd v1.7.24 (configured; not installed yet)".into(),
        "Network: no CNI plugin (cni.type none); pods 10.233.64.0/18, services 10.233.0.0/18".into(),
        "DNS: CoreDNS 10.233.0.3 (domain cluster.local), NodeLocalDNS 169.254.25.10".into(),
        "Storage classes: none".into(),
        "Add-ons: none".into(),
        "Image registry: none installed".into(),
        "Nodes:".into(),
        "  solo 10.0.0.5 [control-plane] kubelet not installed, containerd not installed".into(),
        format!("Kubeconfig: {kubeconfig}"),
        format!("  export KUBECONFIG={kubeconfig}; kubectl get nodes"),
    ];
    assert_eq!(lines, want);
}
