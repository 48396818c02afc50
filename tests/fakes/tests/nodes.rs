//! The FAKE kubectl's node commands and the FAKE calicoctl (run locally under
//! `KK_FAKE_ROOT`, as tests/cli.rs does): what `kk delete nodes` may ask of them.

use std::process::Command;

use serde_json::Value;

mod common;
use common::Fake;

#[test]
fn kubectl_cordon_drain_delete_node() {
    let f = Fake::new("v1.30.8");
    f.write("/root/.kube/config", "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'https://lb:6443'}\n");
    assert_eq!(
        f.ok("kubectl", &["get", "node", "w1", "-o", "name"]),
        "node/w1"
    );
    assert_eq!(f.ok("kubectl", &["cordon", "w1"]), "node/w1 cordoned");
    assert_eq!(
        f.ok("kubectl", &["cordon", "w1"]),
        "node/w1 already cordoned"
    );
    // drain refuses without the flags a node with DaemonSet pods needs.
    let e = f.fails("kubectl", &["drain", "w1", "--force"]);
    assert!(
        e.contains("--ignore-daemonsets, --delete-emptydir-data"),
        "{}",
        e
    );
    let d = [
        "drain",
        "w1",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        "--disable-eviction",
    ];
    assert_eq!(f.ok("kubectl", &d), "node/w1 drained");
    assert_eq!(f.run("kubectl", &["drain", "w1", "--bogus"]).code, 64);
    assert_eq!(
        f.ok("kubectl", &["delete", "node", "w1"]),
        "node \"w1\" deleted"
    );
    // Gone: NotFound, as kubectl.
    for args in [
        &["get", "node", "w1", "-o", "name"][..],
        &["cordon", "w1"],
        &d,
        &["delete", "node", "w1"],
    ] {
        let e = f.fails("kubectl", args);
        assert!(e.contains("nodes \"w1\" not found"), "{:?}: {}", args, e);
    }
    f.ok("kubectl", &["delete", "node", "w1", "--ignore-not-found"]);
    // Another node is untouched.
    assert_eq!(
        f.ok("kubectl", &["get", "node", "cp1", "-o", "name"]),
        "node/cp1"
    );
}

#[test]
fn calicoctl_needs_the_kubernetes_datastore_and_refuses_to_delete_its_nodes() {
    let f = Fake::new("v1.30.8");
    let kubeconfig =
        "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'https://lb:6443'}\n";
    let kdd = [
        ("DATASTORE_TYPE", "kubernetes"),
        ("KUBECONFIG", "/etc/kubernetes/admin.conf"),
    ];
    let del = ["delete", "node", "w1"];
    // No datastore configuration at all: the client lines, then calicoctl's error.
    let o = f.run("calicoctl", &["version"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stdout
            .starts_with("Client Version:    v3.29.7\nGit commit:"),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr.contains("no configuration has been provided"),
        "{}",
        o.stderr
    );
    // A KUBECONFIG that does not exist, or is no kubeconfig.
    let e = f.run_env("calicoctl", &del, &kdd).stderr;
    assert!(
        e.contains("stat /etc/kubernetes/admin.conf: no such file"),
        "{}",
        e
    );
    f.write("/etc/kubernetes/admin.conf", "kind: Pod\n");
    let e = f.run_env("calicoctl", &del, &kdd).stderr;
    assert!(e.contains("not a kubeconfig"), "{}", e);
    f.write("/etc/kubernetes/admin.conf", kubeconfig);
    // etcd: kk's Calico has no etcd datastore (explicitly, or by ETCD_ENDPOINTS).
    for env in [
        &[("DATASTORE_TYPE", "etcdv3")][..],
        &[("ETCD_ENDPOINTS", "https://127.0.0.1:2379")],
    ] {
        let o = f.run_env("calicoctl", &del, env);
        assert_eq!(o.code, 1);
        assert!(o.stderr.contains("etcdv3 datastore"), "{}", o.stderr);
    }
    let e = f
        .run_env("calicoctl", &del, &[("DATASTORE_TYPE", "consul")])
        .stderr;
    assert!(e.contains("unknown datastore type: consul"), "{}", e);
    // No Calico installed: no ClusterInformation for `version`.
    let o = f.run_env("calicoctl", &["version"], &kdd);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("ClusterInformation(default)"),
        "{}",
        o.stderr
    );

    // The tigera-operator chart of another version, installed with the fake helm.
    let chart = |version: &str| {
        let d = tempfile::tempdir().unwrap();
        let c = d.path().join("tigera-operator");
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(
            c.join("Chart.yaml"),
            format!(
                "apiVersion: v2\nname: tigera-operator\nversion: {}\n",
                version
            ),
        )
        .unwrap();
        let out = f.path(&format!("/charts/tigera-operator-{}.tgz", version));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&out)
            .arg("-C")
            .arg(d.path())
            .arg("tigera-operator")
            .status()
            .unwrap();
        assert!(st.success());
        let tgz = format!("/charts/tigera-operator-{}.tgz", version);
        f.ok(
            "helm",
            &[
                "upgrade",
                "--install",
                "calico",
                &tgz,
                "-n",
                "tigera-operator",
                "--create-namespace",
                "--kubeconfig",
                "/etc/kubernetes/admin.conf",
            ],
        );
    };
    chart("v3.30.0");
    let o = f.run_env("calicoctl", &del, &kdd);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .contains("Version mismatch.\nClient Version:   v3.29.7\nCluster Version:  3.30.0"),
        "{}",
        o.stderr
    );
    // --allow-version-mismatch skips the check (and reaches the refusal below).
    let mut skip = del.to_vec();
    skip.push("--allow-version-mismatch");
    let e = f.run_env("calicoctl", &skip, &kdd).stderr;
    assert!(e.contains("operation Delete is not supported"), "{}", e);
    chart("v3.29.7");
    assert_eq!(
        f.run_env("calicoctl", &["version"], &kdd).stdout,
        "Client Version:    v3.29.7\nGit commit:        0000000 (FAKE calicoctl)\nCluster Version:   v3.29.7\nCluster Type:      typha,kdd,k8s,operator,bgp,kubeadm"
    );

    // The config file: --config must exist; the default one is read when it exists.
    let e = f.fails("calicoctl", &["version", "--config", "/none.cfg"]);
    assert!(e.contains("Error reading config file: /none.cfg"), "{}", e);
    let cfg = "/etc/calico/calicoctl.cfg";
    let spec = "spec:\n  datastoreType: kubernetes\n  kubeconfig: /etc/kubernetes/admin.conf\n";
    f.write(
        cfg,
        &format!("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\n{spec}"),
    );
    assert!(f
        .ok("calicoctl", &["version"])
        .contains("Cluster Version:   v3.29.7"));
    for (bad, want) in [
        (
            format!("apiVersion: v1\nkind: CalicoAPIConfig\n{spec}"),
            "unknown APIVersion 'v1'",
        ),
        (
            format!("apiVersion: projectcalico.org/v3\nkind: Config\n{spec}"),
            "expected kind 'CalicoAPIConfig', got 'Config'",
        ),
        (
            format!(
                "apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\n{spec}  kubeConfig: /x\n"
            ),
            "unknown field \"kubeConfig\"",
        ),
    ] {
        f.write(cfg, &bad);
        let e = f.fails("calicoctl", &["version"]);
        assert!(e.contains(want), "{}: {}", want, e);
    }
    f.write(cfg, &format!("apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\n{spec}  k8sAPIEndpoint: https://lb:6443\n"));
    assert_eq!(f.run("calicoctl", &["version"]).code, 64);
    std::fs::remove_file(f.path(cfg)).unwrap();
    // Without a file or KUBECONFIG: $HOME/.kube/config, as calicoctl defaults.
    f.write("/root/.kube/config", kubeconfig);
    assert!(f.ok("calicoctl", &["version"]).contains("Cluster Version:"));

    // delete node: the node's Calico data is released, then the Node itself is refused (in
    // the Kubernetes datastore it is the Kubernetes Node): exit 1, for a node or not.
    let o = f.run_env(
        "calicoctl",
        &["delete", "node", "w1", "--skip-not-exists"],
        &kdd,
    );
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "FAKE calicoctl: Failed to delete 'Node' resource: operation Delete is not supported on Node(w1)"
    );
    f.ok("kubectl", &["delete", "node", "gone"]);
    let e = f
        .run_env("calicoctl", &["delete", "Nodes", "gone", "w2"], &kdd)
        .stderr;
    assert!(
        e.ends_with("Node(gone)\nFailed to delete 'Node' resource: operation Delete is not supported on Node(w2)"),
        "{}",
        e
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(f.path("/var/lib/kk-fakes/cluster.json")).unwrap(),
    )
    .unwrap();
    let released: Vec<&String> = state["calico"]["released"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        released,
        ["w1", "w2"],
        "a deleted node has nothing to release"
    );
    let j = f.journal();
    let last = j.last().unwrap();
    assert_eq!(last["tool"], "calicoctl");
    assert_eq!(
        last["args"],
        serde_json::json!(["delete", "Nodes", "gone", "w2"])
    );
    assert!(
        last["files"]["/etc/kubernetes/admin.conf"].is_string(),
        "{}",
        last
    );
    assert_eq!(last["exit"], 1);

    // Anything else is outside the interface.
    for args in [
        &["get", "nodes"][..],
        &["delete", "node"],
        &["delete", "-f", "nodes.yaml"],
        &["delete", "ippool", "default-ipv4-ippool"],
        &["version", "--poll", "1s"],
        &["node", "status"],
        &[],
    ] {
        let o = f.run_env("calicoctl", args, &kdd);
        assert_eq!(o.code, 64, "{:?}: {}", args, o.stderr);
        assert!(
            o.stderr.contains("FAKE calicoctl: unsupported"),
            "{}",
            o.stderr
        );
    }
    assert_eq!(f.journal().last().unwrap()["exit"], 64);
}
