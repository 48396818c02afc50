//! What the CAPKK end-to-end tests share (tests/capkk_machine.rs runs the machine phases
//! through the driver, tests/capkk_cluster.rs the controllers over the FAKE API): the
//! artifact server with the component overrides that point the driver at it, and the
//! driver with the site settings these test hosts need.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use capkk::api::{Checksum, Override};
use capkk::machine::EngineDriver;
use serde_json::{json, Map, Value};
use testbed::artifacts::containerd::containerd_artifact;
use testbed::artifacts::docker::{
    docker_tgz, fake_cri_dockerd_tgz, CRIDOCKERD_VERSION, DOCKER_VERSION,
};
use testbed::artifacts::fakes::serve_kube;
use testbed::http::HttpServer;

use super::artifacts::{build_server, sha256_file};

/// The Kubernetes version the FAKE kubeadm and kubelet are served for.
pub const KUBE: &str = "v1.33.1";

/// The artifact server: tree.rs's Debian binaries, containerd 1.7, the FAKE kubeadm and
/// kubelet of [`KUBE`]; the overrides that point the driver at them, by component.
pub struct Artifacts {
    pub srv: HttpServer,
    /// (override id, version, server path).
    pub files: Vec<(&'static str, &'static str, String)>,
    pub sums: BTreeMap<&'static str, String>,
}

pub fn serve(dir: &Path, docker: bool) -> Artifacts {
    let root = dir.join("srv");
    let scratch = dir.join("scratch");
    build_server(&root, &scratch);
    containerd_artifact(&root, &scratch);
    serve_kube(&root, &scratch, KUBE, "v3.18.5");
    let mut files = vec![
        ("kubeadm", "", format!("cn/kube/{KUBE}/kubeadm")),
        ("kubelet", "", format!("cn/kube/{KUBE}/kubelet")),
        // Debian's real kubectl (1.20.2): the binary phase installs what it is given.
        ("kubectl", "", "cn/kube/v1.20.2/kubectl".to_string()),
        (
            "kubecni",
            "v1.1.1",
            "cn/cni/v1.1.1/cni-plugins-linux-amd64-v1.1.1.tgz".to_string(),
        ),
        (
            "crictl",
            "v1.34.0",
            "cn/crictl/v1.34.0/crictl-v1.34.0-linux-amd64.tar.gz".to_string(),
        ),
        (
            "containerd",
            "v1.7.24",
            "cn/containerd/v1.7.24/containerd-1.7.24-linux-amd64.tar.gz".to_string(),
        ),
        (
            "runc",
            "v1.1.5",
            "mirror/runc/v1.1.5/runc.amd64".to_string(),
        ),
    ];
    if docker {
        // Debian's docker.io 26.1.5 in Docker's static layout; a FAKE cri-dockerd.
        let d = format!("cn/docker/{v}/docker-{v}.tgz", v = DOCKER_VERSION);
        docker_tgz(&root.join(&d), &scratch);
        let c = "cn/cri-dockerd/v0.3.21/cri-dockerd-0.3.21.amd64.tgz".to_string();
        fake_cri_dockerd_tgz(&root.join(&c), &scratch);
        files.push(("docker", DOCKER_VERSION, d));
        files.push(("cri-dockerd", CRIDOCKERD_VERSION, c));
    }
    let mut sums = BTreeMap::new();
    for (id, _, path) in &files {
        sums.insert(*id, sha256_file(&root.join(path)));
    }
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    Artifacts { srv, files, sums }
}

impl Artifacts {
    /// One override per served file: its URL on the server and its sha256.
    pub fn overrides(&self) -> Vec<Override> {
        self.files
            .iter()
            .map(|(id, version, path)| Override {
                id: id.to_string(),
                version: version.to_string(),
                url: self.srv.url(path),
                checksum: Checksum {
                    value: self.sums[id].clone(),
                    path: String::new(),
                },
                ..Default::default()
            })
            .collect()
    }
}

/// base64 of `s`, as cloud-init `encoding: b64` and Secret data want it.
pub fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The operator's site settings for these hosts (network namespaces sharing this machine's
/// kernel, an overlay root): kernel-global sysctls left alone, no time sync, swap left as
/// the machine has it, containerd's data root on tmpfs (tests/cri.rs says why).
pub fn driver(dir: &Path) -> EngineDriver {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let settings = json!({
        "native": {
            "disable_swap": swaps.lines().count() <= 1,
            "sysctl_skip": ["vm.", "fs.", "kernel.", "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.neigh.", "net.ipv6.neigh."],
            "ntp": {"enabled": false},
        },
        "cri": {"containerd": {"data_root": "/tmp/kk-containerd"}},
    });
    let Value::Object(m) = settings else {
        unreachable!()
    };
    EngineDriver::new(dir.join("capkk-work"))
        .unwrap()
        .with_settings(m as Map<String, Value>)
}

/// The tests' tokio runtime (the machine has 2 cores).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
