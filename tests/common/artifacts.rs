//! The artifact server of tests/download.rs, shared with the end-to-end tests. The tree, its
//! manifest and the file helpers are crates/testbed's (`testbed::artifacts`, so the benchmark
//! serves the same); here are what needs the harness: kk runs and assertions over them.

use std::collections::BTreeMap;
use std::path::Path;

pub use testbed::artifacts::debian::debian_file;
pub use testbed::artifacts::files::{sha256_file, tar_gz};
pub use testbed::artifacts::tree::{build_server, manifest, Served};
pub use testbed::artifacts::{load_yaml, repo};

use super::{Project, Run};

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
