//! Unit tests of the lifecycle plans: the variables, tags and group changes each command
//! line gives the playbook (upstream's, cmd/kk/app/options/builtin/*.go).

use clap::Parser;
use serde_json::json;

use super::*;
use crate::{Add, Artifact, Cli, Command, Delete as DeleteCmd};

const INVENTORY: &str = "kind: Inventory
spec:
  hosts: {node1: {}, node2: {}, node3: {}, node4: {}}
  groups:
    kube_control_plane: {hosts: [node1, node2]}
    kube_worker:
      hosts:
        - node3
    etcd: {hosts: [node1, node2, node3]}
";

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        let d = Dir(tempfile::tempdir().unwrap());
        std::fs::write(d.inv(), INVENTORY).unwrap();
        d
    }
    fn inv(&self) -> String {
        self.0.path().join("inventory.yaml").display().to_string()
    }
}

fn parse(args: &[&str]) -> Command {
    let mut argv = vec!["kk"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv)
        .unwrap_or_else(|e| panic!("{}", e))
        .command
}

fn config(plan: &Plan) -> Value {
    let mut m = serde_json::Map::new();
    for (k, v) in &plan.config {
        m.insert(k.to_string(), v.clone());
    }
    Value::Object(m)
}

#[test]
fn add_nodes_sets_add_nodes_and_the_groups() {
    let d = Dir::new();
    let Command::Add(Add::Nodes(a)) = parse(&[
        "add",
        "node",
        "--worker",
        "node4,node2",
        "--etcd",
        "node4",
        "--override",
        "-i",
        &d.inv(),
    ]) else {
        panic!()
    };
    let plan = add_nodes(&a).unwrap();
    assert_eq!(plan.playbook, "add_nodes");
    assert_eq!(config(&plan), json!({"add_nodes": ["node4", "node2"]}));
    assert_eq!(
        plan.groups_add,
        [
            ("kube_worker", "node4"),
            ("kube_worker", "node2"),
            ("etcd", "node4")
        ]
        .map(|(g, h)| (g.to_string(), h.to_string()))
    );
    assert!(plan.confirm.is_none());
    let edit = plan.edit.expect("--override plans an edit");
    assert_eq!(edit.changes.len(), 3);
    // Written only when asked for, after the run.
    edit.write().unwrap();
    let text = std::fs::read_to_string(d.inv()).unwrap();
    assert!(
        text.contains("        - node3\n        - node4\n        - node2\n"),
        "{}",
        text
    );
    assert!(
        text.contains("etcd: {hosts: [node1, node2, node3, node4]}"),
        "{}",
        text
    );
    // Without flags: every not-installed node of the groups, `add_nodes` empty.
    let Command::Add(Add::Nodes(a)) = parse(&["add", "nodes", "-i", &d.inv()]) else {
        panic!()
    };
    let plan = add_nodes(&a).unwrap();
    assert_eq!(config(&plan), json!({"add_nodes": []}));
    assert!(plan.edit.is_none() && plan.groups_add.is_empty());
}

#[test]
fn delete_nodes_sets_delete_nodes_and_the_delete_keys() {
    let d = Dir::new();
    let Command::Delete(DeleteCmd::Nodes(n)) =
        parse(&["delete", "nodes", "node2", "node3", "node2", "-i", &d.inv()])
    else {
        panic!()
    };
    let plan = delete_nodes(&n).unwrap();
    assert_eq!(plan.playbook, "delete_nodes");
    assert_eq!(config(&plan), json!({"delete_nodes": ["node2", "node3"]}));
    assert!(plan
        .confirm
        .unwrap()
        .contains("node2 (etcd, kube_control_plane)"));
    let Command::Delete(DeleteCmd::Nodes(n)) = parse(&[
        "delete",
        "node",
        "node2",
        "--all",
        "--with-data",
        "--override",
        "-i",
        &d.inv(),
    ]) else {
        panic!()
    };
    let plan = delete_nodes(&n).unwrap();
    assert_eq!(
        config(&plan),
        json!({"delete.cri": true, "delete.dns": true, "delete.etcd": true,
               "delete.image_registry": true, "delete.data": true, "delete_nodes": ["node2"]})
    );
    // With --all the etcd group loses the node too (upstream: only when delete.etcd).
    let groups: Vec<&str> = plan
        .edit
        .as_ref()
        .unwrap()
        .changes
        .iter()
        .map(|c| c.group.as_str())
        .collect();
    assert_eq!(groups, ["kube_control_plane", "kube_worker", "etcd"]);
    plan.edit.unwrap().write().unwrap();
    let text = std::fs::read_to_string(d.inv()).unwrap();
    assert!(
        text.contains("kube_control_plane: {hosts: [node1]}"),
        "{}",
        text
    );
    assert!(text.contains("etcd: {hosts: [node1, node3]}"), "{}", text);
    // Without --all (and no delete.etcd in the config) the etcd member stays listed.
    let Command::Delete(DeleteCmd::Nodes(n)) =
        parse(&["delete", "nodes", "node3", "--override", "-i", &d.inv()])
    else {
        panic!()
    };
    let groups: Vec<String> = delete_nodes(&n)
        .unwrap()
        .edit
        .unwrap()
        .changes
        .into_iter()
        .map(|c| c.group)
        .collect();
    assert_eq!(groups, ["kube_control_plane", "kube_worker"]);
    // ... unless the config says so (--set counts).
    let Command::Delete(DeleteCmd::Nodes(n)) = parse(&[
        "delete",
        "nodes",
        "node3",
        "--override",
        "--set",
        "delete.etcd=true",
        "-i",
        &d.inv(),
    ]) else {
        panic!()
    };
    assert_eq!(delete_nodes(&n).unwrap().edit.unwrap().changes.len(), 3);
}

#[test]
fn delete_cluster_and_registry_set_upstreams_keys() {
    let Command::Delete(DeleteCmd::Cluster(c)) = parse(&["delete", "cluster", "--all"]) else {
        panic!()
    };
    let plan = delete_cluster(&c).unwrap();
    assert_eq!(
        config(&plan),
        json!({"delete.cri": true, "delete.dns": true, "delete.etcd": true, "delete.image_registry": true})
    );
    assert!(plan
        .confirm
        .unwrap()
        .contains("bundled localhost inventory: localhost ("));
    let Command::Delete(DeleteCmd::Cluster(c)) = parse(&["delete", "cluster", "--with-data"])
    else {
        panic!()
    };
    assert_eq!(
        config(&delete_cluster(&c).unwrap()),
        json!({"delete.data": true})
    );
    let d = Dir::new();
    std::fs::write(
        d.inv(),
        INVENTORY.replace(
            "    etcd:",
            "    image_registry: {hosts: [node4]}\n    etcd:",
        ),
    )
    .unwrap();
    let Command::Delete(DeleteCmd::Registry(r)) =
        parse(&["delete", "registry", "--all", "--with-data", "-i", &d.inv()])
    else {
        panic!()
    };
    let plan = delete_registry(&r).unwrap();
    assert_eq!(plan.playbook, "delete_registry");
    // Upstream's registry --all: the runtime and the DNS entries only.
    assert_eq!(
        config(&plan),
        json!({"delete.cri": true, "delete.dns": true, "delete.data": true})
    );
}

#[test]
fn tags_of_certs_registry_and_images() {
    assert_eq!(certs_renew().tags, ["certs"]);
    assert_eq!(init_registry().tags, ["image_registry"]);
    for (flags, tags) in [
        (&[][..], &["pull", "push"][..]),
        (&["--pull"][..], &["pull"][..]),
        (&["--push"][..], &["push"][..]),
        (&["--pull", "--push"][..], &["pull", "push"][..]),
    ] {
        let mut args = vec!["artifact", "images"];
        args.extend_from_slice(flags);
        let Command::Artifact(Artifact::Images(a)) = parse(&args) else {
            panic!()
        };
        assert_eq!(artifact_images(&a).tags, tags, "{:?}", flags);
    }
}

#[test]
fn the_last_etcd_member_is_kept_only_when_kk_runs_etcd() {
    let d = Dir::new();
    std::fs::write(
        d.inv(),
        INVENTORY
            .replace("[node1, node2]}", "[node1, node4]}")
            .replace(
                "etcd: {hosts: [node1, node2, node3]}",
                "etcd: {hosts: [node1]}",
            ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["delete", "nodes", "node1", "--all", "-i"];
        let inv = d.inv();
        args.push(&inv);
        args.extend_from_slice(extra);
        let Command::Delete(DeleteCmd::Nodes(n)) = parse(&args) else {
            panic!()
        };
        delete_nodes(&n).map(|_| ()).map_err(|e| e.render())
    };
    let e = run(&[]).unwrap_err();
    assert!(e.contains("every etcd member (node1)"), "{}", e);
    // Stacked etcd (kubeadm's): kk does not scale it, nothing to protect here.
    run(&["--set", "etcd.deployment_type=internal"]).unwrap();
}
