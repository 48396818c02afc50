//! The FAKE tools run locally under `KK_FAKE_ROOT` (every absolute path they touch is
//! inside a temporary directory, systemctl is skipped): what they accept, refuse, print
//! and journal. tests/fakes.rs (the kk package's) runs them on a real test host.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{Fake, Out};

const INIT_V1BETA3: &str = "apiVersion: kubeadm.k8s.io/v1beta3\nkind: InitConfiguration\nlocalAPIEndpoint: {advertiseAddress: 10.0.0.1, bindPort: 6443}\nnodeRegistration: {name: cp1, kubeletExtraArgs: {node-ip: 10.0.0.1}}\n---\napiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.30.8\ncontrolPlaneEndpoint: lb.kubesphere.local\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n";

#[test]
fn kubeadm_init_then_join_config_checks() {
    let f = Fake::new("v1.30.8");
    f.write("/root/init.yaml", INIT_V1BETA3);
    // kubeadm v1.30 does not deploy a v1.32 control plane.
    f.write(
        "/root/newer.yaml",
        &INIT_V1BETA3.replace("v1.30.8", "v1.32.0"),
    );
    let e = f.fails("kubeadm", &["init", "--config=/root/newer.yaml"]);
    assert!(e.contains("deploys only v1.30 or v1.29"), "{}", e);
    // Only an init config makes a cluster.
    f.write(
        "/root/cluster-only.yaml",
        INIT_V1BETA3.split("---").nth(1).unwrap(),
    );
    let e = f.fails("kubeadm", &["init", "--config", "/root/cluster-only.yaml"]);
    assert!(
        e.contains("InitConfiguration and a ClusterConfiguration"),
        "{}",
        e
    );
    let e = f.fails("kubeadm", &["init"]);
    assert!(e.contains("--config is required"), "{}", e);

    f.ok(
        "kubeadm",
        &[
            "init",
            "--config",
            "/root/init.yaml",
            "--skip-phases=addon/kube-proxy",
        ],
    );
    // No port in controlPlaneEndpoint: the bind port is added; super-admin.conf from v1.29.
    let admin = std::fs::read_to_string(f.path("/etc/kubernetes/admin.conf")).unwrap();
    assert!(
        admin.contains("server: https://lb.kubesphere.local:6443"),
        "{}",
        admin
    );
    assert!(f.path("/etc/kubernetes/super-admin.conf").is_file());
    let flags = std::fs::read_to_string(f.path("/var/lib/kubelet/kubeadm-flags.env")).unwrap();
    assert_eq!(flags, "KUBELET_KUBEADM_ARGS=\"--node-ip=10.0.0.1\"\n");
    // kk's CA is kept: a CA placed before init is the one in the kubeconfigs' hash.
    let join = f.ok("kubeadm", &["token", "create", "--print-join-command"]);
    assert!(
        join.starts_with("kubeadm join lb.kubesphere.local:6443 --token "),
        "{}",
        join
    );
    let e = f.fails(
        "kubeadm",
        &["token", "create", "--print-join-command", "--ttl", "2 days"],
    );
    assert!(e.contains("not a duration"), "{}", e);
    // The ClusterConfiguration is in the kubeadm-config ConfigMap, for kubectl.
    f.write(
        "/root/.kube/config",
        &std::fs::read_to_string(f.path("/etc/kubernetes/admin.conf")).unwrap(),
    );
    let cc = f.ok(
        "kubectl",
        &[
            "-n",
            "kube-system",
            "get",
            "configmap",
            "kubeadm-config",
            "-o",
            "jsonpath={.data.ClusterConfiguration}",
        ],
    );
    assert!(
        cc.contains("controlPlaneEndpoint: lb.kubesphere.local"),
        "{}",
        cc
    );
    f.write(
        "/root/up.yaml",
        &INIT_V1BETA3.replace("lb.kubesphere.local", "lb2.example"),
    );
    f.ok(
        "kubeadm",
        &[
            "init",
            "phase",
            "upload-config",
            "kubeadm",
            "--config=/root/up.yaml",
        ],
    );
    f.ok(
        "kubeadm",
        &[
            "init",
            "phase",
            "control-plane",
            "apiserver",
            "--config=/root/up.yaml",
        ],
    );
    let cm: Value = serde_json::from_str(&f.ok(
        "kubectl",
        &[
            "get",
            "cm",
            "kubeadm-config",
            "-n",
            "kube-system",
            "-o",
            "json",
        ],
    ))
    .unwrap();
    assert!(cm["data"]["ClusterConfiguration"]
        .as_str()
        .unwrap()
        .contains("lb2.example"));
    assert!(f
        .fails("kubectl", &["get", "configmap", "nothere", "-o", "json"])
        .contains("NotFound"));

    // Join on a second "host".
    let g = Fake::new("v1.30.8");
    let token = join.split(' ').nth(4).unwrap();
    let hash = join.split(' ').nth(6).unwrap();
    let join_cfg = format!("apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken: {{apiServerEndpoint: 'lb.kubesphere.local:6443', token: {token}, caCertHashes: [{hash}]}}\ncontrolPlane:\n  localAPIEndpoint: {{advertiseAddress: 10.0.0.2, bindPort: 6443}}\n  certificateKey: CERTKEY\n");
    g.write("/root/join.yaml", &join_cfg.replace("CERTKEY", "nothex"));
    let e = g.fails("kubeadm", &["join", "--config=/root/join.yaml"]);
    assert!(e.contains("controlPlane.certificateKey"), "{}", e);
    g.write(
        "/root/join.yaml",
        &join_cfg
            .replace("    caCertHashes", "    caCertHashez")
            .replace(&format!(", caCertHashes: [{hash}]"), ""),
    );
    let e = g.fails("kubeadm", &["join", "--config=/root/join.yaml"]);
    assert!(
        e.contains("caCertHashes is empty and unsafeSkipCAVerification is not true"),
        "{}",
        e
    );
    g.write(
        "/root/join.yaml",
        &join_cfg.replace("CERTKEY", &"ab".repeat(32)),
    );
    let out = g.ok(
        "kubeadm",
        &[
            "join",
            "--config=/root/join.yaml",
            "--ignore-preflight-errors=all",
            "-v=5",
        ],
    );
    assert!(out.contains("as a control plane"), "{}", out);
    for f in [
        "admin.conf",
        "kubelet.conf",
        "controller-manager.conf",
        "scheduler.conf",
    ] {
        assert!(g.path(&format!("/etc/kubernetes/{}", f)).is_file(), "{}", f);
    }
    let e = g.fails("kubeadm", &["join", "--config=/root/join.yaml"]);
    assert!(
        e.contains("/etc/kubernetes/kubelet.conf already exists"),
        "{}",
        e
    );
    // reset removes what join left.
    g.ok("kubeadm", &["reset", "-f"]);
    assert!(!g.path("/etc/kubernetes/kubelet.conf").exists());
    assert_eq!(g.run("kubeadm", &["reset"]).code, 64);

    let j = g.journal();
    let joins: Vec<&Value> = j.iter().filter(|e| e["args"][0] == "join").collect();
    assert_eq!(joins.len(), 4);
    assert_eq!(joins[2]["exit"], 0);
    assert!(joins[2]["files"]["/root/join.yaml"]
        .as_str()
        .unwrap()
        .contains("certificateKey"));
}

#[test]
fn kubelet_needs_its_config_and_a_kubeconfig() {
    let f = Fake::new("v1.34.1");
    let args = [
        "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
        "--kubeconfig=/etc/kubernetes/kubelet.conf",
        "--config=/var/lib/kubelet/config.yaml",
    ];
    let e = f.fails("kubelet", &args);
    assert!(e.contains("/var/lib/kubelet/config.yaml"), "{}", e);
    f.write(
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPodz: 1\n",
    );
    let e = f.fails("kubelet", &args);
    assert!(
        e.contains("KubeletConfiguration.maxPodz: unknown field"),
        "{}",
        e
    );
    f.write(
        "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 1\n",
    );
    let e = f.fails("kubelet", &args);
    assert!(e.contains("neither --kubeconfig"), "{}", e);
    assert_eq!(f.ok("kubelet", &["--version"]), "Kubernetes v1.34.1");
    let mut old_flags = args.to_vec();
    old_flags.push("--container-runtime=remote");
    let e = f.fails("kubelet", &old_flags);
    assert!(e.contains("unknown flag: --container-runtime"), "{}", e);
    // With its files it would run until stopped: not run here.
}

#[test]
fn kubectl_apply_label_taint_delete() {
    let f = Fake::new("v1.34.1");
    assert!(f
        .fails("kubectl", &["apply", "-f", "/x.yaml"])
        .contains("/root/.kube/config does not exist"));
    f.write("/root/.kube/config", "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'https://lb:6443'}\n");
    f.write("/m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}\ndata: {a: b}\n---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: nodelocaldns, namespace: kube-system}\n");
    assert_eq!(
        f.ok("kubectl", &["apply", "-f", "/m.yaml"]),
        "configmap/coredns created\ndaemonset.apps/nodelocaldns created"
    );
    assert_eq!(
        f.ok("kubectl", &["apply", "-f", "/m.yaml"]),
        "configmap/coredns unchanged\ndaemonset.apps/nodelocaldns unchanged"
    );
    f.write("/m.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: coredns, namespace: kube-system}\ndata: {a: c}\n");
    assert_eq!(
        f.ok("kubectl", &["apply", "-f", "/m.yaml"]),
        "configmap/coredns configured"
    );
    f.write("/bad.yaml", "apiVersion: v1\nkind: ConfigMap\n");
    assert!(f
        .fails("kubectl", &["apply", "-f", "/bad.yaml"])
        .contains("metadata.name are required"));

    let l = ["label", "--overwrite", "node", "w1", "a=b", "c.io/d=e"];
    assert_eq!(f.ok("kubectl", &l), "node/w1 labeled");
    assert_eq!(f.ok("kubectl", &l), "node/w1 not labeled");
    let e = f.fails("kubectl", &["label", "node", "w1", "a=x"]);
    assert!(
        e.contains("'a' already has a value (b), and --overwrite is false"),
        "{}",
        e
    );
    for bad in ["a=b c", "-a=b", "a=", "x/=1", "a=b=c"] {
        let o = f.run("kubectl", &["label", "--overwrite", "node", "w1", bad]);
        if bad == "a=" {
            assert_eq!(o.code, 0, "an empty value is valid");
        } else {
            assert_eq!(o.code, 1, "{:?} should be refused", bad);
        }
    }
    let t = [
        "taint",
        "--overwrite",
        "node",
        "w1",
        "dedicated=db:NoSchedule",
    ];
    assert_eq!(f.ok("kubectl", &t), "node/w1 tainted");
    assert_eq!(f.ok("kubectl", &t), "node/w1 not tainted");
    assert!(f
        .fails("kubectl", &["taint", "node", "w1", "x=y:Sometimes"])
        .contains("invalid taint spec"));
    let node: Value =
        serde_json::from_str(&f.ok("kubectl", &["get", "node", "w1", "-o", "json"])).unwrap();
    assert_eq!(node["metadata"]["labels"]["c.io/d"], "e");
    assert_eq!(node["spec"]["taints"][0]["effect"], "NoSchedule");
    assert_eq!(
        f.ok("kubectl", &["taint", "node", "w1", "dedicated:NoSchedule-"]),
        "node/w1 tainted"
    );

    assert_eq!(
        f.ok(
            "kubectl",
            &["delete", "configmap", "coredns", "-n", "kube-system"]
        ),
        "configmap \"coredns\" deleted"
    );
    assert!(f
        .fails(
            "kubectl",
            &["delete", "configmap", "coredns", "-n", "kube-system"]
        )
        .contains("NotFound"));
    f.ok(
        "kubectl",
        &[
            "delete",
            "configmap",
            "coredns",
            "-n",
            "kube-system",
            "--ignore-not-found",
        ],
    );
    assert_eq!(
        f.ok("kubectl", &["create", "namespace", "kubesphere-system"]),
        "namespace/kubesphere-system created"
    );
    assert!(f
        .fails("kubectl", &["create", "namespace", "kubesphere-system"])
        .contains("AlreadyExists"));
    assert_eq!(
        f.ok(
            "kubectl",
            &[
                "-n",
                "kube-system",
                "rollout",
                "restart",
                "deployment",
                "coredns"
            ]
        ),
        "deployment.apps/coredns restarted"
    );
    assert_eq!(f.run("kubectl", &["get", "pods", "-A"]).code, 64);
    let v: Value =
        serde_json::from_str(&f.ok("kubectl", &["version", "--client", "-o", "json"])).unwrap();
    assert_eq!(v["clientVersion"]["gitVersion"], "v1.34.1");
}

#[test]
fn helm_checks_charts_and_values() {
    let f = Fake::new("v1.34.1");
    f.write("/root/.kube/config", "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster: {server: 'https://lb:6443'}\n");
    let chart = |dir: &Path, name: &str, chart_yaml: &str| {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(name)).unwrap();
        std::fs::write(d.path().join(name).join("Chart.yaml"), chart_yaml).unwrap();
        let out = dir.join(format!("{}.tgz", name));
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&out)
            .arg("-C")
            .arg(d.path())
            .arg(name)
            .status()
            .unwrap();
        assert!(st.success());
    };
    let dir = f.path("/charts");
    std::fs::create_dir_all(&dir).unwrap();
    chart(
        &dir,
        "cilium",
        "apiVersion: v2\nname: cilium\nversion: 1.18.1\n",
    );
    chart(
        &dir,
        "wrong",
        "apiVersion: v2\nname: other\nversion: 1.0.0\n",
    );
    f.write("/charts/plain.tgz", "not gzip");
    f.write("/v.yaml", "ipam: {mode: kubernetes}\n");
    f.write("/list.yaml", "- a\n");
    let up = |chart: &str, values: &str| -> Out {
        f.run(
            "helm",
            &[
                "upgrade",
                "--install",
                "cilium",
                chart,
                "-n",
                "kube-system",
                "-f",
                values,
                "--set",
                "k8sServiceHost=lb,k8sServicePort=6443",
            ],
        )
    };
    assert!(up("/charts/plain.tgz", "/v.yaml")
        .stderr
        .contains("not a gzip"));
    assert!(up("/charts/wrong.tgz", "/v.yaml")
        .stderr
        .contains("name (other) the chart's directory (wrong)"));
    assert!(up("/charts/cilium.tgz", "/list.yaml")
        .stderr
        .contains("not a YAML map"));
    let o = up("/charts/cilium.tgz", "/v.yaml");
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: Value = serde_json::from_str(&f.ok(
        "helm",
        &["get", "values", "cilium", "-n", "kube-system", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(
        v,
        serde_json::json!({"ipam": {"mode": "kubernetes"}, "k8sServiceHost": "lb", "k8sServicePort": 6443})
    );
    let list: Value = serde_json::from_str(&f.ok("helm", &["list", "-A", "-o", "json"])).unwrap();
    assert_eq!(list[0]["chart"], "cilium-1.18.1");
    assert_eq!(f.ok("helm", &["version", "--short"]), "v3.18.5+g0000000");
    f.ok(
        "helm",
        &[
            "upgrade",
            "--install",
            "nfd",
            "node-feature-discovery",
            "--repo",
            "https://kubernetes-sigs.github.io/node-feature-discovery/charts",
            "--version",
            "0.17.3",
            "-n",
            "nfd",
            "--create-namespace",
        ],
    );
    let list: Value = serde_json::from_str(&f.ok("helm", &["list", "-A", "-o", "json"])).unwrap();
    assert_eq!(list[1]["chart"], "node-feature-discovery-0.17.3");
    assert!(f
        .fails(
            "helm",
            &[
                "upgrade",
                "--install",
                "x",
                "/charts/cilium.tgz",
                "--version",
                "1"
            ]
        )
        .contains("--repo"));
    assert!(f
        .fails("helm", &["status", "calico", "-n", "kube-system"])
        .contains("release: not found"));
    assert_eq!(
        f.run("helm", &["install", "x", "/charts/cilium.tgz"]).code,
        64
    );
    let j = f.journal();
    let last_up = j
        .iter()
        .rfind(|e| e["args"][0] == "upgrade" && e["args"][2] == "cilium" && e["exit"] == 0)
        .unwrap();
    assert_eq!(last_up["files"]["/v.yaml"], "ipam: {mode: kubernetes}\n");
    assert!(last_up["files"]["/root/.kube/config"].is_string());
}

#[test]
fn kubeadm_preflight_checks_that_need_no_api_server() {
    // init with external etcd: its client certificate files must be there.
    let f = Fake::new("v1.30.8");
    let ext = INIT_V1BETA3.replace(
        "controlPlaneEndpoint: lb.kubesphere.local\n",
        "controlPlaneEndpoint: lb.kubesphere.local\netcd:\n  external:\n    endpoints: [https://10.0.0.1:2379]\n    caFile: /etc/kubernetes/pki/etcd/ca.crt\n    certFile: /etc/kubernetes/pki/etcd/client.crt\n    keyFile: /etc/kubernetes/pki/etcd/client.key\n",
    );
    f.write("/root/init.yaml", &ext);
    let e = f.fails("kubeadm", &["init", "--config=/root/init.yaml"]);
    assert!(
        e.contains(
            "[ERROR ExternalEtcdClientCertificates]: /etc/kubernetes/pki/etcd/ca.crt doesn't exist"
        ),
        "{}",
        e
    );
    assert!(!f.path("/etc/kubernetes/admin.conf").exists());
    for c in ["ca.crt", "client.crt", "client.key"] {
        f.write(&format!("/etc/kubernetes/pki/etcd/{}", c), "x");
    }
    f.ok("kubeadm", &["init", "--config=/root/init.yaml"]);
    let join = f.ok("kubeadm", &["token", "create", "--print-join-command"]);
    let (token, hash) = (
        join.split(' ').nth(4).unwrap(),
        join.split(' ').nth(6).unwrap(),
    );
    let worker = format!("apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken: {{apiServerEndpoint: 'lb.kubesphere.local:6443', token: {token}, caCertHashes: [{hash}]}}\n");

    // A worker with a CA: refused (kubeadm fetches it); its haproxy static pod too, unless
    // DirAvailable--etc-kubernetes-manifests is ignored (kubeadm wants that directory empty).
    let w = Fake::new("v1.30.8");
    w.write("/root/join.yaml", &worker);
    w.write("/etc/kubernetes/manifests/haproxy.yaml", "kind: Pod\n");
    w.write("/etc/kubernetes/pki/ca.crt", "x");
    let e = w.fails(
        "kubeadm",
        &[
            "join",
            "--config=/root/join.yaml",
            "--ignore-preflight-errors=ImagePull",
        ],
    );
    for want in [
        "[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists",
        "[ERROR DirAvailable--etc-kubernetes-manifests]: /etc/kubernetes/manifests is not empty",
    ] {
        assert!(e.contains(want), "{}", e);
    }
    w.ok(
        "kubeadm",
        &[
            "join",
            "--config=/root/join.yaml",
            "--ignore-preflight-errors=fileAvailable--etc-kubernetes-pki-ca.crt,DirAvailable--etc-kubernetes-manifests",
        ],
    );

    // A control plane holding another CA than the cluster's: the pinned hash does not match.
    let c = Fake::new("v1.30.8");
    let cp = format!(
        "{worker}controlPlane: {{certificateKey: {}}}\n",
        "0".repeat(64)
    );
    c.write("/root/join.yaml", &cp);
    c.write("/etc/kubernetes/pki/ca.crt", "another CA");
    c.write("/etc/kubernetes/manifests/kube-vip.yaml", "kind: Pod\n");
    c.write("/etc/kubernetes/manifests/etcd.yaml", "kind: Pod\n");
    let e = c.fails("kubeadm", &["join", "--config=/root/join.yaml"]);
    assert!(
        e.contains("[ERROR FileAvailable--etc-kubernetes-manifests-etcd.yaml]"),
        "{}",
        e
    );
    std::fs::remove_file(c.path("/etc/kubernetes/manifests/etcd.yaml")).unwrap();
    // (kube-vip's own static pod: the directory check is ignored, as kk does.)
    let join = [
        "join",
        "--config=/root/join.yaml",
        "--ignore-preflight-errors=DirAvailable--etc-kubernetes-manifests",
    ];
    let e = c.fails("kubeadm", &join);
    assert!(
        e.contains("none is the hash of this node's cluster CA"),
        "{}",
        e
    );
    // The same CA as the init node's: accepted.
    std::fs::copy(
        f.path("/etc/kubernetes/pki/ca.crt"),
        c.path("/etc/kubernetes/pki/ca.crt"),
    )
    .unwrap();
    c.ok("kubeadm", &join);
}

#[test]
fn the_discovery_hash_of_a_real_ca_is_its_public_keys() {
    // kubeadm pins sha256 of the CA's SubjectPublicKeyInfo: with a real certificate the fake
    // prints the hash `openssl` computes that way.
    let f = Fake::new("v1.34.1");
    let dir = tempfile::tempdir().unwrap();
    let (key, crt) = (dir.path().join("ca.key"), dir.path().join("ca.crt"));
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            "/CN=kubernetes",
            "-days",
            "1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    f.write(
        "/etc/kubernetes/pki/ca.crt",
        &std::fs::read_to_string(&crt).unwrap(),
    );
    f.write(
        "/root/init.yaml",
        &INIT_V1BETA3
            .replace("v1.30.8", "v1.34.1")
            .replace("v1beta3", "v1beta4")
            .replace(
                "kubeletExtraArgs: {node-ip: 10.0.0.1}",
                "kubeletExtraArgs: [{name: node-ip, value: 10.0.0.1}]",
            ),
    );
    f.ok("kubeadm", &["init", "--config=/root/init.yaml"]);
    let join = f.ok("kubeadm", &["token", "create", "--print-join-command"]);
    let spki = Command::new("sh")
        .arg("-c")
        .arg("openssl x509 -pubkey -noout -in \"$1\" | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1")
        .arg("sh")
        .arg(&crt)
        .output()
        .unwrap();
    let want = String::from_utf8_lossy(&spki.stdout).trim().to_string();
    assert_eq!(want.len(), 64);
    assert!(
        join.ends_with(&format!("sha256:{}", want)),
        "{} vs {}",
        join,
        want
    );
    // kk's CA is kept as it was.
    assert_eq!(
        std::fs::read(f.path("/etc/kubernetes/pki/ca.crt")).unwrap(),
        std::fs::read(&crt).unwrap()
    );
}
