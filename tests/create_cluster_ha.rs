//! `kk create cluster` end to end for a highly available control plane on four real test
//! hosts: 3 control planes (kk-cp1..3, also the external etcd members) and 1 worker;
//! Kubernetes v1.34.3 (kubeadm config v1beta4), control_plane_endpoint kube_vip (a static
//! pod on each control plane announcing a free address of the test bed's network), cilium,
//! the OpenEBS local PV storage class.
//!
//! What runs for real: kk over SSH, every file the roles write, etcd 3.5.16 and containerd
//! 1.7.24 (Debian trixie), runc 1.1.5 and the CNI plugins (bookworm). FAKES (tests/fakes; no
//! package registry here carries them, no API server can run here): kubeadm, kubelet,
//! kubectl, helm, crictl and the chart archives. What the roles render is checked with real
//! validators: the kube-vip static pod and every object kubectl was given with
//! `kubernetes-validate --strict` for v1.34, the kubelet unit with `systemd-analyze verify`;
//! the fake kubeadm checked the init and join configs field by field against kubeadm's
//! v1beta4 API.
//!
//! Debian's etcd is 3.5.16 and kk's minimum for v1.34 is 3.5.24 (`cluster_require.etcd_min_versions`):
//! the config lowers that minimum, the knob a user with such an etcd would turn.

use crate::common;

use std::collections::BTreeMap;

use common::cluster::{
    config_downloads_and_native, config_etcd_and_containerd, failures, files, inits, join_token,
    kube_calls, kubeadm_config, line, results, serve_cluster,
};
use common::etcd::ETCD_VERSION;
use common::fakes::{self, FakeArtifacts};
use common::validate::{assert_kubernetes_valid, systemd_verify};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

const NAMES: [&str; 4] = ["kk-cp1", "kk-cp2", "kk-cp3", "kk-w1"];
const KUBE: &str = "v1.34.3";
const HELM: &str = "v3.18.5";
const CILIUM: &str = "1.19.1";
const LOCALPV: &str = "4.4.0";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1, kk-cp2, kk-cp3]\n    kube_worker:\n      hosts: [kk-w1]\n    etcd:\n      hosts: [kk-cp1, kk-cp2, kk-cp3]\n",
    );
    s
}

/// The VIP: an address of the bed's /24 that no host has (hosts are .11, .12 …).
fn vip(bed: &TestBed) -> String {
    bed.subnet().replace(".0/24", ".250")
}

fn config(
    p: &Project,
    bed: &TestBed,
    mirror: &str,
    sums: &BTreeMap<&str, String>,
    fa: &FakeArtifacts,
) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  cluster_require:
    etcd_min_versions: {{v1.34: {etcd}}}
  kubernetes:
    kube_version: {kube}
    control_plane_endpoint:
      type: kube_vip
      kube_vip: {{address: {vip}}}
{etcd_cri}  cni:
    type: cilium
    cni_plugins_version: v1.1.1
  storage_class:
    local: {{enabled: true}}
{tail}"#,
        kube = KUBE,
        tail = config_downloads_and_native(&p.path("artifacts.yaml"), mirror, sums, fa),
        vip = vip(bed),
        etcd_cri = config_etcd_and_containerd(),
        etcd = ETCD_VERSION,
    )
}

fn create_cluster(p: &Project, extra: &[&str]) -> Run {
    p.kk_flow(&["create", "cluster"], extra)
}

#[test]
fn create_cluster_with_three_control_planes_behind_kube_vip_then_changes_nothing() {
    let bed = TestBed::start(4).expect("boot test hosts");
    let p = Project::new();

    let (srv, sums, fa) = serve_cluster(
        &p,
        KUBE,
        HELM,
        &[("cilium", CILIUM), ("localpv_provisioner", LOCALPV)],
        false,
    );
    p.file("config.yaml", &config(&p, &bed, &srv.url(""), &sums, &fa))
        .file("inventory.yaml", &inventory(&bed));

    // 1. The first run installs everything.
    let r = create_cluster(&p, &[]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));

    let j: Vec<Vec<Value>> = (0..4).map(|i| fakes::journal(&bed, i)).collect();
    // kubeadm init exactly once, on kk-cp1, with a v1beta4 config.
    assert_eq!(inits(&j[0]).len(), 1, "{:#?}", j[0]);
    for (i, jj) in j.iter().enumerate().skip(1) {
        assert!(inits(jj).is_empty(), "kubeadm init on {}", NAMES[i]);
    }
    let cfg = kubeadm_config(inits(&j[0])[0]);
    assert!(cfg.contains("kubeadm.k8s.io/v1beta4"), "{}", cfg);
    assert!(
        cfg.contains(&format!("{}:6443", "lb.kubesphere.local")),
        "{}",
        cfg
    );
    // kk-cp2 and kk-cp3 joined as control planes with the uploaded certificate key; kk-w1
    // as a worker; all with the same bootstrap token.
    let mut tokens = Vec::new();
    for (i, name) in NAMES.iter().enumerate().skip(1) {
        let joins = fakes::calls(&j[i], "kubeadm", &["join"]);
        assert_eq!(joins.len(), 1, "one join on {}: {:#?}", name, j[i]);
        assert_eq!(joins[0]["exit"], 0, "{}", joins[0]);
        let cfg = kubeadm_config(joins[0]);
        assert!(cfg.contains("kubeadm.k8s.io/v1beta4"), "{}", cfg);
        let key = cfg
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificateKey: "))
            .map(|k| k.trim_matches('"').to_string());
        if name.starts_with("kk-cp") {
            let key = key.unwrap_or_else(|| panic!("no certificate key for {}: {}", name, cfg));
            assert!(
                key.len() == 64 && key.chars().all(|c| c.is_ascii_hexdigit()),
                "{}",
                key
            );
            // /root/.kube/config on every control plane.
            assert!(sh(&bed, i, "cat /root/.kube/config").contains("kind: Config"));
        } else {
            assert!(key.is_none() && !cfg.contains("\ncontrolPlane:"), "{}", cfg);
        }
        tokens.push(join_token(&cfg));
    }
    assert!(tokens.windows(2).all(|w| w[0] == w[1]), "{:?}", tokens);
    // kube-vip on every control plane, valid for v1.34, announcing the VIP and back on
    // admin.conf after init (kk-cp1 used super-admin.conf during kubeadm init).
    for (i, name) in NAMES[..3].iter().enumerate() {
        let pod = sh(&bed, i, "cat /etc/kubernetes/manifests/kube-vip.yaml");
        assert_kubernetes_valid(KUBE, &format!("kube-vip on {}", name), &pod);
        assert!(pod.contains(&vip(&bed)), "{}", pod);
        assert!(
            pod.contains("/etc/kubernetes/admin.conf") && !pod.contains("super-admin.conf"),
            "{}",
            pod
        );
    }
    assert!(
        sh(
            &bed,
            3,
            "test ! -e /etc/kubernetes/manifests/kube-vip.yaml && echo none"
        ) == "none"
    );
    systemd_verify(&bed, 1, &["/etc/systemd/system/kubelet.service"])
        .unwrap_or_else(|e| panic!("kubelet.service on kk-cp2: {}", e));
    // Every object kubectl applied is valid for v1.34; cilium and the local PV class were
    // installed with helm from kk-cp1.
    for c in fakes::calls(&j[0], "kubectl", &[]) {
        if c["args"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "apply"))
        {
            for (f, text) in files(c) {
                if !f.ends_with(".conf") && !f.contains("kubeconfig") {
                    assert_kubernetes_valid(KUBE, &f, &text);
                }
            }
        }
    }
    let releases: Vec<String> = fakes::calls(&j[0], "helm", &["upgrade"])
        .iter()
        .map(|c| c["args"][2].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(releases.len(), 2, "{:?}", releases);
    assert!(fakes::calls(&j[1], "helm", &["upgrade"]).is_empty());
    // The kubeconfig on the controller.
    let kc = std::fs::read_to_string(p.path("wd/kubeconfig")).expect("wd/kubeconfig");
    assert!(
        kc.contains("server: https://lb.kubesphere.local:6443"),
        "{}",
        kc
    );
    let before: Vec<usize> = j.iter().map(|jj| kube_calls(jj).len()).collect();

    // 2. A second run changes nothing, downloads, initialises and joins nothing.
    let fetched = srv.requests().len();
    let r2 = create_cluster(&p, &[]);
    r2.code(0);
    let changed: Vec<String> = results(&r2)
        .iter()
        .filter(|(_, e)| e["changed"] == true)
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(changed.is_empty(), "the second run changed: {:#?}", changed);
    let after: Vec<usize> = (0..4)
        .map(|i| kube_calls(&fakes::journal(&bed, i)).len())
        .collect();
    assert_eq!(
        after, before,
        "the second run initialised, joined or installed again"
    );
    assert_eq!(
        srv.requests().len(),
        fetched,
        "the second run downloaded again"
    );
}
