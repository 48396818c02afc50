//! `kk create cluster` (the bundled playbooks/create_cluster.yaml) end to end on four real
//! test hosts: 1 control plane (kk-cp1), 2 workers, 1 registry host; Kubernetes v1.30.8
//! (kubeadm config v1beta3), control_plane_endpoint haproxy (a static pod on each worker),
//! calico + multus, the OpenEBS local PV storage class, one add-on (chart + manifest).
//! The flow: sudo's secure_path, the pre-install hooks, the precheck, certificates and
//! sha256-verified downloads on the controller, the OS init of every node, external etcd (3
//! members), Docker and the docker-registry on the registry host with the images of
//! binary_dir/images pushed into it, containerd on the Kubernetes nodes, Kubernetes (kubeadm
//! init on kk-cp1, the workers joined, labels and taints, CoreDNS/NodeLocalDNS), the CNI,
//! storage class and add-on, the post-install hooks, the summary.
//!
//! What runs for real: kk over SSH, every file the roles write, etcd 3.5.16, containerd
//! 1.7.24, Docker 26.1.5 and docker-compose 2.26.1 from Debian trixie; runc 1.1.5, the CNI
//! plugins and the docker-registry 2.8.2 binary (in a `registry` image the test builds) from
//! bookworm. FAKES (tests/fakes, clearly named; no package registry here carries them, and no
//! API server can run here): kubeadm, kubelet, kubectl and helm (they check what they are
//! given and record it in /var/lib/kk-fakes/journal.jsonl), crictl, calicoctl and the chart
//! archives. What the roles render is checked with real validators: every Kubernetes object
//! kubectl was given and the haproxy static pod with `kubernetes-validate --strict` for
//! v1.30, haproxy.cfg with `haproxy -c`, the kubelet unit with `systemd-analyze verify`; the
//! kubeadm configs were checked field by field by the fake kubeadm (kubeadm's v1beta3 API).
//!
//! Kernel-global sysctls are left alone (the hosts share this machine's kernel), time sync is
//! off, and containerd's data root is on the hosts' tmpfs (its overlayfs snapshotter cannot sit
//! on their overlay root; see tests/cri.rs). No NFS host: this machine's kernel has no NFS
//! server (tests/native_install.rs shows it).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::artifacts::{assert_landed, manifest, sha256_file};
use common::cluster::{
    config_downloads_and_native, failures, files, inits, join_token, kube_calls, kubeadm_config,
    line, listing, results, serve_artifacts, serve_registry,
};
use common::cri::{busybox_layout, CONTAINERD_VERSION};
use common::docker::{COMPOSE_VERSION, DOCKER_VERSION, REGISTRY_VERSION};
use common::etcd::ETCD_VERSION;
use common::fakes::{self, FakeArtifacts};
use common::registry::curl;
use common::validate::{assert_kubernetes_valid, haproxy_check, systemd_verify};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

/// Inventory names (the hosts boot as node1..node4, so every hostname changes).
const NAMES: [&str; 4] = ["kk-cp1", "kk-w1", "kk-w2", "kk-reg"];
/// The registry password of the config: it must never be printed or logged.
const PASSWORD: &str = "e2e-Registry-Secret-7";
/// The image the test puts into binary_dir/images (pushed by the flow).
const IMAGE: &str = "docker.io/kk/busybox:e2e";
/// The Kubernetes release installed (the fakes play it) and the versions of its matrix
/// (roles/defaults/vars/v1.30.yaml) the test serves.
const KUBE: &str = "v1.30.8";
const HELM: &str = "v3.13.3";
const CALICO: &str = "v3.29.7";
const LOCALPV: &str = "4.4.0";

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &NAMES);
    s.push_str(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-w1, kk-w2]\n    etcd:\n      hosts: [kk-cp1, kk-w1, kk-w2]\n    image_registry:\n      hosts: [kk-reg]\n",
    );
    s
}

/// The artifacts beyond [`serve_artifacts`]'s, served under `cn/`: Docker, compose and the
/// registry image (their manifest entries are returned), and the FAKE Kubernetes tools,
/// charts and calicoctl (their digests, for the config's download.sha256, in `fa`).
fn serve_install_artifacts(root: &Path, scratch: &Path, fa: &mut FakeArtifacts) -> String {
    *fa = fakes::serve_kube(root, scratch, KUBE, HELM);
    fakes::serve_chart(fa, root, "calico", CALICO);
    fakes::serve_chart(fa, root, "localpv_provisioner", LOCALPV);
    serve_registry(root, scratch) + &fa.manifest_extra
}

/// A config the precheck passes with the served artifacts; `mirror` is the server's root URL
/// (runc is served only under /mirror/). etcd and containerd are newer than the test
/// manifest's entries, the FAKE tools and charts have no entry for their versions:
/// download.sha256 gives their digests.
fn config(p: &Project, mirror: &str, sums: &BTreeMap<&str, String>, fa: &FakeArtifacts) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes:
    kube_version: {kube}
    control_plane_endpoint: {{type: haproxy}}
    custom_labels: {{kk.io/e2e: "yes"}}
    custom_taints: ["kk.io/e2e=yes:PreferNoSchedule"]
  etcd: {{deployment_type: external, etcd_version: {etcd}}}
  cri:
    container_manager: containerd
    containerd_version: {containerd}
    runc_version: v1.1.5
    crictl_version: v1.34.0
    docker_version: "{docker}"
    containerd:
      data_root: /tmp/kk-containerd
  cni:
    type: calico
    multi_cni: multus
    cni_plugins_version: v1.1.1
    calico:
      values:
        installation: {{calicoNetwork: {{bgp: Disabled}}}}
  storage_class:
    local: {{enabled: true, values: {{helperPod: {{image: {{tag: e2e-user}}}}}}}}
    nfs: {{enabled: false}}
  addons:
    - name: demo
      namespace: demo
      chart: {{path: addons/demo-0.1.0.tgz}}
      values: {{replicaCount: 2}}
      manifests: [addons/demo-config.yaml]
  image_registry:
    type: docker-registry
    docker_registry_version: "{registry}"
    dockercompose_version: {compose}
    auth:
      password: "{password}"
{tail}"#,
        kube = KUBE,
        tail = config_downloads_and_native(&p.path("artifacts.yaml"), mirror, sums, fa),
        etcd = ETCD_VERSION,
        containerd = CONTAINERD_VERSION,
        docker = DOCKER_VERSION,
        registry = REGISTRY_VERSION,
        compose = COMPOSE_VERSION,
        password = PASSWORD,
    )
}

/// `kk create cluster -i inventory.yaml -c config.yaml --workdir wd --output json <extra…>`;
/// the registry password appears nowhere in what it prints or records.
fn create_cluster(p: &Project, extra: &[&str]) -> Run {
    let r = p.kk_flow(&["create", "cluster"], extra);
    common::assert_secret_hidden(p, &r, PASSWORD);
    r
}

/// Kubernetes on kk-cp1 (init), kk-w1 and kk-w2 (joined), as the fakes recorded it, and the
/// rendered files through real validators. Returns the count of cluster-changing calls per
/// node, for the second run to compare.
fn check_kubernetes(bed: &TestBed, p: &Project) -> Vec<usize> {
    let j: Vec<Vec<Value>> = (0..3).map(|i| fakes::journal(bed, i)).collect();
    // kubeadm init exactly once, on kk-cp1 (init_kubernetes_node: the first control plane).
    assert_eq!(inits(&j[0]).len(), 1, "kubeadm init on kk-cp1: {:#?}", j[0]);
    assert!(
        inits(&j[1]).is_empty() && inits(&j[2]).is_empty(),
        "kubeadm init on a worker"
    );
    let init = inits(&j[0])[0];
    assert_eq!(init["exit"], 0, "{}", init);
    let kubeadm_cfg = kubeadm_config(init);
    assert!(
        kubeadm_cfg.contains("kubeadm.k8s.io/v1beta3"),
        "{}",
        kubeadm_cfg
    );
    assert!(
        kubeadm_cfg.contains(&format!("kubernetesVersion: \"{}\"", KUBE))
            || kubeadm_cfg.contains(&format!("kubernetesVersion: {}\n", KUBE)),
        "{}",
        kubeadm_cfg
    );
    // Images come through the registry kk installed (kk-reg): the control plane's, and those
    // of every applied manifest (checked below).
    let reg = bed.hosts()[3].ip.to_string();
    assert!(
        kubeadm_cfg.contains(&format!("imageRepository: \"{}/kubernetes\"", reg)),
        "{}",
        kubeadm_cfg
    );
    // The worker joins: one each, with the token kk-cp1 created and no control-plane part.
    let mut tokens = Vec::new();
    for (i, name) in [(1, "kk-w1"), (2, "kk-w2")] {
        let joins = fakes::calls(&j[i], "kubeadm", &["join"]);
        assert_eq!(joins.len(), 1, "one join on {}: {:#?}", name, j[i]);
        assert_eq!(joins[0]["exit"], 0, "{}", joins[0]);
        let cfg = kubeadm_config(joins[0]);
        assert!(
            !cfg.contains("\ncontrolPlane:"),
            "a worker joined as a control plane: {}",
            cfg
        );
        tokens.push(join_token(&cfg));
        // The kubelet unit (with kubeadm's drop-in) passes systemd's own verification.
        systemd_verify(bed, i, &["/etc/systemd/system/kubelet.service"])
            .unwrap_or_else(|e| panic!("kubelet.service on {}: {}", name, e));
        // haproxy (control_plane_endpoint haproxy): the static pod, and its configuration
        // balancing kk-cp1's API server.
        let pod = sh(bed, i, "cat /etc/kubernetes/manifests/haproxy.yaml");
        assert_kubernetes_valid(KUBE, &format!("haproxy pod on {}", name), &pod);
        // (`sh` trims the final newline haproxy requires.)
        let cfg = sh(bed, i, "cat /etc/kubekey/haproxy/haproxy.cfg") + "\n";
        haproxy_check(&cfg).unwrap_or_else(|e| panic!("haproxy.cfg on {}: {}", name, e));
        assert!(
            cfg.contains(&format!("{}:6443", bed.hosts()[0].ip)),
            "{}",
            cfg
        );
    }
    assert_eq!(
        tokens[0], tokens[1],
        "the workers joined with different tokens"
    );
    // Labels and taints, set from kk-cp1 on every node.
    for node in &NAMES[..3] {
        for (verb, what) in [
            ("label", "kk.io/e2e=yes"),
            ("taint", "kk.io/e2e=yes:PreferNoSchedule"),
        ] {
            assert!(
                fakes::calls(&j[0], "kubectl", &[]).iter().any(|c| {
                    let a = c["args"].to_string();
                    a.contains(&format!("\"{}\"", verb))
                        && a.contains(&format!("\"{}\"", node))
                        && a.contains(what)
                }),
                "no kubectl {} {} {} on kk-cp1",
                verb,
                node,
                what
            );
        }
    }
    // Every object kubectl applied (CoreDNS, NodeLocalDNS, multus, the add-on's manifest) is
    // valid for v1.30.
    let mut applied = 0;
    for c in fakes::calls(&j[0], "kubectl", &[]) {
        if c["args"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "apply"))
        {
            for (f, text) in files(c) {
                if !f.contains("kubeconfig") && !f.ends_with(".conf") {
                    assert_kubernetes_valid(KUBE, &f, &text);
                    for image in text
                        .lines()
                        .filter_map(|l| l.trim().strip_prefix("image: "))
                    {
                        assert!(
                            image.trim_matches('"').starts_with(&format!("{}/", reg)),
                            "{} in {} does not come from the registry",
                            image,
                            f
                        );
                    }
                    applied += 1;
                }
            }
        }
    }
    assert!(applied >= 4, "kubectl applied only {} files", applied);
    // The helm releases, in order, with kk's values and the user's overrides.
    let releases: Vec<(String, String)> = fakes::calls(&j[0], "helm", &["upgrade"])
        .iter()
        .map(|c| {
            let a: Vec<&str> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let values: String = files(c)
                .into_iter()
                .filter(|(f, _)| !f.ends_with(".tgz") && !f.ends_with(".conf"))
                .map(|(_, t)| t)
                .collect();
            (a[2].to_string(), values)
        })
        .collect();
    let names: Vec<&str> = releases.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), 3, "helm releases: {:?}", names);
    assert!(
        releases[0].1.contains("bgp: Disabled"),
        "calico values: {}",
        releases[0].1
    );
    assert!(
        releases[1].1.contains("e2e-user"),
        "local PV values: {}",
        releases[1].1
    );
    assert!(
        releases[2].1.contains("replicaCount: 2"),
        "add-on values: {}",
        releases[2].1
    );
    // The kubeconfig: in the work dir (0600), and /root/.kube/config on the control plane.
    let kc = p.path("wd/kubeconfig");
    let text = std::fs::read_to_string(&kc).expect("the kubeconfig in the work dir");
    assert!(
        text.contains("server: https://lb.kubesphere.local:6443"),
        "{}",
        text
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&kc).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(sh(bed, 0, "cat /root/.kube/config").contains("kind: Config"));
    (0..3).map(|i| kube_calls(&j[i]).len()).collect()
}

/// `etcdctl … <args>` on host `i` with the client certificate kk installed.
fn etcdctl(bed: &TestBed, i: usize, args: &str) -> String {
    sh(
        bed,
        i,
        &format!(
            "/usr/local/bin/etcdctl --endpoints=https://{}:2379 --cacert=/etc/ssl/etcd/ssl/ca.crt \
             --cert=/etc/ssl/etcd/ssl/client.crt --key=/etc/ssl/etcd/ssl/client.key {} 2>&1",
            bed.hosts()[i].ip,
            args
        ),
    )
}

#[test]
fn create_cluster_installs_kubernetes_on_etcd_containerd_and_a_registry_then_changes_nothing() {
    let bed = TestBed::start(4).expect("boot test hosts");
    let p = Project::new();

    // The artifact server (the controller downloads, so loopback is enough).
    let (served, srv, sums) = serve_artifacts(&p);
    let (root, scratch) = (p.path("srv"), p.path("scratch"));
    let mut fa = FakeArtifacts::default();
    let extra = serve_install_artifacts(&root, &scratch, &mut fa);
    p.file("artifacts.yaml", &manifest(&srv.url("cn/"), &sums, &extra))
        .file("config.yaml", &config(&p, &srv.url(""), &sums, &fa))
        .file("inventory.yaml", &inventory(&bed))
        .file(
            "wd/kubekey/addons/demo-config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-settings\n  namespace: demo\ndata:\n  greeting: hello\n",
        );
    // The add-on's chart, on the controller as the offline package would carry it.
    fakes::fake_chart("demo", "0.1.0", &p.path("wd/kubekey/addons/demo-0.1.0.tgz"));
    // The images the flow pushes into the registry (as `kk artifact export` leaves them).
    let digest = busybox_layout(&p.path("wd/kubekey/images"), IMAGE);

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

    // 0. --check on fresh hosts: changes reported, no file of any host changes. (The hook
    //    scripts are not run in check mode: they are the user's own commands.)
    let before: Vec<String> = (0..4).map(|i| listing(&bed, i)).collect();
    let r = create_cluster(&p, &["--check"]);
    r.code(0);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));
    for (i, name) in NAMES.iter().enumerate() {
        assert!(
            r.recap(name)["changed"].as_i64().unwrap_or(0) > 0,
            "--check reports what would change on {}\n{}",
            name,
            r.describe()
        );
        assert_eq!(
            listing(&bed, i),
            before[i],
            "--check changed files on {}",
            name
        );
    }

    // 1. The first run does everything.
    let r = create_cluster(&p, &[]);
    r.code(0);
    let all = results(&r);
    assert!(failures(&r).is_empty(), "{:#?}", failures(&r));

    // Every precheck check ran and passed (none failed, even ignored).
    let prechecks: Vec<&(String, Value)> = all
        .iter()
        .filter(|(path, _)| path.contains("roles/precheck/"))
        .collect();
    assert!(
        prechecks.len() > 20,
        "precheck ran only {}",
        prechecks.len()
    );
    for (path, e) in &prechecks {
        assert!(
            e["status"] == "ok" || e["status"] == "skipped",
            "precheck: {}\n{}",
            line(path, e),
            e["result"]
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

    // The controller: certificates, and every artifact with its digest, fetched once.
    for f in [
        "root.crt",
        "etcd-kk-cp1.crt",
        "etcd-client.crt",
        "image_registry.crt",
    ] {
        assert!(p.path("wd/pki").join(f).is_file(), "{} missing", f);
    }
    let bin = p.path("wd/kubekey");
    // The shared tree's files of the versions configured here (runc, CNI plugins, crictl).
    let wanted: Vec<_> = served
        .into_iter()
        .filter(|s| ["runc", "cni_plugins", "crictl"].contains(&s.component))
        .collect();
    assert_landed(&wanted, &bin, &sums);
    for (dest, sum) in [
        (
            format!(
                "etcd/{v}/amd64/etcd-{v}-linux-amd64.tar.gz",
                v = ETCD_VERSION
            ),
            &sums["etcd35"],
        ),
        (
            format!(
                "containerd/{v}/amd64/containerd-{b}-linux-amd64.tar.gz",
                v = CONTAINERD_VERSION,
                b = CONTAINERD_VERSION.trim_start_matches('v')
            ),
            &sums["containerd17"],
        ),
    ] {
        assert_eq!(&sha256_file(&bin.join(&dest)), sum, "{}", dest);
    }
    for (component, dest) in [
        ("kubeadm", format!("kube/{}/amd64/kubeadm", KUBE)),
        ("kubelet", format!("kube/{}/amd64/kubelet", KUBE)),
        ("kubectl", format!("kube/{}/amd64/kubectl", KUBE)),
        (
            "helm",
            format!("helm/{v}/amd64/helm-{v}-linux-amd64.tar.gz", v = HELM),
        ),
        ("calico", fakes::chart_dest("calico", CALICO)),
        (
            "localpv_provisioner",
            fakes::chart_dest("localpv_provisioner", LOCALPV),
        ),
        (
            "calicoctl",
            format!("cni/calico/{}/amd64/calicoctl-linux-amd64", CALICO),
        ),
    ] {
        assert_eq!(
            sha256_file(&bin.join(&dest)),
            fa.sha256[component],
            "{}",
            dest
        );
    }
    // Each served file once: those three, etcd, containerd, docker, compose, the registry
    // image, and the 7 above.
    assert_eq!(
        srv.requests().len(),
        wanted.len() + 5 + 7,
        "{:?}",
        srv.requests()
    );

    // The nodes: hostname and the kubekey hosts block.
    for (i, name) in NAMES.iter().enumerate() {
        assert_eq!(sh(&bed, i, "hostname"), *name);
        assert!(sh(&bed, i, "cat /etc/hosts").contains("# kubekey hosts BEGIN"));
    }

    // etcd: three healthy TLS members; a key written now survives the second run.
    let health = etcdctl(&bed, 0, "endpoint health --cluster");
    assert_eq!(
        health.lines().filter(|l| l.contains("is healthy")).count(),
        3,
        "{}",
        health
    );
    etcdctl(&bed, 0, "put kk-e2e kept");

    // The registry on kk-reg: the certs/init certificate, credentials required, and the
    // pushed image listed.
    let reg = bed.hosts()[3].ip.to_string();
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let (_, code) = curl(&["--cacert", &ca, &format!("https://{}/v2/", reg)]);
    assert_eq!(code, "401");
    let auth = format!("admin:{}", PASSWORD);
    let (catalog, code) = curl(&[
        "--cacert",
        &ca,
        "-u",
        &auth,
        &format!("https://{}/v2/_catalog", reg),
    ]);
    assert!(
        catalog.contains("\"kk/busybox\"") && code == "200",
        "{} {}",
        code,
        catalog
    );

    // containerd on every Kubernetes node: active, the artifact's version, and it pulls the
    // pushed image from the registry through the configuration kk wrote (the cluster CA
    // and credentials under /etc/containerd/certs.d), then runs it.
    let pull = format!("{}/kk/busybox:e2e", reg);
    for (i, name) in NAMES[..3].iter().enumerate() {
        assert_eq!(sh(&bed, i, "systemctl is-active containerd"), "active");
        assert!(
            sh(&bed, i, "ctr version").contains("1.7.24"),
            "ctr version on {}",
            name
        );
        sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d {} >/dev/null",
                pull
            ),
        );
        let have = sh(
            &bed,
            i,
            &format!(
                "ctr -n k8s.io images ls | grep -F '{}' | awk '{{print $3}}'",
                pull
            ),
        );
        assert_eq!(have, digest, "the pulled image on {}", name);
    }
    // Docker on the registry host.
    assert!(sh(&bed, 3, "docker info --format '{{.ServerVersion}}'").contains("26.1.5"));

    // Kubernetes, the CNI, the storage class and the add-on (through the fakes' journals),
    // every rendered file through its real validator; the kubeconfig on the controller.
    let joins_before = check_kubernetes(&bed, &p);
    // The summary at the end: the kubeconfig and a line per node.
    let summary = r
        .events()
        .into_iter()
        .filter(|e| {
            e["event"] == "host_result" && e["task"] == "Summary | What was installed where"
        })
        .map(|e| e["result"]["msg"].to_string())
        .collect::<String>();
    for want in [
        format!("Kubeconfig: {}", p.path("wd/kubeconfig").display()),
        "kk-cp1".to_string(),
        "kk-w2".to_string(),
        "calico".to_string(),
    ] {
        assert!(
            summary.contains(&want),
            "the summary lacks {:?}: {}",
            want,
            summary
        );
    }

    // 2. A second run: exit 0, nothing downloaded, only the hook scripts change something
    //    (a script always reports a change); etcd's data is still there.
    let before_requests = srv.requests().len();
    let r2 = create_cluster(&p, &[]);
    r2.code(0);
    assert_eq!(
        srv.requests().len(),
        before_requests,
        "the second run fetched"
    );
    let changed: Vec<String> = results(&r2)
        .iter()
        .filter(|(path, e)| e["changed"] == true && !path.contains("playbooks/hook/"))
        .map(|(path, e)| line(path, e))
        .collect();
    assert!(
        changed.is_empty(),
        "only the hook scripts may change something on a second run: {:#?}",
        changed
    );
    for area in [
        "roles/native",
        "roles/etcd/",
        "roles/cri/",
        "roles/image_registry/",
        "roles/kubernetes/",
        "roles/cni/",
    ] {
        assert!(
            results(&r2).iter().any(|(path, _)| path.contains(area)),
            "no task of {} ran the second time",
            area
        );
    }
    assert_eq!(etcdctl(&bed, 1, "get kk-e2e --print-value-only"), "kept");
    // Nothing initialised, joined or installed again.
    let installs_now: Vec<usize> = (0..3)
        .map(|i| kube_calls(&fakes::journal(&bed, i)).len())
        .collect();
    assert_eq!(
        installs_now, joins_before,
        "the second run ran kubeadm/helm/kubectl writes"
    );

    // 3. --check after the real run: nothing would change (the hooks are not run).
    let r3 = create_cluster(&p, &["--check"]);
    r3.code(0);
    for name in NAMES.iter().chain(["localhost"].iter()) {
        assert_eq!(r3.recap(name)["changed"], 0, "{}\n{}", name, r3.describe());
    }

    // 4. `--tags etcd` runs the etcd part alone (with the checks, certificates and
    //    downloads it needs): no task of the registry, the runtime or the OS init runs.
    let r4 = create_cluster(&p, &["--tags", "etcd"]);
    r4.code(0);
    let paths: Vec<String> = results(&r4).into_iter().map(|(p, _)| p).collect();
    assert!(paths.iter().any(|p| p.contains("roles/etcd/")));
    for other in ["roles/cri/", "roles/image_registry/", "roles/native/init"] {
        assert!(
            !paths.iter().any(|p| p.contains(other)),
            "--tags etcd ran {}",
            other
        );
    }
    assert!(
        !results(&r4).iter().any(|(_, e)| e["changed"] == true),
        "--tags etcd on the installed cluster changed something"
    );
}
