//! Unit tests of the `--override` inventory editor: every shape, comments kept.

use super::*;

const HOSTS: &str = "apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
spec:
  hosts:
    node1: {}
    node2: {}
    node3: {}
    node4: {}
";

fn edit(groups: &str, changes: &[Change]) -> Option<String> {
    let text = format!("{}{}", HOSTS, groups);
    apply("inventory.yaml", &text, changes)
        .unwrap_or_else(|e| panic!("{}", e.render()))
        .map(|t| t.strip_prefix(HOSTS).expect("hosts untouched").to_string())
}

fn refused(groups: &str, changes: &[Change]) -> String {
    let text = format!("{}{}", HOSTS, groups);
    match apply("inventory.yaml", &text, changes) {
        Ok(t) => panic!("expected a refusal, got {:?}", t),
        Err(e) => e.render(),
    }
}

#[test]
fn block_lists_keep_comments_and_indentation() {
    let groups = "  groups:
    # the control plane
    kube_control_plane:
      hosts:
        - node1   # first
    kube_worker:
      hosts:
        - node2
        # spare: node9
    etcd:
      hosts:
      - node1
";
    let out = edit(
        groups,
        &[
            Change::add("kube_worker", "node3"),
            Change::add("etcd", "node3"),
            Change::add("kube_control_plane", "node1"),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        "  groups:
    # the control plane
    kube_control_plane:
      hosts:
        - node1   # first
    kube_worker:
      hosts:
        - node2
        - node3
        # spare: node9
    etcd:
      hosts:
      - node1
      - node3
"
    );
    let back = edit(
        &out,
        &[
            Change::remove("kube_worker", "node3"),
            Change::remove("etcd", "node3"),
        ],
    )
    .unwrap();
    assert_eq!(back, groups);
}

#[test]
fn flow_lists_and_flow_groups() {
    let groups = "  groups:
    k8s_cluster: {groups: [kube_control_plane, kube_worker]}
    kube_control_plane: {hosts: [node1]}  # one for now
    kube_worker:
      hosts: [node2, \"node3\"]
    etcd: {groups: [kube_control_plane]}
";
    let out = edit(
        groups,
        &[
            Change::add("kube_control_plane", "node4"),
            Change::remove("kube_worker", "node3"),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        "  groups:
    k8s_cluster: {groups: [kube_control_plane, kube_worker]}
    kube_control_plane: {hosts: [node1, node4]}  # one for now
    kube_worker:
      hosts: [node2]
    etcd: {groups: [kube_control_plane]}
"
    );
    // etcd holds node1 through its child group: adding node4 there is a no-op now;
    // adding node2 puts a hosts list into the flow mapping.
    let out2 = edit(&out, &[Change::add("etcd", "node2")]).unwrap();
    assert!(
        out2.contains("    etcd: {hosts: [node2], groups: [kube_control_plane]}\n"),
        "{}",
        out2
    );
    // Removing the last item of a flow list leaves `[]`.
    let out3 = edit(&out2, &[Change::remove("kube_worker", "node2")]).unwrap();
    assert!(out3.contains("      hosts: []\n"), "{}", out3);
}

#[test]
fn missing_groups_and_hosts_are_created() {
    let groups = "  groups:
    kube_control_plane:
      hosts:
        - node1
    kube_worker:
    etcd:
      vars: {a: 1}
  # global variables
  vars: {}
";
    let out = edit(
        groups,
        &[
            Change::add("kube_worker", "node2"),
            Change::add("etcd", "node1"),
            Change::add("image_registry", "node4"),
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        "  groups:
    kube_control_plane:
      hosts:
        - node1
    kube_worker:
      hosts:
        - node2
    etcd:
      hosts:
        - node1
      vars: {a: 1}
    image_registry:
      hosts:
        - node4
  # global variables
  vars: {}
"
    );
}

#[test]
fn removing_the_last_item_leaves_an_empty_list() {
    let groups = "  groups:
    kube_control_plane:
      hosts:
        - node1
    kube_worker:
      hosts:    # workers
        - node2
";
    let out = edit(groups, &[Change::remove("kube_worker", "node2")]).unwrap();
    assert_eq!(
        out,
        "  groups:
    kube_control_plane:
      hosts:
        - node1
    kube_worker:
      hosts: []    # workers
"
    );
}

#[test]
fn nothing_to_do_writes_nothing() {
    let groups = "  groups:
    kube_worker:
      hosts: [node2]
";
    assert_eq!(edit(groups, &[Change::add("kube_worker", "node2")]), None);
    assert_eq!(
        edit(groups, &[Change::remove("kube_worker", "node3")]),
        None
    );
    assert_eq!(edit(groups, &[Change::remove("etcd", "node3")]), None);
}

#[test]
fn the_bundled_inventory_template_is_editable() {
    let text = crate::bundle::file("builtin/inventory/localhost.yaml").unwrap();
    let out = apply(
        "inventory.yaml",
        text,
        &[
            Change::remove("kube_worker", "localhost"),
            Change::add("image_registry", "localhost"),
        ],
    )
    .unwrap()
    .unwrap();
    // Only the changed lines differ; every comment is still there.
    let comments = |t: &str| {
        t.lines()
            .filter(|l| l.trim_start().starts_with('#'))
            .count()
    };
    assert_eq!(comments(&out), comments(text));
    assert!(
        out.contains("    kube_worker:\n      hosts: []\n"),
        "{}",
        out
    );
    assert!(
        out.contains("    image_registry:\n      hosts:\n        - localhost\n"),
        "{}",
        out
    );
}

#[test]
fn shapes_it_cannot_edit_are_refused() {
    // A host in the group only through a child group cannot be removed by a line edit.
    let e = refused(
        "  groups:
    etcd: {groups: [kube_control_plane]}
    kube_control_plane: {hosts: [node1]}
",
        &[Change::remove("etcd", "node1")],
    );
    assert!(e.contains("child group"), "{}", e);
    // A flow list over several lines.
    let e = refused(
        "  groups:
    kube_worker:
      hosts: [node1,
              node2]
",
        &[Change::remove("kube_worker", "node1")],
    );
    assert!(e.contains("several lines"), "{}", e);
    // Flow `spec.groups`.
    let e = refused(
        "  groups: {kube_worker: {hosts: [node1]}}\n",
        &[Change::add("etcd", "node2")],
    );
    assert!(e.contains("flow mapping"), "{}", e);
}

#[test]
fn crlf_files_keep_their_line_ends() {
    let text = format!(
        "{}  groups:\n    kube_worker:\n      hosts:\n        - node1\n",
        HOSTS
    )
    .replace('\n', "\r\n");
    let out = apply(
        "inventory.yaml",
        &text,
        &[Change::add("kube_worker", "node2")],
    )
    .unwrap()
    .unwrap();
    assert!(
        out.ends_with("        - node1\r\n        - node2\r\n"),
        "{:?}",
        out
    );
    assert!(!out.replace("\r\n", "").contains('\n'), "{:?}", out);
}

#[test]
fn ansible_inventories_are_edited_too() {
    let text = "all:
  hosts:
    node1: {ansible_host: 10.0.0.1}
    node2:
    node3:
  children:
    # control plane
    kube_control_plane:
      hosts:
        node1:
    kube_worker:
      hosts:
        node2:   # the first worker
      vars: {w: 1}
    k8s_cluster:
      children:
        kube_control_plane:
        kube_worker:
";
    let out = apply(
        "inv.yaml",
        text,
        &[
            Change::add("kube_worker", "node3"),
            Change::add("etcd", "node1"),
            Change::remove("kube_worker", "node2"),
        ],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        out,
        "all:
  hosts:
    node1: {ansible_host: 10.0.0.1}
    node2:
    node3:
  children:
    # control plane
    kube_control_plane:
      hosts:
        node1:
    kube_worker:
      hosts:
        node3:
      vars: {w: 1}
    k8s_cluster:
      children:
        kube_control_plane:
        kube_worker:
    etcd:
      hosts:
        node1:
"
    );
    // A host whose variables live under the group cannot be removed by a line edit.
    let e = apply(
        "inv.yaml",
        "all:\n  children:\n    kube_worker:\n      hosts:\n        node1: {ansible_port: 2222}\n",
        &[Change::remove("kube_worker", "node1")],
    )
    .unwrap_err()
    .render();
    assert!(e.contains("its variables"), "{}", e);
}
