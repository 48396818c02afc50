//! `kk delete nodes` of a calico cluster end to end on two real test hosts: `kk create
//! cluster` (control plane and external etcd on kk-cp1, worker kk-w1; Kubernetes v1.30.8,
//! calico through the Tigera operator chart, containerd), then `kk delete nodes kk-w1`. From
//! kk-cp1 the worker is cordoned and drained, removed from Calico with calicoctl against the
//! Kubernetes datastore (admin.conf), and deleted with kubectl; then uninstalled.
//!
//! calicoctl there releases the node's Calico data and refuses to delete the Calico Node
//! itself (exit 1, "operation Delete is not supported on Node(kk-w1)": in the Kubernetes
//! datastore it is the Kubernetes Node). kk expects exactly that refusal: any other calicoctl
//! failure (here a calicoctl of another version than the cluster's Calico: "Version
//! mismatch") stops the deletion before `kubectl delete node`.
//!
//! What runs for real: kk over SSH, etcd 3.5.16, containerd 1.7.24, every file written and
//! removed. FAKES (tests/fakes): kubeadm, kubelet, kubectl, helm, calicoctl and the charts.

mod common;

use common::cluster::{
    config_downloads_and_native, config_etcd_and_containerd, failures, serve_cluster,
};
use common::fakes::{calls, cluster_state, fake_tool, journal, push};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

const NAMES: [&str; 2] = ["kk-cp1", "kk-w1"];
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
/// roles/defaults/vars/v1.30.yaml's cni.calico_version.
const CALICO: &str = "v3.29.7";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-w1]\n    etcd:\n      hosts: [kk-cp1]\n",
    );
    s
}

/// The calls of the fakes on kk-cp1 about kk-w1: `tool args… -> exit`.
fn about_w1(bed: &TestBed) -> Vec<String> {
    journal(bed, 0)
        .iter()
        .filter(|c| c["args"].to_string().contains("\"kk-w1\""))
        .map(|c| {
            let args: Vec<&str> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "{} {} -> {}",
                c["tool"].as_str().unwrap(),
                args.join(" "),
                c["exit"]
            )
        })
        .collect()
}

fn delete_w1(p: &Project) -> Run {
    p.kk_flow(&["delete", "nodes", "kk-w1", "--yes"], &[])
}

#[test]
fn delete_nodes_removes_the_worker_from_calico_then_from_kubernetes() {
    let bed = TestBed::start(NAMES.len()).expect("boot test hosts");
    let p = Project::new();
    let (srv, sums, fa) = serve_cluster(&p, KUBE, HELM, &[("calico", CALICO)], false);
    p.file(
        "config.yaml",
        &format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  zone: cn\n  kubernetes:\n    kube_version: {KUBE}\n{}  cni:\n    type: calico\n    cni_plugins_version: v1.1.1\n  storage_class:\n    local: {{enabled: false}}\n{}",
            config_etcd_and_containerd(),
            config_downloads_and_native(&p.path("artifacts.yaml"), &srv.url(""), &sums, &fa),
        ),
    )
    .file("inventory.yaml", &inventory(&bed));

    let t = std::time::Instant::now();
    let r = p.kk_flow(&["create", "cluster"], &[]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    eprintln!("create cluster: {:.0}s", t.elapsed().as_secs_f64());
    // The FAKE calicoctl the role installed answers for the release helm installed.
    let version = sh(
        &bed,
        0,
        "DATASTORE_TYPE=kubernetes KUBECONFIG=/etc/kubernetes/admin.conf /usr/local/bin/calicoctl version",
    );
    assert!(
        version.contains(&format!("Client Version:    {CALICO}\n"))
            && version.contains(&format!("Cluster Version:   {CALICO}\n")),
        "{version}"
    );

    // 1. A calicoctl of another Calico version refuses (Version mismatch): the deletion stops
    //    there, the node stays in Kubernetes and installed.
    let scratch = tempfile::tempdir().unwrap();
    let other = scratch.path().join("calicoctl");
    fake_tool("v3.30.0", &other);
    push(&bed, 0, &other, "/usr/local/bin/calicoctl", "755");
    let t = std::time::Instant::now();
    let r = delete_w1(&p);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout.contains("Version mismatch") || r.stderr.contains("Version mismatch"),
        "{}",
        r.describe()
    );
    eprintln!("delete nodes (refused): {:.0}s", t.elapsed().as_secs_f64());
    let calls_w1 = about_w1(&bed);
    assert!(
        calls_w1
            .iter()
            .any(|c| c.starts_with("calicoctl delete node kk-w1 -> 1")),
        "{:#?}",
        calls_w1
    );
    assert!(
        !calls_w1
            .iter()
            .any(|c| c.starts_with("kubectl delete node")),
        "{:#?}",
        calls_w1
    );
    assert_eq!(
        sh(&bed, 1, "systemctl show -p LoadState --value kubelet"),
        "loaded"
    );

    // 2. The cluster's calicoctl again: cordon, drain, calicoctl (its refusal of the Node
    //    itself, after releasing the node's Calico data), kubectl delete node, in that order.
    let right = scratch.path().join("calicoctl");
    fake_tool(CALICO, &right);
    push(&bed, 0, &right, "/usr/local/bin/calicoctl", "755");
    let before = journal(&bed, 0).len();
    let t = std::time::Instant::now();
    let r = delete_w1(&p);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    eprintln!("delete nodes: {:.0}s", t.elapsed().as_secs_f64());
    let j = journal(&bed, 0);
    let now: Vec<&Value> = j[before..]
        .iter()
        .filter(|c| c["args"].to_string().contains("\"kk-w1\""))
        .collect();
    let seq: Vec<String> = now
        .iter()
        .map(|c| {
            let a: Vec<&str> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .filter(|a| !a.starts_with("--kubeconfig") && !a.ends_with("admin.conf"))
                .collect();
            format!(
                "{} {} -> {}",
                c["tool"].as_str().unwrap(),
                a.join(" "),
                c["exit"]
            )
        })
        .collect();
    assert_eq!(
        seq,
        [
            "kubectl get node kk-w1 -o name -> 0",
            "kubectl cordon kk-w1 -> 0",
            "kubectl drain kk-w1 --ignore-daemonsets --delete-emptydir-data --force --disable-eviction -> 0",
            "calicoctl delete node kk-w1 -> 1",
            "kubectl delete node kk-w1 -> 0",
        ]
    );
    let calicoctl = now.iter().find(|c| c["tool"] == "calicoctl").unwrap();
    assert_eq!(
        calicoctl["error"],
        "Failed to delete 'Node' resource: operation Delete is not supported on Node(kk-w1)"
    );
    assert!(
        calicoctl["files"]["/etc/kubernetes/admin.conf"].is_string(),
        "calicoctl used admin.conf: {calicoctl}"
    );
    let state = cluster_state(&bed, 0);
    assert!(
        state["calico"]["released"]["kk-w1"].is_string(),
        "{}",
        state["calico"]
    );
    assert_eq!(state["nodes"]["kk-w1"]["deleted"], true);
    assert_eq!(
        calls(&journal(&bed, 1), "kubeadm", &["reset"]).len(),
        1,
        "kk-w1 reset"
    );
    assert_eq!(
        sh(&bed, 1, "systemctl show -p LoadState --value kubelet"),
        "not-found"
    );

    // 3. Again: kk-w1 is no node any more; nothing is asked of calicoctl or kubectl about it.
    let before = about_w1(&bed).len();
    let r = delete_w1(&p);
    r.code(0);
    assert_eq!(about_w1(&bed).len(), before, "{:#?}", about_w1(&bed));
    assert_eq!(calls(&journal(&bed, 0), "calicoctl", &["delete"]).len(), 2);
}
