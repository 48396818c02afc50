//! Helpers for the end-to-end `kk create cluster` tests: the results of a run with their
//! task's place, what a run changed on a host, and the cluster-changing calls the FAKE
//! Kubernetes tools recorded. The artifact server and the config parts that match it are
//! crates/testbed's (`testbed::artifacts::{serve, config}`), re-exported here.

use serde_json::Value;
use testbed::artifacts::serve;
use testbed::TestBed;

pub use testbed::artifacts::config::{config_downloads_and_native, config_etcd_and_containerd};
pub use testbed::artifacts::serve::serve_registry;

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

/// The artifact server of an end-to-end test (`testbed::artifacts::serve::serve_artifacts`)
/// under `<p>/srv`, on loopback (the controller downloads). Returns the served files, the
/// server and the digests (`etcd35`, `containerd17` for etcd 3.5 and containerd 1.7).
pub fn serve_artifacts(
    p: &super::Project,
) -> (
    Vec<super::artifacts::Served>,
    testbed::http::HttpServer,
    std::collections::BTreeMap<&'static str, String>,
) {
    serve::serve_artifacts(p.dir())
}

/// [`serve_artifacts`] plus the FAKE kube tools (`kube`), helm (`helm`), FAKE charts and with
/// `registry` the image registry's artifacts, the manifest written to `<p>/artifacts.yaml`
/// (`testbed::artifacts::serve::serve_cluster`). Returns the server, the digests and the
/// fakes' digests.
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
    serve::serve_cluster(p.dir(), kube, helm, charts, registry)
}
