//! What a Kubernetes node gets before kubeadm (roles kubernetes/pre-kubernetes and
//! kubernetes/certs, through tests/fixtures/kubernetes_pre.yaml), and the etcd endpoint sync
//! (kubernetes/sync-etcd-config, tests/fixtures/sync_etcd_config.yaml), on two real test
//! hosts: node 0 a control plane, node 1 a worker, dual stack.
//!
//! Real: the CNI plugins (Debian's containernetworking-plugins, packed as upstream's flat
//! tgz), systemd on the hosts (`systemd-analyze verify` of kubelet.service with its kubeadm
//! drop-in and of the renewal units; the timer scheduled), Debian's `haproxy -c` of the
//! worker's haproxy.cfg, `kubernetes-validate --strict` of the static pods for the configured
//! version (haproxy at v1.30, kube-vip ARP and BGP at v1.34), openssl in the renewal script.
//! FAKE (tests/fakes, no Kubernetes binary can be had here): kubeadm, kubelet, kubectl and helm,
//! staged under binary_dir as role `download` leaves them; the renewal script's `kubeadm certs
//! renew all` goes to the fake, whose journal shows it.
//!
//! Also: `--check` on fresh hosts changes no file; a second run is changed=0; the FAKE kubelet
//! starts under the written unit and drop-in, and a new kube_version replaces the binaries and
//! restarts it; switching the endpoint from haproxy to kube-vip removes the worker's haproxy
//! pod; an installed cluster's CA is never replaced; the renewal script renews only what
//! expires within 30 days (or with --force); the sync rewrites only the etcd endpoint list
//! (block or flow style), and does nothing when it is right. The sync's real run (kubeadm
//! `init phase control-plane apiserver`, kube-apiserver's port) is beyond the fakes: only its
//! --check and no-op paths run here.

use crate::common;

use std::path::Path;

use common::fakes::{self, stage_kube};
use common::validate::{assert_kubernetes_valid, haproxy_check, systemd_verify};
use common::{sh, Project, Run};
use serde_json::Value;
use sha2::{Digest, Sha256};
use testbed::TestBed;

const NAMES: [&str; 2] = ["kk-pre1", "kk-pre2"];
const V130: &str = "v1.30.8";
const V134: &str = "v1.34.3";
const HELM130: &str = "v3.13.3";
const HELM134: &str = "v3.18.5";
const CNI: &str = "v1.9.1";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    for (i, h) in bed.hosts().iter().enumerate() {
        let line = format!("      internal_ipv4: {}\n", h.ip);
        s = s.replace(
            &line,
            &format!("{}      internal_ipv6: \"fd00::{}\"\n", line, i + 1),
        );
    }
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}]\n    etcd:\n      hosts: [{a}]\n",
        a = NAMES[0],
        b = NAMES[1]
    ));
    s
}

/// Dual stack, external etcd, audit with a webhook, one kubeadm patch; the endpoint part is
/// `endpoint` (YAML under control_plane_endpoint).
fn config(kube_version: &str, endpoint: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  audit: true
  kubernetes:
    kube_version: {kube_version}
    control_plane_endpoint:
{endpoint}
    audit: {{webhook_server: "https://audit.example:8443/events"}}
    patches:
      - name: kubeletconfiguration0+merge.yaml
        content: |
          apiVersion: kubelet.config.k8s.io/v1beta1
          kind: KubeletConfiguration
          maxPods: 200
  etcd: {{deployment_type: external}}
  cni:
    type: none
    pod_cidr: "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112"
    service_cidr: "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116"
  cri: {{container_manager: containerd}}
  download: {{fetch: false}}
"#
    )
}

const HAPROXY: &str = "      type: haproxy\n";

fn kube_vip(address: &str, mode: &str) -> String {
    format!("      type: kube-vip\n      kube_vip: {{address: \"{address}\", mode: {mode}}}\n")
}

/// binary_dir as role `download` leaves it: the FAKE Kubernetes binaries and helm, and the
/// real CNI plugins as upstream's flat tgz.
fn stage(p: &Project, kube_version: &str, helm_version: &str) {
    let bin = p.path("wd/kubekey");
    stage_kube(&bin, &p.path("scratch"), kube_version, helm_version);
    let cni = bin.join(format!(
        "cni/plugins/{CNI}/amd64/cni-plugins-linux-amd64-{CNI}.tgz"
    ));
    if !cni.is_file() {
        testbed::artifacts::debian::cni_plugins_tgz(&cni);
    }
}

fn kk(p: &Project, fixture: &str, extra: &[&str]) -> Run {
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    p.kk_flow(&["run", playbook.to_str().unwrap()], extra)
}

/// Every file under the places the roles write, with size, mode and mtime.
fn listing(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "find /etc /usr/local /usr/libexec /opt /var/lib /tmp -xdev -not -path '/var/lib/systemd/*' -not -path '/tmp/systemd-private-*' -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort",
    )
}

fn changed_tasks(r: &Run) -> Vec<String> {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["changed"] == true)
        .map(|e| format!("{} on {}", e["task"].as_str().unwrap_or(""), e["host"]))
        .collect()
}

fn total_changed(r: &Run) -> i64 {
    ["localhost", NAMES[0], NAMES[1]]
        .iter()
        .map(|h| r.recap(h)["changed"].as_i64().unwrap_or(0))
        .sum()
}

/// Waits until the FAKE kubelet of `version` has journaled a service start on host `i`;
/// its arguments.
fn kubelet_started(bed: &TestBed, i: usize, version: &str) -> Vec<String> {
    for _ in 0..50 {
        let j = fakes::journal(bed, i);
        let run = j.iter().rev().find(|e| {
            e["tool"] == "kubelet"
                && e["version"] == version
                && e["args"].as_array().is_some_and(|a| a.len() > 1)
        });
        if let Some(e) = run {
            return e["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap_or_default().to_string())
                .collect();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    panic!(
        "kubelet {} did not start on host {}:\n{}",
        version,
        i,
        sh(
            bed,
            i,
            "systemctl status kubelet --no-pager 2>&1; journalctl -u kubelet --no-pager | tail -20"
        )
    );
}

/// A file on host `i`, exactly (`sh` trims the trailing newlines).
fn cat(bed: &TestBed, i: usize, path: &str) -> String {
    let out = sh(bed, i, &format!("cat {path}; echo x"));
    out.strip_suffix('x').unwrap().to_string()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

#[test]
fn pre_kubernetes_and_certs_on_a_control_plane_and_a_worker() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let p = Project::new();
    stage(&p, V130, HELM130);
    p.file("inventory.yaml", &inventory(&bed))
        .file("config.yaml", &config(V130, HAPROXY));
    let (cp, wk) = (0, 1);

    // --check on fresh hosts: says what it would do, changes no file.
    let before = [listing(&bed, cp), listing(&bed, wk)];
    let r = kk(&p, "kubernetes_pre.yaml", &["--check"]);
    r.code(0);
    assert!(total_changed(&r) > 0, "{}", r.describe());
    assert_eq!(
        listing(&bed, cp),
        before[0],
        "--check changed files on the control plane"
    );
    assert_eq!(
        listing(&bed, wk),
        before[1],
        "--check changed files on the worker"
    );

    // The run.
    let r = kk(&p, "kubernetes_pre.yaml", &[]);
    r.code(0);

    // Binaries: the fakes of the configured versions, the real CNI plugins.
    for i in [cp, wk] {
        assert_eq!(sh(&bed, i, "/usr/local/bin/kubeadm version -o short"), V130);
        assert_eq!(
            sh(&bed, i, "/usr/local/bin/kubelet --version"),
            format!("Kubernetes {V130}")
        );
        assert!(sh(&bed, i, "/usr/local/bin/kubectl version --client").contains(V130));
        // helm prints its commit after a "+", as the real one does.
        assert!(
            sh(&bed, i, "/usr/local/bin/helm version --short").starts_with(&format!("{HELM130}+"))
        );
        let bridge = common::artifacts::debian_file("containernetworking-plugins", "/cni/bridge");
        assert_eq!(
            sh(&bed, i, "sha256sum /opt/cni/bin/bridge | cut -d' ' -f1"),
            common::artifacts::sha256_file(&bridge)
        );
    }

    // kubelet: unit + kubeadm drop-in valid for systemd, enabled but not started.
    for i in [cp, wk] {
        systemd_verify(&bed, i, &["/etc/systemd/system/kubelet.service"]).unwrap();
        assert_eq!(sh(&bed, i, "systemctl is-enabled kubelet"), "enabled");
        assert_eq!(
            sh(&bed, i, "systemctl is-active kubelet || true"),
            "inactive"
        );
        let dropin = sh(&bed, i, "systemctl cat kubelet");
        // The node name is the host's name (native/init sets it to the inventory name; this
        // fixture does not run it).
        let name = sh(&bed, i, "hostname");
        let ip = bed.hosts()[i].ip;
        assert!(
            dropin.contains(&format!(
                "--node-ip={ip},fd00::{} --hostname-override={}",
                i + 1,
                name
            )),
            "{}",
            dropin
        );
        assert!(dropin.contains("--config=/var/lib/kubelet/config.yaml"));
        assert!(dropin.contains("EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env"));
        assert_eq!(
            sh(
                &bed,
                i,
                "cat /etc/kubernetes/patches/kubeletconfiguration0+merge.yaml"
            ),
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 200"
        );
    }

    // haproxy on the worker only: the real haproxy accepts the configuration, the pod is
    // valid for v1.30 and carries the configuration's digest.
    let cfg = cat(&bed, wk, "/etc/kubekey/haproxy/haproxy.cfg");
    haproxy_check(&cfg).unwrap();
    assert!(
        cfg.contains(&format!(
            "server {} {}:6443 check",
            NAMES[cp],
            bed.hosts()[cp].ip
        )),
        "{}",
        cfg
    );
    assert!(cfg.contains("bind 127.0.0.1:6443") && cfg.contains("bind *:8081"));
    let pod = sh(&bed, wk, "cat /etc/kubernetes/manifests/haproxy.yaml");
    // Rendered for v1.30 (the configured version); the same pod must stay valid at v1.34.
    for v in [V130, V134] {
        assert_kubernetes_valid(v, "the haproxy static pod", &pod);
    }
    let want_sum = sha256_hex(cfg.as_bytes());
    assert!(
        pod.contains(&want_sum),
        "checksum {} not in\n{}",
        want_sum,
        pod
    );
    assert_eq!(sh(&bed, cp, "ls /etc/kubernetes/manifests"), "");

    // Certificates on the control plane only: the CAs certs/init made, etcd's client pair.
    let pki = |f: &str| std::fs::read_to_string(p.path("wd/pki").join(f)).unwrap();
    for (src, dest) in [
        ("kubernetes.crt", "ca.crt"),
        ("kubernetes.key", "ca.key"),
        ("front-proxy.crt", "front-proxy-ca.crt"),
        ("front-proxy.key", "front-proxy-ca.key"),
        ("root.crt", "etcd/ca.crt"),
        ("etcd-client.crt", "etcd/client.crt"),
        ("etcd-client.key", "etcd/client.key"),
    ] {
        assert_eq!(
            sh(&bed, cp, &format!("cat /etc/kubernetes/pki/{dest}")),
            pki(src).trim_end(),
            "{dest}"
        );
    }
    assert_eq!(sh(&bed, cp, "stat -c %a /etc/kubernetes/pki/ca.key"), "600");
    // kubeadm join's preflight refuses a worker that already has ca.crt.
    assert_eq!(sh(&bed, wk, "ls -A /etc/kubernetes/pki"), "");
    // Audit on the control plane.
    assert!(sh(&bed, cp, "cat /etc/kubernetes/audit/policy.yaml").contains("kind: Policy"));
    assert!(sh(&bed, cp, "cat /etc/kubernetes/audit/webhook.yaml")
        .contains("server: \"https://audit.example:8443/events\""));
    assert_eq!(
        sh(
            &bed,
            wk,
            "test -e /etc/kubernetes/audit && echo yes || echo no"
        ),
        "no"
    );

    // The renewal units: valid, the timer scheduled for Monday 03:00.
    systemd_verify(
        &bed,
        cp,
        &[
            "/etc/systemd/system/k8s-certs-renew.service",
            "/etc/systemd/system/k8s-certs-renew.timer",
        ],
    )
    .unwrap();
    assert_eq!(
        sh(&bed, cp, "systemctl is-enabled k8s-certs-renew.timer"),
        "enabled"
    );
    assert_eq!(
        sh(&bed, cp, "systemctl is-active k8s-certs-renew.timer"),
        "active"
    );
    assert!(sh(
        &bed,
        cp,
        "systemctl show -p NextElapseUSecRealtime --value k8s-certs-renew.timer"
    )
    .starts_with("Mon "));
    // The service runs the script the role wrote (upstream's never existed): with no
    // certificate expiring it renews nothing.
    sh(&bed, cp, "systemctl start k8s-certs-renew.service");
    assert!(
        sh(&bed, cp, "journalctl -u k8s-certs-renew.service --no-pager")
            .contains("nothing to renew")
    );
    assert!(fakes::calls(&fakes::journal(&bed, cp), "kubeadm", &["certs"]).is_empty());
    // Forced, it renews through kubeadm and refreshes /root/.kube/config from admin.conf.
    sh(
        &bed,
        cp,
        "printf 'apiVersion: v1\\nkind: Config\\nclusters: []\\ncontexts: []\\nusers: []\\ncurrent-context: \"\"\\n' > /etc/kubernetes/admin.conf",
    );
    let out = sh(
        &bed,
        cp,
        "/usr/local/bin/kube-scripts/k8s-certs-renew.sh --force 2>&1",
    );
    assert!(out.contains("neither crictl nor docker"), "{}", out);
    assert_eq!(
        fakes::calls(
            &fakes::journal(&bed, cp),
            "kubeadm",
            &["certs", "renew", "all"]
        )
        .len(),
        1
    );
    assert_eq!(
        sh(&bed, cp, "cat /root/.kube/config"),
        sh(&bed, cp, "cat /etc/kubernetes/admin.conf")
    );
    // Unforced, it reads the expiry dates with openssl: a certificate valid for 400 more days
    // leaves it alone, one that expires in 10 days makes it renew.
    let renewals = || {
        fakes::calls(
            &fakes::journal(&bed, cp),
            "kubeadm",
            &["certs", "renew", "all"],
        )
        .len()
    };
    let cert = |days: u32| {
        sh(
            &bed,
            cp,
            &format!("openssl req -x509 -newkey rsa:2048 -nodes -keyout /tmp/apiserver.key -out /etc/kubernetes/pki/apiserver.crt -days {days} -subj /CN=kube-apiserver 2>/dev/null"),
        );
        sh(
            &bed,
            cp,
            "/usr/local/bin/kube-scripts/k8s-certs-renew.sh 2>&1",
        )
    };
    let out = cert(400);
    assert!(out.contains("nothing to renew"), "{}", out);
    assert_eq!(renewals(), 1);
    let out = cert(10);
    assert!(out.contains("/etc/kubernetes/pki/apiserver.crt"), "{}", out);
    assert_eq!(renewals(), 2);
    sh(
        &bed,
        cp,
        "rm -f /etc/kubernetes/admin.conf /root/.kube/config /etc/kubernetes/pki/apiserver.crt",
    );

    // Second run: nothing changes.
    let r = kk(&p, "kubernetes_pre.yaml", &[]);
    r.code(0);
    assert_eq!(total_changed(&r), 0, "changed: {:?}", changed_tasks(&r));

    // The unit and drop-in as systemd runs them: once kubeadm's files exist (written here by
    // hand) the FAKE kubelet starts with the drop-in's flags; the upgrade below restarts it.
    sh(
        &bed,
        wk,
        "printf 'apiVersion: kubelet.config.k8s.io/v1beta1\\nkind: KubeletConfiguration\\n' > /var/lib/kubelet/config.yaml \
         && printf 'apiVersion: v1\\nkind: Config\\n' > /etc/kubernetes/kubelet.conf && systemctl start kubelet",
    );
    let started = kubelet_started(&bed, wk, V130);
    for flag in [
        "--config=/var/lib/kubelet/config.yaml",
        "--kubeconfig=/etc/kubernetes/kubelet.conf",
        "--node-ip=",
        "--hostname-override=",
    ] {
        assert!(
            started.iter().any(|a| a.starts_with(flag)),
            "{flag} in {started:?}"
        );
    }
    assert_eq!(sh(&bed, wk, "systemctl is-active kubelet"), "active");

    // A new Kubernetes version and kube-vip (BGP): binaries replaced, kube-vip on the control
    // plane, the worker's haproxy pod gone.
    stage(&p, V134, HELM134);
    let vip = bed.hosts()[cp]
        .ip
        .to_string()
        .rsplit_once('.')
        .unwrap()
        .0
        .to_string()
        + ".200";
    p.file("config.yaml", &config(V134, &kube_vip(&vip, "BGP")));
    let r = kk(&p, "kubernetes_pre.yaml", &[]);
    r.code(0);
    for i in [cp, wk] {
        assert_eq!(sh(&bed, i, "/usr/local/bin/kubeadm version -o short"), V134);
        assert_eq!(
            sh(&bed, i, "/usr/local/bin/kubelet --version"),
            format!("Kubernetes {V134}")
        );
    }
    // The running kubelet was restarted onto the new binary.
    kubelet_started(&bed, wk, V134);
    assert_eq!(sh(&bed, wk, "ls /etc/kubernetes/manifests"), "");
    let kv = sh(&bed, cp, "cat /etc/kubernetes/manifests/kube-vip.yaml");
    for v in [V134, V130] {
        assert_kubernetes_valid(v, "the kube-vip static pod (BGP)", &kv);
    }
    assert!(
        kv.contains(&format!("value: \"{vip}\"")) && kv.contains("value: \"eth0\""),
        "{}",
        kv
    );
    assert!(
        kv.contains(&format!(
            "- name: \"bgp_routerid\"\n          value: \"{}\"",
            bed.hosts()[cp].ip
        )),
        "{}",
        kv
    );
    // ARP: the other template branch, also valid.
    p.file("config.yaml", &config(V134, &kube_vip(&vip, "ARP")));
    kk(&p, "kubernetes_pre.yaml", &[]).code(0);
    let kv = sh(&bed, cp, "cat /etc/kubernetes/manifests/kube-vip.yaml");
    for v in [V134, V130] {
        assert_kubernetes_valid(v, "the kube-vip static pod (ARP)", &kv);
    }
    assert!(
        kv.contains("- name: \"vip_arp\"\n          value: \"true\""),
        "{}",
        kv
    );
    let r = kk(&p, "kubernetes_pre.yaml", &[]);
    r.code(0);
    assert_eq!(total_changed(&r), 0, "changed: {:?}", changed_tasks(&r));

    // An installed cluster keeps its CA: another one on the controller is refused before
    // anything is copied, naming the key to set. Installed: kubelet loaded and the
    // kubelet.conf kubeadm init/join leaves (without it the node is 'not-joined').
    sh(
        &bed,
        cp,
        "touch /etc/kubernetes/kubelet.conf && cp /etc/kubernetes/pki/front-proxy-ca.crt /tmp/fp && echo '# another CA' >> /etc/kubernetes/pki/front-proxy-ca.crt",
    );
    let before = sh(&bed, cp, "cat /etc/kubernetes/pki/front-proxy-ca.crt");
    let r = kk(&p, "kubernetes_pre.yaml", &[]);
    r.code(2);
    let msg = r
        .result("PreKubernetes | The CAs are the cluster's", NAMES[cp])
        .to_string();
    assert!(
        msg.contains("kk does not replace a running cluster's CA")
            && msg.contains("kubernetes.certs.front_proxy_cert"),
        "{}",
        msg
    );
    assert_eq!(
        sh(&bed, cp, "cat /etc/kubernetes/pki/front-proxy-ca.crt"),
        before
    );
    sh(
        &bed,
        cp,
        "mv /tmp/fp /etc/kubernetes/pki/front-proxy-ca.crt && rm /etc/kubernetes/kubelet.conf",
    );

    sync_etcd_config(&bed, &p, cp);
}

/// kubernetes/sync-etcd-config on the control plane: with the endpoints already right it does
/// nothing; with a stale list, --check reports the rewrite (only the list changes) without
/// writing or calling kubeadm.
fn sync_etcd_config(bed: &TestBed, p: &Project, cp: usize) {
    let ip = bed.hosts()[cp].ip;
    let file = |endpoints: &str| {
        format!(
            "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nlocalAPIEndpoint:\n  advertiseAddress: {ip}\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\netcd:\n  external:\n    endpoints:\n{endpoints}    caFile: /etc/kubernetes/pki/etcd/ca.crt\n    certFile: /etc/kubernetes/pki/etcd/client.crt\n    keyFile: /etc/kubernetes/pki/etcd/client.key\nkubernetesVersion: {V134}\n"
        )
    };
    let right = file(&format!(
        "      - https://{ip}:2379\n      - https://[fd00::1]:2379\n"
    ));
    let put = |text: &str| {
        sh(
            bed,
            cp,
            &format!(
                "cat > /etc/kubernetes/kubeadm-config.yaml <<'EOF'\n{}EOF",
                text
            ),
        );
    };
    let kubeadm_calls = || {
        fakes::journal(bed, cp)
            .iter()
            .filter(|e| e["tool"] == "kubeadm" && e["args"][0] == "init")
            .count()
    };
    put(&right);
    let r = kk(p, "sync_etcd_config.yaml", &[]);
    r.code(0);
    assert_eq!(r.recap(NAMES[0])["changed"], 0, "{:?}", changed_tasks(&r));
    assert_eq!(kubeadm_calls(), 0);

    let stale = file("      - https://10.9.9.9:2379\n");
    put(&stale);
    let r = kk(p, "sync_etcd_config.yaml", &["--check", "--diff"]);
    r.code(0);
    let w = r.result(
        "SyncEtcd | Write /etc/kubernetes/kubeadm-config.yaml",
        NAMES[0],
    );
    assert_eq!(w["changed"], true, "{}", w);
    let diff: Vec<Value> = w["result"]["diff"].as_array().cloned().unwrap_or_default();
    let after = diff
        .first()
        .and_then(|d| d["after"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(after, right, "the rewritten file");
    assert_eq!(
        sh(bed, cp, "cat /etc/kubernetes/kubeadm-config.yaml"),
        stale.trim_end()
    );
    assert_eq!(kubeadm_calls(), 0);

    // A flow-style list becomes the block list.
    put(&stale.replace(
        "    endpoints:\n      - https://10.9.9.9:2379\n",
        "    endpoints: [https://10.9.9.9:2379]\n",
    ));
    let r = kk(p, "sync_etcd_config.yaml", &["--check", "--diff"]);
    r.code(0);
    let w = r.result(
        "SyncEtcd | Write /etc/kubernetes/kubeadm-config.yaml",
        NAMES[0],
    );
    assert_eq!(
        w["result"]["diff"][0]["after"].as_str(),
        Some(right.as_str()),
        "{}",
        w
    );
    assert_eq!(kubeadm_calls(), 0);
}
