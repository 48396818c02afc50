//! The bundled defaults: role `defaults` (version matrix merged under the user's values,
//! derived values, install probes), the starting files in `builtin/config` and
//! `builtin/inventory`, and the artifact manifest `builtin/artifacts.yaml`.
//!
//! Every playbook run here is the real `kk` binary on the local connection, against the
//! repository's own `roles/` (linked into a scratch project).

use crate::common;

use common::artifacts::{is_sha256, load_yaml, repo, version_matrices};
use common::{Project, Run};
use serde_json::{json, Value};

/// A value at a dotted path ("cri.containerd_version").
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

/// A scratch project whose `roles` is the repository's.
fn project(inventory: &str, site: &str) -> Project {
    let p = Project::new();
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file("inventory.yaml", inventory).file("site.yaml", site);
    p
}

/// Runs site.yaml with a work dir inside the project.
fn run(p: &Project, extra: &[&str]) -> Run {
    let wd = p.path("wd").display().to_string();
    let mut args = vec!["--workdir", wd.as_str()];
    args.extend_from_slice(extra);
    p.run_json(&args)
}

/// A play that runs `defaults` and then reports the variables other roles read.
const REPORT: &str = r#"
- hosts: all
  gather_facts: false
  roles: [defaults]
  tasks:
    - name: report
      debug:
        msg:
          kubernetes: "{{ kubernetes }}"
          etcd: "{{ etcd }}"
          cri: "{{ cri }}"
          cni: "{{ cni }}"
          dns: "{{ dns }}"
          image_registry: "{{ image_registry }}"
          storage_class: "{{ storage_class }}"
          kube_minor: "{{ kube_minor }}"
          kube_version_supported: "{{ kube_version_supported }}"
          binary_type: "{{ binary_type }}"
"#;

/// The version keys of a matrix that must reach the merged variables unchanged.
const MATRIX_KEYS: &[&str] = &[
    "kubernetes.helm_version",
    "kubernetes.sandbox_image.tag",
    "kubernetes.control_plane_endpoint.kube_vip.image.tag",
    "kubernetes.control_plane_endpoint.haproxy.image.tag",
    "etcd.etcd_version",
    "image_registry.keepalived_version",
    "image_registry.harbor_version",
    "image_registry.dockercompose_version",
    "image_registry.docker_registry_version",
    "cri.crictl_version",
    "cri.docker_version",
    "cri.cridockerd_version",
    "cri.containerd_version",
    "cri.runc_version",
    "cni.cni_plugins_version",
    "cni.calico_version",
    "cni.cilium_version",
    "cni.flannel_version",
    "cni.kubeovn_version",
    "cni.hybridnet_version",
    "cni.spiderpool_version",
    "cni.multus.image.tag",
    "storage_class.localpv_provisioner_version",
    "storage_class.nfs_provisioner_version",
    "dns.coredns.image.tag",
    "dns.nodelocaldns.image.tag",
];

#[test]
fn every_minor_resolves_its_version_matrix() {
    let m = version_matrices();
    // One host per minor, each with its own kube_version: one run covers them all.
    let mut inv = String::from("kind: Inventory\nspec:\n  hosts:\n");
    for (minor, vars) in &m {
        let host = minor.replace('.', "_");
        let patch = vars["default_kube_version"]
            .as_str()
            .expect("default_kube_version");
        assert!(
            patch.starts_with(&format!("{}.", minor)),
            "{} default {}",
            minor,
            patch
        );
        inv.push_str(&format!(
            "    {}: {{connector: {{type: local}}, kubernetes: {{kube_version: {}}}}}\n",
            host, patch
        ));
    }
    let p = project(&inv, REPORT);
    let r = run(&p, &[]);
    r.code(0);
    for (minor, vars) in &m {
        let host = minor.replace('.', "_");
        let got = r.msg("report", &host);
        assert_eq!(got["kube_minor"], json!(minor));
        assert_eq!(got["kube_version_supported"], json!(true), "{}", minor);
        for key in MATRIX_KEYS {
            let want = at(vars, key);
            assert!(!want.is_null(), "{} has no {}", minor, key);
            assert_eq!(at(&got, key), want, "{} {}", minor, key);
        }
        // Defaults from defaults/main are still there next to the matrix.
        assert_eq!(got["cri"]["container_manager"], json!("containerd"));
        assert_eq!(got["etcd"]["deployment_type"], json!("external"));
        assert_eq!(
            got["kubernetes"]["kube_version"],
            vars["default_kube_version"]
        );
    }
}

#[test]
fn config_group_and_host_values_win_over_the_matrix() {
    let v134 = &version_matrices()["v1.34"];
    let inv = r#"
kind: Inventory
spec:
  hosts:
    a: {connector: {type: local}}
    b: {connector: {type: local}}
    c: {connector: {type: local}, cni: {calico_version: v3.99.0}}
  groups:
    special:
      hosts: [b]
      vars:
        cri: {containerd_version: v1.7.99}
        dns: {coredns: {image: {tag: v9.9.9}}}
"#;
    let p = project(inv, REPORT);
    p.file(
        "config.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  kubernetes: {kube_version: v1.34.3, helm_version: v3.0.0}\n  etcd: {etcd_version: v3.9.9}\n",
    );
    let r = run(&p, &["-c", "config.yaml"]);
    r.code(0);
    for host in ["a", "b", "c"] {
        let got = r.msg("report", host);
        // The config wins on the leaves it sets, everywhere ...
        assert_eq!(
            got["kubernetes"]["helm_version"],
            json!("v3.0.0"),
            "{}",
            host
        );
        assert_eq!(got["etcd"]["etcd_version"], json!("v3.9.9"), "{}", host);
        // ... and only on those: siblings still come from the matrix.
        assert_eq!(
            got["kubernetes"]["sandbox_image"]["tag"],
            v134["kubernetes"]["sandbox_image"]["tag"]
        );
        assert_eq!(
            got["cri"]["runc_version"], v134["cri"]["runc_version"],
            "{}",
            host
        );
        assert_eq!(
            got["dns"]["nodelocaldns"]["image"]["tag"],
            v134["dns"]["nodelocaldns"]["image"]["tag"]
        );
    }
    let a = r.msg("report", "a");
    let b = r.msg("report", "b");
    let c = r.msg("report", "c");
    // A group var wins for the group's hosts only.
    assert_eq!(b["cri"]["containerd_version"], json!("v1.7.99"));
    assert_eq!(b["dns"]["coredns"]["image"]["tag"], json!("v9.9.9"));
    assert_eq!(
        a["cri"]["containerd_version"],
        v134["cri"]["containerd_version"]
    );
    assert_eq!(
        a["dns"]["coredns"]["image"]["tag"],
        v134["dns"]["coredns"]["image"]["tag"]
    );
    // A host var too.
    assert_eq!(c["cni"]["calico_version"], json!("v3.99.0"));
    assert_eq!(a["cni"]["calico_version"], v134["cni"]["calico_version"]);
    assert_eq!(c["cni"]["cilium_version"], v134["cni"]["cilium_version"]);
}

#[test]
fn an_unknown_minor_does_not_fail_defaults() {
    let inv = r#"
kind: Inventory
spec:
  hosts:
    old: {connector: {type: local}, kubernetes: {kube_version: v1.9.0}}
    future: {connector: {type: local}, kubernetes: {kube_version: v1.99.1}}
    odd: {connector: {type: local}, kubernetes: {kube_version: latest}}
"#;
    let site = r#"
- hosts: all
  gather_facts: false
  roles: [defaults]
  tasks:
    - name: report
      debug:
        msg:
          supported: "{{ kube_version_supported }}"
          helm: "{{ kubernetes.helm_version | default('unset') }}"
          etcd: "{{ etcd.etcd_version | default('unset') }}"
          deployment_type: "{{ etcd.deployment_type }}"
          coredns_ip: "{{ dns.coredns.ip }}"
"#;
    let p = project(inv, site);
    let r = run(&p, &[]);
    r.code(0);
    for host in ["old", "future", "odd"] {
        let got = r.msg("report", host);
        assert_eq!(got["supported"], json!(false), "{}", host);
        assert_eq!(got["helm"], json!("unset"), "{}", host);
        assert_eq!(got["etcd"], json!("unset"), "{}", host);
        // Everything that does not depend on the version is still there.
        assert_eq!(got["deployment_type"], json!("external"));
        assert_eq!(got["coredns_ip"], json!("10.233.0.3"));
    }
}

#[test]
fn derived_values_follow_the_settings_and_the_user_still_wins() {
    let inv = r#"
kind: Inventory
spec:
  hosts:
    plain: {connector: {type: local}}
    dual:
      connector: {type: local}
      cni:
        pod_cidr: "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112"
        service_cidr: "10.96.0.0/16, fd85:ee78:d8a6:8607::1000/116"
    harbor:
      connector: {type: local}
      image_registry: {type: harbor}
      cri: {container_manager: docker}
    dockershim:
      connector: {type: local}
      kubernetes: {kube_version: v1.23.17}
      cri: {container_manager: docker}
    cn:
      connector: {type: local}
      zone: cn
    own:
      connector: {type: local}
      image_registry: {auth: {registry: "dockerhub.kubekey.local:5443", username: me}}
      dns: {coredns: {ip: 10.233.0.10}}
    reg: {connector: {type: local}, internal_ipv4: 192.0.2.7}
  groups:
    image_registry: {hosts: [reg]}
"#;
    let p = project(inv, REPORT);
    let r = run(&p, &["--limit", "plain,dual,harbor,dockershim,cn,own"]);
    r.code(0);

    let plain = r.msg("report", "plain");
    assert_eq!(plain["cni"]["ipv4_support"], json!(true));
    assert_eq!(plain["cni"]["ipv6_support"], json!(false));
    assert_eq!(plain["cni"]["ipv4_pod_cidr"], json!("10.233.64.0/18"));
    assert_eq!(plain["cni"]["ipv6_pod_cidr"], json!(""));
    assert_eq!(plain["dns"]["coredns"]["ip"], json!("10.233.0.3"));
    assert_eq!(plain["dns"]["dns_domain"], json!("cluster.local"));
    assert_eq!(plain["image_registry"]["auth"]["registry"], json!(""));
    assert_eq!(
        plain["image_registry"]["auth"]["skip_tls_verify"],
        json!(true)
    );
    assert_eq!(
        plain["image_registry"]["dockerio_registry"],
        json!("docker.io")
    );
    assert_eq!(
        plain["image_registry"]["k8sio_registry"],
        json!("registry.k8s.io")
    );
    assert_eq!(
        plain["kubernetes"]["image_repository"],
        json!("registry.k8s.io")
    );
    assert_eq!(
        plain["kubernetes"]["control_plane_endpoint"]["kube_vip"]["image"]["registry"],
        json!("docker.io")
    );
    assert_eq!(
        plain["cri"]["cri_socket"],
        json!("unix:///var/run/containerd/containerd.sock")
    );
    assert_eq!(
        plain["etcd"]["ca_file"],
        json!(format!("{}/pki/root.crt", p.path("wd").display()))
    );

    let dual = r.msg("report", "dual");
    assert_eq!(dual["cni"]["ipv6_support"], json!(true));
    assert_eq!(
        dual["cni"]["ipv6_pod_cidr"],
        json!("fd85:ee78:d8a6:8607::1:0/112")
    );
    assert_eq!(dual["cni"]["ipv4_service_cidr"], json!("10.96.0.0/16"));
    assert_eq!(
        dual["cni"]["ipv6_service_cidr"],
        json!("fd85:ee78:d8a6:8607::1000/116")
    );
    assert_eq!(dual["dns"]["coredns"]["ip"], json!("10.96.0.3"));

    let harbor = r.msg("report", "harbor");
    assert_eq!(
        harbor["image_registry"]["auth"]["registry"],
        json!("192.0.2.7")
    );
    assert_eq!(harbor["image_registry"]["auth"]["username"], json!("admin"));
    assert_eq!(
        harbor["image_registry"]["auth"]["skip_tls_verify"],
        json!(false)
    );
    assert_eq!(
        harbor["image_registry"]["dockerio_registry"],
        json!("192.0.2.7")
    );
    assert_eq!(
        harbor["kubernetes"]["image_repository"],
        json!("192.0.2.7/kubernetes")
    );
    assert_eq!(
        harbor["cri"]["cri_socket"],
        json!("unix:///var/run/cri-dockerd.sock")
    );
    // Docker below v1.24: the kubelet's dockershim, named as kubeadm v1.23 names it.
    let dockershim = r.msg("report", "dockershim");
    assert_eq!(
        dockershim["cri"]["cri_socket"],
        json!("/var/run/dockershim.sock")
    );

    let cn = r.msg("report", "cn");
    assert_eq!(
        cn["image_registry"]["auth"]["registry"],
        json!("hub.kubesphere.com.cn")
    );
    assert_eq!(
        cn["kubernetes"]["image_repository"],
        json!("hub.kubesphere.com.cn/kubernetes")
    );

    let own = r.msg("report", "own");
    assert_eq!(
        own["image_registry"]["auth"]["registry"],
        json!("dockerhub.kubekey.local:5443")
    );
    assert_eq!(own["image_registry"]["auth"]["username"], json!("me"));
    assert_eq!(own["image_registry"]["https_port"], json!(5443));
    assert_eq!(
        own["image_registry"]["quayio_registry"],
        json!("dockerhub.kubekey.local:5443")
    );
    assert_eq!(own["dns"]["coredns"]["ip"], json!("10.233.0.10"));
}

#[test]
fn probes_and_binary_type_run_under_any_tag_and_change_nothing() {
    let inv = r#"
kind: Inventory
spec:
  hosts:
    node: {connector: {type: local}}
    other: {connector: {type: local}}
  groups:
    k8s_cluster: {groups: [kube_control_plane]}
    kube_control_plane: {hosts: [node]}
    etcd: {hosts: [node]}
"#;
    let site = r#"
- hosts: all
  gather_facts: true
  roles: [defaults]
  tasks:
    - name: report
      tags: [os]
      debug:
        msg:
          binary_type: "{{ binary_type }}"
          arch: "{{ ansible_architecture }}"
          supported: "{{ kube_version_supported }}"
          kubelet_loaded: "{{ kubernetes_install_LoadState.stdout | default('skipped') }}"
          kubelet_active: "{{ kubernetes_install_ActiveState.stdout is defined }}"
          kubelet_version: "{{ kubernetes_install_version.stdout is defined }}"
          etcd_loaded: "{{ etcd_install_LoadState.stdout is defined }}"
          etcd_version: "{{ etcd_install_version.stdout is defined }}"
          kubernetes_installed_version: "{{ kubernetes_installed_version }}"
          etcd_installed_version: "{{ etcd_installed_version }}"
"#;
    let p = project(inv, site);
    // Only `os` tasks are selected: the defaults tasks (tag always) must still run.
    let r = run(&p, &["--tags", "os"]);
    r.code(0);
    let node = r.msg("report", "node");
    let want_arch = match node["arch"].as_str().unwrap() {
        "x86_64" | "amd64" => "amd64",
        "aarch64" | "arm64" => "arm64",
        _ => "",
    };
    assert_eq!(node["binary_type"], json!(want_arch));
    assert_eq!(node["supported"], json!(true));
    for k in [
        "kubelet_active",
        "kubelet_version",
        "etcd_loaded",
        "etcd_version",
    ] {
        assert_eq!(node[k], json!(true), "{}", k);
    }
    // The installed versions are "" or a version, never an error.
    let kv = node["kubernetes_installed_version"].as_str().unwrap();
    assert!(kv.is_empty() || kv.starts_with('v'), "{}", kv);
    let ev = node["etcd_installed_version"].as_str().unwrap();
    assert!(ev.is_empty() || ev.starts_with('v'), "{}", ev);
    // Hosts outside the groups are not probed.
    let other = r.msg("report", "other");
    assert_eq!(other["kubelet_loaded"], json!("skipped"));
    assert_eq!(other["etcd_loaded"], json!(false));
    assert_eq!(other["kubernetes_installed_version"], json!(""));
    for h in ["node", "other"] {
        assert_eq!(r.recap(h)["changed"], json!(0), "{}", h);
        assert_eq!(r.recap(h)["failed"], json!(0), "{}", h);
    }
}

/// Components the manifest has no digest source for (downloads need `download.sha256.<c>`).
const NO_SHA256_COMPONENTS: &[&str] = &[
    "docker_registry",
    "harbor",
    "keepalived",
    "calico",
    "cilium",
    "flannel",
    "kubeovn",
    "hybridnet",
    "localpv_provisioner",
    "nfs_subdir_external_provisioner",
    "spiderpool",
    "node_feature_discovery",
    "kata_deploy",
    "ks_core",
];
/// Single versions without a digest source (none today: calicoctl v3.31.3 has kubespray's).
const NO_SHA256_VERSIONS: &[(&str, &str)] = &[];

#[test]
fn the_manifest_has_a_verified_download_for_every_version_the_matrices_select() {
    let path = repo().join("builtin/artifacts.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let manifest = load_yaml(&path);
    assert_eq!(manifest["zones"]["global"], json!("https://"));
    assert_eq!(
        manifest["zones"]["cn"],
        json!("https://kubekey.pek3b.qingstor.com/")
    );
    let components = manifest["components"].as_object().expect("components");
    let expected = [
        "etcd",
        "kubelet",
        "kubeadm",
        "kubectl",
        "cni_plugins",
        "helm",
        "crictl",
        "docker",
        "cridockerd",
        "containerd",
        "runc",
        "calicoctl",
        "docker_compose",
        "docker_registry",
        "harbor",
        "keepalived",
        "calico",
        "cilium",
        "flannel",
        "kubeovn",
        "hybridnet",
        "localpv_provisioner",
        "nfs_subdir_external_provisioner",
        "spiderpool",
    ];
    for name in expected {
        assert!(components.contains_key(name), "no component {}", name);
    }
    let matrices = version_matrices();
    let mut checked = 0;
    for (name, c) in components {
        // A URL for both zones: `url` under each zone prefix, or one `url_full` for all.
        let url = c["url"].as_str().or(c["url_full"].as_str());
        let url = url.unwrap_or_else(|| panic!("{} has neither url nor url_full", name));
        assert!(
            url.contains("{version") && !url.contains("{{"),
            "{}: {}",
            name,
            url
        );
        if let Some(full) = c["url_full"].as_str() {
            assert!(full.starts_with("https://"), "{}", name);
        }
        let dest = c["dest"]
            .as_str()
            .unwrap_or_else(|| panic!("{} has no dest", name));
        assert!(
            !dest.starts_with('/') && dest.contains("{version"),
            "{}: {}",
            name,
            dest
        );
        let from = c["version_from"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: version_from", name));

        if NO_SHA256_COMPONENTS.contains(&name.as_str()) {
            assert!(
                c.get("sha256").is_none(),
                "{} is listed as having no digest",
                name
            );
            assert!(text.contains(name.as_str()), "{} undocumented", name);
            continue;
        }
        let sums = c["sha256"]
            .as_object()
            .unwrap_or_else(|| panic!("{} has no sha256", name));
        for (minor, vars) in &matrices {
            let version = if from == "kubernetes.kube_version" {
                vars["default_kube_version"].as_str().unwrap().to_string()
            } else {
                at(vars, from)
                    .as_str()
                    .unwrap_or_else(|| panic!("{} sets no {}", minor, from))
                    .to_string()
            };
            if NO_SHA256_VERSIONS.contains(&(name.as_str(), version.as_str())) {
                assert!(!sums.contains_key(&version));
                assert!(text.contains(&version), "{} {} undocumented", name, version);
                continue;
            }
            let entry = sums.get(&version).unwrap_or_else(|| {
                panic!(
                    "{}: no sha256 for {} (selected by {})",
                    name, version, minor
                )
            });
            for arch in ["amd64", "arm64"] {
                assert!(
                    entry[arch].as_str().is_some_and(is_sha256),
                    "{} {} {}: {}",
                    name,
                    version,
                    arch,
                    entry[arch]
                );
            }
            checked += 1;
        }
        // No stray versions: every digest belongs to a version some matrix selects.
        for version in sums.keys() {
            let used = matrices.values().any(|vars| {
                let v = if from == "kubernetes.kube_version" {
                    &vars["default_kube_version"]
                } else {
                    at(vars, from)
                };
                v.as_str() == Some(version.as_str())
            });
            assert!(used, "{} {} is not selected by any matrix", name, version);
        }
    }
    // 13 components with digests, 12 minors (v1.23-v1.34), less the documented gaps (NO_SHA256_VERSIONS).
    assert_eq!(checked, 13 * matrices.len() - NO_SHA256_VERSIONS.len());
}

#[test]
fn builtin_configs_and_inventory_are_valid_starting_files() {
    let m = version_matrices();
    let site = r#"
- hosts: all
  gather_facts: false
  roles: [defaults]
  tasks:
    - name: report
      debug:
        msg:
          groups: "{{ groups }}"
          kube_version: "{{ kubernetes.kube_version }}"
          supported: "{{ kube_version_supported }}"
          helm: "{{ kubernetes.helm_version }}"
          calico: "{{ cni.calico_version }}"
          etcd: "{{ etcd.etcd_version }}"
          crictl: "{{ cri.crictl_version }}"
          coredns: "{{ dns.coredns.image.tag }}"
"#;
    let inventory =
        std::fs::read_to_string(repo().join("builtin/inventory/localhost.yaml")).unwrap();
    assert!(inventory.contains("kind: Inventory"));
    let p = project(&inventory, site);
    let mut seen = 0;
    for entry in std::fs::read_dir(repo().join("builtin/config")).unwrap() {
        let path = entry.unwrap().path();
        let minor = path.file_stem().unwrap().to_string_lossy().to_string();
        let vars = m
            .get(&minor)
            .unwrap_or_else(|| panic!("builtin/config/{}.yaml has no matrix", minor));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("KUBE_VERSION").count(), 1, "{}", minor);
        let patch = vars["default_kube_version"].as_str().unwrap();
        let file = format!("config-{}.yaml", minor);
        p.file(&file, &text.replace("KUBE_VERSION", patch));
        // kk itself must accept it as a config, and its values must agree with the matrix.
        let r = run(&p, &["-c", &file]);
        r.code(0);
        let got = r.msg("report", "localhost");
        assert_eq!(got["kube_version"], json!(patch));
        assert_eq!(got["supported"], json!(true));
        assert_eq!(got["helm"], vars["kubernetes"]["helm_version"], "{}", minor);
        assert_eq!(got["calico"], vars["cni"]["calico_version"], "{}", minor);
        assert_eq!(got["etcd"], vars["etcd"]["etcd_version"], "{}", minor);
        assert_eq!(got["crictl"], vars["cri"]["crictl_version"], "{}", minor);
        assert_eq!(
            got["coredns"], vars["dns"]["coredns"]["image"]["tag"],
            "{}",
            minor
        );
        // The default inventory: localhost in every Kubernetes group and in etcd.
        for g in ["k8s_cluster", "kube_control_plane", "kube_worker", "etcd"] {
            assert_eq!(got["groups"][g], json!(["localhost"]), "{}", g);
        }
        assert!(got["groups"].get("image_registry").is_none());
        seen += 1;
    }
    assert_eq!(seen, m.len(), "a builtin/config file per matrix");
}
