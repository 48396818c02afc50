//! The pod network, storage classes and add-ons (playbooks/install/cni.yaml: roles cni,
//! storageclass, addons) on real test hosts: a control plane node with the FAKE kubeadm,
//! kubelet, kubectl and helm of tests/fakes (no API server can run here) and a kubeconfig at
//! /etc/kubernetes/admin.conf as kubeadm init leaves it. The charts are FAKE chart archives
//! (tests/common/fakes.rs) pre-staged in binary_dir (download.fetch: false), calicoctl the
//! FAKE one of tests/fakes.
//!
//! What runs for real: kk, SSH, every file the roles write on the hosts, the decisions when to
//! call helm/kubectl. What is a fake: helm and kubectl (they check their arguments and files
//! and record them in /var/lib/kk-fakes/journal.jsonl; `helm get values` answers the merge of
//! a release's values files). Rendered Kubernetes objects (the multus manifest, the flannel
//! namespace, an add-on's manifest) are validated with the real `kubernetes-validate` for
//! v1.30 and v1.34; the charts' values files parse (the fake helm parses each as a YAML map)
//! and carry kk's defaults and the user's overrides.
//!
//! `cni_storage_classes_and_addons_on_the_init_node` (one host): a malformed add-on list is
//! refused before anything is installed; `--check` on the fresh host writes and installs
//! nothing; calico (dual stack: one IP pool per family) + multus + local PV + NFS (server =
//! the nfs host's address) + two add-ons + KubeSphere, in that order, each in its namespace;
//! a second run is changed=0 and calls neither `helm upgrade` nor `kubectl apply`.
//! `every_cni_plugin_installs_its_chart` (two control planes, the init node listed second):
//! cilium + spiderpool, flannel, kubeovn (both control planes labelled), hybridnet, none,
//! only on the init node, images through a private registry; a release helm refuses fails
//! the run with helm's output and is installed by the next run.
//! `download_plans_the_addon_charts` (controller only): role download's plan for the
//! optional add-ons and for repository/URL add-on charts.

use crate::common;

use std::path::Path;

use common::{fakes, validate};
use common::{sh, Project, Run};
use serde_json::Value;
use testbed::TestBed;

const NAME: &str = "kk-cni1";
const OTHER: &str = "kk-cni2";
const HELM_VERSION: &str = "v3.18.5";
const KUBE_VERSION: &str = "v1.30.8";

/// Writes `data` to `path` on host `i` (mode `mode`).
fn put(bed: &TestBed, i: usize, path: &str, data: &[u8], mode: &str) {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), data).unwrap();
    fakes::push(bed, i, tmp.path(), path, mode);
}

/// The FAKE kubeadm/kubelet/kubectl/helm on host 0 and the kubeconfig kubeadm init leaves.
fn install_fakes(bed: &TestBed) {
    fakes::install_kube(bed, 0, KUBE_VERSION, HELM_VERSION);
    put(
        bed,
        0,
        "/etc/kubernetes/admin.conf",
        b"apiVersion: v1\nkind: Config\nclusters:\n- name: kubekey\n  cluster: {server: \"https://lb.kubesphere.local:6443\"}\n",
        "0600",
    );
}

/// A FAKE chart archive (tests/common/fakes.rs) at `out`.
fn chart(out: &Path, name: &str, version: &str) {
    fakes::fake_chart(name, version, out);
}

/// The fake's journal on host 0.
fn journal(bed: &TestBed) -> Vec<Value> {
    fakes::journal(bed, 0)
}

/// Every object of `yaml` valid for Kubernetes `version` (kubernetes-validate --strict).
fn kubernetes_validate(version: &str, what: &str, yaml: &str) {
    validate::assert_kubernetes_valid(version, what, yaml);
}

/// binary_dir as role `download` would leave it for this config, plus the add-on files.
fn stage(p: &Project) {
    let bin = p.path("wd/kubekey");
    for (dest, name, version) in [
        (
            "cni/calico/tigera-operator-v3.29.7.tgz",
            "tigera-operator",
            "v3.29.7",
        ),
        (
            "storageclass/local/localpv-provisioner-4.4.0.tgz",
            "localpv-provisioner",
            "4.4.0",
        ),
        (
            "storageclass/nfs/nfs-subdir-external-provisioner-4.0.18.tgz",
            "nfs-subdir-external-provisioner",
            "4.0.18",
        ),
        ("addons/myapp-1.0.0.tgz", "myapp", "1.0.0"),
        ("addons/ks-core/ks-core-1.1.4.tgz", "ks-core", "1.1.4"),
    ] {
        chart(&bin.join(dest), name, version);
    }
    fakes::fake_tool(
        "v3.29.7",
        &bin.join("cni/calico/v3.29.7/amd64/calicoctl-linux-amd64"),
    );
    p.file(
        "wd/kubekey/addons/myapp-prod.yaml",
        "replicaCount: 1\nfromFile: yes-from-values-file\n",
    );
    p.file(
        "wd/kubekey/addons/myapp-config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: myapp-config\n  namespace: apps\ndata:\n  mode: test\n",
    );
    p.file(
        "wd/kubekey/addons/quota.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: apps-quota\n  namespace: apps\nspec:\n  hard:\n    pods: \"20\"\n",
    );
}

fn inventory(bed: &TestBed) -> String {
    let mut s = common::bed_inventory_hosts(bed, &[NAME]);
    s.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [{n}]\n    kube_worker:\n      hosts: [{n}]\n    nfs:\n      hosts: [{n}]\n",
        n = NAME
    ));
    s
}

/// calico + multus, dual stack; local PV (values as YAML text, upstream's form) and NFS;
/// two add-ons. `addons` replaces the add-on list.
fn config(addons: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes: {{kube_version: {kube}}}
  cni:
    type: calico
    multi_cni: multus
    pod_cidr: "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112"
    service_cidr: "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116"
    calico:
      values:
        installation:
          calicoNetwork:
            bgp: Disabled
  storage_class:
    local:
      enabled: true
      default: true
      path: /data/openebs
      values: |
        helperPod:
          image:
            tag: 9.9.9-user
    nfs:
      enabled: true
      path: /export/k8s
  download: {{fetch: false}}
{addons}"#,
        kube = KUBE_VERSION,
        addons = addons
    )
}

const ADDONS: &str = r#"  addons:
    - name: myapp
      namespace: apps
      chart: {path: addons/myapp-1.0.0.tgz}
      values: {replicaCount: 3}
      values_files: [addons/myapp-prod.yaml]
      manifests: [addons/myapp-config.yaml]
    - name: apps-quota
      namespace: apps
      manifests: [addons/quota.yaml]
  addons_builtin:
    kubesphere:
      enabled: true
      values: {multicluster: {hostClusterName: kk-test}}
"#;

fn kk(p: &Project, extra: &[&str]) -> Run {
    let playbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/install/cni.yaml");
    p.kk_flow(&["run", playbook.to_str().unwrap()], extra)
}

/// `helm upgrade --install` releases and `kubectl apply -f` files, in call order.
fn installs(j: &[Value]) -> Vec<String> {
    j.iter()
        .filter_map(|c| {
            let args: Vec<&str> = c["args"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            match (c["tool"].as_str()?, args.as_slice()) {
                ("helm", ["upgrade", "--install", rel, ..]) => {
                    let ns = args.iter().position(|a| *a == "-n").map(|i| args[i + 1]);
                    Some(format!("helm {} {}", ns.unwrap_or("?"), rel))
                }
                ("kubectl", a) if a.contains(&"apply") => {
                    let f = a.iter().position(|x| *x == "-f").map(|i| a[i + 1]);
                    Some(format!("apply {}", f.unwrap_or("?")))
                }
                _ => None,
            }
        })
        .collect()
}

/// The call that installed `release`, with its exit code checked.
fn upgrade_call<'a>(j: &'a [Value], release: &str) -> &'a Value {
    let c = j
        .iter()
        .find(|c| c["tool"] == "helm" && c["args"][0] == "upgrade" && c["args"][2] == release)
        .unwrap_or_else(|| panic!("no helm upgrade of {release} in the journal"));
    assert_eq!(c["exit"], 0, "helm upgrade {release}: {c}");
    c
}

/// `helm get values <release> -n <ns> -o json` from the fake's state (the merge of every
/// values file the release was installed with).
fn values(bed: &TestBed, release: &str, ns: &str) -> Value {
    let out = sh(
        bed,
        0,
        &format!(
            "/usr/local/bin/helm get values {release} -n {ns} -o json --kubeconfig /etc/kubernetes/admin.conf"
        ),
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("values of {release}: {e}: {out}"))
}

#[test]
fn cni_storage_classes_and_addons_on_the_init_node() {
    let bed = TestBed::start(1).expect("test bed");
    install_fakes(&bed);
    let p = Project::new();
    stage(&p);
    p.file("inventory.yaml", &inventory(&bed));

    // A malformed add-on list stops the run before anything is installed.
    p.file(
        "config.yaml",
        &config(
            "  addons:\n    - {name: Bad_Name, chart: {repo: https://charts.example.com}}\n    - {name: nochart, chart: {path: addons/missing.tgz}}\n",
        ),
    );
    let bad = kk(&p, &[]);
    assert_ne!(bad.code, 0, "{}", bad.describe());
    let msg = bad
        .result("Addons | The add-on list is well formed", NAME)
        .to_string();
    for want in [
        "addons[0] (Bad_Name).name is \\\"Bad_Name\\\"",
        "chart.repo needs chart.name and chart.version",
        "chart.sha256",
        "addons[1] (nochart).chart.path: ",
        "/wd/kubekey/addons/missing.tgz does not exist on the controller",
    ] {
        assert!(msg.contains(want), "{want} in {msg}");
    }
    assert!(installs(&journal(&bed)).is_empty(), "nothing installed");

    // --check on the fresh host: reports what it would do, writes and installs nothing.
    p.file("config.yaml", &config(ADDONS));
    let check = kk(&p, &["--check"]);
    check.code(0);
    assert_eq!(
        check.status(
            "Calico | helm upgrade --install calico -n tigera-operator",
            NAME
        ),
        "skipped",
        "{}",
        check.describe()
    );
    assert_eq!(
        sh(
            &bed,
            0,
            "ls /etc/kubernetes; test -e /usr/local/bin/calicoctl && echo calicoctl; true"
        ),
        "admin.conf"
    );
    assert!(installs(&journal(&bed)).is_empty(), "nothing installed");

    // First run.
    let first = kk(&p, &[]);
    first.code(0);
    let j = journal(&bed);
    assert_eq!(
        installs(&j),
        [
            "helm tigera-operator calico",
            "apply /etc/kubernetes/cni/multus.yaml",
            "helm kube-system localpv-provisioner",
            "helm kube-system nfs-subdir-external-provisioner",
            "helm apps myapp",
            "apply /etc/kubernetes/addons/myapp/manifest-0-myapp-config.yaml",
            "apply /etc/kubernetes/addons/apps-quota/manifest-0-quota.yaml",
            "helm kubesphere-system ks-core",
        ],
        "install order"
    );
    // Every call had the kubeconfig and a values file of kk's (sorted keys, one file).
    let calico = upgrade_call(&j, "calico");
    let calico_file = calico["files"]["/etc/kubernetes/cni/calico-values.yaml"]
        .as_str()
        .expect("calico values in the journal");
    assert!(calico_file.contains("bgp: Disabled"), "{calico_file}");
    assert!(calico["files"]["/etc/kubernetes/admin.conf"].is_string());
    let v = values(&bed, "calico", "tigera-operator");
    assert_eq!(
        v["installation"]["calicoNetwork"]["bgp"], "Disabled",
        "user's"
    );
    let pools: Vec<&str> = v["installation"]["calicoNetwork"]["ipPools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cidr"].as_str().unwrap())
        .collect();
    assert_eq!(pools, ["10.233.64.0/18", "fd85:ee78:d8a6:8607::1:0/112"]);
    assert_eq!(v["installation"]["registry"], "docker.io/");
    assert_eq!(v["tigeraOperator"]["registry"], "quay.io");

    let local = values(&bed, "localpv-provisioner", "kube-system");
    assert_eq!(local["helperPod"]["image"]["tag"], "9.9.9-user", "user's");
    assert_eq!(local["helperPod"]["image"]["registry"], "docker.io/");
    assert_eq!(local["hostpathClass"]["isDefaultClass"], true);
    assert_eq!(local["hostpathClass"]["basePath"], "/data/openebs");

    // The NFS server is the nfs host's address, not its inventory name.
    let nfs = values(&bed, "nfs-subdir-external-provisioner", "kube-system");
    assert_eq!(nfs["nfs"]["server"], bed.hosts()[0].ip.to_string());
    assert_eq!(nfs["nfs"]["path"], "/export/k8s");
    assert_eq!(nfs["storageClass"]["defaultClass"], false);

    // The add-on: its values file first, its `values` over it.
    let app = values(&bed, "myapp", "apps");
    assert_eq!(app["replicaCount"], 3);
    assert_eq!(app["fromFile"], "yes-from-values-file");
    // KubeSphere (addons_builtin.kubesphere): kk's registry, the user's values, installed last.
    let ks = values(&bed, "ks-core", "kubesphere-system");
    assert_eq!(ks["global"]["imageRegistry"], "docker.io");
    assert_eq!(ks["multicluster"]["hostClusterName"], "kk-test");
    let app_call = upgrade_call(&j, "myapp");
    let args: Vec<&str> = app_call["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let fs: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-f")
        .map(|w| w[1])
        .collect();
    assert_eq!(
        fs,
        [
            "/etc/kubernetes/addons/myapp/values-0-myapp-prod.yaml",
            "/etc/kubernetes/addons/myapp/values.yaml"
        ]
    );

    // Rendered objects: valid for both Kubernetes versions.
    let applied = |path: &str| -> String {
        j.iter()
            .find(|c| c["tool"] == "kubectl" && c["files"][path].is_string())
            .unwrap_or_else(|| panic!("{path} not applied"))["files"][path]
            .as_str()
            .unwrap()
            .to_string()
    };
    let multus = applied("/etc/kubernetes/cni/multus.yaml");
    assert!(multus.contains("image: \"ghcr.io/k8snetworkplumbingwg/multus-cni:v4.2.4\""));
    for version in ["1.30", "1.34"] {
        kubernetes_validate(version, "multus.yaml", &multus);
        kubernetes_validate(
            version,
            "the add-on manifest",
            &applied("/etc/kubernetes/addons/apps-quota/manifest-0-quota.yaml"),
        );
    }
    assert_eq!(
        sh(&bed, 0, "stat -c %a /etc/kubernetes/cni/calico-values.yaml"),
        "600"
    );
    // The FAKE calicoctl installed, against the Kubernetes datastore: the release's Calico.
    let version = sh(
        &bed,
        0,
        "DATASTORE_TYPE=kubernetes KUBECONFIG=/etc/kubernetes/admin.conf /usr/local/bin/calicoctl version",
    );
    assert!(
        version.starts_with("Client Version:    v3.29.7\n")
            && version.contains("\nCluster Version:   v3.29.7\n"),
        "{version}"
    );

    // Second run: nothing changes, nothing is installed again.
    let second = kk(&p, &[]);
    second.code(0);
    assert_eq!(second.recap(NAME)["changed"], 0, "{}", second.describe());
    assert_eq!(
        installs(&journal(&bed)).len(),
        8,
        "no install on the re-run"
    );
}

/// A private registry the cluster's images come through (no such host: nothing pulls here).
const REGISTRY: &str = "registry.kk.test:5000";

/// `config` with cni.type/multi_cni replaced, no storage class or add-on, and images from
/// REGISTRY (image_registry.auth.registry: an existing registry).
fn cni_config(cni_type: &str, multi: &str) -> String {
    config(&format!(
        "  image_registry:\n    auth: {{registry: \"{REGISTRY}\"}}\n"
    ))
    .replace("type: calico", &format!("type: {cni_type}"))
    .replace("multi_cni: multus", &format!("multi_cni: {multi}"))
    .replace("enabled: true", "enabled: false")
}

#[test]
fn every_cni_plugin_installs_its_chart() {
    // Two control plane nodes; the second listed (host 0) is in a cluster (kubelet.service
    // loaded and the kubelet.conf kubeadm init writes), so it is init_kubernetes_node and
    // the only one that installs anything (and has the fakes).
    let bed = TestBed::start(2).expect("test bed");
    install_fakes(&bed);
    put(
        &bed,
        0,
        "/etc/kubernetes/kubelet.conf",
        b"apiVersion: v1\nkind: Config\n",
        "0600",
    );
    put(
        &bed,
        0,
        "/etc/systemd/system/kubelet.service",
        b"[Unit]\nDescription=FAKE kubelet unit of a kk test (loaded, never started)\n[Service]\nExecStart=/bin/sleep infinity\n",
        "0644",
    );
    sh(&bed, 0, "systemctl daemon-reload");
    let p = Project::new();
    for (dest, name, version) in [
        ("cni/cilium/cilium-1.18.7.tgz", "cilium", "1.18.7"),
        ("cni/flannel/flannel-v0.27.4.tgz", "flannel", "v0.27.4"),
        // Upstream's role looked for kubeovn-<v>.tgz and cni/hybridnet-<v>.tgz.
        ("cni/kubeovn/kube-ovn-v1.15.0.tgz", "kube-ovn", "v1.15.0"),
        ("cni/hybridnet/hybridnet-0.6.8.tgz", "hybridnet", "0.6.8"),
        (
            "cni/spiderpool/spiderpool-v1.1.1.tgz",
            "spiderpool",
            "v1.1.1",
        ),
    ] {
        chart(&p.path("wd/kubekey").join(dest), name, version);
    }
    let mut inv = common::bed_inventory_hosts(&bed, &[NAME, OTHER]);
    inv.push_str(&format!(
        "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane]\n    kube_control_plane:\n      hosts: [{OTHER}, {NAME}]\n"
    ));
    p.file("inventory.yaml", &inv);
    let nodes = [0, 1].map(|i| sh(&bed, i, "hostname").to_lowercase());
    let mut seen = 0;
    let mut step = |cni_type: &str, multi: &str, want: &[&str]| {
        p.file("config.yaml", &cni_config(cni_type, multi));
        kk(&p, &[]).code(0);
        let all = installs(&journal(&bed));
        assert_eq!(&all[seen..], want, "{cni_type} + {multi}");
        seen = all.len();
    };

    step(
        "cilium",
        "spiderpool",
        &["helm kube-system cilium", "helm kube-system spiderpool"],
    );
    let cilium = values(&bed, "cilium", "kube-system");
    assert_eq!(
        cilium["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"][0],
        "10.233.64.0/18"
    );
    assert_eq!(
        cilium["ipam"]["operator"]["clusterPoolIPv6PodCIDRList"][0],
        "fd85:ee78:d8a6:8607::1:0/112"
    );
    assert_eq!(cilium["cni"]["exclusive"], false, "beside spiderpool");
    assert_eq!(
        cilium["image"]["repository"],
        format!("{REGISTRY}/cilium/cilium")
    );
    let spider = values(&bed, "spiderpool", "kube-system");
    assert_eq!(spider["ipam"]["enableIPv6"], true, "top-level ipam");
    assert_eq!(spider["global"]["imageRegistryOverride"], REGISTRY);

    step(
        "flannel",
        "none",
        &[
            "apply /etc/kubernetes/cni/flannel-namespace.yaml",
            "helm kube-flannel flannel",
        ],
    );
    let ns = sh(&bed, 0, "cat /etc/kubernetes/cni/flannel-namespace.yaml");
    assert!(ns.contains("pod-security.kubernetes.io/enforce: privileged"));
    for version in ["1.30", "1.34"] {
        kubernetes_validate(version, "flannel-namespace.yaml", &ns);
    }
    let flannel = values(&bed, "flannel", "kube-flannel");
    assert_eq!(flannel["podCidr"], "10.233.64.0/18");
    assert_eq!(
        flannel["flannel"]["image"]["repository"],
        format!("{REGISTRY}/flannel-io/flannel")
    );
    assert_eq!(flannel["podCidrv6"], "fd85:ee78:d8a6:8607::1:0/112");

    step("kubeovn", "none", &["helm kubeovn-system kubeovn"]);
    // Both control planes labelled by node name (from the init node's kubectl).
    let labels: Vec<Value> = journal(&bed)
        .into_iter()
        .filter(|c| {
            c["tool"] == "kubectl" && c["args"].to_string().contains("kube-ovn/role=master")
        })
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    for (label, node) in labels.iter().zip([&nodes[1], &nodes[0]]) {
        assert_eq!(label["exit"], 0, "{label}");
        assert!(
            label["args"].to_string().contains(&format!("\"{node}\"")),
            "{label}"
        );
    }
    let ovn = values(&bed, "kubeovn", "kubeovn-system");
    assert_eq!(ovn["networking"]["NET_STACK"], "dual_stack");
    assert_eq!(ovn["ipv4"]["POD_GATEWAY"], "10.233.64.1");
    assert_eq!(
        ovn["global"]["registry"]["address"],
        format!("{REGISTRY}/kubeovn")
    );

    step("hybridnet", "none", &["helm kube-system hybridnet"]);
    assert_eq!(
        values(&bed, "hybridnet", "kube-system")["init"]["cidr"],
        "10.233.64.0/18"
    );

    // cni.type none: nothing installed; a re-run of a plugin changes nothing.
    step("none", "none", &[]);
    step("hybridnet", "none", &[]);

    // A release helm refuses (a chart archive that is not one): the run fails showing helm's
    // rc and stderr, the values file is forgotten, and the next run (good chart) installs.
    p.file(
        "wd/kubekey/cni/hybridnet/hybridnet-0.6.9.tgz",
        "not a chart\n",
    );
    let broken = cni_config("hybridnet", "none").replace(
        "type: hybridnet",
        "type: hybridnet\n    hybridnet_version: 0.6.9",
    );
    p.file("config.yaml", &broken);
    let r = kk(&p, &[]);
    assert_eq!(r.code, 2, "{}", r.describe());
    let msg = r.msg("Hybridnet | helm upgrade --install hybridnet failed", NAME);
    let msg = msg.as_str().unwrap_or_default();
    assert!(
        msg.contains("(rc 1)") && msg.contains("stderr: FAKE helm"),
        "{msg}"
    );
    assert_eq!(
        sh(
            &bed,
            0,
            "test -e /etc/kubernetes/cni/hybridnet-values.yaml || echo gone"
        ),
        "gone"
    );
    chart(
        &p.path("wd/kubekey/cni/hybridnet/hybridnet-0.6.9.tgz"),
        "hybridnet",
        "0.6.9",
    );
    kk(&p, &[]).code(0);
    let all = installs(&journal(&bed));
    assert_eq!(
        all[all.len() - 2..],
        ["helm kube-system hybridnet", "helm kube-system hybridnet"]
    );
    assert_eq!(
        values(&bed, "hybridnet", "kube-system")["init"]["cidr"],
        "10.233.64.0/18"
    );

    // The other control plane node got nothing.
    assert_eq!(
        sh(
            &bed,
            1,
            "ls /etc/kubernetes /var/lib/kk-fakes 2>&1 | grep -c 'No such file'"
        ),
        "2"
    );
}

/// Role download's plan (templates/plan.json.j2, rendered on the controller alone): the
/// optional add-ons' charts when enabled (one without a published digest unpinned), a
/// repository add-on chart at the path role addons reads, and a clear error for an add-on
/// chart without a sha256.
#[test]
fn download_plans_the_addon_charts() {
    let p = Project::new();
    let root = common::artifacts::repo();
    std::os::unix::fs::symlink(root.join("roles"), p.path("roles")).unwrap();
    p.file(
        "plan.yaml",
        &format!(
            r#"- hosts: localhost
  gather_facts: true
  roles: [defaults]
  tasks:
    - include_vars: {{file: "{root}/builtin/artifacts.yaml", name: download_manifest}}
    - include_vars: {{file: "{root}/roles/download/vars/main.yaml"}}
    - name: plan
      debug:
        msg: "{{{{ lookup('template', '{root}/roles/download/templates/plan.json.j2') | from_json }}}}"
"#,
            root = root.display()
        ),
    );
    p.file(
        "inventory.yaml",
        "kind: Inventory\nspec:\n  hosts:\n    localhost: {connector: {type: local}}\n  groups:\n    kube_control_plane: {hosts: [localhost]}\n    k8s_cluster: {groups: [kube_control_plane]}\n",
    );
    let sha_a = "a".repeat(64);
    let sha_b = "b".repeat(64);
    p.file(
        "config.yaml",
        &format!(
            r#"kind: Config
spec:
  kubernetes: {{kube_version: v1.34.3}}
  addons_builtin:
    kubesphere: {{enabled: true}}
    node_feature_discovery: {{enabled: true}}
  addons:
    - name: app
      chart: {{repo: "https://charts.example.com/stable/", name: app, version: 2.0.0, sha256: "{sha_a}"}}
    - name: unpinned
      chart: {{url: "https://example.com/c/other-1.0.tgz?x=1"}}
  download:
    sha256: {{ks_core: "{sha_b}"}}
"#
        ),
    );
    let r = p.kk_flow(&["run", "plan.yaml"], &[]);
    r.code(0);
    let plan = r.msg("plan", "localhost");
    let charts: Vec<&Value> = plan["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["dest"].as_str().unwrap().starts_with("addons/"))
        .collect();
    assert_eq!(
        charts,
        [
            &serde_json::json!({"component": "ks_core", "version": "1.1.4", "arch": "all",
                "url": "https://charts.kubesphere.io/main/ks-core-1.1.4.tgz",
                "dest": "addons/ks-core/ks-core-1.1.4.tgz", "sha256": sha_b}),
            &serde_json::json!({"component": "addon app", "version": "2.0.0", "arch": "all",
                "url": "https://charts.example.com/stable/app-2.0.0.tgz",
                "dest": "addons/app/app-2.0.0.tgz", "sha256": sha_a}),
        ]
    );
    // node_feature_discovery has no published digest: fetched, then its digest recorded
    // in the lock file (tests/download_lock.rs).
    let unpinned: Vec<&Value> = plan["unpinned"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["dest"].as_str().unwrap().starts_with("addons/"))
        .collect();
    assert_eq!(
        unpinned,
        [
            &serde_json::json!({"component": "node_feature_discovery", "version": "0.17.3", "arch": "all",
            "url": "https://github.com/kubernetes-sigs/node-feature-discovery/releases/download/v0.17.3/node-feature-discovery-chart-0.17.3.tgz",
            "dest": "addons/node-feature-discovery/node-feature-discovery-chart-0.17.3.tgz"})
        ]
    );
    let errors = plan["errors"].to_string();
    let want = "addons[1] (unpinned): chart https://example.com/c/other-1.0.tgz?x=1 has no sha256";
    assert!(errors.contains(want), "{want} in {errors}");
    assert!(
        !errors.contains("node_feature_discovery"),
        "recorded on first download, not refused: {errors}"
    );
    assert!(
        !errors.contains("kata_deploy"),
        "kata is not enabled: {errors}"
    );
}
