//! The FAKE kubeadm / kubelet / kubectl / helm / calicoctl of `tests/fakes/` (crate
//! `kk-fakes`, one multi-call binary `kube-fake`) as the tests use them: built once per test
//! process, copied under each tool's name with its version trailer, laid out as the download
//! role's artifacts (served beside tree.rs's tree) or pushed straight onto a
//! test host, plus FAKE helm charts and each host's fake journal. See tests/fakes/src/lib.rs for
//! what each fake checks and leaves.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use super::files::{sha256_file, tar_gz};
use super::repo;
use crate::TestBed;

/// The version trailer's prefix (tests/fakes/src/lib.rs reads it from /proc/self/exe).
pub const VERSION_TRAILER: &str = "KK-FAKE-VERSION=";
/// The fake's journal on a host: one JSON object per call.
pub const JOURNAL: &str = "/var/lib/kk-fakes/journal.jsonl";

/// The `kube-fake` binary, built once per test process with
/// `cargo build -p kk-fakes --bin kube-fake --target-dir target/fakes` (cargo test does not
/// build another package's binaries). A cold build (its dependencies included) takes 12 s
/// on this 2-core machine when idle, 24–30 s while other builds run; afterwards it is a no-op check under a second.
pub fn kube_fake_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let target = repo().join("target/fakes");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let started = std::time::Instant::now();
        let out = Command::new(cargo)
            .args(["build", "--quiet", "-p", "kk-fakes", "--bin", "kube-fake"])
            .arg("--target-dir")
            .arg(&target)
            // Its own target dir, so its own profile: no debug info, stripped (2 MB, not 14 MB,
            // for every copy served and pushed to hosts).
            .env("CARGO_PROFILE_DEV_DEBUG", "false")
            .env("CARGO_PROFILE_DEV_STRIP", "true")
            .current_dir(repo())
            .output()
            .expect("run cargo build for the fakes");
        assert!(
            out.status.success(),
            "building tests/fakes (kube-fake) failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "testbed::artifacts::fakes: kube-fake built in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        target.join("debug/kube-fake")
    })
    .clone()
}

/// Writes the fake as a tool of `version` (`v1.30.8`, `v3.18.5`) at `dest`: the binary,
/// then the trailer line `KK-FAKE-VERSION=<version>`, mode 755 (parents created). The
/// tool it plays is the file's basename when run (`kubeadm`, `kubelet`, `kubectl`, `helm`).
pub fn fake_tool(version: &str, dest: &Path) {
    let mut bytes = std::fs::read(kube_fake_bin()).expect("read kube-fake");
    bytes.extend_from_slice(format!("\n{}{}\n", VERSION_TRAILER, version).as_bytes());
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, bytes).unwrap_or_else(|e| panic!("writing {}: {}", dest.display(), e));
    set_exec(dest);
}

fn set_exec(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// helm's release tarball at `dest`: `linux-amd64/helm` (the fake, `version`) inside.
pub fn helm_tarball(version: &str, dest: &Path, scratch: &Path) {
    let dir = scratch.join(format!("helm-{}", version));
    fake_tool(version, &dir.join("linux-amd64/helm"));
    tar_gz(dest, &dir, &["linux-amd64"]);
}

/// A FAKE helm chart archive at `dest` in a real chart's layout: `<name>/Chart.yaml`
/// (apiVersion v2), `<name>/values.yaml`, `<name>/templates/NOTES.txt`.
pub fn fake_chart(name: &str, version: &str, dest: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join(name);
    std::fs::create_dir_all(c.join("templates")).unwrap();
    std::fs::write(
        c.join("Chart.yaml"),
        format!(
            "# FAKE chart for kk's tests: it deploys nothing.\napiVersion: v2\nname: {name}\nversion: {v}\nappVersion: {v}\ndescription: FAKE {name} chart (kk tests)\ntype: application\n",
            name = name,
            v = version.trim_start_matches('v'),
        ),
    )
    .unwrap();
    std::fs::write(c.join("values.yaml"), "# FAKE chart defaults\nfake: true\n").unwrap();
    std::fs::write(
        c.join("templates/NOTES.txt"),
        format!("FAKE {} chart: nothing was deployed.\n", name),
    )
    .unwrap();
    tar_gz(dest, dir.path(), &[name]);
}

/// `binary_dir`-relative place of each chart of builtin/artifacts.yaml (its `dest`), by
/// component: the download role puts them there, the cni/storageclass roles read them.
pub const CHARTS: &[(&str, &str, &str)] = &[
    // (component, chart name, dest with {version})
    (
        "calico",
        "tigera-operator",
        "cni/calico/tigera-operator-{version}.tgz",
    ),
    ("cilium", "cilium", "cni/cilium/cilium-{version}.tgz"),
    ("flannel", "flannel", "cni/flannel/flannel-{version}.tgz"),
    ("kubeovn", "kube-ovn", "cni/kubeovn/kube-ovn-{version}.tgz"),
    (
        "hybridnet",
        "hybridnet",
        "cni/hybridnet/hybridnet-{version}.tgz",
    ),
    (
        "localpv_provisioner",
        "localpv-provisioner",
        "storageclass/local/localpv-provisioner-{version}.tgz",
    ),
    (
        "nfs_subdir_external_provisioner",
        "nfs-subdir-external-provisioner",
        "storageclass/nfs/nfs-subdir-external-provisioner-{version}.tgz",
    ),
    (
        "spiderpool",
        "spiderpool",
        "cni/spiderpool/spiderpool-{version}.tgz",
    ),
];

/// The binary_dir-relative place of `component`'s chart at `version`.
pub fn chart_dest(component: &str, version: &str) -> String {
    let (_, _, dest) = CHARTS
        .iter()
        .find(|(c, _, _)| *c == component)
        .unwrap_or_else(|| panic!("no chart component {}", component));
    dest.replace("{version}", version)
}

/// What [`serve_kube`] and [`serve_chart`] put on the artifact server.
#[derive(Default)]
pub struct FakeArtifacts {
    /// component → sha256 of the served file: give them to the config as
    /// `download.sha256` ([`FakeArtifacts::download_sha256`]); tree.rs's manifest has
    /// other versions (or none) for these components.
    pub sha256: BTreeMap<String, String>,
    /// Manifest entries (builtin/artifacts.yaml format, under `components:`) for the
    /// components [`tree::manifest`](super::tree::manifest) does not list: pass
    /// as its `extra` (after your own).
    pub manifest_extra: String,
}

impl FakeArtifacts {
    /// `{kubeadm: "<sha>", …}`: a YAML flow map for the config's `download.sha256`
    /// (merge your own entries in with [`FakeArtifacts::sha256`] if you need more).
    pub fn download_sha256(&self) -> String {
        let items: Vec<String> = self
            .sha256
            .iter()
            .map(|(c, s)| format!("{}: \"{}\"", c, s))
            .collect();
        format!("{{{}}}", items.join(", "))
    }
}

/// Serves the FAKE kubeadm, kubelet, kubectl (`kube_version`) and helm (`helm_version`)
/// under `root/cn/` where tree.rs's manifest looks for them
/// (`kube/<v>/{kubeadm,kubelet,kubectl}`, `helm/helm-<v>-linux-amd64.tar.gz` holding
/// `linux-amd64/helm`), replacing build_server's shell stand-ins of the same name.
pub fn serve_kube(
    root: &Path,
    scratch: &Path,
    kube_version: &str,
    helm_version: &str,
) -> FakeArtifacts {
    let mut fa = FakeArtifacts::default();
    for tool in ["kubeadm", "kubelet", "kubectl"] {
        let p = root.join(format!("cn/kube/{}/{}", kube_version, tool));
        fake_tool(kube_version, &p);
        fa.sha256.insert(tool.into(), sha256_file(&p));
    }
    let p = root.join(format!("cn/helm/helm-{}-linux-amd64.tar.gz", helm_version));
    helm_tarball(helm_version, &p, scratch);
    fa.sha256.insert("helm".into(), sha256_file(&p));
    fa
}

/// Serves a FAKE chart for `component` (a chart of [`CHARTS`]) at `version` under
/// `root/cn/`: calico where the shared manifest's entries point (`calico/<v>/…`), with the
/// FAKE calicoctl of the same version beside it (`calico/<v>/calicoctl-linux-amd64`, digest
/// in `fa.sha256["calicoctl"]`: the cni/calico role installs it, delete_nodes runs it); the
/// others under `charts/<component>/<v>/` with a manifest entry added to `manifest_extra`.
pub fn serve_chart(fa: &mut FakeArtifacts, root: &Path, component: &str, version: &str) {
    let (_, name, _) = CHARTS
        .iter()
        .find(|(c, _, _)| *c == component)
        .unwrap_or_else(|| panic!("no chart component {}", component));
    let file = Path::new(&chart_dest(component, version))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let server_path = if component == "calico" {
        format!("cn/calico/{}/{}", version, file)
    } else {
        format!("cn/charts/{}/{}/{}", component, version, file)
    };
    let p = root.join(&server_path);
    fake_chart(name, version, &p);
    fa.sha256.insert(component.into(), sha256_file(&p));
    if component == "calico" {
        let calicoctl = root.join(format!("cn/calico/{}/calicoctl-linux-amd64", version));
        fake_tool(version, &calicoctl);
        fa.sha256
            .insert("calicoctl".into(), sha256_file(&calicoctl));
    } else {
        let (_, _, dest) = CHARTS.iter().find(|(c, _, _)| *c == component).unwrap();
        let url = format!(
            "charts/{}/{{version}}/{}",
            component,
            file.replace(version, "{version}")
        );
        fa.manifest_extra.push_str(&format!(
            "  {}:\n    url: \"{}\"\n    dest: \"{}\"\n    kind: chart\n",
            component, url, dest
        ));
    }
}

/// Lays the fakes out directly under a `binary_dir` (no server: `download.fetch: false`):
/// `kube/<v>/amd64/{kubeadm,kubelet,kubectl}` and
/// `helm/<v>/amd64/helm-<v>-linux-amd64.tar.gz`.
pub fn stage_kube(binary_dir: &Path, scratch: &Path, kube_version: &str, helm_version: &str) {
    for tool in ["kubeadm", "kubelet", "kubectl"] {
        fake_tool(
            kube_version,
            &binary_dir.join(format!("kube/{}/amd64/{}", kube_version, tool)),
        );
    }
    helm_tarball(
        helm_version,
        &binary_dir.join(format!(
            "helm/{v}/amd64/helm-{v}-linux-amd64.tar.gz",
            v = helm_version
        )),
        scratch,
    );
}

/// Copies a local file onto test-bed host `i` at `remote` with `mode` (over SSH, stdin).
pub fn push(bed: &TestBed, i: usize, local: &Path, remote: &str, mode: &str) {
    let h = &bed.hosts()[i];
    let mut child = Command::new("ssh")
        .args(bed.ssh_options(i))
        .arg(format!("root@{}", h.ip))
        .arg(format!(
            "set -e; mkdir -p \"$(dirname {r})\"; cat > {r}.kk-push; chmod {m} {r}.kk-push; mv {r}.kk-push {r}",
            r = remote,
            m = mode
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh");
    let data = std::fs::read(local).unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "pushing {} to host {}:{}: {}",
        local.display(),
        i,
        remote,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Installs the fakes on host `i` as `/usr/local/bin/{kubeadm,kubelet,kubectl}`
/// (`kube_version`) and `/usr/local/bin/helm` (`helm_version`), as pre-kubernetes would.
pub fn install_kube(bed: &TestBed, i: usize, kube_version: &str, helm_version: &str) {
    let dir = tempfile::tempdir().unwrap();
    for (tool, v) in [
        ("kubeadm", kube_version),
        ("kubelet", kube_version),
        ("kubectl", kube_version),
        ("helm", helm_version),
    ] {
        let p = dir.path().join(tool);
        fake_tool(v, &p);
        push(bed, i, &p, &format!("/usr/local/bin/{}", tool), "755");
    }
}

/// The fake's journal on host `i` (read without SSH): one JSON object per call, in order
/// (`tool`, `version`, `args`, `files` {path: content}, `exit`, `error`); empty when no
/// fake ran there.
pub fn journal(bed: &TestBed, i: usize) -> Vec<Value> {
    let out = bed
        .exec(i, &format!("cat {} 2>/dev/null || true", JOURNAL))
        .unwrap_or_else(|e| panic!("reading the fake journal of host {}: {}", i, e));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("bad journal line {:?}: {}", l, e))
        })
        .collect()
}

/// The fake cluster's state on host `i` (read without SSH; `{}` when none): `releases`
/// (`"<ns>/<name>"` → `{chart, chart_sha256, values (merged user values, as JSON),
/// revision, …}`), `nodes` (`<name>` → `{labels, taints}`), `namespaces`, `objects`
/// (`"<kind>/<ns>/<name>"` → digest of what kubectl applied), `configmaps`. Only what the
/// fakes ran on that host: kk runs kubectl/helm on the init node.
pub fn cluster_state(bed: &TestBed, i: usize) -> Value {
    let out = bed
        .exec(
            i,
            "cat /var/lib/kk-fakes/cluster.json 2>/dev/null || echo '{}'",
        )
        .unwrap_or_else(|e| panic!("reading the fake cluster state of host {}: {}", i, e));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad fake cluster state on host {}: {}: {}",
            i,
            e,
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The journal entries of `tool` whose args start with `prefix` (e.g. `("kubeadm", &["join"])`).
pub fn calls<'a>(journal: &'a [Value], tool: &str, prefix: &[&str]) -> Vec<&'a Value> {
    journal
        .iter()
        .filter(|e| {
            e["tool"] == tool
                && e["args"].as_array().is_some_and(|a| {
                    a.len() >= prefix.len() && a.iter().zip(prefix).all(|(x, p)| x == p)
                })
        })
        .collect()
}
