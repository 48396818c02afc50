//! The shared artifact tree (tests/download.rs's server, the base of every end-to-end
//! cluster's): etcd 3.4, containerd 1.6, runc, the CNI plugins and kubectl from this
//! machine's Debian packages in upstream's layouts, shell stand-ins for the rest, and the
//! manifest (builtin/artifacts.yaml's format) that points kk at them with their digests.

use std::collections::BTreeMap;
use std::path::Path;

use super::debian::debian_file;
use super::files::{copy_exec, fake, tar_gz};

/// One served artifact: where it lies on the server and where it must land.
pub struct Served {
    /// The component's name in the manifest (`etcd`, `containerd`…).
    pub component: &'static str,
    /// The version served (`v3.4.23`).
    pub version: &'static str,
    /// Under the server root.
    pub server_path: String,
    /// Under binary_dir.
    pub dest: String,
}

/// Builds the server tree under `root` (archives packed in `scratch`); returns what it serves.
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

/// The artifact manifest of the tree (builtin/artifacts.yaml's format). The `global` zone
/// points at a closed port: only `zone: cn` (`base`, the server's `cn/` URL) reaches the
/// server. `sums` are the digests by component, `extra` more entries under `components:`.
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
