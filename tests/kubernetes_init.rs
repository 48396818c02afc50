//! playbooks/install/kubernetes.yaml (roles kubernetes/pre-kubernetes, init-kubernetes,
//! join-kubernetes, the label/taint post tasks) on three real test hosts, with the FAKE
//! kubeadm, kubelet, kubectl and helm of tests/fakes (no API server can run here): the fakes
//! check every config they are given (kubeadm's documented API of the version, a join needs a
//! token and CA hash, a control-plane join a certificate key) and journal each call, so the
//! journals show what kk did on each host. Real: SSH, systemd (the kubelet unit runs the
//! fake kubelet), the files kk writes, the hosts blocks, the kubeconfig on the controller.
//!
//! Also, without test hosts: the kubeadm init/join configs of v1.30 (kubeadm.k8s.io/v1beta3)
//! and v1.34 (v1beta4) rendered for fixed addresses against the golden files under
//! tests/golden/kubeadm/ (`KK_UPDATE_GOLDEN=1` rewrites them), checked field by field
//! against kubeadm's API, and the CoreDNS/NodeLocalDNS manifests against the Kubernetes
//! schema with kubernetes-validate.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::artifacts::{repo, tar_gz};
use common::fakes::{calls, journal, stage_kube};
use common::validate::{assert_kubeadm_config, assert_kubernetes_valid};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

/// The test bed's hosts are named node1…node3 (their hostnames, which kubelet registers).
const NAMES: [&str; 3] = ["node1", "node2", "node3"];
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CNI_PLUGINS: &str = "v1.9.1";

/// node2 is listed first in kube_control_plane, so it is init_kubernetes_node; node1 joins
/// as a control plane, node3 (with `worker`) as a worker with its own label and taint (host
/// vars).
fn inventory(bed: &TestBed, worker: bool) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s = s.replacen(
        "    node3:\n",
        "    node3:\n      kubernetes:\n        custom_labels: {example.com/gpu: \"true\"}\n        custom_taints: [{key: example.com/dedicated, value: kk, effect: NoSchedule}]\n",
        1,
    );
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [node2, node1]\n    kube_worker:\n      hosts: [{}]\n",
        if worker { "node3" } else { "" }
    ));
    s
}

const CONFIG: &str = r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes:
    kube_version: v1.30.8
    helm_version: v3.13.3
    custom_labels: {example.com/zone: a}
  etcd: {deployment_type: internal}
  cni: {type: none, cni_plugins_version: v1.9.1}
  download: {fetch: false}
"#;

fn kubernetes_playbook(p: &Project, extra: &[&str]) -> Run {
    let pb = repo().join("playbooks/install/kubernetes.yaml");
    p.kk_flow(&["run", pb.to_str().unwrap()], extra)
}

fn changed_tasks(r: &Run) -> Vec<String> {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["changed"] == true)
        .map(|e| format!("{} on {}", e["task"], e["host"]))
        .collect()
}

/// The one file a journal entry was given (its --config / -f).
fn given(entry: &Value, path: &str) -> String {
    entry["files"][path]
        .as_str()
        .unwrap_or_else(|| panic!("{} not given to {}", path, entry))
        .to_string()
}

/// The value of `key: "<value>"` in a rendered config.
fn field(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{}: ", key)))
        .unwrap_or_else(|| panic!("no {} in\n{}", key, text))
        .trim_matches('"')
        .to_string()
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

fn count(j: &[Value], tool: &str, prefix: &[&str]) -> usize {
    calls(j, tool, prefix).len()
}

#[test]
fn init_once_joins_and_labels_then_a_second_run_changes_nothing() {
    let bed = TestBed::start(3).expect("boot test hosts");
    let p = Project::new();
    p.file("inventory.yaml", &inventory(&bed, true))
        .file("config.yaml", CONFIG);

    // The controller's side, as create_cluster's earlier plays leave it.
    stage_controller(&p, KUBE, HELM);

    // ---- --check on the fresh hosts: reports what it would do, changes nothing ----
    let r0 = kubernetes_playbook(&p, &["--check"]);
    r0.code(0);
    for (i, n) in NAMES.iter().enumerate() {
        assert_ne!(r0.recap(n)["changed"], 0, "{}", r0.describe());
        assert_eq!(
            sh(&bed, i, "ls /etc/kubernetes /usr/local/bin/kubeadm /var/lib/kk-fakes 2>&1 | grep -c 'No such file'"),
            "3",
            "--check changed {}",
            n
        );
    }
    assert!(!p.path("wd/kubeconfig").exists());

    // ---- first run: the control planes only; then again with the worker added ----
    let t = std::time::Instant::now();
    p.file("inventory.yaml", &inventory(&bed, false));
    let r1 = kubernetes_playbook(&p, &[]);
    r1.code(0);
    eprintln!("first run: {:.1}s", t.elapsed().as_secs_f64());
    assert!(calls(&journal(&bed, 2), "kubeadm", &[]).is_empty());
    p.file("inventory.yaml", &inventory(&bed, true));
    let r1w = kubernetes_playbook(&p, &[]);
    r1w.code(0);
    let j: Vec<Vec<Value>> = (0..3).map(|i| journal(&bed, i)).collect();
    let (j1, j2, j3) = (&j[0], &j[1], &j[2]);

    // kubeadm init exactly once, on node2, with a v1beta3 config the fake accepted and that
    // passes kubeadm's documented API of v1.30 field by field.
    let inits = calls(
        j2,
        "kubeadm",
        &[
            "init",
            "--config=/etc/kubernetes/kubeadm-config.yaml",
            "--skip-token-print",
        ],
    );
    assert_eq!(inits.len(), 1, "init on node2: {:?}", j2);
    assert_eq!(inits[0]["exit"], 0, "{}", inits[0]);
    let init_cfg = given(inits[0], "/etc/kubernetes/kubeadm-config.yaml");
    let kinds = assert_kubeadm_config(KUBE, "the init config", &init_cfg);
    assert_eq!(
        kinds,
        [
            "InitConfiguration",
            "ClusterConfiguration",
            "KubeletConfiguration",
            "KubeProxyConfiguration"
        ]
    );
    assert!(init_cfg.contains("apiVersion: kubeadm.k8s.io/v1beta3"));
    assert_eq!(field(&init_cfg, "name"), "node2");
    assert_eq!(
        field(&init_cfg, "advertiseAddress"),
        bed.hosts()[1].ip.to_string()
    );
    for other in [j1, j3] {
        assert_eq!(count(other, "kubeadm", &["init"]), 0, "{:?}", other);
    }
    // The certificates were uploaded for node1 only (no control plane joined in the second
    // run); a token was made for each run that had a node to join.
    assert_eq!(count(j2, "kubeadm", &["init", "phase", "upload-certs"]), 1);
    assert_eq!(count(j2, "kubeadm", &["token", "create"]), 2);

    // node1 joins as a control plane with the certificate key, node3 as a worker.
    let cp_joins = calls(j1, "kubeadm", &["join"]);
    assert_eq!(cp_joins.len(), 1, "{:?}", j1);
    assert_eq!(cp_joins[0]["exit"], 0, "{}", cp_joins[0]);
    let cp_join = given(cp_joins[0], "/etc/kubernetes/kubeadm-config.yaml");
    assert_kubeadm_config(KUBE, "the control plane join config", &cp_join);
    assert!(is_hex64(&field(&cp_join, "certificateKey")), "{}", cp_join);
    assert_eq!(
        field(&cp_join, "advertiseAddress"),
        bed.hosts()[0].ip.to_string()
    );
    let token = field(&cp_join, "token");
    let w_joins = calls(j3, "kubeadm", &["join"]);
    assert_eq!(w_joins.len(), 1, "{:?}", j3);
    assert_eq!(w_joins[0]["exit"], 0, "{}", w_joins[0]);
    let w_join = given(w_joins[0], "/etc/kubernetes/kubeadm-config.yaml");
    assert_kubeadm_config(KUBE, "the worker join config", &w_join);
    assert!(!w_join.contains("controlPlane:"), "{}", w_join);
    assert!(w_join.contains("caCertHashes: [\"sha256:"), "{}", w_join);
    assert_eq!(count(j2, "kubeadm", &["join"]), 0);

    // CoreDNS and NodeLocalDNS applied once each, valid against the v1.30 schema.
    for (file, objects) in [("coredns.yaml", 6), ("nodelocaldns.yaml", 3)] {
        let path = format!("/etc/kubernetes/addons/{}", file);
        let applied = calls(
            j2,
            "kubectl",
            &[
                "--kubeconfig",
                "/etc/kubernetes/admin.conf",
                "apply",
                "-f",
                &path,
            ],
        );
        assert_eq!(applied.len(), 1, "{} applied: {:?}", file, j2);
        let v = assert_kubernetes_valid(KUBE, file, &given(applied[0], &path));
        assert_eq!(v.passed.len(), objects, "{}: {:?}", file, v);
    }

    // Labels and taints, set from the init node: config labels on every node, the host's
    // own on node3, the worker role label on the worker.
    let node = |n: &str| -> Value {
        serde_json::from_str(&sh(
            &bed,
            1,
            &format!(
                "kubectl --kubeconfig /etc/kubernetes/admin.conf get node {} -o json",
                n
            ),
        ))
        .unwrap()
    };
    for n in NAMES {
        let v = node(n);
        assert_eq!(v["metadata"]["labels"]["example.com/zone"], "a", "{}", v);
    }
    let n3 = node("node3");
    assert_eq!(
        n3["metadata"]["labels"]["example.com/gpu"], "true",
        "{}",
        n3
    );
    assert_eq!(
        n3["metadata"]["labels"]["node-role.kubernetes.io/worker"], "",
        "{}",
        n3
    );
    assert_eq!(
        n3["spec"]["taints"],
        serde_json::json!([{"key": "example.com/dedicated", "value": "kk", "effect": "NoSchedule"}])
    );
    assert_eq!(node("node1")["spec"]["taints"], serde_json::json!([]));

    // The kubeconfig: on the controller (0600, the endpoint), on both control planes only.
    let kc = p.path("wd/kubeconfig");
    assert_eq!(
        std::fs::metadata(&kc).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(p
        .read("wd/kubeconfig")
        .contains("server: https://lb.kubesphere.local:6443"));
    assert_eq!(
        sh(&bed, 0, "stat -c %a /root/.kube/config"),
        "600",
        "node1 kubeconfig"
    );
    assert_eq!(sh(&bed, 1, "stat -c %a /root/.kube/config"), "600");
    assert_eq!(
        sh(&bed, 2, "test -e /root/.kube/config && echo yes || echo no"),
        "no"
    );

    // Where the endpoint resolves: the control planes to themselves, the worker (type
    // local) to the init node.
    let block = |i: usize| {
        sh(
            &bed,
            i,
            "sed -n '/control_plane_endpoint BEGIN/,/control_plane_endpoint END/p' /etc/hosts | sed '1d;$d'",
        )
    };
    let local = "127.0.0.1 lb.kubesphere.local\n::1 lb.kubesphere.local";
    assert_eq!(block(0), local);
    assert_eq!(block(1), local);
    assert_eq!(
        block(2),
        format!("{} lb.kubesphere.local", bed.hosts()[1].ip)
    );

    // The join token and certificate key are secrets: never in kk's output or run records.
    let key = field(&cp_join, "certificateKey");
    let w_token = field(&w_join, "token");
    for secret in [&token, &key, &w_token] {
        for r in [&r1, &r1w] {
            assert!(!r.stdout.contains(secret.as_str()), "secret in the output");
            assert!(!r.stderr.contains(secret.as_str()), "secret in stderr");
        }
        let grep = std::process::Command::new("grep")
            .args(["-rl", secret.as_str()])
            .arg(p.path("wd/runs"))
            .output()
            .unwrap();
        assert!(
            grep.stdout.is_empty(),
            "secret in run records: {}",
            String::from_utf8_lossy(&grep.stdout)
        );
    }

    // ---- second run: nothing changes, nobody is initialised or joined again ----
    let r2 = kubernetes_playbook(&p, &[]);
    r2.code(0);
    assert_eq!(
        changed_tasks(&r2),
        Vec::<String>::new(),
        "{}",
        r2.describe()
    );
    let j_after: Vec<Vec<Value>> = (0..3).map(|i| journal(&bed, i)).collect();
    for (i, jj) in j_after.iter().enumerate() {
        assert_eq!(
            count(jj, "kubeadm", &["init"]),
            count(&j[i], "kubeadm", &["init"])
        );
        assert_eq!(
            count(jj, "kubeadm", &["join"]),
            count(&j[i], "kubeadm", &["join"])
        );
        assert_eq!(
            count(jj, "kubeadm", &["token"]),
            count(&j[i], "kubeadm", &["token"])
        );
    }
    assert_eq!(
        count(
            &j_after[1],
            "kubectl",
            &["--kubeconfig", "/etc/kubernetes/admin.conf", "apply"]
        ),
        2,
        "DNS manifests applied again"
    );

    // ---- --check after it: changed=0 (the label/taint commands are skipped: check mode
    // runs no kubectl that writes) ----
    let r3 = kubernetes_playbook(&p, &["--check"]);
    r3.code(0);
    for n in NAMES {
        assert_eq!(r3.recap(n)["changed"], 0, "{}", r3.describe());
    }
    for (i, before) in j_after.iter().enumerate() {
        let now = journal(&bed, i);
        for (tool, prefix) in [
            ("kubeadm", &["init"][..]),
            ("kubeadm", &["join"][..]),
            ("kubeadm", &["token"][..]),
            (
                "kubectl",
                &["--kubeconfig", "/etc/kubernetes/admin.conf", "apply"][..],
            ),
            (
                "kubectl",
                &["--kubeconfig", "/etc/kubernetes/admin.conf", "label"][..],
            ),
            (
                "kubectl",
                &["--kubeconfig", "/etc/kubernetes/admin.conf", "taint"][..],
            ),
        ] {
            assert_eq!(
                count(&now, tool, prefix),
                count(before, tool, prefix),
                "--check ran {} {:?} on {}",
                tool,
                prefix,
                NAMES[i]
            );
        }
    }
}

/// Stages binary_dir like create_cluster's controller play would: the CAs (certs/init), the
/// fakes as kubeadm/kubelet/kubectl/helm, and a CNI plugins archive.
fn stage_controller(p: &Project, kube: &str, helm: &str) {
    let r = p.kk_flow(
        &[
            "run",
            repo().join("playbooks/certs_init.yaml").to_str().unwrap(),
        ],
        &[],
    );
    r.code(0);
    let bin = p.path("wd/kubekey");
    stage_kube(&bin, &p.path("scratch"), kube, helm);
    let plugins = p.path("scratch/cni");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(plugins.join("bridge"), "#!/bin/sh\necho FAKE cni plugin\n").unwrap();
    tar_gz(
        &bin.join(format!(
            "cni/plugins/{v}/amd64/cni-plugins-linux-amd64-{v}.tgz",
            v = CNI_PLUGINS
        )),
        &plugins,
        &["bridge"],
    );
}

/// v1.34 (kubeadm.k8s.io/v1beta4) with kube-vip: during kubeadm init the kube-vip static pod
/// reads super-admin.conf (admin.conf has no rights before init finishes), afterwards
/// admin.conf again; every node resolves the endpoint to the VIP.
#[test]
fn kube_vip_on_v1_34_uses_super_admin_conf_only_during_init() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let p = Project::new();
    let names = ["node1", "node2"];
    let mut inv = common::bed_inventory_hosts(&bed, &names);
    inv.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [node1]\n    kube_worker:\n      hosts: [node2]\n",
    );
    // A free address on the test bed's network for the VIP.
    let vip = {
        let o = bed.hosts()[0].ip.octets();
        format!("{}.{}.{}.200", o[0], o[1], o[2])
    };
    p.file("inventory.yaml", &inv).file(
        "config.yaml",
        &format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  kubernetes:\n    kube_version: v1.34.3\n    helm_version: v3.18.5\n    control_plane_endpoint: {{type: kube-vip, kube_vip: {{address: {vip}}}}}\n  etcd: {{deployment_type: internal}}\n  cni: {{type: none, cni_plugins_version: {CNI_PLUGINS}}}\n  download: {{fetch: false}}\n"
        ),
    );
    stage_controller(&p, "v1.34.3", "v3.18.5");

    let r = kubernetes_playbook(&p, &[]);
    r.code(0);
    // In this order on node1: to super-admin.conf, kubeadm init, back to admin.conf.
    let order: Vec<String> = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["host"] == "node1" && e["changed"] == true)
        .map(|e| e["task"].as_str().unwrap_or_default().to_string())
        .filter(|t| t.contains("kube-vip uses") || t.starts_with("Init | kubeadm init"))
        .collect();
    assert_eq!(
        order,
        [
            "Init | kube-vip uses super-admin.conf during kubeadm init",
            "Init | kubeadm init on node1",
            "Init | kube-vip uses admin.conf again"
        ],
        "{}",
        r.describe()
    );
    assert_eq!(
        sh(&bed, 0, "grep -c 'path: /etc/kubernetes/admin.conf$' /etc/kubernetes/manifests/kube-vip.yaml; grep -c super-admin /etc/kubernetes/manifests/kube-vip.yaml || true"),
        "1\n0"
    );
    let j = journal(&bed, 0);
    let init = calls(
        &j,
        "kubeadm",
        &["init", "--config=/etc/kubernetes/kubeadm-config.yaml"],
    );
    assert_eq!(init.len(), 1, "{:?}", j);
    let cfg = given(init[0], "/etc/kubernetes/kubeadm-config.yaml");
    assert!(
        cfg.contains("apiVersion: kubeadm.k8s.io/v1beta4"),
        "{}",
        cfg
    );
    assert!(
        cfg.contains(&format!("\"{}\"", vip)),
        "the VIP in certSANs: {}",
        cfg
    );
    let w = journal(&bed, 1);
    let join = calls(&w, "kubeadm", &["join"]);
    assert_eq!(join.len(), 1, "{:?}", w);
    assert_eq!(join[0]["exit"], 0, "{}", join[0]);
    assert_kubeadm_config(
        "v1.34.3",
        "the worker join config",
        &given(join[0], "/etc/kubernetes/kubeadm-config.yaml"),
    );
    for i in 0..2 {
        assert_eq!(
            sh(&bed, i, "sed -n '/control_plane_endpoint BEGIN/,/control_plane_endpoint END/p' /etc/hosts | sed '1d;$d'"),
            format!("{} lb.kubesphere.local", vip)
        );
    }
    let r2 = kubernetes_playbook(&p, &[]);
    r2.code(0);
    assert_eq!(
        changed_tasks(&r2),
        Vec::<String>::new(),
        "{}",
        r2.describe()
    );
}

// ---------------------------------------------------------------------------------------
// Golden kubeadm configs (no test hosts)

/// Renders, on local hosts with fixed addresses, the init config of the init node and the
/// join configs of a control plane and a worker (with made-up credentials), and the DNS
/// manifests, into `out/`.
const RENDER: &str = r#"
- hosts: k8s_cluster
  gather_facts: false
  pre_tasks:
    - import_role: {name: defaults}
  tasks:
    - name: Made-up join credentials on the init node
      set_fact:
        kubeadm_token: abcdef.0123456789abcdef
        kubeadm_ca_cert_hash: "sha256:{{ '0' * 64 }}"
        kubeadm_cert: "{{ 'f' * 64 }}"
      when: inventory_hostname == init_kubernetes_node
    - include_role:
        name: kubernetes/init-kubernetes
        tasks_from: config.yaml
      vars:
        kubeadm_config_path: "{{ playbook_dir }}/out/init-{{ inventory_hostname }}.yaml"
      when: inventory_hostname == init_kubernetes_node
    - include_role:
        name: kubernetes/join-kubernetes
        tasks_from: config.yaml
      vars:
        kubeadm_config_path: "{{ playbook_dir }}/out/join-{{ inventory_hostname }}.yaml"
      when: inventory_hostname != init_kubernetes_node
    - name: DNS manifests
      template:
        src: "{{ playbook_dir }}/roles/kubernetes/init-kubernetes/templates/{{ item }}.yaml.j2"
        dest: "{{ playbook_dir }}/out/{{ item }}.yaml"
      loop: [coredns, nodelocaldns]
      when: inventory_hostname == init_kubernetes_node
"#;

const LOCAL_INVENTORY: &str = r#"kind: Inventory
spec:
  hosts:
    cp1: {connector: {type: local}, internal_ipv4: 10.0.0.11}
    cp2: {connector: {type: local}, internal_ipv4: 10.0.0.12}
    w1: {connector: {type: local}, internal_ipv4: 10.0.0.21}
  groups:
    k8s_cluster: {groups: [kube_control_plane, kube_worker]}
    kube_control_plane: {hosts: [cp1, cp2]}
    kube_worker: {hosts: [w1]}
    etcd: {hosts: [cp1, cp2, w1]}
"#;

/// v1.30: external etcd, kube-proxy, defaults. v1.34: kube-vip, kubeadm's etcd, audit,
/// hardening, dual stack, extra arguments, no kube-proxy, a CoreDNS hosts file.
fn golden_config(version: &str) -> String {
    let extra = if version == "v1.34.3" {
        r#"  audit: true
  security_enhancement: true
  etcd: {deployment_type: internal}
  cni:
    pod_cidr: "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112"
    service_cidr: "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116"
    ipv6_mask_size: 120
  dns: {coredns: {dns_etc_hosts: ["10.0.0.50 registry.example.com"]}}
  kubernetes:
    kube_version: v1.34.3
    control_plane_endpoint: {type: kube-vip, kube_vip: {address: 10.0.0.100}}
    apiserver: {extra_args: {feature-gates: "ImageVolume=true"}, certSANs: [api.example.com]}
    kubelet: {extra_config: {maxOpenFiles: 1000000}, feature_gates: {ImageVolume: true}}
    kube_proxy: {enabled: false}
    patches: [{name: kube-apiserver0+strategic.yaml, content: "spec: {}"}]
"#
    } else {
        "  kubernetes: {kube_version: v1.30.8}\n"
    };
    format!("kind: Config\nspec:\n{}", extra)
}

fn check_golden(got: &str, golden: &Path) {
    if std::env::var_os("KK_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(golden, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(golden)
        .unwrap_or_else(|e| panic!("{}: {} (KK_UPDATE_GOLDEN=1 writes it)", golden.display(), e));
    assert_eq!(
        got,
        want,
        "{} differs from the rendered config (KK_UPDATE_GOLDEN=1 rewrites it)",
        golden.display()
    );
}

#[test]
fn kubeadm_configs_match_the_golden_files_and_kubeadms_api() {
    for (version, api) in [("v1.30.8", "v1beta3"), ("v1.34.3", "v1beta4")] {
        let p = Project::new();
        std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
        std::fs::create_dir_all(p.path("out")).unwrap();
        p.file("render.yaml", RENDER)
            .file("inventory.yaml", LOCAL_INVENTORY)
            .file("config.yaml", &golden_config(version));
        let r = p.kk(&[
            "run",
            "render.yaml",
            "-i",
            "inventory.yaml",
            "-c",
            "config.yaml",
            "--workdir",
            "wd",
        ]);
        r.code(0);
        let golden = repo().join("tests/golden/kubeadm").join(version);
        for (file, kinds) in [
            ("init-cp1.yaml", 0),
            ("join-cp2.yaml", 1),
            ("join-w1.yaml", 1),
        ] {
            let got = p.read(&format!("out/{}", file));
            assert!(
                got.contains(&format!("apiVersion: kubeadm.k8s.io/{}", api)),
                "{}",
                got
            );
            let found = assert_kubeadm_config(version, file, &got);
            if kinds == 1 {
                assert_eq!(found, ["JoinConfiguration"], "{}", file);
            }
            check_golden(&got, &golden.join(file));
        }
        let init = p.read("out/init-cp1.yaml");
        let kinds = assert_kubeadm_config(version, "init", &init);
        if version == "v1.34.3" {
            // kube-proxy off: no KubeProxyConfiguration, ClusterConfiguration.proxy.disabled.
            assert_eq!(
                kinds,
                [
                    "InitConfiguration",
                    "ClusterConfiguration",
                    "KubeletConfiguration"
                ]
            );
            assert!(init.contains("proxy:\n  disabled: true\n"), "{}", init);
            assert!(
                init.contains("\"10.0.0.100\""),
                "the VIP in certSANs: {}",
                init
            );
            assert!(
                init.contains("local:\n    dataDir:"),
                "kubeadm's etcd: {}",
                init
            );
        } else {
            assert_eq!(kinds.len(), 4, "{:?}", kinds);
            assert!(
                init.contains(
                    "endpoints: [\"https://10.0.0.11:2379\", \"https://10.0.0.12:2379\", \"https://10.0.0.21:2379\"]"
                ),
                "{}",
                init
            );
        }
        for m in ["coredns", "nodelocaldns"] {
            let text = p.read(&format!("out/{}.yaml", m));
            assert_kubernetes_valid(version, m, &text);
            check_golden(&text, &golden.join(format!("{}.yaml", m)));
        }
    }
}
