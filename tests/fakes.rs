//! The test infrastructure of the Kubernetes install phase, proved on its own:
//! - the FAKE kubeadm / kubelet / kubectl / helm (tests/fakes/) on one real test host: what
//!   they accept, refuse, leave and journal;
//! - the real validators (tests/common/validate.rs): kubernetes-validate against two
//!   Kubernetes versions' schemas, `haproxy -c`, `systemd-analyze verify` — each shown to
//!   reject a bad input too.

use crate::common;

use common::fakes::{calls, cluster_state, fake_chart, install_kube, journal, push};
use common::validate::{
    haproxy_check, kubeadm_config, kubernetes_validate, systemd_verify, systemd_verify_files,
};
use testbed::TestBed;

const KUBE: &str = "v1.34.1";
const HELM: &str = "v3.18.5";

/// kubeadm's kubelet unit and drop-in, as pre-kubernetes installs them.
const KUBELET_UNIT: &str = "[Unit]\nDescription=kubelet: The Kubernetes Node Agent\nAfter=network-online.target\n\n[Service]\nExecStart=/usr/local/bin/kubelet\nRestart=always\nStartLimitInterval=0\nRestartSec=10\n\n[Install]\nWantedBy=multi-user.target\n";
const KUBELET_DROPIN: &str = "[Service]\nEnvironment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\nEnvironment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\nEnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nExecStart=\nExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n";

fn init_config(ip: &str) -> String {
    format!(
        r#"apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint: {{advertiseAddress: {ip}, bindPort: 6443}}
nodeRegistration:
  name: node1
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs: [{{name: node-ip, value: {ip}}}]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: {KUBE}
controlPlaneEndpoint: lb.kubesphere.local:6443
networking: {{podSubnet: 10.233.64.0/18, serviceSubnet: 10.233.0.0/18}}
apiServer:
  certSANs: [lb.kubesphere.local]
  extraArgs: [{{name: bind-address, value: 0.0.0.0}}]
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS: [169.254.25.10]
"#
    )
}

/// Writes `content` to `remote` on host 0.
fn put(bed: &TestBed, remote: &str, content: &str) {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), content).unwrap();
    push(bed, 0, f.path(), remote, "644");
}

/// Runs `cmd` on host 0: (exit code, stdout, stderr).
fn run(bed: &TestBed, cmd: &str) -> (i32, String, String) {
    let out = bed.ssh(0, cmd);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
        String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
    )
}

fn ok(bed: &TestBed, cmd: &str) -> String {
    let (code, out, err) = run(bed, cmd);
    assert_eq!(code, 0, "{}: {}\n{}", cmd, out, err);
    out
}

#[test]
fn fakes_on_a_test_host_check_record_and_leave_what_the_flow_reads() {
    let bed = TestBed::start(1).expect("test bed");
    let ip = bed.hosts()[0].ip.to_string();
    install_kube(&bed, 0, KUBE, HELM);
    put(&bed, "/etc/systemd/system/kubelet.service", KUBELET_UNIT);
    put(
        &bed,
        "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
        KUBELET_DROPIN,
    );
    ok(&bed, "systemctl daemon-reload && systemctl enable kubelet");

    // systemd-analyze verify: the kubelet unit passes; a unit with an unknown key, a bad
    // value and a missing binary does not.
    systemd_verify(&bed, 0, &["/etc/systemd/system/kubelet.service"]).unwrap();
    put(
        &bed,
        "/tmp/bad.service",
        "[Service]\nExecStart=/usr/local/bin/nothere\nRestartz=always\nRestart=sometimes\n",
    );
    let e = systemd_verify(&bed, 0, &["/tmp/bad.service"]).unwrap_err();
    for finding in [
        "Unknown key 'Restartz'",
        "restart specifier",
        "/usr/local/bin/nothere is not executable",
    ] {
        assert!(e.contains(finding), "{}", e);
    }

    // Rendered files not installed: a drop-in beside its unit is read with it.
    systemd_verify_files(
        &bed,
        0,
        &[
            ("kubelet.service", KUBELET_UNIT),
            ("kubelet.service.d/10-kubeadm.conf", KUBELET_DROPIN),
        ],
    )
    .unwrap();
    let e = systemd_verify_files(
        &bed,
        0,
        &[
            ("kubelet.service", KUBELET_UNIT),
            (
                "kubelet.service.d/10-kubeadm.conf",
                &KUBELET_DROPIN.replace("EnvironmentFile=", "EnvironmentFil="),
            ),
        ],
    )
    .unwrap_err();
    assert!(e.contains("Unknown key 'EnvironmentFil'"), "{}", e);

    // Versions.
    assert_eq!(ok(&bed, "kubeadm version -o short"), KUBE);
    assert_eq!(
        ok(&bed, "kubelet --version"),
        format!("Kubernetes {}", KUBE)
    );
    assert_eq!(ok(&bed, "helm version --template '{{.Version}}'"), HELM);
    // Outside the interface: exit 64, saying so.
    let (code, _, err) = run(&bed, "kubeadm upgrade apply v1.34.2");
    assert_eq!(code, 64);
    assert_eq!(err, "FAKE kubeadm: unsupported: upgrade apply v1.34.2");

    // kubeadm init with a valid v1beta4 config: kubeconfigs, kubelet config, kubelet up.
    put(&bed, "/root/kubeadm-config.yaml", &init_config(&ip));
    let out = ok(
        &bed,
        "kubeadm init --config=/root/kubeadm-config.yaml --ignore-preflight-errors=FileExisting-crictl,ImagePull --upload-certs",
    );
    let key = out.lines().last().unwrap();
    assert!(
        key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()),
        "{}",
        out
    );
    ok(&bed, "ls /etc/kubernetes/admin.conf /etc/kubernetes/super-admin.conf /etc/kubernetes/kubelet.conf /etc/kubernetes/controller-manager.conf /etc/kubernetes/scheduler.conf /etc/kubernetes/pki/ca.crt /var/lib/kubelet/config.yaml");
    assert!(ok(&bed, "cat /etc/kubernetes/admin.conf")
        .contains("server: https://lb.kubesphere.local:6443"));
    assert!(
        ok(&bed, "cat /var/lib/kubelet/kubeadm-flags.env").contains(&format!("--node-ip={}", ip))
    );
    assert_eq!(ok(&bed, "systemctl is-active kubelet"), "active");
    // Again: refused, as kubeadm's preflight does.
    let (code, _, err) = run(&bed, "kubeadm init --config=/root/kubeadm-config.yaml");
    assert_eq!(code, 1);
    assert!(
        err.contains("/etc/kubernetes/admin.conf already exists"),
        "{}",
        err
    );
    // An unknown field: refused with its path; a v1beta3 config: refused for v1.34.
    put(
        &bed,
        "/root/bad.yaml",
        &init_config(&ip).replace("  certSANs:", "  extraArgz: []\n  certSANs:"),
    );
    let (code, _, err) = run(&bed, "kubeadm init --config=/root/bad.yaml");
    assert_eq!(code, 1);
    assert!(
        err.contains("ClusterConfiguration.apiServer.extraArgz: unknown field"),
        "{}",
        err
    );
    put(
        &bed,
        "/root/old.yaml",
        &init_config(&ip).replace("v1beta4", "v1beta3"),
    );
    let (_, _, err) = run(&bed, "kubeadm init --config=/root/old.yaml");
    assert!(err.contains("InitConfiguration.apiVersion: \"kubeadm.k8s.io/v1beta3\" is not the one Kubernetes v1.34.1 reads"), "{}", err);

    // token create --print-join-command: `kubeadm join <endpoint> --token … --discovery-token-ca-cert-hash sha256:…`.
    let join = ok(
        &bed,
        "kubeadm token create --print-join-command --ttl 2h0m0s",
    );
    let w: Vec<&str> = join.split(' ').collect();
    assert_eq!(w.len(), 7, "{}", join);
    assert_eq!(&w[..3], ["kubeadm", "join", "lb.kubesphere.local:6443"]);
    assert_eq!((w[3], w[5]), ("--token", "--discovery-token-ca-cert-hash"));
    let (id, secret) = w[4].split_once('.').unwrap();
    assert!(id.len() == 6 && secret.len() == 16, "{}", join);
    assert!(
        w[6].strip_prefix("sha256:").is_some_and(|h| h.len() == 64),
        "{}",
        join
    );
    let cert_key = ok(&bed, "kubeadm init phase upload-certs --upload-certs");
    assert_eq!(cert_key.lines().last().unwrap().len(), 64);

    // helm upgrade --install of a FAKE chart with values, then status and values.
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("tigera-operator-v3.31.3.tgz");
    fake_chart("tigera-operator", "v3.31.3", &chart);
    push(&bed, 0, &chart, "/root/chart.tgz", "644");
    put(
        &bed,
        "/root/values.yaml",
        "installation:\n  calicoNetwork: {bgp: Disabled}\n",
    );
    let helm = "helm --kubeconfig /etc/kubernetes/admin.conf";
    let (code, _, err) = run(&bed, &format!("{helm} upgrade --install calico /root/chart.tgz -n tigera-operator -f /root/values.yaml"));
    assert_eq!(code, 1, "the namespace does not exist yet");
    assert!(
        err.contains("namespaces \"tigera-operator\" not found"),
        "{}",
        err
    );
    let out = ok(&bed, &format!("{helm} upgrade --install calico /root/chart.tgz -n tigera-operator --create-namespace -f /root/values.yaml --set installation.registry=r.example --wait --timeout 5m"));
    assert!(
        out.starts_with("Release \"calico\" does not exist. Installing it now."),
        "{}",
        out
    );
    assert!(
        ok(&bed, &format!("{helm} status calico -n tigera-operator")).contains("STATUS: deployed")
    );
    let values: serde_json::Value = serde_json::from_str(&ok(
        &bed,
        &format!("{helm} get values calico -n tigera-operator -o json"),
    ))
    .unwrap();
    assert_eq!(
        values,
        serde_json::json!({"installation": {"calicoNetwork": {"bgp": "Disabled"}, "registry": "r.example"}})
    );
    let out = ok(&bed, &format!("{helm} upgrade --install calico /root/chart.tgz -n tigera-operator -f /root/values.yaml"));
    assert!(
        out.starts_with("Release \"calico\" has been upgraded."),
        "{}",
        out
    );
    let (code, _, _) = run(&bed, &format!("{helm} status cilium -n kube-system"));
    assert_eq!(code, 1);

    // kubectl label: the second time nothing changes.
    let kubectl = "kubectl --kubeconfig /etc/kubernetes/admin.conf";
    assert_eq!(
        ok(
            &bed,
            &format!("{kubectl} label --overwrite node node1 node-role.kubernetes.io/worker=")
        ),
        "node/node1 labeled"
    );
    assert_eq!(
        ok(
            &bed,
            &format!("{kubectl} label --overwrite node node1 node-role.kubernetes.io/worker=")
        ),
        "node/node1 not labeled"
    );
    // Several nodes in one call, as kubectl: a line for each.
    assert_eq!(
        ok(
            &bed,
            &format!(
                "{kubectl} label --overwrite node node1 node2 node-role.kubernetes.io/worker="
            )
        ),
        "node/node1 not labeled\nnode/node2 labeled"
    );
    let (code, _, err) = run(&bed, &format!("{kubectl} label node node1 bad/key/x=1"));
    assert_eq!(code, 1, "{}", err);
    let (code, _, err) = run(&bed, "kubectl --kubeconfig /nowhere get node node1 -o json");
    assert_eq!(code, 1);
    assert!(err.contains("/nowhere does not exist"), "{}", err);

    // A worker join after a reset: the JoinConfiguration's token is checked.
    ok(&bed, "kubeadm reset -f");
    let join_cfg = format!(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n    apiServerEndpoint: lb.kubesphere.local:6443\n    token: {}\n    caCertHashes: [{}]\nnodeRegistration: {{name: node1}}\n",
        w[4], w[6]
    );
    put(
        &bed,
        "/root/join-bad.yaml",
        &join_cfg.replace(w[4], "not-a-token"),
    );
    let (code, _, err) = run(&bed, "kubeadm join --config=/root/join-bad.yaml");
    assert_eq!(code, 1);
    assert!(err.contains("not a bootstrap token"), "{}", err);
    put(&bed, "/root/join.yaml", &join_cfg);
    ok(&bed, "kubeadm join --config=/root/join.yaml");
    assert_eq!(ok(&bed, "systemctl is-active kubelet"), "active");

    // The journal: every call, its files, its outcome.
    let j = journal(&bed, 0);
    let inits = calls(
        &j,
        "kubeadm",
        &["init", "--config=/root/kubeadm-config.yaml"],
    );
    assert_eq!(inits.len(), 2);
    assert_eq!(
        (inits[0]["exit"].as_i64(), inits[1]["exit"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        inits[0]["files"]["/root/kubeadm-config.yaml"],
        init_config(&ip).as_str()
    );
    let kubelet_runs = calls(&j, "kubelet", &[]);
    assert!(
        kubelet_runs
            .iter()
            .any(|e| e["exit"] == 0 && e["files"]["/var/lib/kubelet/config.yaml"].is_string()),
        "the kubelet ran with its config: {:?}",
        kubelet_runs
    );
    let installs = calls(
        &j,
        "helm",
        &["--kubeconfig", "/etc/kubernetes/admin.conf", "upgrade"],
    );
    assert_eq!(installs.len(), 3);
    assert!(installs[1]["files"]["/root/values.yaml"].is_string());
    assert_eq!(calls(&j, "kubeadm", &["join"]).len(), 2);
    // The fake cluster state: the release with its merged values, the node's labels.
    let st = cluster_state(&bed, 0);
    let rel = &st["releases"]["tigera-operator/calico"];
    assert_eq!(rel["chart"], "tigera-operator-3.31.3");
    assert_eq!(rel["revision"], 2);
    assert_eq!(
        rel["values"]["installation"]["calicoNetwork"]["bgp"],
        "Disabled"
    );
    assert_eq!(
        st["nodes"]["node1"]["labels"]["node-role.kubernetes.io/worker"],
        ""
    );
}

#[test]
fn kubernetes_validate_checks_objects_against_each_versions_schema() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: kube-vip, namespace: kube-system}\nspec:\n  hostNetwork: true\n  containers:\n  - name: kube-vip\n    image: ghcr.io/kube-vip/kube-vip:v0.8.9\n    args: [manager]\n    securityContext: {capabilities: {add: [NET_ADMIN, NET_RAW]}}\n    volumeMounts: [{mountPath: /etc/kubernetes/admin.conf, name: kubeconfig}]\n  volumes: [{name: kubeconfig, hostPath: {path: /etc/kubernetes/admin.conf}}]\n";
    for v in ["v1.30.8", "v1.34.1"] {
        let r = kubernetes_validate(v, pod).unwrap_or_else(|e| panic!("{}: {}", v, e));
        assert_eq!(r.passed, ["pod/kube-vip"]);
    }
    // Strict: an unknown field fails.
    let e = kubernetes_validate("v1.30.8", &pod.replace("args:", "argz:")).unwrap_err();
    assert!(e.contains("'argz' was unexpected"), "{}", e);
    // The version's schema: pod-level resources exist from v1.32 only.
    let sized = pod.replace(
        "  hostNetwork: true\n",
        "  hostNetwork: true\n  resources: {limits: {cpu: \"1\"}}\n",
    );
    assert!(kubernetes_validate("v1.34.1", &sized).is_ok());
    assert!(kubernetes_validate("v1.30.8", &sized)
        .unwrap_err()
        .contains("'resources' was unexpected"));
    // Custom resources are reported apart, not validated.
    let r = kubernetes_validate("v1.34.1", "apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.233.64.0/18}\n").unwrap();
    assert_eq!(r.unknown_kinds, ["crd.projectcalico.org/v1 IPPool"]);
    assert!(r.passed.is_empty());
}

#[test]
fn haproxy_check_runs_the_real_haproxy() {
    let cfg = "global\n    maxconn 4000\n    log 127.0.0.1 local0\n\ndefaults\n    mode http\n    log global\n    option httplog\n    option dontlognull\n    retries 5\n    timeout connect 30s\n    timeout client 30s\n    timeout server 15m\n\nfrontend healthz\n  bind *:8081\n  mode http\n  monitor-uri /healthz\n\nfrontend kube_api_frontend\n  bind 127.0.0.1:6443\n  mode tcp\n  option tcplog\n  default_backend kube_api_backend\n\nbackend kube_api_backend\n  mode tcp\n  balance leastconn\n  option httpchk GET /healthz\n  http-check expect status 200\n  server cp1 10.0.0.1:6443 check check-ssl verify none\n";
    haproxy_check(cfg).unwrap();
    let e = haproxy_check(&cfg.replace("balance leastconn", "balance sometimes")).unwrap_err();
    assert!(e.contains("balance only supports"), "{}", e);
    // A warning (httplog on a tcp frontend) is a finding too.
    let e = haproxy_check(&cfg.replace("  option tcplog\n", "  option httplog\n")).unwrap_err();
    assert!(e.contains("[WARNING]"), "{}", e);
}

#[test]
fn kubeadm_config_checks_fields_against_the_versions_api() {
    let cfg = init_config("10.0.0.1");
    assert_eq!(
        kubeadm_config(KUBE, &cfg).unwrap(),
        [
            "InitConfiguration",
            "ClusterConfiguration",
            "KubeletConfiguration"
        ]
    );
    let errs = kubeadm_config("v1.30.8", &cfg).unwrap_err();
    assert!(
        errs[0].starts_with("InitConfiguration.apiVersion:"),
        "{:?}",
        errs
    );
    let errs = kubeadm_config(KUBE, &cfg.replace("cgroupDriver", "cgroupDrivr")).unwrap_err();
    assert_eq!(errs, ["KubeletConfiguration.cgroupDrivr: unknown field"]);
}
