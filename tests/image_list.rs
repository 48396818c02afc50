//! The container images of a cluster, as role `download` computes them for `kk artifact
//! export` and `kk artifact images --pull` (roles/download/templates/images.json.j2, read by
//! roles/download/tasks/images.yaml): for two minors (v1.30, v1.34) and several configs
//! (calico/cilium, haproxy/kube_vip, internal/external etcd, NodeLocalDNS on/off, local PV
//! and NFS, multus/spiderpool, a private registry, the user's own images), each compared
//! with a list written here.
//!
//! Every run is the real `kk` binary on the local connection against the repository's
//! `roles/`, with `download.fetch: false` so nothing is pulled (no test hosts, no network),
//! except the last test: `kk artifact export` against a real registry on loopback.
//!
//! Where each tag comes from:
//! - kube-*: kubernetes.kube_version (kubeadm names its images
//!   `<imageRepository>/<name>:<version>`; imageRepository is kubernetes.image_repository).
//! - pause, coredns, k8s-dns-node-cache, kube-vip, haproxy: roles/defaults/vars/v1.XX.yaml
//!   (kubernetes.sandbox_image.tag, dns.coredns/nodelocaldns.image.tag,
//!   control_plane_endpoint.*.image.tag); the same tags as upstream KubeKey's manifests.yaml
//!   (kubesphere/kubekey 1c3204b1, builtin/core/roles/defaults/templates/manifests.yaml:
//!   v1.30 pause 3.9, coredns v1.11.3, node-cache 1.22.28; v1.34 pause 3.10.1, coredns
//!   v1.12.1, node-cache 1.26.4; haproxy 2.9.6-alpine, kube-vip v0.7.2 for every minor).
//! - etcd (internal): etcd.etcd_version of the matrix (v3.5.15 for v1.30, v3.5.24 for
//!   v1.34) in registry.k8s.io's tag scheme `<version>-0`.
//! - chart images: roles/defaults/defaults/main/14-images.yaml, from upstream's
//!   download.images tables (10-download.yaml; kubesphere/kubekey 1c3204b1 for calico
//!   v3.29.7 operator v1.36.16 and v3.31.3 operator v1.40.3, localpv 4.4.0 linux-utils
//!   4.3.0, nfs 4.0.18 provisioner v4.0.2, spiderpool v1.1.1 plugins/multus v4.1.4;
//!   891451ce for cilium 1.18.7 and 1.19.1 with their cilium-envoy tags) with the
//!   registries kk's chart values set.
//! - multus: cni.multus.image.tag of the matrix (v4.2.4), as upstream's default.

use crate::common;

use common::artifacts::kk_json;
use common::images::{calico, control_plane, localpv};
use common::registry::{push_images, registry, sha};
use common::{Project, Run};
use serde_json::{json, Value};
use testbed::http::HttpServer;

/// A scratch project whose `roles` is the repository's, with `site` as site.yaml.
fn project(inventory: &str, config: &str) -> Project {
    let p = Project::new();
    std::os::unix::fs::symlink(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("roles"),
        p.path("roles"),
    )
    .unwrap();
    p.file("inventory.yaml", inventory)
        .file("config.yaml", config)
        .file("site.yaml", SITE);
    p
}

/// Role `defaults`, then role download's images tasks as `kk artifact export` runs them
/// (download_images_computed), then the list they computed.
const SITE: &str = r#"
- hosts: all
  gather_facts: false
  vars:
    download_images_computed: true
  roles: [defaults]
  tasks:
    - name: images
      import_role:
        name: download
        tasks_from: images
    - name: report
      debug:
        msg: "{{ download_images }}"
"#;

/// Nothing is pulled: the list is only computed.
const NO_FETCH: &str =
    "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  download: {fetch: false}\n";

fn run(p: &Project) -> Run {
    let wd = p.path("wd").display().to_string();
    p.run_json(&["-c", "config.yaml", "--workdir", wd.as_str()])
}

/// The cilium chart's images with kk's values (operator-generic: the chart's name for the
/// operator of a generic cloud), envoy's tag from the release's chart.
fn cilium(quay: &str, version: &str, envoy: &str) -> Vec<String> {
    let mut out = vec![format!("{}/cilium/cilium-envoy:{}", quay, envoy)];
    for n in [
        "cilium",
        "clustermesh-apiserver",
        "hubble-relay",
        "operator-generic",
    ] {
        out.push(format!("{}/cilium/{}:v{}", quay, n, version));
    }
    out
}

fn list(r: &Run, host: &str) -> Vec<String> {
    let got = r.msg("report", host);
    assert_eq!(got["missing"], json!([]), "{}: {}", host, got);
    got["images"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: {}", host, got))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn cat(parts: &[Vec<String>]) -> Vec<String> {
    parts.concat()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn image_list_per_version_and_config() {
    let inv = r#"
kind: Inventory
spec:
  hosts:
    v130_default: {connector: {type: local}, kubernetes: {kube_version: v1.30.8}}
    v134_default: {connector: {type: local}, kubernetes: {kube_version: v1.34.3}}
    v130_cilium:
      connector: {type: local}
      kubernetes: {kube_version: v1.30.8, control_plane_endpoint: {type: haproxy}}
      etcd: {deployment_type: internal}
      cni: {type: cilium}
      dns: {nodelocaldns: {enabled: false}}
    v134_cilium:
      connector: {type: local}
      kubernetes: {kube_version: v1.34.3, control_plane_endpoint: {type: kube-vip}, kube_proxy: {enabled: false}}
      etcd: {deployment_type: internal, image_tag: 3.6.5-0}
      cni: {type: cilium, multi_cni: multus}
      storage_class: {local: {enabled: false}, nfs: {enabled: true}}
    v134_private:
      connector: {type: local}
      kubernetes: {kube_version: v1.34.3, control_plane_endpoint: {type: haproxy}}
      cni: {multi_cni: spiderpool}
      image_registry: {auth: {registry: "reg.example:5000"}}
      download: {images: {manifests: ["nginx", "reg.example:5000/calico/node:v3.31.3", "kk/app:1"]}}
      image_manifests: ["docker.io/library/nginx:latest", "busybox:1.37"]
    v134_installed:
      connector: {type: local}
      kubernetes: {kube_version: v1.34.3, control_plane_endpoint: {type: haproxy}}
      cni: {multi_cni: spiderpool}
      dns: {coredns: {image: {registry: "my.mirror"}}}
      image_registry: {type: docker-registry, auth: {registry: "dockerhub.kubekey.local"}}
    v134_user_only:
      connector: {type: local}
      kubernetes: {kube_version: v1.34.3}
      download: {images: {cluster: false, manifests: ["registry.k8s.io/pause:3.10.1"]}}
"#;
    let p = project(inv, NO_FETCH);
    let r = run(&p);
    r.code(0);
    let k8s = "registry.k8s.io";

    // v1.30, the default config: calico v3.29.7, external etcd, NodeLocalDNS, local PV.
    assert_eq!(
        list(&r, "v130_default"),
        cat(&[
            control_plane(k8s, "v1.30.8"),
            s(&[
                "registry.k8s.io/pause:3.9",
                "registry.k8s.io/coredns/coredns:v1.11.3",
                "registry.k8s.io/dns/k8s-dns-node-cache:1.22.28",
            ]),
            calico("docker.io", "quay.io", "v3.29.7", "v1.36.16"),
            localpv("docker.io"),
        ])
    );

    // v1.34, the default config: calico v3.31.3.
    assert_eq!(
        list(&r, "v134_default"),
        cat(&[
            control_plane(k8s, "v1.34.3"),
            s(&[
                "registry.k8s.io/pause:3.10.1",
                "registry.k8s.io/coredns/coredns:v1.12.1",
                "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
            ]),
            calico("docker.io", "quay.io", "v3.31.3", "v1.40.3"),
            localpv("docker.io"),
        ])
    );

    // v1.30 with cilium 1.18.7, haproxy, kubeadm's etcd, no NodeLocalDNS.
    assert_eq!(
        list(&r, "v130_cilium"),
        cat(&[
            control_plane(k8s, "v1.30.8"),
            s(&[
                "registry.k8s.io/pause:3.9",
                "registry.k8s.io/etcd:3.5.15-0",
                "registry.k8s.io/coredns/coredns:v1.11.3",
                "docker.io/library/haproxy:2.9.6-alpine",
            ]),
            cilium(
                "quay.io",
                "1.18.7",
                "v1.35.9-1770554954-8ce3bb4eca04188f4a0a1bfbd0a06a40f90883de",
            ),
            localpv("docker.io"),
        ])
    );

    // v1.34 with cilium 1.19.1 and multus, kube-vip (upstream's spelling), no kube-proxy,
    // kubeadm's etcd of the user's tag (kubeadm v1.34's own: 3.6.5-0), NFS instead of local PV.
    let mut cp = control_plane(k8s, "v1.34.3");
    cp.retain(|i| !i.contains("/kube-proxy:"));
    assert_eq!(
        list(&r, "v134_cilium"),
        cat(&[
            cp,
            s(&[
                "registry.k8s.io/pause:3.10.1",
                "registry.k8s.io/etcd:3.6.5-0",
                "registry.k8s.io/coredns/coredns:v1.12.1",
                "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
                "docker.io/plndr/kube-vip:v0.7.2",
            ]),
            cilium(
                "quay.io",
                "1.19.1",
                "v1.35.9-1770979049-232ed4a26881e4ab4f766f251f258ed424fff663",
            ),
            s(&[
                "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.2.4",
                "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2",
            ]),
        ])
    );

    // An existing private registry: every image from it (the control plane, pause under
    // /kubernetes, as kk's defaults derive kubernetes.image_repository), spiderpool's
    // images, then the user's, written in full and each once (nginx twice, calico/node
    // already in kk's list).
    let reg = "reg.example:5000";
    assert_eq!(
        list(&r, "v134_private"),
        cat(&[
            control_plane("reg.example:5000/kubernetes", "v1.34.3"),
            s(&[
                "reg.example:5000/kubernetes/pause:3.10.1",
                "reg.example:5000/coredns/coredns:v1.12.1",
                "reg.example:5000/dns/k8s-dns-node-cache:1.26.4",
                "reg.example:5000/library/haproxy:2.9.6-alpine",
            ]),
            calico(reg, reg, "v3.31.3", "v1.40.3"),
            s(&[
                "reg.example:5000/spidernet-io/spiderpool/spiderpool-plugins:27c4f118b1cec3773f2679b772e7583fc77e5686",
                "reg.example:5000/k8snetworkplumbingwg/multus-cni:v4.1.4",
                "reg.example:5000/spidernet-io/spiderpool/spiderpool-agent:v1.1.1",
                "reg.example:5000/spidernet-io/spiderpool/spiderpool-controller:v1.1.1",
            ]),
            localpv(reg),
            s(&[
                "docker.io/library/nginx:latest",
                "docker.io/kk/app:1",
                "docker.io/library/busybox:1.37",
            ]),
        ])
    );

    // A registry kk installs: the roles name every image by it, but it does not exist before
    // the install, so the pull takes each image from its source (the public registries);
    // image_registry/push files them under the registry's names. A registry the user set
    // (CoreDNS from my.mirror) is kept.
    assert_eq!(
        list(&r, "v134_installed"),
        cat(&[
            control_plane(k8s, "v1.34.3"),
            s(&[
                "registry.k8s.io/pause:3.10.1",
                "my.mirror/coredns/coredns:v1.12.1",
                "registry.k8s.io/dns/k8s-dns-node-cache:1.26.4",
                "docker.io/library/haproxy:2.9.6-alpine",
            ]),
            calico("docker.io", "quay.io", "v3.31.3", "v1.40.3"),
            s(&[
                "ghcr.io/spidernet-io/spiderpool/spiderpool-plugins:27c4f118b1cec3773f2679b772e7583fc77e5686",
                "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.1.4",
                "ghcr.io/spidernet-io/spiderpool/spiderpool-agent:v1.1.1",
                "ghcr.io/spidernet-io/spiderpool/spiderpool-controller:v1.1.1",
            ]),
            localpv("docker.io"),
        ])
    );

    // download.images.cluster false: only the user's images.
    assert_eq!(
        list(&r, "v134_user_only"),
        s(&["registry.k8s.io/pause:3.10.1"])
    );
}

/// The minors below v1.28 (v1.23 … v1.27): the default config of each lists every image with
/// nothing missing — their Calico releases (v3.25.2, v3.26.4, v3.28.5) have lists — and
/// cilium 1.14/1.15 (no cilium-envoy DaemonSet before 1.16) has one too.
#[test]
fn image_list_of_the_oldest_minors() {
    let inv = r#"
kind: Inventory
spec:
  hosts:
    v123: {connector: {type: local}, kubernetes: {kube_version: v1.23.17}}
    v124: {connector: {type: local}, kubernetes: {kube_version: v1.24.17}}
    v125: {connector: {type: local}, kubernetes: {kube_version: v1.25.16}}
    v126: {connector: {type: local}, kubernetes: {kube_version: v1.26.15}}
    v127: {connector: {type: local}, kubernetes: {kube_version: v1.27.16}}
    v123_cilium:
      connector: {type: local}
      kubernetes: {kube_version: v1.23.17}
      cni: {type: cilium}
      storage_class: {local: {enabled: false}}
    v126_cilium:
      connector: {type: local}
      kubernetes: {kube_version: v1.26.15}
      cni: {type: cilium}
      storage_class: {local: {enabled: false}}
"#;
    let p = project(inv, NO_FETCH);
    let r = run(&p);
    r.code(0);
    let k8s = "registry.k8s.io";
    // host, patch release, pause, coredns, node-cache, calico, its operator (upstream's
    // matrices, roles/defaults/vars/v1.2X.yaml; v3.26.4 instead of upstream's v3.26.5).
    for (host, v, pause, coredns, cache, calico_v, operator) in [
        (
            "v123", "v1.23.17", "3.6", "v1.8.6", "1.21.1", "v3.25.2", "v1.29.6",
        ),
        (
            "v124", "v1.24.17", "3.7", "v1.8.6", "1.21.1", "v3.26.4", "v1.30.9",
        ),
        (
            "v125", "v1.25.16", "3.8", "v1.9.3", "1.22.8", "v3.26.4", "v1.30.9",
        ),
        (
            "v126", "v1.26.15", "3.9", "v1.9.3", "1.22.13", "v3.26.4", "v1.30.9",
        ),
        (
            "v127", "v1.27.16", "3.9", "v1.10.1", "1.22.20", "v3.28.5", "v1.34.13",
        ),
    ] {
        assert_eq!(
            list(&r, host),
            cat(&[
                control_plane(k8s, v),
                vec![
                    format!("{}/pause:{}", k8s, pause),
                    format!("{}/coredns/coredns:{}", k8s, coredns),
                    format!("{}/dns/k8s-dns-node-cache:{}", k8s, cache),
                ],
                calico("docker.io", "quay.io", calico_v, operator),
                localpv("docker.io"),
            ]),
            "{}",
            host
        );
    }
    for (host, v, pause, coredns, cache, cilium_v) in [
        (
            "v123_cilium",
            "v1.23.17",
            "3.6",
            "v1.8.6",
            "1.21.1",
            "1.14.19",
        ),
        (
            "v126_cilium",
            "v1.26.15",
            "3.9",
            "v1.9.3",
            "1.22.13",
            "1.15.19",
        ),
    ] {
        let mut want = control_plane(k8s, v);
        want.extend([
            format!("{}/pause:{}", k8s, pause),
            format!("{}/coredns/coredns:{}", k8s, coredns),
            format!("{}/dns/k8s-dns-node-cache:{}", k8s, cache),
        ]);
        // cilium() less its first entry, the cilium-envoy image.
        want.extend(cilium("quay.io", cilium_v, "").into_iter().skip(1));
        assert_eq!(list(&r, host), want, "{}", host);
    }
}

#[test]
fn an_unknown_chart_version_stops_the_pull_naming_it() {
    // v1.32's matrix has calico v3.30.6, for which no image list is known; an unsupported
    // minor has no image versions at all. Nothing is pulled: the check comes first.
    let inv = r#"
kind: Inventory
spec:
  hosts:
    v132: {connector: {type: local}, kubernetes: {kube_version: v1.32.5}}
    v120: {connector: {type: local}, kubernetes: {kube_version: v1.20.2}, cni: {type: none}, storage_class: {local: {enabled: false}}}
"#;
    let p = project(inv, NO_FETCH);
    let r = run(&p);
    r.code(0);
    assert_eq!(
        r.msg("report", "v132")["missing"],
        json!(["calico v3.30.6: no image list (download.images.charts.calico.\"v3.30.6\")"])
    );
    let missing: Value = r.msg("report", "v120")["missing"].clone();
    assert!(
        missing[0]
            .as_str()
            .unwrap_or_default()
            .contains("Kubernetes v1.20.2 is not a supported version"),
        "{}",
        missing
    );

    // With download.fetch (the default) the run fails on that check, before any pull.
    p.file(
        "config.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec: {}\n",
    );
    let r = run(&p);
    assert_ne!(r.code, 0, "{}", r.describe());
    let failed = r.result("Download | every image of this cluster is known", "v132");
    let msg = failed["result"]["msg"].as_str().unwrap_or_default();
    assert!(
        msg.contains("calico v3.30.6") && msg.contains("download.images.cluster: false"),
        "{}",
        msg
    );
    let pulls = r
        .events()
        .into_iter()
        .filter(|e| {
            e["event"] == "host_result"
                && e["task"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("Download | pull ")
                && e["status"] != "skipped"
        })
        .count();
    assert_eq!(pulls, 0, "nothing is pulled: {}", r.describe());

    // The same config with the extra images only: nothing to check, nothing computed.
    p.file(
        "config.yaml",
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  download: {fetch: false, images: {cluster: false}}\n",
    );
    let r = run(&p);
    r.code(0);
    assert_eq!(
        r.msg("report", "v132"),
        json!({"images": [], "missing": []})
    );
}

/// `kk artifact export` with the v1.34 default config and an existing registry (every image
/// from it, as image_registry.auth.registry makes the roles use it): every image of the
/// list is pulled into binary_dir/images (digests checked by the `image` module) and packed.
/// The registry is a real one on loopback holding a small image under each name; the
/// binaries and charts the plan needs are FAKE stand-ins of a local HTTP server.
#[test]
fn export_pulls_and_packs_every_image_of_the_list() {
    let reg = registry();
    let addr = format!("127.0.0.1:{}", reg.port);
    let names = cat(&[
        control_plane(&format!("{}/kubernetes", addr), "v1.34.3"),
        vec![
            format!("{}/kubernetes/pause:3.10.1", addr),
            format!("{}/coredns/coredns:v1.12.1", addr),
            format!("{}/dns/k8s-dns-node-cache:1.26.4", addr),
        ],
        calico(&addr, &addr, "v3.31.3", "v1.40.3"),
        localpv(&addr),
    ]);
    let p = project(
        "kind: Inventory\nspec:\n  hosts:\n    localhost: {connector: {type: local}}\n",
        "",
    );
    push_images(&p, &addr, &names);

    // The plan's binaries and charts: one FAKE file, its sha256 given per component.
    let root = p.path("srv");
    std::fs::create_dir_all(&root).unwrap();
    let fake = b"#!/bin/sh\necho 'FAKE artifact (a kk test stand-in)'\n";
    std::fs::write(root.join("fake"), fake).unwrap();
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    p.file(
        "artifacts.yaml",
        "zones:\n  global: \"http://127.0.0.1:9/\"\ncomponents: {}\n",
    );
    let comps = [
        "kubelet",
        "kubeadm",
        "kubectl",
        "calico",
        "calicoctl",
        "localpv_provisioner",
    ];
    let url = srv.url("fake");
    let digest = &sha(fake)[7..];
    p.file(
        "config.yaml",
        &format!(
            r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  kubernetes: {{kube_version: v1.34.3, helm_version: ""}}
  etcd: {{etcd_version: ""}}
  cri: {{containerd_version: "", runc_version: "", crictl_version: ""}}
  cni: {{cni_plugins_version: ""}}
  image_registry: {{auth: {{registry: "{addr}"}}}}
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url: {{{urls}}}
    sha256: {{{sums}}}
    images:
      auths: [{{registry: "{addr}", plain_http: true}}]
"#,
            addr = addr,
            manifest = p.path("artifacts.yaml").display(),
            urls = comps
                .iter()
                .map(|c| format!("{}: \"{}\"", c, url))
                .collect::<Vec<_>>()
                .join(", "),
            sums = comps
                .iter()
                .map(|c| format!("{}: \"{}\"", c, digest))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    );
    let export = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("playbooks/artifact_export.yaml")
        .display()
        .to_string();
    let wd = p.path("work");
    let r = kk_json(&p, &["run", &export, "-c", "config.yaml"], &wd);
    r.code(0);

    // Every image of the list is in the layout, and the package lists and holds it.
    let index: Value = serde_json::from_slice(
        &std::fs::read(wd.join("kubekey/images/index.json")).expect("binary_dir/images"),
    )
    .unwrap();
    let mut held: Vec<String> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["annotations"]["org.opencontainers.image.ref.name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    held.sort();
    let mut want = names.clone();
    want.sort();
    assert_eq!(held, want);
    let listed: Value = kk_engine::yaml::load_file(&wd.join("artifact/kubekey-artifact.yaml"))
        .unwrap_or_else(|e| panic!("kubekey-artifact.yaml: {}", e.message))
        .to_value();
    assert_eq!(listed["images"], json!(names));
    let tar = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(wd.join("artifact/kubekey-artifact.tar.gz"))
        .output()
        .unwrap();
    let tar = String::from_utf8_lossy(&tar.stdout).to_string();
    assert!(tar.lines().any(|l| l == "images/index.json"), "{}", tar);
}

/// A Calico patch release without a list (v1.32's v3.30.6): the images of the listed
/// release of its minor (v3.30.5) with its own tag, and the operator the downloaded chart
/// deploys, read from the chart's values.yaml. The chart here is a FAKE stand-in holding
/// only that file, with an operator tag no release has.
#[test]
fn a_calico_release_without_a_list_takes_the_operator_of_its_chart() {
    let p = project(
        "kind: Inventory\nspec:\n  hosts:\n    localhost: {connector: {type: local}, kubernetes: {kube_version: v1.32.5}}\n",
        NO_FETCH,
    );
    let dest = "cni/calico/tigera-operator-v3.30.6.tgz";
    p.file(
        "site.yaml",
        &SITE.replace(
            "    download_images_computed: true\n",
            &format!(
                "    download_images_computed: true\n    download_plan: {{artifacts: [{{component: calico, dest: {}}}]}}\n",
                dest
            ),
        ),
    );
    let chart = p.path("chart/tigera-operator");
    std::fs::create_dir_all(&chart).unwrap();
    std::fs::write(
        chart.join("values.yaml"),
        "# FAKE tigera-operator chart values (a kk test stand-in)\ntigeraOperator:\n  image: tigera/operator\n  version: v1.38.99-fake\n  registry: quay.io\n",
    )
    .unwrap();
    let tgz = p.path("wd/kubekey").join(dest);
    std::fs::create_dir_all(tgz.parent().unwrap()).unwrap();
    let st = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(p.path("chart"))
        .arg("tigera-operator")
        .status()
        .unwrap();
    assert!(st.success());
    let r = run(&p);
    r.code(0);
    let want = cat(&[
        control_plane("registry.k8s.io", "v1.32.5"),
        s(&[
            "registry.k8s.io/pause:3.10",
            "registry.k8s.io/coredns/coredns:v1.11.3",
            "registry.k8s.io/dns/k8s-dns-node-cache:1.23.1",
        ]),
        calico("docker.io", "quay.io", "v3.30.6", "v1.38.99-fake"),
        localpv("docker.io"),
    ]);
    assert_eq!(list(&r, "localhost"), want);
}
