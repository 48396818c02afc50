//! `kk add nodes` (the bundled playbooks/add_nodes.yaml) end to end on four real test hosts:
//! `kk create cluster` on kk-cp1 (control plane and the external etcd's only member) and
//! kk-w1 (worker), Kubernetes v1.30.8, cilium; then the inventory gains kk-w2 (a worker and
//! etcd host) and kk-e2 (an etcd host; etcd groups stay odd, the precheck wants that) and
//! add_nodes runs with `add_nodes: [kk-w2, kk-e2]`: each joins etcd as a learner and is
//! promoted before the next one joins (real etcd: `etcdctl member list` before and after),
//! kube-apiserver on kk-cp1 is pointed at the three members (FAKE kubeadm phases),
//! kk-w2 gets containerd and joins (FAKE kubeadm journal), nothing is initialised again, and
//! the nodes that were there change only /etc/hosts, the etcd membership record and
//! snapshot, kube-apiserver's etcd endpoints, the join token and the kubeadm config backup.
//! Then `kk certs renew` (playbooks/certs_renew.yaml): every etcd member serves a new
//! certificate from the same CA (openssl s_client: serial, dates, verification), restarted
//! one at a time and healthy, its data kept; `kubeadm certs renew all` (FAKE) on kk-cp1.
//!
//! Real: kk over SSH, etcd 3.5.16, containerd 1.7.24, runc, the CNI plugins, every file the
//! roles write. FAKES (tests/fakes; nothing here can run an API server): kubeadm, kubelet,
//! kubectl, helm, crictl and the charts.

mod common;

use std::collections::BTreeMap;

use common::cluster::{
    config_downloads_and_native, config_etcd_and_containerd, failures, inits, kube_calls, line,
    results, serve_cluster,
};
use common::fakes::{self, FakeArtifacts};
use common::{sh, Project};
use serde_json::Value;
use testbed::TestBed;

/// Hosts 0..3 of the bed; the first two make the cluster, the last two are added.
const NAMES: [&str; 4] = ["kk-cp1", "kk-w1", "kk-w2", "kk-e2"];
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CILIUM: &str = "1.18.7";
const LOCALPV: &str = "4.4.0";

/// The inventory before (`added` false) and after the new hosts were written into it.
fn inventory(bed: &TestBed, added: bool) -> String {
    let (n, workers, etcd) = if added {
        (4, "[kk-w1, kk-w2]", "[kk-cp1, kk-w2, kk-e2]")
    } else {
        (2, "[kk-w1]", "[kk-cp1]")
    };
    let mut s = common::bed_inventory_hosts(bed, &NAMES[..n]);
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: {}\n    etcd:\n      hosts: {}\n",
        workers, etcd
    ));
    s
}

fn config(p: &Project, mirror: &str, sums: &BTreeMap<&str, String>, fa: &FakeArtifacts) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes:
    kube_version: {kube}
    control_plane_endpoint: {{type: local}}
{etcd_cri}  cni:
    type: cilium
    cni_plugins_version: v1.1.1
{tail}"#,
        kube = KUBE,
        etcd_cri = config_etcd_and_containerd(),
        tail = config_downloads_and_native(&p.path("artifacts.yaml"), mirror, sums, fa),
    )
}

/// `(name, is_learner)` of each etcd member, sorted, as kk-cp1's member sees them.
fn members(bed: &TestBed) -> Vec<(String, bool)> {
    let out = sh(
        bed,
        0,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key member list -w json",
            bed.hosts()[0].ip
        ),
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{}: {}", e, out));
    let mut m: Vec<(String, bool)> = v["members"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", out))
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default().to_string(),
                m["isLearner"] == true,
            )
        })
        .collect();
    m.sort();
    m
}

/// The cluster-changing calls of the FAKE tools, without the kubeadm phases
/// (sync-etcd-config's upload-config and control-plane apiserver run on kk-cp1).
fn installs(j: &[Value]) -> Vec<String> {
    kube_calls(j)
        .into_iter()
        .filter(|c| !c.starts_with("kubeadm init phase"))
        .collect()
}

#[test]
fn add_nodes_joins_an_etcd_member_and_a_worker_and_leaves_the_others_alone() {
    let bed = TestBed::start(4).expect("boot test hosts");
    let p = Project::new();
    let (srv, sums, fa) = serve_cluster(
        &p,
        KUBE,
        HELM,
        &[("cilium", CILIUM), ("localpv_provisioner", LOCALPV)],
        false,
    );
    p.file("config.yaml", &config(&p, &srv.url(""), &sums, &fa))
        .file("inventory.yaml", &inventory(&bed, false));

    // 1. The cluster: one control plane with the only etcd member, one worker.
    let t = std::time::Instant::now();
    let r = p.kk_flow(&["create", "cluster"], &[]);
    eprintln!("create cluster: {:?}", t.elapsed());
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    assert_eq!(members(&bed), vec![("kk-cp1".to_string(), false)]);
    sh(
        &bed,
        0,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key put kk-add kept",
            bed.hosts()[0].ip
        ),
    );
    let before: Vec<Vec<String>> = (0..2).map(|i| installs(&fakes::journal(&bed, i))).collect();

    // kube-apiserver cannot run here: a plain listener on kk-cp1's port 6443 stands in for
    // it, for sync-etcd-config's wait after the FAKE `kubeadm init phase control-plane`.
    sh(
        &bed,
        0,
        "systemd-run --unit kk-test-apiserver python3 -m http.server 6443 --bind 127.0.0.1",
    );

    // 2. kk-w2 (worker and etcd) and kk-e2 (etcd) added.
    p.file("inventory.yaml", &inventory(&bed, true));
    let r = p.kk_flow(
        &[
            "run",
            concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/add_nodes.yaml"),
        ],
        &["-e", r#"{"add_nodes": ["kk-w2", "kk-e2"]}"#],
    );
    eprintln!("add nodes: {:?}", t.elapsed());
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    let res = results(&r);

    // etcd: kk-e2 joined as a learner, was promoted, holds the data.
    assert_eq!(
        members(&bed),
        ["kk-cp1", "kk-e2", "kk-w2"]
            .iter()
            .map(|n| (n.to_string(), false))
            .collect::<Vec<_>>()
    );
    // One at a time: kk-w2 is added and promoted before kk-e2 is added (serial 1).
    let steps: Vec<String> = res
        .iter()
        .filter(|(path, e)| path.contains("scaling_up/") && e["changed"] == true)
        .map(|(path, e)| {
            let step = if path.contains("learner") {
                "learner"
            } else {
                "promote"
            };
            format!("{} {}", step, e["host"].as_str().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        steps,
        [
            "learner kk-w2",
            "promote kk-w2",
            "learner kk-e2",
            "promote kk-e2"
        ],
        "{:#?}",
        res.iter()
            .filter(|(p, _)| p.contains("scaling_up/"))
            .map(|(p, e)| line(p, e))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        sh(
            &bed,
            3,
            &format!(
                "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
                 --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key get kk-add --print-value-only",
                bed.hosts()[3].ip
            )
        ),
        "kept"
    );

    // kube-apiserver on kk-cp1 now uses both members (sync-etcd-config, FAKE kubeadm).
    let cfg = sh(&bed, 0, "cat /etc/kubernetes/kubeadm-config.yaml");
    for i in [0, 2, 3] {
        let ep = format!("https://{}:2379", bed.hosts()[i].ip);
        assert!(cfg.contains(&ep), "{} missing from {}", ep, cfg);
    }

    // kk-w2: containerd running, joined as a worker; kk-e2 is no Kubernetes node.
    let j: Vec<Vec<Value>> = (0..4).map(|i| fakes::journal(&bed, i)).collect();
    assert_eq!(sh(&bed, 2, "systemctl is-active containerd"), "active");
    let joins = fakes::calls(&j[2], "kubeadm", &["join"]);
    assert_eq!(joins.len(), 1, "{:#?}", j[2]);
    assert_eq!(joins[0]["exit"], 0, "{}", joins[0]);
    assert!(j[3].is_empty(), "FAKE tools ran on kk-e2: {:#?}", j[3]);
    assert!(
        sh(&bed, 3, "test -e /etc/kubernetes || echo none") == "none",
        "kk-e2 got Kubernetes files"
    );

    // Nothing initialised or joined again on the nodes that were there.
    let after: Vec<Vec<String>> = (0..2).map(|i| installs(&j[i])).collect();
    assert_eq!(after, before, "the old nodes initialised or joined again");
    assert!(inits(&j[2]).is_empty() && inits(&j[0]).len() == 1);
    // What the old nodes may change: /etc/hosts learns the new names (native/dns), kk-cp1's
    // etcd snapshot and membership record, kube-apiserver's etcd endpoints, the bootstrap
    // token for the join, the kubeadm config backup of the post-install hook.
    let allowed = [
        "roles/native/dns/",
        "roles/etcd/backup/tasks/snapshot.yaml",
        "roles/etcd/postprocess/",
        "roles/kubernetes/sync-etcd-config/",
        "roles/kubernetes/init-kubernetes/tasks/credentials.yaml",
        "playbooks/hook/post_install.yaml",
    ];
    let changed: Vec<String> = res
        .iter()
        .filter(|(path, e)| {
            e["changed"] == true
                && (e["host"] == "kk-cp1" || e["host"] == "kk-w1")
                && !allowed.iter().any(|a| path.contains(a))
        })
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(changed.is_empty(), "old nodes changed: {:#?}", changed);

    // 3. kk certs renew: every etcd member serves a new certificate from the same CA (real
    // etcd), restarted one at a time and healthy, its data intact; the control plane renews
    // through the FAKE kubeadm.
    let served: Vec<String> = [0, 2, 3].iter().map(|&i| served_cert(&bed, i)).collect();
    let t = std::time::Instant::now();
    let r = p.kk_flow(
        &[
            "run",
            concat!(env!("CARGO_MANIFEST_DIR"), "/playbooks/certs_renew.yaml"),
        ],
        &[],
    );
    eprintln!("certs renew: {:?}", t.elapsed());
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    for (k, &i) in [0, 2, 3].iter().enumerate() {
        let now = served_cert(&bed, i);
        assert_ne!(now, served[k], "{} serves the same certificate", NAMES[i]);
        assert!(
            now.contains("issuer=CN = root") || now.contains("issuer=CN=root"),
            "{}",
            now
        );
        // Verified against the CA the hosts have (certs/init's root.crt: the same CA).
        let verify = sh(
            &bed,
            0,
            &format!(
                "echo | openssl s_client -connect {}:2379 -CAfile /etc/ssl/etcd/ssl/ca.crt \
                 -cert /etc/ssl/etcd/ssl/client.crt -key /etc/ssl/etcd/ssl/client.key 2>&1 \
                 | grep -o 'Verify return code: .*' | sort -u",
                bed.hosts()[i].ip
            ),
        );
        assert_eq!(verify, "Verify return code: 0 (ok)", "{}", NAMES[i]);
        // New validity dates too (made minutes after the first ones).
        let dates = |c: &str| {
            c.lines()
                .filter(|l| l.starts_with("not"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_ne!(dates(&now), dates(&served[k]), "{}", now);
    }
    let health = sh(
        &bed,
        0,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key endpoint health --cluster 2>&1",
            bed.hosts()[0].ip
        ),
    );
    assert_eq!(health.matches("is healthy").count(), 3, "{}", health);
    assert_eq!(members(&bed).len(), 3);
    // One member restarted at a time: each restart is followed by its health wait before the
    // next host's restart.
    let order: Vec<String> = results(&r)
        .iter()
        .filter(|(path, e)| path.contains("certs/renew/etcd") && e["status"] != "skipped")
        .filter(|(_, e)| {
            let t = e["task"].as_str().unwrap_or_default();
            t.contains("Restart") || t.contains("healthy")
        })
        .map(|(_, e)| {
            format!(
                "{} {}",
                e["task"].as_str().unwrap_or_default(),
                e["host"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(order.len(), 6, "{:#?}", order);
    for pair in order.chunks(2) {
        assert!(
            pair[0].contains("Restart") && pair[1].contains("healthy"),
            "{:#?}",
            order
        );
        assert_eq!(
            pair[0].rsplit(' ').next(),
            pair[1].rsplit(' ').next(),
            "{:#?}",
            order
        );
    }
    let renews = fakes::calls(
        &fakes::journal(&bed, 0),
        "kubeadm",
        &["certs", "renew", "all"],
    )
    .len();
    assert_eq!(renews, 1, "kubeadm certs renew all on kk-cp1");
    for i in 1..4 {
        assert!(fakes::calls(&fakes::journal(&bed, i), "kubeadm", &["certs"]).is_empty());
    }
    assert!(sh(&bed, 0, "cat /root/.kube/config").contains("kind: Config"));
    assert!(std::fs::read_to_string(p.path("wd/kubeconfig"))
        .unwrap()
        .contains("kind: Config"));
}

/// The serial, issuer and dates of the certificate etcd on host `i` serves (from kk-cp1).
fn served_cert(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        0,
        &format!(
            "echo | openssl s_client -connect {}:2379 -cert /etc/ssl/etcd/ssl/client.crt \
             -key /etc/ssl/etcd/ssl/client.key 2>/dev/null | openssl x509 -noout -serial -issuer -dates",
            bed.hosts()[i].ip
        ),
    )
}
