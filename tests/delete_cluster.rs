//! The delete playbooks end to end on three real test hosts: `kk create cluster` (1 control
//! plane kk-cp1, 1 worker kk-w1 and kk-e1, the three members of the external etcd; Kubernetes v1.30.8,
//! cilium, containerd), then `kk delete nodes kk-w1 --all --with-data` removes the worker
//! (its etcd member removed through kk-cp1's, which keeps its data; kube-apiserver's etcd
//! endpoints rewritten on kk-cp1 through the FAKE kubeadm; cordoned, drained and deleted
//! through the FAKE kubectl on kk-cp1; its Kubernetes, runtime and etcd uninstalled), then `kk delete cluster --all --with-data` (delete.cri, etcd, dns,
//! image_registry, data) removes the rest. Each host is
//! then compared with what it was before the create — its files outside /var/log and /tmp,
//! its systemd unit files and their states, its processes and its listening sockets — and
//! every difference is printed; any fails the test. Deleting again changes nothing, and a
//! delete of the last control plane is refused before anything changes.
//!
//! What runs for real: kk over SSH, etcd 3.5.16 and containerd 1.7.24 (started, then stopped
//! and removed), every file written and removed, the units, links and mounts. FAKES (see
//! tests/fakes): kubeadm (its `reset -f` is recorded), kubelet, kubectl (cordon, drain,
//! delete node), helm, crictl and the charts. The fakes' own journal (/var/lib/kk-fakes) is
//! the only thing the comparison leaves out besides the logs.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cluster::{
    config_downloads_and_native, config_etcd_and_containerd, failures, line, results, serve_cluster,
};
use common::fakes::{self, FakeArtifacts};
use common::{sh, Project, Run};
use testbed::TestBed;

const NAMES: [&str; 3] = ["kk-cp1", "kk-w1", "kk-e1"];
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CILIUM: &str = "1.18.7";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-w1]\n    etcd:\n      hosts: [kk-cp1, kk-w1, kk-e1]\n",
    );
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
{etcd_cri}  cni:
    type: cilium
    cni_plugins_version: v1.1.1
  storage_class:
    local: {{enabled: false}}
{tail}"#,
        kube = KUBE,
        etcd_cri = config_etcd_and_containerd(),
        tail = config_downloads_and_native(&p.path("artifacts.yaml"), mirror, sums, fa),
    )
}

/// What a fresh host is, for the comparison: every file outside /var/log, /tmp and the
/// virtual file systems (type and mode, and the content digest of /etc/hosts, without the
/// 127.0.1.1 line of the hostname kk set, and of /etc/fstab), the unit files with their state, the failed units, the running processes
/// (by name, the ssh session's own left out) and the listening sockets.
fn state(bed: &TestBed, i: usize) -> Vec<String> {
    let out = sh(
        bed,
        i,
        r#"set -e
# kk's per-connection reaper (a `sleep 1` loop) outlives a run by up to a second.
i=0; while pgrep -x sleep >/dev/null && [ $i -lt 30 ]; do sleep 0.2; i=$((i+1)); done
find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
  -o -path /var/log -o -path /var/tmp -o -path /var/lib/kk-fakes -o -path /var/cache -o -path /var/lib/systemd/random-seed \
  -o -path /var/lib/systemd/journal \) -prune -o -printf 'file %p %y %m\n' | LC_ALL=C sort
for f in /etc/hosts /etc/fstab; do echo "content $f $(grep -Ev '^127[.]0[.]1[.]1[[:space:]]' $f | sha256sum | cut -c1-16)"; done
systemctl list-unit-files --no-legend --no-pager | awk '{ print "unit", $1, $2 }' | LC_ALL=C sort
systemctl list-units --failed --all --no-legend --plain --no-pager | awk '{ print "failed", $1 }'
ps -e -o comm= | grep -Ev '^(ps|sh|bash|sshd|sort|grep|awk|find|systemctl|sha256sum|cut|uniq|\(sd-pam\)|kworker.*)$' | LC_ALL=C sort | uniq -c | awk '{ print "process", $2, "x" $1 }'
ss -Hlntu | awk '{ print "listen", $1, $5 }' | LC_ALL=C sort
ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link", $2 }'
ip -o addr show | awk '{ print "addr", $2, $4 }'
"#,
    );
    out.lines().map(str::to_string).collect()
}

/// For a difference's message: the host's /etc/hosts and processes.
fn detail(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "echo '--- /etc/hosts'; cat /etc/hosts; echo '--- processes'; ps -eo pid,ppid,etimes,args",
    )
}

/// etcdctl on a host, with the client certificate kk installed.
fn etcdctl(bed: &TestBed) -> String {
    format!(
        "ETCDCTL_API=3 /usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
         --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key",
        bed.hosts()[0].ip
    )
}

/// The lines only in `before` (-) or only in `after` (+).
fn diff(before: &[String], after: &[String]) -> Vec<String> {
    let (b, a): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (before.iter().collect(), after.iter().collect());
    b.difference(&a)
        .map(|l| format!("- {}", l))
        .chain(a.difference(&b).map(|l| format!("+ {}", l)))
        .collect()
}

fn run(p: &Project, playbook: &str, extra: &str) -> Run {
    let pb = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("playbooks")
        .join(playbook);
    p.kk_flow(&["run", pb.to_str().unwrap()], &["-e", extra])
}

fn changed(r: &Run) -> Vec<String> {
    results(r)
        .iter()
        .filter(|(_, e)| e["changed"] == true)
        .map(|(path, e)| line(path, e))
        .collect()
}

#[test]
fn delete_nodes_then_delete_cluster_leaves_fresh_hosts() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = Project::new();
    let (srv, sums, fa) = serve_cluster(&p, KUBE, HELM, &[("cilium", CILIUM)], false);
    p.file("config.yaml", &config(&p, &srv.url(""), &sums, &fa))
        .file("inventory.yaml", &inventory(&bed));
    let fresh: Vec<Vec<String>> = (0..3).map(|i| state(&bed, i)).collect();

    let t = std::time::Instant::now();
    let r = p.kk_flow(&["create", "cluster"], &[]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    eprintln!("create cluster: {:.0}s", t.elapsed().as_secs_f64());
    assert_eq!(
        sh(&bed, 1, "systemctl is-active kubelet containerd"),
        "active\nactive"
    );

    // Deleting the only control plane is refused before anything changes.
    let t = std::time::Instant::now();
    let r = run(&p, "delete_nodes.yaml", r#"{"delete_nodes": ["kk-cp1"]}"#);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout.contains("would leave no control plane node"),
        "{}",
        r.describe()
    );
    assert!(changed(&r).is_empty(), "{:#?}", changed(&r));
    let r = p.kk_flow(&["delete", "nodes", "kk-cp1", "--yes"], &[]);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert_eq!(
        sh(&bed, 0, "systemctl is-active kubelet etcd"),
        "active\nactive"
    );

    // 1. The worker goes (`--all`: its runtime and etcd member too): drained and deleted
    //    through kubectl on kk-cp1, then uninstalled. kk-cp1 keeps running, its etcd with
    //    its data. kube-apiserver cannot run here: a plain listener on kk-cp1's port 6443
    //    stands in for it (sync-etcd-config waits for it after the FAKE kubeadm phase).
    sh(&bed, 0, &format!("{} put kk-del kept", etcdctl(&bed)));
    sh(
        &bed,
        0,
        "systemd-run --unit kk-test-apiserver python3 -m http.server 6443 --bind 127.0.0.1",
    );
    let del_w1 = ["delete", "nodes", "kk-w1", "--all", "--with-data", "--yes"];
    let r = p.kk_flow(&del_w1, &[]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    eprintln!("delete nodes kk-w1: {:.0}s", t.elapsed().as_secs_f64());
    assert_eq!(
        sh(
            &bed,
            0,
            &format!(
                "{} member list | wc -l; {} get kk-del --print-value-only",
                etcdctl(&bed),
                etcdctl(&bed)
            )
        ),
        "2\nkept"
    );
    let kcfg = sh(&bed, 0, "cat /etc/kubernetes/kubeadm-config.yaml");
    assert!(
        !kcfg.contains(&format!("https://{}:2379", bed.hosts()[1].ip)),
        "kube-apiserver still uses kk-w1's etcd:\n{}",
        kcfg
    );
    let j0 = fakes::journal(&bed, 0);
    let kubectl: Vec<String> = fakes::calls(&j0, "kubectl", &[])
        .iter()
        .filter(|c| c["args"].to_string().contains("kk-w1"))
        .map(|c| format!("{} -> {}", c["args"], c["exit"]))
        .collect();
    let want = [
        "get node kk-w1 -o name",
        "cordon kk-w1",
        "drain kk-w1 --ignore-daemonsets --delete-emptydir-data --force --disable-eviction",
        "delete node kk-w1",
    ];
    for w in want {
        let quoted: Vec<String> = w.split(' ').map(|a| format!("\"{}\"", a)).collect();
        assert!(
            kubectl
                .iter()
                .any(|k| k.contains(&quoted.join(",")) && k.ends_with("-> 0")),
            "no `kubectl {}` on kk-cp1: {:#?}",
            w,
            kubectl
        );
    }
    let j1 = fakes::journal(&bed, 1);
    assert_eq!(
        fakes::calls(&j1, "kubeadm", &["reset"]).len(),
        1,
        "one kubeadm reset on kk-w1: {:#?}",
        j1
    );
    assert!(
        fakes::calls(&j1, "kubeadm", &["reset"])[0]["args"]
            .to_string()
            .contains("remove-etcd-member"),
        "external etcd: kubeadm must skip remove-etcd-member"
    );
    let d = diff(&fresh[1], &state(&bed, 1));
    assert!(
        d.is_empty(),
        "kk-w1 after delete nodes:\n{}\n{}",
        d.join("\n"),
        detail(&bed, 1)
    );
    assert_eq!(
        sh(&bed, 0, "systemctl is-active kubelet etcd"),
        "active\nactive"
    );

    // Again: nothing to do.
    let r = p.kk_flow(&del_w1, &[]);
    r.code(0);
    assert!(
        changed(&r).is_empty(),
        "second delete nodes: {:#?}",
        changed(&r)
    );

    sh(&bed, 0, "systemctl stop kk-test-apiserver");

    // 2. The cluster goes, with everything: --check first changes nothing.
    let del_all = ["delete", "cluster", "--all", "--with-data", "--yes"];
    let before_check: Vec<Vec<String>> = (0..3).map(|i| state(&bed, i)).collect();
    let r = p.kk_flow(&del_all, &["--check"]);
    r.code(0);
    for (i, before) in before_check.iter().enumerate() {
        let d = diff(before, &state(&bed, i));
        assert!(
            d.is_empty(),
            "--check changed {}:\n{}",
            NAMES[i],
            d.join("\n")
        );
    }
    assert!(
        !changed(&r).is_empty(),
        "--check reported nothing to delete"
    );

    let t = std::time::Instant::now();
    let r = p.kk_flow(&del_all, &[]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    eprintln!("delete cluster: {:.0}s", t.elapsed().as_secs_f64());
    let mut all = Vec::new();
    for (i, f) in fresh.iter().enumerate() {
        let d = diff(f, &state(&bed, i));
        if !d.is_empty() {
            all.push(format!(
                "{} differs from its fresh state:\n{}\n{}",
                NAMES[i],
                d.join("\n"),
                detail(&bed, i)
            ));
        }
    }
    assert!(all.is_empty(), "{}", all.join("\n\n"));

    // 3. Again: nothing changes.
    let r = p.kk_flow(&del_all, &[]);
    r.code(0);
    assert!(
        changed(&r).is_empty(),
        "second delete cluster: {:#?}",
        changed(&r)
    );
}
