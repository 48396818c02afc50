//! `kk create cluster` (the bundled playbooks/create_cluster.yaml, part 1 of the flow) end
//! to end on three real test hosts: sudo's secure_path, the pre-install hooks, the
//! precheck, certificates and sha256-verified downloads on the controller, the OS init of
//! every node, the post-install hooks. The artifacts come from the real local HTTP server
//! of tests/download.rs (real Debian binaries repackaged, FAKE stand-ins where no package
//! exists) through the test's own manifest (`download.manifest`).
//!
//! Kubernetes v1.20.2 (the served kubectl's version) has no version matrix in kk, so the
//! config lowers `cluster_require.kube_version_min_required`, allows the unsupported minor,
//! gives every component version and lets calico v3.31 go with v1.20.
//! Kernel-global sysctls are left alone (the hosts share this machine's kernel) and time
//! sync is off, as in tests/native.rs.

mod common;

use std::collections::BTreeMap;

use common::artifacts::{assert_landed, build_server, manifest, sha256_file};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::http::HttpServer;
use testbed::TestBed;

/// Inventory names (the hosts boot as node1..node3, so every hostname changes).
const NAMES: [&str; 3] = ["kk-cp1", "kk-w1", "kk-w2"];

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}, {c}]\n    etcd:\n      hosts: [{a}]\n",
        a = NAMES[0],
        b = NAMES[1],
        c = NAMES[2]
    ));
    s
}

/// A config precheck passes with v1.20.2 and the served artifacts; `mirror` is the
/// server's root URL (runc is served only under /mirror/).
fn config(p: &Project, mirror: &str, kubectl_sha: &str) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let machine_has_swap = swaps.lines().count() > 1;
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  cluster_require:
    kube_version_min_required: v1.20.0
    allow_unsupported_kube_version: true
    calico_allowed_versions: {{v3.31: [v1.20]}}
  kubernetes: {{kube_version: v1.20.2, helm_version: v3.18.5}}
  etcd: {{deployment_type: external, etcd_version: v3.4.23}}
  cri: {{container_manager: containerd, containerd_version: v1.6.20, runc_version: v1.1.5, crictl_version: v1.34.0}}
  cni: {{type: calico, multi_cni: none, cni_plugins_version: v1.1.1, calico_version: v3.31.3}}
  storage_class: {{local: {{enabled: false}}, nfs: {{enabled: false}}}}
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{mirror}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      kubectl: "{kubectl}"
  native:
    disable_swap: {swap}
    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]
    ntp:
      enabled: false
"#,
        manifest = p.path("artifacts.yaml").display(),
        mirror = mirror,
        kubectl = kubectl_sha,
        swap = !machine_has_swap,
    )
}

/// `kk create cluster -i inventory.yaml -c config.yaml --workdir wd --output json`.
fn create_cluster(p: &Project) -> Run {
    p.kk(&[
        "create",
        "cluster",
        "-i",
        "inventory.yaml",
        "-c",
        "config.yaml",
        "--workdir",
        "wd",
        "--output",
        "json",
    ])
}

/// Every host result with the `file:line` of its task (from the task_start before it).
fn results(r: &Run) -> Vec<(String, Value)> {
    let mut path = String::new();
    let mut out = Vec::new();
    for e in r.events() {
        if e["event"] == "task_start" {
            path = e["path"].as_str().unwrap_or_default().to_string();
        } else if e["event"] == "host_result" {
            out.push((path.clone(), e));
        }
    }
    out
}

/// A one-line description of a result, for assertion messages.
fn line(path: &str, e: &Value) -> String {
    format!(
        "{} on {} ({}): {} changed={}",
        e["task"], e["host"], path, e["status"], e["changed"]
    )
}

#[test]
fn create_cluster_part1_on_three_hosts_then_again_with_no_change() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = Project::new();

    // The artifact server (the controller downloads, so loopback is enough).
    let root = p.path("srv");
    let served = build_server(&root, &p.path("scratch"));
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    p.file("artifacts.yaml", &manifest(&srv.url("cn/"), &sums, ""))
        .file("config.yaml", &config(&p, &srv.url(""), &sums["kubectl"]))
        .file("inventory.yaml", &inventory(&bed));

    // Hooks: a global pre-install script (every host) and a post-install script for
    // kk-w1 only. Each appends a line, so a second run shows they ran again.
    p.file(
        "wd/scripts/pre_install.sh",
        "#!/bin/sh\nset -e\necho \"pre $(hostname)\" >> /root/kk-e2e-hooks\n",
    )
    .file(
        "wd/scripts/post_install_kk-w1.sh",
        "#!/bin/sh\nset -e\necho \"post $(hostname)\" >> /root/kk-e2e-hooks\n",
    );

    // 1. The first run does everything.
    let r = create_cluster(&p);
    r.code(0);
    let all = results(&r);
    let bad: Vec<String> = all
        .iter()
        .filter(|(_, e)| {
            e["status"] == "unreachable" || e["status"] == "failed" && e["ignored"] != true
        })
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(bad.is_empty(), "failures: {:#?}\n{}", bad, r.describe());

    // Every precheck check ran and passed (none failed, even ignored), and every host got
    // its summary.
    let prechecks: Vec<&(String, Value)> = all
        .iter()
        .filter(|(path, _)| path.contains("roles/precheck/"))
        .collect();
    assert!(
        prechecks.len() > 20,
        "precheck ran only {} results\n{}",
        prechecks.len(),
        r.describe()
    );
    for (path, e) in &prechecks {
        assert!(
            e["status"] == "ok" || e["status"] == "skipped",
            "precheck: {}\n{}",
            line(path, e),
            e["result"]
        );
    }
    for name in NAMES {
        assert_eq!(
            r.status("precheck | summary", name),
            "ok",
            "{}",
            r.describe()
        );
    }

    // Hooks: the global pre-install script on every host (before the hostname changed),
    // the host's post-install script on kk-w1 only (after).
    for (i, name) in NAMES.iter().enumerate() {
        let log = sh(&bed, i, "cat /root/kk-e2e-hooks");
        let want = if *name == "kk-w1" {
            format!("pre node{}\npost kk-w1", i + 1)
        } else {
            format!("pre node{}", i + 1)
        };
        assert_eq!(log, want, "hook log on {}", name);
    }

    // Certificates on the controller.
    let pki = p.path("wd/pki");
    for f in [
        "root.crt",
        "root.key",
        "etcd-kk-cp1.crt",
        "etcd-kk-cp1.key",
        "etcd-client.crt",
        "etcd-client.key",
    ] {
        assert!(
            pki.join(f).is_file(),
            "{} missing from {}",
            f,
            pki.display()
        );
    }

    // Every served artifact in binary_dir with its digest, each fetched once.
    assert_landed(&served, &p.path("wd/kubekey"), &sums);
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());

    // The nodes: hostname and the kubekey hosts block.
    let ips: Vec<String> = bed.hosts().iter().map(|h| h.ip.to_string()).collect();
    let want_block: String = (0..3)
        .map(|i| {
            let n = NAMES[i];
            format!("{} {n} {n}.kubekey {n}.kubekey.cluster.local\n", ips[i])
        })
        .collect();
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(sh(&bed, i, "hostname"), *name);
        assert_eq!(sh(&bed, i, "cat /etc/hostname"), *name);
        let hosts = sh(&bed, i, "cat /etc/hosts");
        let block = hosts
            .split("# kubekey hosts BEGIN\n")
            .nth(1)
            .and_then(|rest| rest.split("# kubekey hosts END").next())
            .unwrap_or_else(|| panic!("no kubekey hosts block on {}:\n{}", name, hosts));
        assert_eq!(block, want_block, "hosts block on {}", name);
    }

    // 2. A second run: exit 0, nothing downloaded, no change from native, certs or
    //    download. The hook scripts run again (a shell task always reports a change;
    //    that is expected), and only they change something.
    let before = srv.requests().len();
    let r2 = create_cluster(&p);
    r2.code(0);
    assert_eq!(
        srv.requests().len(),
        before,
        "the second run fetched: {:?}",
        srv.requests()
    );
    let all2 = results(&r2);
    let changed: Vec<(String, String)> = all2
        .iter()
        .filter(|(_, e)| e["changed"] == true)
        .map(|(path, e)| {
            assert!(
                path.contains("playbooks/hook/"),
                "only the hook scripts may change something on a second run: {}",
                line(path, e)
            );
            (
                e["task"].as_str().unwrap_or_default().to_string(),
                e["host"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = NAMES
        .iter()
        .map(|n| {
            (
                "Pre | Run the global pre-install script".into(),
                n.to_string(),
            )
        })
        .collect();
    want.push((
        "Post | Run the host's post-install script".into(),
        "kk-w1".into(),
    ));
    assert_eq!(
        changed,
        want,
        "changes of the second run\n{}",
        r2.describe()
    );
    for area in ["roles/native", "roles/certs/", "roles/download/"] {
        assert!(
            all2.iter().any(|(path, _)| path.contains(area)),
            "no task of {} ran the second time\n{}",
            area,
            r2.describe()
        );
    }
    for (i, name) in NAMES.iter().enumerate() {
        let log = sh(&bed, i, "cat /root/kk-e2e-hooks");
        let want = if *name == "kk-w1" {
            format!("pre node{n}\npost kk-w1\npre kk-w1\npost kk-w1", n = i + 1)
        } else {
            format!("pre node{}\npre {}", i + 1, name)
        };
        assert_eq!(log, want, "hook log on {} after the second run", name);
    }
}
