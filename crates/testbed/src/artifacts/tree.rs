//! The shared artifact tree (tests/download.rs's server, the base of every end-to-end
//! cluster's): etcd 3.4, containerd 1.6, runc, the CNI plugins and kubectl from this
//! machine's Debian packages in upstream's layouts, shell stand-ins for the rest, and the
//! manifest (builtin/artifacts.yaml's format) that points kk at them with their digests.

use std::collections::BTreeMap;
use std::path::Path;

use super::debian::{cni_plugins_tgz, debian_file};
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

/// What one file of the tree is made from.
#[derive(Clone, Copy)]
enum Source {
    /// The file of an installed Debian package: `(package, path suffix)` ([`debian_file`]).
    Debian(&'static str, &'static str),
    /// A FAKE shell stand-in that says it is this tool ([`fake`]).
    Fake(&'static str),
}

impl Source {
    /// Writes the file at `to` (parents created).
    fn write(self, to: &Path) {
        match self {
            Source::Debian(package, suffix) => copy_exec(&debian_file(package, suffix), to),
            Source::Fake(name) => fake(to, name),
        }
    }
}

/// How a served file is made.
enum Content {
    /// The file itself.
    Raw(Source),
    /// A tar.gz in upstream's layout: `files` (paths under `scratch/<dir>`) are laid out,
    /// then the archive holds the entries `top` of that directory.
    Archive {
        dir: &'static str,
        files: &'static [(&'static str, Source)],
        top: &'static [&'static str],
    },
    /// The CNI plugins: a flat tgz of the Debian package's plugin directory.
    CniPlugins,
}

/// One row of the tree: `<server_dir>/<file>` on the server, `<dest_dir>/<file>` under
/// binary_dir.
struct Row {
    component: &'static str,
    version: &'static str,
    server_dir: &'static str,
    dest_dir: &'static str,
    file: &'static str,
    content: Content,
}

/// The tree, in the order [`build_server`] returns it.
const TREE: &[Row] = &[
    // etcd: etcd-v3.4.23-linux-amd64/{etcd,etcdctl}
    Row {
        component: "etcd",
        version: "v3.4.23",
        server_dir: "cn/etcd/v3.4.23",
        dest_dir: "etcd/v3.4.23/amd64",
        file: "etcd-v3.4.23-linux-amd64.tar.gz",
        content: Content::Archive {
            dir: "etcd",
            files: &[
                (
                    "etcd-v3.4.23-linux-amd64/etcd",
                    Source::Debian("etcd-server", "/bin/etcd"),
                ),
                (
                    "etcd-v3.4.23-linux-amd64/etcdctl",
                    Source::Debian("etcd-client", "/bin/etcdctl"),
                ),
            ],
            top: &["etcd-v3.4.23-linux-amd64"],
        },
    },
    // containerd: bin/{containerd,containerd-shim-runc-v2,ctr}
    Row {
        component: "containerd",
        version: "v1.6.20",
        server_dir: "cn/containerd/v1.6.20",
        dest_dir: "containerd/v1.6.20/amd64",
        file: "containerd-1.6.20-linux-amd64.tar.gz",
        content: Content::Archive {
            dir: "containerd",
            files: &[
                (
                    "bin/containerd",
                    Source::Debian("containerd", "/bin/containerd"),
                ),
                (
                    "bin/containerd-shim-runc-v2",
                    Source::Debian("containerd", "/bin/containerd-shim-runc-v2"),
                ),
                ("bin/ctr", Source::Debian("containerd", "/bin/ctr")),
            ],
            top: &["bin"],
        },
    },
    // runc: raw, served only under /mirror/ (download.artifact_url.runc points there).
    Row {
        component: "runc",
        version: "v1.1.5",
        server_dir: "mirror/runc/v1.1.5",
        dest_dir: "runc/v1.1.5/amd64",
        file: "runc.amd64",
        content: Content::Raw(Source::Debian("runc", "/sbin/runc")),
    },
    // CNI plugins: a flat tgz of /usr/lib/cni/*.
    Row {
        component: "cni_plugins",
        version: "v1.1.1",
        server_dir: "cn/cni/v1.1.1",
        dest_dir: "cni/plugins/v1.1.1/amd64",
        file: "cni-plugins-linux-amd64-v1.1.1.tgz",
        content: Content::CniPlugins,
    },
    // kubectl: raw, from kubernetes-client (1.20.2).
    Row {
        component: "kubectl",
        version: "v1.20.2",
        server_dir: "cn/kube/v1.20.2",
        dest_dir: "kube/v1.20.2/amd64",
        file: "kubectl",
        content: Content::Raw(Source::Debian("kubernetes-client", "/bin/kubectl")),
    },
    // FAKE stand-ins (no Debian package): kubelet, kubeadm, calicoctl raw; helm and
    // crictl in their archive layouts; the calico chart as a tgz.
    Row {
        component: "kubelet",
        version: "v1.20.2",
        server_dir: "cn/kube/v1.20.2",
        dest_dir: "kube/v1.20.2/amd64",
        file: "kubelet",
        content: Content::Raw(Source::Fake("kubelet")),
    },
    Row {
        component: "kubeadm",
        version: "v1.20.2",
        server_dir: "cn/kube/v1.20.2",
        dest_dir: "kube/v1.20.2/amd64",
        file: "kubeadm",
        content: Content::Raw(Source::Fake("kubeadm")),
    },
    Row {
        component: "calicoctl",
        version: "v3.31.3",
        server_dir: "cn/calico/v3.31.3",
        dest_dir: "cni/calico/v3.31.3/amd64",
        file: "calicoctl-linux-amd64",
        content: Content::Raw(Source::Fake("calicoctl")),
    },
    Row {
        component: "helm",
        version: "v3.18.5",
        server_dir: "cn/helm",
        dest_dir: "helm/v3.18.5/amd64",
        file: "helm-v3.18.5-linux-amd64.tar.gz",
        content: Content::Archive {
            dir: "helm",
            files: &[("linux-amd64/helm", Source::Fake("helm"))],
            top: &["linux-amd64"],
        },
    },
    Row {
        component: "crictl",
        version: "v1.34.0",
        server_dir: "cn/crictl/v1.34.0",
        dest_dir: "crictl/v1.34.0/amd64",
        file: "crictl-v1.34.0-linux-amd64.tar.gz",
        content: Content::Archive {
            dir: "crictl",
            files: &[("crictl", Source::Fake("crictl"))],
            top: &["crictl"],
        },
    },
    Row {
        component: "calico",
        version: "v3.31.3",
        server_dir: "cn/calico/v3.31.3",
        dest_dir: "cni/calico",
        file: "tigera-operator-v3.31.3.tgz",
        content: Content::Archive {
            dir: "chart",
            files: &[(
                "tigera-operator/Chart.yaml",
                Source::Fake("tigera-operator chart"),
            )],
            top: &["tigera-operator"],
        },
    },
];

/// Builds the server tree under `root` (archives packed in `scratch`); returns what it serves.
pub fn build_server(root: &Path, scratch: &Path) -> Vec<Served> {
    TREE.iter()
        .map(|row| {
            let server_path = format!("{}/{}", row.server_dir, row.file);
            let out = root.join(&server_path);
            match &row.content {
                Content::Raw(source) => source.write(&out),
                Content::Archive { dir, files, top } => {
                    let dir = scratch.join(dir);
                    for (path, source) in files.iter() {
                        source.write(&dir.join(path));
                    }
                    tar_gz(&out, &dir, top);
                }
                Content::CniPlugins => cni_plugins_tgz(&out),
            }
            Served {
                component: row.component,
                version: row.version,
                server_path,
                dest: format!("{}/{}", row.dest_dir, row.file),
            }
        })
        .collect()
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
