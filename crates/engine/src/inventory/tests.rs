//! Loading both inventory forms from fixtures and text, derived data, runtime changes, and
//! the errors bad inventories give.

use super::ranges::expand_ranges;

use super::*;
use serde_json::json;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inventory")
        .join(name)
}

fn load(name: &str) -> Inventory {
    match Inventory::load(&fixture(name)) {
        Ok(i) => i,
        Err(e) => panic!("{}", e.render()),
    }
}

fn load_err(name: &str) -> Error {
    Inventory::load(&fixture(name)).expect_err("expected an error")
}

fn parse(text: &str) -> Result<Inventory> {
    Inventory::from_node(&crate::yaml::parse_str("inv.yaml", text)?)
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn kubekey_groups_in_file_order() {
    let inv = load("kubekey.yaml");
    assert_eq!(inv.host_names(), ["node1", "node2", "node3", "localhost"]);
    let g = inv.groups();
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        [
            "all",
            "ungrouped",
            "k8s_cluster",
            "kube_control_plane",
            "kube_worker",
            "etcd",
            "image_registry",
            "nfs"
        ]
    );
    // Own hosts, then children in the order listed (not KubeKey's later-child-first).
    assert_eq!(g["k8s_cluster"], ["node1", "node2"]);
    assert_eq!(g["image_registry"], ["node3", "localhost"]);
    assert!(g["ungrouped"].is_empty());
    assert!(g["nfs"].is_empty());
    assert_eq!(
        inv.group_names("node1"),
        ["etcd", "k8s_cluster", "kube_control_plane", "kube_worker"]
    );
    assert_eq!(inv.group_names("node3"), ["image_registry"]);
    assert!(inv.group_names("nosuch").is_empty());
}

#[test]
fn kubekey_vars_precedence() {
    let inv = load("kubekey.yaml");
    let v = inv.host_vars("node1");
    // spec.vars < k8s_cluster (depth 1) < kube_control_plane < kube_worker (depth 2, file order) < host.
    assert_eq!(v["role"], json!("worker"));
    assert_eq!(
        v["kubernetes"],
        json!({"kube_version": "v1.30.0", "cluster_name": "demo", "kubelet": {"max_pods": 200, "pod_pids_limit": 10000}})
    );
    assert_eq!(v["connector"]["password"], json!("secret"));
    assert_eq!(v["ntp_servers"], json!(["cn.pool.ntp.org"]));
    assert_eq!(inv.host_vars("node3")["role"], json!("none"));
    assert!(!inv.host_vars("node1").contains_key("ansible_connection"));
    // localhost named by a group: a host now, local connection by default.
    let lh = inv.host_vars("localhost");
    assert_eq!(lh["ansible_connection"], json!("local"));
    assert_eq!(lh["role"], json!("none"));
    assert!(inv.host_vars("nosuch").is_empty());
    assert!(Arc::ptr_eq(
        &inv.host_vars_arc("node1"),
        &inv.host_vars_arc("node1")
    ));
}

#[test]
fn ansible_form() {
    let inv = load("ansible.yaml");
    assert_eq!(
        inv.host_names(),
        [
            "bastion",
            "web01.example.com",
            "web02.example.com",
            "web03.example.com",
            "db1",
            "extra1",
            "db2",
            "db-a",
            "db-b"
        ]
    );
    let g = inv.groups();
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        [
            "all",
            "ungrouped",
            "web",
            "db",
            "db_primary",
            "db_replica",
            "prod",
            "staging"
        ]
    );
    assert_eq!(g["db"], ["db1", "db2", "db-a", "db-b"]);
    assert_eq!(g["ungrouped"], ["bastion"]);
    assert_eq!(g["staging"], ["web03.example.com", "extra1"]);
    assert_eq!(inv.group_names("db1"), ["db", "db_primary", "prod"]);

    let db1 = inv.host_vars("db1");
    assert_eq!(db1["tier"], json!("db-primary")); // db < prod (depth 1) < db_primary (depth 2)
    assert_eq!(db1["ansible_port"], json!(2222));
    assert_eq!(db1["ansible_host"], json!("10.0.1.1"));
    assert_eq!(db1["ansible_user"], json!("admin"));
    let web01 = inv.host_vars("web01.example.com");
    // web and prod are both top-level: Ansible orders groups of the same depth by name.
    assert_eq!(web01["tier"], json!("web"));
    assert_eq!(web01["pinned"], json!(true));
    assert_eq!(
        web01["dns"],
        // A mapping of Ansible's form replaces the lower one whole (ansible-core's default).
        json!({"search": ["web.lan"]})
    );
    assert_eq!(inv.host_vars("web02.example.com")["http_port"], json!(8080));
    assert_eq!(inv.host_vars("web03.example.com")["tier"], json!("web"));
    assert_eq!(inv.host_vars("bastion").get("tier"), None);
    let span = |h: &str| inv.host_span(h).map(|s| (s.line, s.col));
    assert_eq!(span("bastion"), Some((6, 5)));
    assert_eq!(span("db2"), Some((28, 13)));
    assert_eq!(span("web02.example.com"), Some((8, 5)));
}

#[test]
fn implicit_localhost() {
    let inv = load("ansible.yaml");
    assert!(!inv.host_names().contains(&"localhost".to_string()));
    assert!(!inv.groups()["all"].contains(&"localhost".to_string()));
    assert_eq!(inv.select("localhost").unwrap(), ["localhost"]);
    assert_eq!(inv.select("all").unwrap().len(), 9);
    let lh = inv.host_vars("localhost");
    assert_eq!(lh["ansible_connection"], json!("local"));
    assert_eq!(lh["ansible_user"], json!("admin"));
    assert!(inv.has_host("localhost"));
    assert!(inv.group_names("localhost").is_empty());

    let e = Inventory::empty();
    assert!(e.host_names().is_empty());
    assert_eq!(e.groups().keys().collect::<Vec<_>>(), ["all", "ungrouped"]);
    assert_eq!(e.select("localhost").unwrap(), ["localhost"]);
    assert_eq!(
        e.host_vars("localhost")["ansible_connection"],
        json!("local")
    );
    assert!(e.select("all").unwrap().is_empty());
}

#[test]
fn listed_localhost_keeps_its_connection() {
    let inv = parse("all:\n  hosts:\n    localhost: {ansible_connection: ssh}\n").unwrap();
    assert_eq!(inv.host_names(), ["localhost"]);
    assert_eq!(
        inv.host_vars("localhost")["ansible_connection"],
        json!("ssh")
    );
    let inv = parse("kind: Inventory\nspec:\n  hosts:\n    localhost: {connector: {type: ssh}}\n")
        .unwrap();
    assert!(!inv
        .host_vars("localhost")
        .contains_key("ansible_connection"));
}

#[test]
fn select_on_inventory() {
    let inv = load("ansible.yaml");
    assert_eq!(inv.select("web:&prod").unwrap(), ["web01.example.com"]);
    assert_eq!(inv.select("db[0]").unwrap(), ["db1"]);
    assert_eq!(inv.select("db[1:2]").unwrap(), ["db2", "db-a"]);
    // Pattern order, as `ansible staging:db_primary --list-hosts` lists them.
    assert_eq!(
        inv.select("staging:db_primary").unwrap(),
        ["web03.example.com", "extra1", "db1"]
    );
    assert_eq!(
        inv.select("*.example.com:!web02*").unwrap(),
        ["web01.example.com", "web03.example.com"]
    );
    assert_eq!(inv.select("db_*").unwrap(), ["db1", "db2", "db-a", "db-b"]);
    assert!(inv.select("nosuch").unwrap().is_empty());
    assert!(inv.select("web[1:x]").is_err());
}

#[test]
fn group_hosts_a_level_of_children_at_a_time() {
    // Ansible's Group.get_hosts: own hosts, children's, grandchildren's (not depth first),
    // and a play on a group runs in that order, not all's.
    let inv = parse(
        "all:\n  hosts: {h1: , h2: , h3: }\n  children:\n    parent:\n      children:\n        left:\n          hosts: {h2: }\n          children:\n            deep:\n              hosts: {h1: }\n        right:\n          hosts: {h3: }\n    rev:\n      hosts: {h3: , h2: , h1: }\n",
    )
    .unwrap();
    assert_eq!(inv.groups()["parent"], strs(&["h2", "h3", "h1"]));
    assert_eq!(inv.select("parent").unwrap(), strs(&["h2", "h3", "h1"]));
    assert_eq!(inv.select("rev").unwrap(), strs(&["h3", "h2", "h1"]));
    assert_eq!(inv.select("all").unwrap(), strs(&["h1", "h2", "h3"]));
    assert_eq!(inv.select("rev:!h2").unwrap(), strs(&["h3", "h1"]));
}

#[test]
fn runtime_changes() {
    let mut inv = load("ansible.yaml");
    let mut vars = VarMap::new();
    vars.insert("ansible_host".into(), json!("10.0.9.9"));
    inv.add_host("new1", &strs(&["web", "fresh"]), vars)
        .unwrap();
    // Ansible's `all`: its own hosts (add_host's among them), then the groups' (checked
    // with ansible-playbook 2.19 on this inventory).
    assert_eq!(
        inv.host_names(),
        [
            "bastion",
            "web01.example.com",
            "web02.example.com",
            "web03.example.com",
            "new1",
            "db1",
            "extra1",
            "db2",
            "db-a",
            "db-b"
        ]
    );
    assert_eq!(inv.groups()["fresh"], ["new1"]);
    assert_eq!(inv.groups()["web"].last().unwrap(), "new1");
    assert_eq!(inv.host_vars("new1")["tier"], json!("web"));
    assert_eq!(inv.host_vars("new1")["ansible_host"], json!("10.0.9.9"));
    assert_eq!(inv.group_names("new1"), ["fresh", "web"]);
    // Updating an existing host merges its variables.
    let mut more = VarMap::new();
    more.insert("extra".into(), json!(1));
    inv.add_host("new1", &[], more).unwrap();
    assert_eq!(inv.host_vars("new1")["ansible_host"], json!("10.0.9.9"));
    assert_eq!(inv.host_vars("new1")["extra"], json!(1));

    inv.add_to_group("bastion", "os_debian").unwrap();
    assert_eq!(inv.groups()["os_debian"], ["bastion"]);
    assert!(inv.groups()["ungrouped"].is_empty());
    assert_eq!(inv.select("os_debian").unwrap(), ["bastion"]);
    let e = inv.add_to_group("ghost", "x").unwrap_err();
    assert!(e.message.contains("unknown host `ghost`"), "{}", e.message);
    assert!(inv.add_host(" ", &[], VarMap::new()).is_err());
}

#[test]
fn unknown_host_in_kubekey_group() {
    let e = load_err("bad_unknown_host.yaml");
    let r = e.render();
    assert!(
        r.contains("group `etcd` lists host `node3`, which is not defined in `spec.hosts`"),
        "{r}"
    );
    assert!(r.contains("bad_unknown_host.yaml:11:11"), "{r}");
    assert!(
        r.contains("did you mean `node1`?") || r.contains("did you mean `node2`?"),
        "{r}"
    );
    assert_eq!(e.exit_code(), 4);
}

#[test]
fn unknown_child_group() {
    let r = load_err("bad_unknown_child.yaml").render();
    assert!(r.contains("child group `kube_wroker`"), "{r}");
    assert!(r.contains("did you mean `kube_worker`?"), "{r}");
    assert!(r.contains("bad_unknown_child.yaml:7:"), "{r}");
}

#[test]
fn cycles_are_named() {
    let r = load_err("bad_cycle.yaml").render();
    assert!(
        r.contains("child groups form a cycle: a -> b -> c -> a"),
        "{r}"
    );
    assert!(r.contains("bad_cycle.yaml:12:"), "{r}");
    let r = load_err("bad_cycle_ansible.yaml").render();
    assert!(r.contains("a -> b -> a"), "{r}");
    assert!(r.contains("bad_cycle_ansible.yaml:7:13"), "{r}");
}

#[test]
fn wrong_shapes() {
    let r = load_err("bad_kind.yaml").render();
    assert!(
        r.contains("expected `kind: Inventory`, found kind `Config`"),
        "{r}"
    );
    assert!(r.contains("pass it with `-c`"), "{r}");
    let r = load_err("bad_group_key.yaml").render();
    assert!(r.contains("unexpected key `host` in group `web`"), "{r}");
    assert!(r.contains("did you mean `hosts`?"), "{r}");
    assert!(r.contains("bad_group_key.yaml:4:7"), "{r}");
    let r = load_err("bad_host_vars.yaml").render();
    assert!(
        r.contains("expected a mapping of variables for host `node1`, found a list"),
        "{r}"
    );
    assert!(r.contains("bad_host_vars.yaml:4:12"), "{r}");

    let r = parse("- a\n- b\n").unwrap_err().render();
    assert!(
        r.contains("expected an inventory mapping, found a list"),
        "{r}"
    );
    let r = parse("kind: Inventory\nspec:\n  hosts: {}\n  grups: {}\n")
        .unwrap_err()
        .render();
    assert!(
        r.contains("unknown key `grups` in `spec`") && r.contains("did you mean `groups`?"),
        "{r}"
    );
    let r = parse("kind: Inventory\nspec:\n  groups:\n    all: {hosts: []}\n")
        .unwrap_err()
        .render();
    assert!(r.contains("`all` is a reserved group"), "{r}");
    let r = parse("all:\n  hosts:\n    'bad name':\n")
        .unwrap_err()
        .render();
    assert!(r.contains("not a usable host name"), "{r}");
    let r = parse("all:\n  hosts:\n    'web[3:1]':\n")
        .unwrap_err()
        .render();
    assert!(r.contains("range start `3` is after its end `1`"), "{r}");
}

#[test]
fn ansible_details() {
    // Lists and bare names are accepted where Ansible wants a mapping; null groups are empty groups.
    let inv = parse("web:\n  hosts: [a, b]\ndb:\n  hosts: c\nempty:\n").unwrap();
    assert_eq!(inv.host_names(), ["a", "b", "c"]);
    assert_eq!(inv.groups()["web"], ["a", "b"]);
    assert!(inv.groups()["empty"].is_empty());
    // An explicit `ungrouped` (as `ansible-inventory --list --yaml` writes it).
    let inv = parse(
        "all:\n  children:\n    ungrouped:\n      hosts: {x: , y: }\n    g:\n      hosts: {y: }\n",
    )
    .unwrap();
    assert_eq!(inv.groups()["ungrouped"], ["x"]);
    assert_eq!(inv.group_names("y"), ["g"]);
    // Ranges with padding, steps and letters.
    assert_eq!(expand_ranges("n[08:10]").unwrap(), ["n08", "n09", "n10"]);
    assert_eq!(expand_ranges("n[0:10:5]x").unwrap(), ["n0x", "n5x", "n10x"]);
    assert_eq!(
        expand_ranges("[a:b][1:2]").unwrap(),
        ["a1", "a2", "b1", "b2"]
    );
    assert!(expand_ranges("n[1]").is_err());
    let inv = parse("all:\n  hosts:\n    '[fe80::1]:2222':\n    '::1':\n    'h:22': {}\n").unwrap();
    assert_eq!(inv.host_names(), ["fe80::1", "::1", "h"]);
    assert_eq!(inv.host_vars("fe80::1")["ansible_port"], json!(2222));
    assert_eq!(inv.host_vars("h")["ansible_port"], json!(22));
    assert!(parse("all:\n  hosts:\n    'h:99999':\n").is_err());
}

#[test]
fn connection_values_are_checked_at_load() {
    let bad = |text: &str, want: &str, at: &str| {
        let e = parse(text).expect_err(text);
        assert_eq!(e.exit_code(), 4, "{}", e.render());
        assert!(e.message.contains(want), "{}: {}", want, e.message);
        assert!(e.render().contains(at), "{}: {}", at, e.render());
    };
    bad(
        "kind: Inventory\nspec:\n  hosts:\n    n1: {connector: {host: 10.0.0.1, port: ssh}}\n",
        "host `n1`: `connector.port`: port \"ssh\" is not a port number",
        "inv.yaml:4:44",
    );
    bad(
        "kind: Inventory\nspec:\n  hosts:\n    n1:\n      connector:\n        port: 70000\n",
        "port 70000 is not a port number (a whole number from 1 to 65535)",
        "inv.yaml:6:15",
    );
    bad(
        "kind: Inventory\nspec:\n  hosts:\n    n1: {connector: {type: winrm}}\n",
        "unknown connection type `winrm`",
        "inv.yaml:4:28",
    );
    bad(
        "kind: Inventory\nspec:\n  vars: {ansible_port: 0}\n",
        "`spec.vars`: `ansible_port`",
        "inv.yaml:3:24",
    );
    bad(
        "all:\n  hosts:\n    h1:\n      ansible_ssh_port: [22]\n",
        "`ansible_ssh_port`",
        "inv.yaml:4:25",
    );
    bad(
        "all:\n  children:\n    web:\n      vars: {ansible_connection: docker}\n",
        "vars of group `web`: `ansible_connection`: unknown connection type `docker`",
        "inv.yaml:4:34",
    );
    bad(
        "all:\n  hosts:\n    'h1:0':\n",
        "port \"0\" is not a port number",
        "inv.yaml:3:5",
    );
    bad(
        "all:\n  hosts:\n    h1:99999:\n",
        "port \"99999\"",
        "inv.yaml:3:5",
    );
    // Good values, and templated ones (checked when rendered) load.
    let inv = parse(
        "all:\n  hosts:\n    h1: {ansible_port: \"2222\", ansible_connection: smart}\n    h2: {ansible_port: \"{{ p }}\", ansible_connection: \"{{ c }}\"}\n    h3:22:\n",
    )
    .unwrap();
    assert_eq!(inv.host_vars("h3")["ansible_port"], json!(22));
    parse("kind: Inventory\nspec:\n  hosts:\n    n1: {connector: {type: ssh, port: 22}}\n    n2: {connector: {type: local}}\n").unwrap();
}

#[test]
fn host_ranges_and_host_counts_are_capped() {
    let e = parse("all:\n  hosts:\n    h[0:999][0:999]:\n").unwrap_err();
    assert!(
        e.message.contains("more than 100000 hosts"),
        "{}",
        e.message
    );
    let e = parse("all:\n  hosts:\n    a[00000:59999]:\n    b[00000:59999]:\n").unwrap_err();
    assert!(
        e.message
            .contains("the inventory defines more than 100000 hosts"),
        "{}",
        e.message
    );
    assert!(e.render().contains("inv.yaml:4:5"), "{}", e.render());
    let inv = parse("all:\n  hosts:\n    h[0:99999]:\n").unwrap();
    assert_eq!(inv.host_names().len(), 100_000);
}

#[test]
fn long_group_chains_and_big_groups() {
    let mut text = String::from("kind: Inventory\nspec:\n  hosts:\n    h1: {}\n  groups:\n");
    for i in 0..5_000 {
        text.push_str(&format!("    g{i}: {{groups: [g{}]}}\n", i + 1));
    }
    text.push_str("    g5000: {hosts: [h1]}\n");
    let e = parse(&text).unwrap_err();
    assert!(
        e.message
            .contains("child groups nest more than 64 deep: g0 -> g1 -> g2"),
        "{}",
        e.message
    );
    assert!(e.render().contains("inv.yaml:69:"), "{}", e.render());
    let started = std::time::Instant::now();
    let inv = parse(
        "all:\n  children:\n    web:\n      hosts:\n        h[00000:49999]:\n      vars: {x: 1}\n",
    )
    .unwrap();
    assert_eq!(inv.groups()["web"].len(), 50_000);
    assert_eq!(inv.host_vars("h49999")["x"], json!(1));
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
}
