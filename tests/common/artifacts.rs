//! The artifact server of tests/download.rs, shared with the end-to-end tests: real
//! binaries repackaged in upstream's archive layouts from the Debian packages installed
//! on this machine (scripts/test installs them), clearly named FAKE stand-ins where no
//! Debian package exists, and a manifest in builtin/artifacts.yaml's format.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::{Project, Run};

/// The repository root (playbooks/, roles/, builtin/).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Hex sha256 of a file.
pub fn sha256_file(p: &Path) -> String {
    let data = std::fs::read(p).unwrap_or_else(|e| panic!("reading {}: {}", p.display(), e));
    hex::encode(Sha256::digest(&data))
}

/// The file of an installed Debian package whose path ends with `suffix`.
pub fn debian_file(package: &str, suffix: &str) -> PathBuf {
    let out = Command::new("dpkg").args(["-L", package]).output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .find(|p| p.to_string_lossy().ends_with(suffix) && p.is_file());
    if let Some(p) = listed {
        return p;
    }
    // scripts/test unpacks kubernetes-client here when /usr/bin/kubectl belongs to
    // another package on this machine.
    let unpacked = Path::new("/usr/local/lib/kk-test")
        .join(package)
        .join("usr")
        .join(suffix.trim_start_matches('/'));
    if unpacked.is_file() {
        return unpacked;
    }
    panic!(
        "{} from the Debian package {} is needed: install the package (scripts/test does)",
        suffix, package
    );
}

/// A file of a Debian package that `scripts/unpack-debs` unpacked (not installed) for
/// the tests: `unpacked("trixie", "etcd-server", "usr/bin/etcd")`.
pub fn unpacked(suite: &str, package: &str, path: &str) -> PathBuf {
    let root = std::env::var_os("KK_DEBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/lib/kk-test/debs"));
    let p = root.join(suite).join(package).join(path);
    assert!(
        p.is_file(),
        "{} of Debian {}'s {} is needed: run `scripts/unpack-debs {} {}` (scripts/test does)",
        path,
        suite,
        package,
        suite,
        package
    );
    p
}

/// `tar czf out -C dir names…` with fast compression.
pub fn tar_gz(out: &Path, dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let status = Command::new("bash")
        .arg("-c")
        .arg("set -o pipefail; tar -cf - -C \"$1\" \"${@:3}\" | gzip -1 > \"$2\"")
        .arg("bash")
        .arg(dir)
        .arg(out)
        .args(names)
        .status()
        .unwrap();
    assert!(status.success(), "packing {}", out.display());
}

/// Copies an executable (parents created).
pub fn copy_exec(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {}", from.display(), e));
}

/// Writes a FAKE stand-in script for a tool that has no Debian package.
pub fn fake(to: &Path, name: &str) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(
        to,
        format!(
            "#!/bin/sh\necho 'FAKE {} (a kk test stand-in, not the real tool)'\n",
            name
        ),
    )
    .unwrap();
}

/// One served artifact: where it lies on the server and where it must land.
pub struct Served {
    pub component: &'static str,
    pub version: &'static str,
    /// Under the server root.
    pub server_path: String,
    /// Under binary_dir.
    pub dest: String,
}

/// Builds the server tree; returns what it serves.
pub fn build_server(root: &Path, scratch: &Path) -> Vec<Served> {
    let mut served = Vec::new();
    let mut add = |component, version, server_path: String, dest: String| {
        served.push(Served {
            component,
            version,
            server_path,
            dest,
        })
    };
    // etcd: etcd-v3.4.23-linux-amd64/{etcd,etcdctl}
    let e = scratch.join("etcd");
    let top = "etcd-v3.4.23-linux-amd64";
    copy_exec(
        &debian_file("etcd-server", "/bin/etcd"),
        &e.join(top).join("etcd"),
    );
    copy_exec(
        &debian_file("etcd-client", "/bin/etcdctl"),
        &e.join(top).join("etcdctl"),
    );
    let f = format!("{}.tar.gz", top);
    tar_gz(&root.join("cn/etcd/v3.4.23").join(&f), &e, &[top]);
    add(
        "etcd",
        "v3.4.23",
        format!("cn/etcd/v3.4.23/{}", f),
        format!("etcd/v3.4.23/amd64/{}", f),
    );
    // containerd: bin/{containerd,containerd-shim-runc-v2,ctr}
    let c = scratch.join("containerd");
    for b in ["containerd", "containerd-shim-runc-v2", "ctr"] {
        copy_exec(
            &debian_file("containerd", &format!("/bin/{}", b)),
            &c.join("bin").join(b),
        );
    }
    let f = "containerd-1.6.20-linux-amd64.tar.gz";
    tar_gz(&root.join("cn/containerd/v1.6.20").join(f), &c, &["bin"]);
    add(
        "containerd",
        "v1.6.20",
        format!("cn/containerd/v1.6.20/{}", f),
        format!("containerd/v1.6.20/amd64/{}", f),
    );
    // runc: raw, served only under /mirror/ (download.artifact_url.runc points there).
    copy_exec(
        &debian_file("runc", "/sbin/runc"),
        &root.join("mirror/runc/v1.1.5/runc.amd64"),
    );
    add(
        "runc",
        "v1.1.5",
        "mirror/runc/v1.1.5/runc.amd64".into(),
        "runc/v1.1.5/amd64/runc.amd64".into(),
    );
    // CNI plugins: a flat tgz of /usr/lib/cni/*.
    let bridge = debian_file("containernetworking-plugins", "/cni/bridge");
    let cni_dir = bridge.parent().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(cni_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let f = "cni-plugins-linux-amd64-v1.1.1.tgz";
    tar_gz(&root.join("cn/cni/v1.1.1").join(f), cni_dir, &refs);
    add(
        "cni_plugins",
        "v1.1.1",
        format!("cn/cni/v1.1.1/{}", f),
        format!("cni/plugins/v1.1.1/amd64/{}", f),
    );
    // kubectl: raw, from kubernetes-client (1.20.2).
    copy_exec(
        &debian_file("kubernetes-client", "/bin/kubectl"),
        &root.join("cn/kube/v1.20.2/kubectl"),
    );
    add(
        "kubectl",
        "v1.20.2",
        "cn/kube/v1.20.2/kubectl".into(),
        "kube/v1.20.2/amd64/kubectl".into(),
    );
    // FAKE stand-ins (no Debian package): kubelet, kubeadm, calicoctl raw; helm and
    // crictl in their archive layouts; the calico chart as a tgz.
    for b in ["kubelet", "kubeadm"] {
        fake(&root.join("cn/kube/v1.20.2").join(b), b);
        add(
            if b == "kubelet" { "kubelet" } else { "kubeadm" },
            "v1.20.2",
            format!("cn/kube/v1.20.2/{}", b),
            format!("kube/v1.20.2/amd64/{}", b),
        );
    }
    fake(
        &root.join("cn/calico/v3.31.3/calicoctl-linux-amd64"),
        "calicoctl",
    );
    add(
        "calicoctl",
        "v3.31.3",
        "cn/calico/v3.31.3/calicoctl-linux-amd64".into(),
        "cni/calico/v3.31.3/amd64/calicoctl-linux-amd64".into(),
    );
    fake(&scratch.join("helm/linux-amd64/helm"), "helm");
    let f = "helm-v3.18.5-linux-amd64.tar.gz";
    tar_gz(
        &root.join("cn/helm").join(f),
        &scratch.join("helm"),
        &["linux-amd64"],
    );
    add(
        "helm",
        "v3.18.5",
        format!("cn/helm/{}", f),
        format!("helm/v3.18.5/amd64/{}", f),
    );
    fake(&scratch.join("crictl/crictl"), "crictl");
    let f = "crictl-v1.34.0-linux-amd64.tar.gz";
    tar_gz(
        &root.join("cn/crictl/v1.34.0").join(f),
        &scratch.join("crictl"),
        &["crictl"],
    );
    add(
        "crictl",
        "v1.34.0",
        format!("cn/crictl/v1.34.0/{}", f),
        format!("crictl/v1.34.0/amd64/{}", f),
    );
    fake(
        &scratch.join("chart/tigera-operator/Chart.yaml"),
        "tigera-operator chart",
    );
    let f = "tigera-operator-v3.31.3.tgz";
    tar_gz(
        &root.join("cn/calico/v3.31.3").join(f),
        &scratch.join("chart"),
        &["tigera-operator"],
    );
    add(
        "calico",
        "v3.31.3",
        format!("cn/calico/v3.31.3/{}", f),
        format!("cni/calico/{}", f),
    );
    served
}

/// The test's artifact manifest (builtin/artifacts.yaml's format). The `global` zone
/// points at a closed port: only `zone: cn` reaches the server.
pub fn manifest(base: &str, sums: &BTreeMap<&str, String>, extra: &str) -> String {
    let sha = |c: &str| sums[c].clone();
    format!(
        r#"zones:
  global: "http://127.0.0.1:9/"
  cn: "{base}"
components:
  etcd:
    url: "etcd/{{version}}/etcd-{{version}}-linux-{{arch}}.tar.gz"
    dest: "etcd/{{version}}/{{arch}}/etcd-{{version}}-linux-{{arch}}.tar.gz"
    sha256:
      v3.4.23: {{amd64: "{etcd}"}}
  kubelet:
    url: "kube/{{version}}/kubelet"
    dest: "kube/{{version}}/{{arch}}/kubelet"
    sha256:
      v1.20.2: {{amd64: "{kubelet}"}}
  kubeadm:
    url: "kube/{{version}}/kubeadm"
    dest: "kube/{{version}}/{{arch}}/kubeadm"
    sha256:
      v1.20.2: {{amd64: "{kubeadm}"}}
  kubectl:
    url: "kube/{{version}}/kubectl"
    dest: "kube/{{version}}/{{arch}}/kubectl"
    sha256:
      # Not the version the config asks for: download.sha256.kubectl supplies it.
      v1.19.0: {{amd64: "{zero}"}}
  cni_plugins:
    url: "cni/{{version}}/cni-plugins-linux-{{arch}}-{{version}}.tgz"
    dest: "cni/plugins/{{version}}/{{arch}}/cni-plugins-linux-{{arch}}-{{version}}.tgz"
    sha256:
      v1.1.1: {{amd64: "{cni}"}}
  helm:
    url: "helm/helm-{{version}}-linux-{{arch}}.tar.gz"
    dest: "helm/{{version}}/{{arch}}/helm-{{version}}-linux-{{arch}}.tar.gz"
    sha256:
      v3.18.5: {{amd64: "{helm}"}}
  crictl:
    url: "crictl/{{version}}/crictl-{{version}}-linux-{{arch}}.tar.gz"
    dest: "crictl/{{version}}/{{arch}}/crictl-{{version}}-linux-{{arch}}.tar.gz"
    sha256:
      v1.34.0: {{amd64: "{crictl}"}}
  containerd:
    url: "containerd/{{version}}/containerd-{{version_bare}}-linux-{{arch}}.tar.gz"
    dest: "containerd/{{version}}/{{arch}}/containerd-{{version_bare}}-linux-{{arch}}.tar.gz"
    sha256:
      v1.6.20: {{amd64: "{containerd}"}}
  runc:
    # Nothing is served here: download.artifact_url.runc overrides it.
    url: "nowhere/runc.{{arch}}"
    dest: "runc/{{version}}/{{arch}}/runc.{{arch}}"
    sha256:
      v1.1.5: {{amd64: "{runc}"}}
  calicoctl:
    url: "calico/{{version}}/calicoctl-linux-{{arch}}"
    dest: "cni/calico/{{version}}/{{arch}}/calicoctl-linux-{{arch}}"
    sha256:
      v3.31.3: {{amd64: "{calicoctl}"}}
  calico:
    # A chart: one file for every architecture, its place from the role's default layout.
    url: "calico/{{version}}/tigera-operator-{{version}}.tgz"
    sha256:
      v3.31.3: "{calico}"
{extra}"#,
        base = base,
        etcd = sha("etcd"),
        kubelet = sha("kubelet"),
        kubeadm = sha("kubeadm"),
        zero = "0".repeat(64),
        cni = sha("cni_plugins"),
        helm = sha("helm"),
        crictl = sha("crictl"),
        containerd = sha("containerd"),
        runc = sha("runc"),
        calicoctl = sha("calicoctl"),
        calico = sha("calico"),
        extra = extra,
    )
}

/// `kk <args…> --workdir <wd> --output json`.
pub fn kk_json(p: &Project, args: &[&str], workdir: &Path) -> Run {
    let wd = workdir.display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--workdir", &wd, "--output", "json"]);
    p.kk(&all)
}

/// The `changed` count of localhost in the recap (-1 when absent).
pub fn changed(r: &Run) -> i64 {
    r.recap("localhost")["changed"].as_i64().unwrap_or(-1)
}

/// Every served artifact is at its place under binary_dir `bin`, with the served digest.
pub fn assert_landed(served: &[Served], bin: &Path, sums: &BTreeMap<&str, String>) {
    for s in served {
        let p = bin.join(&s.dest);
        assert!(
            p.is_file(),
            "{} {} should be at {}",
            s.component,
            s.version,
            p.display()
        );
        assert_eq!(
            sha256_file(&p),
            sums[s.component],
            "digest of {}",
            p.display()
        );
    }
}

/// The config of the download tests (tests/download.rs, tests/download_lock.rs): zone cn,
/// the versions [`build_server`] serves, runc from its mirror path under `base`, kubectl's
/// digest given (the served kubectl is Debian's build, not the published one), no cluster
/// images.
pub fn download_config(p: &Project, base: &str, kubectl_sha: &str) -> String {
    format!(
        r#"apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  zone: cn
  kubernetes: {{kube_version: v1.20.2, helm_version: v3.18.5}}
  etcd: {{deployment_type: external, etcd_version: v3.4.23}}
  cri: {{container_manager: containerd, containerd_version: v1.6.20, runc_version: v1.1.5, crictl_version: v1.34.0}}
  cni: {{type: calico, multi_cni: none, cni_plugins_version: v1.1.1, calico_version: v3.31.3}}
  storage_class: {{local: {{enabled: false}}, nfs: {{enabled: false}}}}
  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{base}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      kubectl: "{kubectl}"
    # The cluster's images (tests/image_list.rs) are not served here.
    images: {{cluster: false}}
"#,
        manifest = p.path("artifacts.yaml").display(),
        base = base,
        kubectl = kubectl_sha,
    )
}

/// A YAML file of the repository as JSON, parsed by the engine's own YAML loader.
pub fn load_yaml(path: &Path) -> serde_json::Value {
    kk_engine::yaml::load_file(path)
        .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message))
        .to_value()
}

/// The version matrices: supported minor ("v1.34") -> parsed roles/defaults/vars/v1.34.yaml
/// (the minors are the files there; v1.23 … v1.34 must all be).
pub fn version_matrices() -> BTreeMap<String, serde_json::Value> {
    let dir = repo().join("roles/defaults/vars");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("roles/defaults/vars") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(minor) = name.strip_suffix(".yaml") {
            out.insert(minor.to_string(), load_yaml(&path));
        }
    }
    for minor in [
        "v1.23", "v1.24", "v1.25", "v1.26", "v1.27", "v1.28", "v1.29", "v1.30", "v1.31", "v1.32",
        "v1.33", "v1.34",
    ] {
        assert!(out.contains_key(minor), "no matrix for {}", minor);
    }
    out
}

/// Whether `s` is a lower-case hex sha256 digest (as the manifest writes them).
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
