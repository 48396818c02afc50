//! Helpers for the end-to-end `kk create cluster` tests: the results of a run with their
//! task's place, what a run changed on a host, and the cluster-changing calls the FAKE
//! Kubernetes tools recorded.

use serde_json::Value;
use testbed::TestBed;

use super::{sh, Run};

/// Every host result with the `file:line` of its task (from the task_start before it).
pub fn results(r: &Run) -> Vec<(String, Value)> {
    let mut path = String::new();
    let mut out = Vec::new();
    for e in r.events() {
        if e["event"] == "task_start" {
            path = e["path"].as_str().unwrap_or_default().to_string();
        } else if e["event"] == "host_result" {
            out.push((path.clone(), e));
        }
    }
    out
}

/// A one-line description of a result, for assertion messages.
pub fn line(path: &str, e: &Value) -> String {
    format!(
        "{} on {} ({}): {} changed={}",
        e["task"], e["host"], path, e["status"], e["changed"]
    )
}

/// Failed (not ignored) or unreachable results.
pub fn failures(r: &Run) -> Vec<String> {
    results(r)
        .iter()
        .filter(|(_, e)| {
            e["status"] == "unreachable" || e["status"] == "failed" && e["ignored"] != true
        })
        .map(|(path, e)| format!("{}\n{}", line(path, e), e["result"]))
        .collect()
}

/// What a run could change on a host: every file under the places the flow writes, with
/// size, mode and mtime, and the enabled units.
pub fn listing(bed: &TestBed, i: usize) -> String {
    sh(
        bed,
        i,
        "find /etc /usr/local /opt /var/lib /root -xdev -not -path '/var/lib/systemd/*' \
         -printf '%p %s %m %T@\\n' 2>/dev/null | LC_ALL=C sort; systemctl list-unit-files --state=enabled --no-legend",
    )
}

/// The calls of the fakes that change a cluster: kubeadm init/join, helm upgrade, kubectl
/// apply (label/taint count only when kubectl says something changed).
pub fn kube_calls(j: &[Value]) -> Vec<String> {
    j.iter()
        .filter(|c| c["exit"] == 0)
        .filter_map(|c| {
            let args: Vec<&str> = c["args"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let tool = c["tool"].as_str()?;
            let writes = match (tool, args.first().copied()) {
                ("kubeadm", Some("init" | "join")) => true,
                ("helm", Some("upgrade")) => true,
                ("kubectl", _) => args.contains(&"apply"),
                _ => false,
            };
            writes.then(|| format!("{} {}", tool, args.join(" ")))
        })
        .collect()
}

/// The files a fake was given by a call (path → content).
pub fn files(call: &Value) -> Vec<(String, String)> {
    call["files"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The end of an end-to-end config (under `spec:`): downloads from the test's artifact server
/// (runc under /mirror/ of `mirror`; the digests of etcd 3.5, containerd 1.7 and the FAKE tools
/// and charts, which the manifest has no entry for), and the OS init the test hosts need (they
/// share this machine's kernel: no kernel-global sysctls, no time sync; swap off only when the
/// machine has none).
pub fn config_downloads_and_native(
    manifest: &std::path::Path,
    mirror: &str,
    sums: &std::collections::BTreeMap<&str, String>,
    fa: &super::fakes::FakeArtifacts,
) -> String {
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let fake_sums: String = fa
        .sha256
        .iter()
        .map(|(c, s)| format!("      {}: \"{}\"\n", c, s))
        .collect();
    format!(
        r#"  download:
    manifest: {manifest}
    arch: [amd64]
    artifact_url:
      runc: "{mirror}mirror/runc/{{version}}/runc.{{arch}}"
    sha256:
      etcd: "{etcd}"
      containerd: "{containerd}"
{fake_sums}  native:
    disable_swap: {swap}
    sysctl_skip: [vm., fs., kernel., net.core.rmem_max, net.core.wmem_max, net.ipv4.neigh., net.ipv6.neigh.]
    ntp:
      enabled: false
"#,
        manifest = manifest.display(),
        mirror = mirror,
        etcd = sums["etcd35"],
        containerd = sums["containerd17"],
        fake_sums = fake_sums,
        swap = swaps.lines().count() <= 1,
    )
}

/// `kubeadm init` calls (not its phases) in a FAKE's journal.
pub fn inits(j: &[Value]) -> Vec<&Value> {
    super::fakes::calls(j, "kubeadm", &["init"])
        .into_iter()
        .filter(|c| c["args"][1] != "phase")
        .collect()
}

/// The kubeadm config a FAKE kubeadm call was given.
pub fn kubeadm_config(call: &Value) -> String {
    files(call)
        .into_iter()
        .find(|(f, _)| f.ends_with("kubeadm-config.yaml"))
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no kubeadm config given to {}", call))
}

/// The bootstrap token of a join config.
pub fn join_token(cfg: &str) -> String {
    cfg.lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .unwrap_or_else(|| panic!("no token in the join config: {}", cfg))
        .trim_matches('"')
        .to_string()
}

/// The artifact server of an end-to-end test: tests/common/artifacts.rs's tree plus etcd 3.5
/// and containerd 1.7 under `<p>/srv`, on loopback (the controller downloads). Returns the
/// served files, the server and the digests (`etcd35`, `containerd17` for the two added).
pub fn serve_artifacts(
    p: &super::Project,
) -> (
    Vec<super::artifacts::Served>,
    testbed::http::HttpServer,
    std::collections::BTreeMap<&'static str, String>,
) {
    use super::artifacts::{build_server, sha256_file};
    let root = p.path("srv");
    let scratch = p.path("scratch");
    let served = build_server(&root, &scratch);
    let srv = testbed::http::HttpServer::start("127.0.0.1".parse().unwrap(), &root).unwrap();
    let mut sums = std::collections::BTreeMap::new();
    for s in &served {
        sums.insert(s.component, sha256_file(&root.join(&s.server_path)));
    }
    let etcd = super::etcd::build_etcd(&root, &scratch);
    sums.insert("etcd35", sha256_file(&root.join(&etcd.server_path)));
    sums.insert(
        "containerd17",
        sha256_file(&super::cri::containerd_artifact(&root, &scratch)),
    );
    (served, srv, sums)
}

/// [`serve_artifacts`] plus the FAKE kubeadm/kubelet/kubectl (`kube`) and helm (`helm`) and
/// FAKE charts (`(component, version)`), and with `registry` Docker, compose and the registry
/// image ([`serve_registry`]), with the test manifest written to `<p>/artifacts.yaml`.
/// Returns the server, the digests and the fakes' digests.
pub fn serve_cluster(
    p: &super::Project,
    kube: &str,
    helm: &str,
    charts: &[(&str, &str)],
    registry: bool,
) -> (
    testbed::http::HttpServer,
    std::collections::BTreeMap<&'static str, String>,
    super::fakes::FakeArtifacts,
) {
    let (_, srv, sums) = serve_artifacts(p);
    let (root, scratch) = (p.path("srv"), p.path("scratch"));
    let mut fa = super::fakes::serve_kube(&root, &scratch, kube, helm);
    for (component, version) in charts {
        super::fakes::serve_chart(&mut fa, &root, component, version);
    }
    let mut extra = fa.manifest_extra.clone();
    if registry {
        extra = serve_registry(&root, &scratch) + &extra;
    }
    p.file(
        "artifacts.yaml",
        &super::artifacts::manifest(&srv.url("cn/"), &sums, &extra),
    );
    (srv, sums, fa)
}

/// Serves the image registry's artifacts under `root/cn/` — Docker, docker-compose and the
/// `registry` image (tests/common/docker.rs builds them from Debian packages) — and returns
/// their manifest entries (with their digests).
pub fn serve_registry(root: &std::path::Path, scratch: &std::path::Path) -> String {
    use super::artifacts::sha256_file;
    use super::docker::{COMPOSE_VERSION, DOCKER_VERSION, REGISTRY_VERSION};
    let docker = root.join(format!("cn/docker/{v}/docker-{v}.tgz", v = DOCKER_VERSION));
    super::docker::docker_tgz(&docker, scratch);
    let compose = root.join(format!("cn/compose/{}/docker-compose", COMPOSE_VERSION));
    super::artifacts::copy_exec(&super::docker::compose_bin(), &compose);
    let registry = root.join(format!(
        "cn/registry/{v}/docker-registry-{v}-linux-amd64.tgz",
        v = REGISTRY_VERSION
    ));
    super::docker::registry_image_tgz(&registry, scratch, REGISTRY_VERSION);
    format!(
        r#"  docker:
    url: "docker/{{version}}/docker-{{version}}.tgz"
    dest: "docker/{{version}}/{{arch}}/docker-{{version}}.tgz"
    sha256:
      "{dv}": {{amd64: "{docker}"}}
  docker_compose:
    url: "compose/{{version}}/docker-compose"
    dest: "image-registry/docker-compose/{{version}}/{{arch}}/docker-compose"
    sha256:
      "{cv}": {{amd64: "{compose}"}}
  docker_registry:
    url: "registry/{{version}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    dest: "image-registry/docker-registry/{{version}}/{{arch}}/docker-registry-{{version}}-linux-{{arch}}.tgz"
    sha256:
      "{rv}": {{amd64: "{registry}"}}
"#,
        dv = DOCKER_VERSION,
        docker = sha256_file(&docker),
        cv = COMPOSE_VERSION,
        compose = sha256_file(&compose),
        rv = REGISTRY_VERSION,
        registry = sha256_file(&registry),
    )
}

/// The etcd and runtime part of an end-to-end config (under `spec:`): external etcd and
/// containerd at the versions [`serve_artifacts`] serves, runc and crictl of the shared tree,
/// containerd's data root on the hosts' tmpfs (its overlayfs snapshotter cannot sit on their
/// overlay root; see tests/cri.rs).
pub fn config_etcd_and_containerd() -> String {
    format!(
        r#"  etcd: {{deployment_type: external, etcd_version: {etcd}}}
  cri:
    container_manager: containerd
    containerd_version: {containerd}
    runc_version: v1.1.5
    crictl_version: v1.34.0
    containerd:
      data_root: /tmp/kk-containerd
"#,
        etcd = super::etcd::ETCD_VERSION,
        containerd = super::cri::CONTAINERD_VERSION,
    )
}
