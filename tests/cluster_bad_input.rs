//! The "Bad input" for the Kubernetes install: each mistake in the inventory or the
//! config is refused by `kk create cluster` (the bundled playbooks/create_cluster.yaml, read
//! from this repository) before any host changes. For every case: exit code 2 (a host
//! failed), exactly one check failed, on the host it concerns, with a message naming the
//! host, the key, the value found and how to fix it; no task reported a change, no task
//! outside roles defaults/precheck produced a result, and every host's file listing (the
//! one tests/create_cluster.rs compares) is as it was.
//!
//! Real test hosts, because the checks read their facts and one asks the network: the
//! kube-vip address "in use" is the address of a third test host that is not in the
//! inventory (it refuses the TCP connection to port 6443 and answers ARP). The positive
//! controls (a free kube-vip address in the subnet, upstream's `kube-vip` spelling, an
//! inventory without workers) run the precheck playbook, which never writes.

use crate::common;

use common::cluster::{listing, results};
use common::{sh, Project, Run};
use testbed::TestBed;

/// The repository's playbooks (roles are found next to them).
fn playbook(name: &str) -> String {
    format!("{}/playbooks/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Inventory names of bed hosts 0 and 1; host 2 stays out of the inventory.
const NAMES: [&str; 2] = ["cp1", "w1"];

/// cp1: control plane and etcd, w1: worker.
const GROUPS: &str = "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [cp1]\n    kube_worker:\n      hosts: [w1]\n    etcd:\n      hosts: [cp1]\n";

const CONFIG: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n";

/// The inventory: hosts 0 and 1 with their IPv4 (and, with `ipv6`, their IPv6 address
/// `fd00:6b6b::1N`) and `host_vars[i]` (YAML lines indented for a host entry), then `groups`.
fn inventory(bed: &TestBed, groups: &str, ipv6: &[bool], host_vars: &[&str]) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    for (i, name) in NAMES.iter().enumerate() {
        let mut add = host_vars.get(i).copied().unwrap_or_default().to_string();
        if ipv6.get(i).copied().unwrap_or(false) {
            add.push_str(&format!("      internal_ipv6: \"fd00:6b6b::1{i}\"\n"));
        }
        let head = format!("    {name}:\n");
        let at = s.find(&head).expect("host entry") + head.len();
        s.insert_str(at, &add);
    }
    s.push_str(groups);
    s
}

/// Failed (not ignored) or unreachable results: (task, host, msg, loop item messages).
fn failures(r: &Run) -> Vec<(String, String, String)> {
    results(r)
        .into_iter()
        .filter(|(_, e)| {
            e["status"] == "unreachable" || (e["status"] == "failed" && e["ignored"] != true)
        })
        .map(|(_, e)| {
            // A failed loop reports each failed item's message in `results`.
            let mut msg = e["result"]["msg"].as_str().unwrap_or_default().to_string();
            if let Some(items) = e["result"]["results"].as_array() {
                for it in items {
                    if it["failed"] == true {
                        msg.push('\n');
                        msg.push_str(it["msg"].as_str().unwrap_or_default());
                    }
                }
            }
            (
                e["task"].as_str().unwrap_or_default().to_string(),
                e["host"].as_str().unwrap_or_default().to_string(),
                msg,
            )
        })
        .collect()
}

/// One bad input: the inventory groups (and IPv6 addresses), the config's `spec:` body, the
/// check that must refuse it, on which host, and words its message must contain.
struct Case {
    name: &'static str,
    groups: String,
    ipv6: [bool; 2],
    host_vars: [&'static str; 2],
    spec: String,
    task: &'static str,
    host: &'static str,
    words: Vec<String>,
}

/// Runs `kk run playbooks/create_cluster.yaml` with the case's inventory and config and
/// checks the refusal; `before` is every host's listing from before.
fn refused(bed: &TestBed, case: &Case, before: &[String]) -> Option<String> {
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &inventory(bed, &case.groups, &case.ipv6, &case.host_vars),
    )
    .file("config.yaml", &format!("{CONFIG}{}", case.spec));
    let started = std::time::Instant::now();
    let r = p.kk_flow(&["run", &playbook("create_cluster.yaml")], &[]);
    eprintln!(
        "cluster_bad_input: {} refused in {:.1}s",
        case.name,
        started.elapsed().as_secs_f64()
    );
    let mut problems = Vec::new();
    if r.code != 2 {
        problems.push(format!("exit code {} (want 2)", r.code));
    }
    let f = failures(&r);
    // With any_errors_fatal a check reported once fails every other host without a result
    // of its own; so the failures are exactly that check on that host.
    if f.len() != 1 || f[0].0 != case.task || f[0].1 != case.host {
        problems.push(format!(
            "expected only `{}` to fail, on {}; got {:#?}",
            case.task, case.host, f
        ));
    } else {
        let msg = &f[0].2;
        if !msg.contains(&format!("{}: ", case.host)) {
            problems.push(format!("the message does not name {}: {msg}", case.host));
        }
        for w in &case.words {
            if !msg.contains(w.as_str()) {
                problems.push(format!("{w:?} missing from: {msg}"));
            }
        }
    }
    // Nothing changed anywhere, and after the refusing check's result only other hosts'
    // results of that same check came (the plays after the precheck never started).
    let all = results(&r);
    let first_failure = all
        .iter()
        .position(|(_, e)| e["status"] == "failed")
        .unwrap_or(all.len());
    for (n, (path, e)) in all.iter().enumerate() {
        if e["changed"] == true {
            problems.push(format!("changed: {} on {} ({path})", e["task"], e["host"]));
        }
        if n > first_failure && e["task"] != case.task {
            problems.push(format!(
                "ran after the refusal: {} on {} ({path})",
                e["task"], e["host"]
            ));
        }
    }
    for (i, name) in NAMES.iter().enumerate() {
        if listing(bed, i) != before[i] {
            problems.push(format!("files on {name} changed"));
        }
    }
    if problems.is_empty() {
        None
    } else {
        Some(format!(
            "== {}: {}\n{}",
            case.name,
            problems.join("\n"),
            r.describe()
        ))
    }
}

/// Runs the precheck playbook (which never writes); it must pass.
fn passes(bed: &TestBed, label: &str, groups: &str, spec: &str) -> Run {
    let p = Project::new();
    p.file(
        "inventory.yaml",
        &inventory(bed, groups, &[false, false], &[]),
    )
    .file("config.yaml", &format!("{CONFIG}{spec}"));
    let r = p.kk_flow(&["run", &playbook("precheck.yaml")], &[]);
    assert_eq!(r.code, 0, "{label}: {:#?}\n{}", failures(&r), r.describe());
    r
}

const VIP_PROBE: &str = "kubernetes | probe whether the kube-vip address is in use";

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn create_cluster_refuses_bad_kubernetes_input_before_any_host_changes() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let ip = |i: usize| bed.hosts()[i].ip.to_string();
    // An IPv6 address on the inventory hosts, for the dual-stack cases (test setup, before
    // the listings are taken).
    for i in 0..2 {
        sh(
            &bed,
            i,
            &format!("ip -6 addr add fd00:6b6b::1{i}/64 dev eth0 nodad"),
        );
    }
    let before: Vec<String> = (0..2).map(|i| listing(&bed, i)).collect();
    let free_vip = bed.hosts()[0].ip.octets();
    let free_vip = format!("{}.{}.{}.200", free_vip[0], free_vip[1], free_vip[2]);
    let g = GROUPS.to_string();
    let vip = |addr: &str| {
        format!("  kubernetes:\n    control_plane_endpoint:\n      type: kube_vip\n      kube_vip: {{address: \"{addr}\"}}\n")
    };
    // v1.20: below the default minimum and without version defaults, both allowed, so only
    // the dual-stack rule (v1.21) is left to trip.
    let old_kube = "  cluster_require:\n    kube_version_min_required: v1.18.0\n    allow_unsupported_kube_version: true\n  kubernetes:\n    kube_version: v1.20.15\n";
    let dual = "    pod_cidr: 10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112\n    service_cidr: 10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116\n    ipv6_mask_size: 120\n";

    let cases = vec![
        Case {
            name: "unknown cni.type",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: "  cni:\n    type: weave\n".into(),
            task: "network | network plugin is supported",
            host: "cp1",
            words: s(&["cni.type \"weave\"", "cluster_require.require_network_plugin", "kubeovn", "set cni.type"]),
        },
        Case {
            name: "unknown cni.multi_cni",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: "  cni:\n    multi_cni: macvlan\n".into(),
            task: "network | multi-CNI plugin is supported",
            host: "cp1",
            words: s(&["cni.multi_cni \"macvlan\"", "(none, multus, spiderpool)", "set cni.multi_cni"]),
        },
        Case {
            name: "unknown control_plane_endpoint.type",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: "  kubernetes:\n    control_plane_endpoint: {type: nginx}\n".into(),
            task: "kubernetes | control plane endpoint type is supported",
            host: "cp1",
            words: s(&["kubernetes.control_plane_endpoint.type is \"nginx\"", "(local, kube_vip, haproxy", "set kubernetes.control_plane_endpoint.type"]),
        },
        Case {
            name: "kube-vip (upstream's spelling) without an address",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: "  kubernetes:\n    control_plane_endpoint: {type: kube-vip}\n".into(),
            task: "kubernetes | kube-vip address is a free IP address",
            host: "cp1",
            words: s(&["kubernetes.control_plane_endpoint.kube_vip.address is \"\" (not set)", "set kubernetes.control_plane_endpoint.kube_vip.address"]),
        },
        Case {
            name: "kube-vip address that is not an IP",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: vip("lb.example.com"),
            task: "kubernetes | kube-vip address is a free IP address",
            host: "cp1",
            words: s(&["\"lb.example.com\" (not an IP address)", "must be an IP address"]),
        },
        Case {
            name: "kube-vip address of a node",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: vip(&ip(1)),
            task: "kubernetes | kube-vip address is a free IP address",
            host: "cp1",
            words: vec![format!("\"{}\" (the address of a node)", ip(1)), format!("node addresses: {}", ip(0))],
        },
        Case {
            name: "kube-vip address in use on the network",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: vip(&ip(2)),
            task: "kubernetes | kube-vip address is not in use",
            host: "cp1",
            words: vec![
                format!("kube_vip.address \"{}\" is in use on the network: seen from cp1", ip(2)),
                "refused a TCP connection on port 6443".into(),
                "set kubernetes.control_plane_endpoint.kube_vip.address to a free address".into(),
            ],
        },
        Case {
            name: "kube-vip address outside the control plane's subnet",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: vip("10.254.254.254"),
            task: "kubernetes | kube-vip address is on a network of this control plane node",
            host: "cp1",
            words: vec![
                "\"10.254.254.254\" is in none of this control plane node's networks".into(),
                bed.subnet(),
                "kube_vip.mode".into(),
            ],
        },
        Case {
            name: "dual-stack on a Kubernetes without it",
            groups: g.clone(),
            ipv6: [true, true],
            host_vars: ["", ""],
            spec: format!("{old_kube}  cni:\n    type: none\n{dual}"),
            task: "network | dual-stack is supported by this Kubernetes",
            host: "cp1",
            words: s(&["cni.pod_cidr and cni.service_cidr are dual-stack", "v1.21.0", "v1.20.15", "cluster_require.dual_stack_kube_version_min_required"]),
        },
        Case {
            name: "pod and service CIDRs of different families",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: "  cni:\n    pod_cidr: 10.233.64.0/18\n    service_cidr: fd85:ee78:d8a6:8607::1000/116\n".into(),
            task: "network | pod and service CIDRs are of the same IP families",
            host: "cp1",
            words: s(&["cni.pod_cidr \"10.233.64.0/18\" is IPv4", "cni.service_cidr \"fd85:ee78:d8a6:8607::1000/116\" is IPv6", "expected the same families"]),
        },
        Case {
            name: "dual-stack cluster with a node without internal_ipv6",
            groups: g.clone(),
            ipv6: [true, false],
            host_vars: ["", ""],
            spec: format!("  cni:\n{dual}"),
            task: "network | node has an address of each pod CIDR family",
            host: "w1",
            words: s(&["has an IPv6 CIDR, but this node has no internal_ipv6", "internal_ipv6 \"\"", "set internal_ipv6 for this host"]),
        },
        Case {
            name: "control plane node outside k8s_cluster",
            groups: g.replace("groups: [kube_control_plane, kube_worker]", "groups: [kube_worker]"),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: String::new(),
            task: "kubernetes | control plane and worker hosts are in k8s_cluster",
            host: "cp1",
            words: s(&["cp1 are in kube_control_plane or kube_worker but not in k8s_cluster", "children"]),
        },
        Case {
            name: "invalid label (host var)",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["", "      kubernetes:\n        custom_labels: {\"disk type\": ssd}\n"],
            spec: "  kubernetes:\n    custom_labels: {\"node-role.example.com/infra\": \"\"}\n".into(),
            task: "kubernetes | custom labels are valid Kubernetes labels",
            host: "w1",
            words: s(&["kubernetes.custom_labels has {\"disk type\": \"ssd\"}: the key is not valid", "1-63 characters", "Fix that entry in kubernetes.custom_labels"]),
        },
        Case {
            name: "invalid taint effect (group var)",
            groups: format!("{g}    tainted:\n      hosts: [w1]\n      vars:\n        kubernetes:\n          custom_taints: [{{key: dedicated, value: infra, effect: NoSchedul}}]\n"),
            ipv6: [false, false],
            host_vars: ["", ""],
            spec: String::new(),
            task: "kubernetes | custom taints are valid Kubernetes taints",
            host: "w1",
            words: s(&["kubernetes.custom_taints has {\"key\": \"dedicated\", \"value\": \"infra\", \"effect\": \"NoSchedul\"}: the effect is not one of NoSchedule, PreferNoSchedule, NoExecute", "Fix that entry in kubernetes.custom_taints"]),
        },
        Case {
            name: "taint string without an effect (upstream's string form)",
            groups: g.clone(),
            ipv6: [false, false],
            host_vars: ["      kubernetes:\n        custom_taints: [\"dedicated=infra:NoSchedule\", \"gpu=true\"]\n", ""],
            spec: String::new(),
            task: "kubernetes | custom taints are valid Kubernetes taints",
            host: "cp1",
            words: s(&["kubernetes.custom_taints has \"gpu=true\": the effect is not one of NoSchedule, PreferNoSchedule, NoExecute", "\"key[=value]:Effect\""]),
        },
    ];

    let mut problems = Vec::new();
    for case in cases {
        if let Some(p) = refused(&bed, &case, &before) {
            problems.push(p);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));

    // Positive controls through the precheck playbook: a free address in the subnet with
    // upstream's spelling passes (and the probe found it free), as does an inventory whose
    // only node is a control plane (it is schedulable then).
    let r = passes(
        &bed,
        "free kube-vip address",
        &g,
        &format!("  kubernetes:\n    control_plane_endpoint:\n      type: kube-vip\n      kube_vip: {{address: \"{free_vip}\"}}\n"),
    );
    assert_eq!(r.result(VIP_PROBE, "cp1")["result"]["stdout"], "free");
    // On an installed cluster kube-vip itself holds the VIP, so the in-use probe is skipped:
    // a (fake, running) kubelet unit on cp1 that joined a cluster (kubelet.conf) and the
    // in-use address pass.
    sh(
        &bed,
        0,
        "printf '#!/bin/sh\\necho Kubernetes v1.33.1\\n' > /usr/local/bin/kubelet && chmod +x /usr/local/bin/kubelet \
         && printf '[Unit]\\nDescription=fake kubelet\\n[Service]\\nExecStart=/bin/sleep infinity\\n' > /etc/systemd/system/kubelet.service \
         && mkdir -p /etc/kubernetes && touch /etc/kubernetes/kubelet.conf \
         && systemctl daemon-reload && systemctl start kubelet",
    );
    let r = passes(
        &bed,
        "in-use kube-vip address on an installed cluster",
        &g,
        &format!(
            "  kubernetes:\n    kube_version: v1.33.1\n    control_plane_endpoint:\n      type: kube_vip\n      kube_vip: {{address: \"{}\"}}\n",
            ip(2)
        ),
    );
    assert_eq!(r.status(VIP_PROBE, "cp1"), "skipped");
    sh(
        &bed,
        0,
        "systemctl stop kubelet; rm -f /etc/systemd/system/kubelet.service /usr/local/bin/kubelet /etc/kubernetes/kubelet.conf; systemctl daemon-reload",
    );
    passes(
        &bed,
        "control plane only",
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane]\n    kube_control_plane:\n      hosts: [cp1]\n    etcd:\n      hosts: [cp1]\n",
        "",
    );
}
