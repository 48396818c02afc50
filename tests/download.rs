//! Role `download` and `kk artifact export` (playbooks/artifact_export.yaml) against a
//! real local HTTP artifact server, on the controller only (no test hosts needed).
//!
//! The server holds real binaries repackaged in upstream's archive layouts from the
//! Debian packages installed on this machine (scripts/test installs them): etcd and
//! etcdctl (etcd-server, etcd-client) in an `etcd-vX-linux-amd64/` tar.gz, containerd
//! (`bin/` tar.gz), runc (raw), containernetworking-plugins (flat tgz) and kubectl
//! (kubernetes-client, raw). kubelet, kubeadm, helm, crictl, calicoctl and the calico
//! chart have no Debian package: the server holds clearly named FAKE stand-ins for them
//! (shell scripts printing "FAKE …"), which is all a download test needs.
//! The test writes its own artifact manifest with the real sha256 of every file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Project, Run};
use sha2::{Digest, Sha256};
use testbed::http::HttpServer;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sha256_file(p: &Path) -> String {
    let data = std::fs::read(p).unwrap_or_else(|e| panic!("reading {}: {}", p.display(), e));
    hex::encode(Sha256::digest(&data))
}

/// The file of an installed Debian package whose path ends with `suffix`.
fn debian_file(package: &str, suffix: &str) -> PathBuf {
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

/// `tar czf out -C dir names…` with fast compression.
fn tar_gz(out: &Path, dir: &Path, names: &[&str]) {
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

fn copy_exec(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {}", from.display(), e));
}

fn fake(to: &Path, name: &str) {
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
struct Served {
    component: &'static str,
    version: &'static str,
    /// Under the server root.
    server_path: String,
    /// Under binary_dir.
    dest: String,
}

/// Builds the server tree; returns what it serves.
fn build_server(root: &Path, scratch: &Path) -> Vec<Served> {
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
fn manifest(base: &str, sums: &BTreeMap<&str, String>, extra: &str) -> String {
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

fn config(p: &Project, base: &str, kubectl_sha: &str) -> String {
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
"#,
        manifest = p.path("artifacts.yaml").display(),
        base = base,
        kubectl = kubectl_sha,
    )
}

/// `kk run <playbook> -c config.yaml --workdir <wd> --output json` plus extra arguments.
fn kk(p: &Project, playbook: &Path, workdir: &Path, extra: &[&str]) -> Run {
    let pb = playbook.display().to_string();
    kk_cmd(p, &["run", &pb], workdir, extra)
}

/// `kk <command…> -c config.yaml --workdir <wd> --output json` plus extra arguments.
fn kk_cmd(p: &Project, command: &[&str], workdir: &Path, extra: &[&str]) -> Run {
    let wd = workdir.display().to_string();
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["-c", "config.yaml", "--workdir", &wd, "--output", "json"]);
    args.extend_from_slice(extra);
    p.kk(&args)
}

fn changed(r: &Run) -> i64 {
    r.recap("localhost")["changed"].as_i64().unwrap_or(-1)
}

fn failure_text(r: &Run) -> String {
    r.events()
        .into_iter()
        .filter(|e| e["event"] == "host_result" && e["status"] == "failed")
        .map(|e| e["result"]["msg"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_landed(served: &[Served], bin: &Path, sums: &BTreeMap<&str, String>) {
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

#[test]
fn download_verify_export_and_install_offline() {
    let p = Project::new();
    let root = p.path("srv");
    let served = build_server(&root, &p.path("scratch"));
    let srv = HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let base = srv.url("cn/");
    let mirror_base = srv.url("");
    let mut sums = BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    p.file("artifacts.yaml", &manifest(&base, &sums, ""));
    p.file("config.yaml", &config(&p, &mirror_base, &sums["kubectl"]));
    // An install playbook beside the repository's roles (what create_cluster's download step does).
    std::os::unix::fs::symlink(repo().join("roles"), p.path("roles")).unwrap();
    p.file(
        "playbooks/install.yaml",
        "- hosts: localhost\n  gather_facts: false\n  roles: [defaults, download]\n",
    );
    let install = p.path("playbooks/install.yaml");
    let w1 = p.path("work1");
    let bin1 = w1.join("kubekey");

    // 1. Everything lands where the install roles look, with the right digests; each file
    //    is fetched once (zone cn, the runc URL override, the kubectl sha256 override).
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_landed(&served, &bin1, &sums);
    for s in &served {
        assert_eq!(
            srv.count(&format!("/{}", s.server_path)),
            1,
            "{} fetched once\n{}",
            s.server_path,
            r.describe()
        );
    }
    assert_eq!(srv.requests().len(), served.len(), "{:?}", srv.requests());

    // 2. A second run downloads nothing and changes nothing.
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_eq!(
        srv.requests().len(),
        served.len(),
        "second run fetched again: {:?}",
        srv.requests()
    );
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 3. A tampered file on the server is refused, and nothing is stored for it.
    let runc_srv = root.join("mirror/runc/v1.1.5/runc.amd64");
    let good = std::fs::read(&runc_srv).unwrap();
    std::fs::write(&runc_srv, b"#!/bin/sh\necho tampered\n").unwrap();
    let runc_local = bin1.join("runc/v1.1.5/amd64/runc.amd64");
    std::fs::remove_file(&runc_local).unwrap();
    let r = kk(&p, &install, &w1, &[]);
    assert_ne!(
        r.code,
        0,
        "a tampered file must be refused\n{}",
        r.describe()
    );
    let msg = failure_text(&r);
    assert!(
        msg.contains("runc v1.1.5 (amd64)")
            && msg.contains("sha256")
            && msg.contains(&sums["runc"]),
        "the refusal names the artifact and the expected digest:\n{}",
        msg
    );
    assert!(msg.contains("download.sha256.<component>"), "{}", msg);
    assert!(!runc_local.exists(), "the tampered runc must not be stored");
    // A damaged local copy is replaced by the server's good one.
    std::fs::write(&runc_srv, &good).unwrap();
    let etcd_local = bin1.join(&served[0].dest);
    std::fs::write(&etcd_local, b"truncated").unwrap();
    let before = srv.requests().len();
    let r = kk(&p, &install, &w1, &[]);
    r.code(0);
    assert_landed(&served, &bin1, &sums);
    assert_eq!(
        srv.requests().len() - before,
        2,
        "only runc and etcd are fetched again"
    );

    // 4. A component with no known digest fails before anything is fetched, naming both knobs.
    let before = srv.requests().len();
    let r = kk(
        &p,
        &install,
        &p.path("work-nosum"),
        &["--set", "etcd.etcd_version=v3.4.99"],
    );
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failure_text(&r);
    assert!(
        msg.contains("etcd v3.4.99 (amd64)")
            && msg.contains("download.sha256.etcd")
            && msg.contains("download.artifact_url.etcd"),
        "{}",
        msg
    );
    assert_eq!(srv.requests().len(), before);

    // 5. `kk artifact export`: the package holds the tree, its manifest and checksums.
    let r = kk_cmd(&p, &["artifact", "export"], &w1, &[]);
    r.code(0);
    assert_eq!(
        srv.requests().len(),
        before,
        "export fetches nothing already present"
    );
    let pkg = w1.join("artifact/kubekey-artifact.tar.gz");
    assert!(pkg.is_file(), "{}", r.describe());
    let list = Command::new("tar").arg("-tzf").arg(&pkg).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    for s in &served {
        assert!(
            list.lines().any(|l| l == s.dest),
            "{} missing from the package:\n{}",
            s.dest,
            list
        );
    }
    assert!(
        list.lines().any(|l| l == "kubekey-artifact.yaml"),
        "{}",
        list
    );
    assert!(
        list.lines().any(|l| l == "kubekey-artifact.sha256"),
        "{}",
        list
    );
    let inside = std::fs::read_to_string(w1.join("artifact/kubekey-artifact.yaml")).unwrap();
    assert!(
        inside.contains(r#"component: "containerd", version: "v1.6.20", arch: "amd64", path: "containerd/v1.6.20/amd64/containerd-1.6.20-linux-amd64.tar.gz""#),
        "{}",
        inside
    );
    assert!(
        inside.contains(r#"component: "calico", version: "v3.31.3", arch: "all""#),
        "{}",
        inside
    );
    let checks = std::fs::read_to_string(w1.join("artifact/kubekey-artifact.sha256")).unwrap();
    assert!(
        checks.contains(&format!("{}  runc/v1.1.5/amd64/runc.amd64", sums["runc"])),
        "{}",
        checks
    );
    let pkg_sum =
        std::fs::read_to_string(w1.join("artifact/kubekey-artifact.tar.gz.sha256")).unwrap();
    assert!(pkg_sum.starts_with(&sha256_file(&pkg)), "{}", pkg_sum);
    // A second export gives the same bytes and reports no change.
    let first = sha256_file(&pkg);
    let r = kk_cmd(&p, &["artifact", "export"], &w1, &[]);
    r.code(0);
    assert_eq!(sha256_file(&pkg), first, "the package is reproducible");
    assert_eq!(changed(&r), 0, "{}", r.describe());

    // 6. With the server gone, a fresh work dir installs everything from the package.
    let requests = srv.requests().len();
    drop(srv);
    let w2 = p.path("work2");
    let set = format!("download.artifact_file={}", pkg.display());
    let r = kk(&p, &install, &w2, &["--set", &set]);
    r.code(0);
    assert_landed(&served, &w2.join("kubekey"), &sums);
    assert!(w2.join("kubekey/kubekey-artifact.yaml").is_file());
    assert_eq!(
        requests,
        served.len() + 3,
        "one refused runc, then runc and etcd again"
    );
    // Installing again changes nothing.
    let r = kk(&p, &install, &w2, &["--set", &set]);
    r.code(0);
    assert_eq!(changed(&r), 0, "{}", r.describe());
    // `-a` on a built-in command: exporting again from the package, still offline, gives
    // the very same package (it is reproducible).
    let pkg_str = pkg.display().to_string();
    let r = kk_cmd(&p, &["artifact", "export", "-a", &pkg_str], &w2, &[]);
    r.code(0);
    assert_eq!(
        sha256_file(&w2.join("artifact/kubekey-artifact.tar.gz")),
        first,
        "a package rebuilt from the same artifacts has the same bytes"
    );

    // 7. A package whose files do not match its checksums file is refused.
    let bad = p.path("bad");
    std::fs::create_dir_all(bad.join("kube/v1.20.2/amd64")).unwrap();
    std::fs::write(bad.join("kube/v1.20.2/amd64/kubectl"), b"not kubectl\n").unwrap();
    std::fs::write(
        bad.join("kubekey-artifact.sha256"),
        format!("{}  kube/v1.20.2/amd64/kubectl\n", sums["kubectl"]),
    )
    .unwrap();
    let bad_pkg = p.path("bad.tar.gz");
    tar_gz(&bad_pkg, &bad, &["kube", "kubekey-artifact.sha256"]);
    let set = format!("download.artifact_file={}", bad_pkg.display());
    let r = kk(&p, &install, &p.path("work3"), &["--set", &set]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let msg = failure_text(&r);
    assert!(
        msg.contains("damaged") && msg.contains("kube/v1.20.2/amd64/kubectl"),
        "{}",
        msg
    );
    assert!(!p.path("work3/kubekey/kube/v1.20.2/amd64/kubectl").exists());
}
