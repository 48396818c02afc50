//! `kk run playbooks/precheck.yaml` (what `kk precheck` runs) against 3 real test hosts:
//! a healthy cluster passes every check; then each broken setup fails exactly one check, on
//! the host it concerns, with a message naming the host, the value found, the value
//! expected and the variable to change. One test bed, many inventories and configs.

use crate::common;

use common::{Project, Run};
use serde_json::Value;
use testbed::TestBed;

/// The repository's precheck playbook (roles are found next to it).
fn playbook() -> String {
    format!("{}/playbooks/precheck.yaml", env!("CARGO_MANIFEST_DIR"))
}

/// The standard groups: node1 is the control plane and the etcd host, node2/node3 workers.
const GROUPS: &str = r#"
    k8s_cluster:
      groups: [kube_control_plane, kube_worker]
    kube_control_plane:
      hosts: [node1]
    kube_worker:
      hosts: [node2, node3]
    etcd:
      hosts: [node1]
"#;

/// The config every scenario starts from: the defaults, nothing else.
const CONFIG: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n";

/// An inventory of the bed's hosts (host `i` named `names[i]`) with `groups` (YAML text
/// indented for `spec.groups`).
fn inventory(bed: &TestBed, names: &[&str], groups: &str) -> String {
    let mut s = common::bed_inventory_hosts(bed, names);
    s.push_str("  groups:");
    s.push_str(groups);
    s
}

/// Runs the precheck with this inventory and config (`spec:` body appended to [`CONFIG`]).
fn precheck(bed: &TestBed, names: &[&str], groups: &str, spec: &str, extra: &[&str]) -> Run {
    let p = Project::new();
    p.file("inventory.yaml", &inventory(bed, names, groups))
        .file("config.yaml", &format!("{CONFIG}{spec}"));
    p.kk_flow(&["run", &playbook()], extra)
}

/// [`precheck`] with each host also given its IPv6 address (`fd00:6b6b::1N`, which
/// [`add_ipv6`] put on it) as `internal_ipv6`: a dual-stack cluster needs one per node.
fn precheck_dual(bed: &TestBed, spec: &str, extra: &[&str]) -> Run {
    let mut inv = inventory(bed, &NODES, GROUPS);
    for (i, name) in NODES.iter().enumerate() {
        let head = format!("    {name}:\n");
        let at = inv.find(&head).expect("host entry") + head.len();
        inv.insert_str(at, &format!("      internal_ipv6: \"fd00:6b6b::1{i}\"\n"));
    }
    let p = Project::new();
    p.file("inventory.yaml", &inv)
        .file("config.yaml", &format!("{CONFIG}{spec}"));
    p.kk_flow(&["run", &playbook()], extra)
}

/// Puts an IPv6 address, `fd00:6b6b::1N/64`, on each host's eth0.
fn add_ipv6(bed: &TestBed) {
    for i in 0..NODES.len() {
        common::sh(
            bed,
            i,
            &format!("ip -6 addr replace fd00:6b6b::1{i}/64 dev eth0 nodad"),
        );
    }
}

/// Every failed (not ignored) or unreachable result: (task, host, msg).
fn failures(r: &Run) -> Vec<(String, String, String)> {
    r.events()
        .into_iter()
        .filter(|e| {
            e["event"] == "host_result"
                && (e["status"] == "unreachable"
                    || (e["status"] == "failed" && e["ignored"] != Value::Bool(true)))
        })
        .map(|e| {
            (
                e["task"].as_str().unwrap_or_default().to_string(),
                e["host"].as_str().unwrap_or_default().to_string(),
                e["result"]["msg"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Asserts that exactly one check failed: `task` on `host`, with every `words` in its message.
fn fails_once(label: &str, r: &Run, task: &str, host: &str, words: &[&str]) {
    let f = failures(r);
    assert_eq!(
        f.len(),
        1,
        "{label}: expected only `{task}` to fail on {host}, got {f:#?}\n{}",
        r.describe()
    );
    let (t, h, msg) = &f[0];
    assert_eq!(
        (t.as_str(), h.as_str()),
        (task, host),
        "{label}: wrong check or host: {msg}"
    );
    assert!(
        msg.starts_with(&format!("{host}: ")),
        "{label}: the message names the host first: {msg}"
    );
    for w in words {
        assert!(msg.contains(w), "{label}: {w:?} missing from: {msg}");
    }
    assert_eq!(
        r.code,
        2,
        "{label}: a failed host exits 2\n{}",
        r.describe()
    );
}

/// Names of the tasks that produced a result on some host.
fn tasks_run(r: &Run) -> Vec<String> {
    let mut v: Vec<String> = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "host_result")
        .filter_map(|e| e["task"].as_str().map(str::to_string))
        .collect();
    v.dedup();
    v
}

const NODES: [&str; 3] = ["node1", "node2", "node3"];

#[test]
fn precheck_passes_healthy_hosts_and_fails_each_broken_setup_on_its_own_host() {
    let bed = TestBed::start(3).expect("boot test hosts");

    // --- healthy: every check passes, with a summary per host -------------------------------
    let r = precheck(&bed, &NODES, GROUPS, "", &[]);
    r.code(0);
    assert!(failures(&r).is_empty());
    for h in NODES {
        assert_eq!(r.recap(h)["failed"], 0, "{}", r.describe());
        let summary = r.msg("precheck | summary", h);
        let s = summary.as_str().unwrap_or_default();
        assert!(
            s.starts_with(h) && s.contains("Debian") && s.contains("all checks passed"),
            "{s}"
        );
    }
    assert_eq!(
        r.status("os | memory of a control plane node", "node1"),
        "ok"
    );
    assert_eq!(r.status("os | memory of a worker node", "node2"), "ok");
    assert_eq!(r.status("os | memory of a worker node", "node1"), "skipped");
    assert_eq!(
        r.status(
            "network | internal_ipv4 is assigned to an interface",
            "node3"
        ),
        "ok"
    );
    assert_eq!(
        r.status("cri | containerd version is recent enough", "node1"),
        "ok"
    );
    // Cluster-wide checks report once.
    let once: Vec<_> = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["task"] == "network | pod CIDR is valid")
        .collect();
    assert_eq!(once.len(), 1, "{once:?}");
    // fio measured node1's disk (the only etcd host) and left nothing behind.
    assert_eq!(r.status("etcd | measure the disk with fio", "node1"), "ok");
    assert_eq!(
        r.status("etcd | measure the disk with fio", "node2"),
        "skipped"
    );
    let lat = r.msg("etcd | disk fdatasync latency is low enough", "node1");
    assert!(
        lat.as_str()
            .unwrap_or_default()
            .contains("p90 fdatasync latency"),
        "{lat}"
    );
    let left = bed.ssh(0, "test -e /tmp/kubekey && echo /tmp/kubekey is left");
    assert!(left.stdout.is_empty(), "fio left files behind: {:?}", left);

    // --- --tags os: only the os checks (plus defaults, facts and the summary) run ----------
    let r = precheck(&bed, &NODES, GROUPS, "", &["--tags", "os"]);
    r.code(0);
    let ran = tasks_run(&r);
    assert!(ran.iter().any(|t| t.starts_with("os | ")), "{ran:?}");
    for t in &ran {
        let area = t.split(" | ").next().unwrap_or_default();
        assert!(
            ![
                "network",
                "kubernetes",
                "etcd",
                "cri",
                "nfs",
                "image_registry",
                "storage",
                "storageclass",
                "artifact",
            ]
            .contains(&area),
            "`{t}` ran under --tags os"
        );
    }
    assert!(r
        .msg("precheck | summary", "node2")
        .as_str()
        .unwrap()
        .contains("the os checks passed"));

    // --- one broken setup at a time --------------------------------------------------------
    let r = precheck(
        &bed,
        &["node1", "Node_2", "node3"],
        &GROUPS.replace("node2", "Node_2"),
        "",
        &[],
    );
    fails_once(
        "invalid hostname",
        &r,
        "os | inventory name is a valid hostname",
        "Node_2",
        &["\"Node_2\"", "RFC 1123", "native.set_hostname"],
    );

    let groups = format!(
        "{GROUPS}    legacy:\n      hosts: [node2]\n      vars:\n        cluster_require:\n          supported_os_distributions: [ubuntu, centos]\n"
    );
    let r = precheck(&bed, &NODES, &groups, "", &[]);
    fails_once(
        "unsupported OS",
        &r,
        "os | distribution is supported",
        "node2",
        &[
            "\"debian\"",
            "(ubuntu, centos)",
            "cluster_require.supported_os_distributions",
        ],
    );

    let groups = format!(
        "{GROUPS}    small:\n      hosts: [node3]\n      vars:\n        cluster_require:\n          minimal_node_memory_mb: 99999999\n"
    );
    let r = precheck(&bed, &NODES, &groups, "", &[]);
    fails_once(
        "too little memory",
        &r,
        "os | memory of a worker node",
        "node3",
        &[
            "MB of memory is below",
            "cluster_require.minimal_node_memory_mb (99999999 MB)",
        ],
    );

    let groups = GROUPS.replace(
        "etcd:\n      hosts: [node1]",
        "etcd:\n      hosts: [node1, node2]",
    );
    let r = precheck(&bed, &NODES, &groups, "", &[]);
    fails_once(
        "even etcd group",
        &r,
        "etcd | external etcd group has an odd number of hosts",
        "node1",
        &["has 2 hosts (node1, node2)", "odd number"],
    );

    let r = precheck(
        &bed,
        &NODES,
        GROUPS,
        "  cni:\n    pod_cidr: 10.233.64.0/33\n",
        &[],
    );
    fails_once(
        "bad pod CIDR",
        &r,
        "network | pod CIDR is valid",
        "node1",
        &["cni.pod_cidr is \"10.233.64.0/33\"", "expected one CIDR"],
    );

    // v1.20 is below the minimum and has no version defaults: both are allowed here, so that
    // only the dual-stack rule (on by default from v1.21) is left to trip. The nodes have
    // IPv6 addresses, which a dual-stack cluster needs.
    add_ipv6(&bed);
    let spec = "  cluster_require:\n    kube_version_min_required: v1.18.0\n    allow_unsupported_kube_version: true\n  kubernetes:\n    kube_version: v1.20.15\n  cni:\n    pod_cidr: 10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112\n    ipv6_mask_size: 120\n";
    let r = precheck_dual(&bed, spec, &[]);
    fails_once(
        "dual-stack on old Kubernetes",
        &r,
        "network | dual-stack is supported by this Kubernetes",
        "node1",
        &[
            "cni.pod_cidr is dual-stack",
            "v1.21.0",
            "v1.20.15",
            "cluster_require.dual_stack_kube_version_min_required",
        ],
    );
    // Without internal_ipv6 every node is refused: it would have no IPv6 node IP.
    let r = precheck(&bed, &NODES, GROUPS, spec, &[]);
    let f = failures(&r);
    assert_eq!(f.len(), 3, "{f:#?}");
    for ((task, host, msg), want) in f.iter().zip(NODES) {
        assert_eq!(
            (task.as_str(), host.as_str()),
            (
                "network | node has an address of each pod CIDR family",
                want
            )
        );
        assert!(msg.contains("this node has no internal_ipv6"), "{msg}");
    }

    let r = precheck(&bed, &NODES, GROUPS, "  cni:\n    type: weave\n", &[]);
    fails_once(
        "unsupported CNI",
        &r,
        "network | network plugin is supported",
        "node1",
        &[
            "cni.type \"weave\"",
            "cluster_require.require_network_plugin",
            "kubeovn",
        ],
    );

    let groups = format!("{GROUPS}    nfs:\n      hosts: [node2, node3]\n");
    let r = precheck(&bed, &NODES, &groups, "", &[]);
    fails_once(
        "two NFS servers",
        &r,
        "nfs | exactly one NFS server",
        "node2",
        &["nfs has 2 hosts (node2, node3)", "exactly one"],
    );

    let groups = format!("{GROUPS}    image_registry:\n      hosts: [node3]\n");
    let spec = "  cri:\n    docker_version: \"\"\n  image_registry:\n    type: docker-registry\n    docker_registry_version: 2.8.3\n    dockercompose_version: v2.20.3\n";
    let r = precheck(&bed, &NODES, &groups, spec, &[]);
    fails_once(
        "registry without docker_version",
        &r,
        "image_registry | docker version is set",
        "node3",
        &["image_registry group", "cri.docker_version is not set"],
    );

    // --- an earlier installation on node2: a fake kubelet (a script printing a version, and a
    // unit running `sleep`) of a node that joined a cluster (kubelet.conf), first stopped,
    // then running the wrong version ----------------------------------------------------------
    let fake = bed.ssh(
        1,
        "printf '#!/bin/sh\\necho Kubernetes v1.33.1\\n' > /usr/local/bin/kubelet && chmod +x /usr/local/bin/kubelet \
         && printf '[Unit]\\nDescription=fake kubelet\\n[Service]\\nExecStart=/bin/sleep infinity\\n' > /etc/systemd/system/kubelet.service \
         && mkdir -p /etc/kubernetes && touch /etc/kubernetes/kubelet.conf && systemctl daemon-reload",
    );
    assert!(fake.status.success(), "{fake:?}");
    let r = precheck(&bed, &NODES, GROUPS, "", &[]);
    fails_once(
        "installed kubelet not running",
        &r,
        "kubernetes | installed kubelet is active",
        "node2",
        &["ActiveState is \"inactive\"", "expected \"active\""],
    );
    bed.ssh(1, "systemctl start kubelet");
    let r = precheck(
        &bed,
        &NODES,
        GROUPS,
        "  kubernetes:\n    kube_version: v1.34.3\n",
        &[],
    );
    fails_once(
        "installed kubelet of another version",
        &r,
        "kubernetes | installed kubelet is the configured version",
        "node2",
        &[
            "Kubernetes \"v1.33.1\" is already installed",
            "kubernetes.kube_version is \"v1.34.3\"",
        ],
    );
    bed.ssh(
        1,
        "systemctl stop kubelet; rm -f /etc/systemd/system/kubelet.service /usr/local/bin/kubelet /etc/kubernetes/kubelet.conf; systemctl daemon-reload",
    );

    // --- upstream bugs fixed -----------------------------------------------------------------
    // cni.type kubeovn is accepted (upstream's list said 'kube-ovn').
    let r = precheck(
        &bed,
        &NODES,
        GROUPS,
        "  cni:\n    type: kubeovn\n    kubeovn_version: v1.15.0\n",
        &[],
    );
    r.code(0);
    // The node address must match exactly: the bridge's x.x.x.1 is a substring of node1's
    // x.x.x.11, which upstream's `grep -q` accepted.
    let p = Project::new();
    let inv = inventory(&bed, &NODES, GROUPS).replacen(
        &format!("internal_ipv4: {}\n", bed.hosts()[0].ip),
        &format!("internal_ipv4: {}\n", bed.bridge_ip()),
        1,
    );
    p.file("inventory.yaml", &inv).file("config.yaml", CONFIG);
    let pb = playbook();
    let r = p.kk(&[
        "run",
        &pb,
        "-i",
        "inventory.yaml",
        "-c",
        "config.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ]);
    fails_once(
        "address on no interface",
        &r,
        "network | internal_ipv4 is assigned to an interface",
        "node1",
        &[
            &format!("internal_ipv4 \"{}\"", bed.bridge_ip()),
            &format!("expected one of: {}", bed.hosts()[0].ip),
        ],
    );
    // The IPv6 pod range per node is sized by ipv6_mask_size (upstream used ipv4_mask_size):
    // /121 holds 126 pods < 250, while the IPv4 /24 (254) is fine. Checked on every k8s host,
    // since max_pods may differ per group.
    let spec = "  kubernetes:\n    kubelet:\n      max_pods: 250\n  cni:\n    pod_cidr: 10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112\n    ipv6_mask_size: 121\n";
    let r = precheck_dual(&bed, spec, &[]);
    let f = failures(&r);
    assert_eq!(f.len(), 3, "{f:#?}");
    for ((task, host, msg), want) in f.iter().zip(NODES) {
        assert_eq!(
            (task.as_str(), host.as_str()),
            ("network | IPv6 pod range per node holds max_pods", want)
        );
        assert!(
            msg.contains("/121 per-node IPv6 pod range (cni.ipv6_mask_size) holds only 126 pods"),
            "{msg}"
        );
    }

    // The local PV provisioner minimum applies when the local class is enabled (upstream
    // checked it only when the NFS class was).
    let r = precheck(
        &bed,
        &NODES,
        GROUPS,
        "  storage_class:\n    local:\n      enabled: true\n    nfs:\n      enabled: false\n    localpv_provisioner_version: 3.5.0\n",
        &[],
    );
    fails_once(
        "old local PV provisioner",
        &r,
        "storageclass | local PV provisioner version is supported",
        "node1",
        &[
            "\"3.5.0\"",
            "4.0.0",
            "cluster_require.localpv_provisioner_min_version",
        ],
    );

    // --- fio: a slow disk fails node1; without fio the check says it was skipped ----------
    let spec = "  cluster_require:\n    etcd_disk_wal_fysnc_duration_seconds: 1\n";
    let r = precheck(&bed, &NODES, GROUPS, spec, &["--tags", "etcd"]);
    fails_once(
        "slow etcd disk",
        &r,
        "etcd | disk fdatasync latency is low enough",
        "node1",
        &[
            "90th percentile fdatasync latency",
            "cluster_require.etcd_disk_wal_fysnc_duration_seconds (1 ns)",
        ],
    );
    let hide = bed.ssh(0, "mv /usr/bin/fio /usr/bin/fio.hidden");
    assert!(hide.status.success(), "{hide:?}");
    let r = precheck(&bed, &NODES, GROUPS, "", &["--tags", "etcd"]);
    r.code(0);
    assert_eq!(
        r.status("etcd | measure the disk with fio", "node1"),
        "skipped"
    );
    let said = r.msg(
        "etcd | fio is not installed, disk latency check skipped",
        "node1",
    );
    assert!(
        said.as_str()
            .unwrap_or_default()
            .contains("node1: fio is not installed"),
        "{said}"
    );
    bed.ssh(0, "mv /usr/bin/fio.hidden /usr/bin/fio");

    // --- engine: a remote exit code 127 ("not found", as from `kubelet --version` on a host
    // without kubelet) is a failed command, not a lost connection ---------------------------
    let p = Project::new();
    p.file("inventory.yaml", &inventory(&bed, &NODES, GROUPS)).file(
        "site.yaml",
        "- hosts: node1\n  gather_facts: false\n  tasks:\n    - shell: command -v kk-no-such-command\n      register: r\n      failed_when: false\n    - assert: {that: [\"r.rc == 127\"]}\n",
    );
    let r = p.kk(&[
        "run",
        "site.yaml",
        "-i",
        "inventory.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ]);
    r.code(0);
}
