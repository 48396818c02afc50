//! FAKE calicoctl (stands in for calicoctl against the Kubernetes datastore of a Calico the
//! Tigera operator installed, which the test hosts cannot run): `version` and
//! `delete node <name>…` (kind `node|nodes|no|nos`, any case), each with `-c/--config <file>`
//! and `--allow-version-mismatch`; `delete` also takes `-s/--skip-not-exists`.
//!
//! The datastore is found as calicoctl (libcalico-go's apiconfig) finds it: the config file
//! (`--config`, else /etc/calico/calicoctl.cfg when it exists; `apiVersion:
//! projectcalico.org/v3`, `kind: CalicoAPIConfig`, a `spec`), else the environment
//! (`DATASTORE_TYPE`, `KUBECONFIG`, `ETCD_ENDPOINTS`, each also with a `CALICO_` prefix). The
//! type defaults to `etcdv3` when etcd endpoints are given, else `kubernetes`; the kubeconfig
//! to `$HOME/.kube/config` when that exists. It must be the Kubernetes datastore with a
//! kubeconfig that exists and is one (read and journalled): an operator-installed Calico keeps
//! nothing in etcd.
//!
//! What it answers, as calicoctl does there:
//! - `version`: `Client Version:`, `Git commit:`, then the cluster's `Cluster Version:` and
//!   `Cluster Type:`; the cluster version is the `tigera-operator/calico` helm release's chart
//!   version in the fake cluster state (`/var/lib/kk-fakes/cluster.json`), and without that
//!   release ClusterInformation does not exist: exit 1.
//! - `delete node <n>`: first the version check of every calicoctl resource command (a calico
//!   release of another version: `Version mismatch`, exit 1, unless
//!   `--allow-version-mismatch`); then, for a node of the fake cluster (not deleted by
//!   `kubectl delete node`, see kubectl.rs), it releases the node's Calico data (IPAM, tunnel
//!   addresses, BGPPeers, `node.<n>` configs), recorded under `calico.released` in the state;
//!   then it fails for every name, node or not, with `Failed to delete 'Node' resource:
//!   operation Delete is not supported on Node(<n>)`, exit 1: in the Kubernetes datastore the
//!   Calico Node is the Kubernetes Node, and libcalico-go's Kubernetes backend refuses to
//!   delete it (`kubectl delete node` does). `--skip-not-exists` does not skip that error.
//!   calicoctl's `Successfully deleted 1 'Node' resource(s)` is printed only by the etcd
//!   datastore, which this fake does not have.

use serde_json::{json, Value};

use crate::kubectl::cluster_state;
use crate::{exists, fail, host_path, save_state, take_bool, take_flag, Call, Fail, Res};

/// calicoctl's default config file (used only when it exists).
pub const DEFAULT_CONFIG: &str = "/etc/calico/calicoctl.cfg";
/// The Git commit the fake reports (calicoctl prints its build's).
const GIT_COMMIT: &str = "0000000 (FAKE calicoctl)";
/// What calico-node and the operator record as ClusterInformation's cluster type.
const CLUSTER_TYPE: &str = "typha,kdd,k8s,operator,bgp,kubeadm";

/// Plays `calicoctl` for one call: checks its arguments and files like the real tool, then
/// records or refuses it.
pub fn run(call: &mut Call) -> Res {
    let mut args = call.args.clone();
    let config = take_flag(&mut args, "--config", Some("-c"))?;
    let allow_mismatch = take_bool(&mut args, "--allow-version-mismatch");
    match args.first().map(String::as_str) {
        Some("version") if args.len() == 1 => version(call, config),
        Some("delete") => {
            args.remove(0);
            // Accepted; it skips only "does not exist", never the refusal below.
            take_bool(&mut args, "--skip-not-exists");
            take_bool(&mut args, "-s");
            let kind = args.first().map(|k| k.to_ascii_lowercase());
            if args.len() < 2 || !matches!(kind.as_deref(), Some("node" | "nodes" | "no" | "nos")) {
                return call.unsupported();
            }
            if args[1..].iter().any(|a| a.starts_with('-')) {
                return call.unsupported();
            }
            delete_nodes(call, config, allow_mismatch, &args[1..])
        }
        _ => call.unsupported(),
    }
}

fn version(call: &mut Call, config: Option<String>) -> Res {
    println!("Client Version:    {}", call.version);
    println!("Git commit:        {}", GIT_COMMIT);
    datastore(call, config)?;
    match cluster_version(&cluster_state()) {
        Some(v) => {
            println!("Cluster Version:   {}", v);
            println!("Cluster Type:      {}", CLUSTER_TYPE);
            Ok(())
        }
        None => fail(format!(
            "Unable to retrieve Cluster Version or Type: {}",
            no_cluster_information()
        )),
    }
}

fn delete_nodes(
    call: &mut Call,
    config: Option<String>,
    allow_mismatch: bool,
    names: &[String],
) -> Res {
    datastore(call, config)?;
    let mut state = cluster_state();
    if !allow_mismatch {
        if let Some(cluster) = cluster_version(&state) {
            let bare = |v: &str| {
                let v = v.trim_start_matches('v');
                v.split('-').next().unwrap_or(v).to_string()
            };
            if bare(&cluster) != bare(&call.version) {
                return fail(format!(
                    "Version mismatch.\nClient Version:   {}\nCluster Version:  {}\nUse --allow-version-mismatch to override.",
                    call.version,
                    bare(&cluster)
                ));
            }
        }
    }
    let mut errors = Vec::new();
    for name in names {
        // nodes.Delete releases what Calico holds for an existing node before it deletes the
        // Node; a node that is gone has nothing left to release.
        if state["nodes"][name]["deleted"] != true {
            if !state["calico"]["released"].is_object() {
                state["calico"] = json!({"released": {}});
            }
            state["calico"]["released"][name] =
                json!("IPAM blocks and handles, tunnel addresses, BGPPeers, node.<name> configs");
        }
        errors.push(format!(
            "Failed to delete 'Node' resource: operation Delete is not supported on Node({})",
            name
        ));
    }
    save_state("cluster", &state)?;
    fail(errors.join("\n"))
}

/// The Calico version ClusterInformation records: the tigera-operator chart's version of the
/// `calico` release helm installed (`tigera-operator-3.29.7` → `v3.29.7`).
fn cluster_version(state: &Value) -> Option<String> {
    let chart = state["releases"]["tigera-operator/calico"]["chart"].as_str()?;
    let v = chart.strip_prefix("tigera-operator-")?;
    Some(format!("v{}", v.trim_start_matches('v')))
}

fn no_cluster_information() -> &'static str {
    "resource does not exist: ClusterInformation(default) with error: clusterinformations.crd.projectcalico.org \"default\" not found (FAKE calicoctl: no tigera-operator/calico helm release in this host's fake cluster state)"
}

/// An environment variable as envconfig reads calicoctl's: `CALICO_<name>`, else `<name>`.
fn env(name: &str) -> String {
    std::env::var(format!("CALICO_{}", name))
        .or_else(|_| std::env::var(name))
        .unwrap_or_default()
}

/// Finds and checks the datastore configuration as calicoctl does; the kubeconfig path.
fn datastore(call: &mut Call, config: Option<String>) -> Result<String, Fail> {
    let explicit = config.is_some();
    let cf = config.unwrap_or_else(|| DEFAULT_CONFIG.to_string());
    let (ds_type, mut kubeconfig, etcd) = if exists(&cf) {
        from_file(call, &cf)?
    } else if explicit {
        return fail(format!("Error reading config file: {}", cf));
    } else {
        (
            env("DATASTORE_TYPE"),
            env("KUBECONFIG"),
            env("ETCD_ENDPOINTS"),
        )
    };
    let ds_type = match ds_type.as_str() {
        "" if !etcd.is_empty() => "etcdv3",
        "" => "kubernetes",
        t => t,
    };
    match ds_type {
        "kubernetes" => {}
        "etcdv3" => {
            return fail(format!(
                "Failed to create Calico API client: the etcdv3 datastore ({}) holds no Calico data: kk's Calico is installed by the Tigera operator, which keeps it in the Kubernetes API (DATASTORE_TYPE=kubernetes) (FAKE calicoctl)",
                if etcd.is_empty() { "http://127.0.0.1:2379" } else { etcd.as_str() }
            ));
        }
        t => {
            return fail(format!(
                "Failed to create Calico API client: unknown datastore type: {}",
                t
            ))
        }
    }
    if kubeconfig.is_empty() {
        let home = std::env::var("HOME").unwrap_or_default();
        let default = format!("{}/.kube/config", home.trim_end_matches('/'));
        if !home.is_empty() && exists(&default) {
            kubeconfig = default;
        }
    }
    if kubeconfig.is_empty() {
        return fail("Failed to create Calico API client: invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable (no KUBECONFIG, no kubeconfig in the config file, no $HOME/.kube/config)");
    }
    if !host_path(&kubeconfig).is_file() {
        return fail(format!(
            "Failed to create Calico API client: stat {}: no such file or directory",
            kubeconfig
        ));
    }
    let text = call.read_input(&kubeconfig)?;
    crate::kubeconfig_server(&text, &kubeconfig)
        .map_err(|f| Fail {
            code: 1,
            msg: format!("Failed to create Calico API client: {}", f.msg),
        })
        .map(|_| kubeconfig)
}

/// A CalicoAPIConfig file: (datastoreType, kubeconfig, etcdEndpoints). Fields are checked
/// strictly, as calicoctl's YAML decoder does; ones the fake does not model exit 64.
fn from_file(call: &mut Call, path: &str) -> Result<(String, String, String), Fail> {
    let text = call.read_input(path)?;
    let syntax = |e: String| {
        Fail {
        code: 1,
        msg: format!(
            "Failed to create Calico API client: syntax error in {}: failed to parse config as YAML/JSON: {}",
            path, e
        ),
    }
    };
    let v: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| syntax(e.to_string()))?;
    let Some(map) = v.as_mapping() else {
        return Err(syntax("not a map".into()));
    };
    for k in map.keys() {
        let k = k.as_str().unwrap_or("");
        if !["apiVersion", "kind", "metadata", "spec"].contains(&k) {
            return Err(syntax(format!("unknown field \"{}\"", k)));
        }
    }
    let api = v["apiVersion"].as_str().unwrap_or("");
    if api != "projectcalico.org/v3" {
        return fail(format!(
            "Failed to create Calico API client: syntax error in {}: invalid config file: unknown APIVersion '{}'",
            path, api
        ));
    }
    let kind = v["kind"].as_str().unwrap_or("");
    if kind != "CalicoAPIConfig" {
        return fail(format!(
            "Failed to create Calico API client: syntax error in {}: invalid config file: expected kind 'CalicoAPIConfig', got '{}'",
            path, kind
        ));
    }
    let spec = v.get("spec").cloned().unwrap_or(serde_yaml::Value::Null);
    let field = |k: &str| spec[k].as_str().unwrap_or("").to_string();
    if let Some(m) = spec.as_mapping() {
        for k in m.keys() {
            match k.as_str().unwrap_or("") {
                "datastoreType" | "kubeconfig" | "etcdEndpoints" => {}
                k if k.starts_with("k8s") || k.starts_with("etcd") => {
                    return Err(Fail {
                        code: 64,
                        msg: format!(
                            "unsupported: {}: spec.{} (the FAKE calicoctl reads only datastoreType, kubeconfig and etcdEndpoints)",
                            path, k
                        ),
                    })
                }
                k => return Err(syntax(format!("unknown field \"{}\"", k))),
            }
        }
    } else if !spec.is_null() {
        return Err(syntax("spec is not a map".into()));
    }
    Ok((
        field("datastoreType"),
        field("kubeconfig"),
        field("etcdEndpoints"),
    ))
}
