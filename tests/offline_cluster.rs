//! "Package everything, install anywhere, offline", end to end.
//!
//! 1. Mirrors: the upstream download sites (tests/common/mirror.rs: every file the default
//!    config of v1.30 and of v1.34 selects, at its upstream URL path — real binaries from
//!    Debian packages, FAKES for Kubernetes' own tools and the charts) on a local HTTP server,
//!    and the public registries on a real docker-registry on loopback holding a small image
//!    under every name of each version's image list (`<registry>/docker.io/calico/node:…`).
//! 2. `kk create config --with-kubernetes v1.30` (and v1.34), pointed at the mirrors the way a
//!    user behind one would (`zone: http://<mirror>/`, download.images.mirrors), with a
//!    docker-registry to install, the OS-package repository built by the export
//!    (repository.build, v1.30) and download.sha256 for the mirror's bytes (they are not
//!    upstream's): `kk artifact export` exits 0, every file in the package is listed with
//!    its digest and checks, the artifacts are the plan's with the configured digests, the
//!    images are exactly the expected list for that version and config.
//! 3. Two test hosts with no route to any mirror (`apt-get update` fails there; socat and
//!    conntrack are removed first): a package with one corrupted byte is refused before any
//!    host changes, naming the file; then `kk create cluster -a <the v1.30 package>` with the
//!    same config installs the OS packages, etcd, containerd, Docker, the registry and
//!    (through the FAKES) Kubernetes from the package alone, with both mirrors stopped; the
//!    registry holds every image of the list under the names the roles use.
//!
//! Test-only settings beside the mirrors (as tests/create_cluster.rs): kernel-global sysctls
//! left alone and time sync off (the hosts share this machine's kernel and clock),
//! containerd's data root on tmpfs.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::artifacts::sha256_file;
use common::images::{calico, control_plane, localpv};
use common::registry::{curl, push_images, registry};
use common::{bed_inventory_hosts, fresh, sh, Project, Run};
use serde_json::{json, Value};
use testbed::http::HttpServer;
use testbed::TestBed;

const NAMES: [&str; 2] = ["kk-cp1", "kk-reg"];
/// The registry password of the config: never printed or logged.
const PASSWORD: &str = "offline-Registry-Secret-3";
/// The packages taken off the hosts: the package's repository must bring them back.
const REMOVED: [&str; 2] = ["socat", "conntrack"];

fn inventory(bed: &TestBed) -> String {
    bed_inventory_hosts(bed, &NAMES)
        + "  groups:\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n    kube_control_plane:\n      hosts: [kk-cp1]\n    kube_worker:\n      hosts: [kk-cp1]\n    etcd:\n      hosts: [kk-cp1]\n    image_registry:\n      hosts: [kk-reg]\n"
}

/// The image list of the default config of `minor` with a registry kk installs: each image
/// under its source's name (what the package holds).
fn expected_images(minor: &str) -> Vec<String> {
    let k8s = "registry.k8s.io";
    let (kube, pause, coredns, nodelocal, calico_v, operator) = match minor {
        "v1.30" => (
            "v1.30.8", "3.9", "v1.11.3", "1.22.28", "v3.29.7", "v1.36.16",
        ),
        "v1.34" => (
            "v1.34.3", "3.10.1", "v1.12.1", "1.26.4", "v3.31.3", "v1.40.3",
        ),
        other => panic!("no expected list for {}", other),
    };
    [
        control_plane(k8s, kube),
        vec![
            format!("{}/pause:{}", k8s, pause),
            format!("{}/coredns/coredns:{}", k8s, coredns),
            format!("{}/dns/k8s-dns-node-cache:{}", k8s, nodelocal),
        ],
        calico("docker.io", "quay.io", calico_v, operator),
        localpv("docker.io"),
    ]
    .concat()
}

/// Sets `value` at the dot-separated `path` of a mapping, creating mappings on the way.
fn set(doc: &mut Value, path: &str, value: Value) {
    let mut cur = doc;
    for key in path.split('.') {
        if !cur.is_object() {
            *cur = json!({});
        }
        cur = cur
            .as_object_mut()
            .unwrap()
            .entry(key)
            .or_insert(Value::Null);
    }
    *cur = value;
}

/// `kk create config` for `minor`, pointed at the mirrors, with a docker-registry, the
/// mirror's digests and the test-only settings.
fn config(
    p: &Project,
    minor: &str,
    srv: &HttpServer,
    reg: &str,
    sums: &BTreeMap<String, String>,
) -> String {
    let out = p.path(&format!("generated-{}.yaml", minor));
    // The minor's default patch release, as a user takes it.
    let vars = common::artifacts::load_yaml(
        &common::artifacts::repo().join(format!("roles/defaults/vars/{}.yaml", minor)),
    );
    let version = vars["default_kube_version"].as_str().unwrap();
    p.kk(&[
        "create",
        "config",
        "--with-kubernetes",
        version,
        "-o",
        out.to_str().unwrap(),
    ])
    .code(0);
    let mut doc = common::artifacts::load_yaml(&out);
    let spec = &mut doc["spec"];
    set(spec, "zone", json!(srv.url("")));
    set(spec, "image_registry.type", json!("docker-registry"));
    set(spec, "image_registry.auth.password", json!(PASSWORD));
    set(spec, "download.arch", json!(["amd64"]));
    set(spec, "download.sha256", json!(sums));
    let mirrors: BTreeMap<&str, String> = ["docker.io", "quay.io", "registry.k8s.io"]
        .iter()
        .map(|r| (*r, format!("{}/{}", reg, r)))
        .collect();
    set(spec, "download.images.mirrors", json!(mirrors));
    set(
        spec,
        "download.images.auths",
        json!([{"registry": reg, "plain_http": true}]),
    );
    set(spec, "repository.build", json!(minor == "v1.30"));
    let apt = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/kk-offline-apt");
    set(spec, "repository.apt_dir", json!(apt.to_str().unwrap()));
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    set(
        spec,
        "native.disable_swap",
        json!(swaps.lines().count() <= 1),
    );
    set(
        spec,
        "native.sysctl_skip",
        json!([
            "vm.",
            "fs.",
            "kernel.",
            "net.core.rmem_max",
            "net.core.wmem_max",
            "net.ipv4.neigh.",
            "net.ipv6.neigh."
        ]),
    );
    set(spec, "native.ntp.enabled", json!(false));
    set(
        spec,
        "cri.containerd.data_root",
        json!("/tmp/kk-containerd"),
    );
    // JSON is YAML: the config file kk reads.
    serde_json::to_string_pretty(&doc).unwrap()
}

/// The package's files: `tar -xzf` into `dir`; returns the member names.
fn unpack(package: &Path, dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    let out = std::process::Command::new("tar")
        .arg("-xvzf")
        .arg(package)
        .arg("-C")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .map(str::to_string)
        .collect()
}

/// Exports `minor`'s package into `<p>/wd-<minor>` and checks it; returns its path.
fn export(p: &Project, minor: &str, srv: &HttpServer, reg: &str) -> PathBuf {
    let (sums, versions) = common::mirror::build(&p.path("srv"), &p.path("scratch"), minor, true);
    let cfg = format!("config-{}.yaml", minor);
    p.file(&cfg, &config(p, minor, srv, reg, &sums));
    let wd = p.path(&format!("wd-{}", minor));
    let r = p.kk(&[
        "artifact",
        "export",
        "-i",
        "inventory.yaml",
        "-c",
        &cfg,
        "--workdir",
        wd.to_str().unwrap(),
        "--output",
        "json",
    ]);
    r.code(0);
    common::assert_secret_hidden(p, &r, PASSWORD);
    let package = wd.join("artifact/kubekey-artifact.tar.gz");

    // Every file is in the package's checksum list, and the list checks.
    let dir = p.path(&format!("unpacked-{}", minor));
    let members = unpack(&package, &dir);
    let list = std::fs::read_to_string(dir.join("kubekey-artifact.sha256")).unwrap();
    let listed: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_once("  ").map(|(_, f)| f))
        .collect();
    for m in &members {
        assert!(
            m == "kubekey-artifact.sha256" || listed.contains(&m.as_str()),
            "{} in the {} package has no digest in its list",
            m,
            minor
        );
    }
    let check = std::process::Command::new("sha256sum")
        .args(["--check", "--quiet", "kubekey-artifact.sha256"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );

    // The artifacts: those the mirror served for this minor, each with the digest the
    // config gave, the bytes the mirror served.
    let meta: Value = common::artifacts::load_yaml(&dir.join("kubekey-artifact.yaml"));
    let mut got: BTreeMap<String, (String, String)> = BTreeMap::new();
    for a in meta["artifacts"].as_array().unwrap() {
        let c = a["component"].as_str().unwrap().to_string();
        let path = a["path"].as_str().unwrap();
        assert_eq!(
            sha256_file(&dir.join(path)),
            a["sha256"].as_str().unwrap(),
            "{}",
            path
        );
        got.insert(
            c,
            (
                a["version"].as_str().unwrap().into(),
                a["sha256"].as_str().unwrap().into(),
            ),
        );
    }
    let want: BTreeMap<String, (String, String)> = sums
        .iter()
        .map(|(c, s)| (c.clone(), (versions[c].clone(), s.clone())))
        .collect();
    assert_eq!(got, want, "the {} package's artifacts", minor);

    // The images: exactly the list, as the layout names them.
    let mut images: Vec<String> = meta["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut expected = expected_images(minor);
    assert_eq!(images, expected, "the {} package's image list", minor);
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.join("images/index.json")).unwrap()).unwrap();
    images = index["manifests"]
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
    images.sort();
    expected.sort();
    assert_eq!(images, expected, "the {} package's image layout", minor);
    if minor == "v1.30" {
        assert!(
            members
                .iter()
                .any(|m| m.starts_with("repository/debian-12-debs-amd64/socat_")),
            "the package lacks the OS-package repository"
        );
    }
    package
}

fn create_cluster(p: &Project, package: &Path) -> Run {
    let r = p.kk(&[
        "create",
        "cluster",
        "-i",
        "inventory.yaml",
        "-c",
        "config-v1.30.yaml",
        "-a",
        package.to_str().unwrap(),
        "--workdir",
        "wd",
        "--output",
        "json",
        "--yes",
    ]);
    common::assert_secret_hidden(p, &r, PASSWORD);
    r
}

#[test]
fn a_cluster_installs_from_the_offline_package_alone() {
    let bed = TestBed::start(2).expect("boot test hosts");
    let p = Project::new();
    p.file("inventory.yaml", &inventory(&bed));

    // 1. The mirrors.
    std::fs::create_dir_all(p.path("srv")).unwrap();
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &p.path("srv")).unwrap();
    let mut source = registry();
    let reg = format!("127.0.0.1:{}", source.port);
    let mut all: Vec<String> = [expected_images("v1.30"), expected_images("v1.34")].concat();
    all.sort();
    all.dedup();
    let refs: Vec<String> = all.iter().map(|n| format!("{}/{}", reg, n)).collect();
    push_images(&p, &reg, &refs);

    // 2. The packages of two minors.
    let package = export(&p, "v1.30", &srv, &reg);
    export(&p, "v1.34", &srv, &reg);
    drop(srv);
    source.stop();

    // 3. The hosts: no route to a mirror; the packages the repository brings back removed.
    for i in 0..2 {
        let upd = bed.ssh(i, "apt-get -o APT::Update::Error-Mode=any update 2>&1");
        assert!(
            !upd.status.success(),
            "test host {} reaches a mirror: {}",
            i,
            String::from_utf8_lossy(&upd.stdout)
        );
        sh(
            &bed,
            i,
            &format!("dpkg --purge {} >/dev/null", REMOVED.join(" ")),
        );
    }
    let before: Vec<(usize, Vec<String>)> = (0..2).map(|i| (i, fresh::state(&bed, i))).collect();

    // A package with one byte changed in kubeadm: refused before any host changes.
    let dir = p.path("unpacked-v1.30");
    let kubeadm = dir.join("kube/v1.30.8/amd64/kubeadm");
    let mut bytes = std::fs::read(&kubeadm).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&kubeadm, bytes).unwrap();
    let bad = p.path("corrupt/kubekey-artifact.tar.gz");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    let tar = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&bad)
        .arg("-C")
        .arg(&dir)
        .arg(".")
        .status()
        .unwrap();
    assert!(tar.success());
    let r = create_cluster(&p, &bad);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(
        r.stdout.contains("kube/v1.30.8/amd64/kubeadm")
            || r.stderr.contains("kube/v1.30.8/amd64/kubeadm"),
        "the corrupted file is not named: {}",
        r.describe()
    );
    let changed = fresh::differences(&bed, &NAMES, &before);
    assert!(
        changed.is_empty(),
        "a corrupted package changed hosts:\n{}",
        changed
    );

    // The package: the whole cluster, with no mirror reachable anywhere.
    let r = create_cluster(&p, &package);
    r.code(0);
    for pkg in REMOVED {
        sh(
            &bed,
            0,
            &format!("dpkg -s {} | grep -qx 'Status: install ok installed'", pkg),
        );
    }
    sh(&bed, 0, "systemctl is-active etcd containerd");
    sh(&bed, 1, "systemctl is-active docker");
    // Kubernetes (the FAKE kubeadm): initialised once, its images from the registry kk installed.
    let host = bed.hosts()[1].ip.to_string();
    let journal = common::fakes::journal(&bed, 0);
    let inits = common::cluster::inits(&journal);
    assert_eq!(inits.len(), 1, "{:#?}", journal);
    assert_eq!(inits[0]["exit"], 0, "{}", inits[0]);
    let kubeadm = common::cluster::kubeadm_config(inits[0]);
    assert!(
        kubeadm.contains(&format!("imageRepository: \"{}/kubernetes\"", host)),
        "{}",
        kubeadm
    );

    // The registry holds every image of the list, under the roles' names (registry.k8s.io's
    // single-segment names under kubernetes/, as kubeadm's imageRepository above).
    let ca = p.path("wd/pki/root.crt").display().to_string();
    let auth = format!("admin:{}", PASSWORD);
    let mut held = Vec::new();
    let (catalog, code) = curl(&[
        "--cacert",
        &ca,
        "-u",
        &auth,
        &format!("https://{}/v2/_catalog?n=1000", host),
    ]);
    assert_eq!(code, "200", "{}", catalog);
    let catalog: Value = serde_json::from_str(&catalog).unwrap();
    for repo in catalog["repositories"].as_array().unwrap() {
        let repo = repo.as_str().unwrap();
        let (tags, _) = curl(&[
            "--cacert",
            &ca,
            "-u",
            &auth,
            &format!("https://{}/v2/{}/tags/list", host, repo),
        ]);
        let tags: Value = serde_json::from_str(&tags).unwrap();
        for t in tags["tags"].as_array().unwrap() {
            held.push(format!("{}/{}:{}", host, repo, t.as_str().unwrap()));
        }
    }
    held.sort();
    let mut want: Vec<String> = expected_images("v1.30")
        .iter()
        .map(|n| {
            let (registry, path) = n.split_once('/').unwrap();
            if registry == "registry.k8s.io" && !path.contains('/') {
                format!("{}/kubernetes/{}", host, path)
            } else {
                format!("{}/{}", host, path)
            }
        })
        .collect();
    want.sort();
    assert_eq!(held, want, "the registry's images");
}
