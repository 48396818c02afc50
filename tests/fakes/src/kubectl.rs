//! FAKE kubectl (stands in for kubectl talking to an API server, which the test hosts
//! cannot run): `version --client`, `apply -f`, `label` (of one or more names), `taint`,
//! `get node -o json`,
//! `get configmap -o json|jsonpath={.data.<key>}`,
//! `delete`, `rollout restart deployment`, `create namespace`, and for removing a node
//! `get node <n> -o name`, `cordon <n>`, `drain <n>` (kubectl's drain flags) and
//! `delete node <n>`.
//!
//! Checks: a kubeconfig (`--kubeconfig`, `KUBECONFIG` or /root/.kube/config) that exists
//! and is one; applied documents have apiVersion, kind and metadata.name; label and taint
//! syntax as kubectl validates it, and `--overwrite` where a value changes.
//! The fake knows no cluster membership (each host has its own state): any node name is
//! taken to exist until `delete node` removed it on this host; then get/cordon/drain/delete
//! of it fail with kubectl's NotFound error.
//! Leaves: node labels/taints, cordoned and deleted nodes, namespaces and a digest of every applied object in the
//! fake's state on this host (`/var/lib/kk-fakes/cluster.json`), so that a second call
//! answers `unchanged` / `not labeled` as kubectl would.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::{fail, load_state, save_state, take_bool, take_flag, Call, Fail, Res};

/// The fake cluster's state shared by kubectl and helm: nodes, namespaces, objects, releases.
pub fn cluster_state() -> Value {
    let mut s = load_state("cluster");
    if s["namespaces"].is_null() {
        s["namespaces"] =
            json!({"default": {}, "kube-system": {}, "kube-public": {}, "kube-node-lease": {}});
    }
    for k in ["nodes", "objects", "releases", "configmaps"] {
        if s[k].is_null() {
            s[k] = json!({});
        }
    }
    s
}

/// Finds the kubeconfig the way kubectl and helm do, reads it (journalled) and checks it.
pub fn need_kubeconfig(call: &mut Call, flag: Option<String>) -> Res {
    let path = flag
        .or_else(|| std::env::var("KUBECONFIG").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| {
            format!(
                "{}/.kube/config",
                std::env::var("HOME").unwrap_or_else(|_| "/root".into())
            )
        });
    if !crate::exists(&path) {
        return fail(format!(
            "kubeconfig {} does not exist: the connection to the server localhost:8080 was refused",
            path
        ));
    }
    let text = call.read_input(&path)?;
    crate::kubeconfig_server(&text, &path).map(|_| ())
}

/// Plays `kubectl` for one call: checks its arguments and files like the real tool, then
/// records or refuses it.
pub fn run(call: &mut Call) -> Res {
    let mut args = call.args.clone();
    let kubeconfig = take_flag(&mut args, "--kubeconfig", None)?;
    let ns = take_flag(&mut args, "--namespace", Some("-n"))?;
    let first = args.first().cloned().unwrap_or_default();
    if first == "version" {
        let out = take_flag(&mut args, "--output", Some("-o"))?;
        if args != ["version", "--client"] && args != ["version", "--client=true"] {
            return call.unsupported();
        }
        let (maj, min) = call.minor();
        match out.as_deref() {
            None => println!("Client Version: {}", call.version),
            Some("json") => println!(
                "{}",
                serde_json::to_string_pretty(&json!({"clientVersion": {
                    "major": maj.to_string(), "minor": min.to_string(),
                    "gitVersion": call.version, "platform": "linux/amd64"}}))
                .unwrap()
            ),
            _ => return call.unsupported(),
        }
        return Ok(());
    }
    let known = [
        "apply", "label", "taint", "get", "delete", "rollout", "create", "cordon", "drain",
    ];
    if !known.contains(&first.as_str()) {
        return call.unsupported();
    }
    need_kubeconfig(call, kubeconfig)?;
    let mut state = cluster_state();
    let ns = ns.unwrap_or_else(|| "default".into());
    match first.as_str() {
        "apply" => apply(call, &mut args, &ns, &mut state)?,
        "label" => label(call, &mut args, &mut state)?,
        "taint" => taint(call, &mut args, &mut state)?,
        "get" => return get(call, &mut args, &ns, &state),
        "delete" => delete(call, &mut args, &ns, &mut state)?,
        "cordon" => cordon(call, &args, &mut state)?,
        "drain" => drain(call, &mut args, &mut state)?,
        "rollout" => {
            if args.len() != 4
                || args[1] != "restart"
                || !["deployment", "deploy", "deployments"].contains(&args[2].as_str())
            {
                return call.unsupported();
            }
            println!("deployment.apps/{} restarted", args[3]);
        }
        _ => {
            if args.len() != 3 || !["namespace", "ns"].contains(&args[1].as_str()) {
                return call.unsupported();
            }
            if !state["namespaces"][&args[2]].is_null() {
                return fail(format!(
                    "Error from server (AlreadyExists): namespaces \"{}\" already exists",
                    args[2]
                ));
            }
            state["namespaces"][&args[2]] = json!({});
            println!("namespace/{} created", args[2]);
        }
    }
    save_state("cluster", &state)
}

/// `kind[.group]` as kubectl prints it: `daemonset.apps`, `configmap`.
fn resource(api_version: &str, kind: &str) -> String {
    match api_version.split_once('/') {
        Some((group, _)) => format!("{}.{}", kind.to_lowercase(), group),
        None => kind.to_lowercase(),
    }
}

fn apply(call: &mut Call, args: &mut Vec<String>, ns: &str, state: &mut Value) -> Res {
    args.remove(0);
    let Some(file) = take_flag(args, "--filename", Some("-f"))? else {
        return fail("apply needs -f <file|->");
    };
    if !args.is_empty() {
        return call.unsupported();
    }
    let text = call.read_input(&file)?;
    let mut lines = Vec::new();
    for (i, de) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let doc: Value = match serde::Deserialize::deserialize(de) {
            Ok(d) => d,
            Err(e) => {
                return fail(format!(
                    "error: error parsing {}: document {}: {}",
                    file,
                    i + 1,
                    e
                ))
            }
        };
        if doc.is_null() {
            continue;
        }
        let (Some(api), Some(kind), Some(name)) = (
            doc["apiVersion"].as_str(),
            doc["kind"].as_str(),
            doc["metadata"]["name"].as_str(),
        ) else {
            return fail(format!(
                "error: {} document {}: apiVersion, kind and metadata.name are required",
                file,
                i + 1
            ));
        };
        let obj_ns = doc["metadata"]["namespace"].as_str().unwrap_or(ns);
        let key = format!("{}/{}/{}", kind.to_lowercase(), obj_ns, name);
        let digest = hex::encode(Sha256::digest(serde_json::to_string(&doc).unwrap()));
        let verb = match state["objects"][&key].as_str() {
            None => "created",
            Some(d) if d == digest => "unchanged",
            Some(_) => "configured",
        };
        state["objects"][&key] = json!(digest);
        if kind == "ConfigMap" {
            state["configmaps"][format!("{}/{}", obj_ns, name)] = doc["data"].clone();
        }
        if kind == "Namespace" && state["namespaces"][name].is_null() {
            state["namespaces"][name] = json!({});
        }
        lines.push(format!("{}/{} {}", resource(api, kind), name, verb));
    }
    if lines.is_empty() {
        return fail(format!("error: no objects passed to apply ({})", file));
    }
    println!("{}", lines.join("\n"));
    Ok(())
}

/// kubectl's label key: `[prefix/]name`, prefix a DNS subdomain, name ≤ 63 alphanumerics
/// with `-_.` inside.
pub fn valid_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && valid_value(name)
}

/// A label value: empty, or ≤ 63 alphanumerics with `-_.` inside.
pub fn valid_value(v: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    v.is_empty()
        || (v.len() <= 63
            && v.bytes().all(|b| alnum(b) || b"-_.".contains(&b))
            && alnum(v.as_bytes()[0])
            && alnum(v.as_bytes()[v.len() - 1]))
}

fn label(call: &mut Call, args: &mut Vec<String>, state: &mut Value) -> Res {
    args.remove(0);
    let overwrite = take_bool(args, "--overwrite");
    // As kubectl: TYPE NAME... then the label specs (KEY=VALUE or KEY-).
    let is_spec = |a: &String| a.contains('=') || a.ends_with('-');
    let names: Vec<String> = args
        .iter()
        .skip(1)
        .take_while(|a| !is_spec(a))
        .cloned()
        .collect();
    if args.len() < 3 || names.is_empty() || names.len() + 1 == args.len() {
        return call.unsupported();
    }
    let (coll, what) = match args[0].as_str() {
        "node" | "nodes" | "no" => ("nodes", "node"),
        "namespace" | "namespaces" | "ns" => ("namespaces", "namespace"),
        _ => return call.unsupported(),
    };
    let specs = &args[1 + names.len()..];
    let mut lines = Vec::new();
    for name in &names {
        let mut labels = state[coll][name]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut changed = false;
        for spec in specs {
            if let Some(k) = spec.strip_suffix('-') {
                if !valid_key(k) {
                    return fail(format!("error: invalid label spec: {}", spec));
                }
                changed |= labels.remove(k).is_some();
                continue;
            }
            let Some((k, v)) = spec.split_once('=') else {
                return fail(format!(
                    "error: at least one label update is required (bad spec {:?})",
                    spec
                ));
            };
            if !valid_key(k) || !valid_value(v) {
                return fail(format!("error: invalid label spec: {}", spec));
            }
            match labels.get(k).and_then(Value::as_str) {
                Some(old) if old == v => {}
                Some(old) if !overwrite => {
                    return fail(format!(
                        "error: '{}' already has a value ({}), and --overwrite is false",
                        k, old
                    ));
                }
                _ => {
                    labels.insert(k.to_string(), json!(v));
                    changed = true;
                }
            }
        }
        state[coll][name]["labels"] = Value::Object(labels);
        lines.push(format!(
            "{}/{} {}",
            what,
            name,
            if changed { "labeled" } else { "not labeled" }
        ));
    }
    println!("{}", lines.join("\n"));
    Ok(())
}

fn taint(call: &mut Call, args: &mut Vec<String>, state: &mut Value) -> Res {
    args.remove(0);
    let overwrite = take_bool(args, "--overwrite");
    if args.len() < 3 || !["node", "nodes", "no"].contains(&args[0].as_str()) {
        return call.unsupported();
    }
    let name = args[1].clone();
    let mut taints = state["nodes"][&name]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    let effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
    for spec in &args[2..] {
        let bad = || fail(format!("error: invalid taint spec: {}", spec));
        if let Some(rest) = spec.strip_suffix('-') {
            let (k, effect) = match rest.split_once(':') {
                Some((k, e)) => (k, Some(e)),
                None => (rest, None),
            };
            if !valid_key(k) || effect.is_some_and(|e| !effects.contains(&e)) {
                return bad();
            }
            let before = taints.len();
            taints.retain(|t| !(t["key"] == k && effect.is_none_or(|e| t["effect"] == e)));
            changed |= taints.len() != before;
            continue;
        }
        let Some((kv, effect)) = spec.split_once(':') else {
            return bad();
        };
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        if !valid_key(k) || !valid_value(v) || !effects.contains(&effect) {
            return bad();
        }
        let new = json!({"key": k, "value": v, "effect": effect});
        match taints
            .iter()
            .position(|t| t["key"] == k && t["effect"] == effect)
        {
            Some(i) if taints[i] == new => {}
            Some(_) if !overwrite => {
                return fail(format!("error: node {} already has {} taint(s) with same effect(s) and --overwrite is false", name, k));
            }
            Some(i) => {
                taints[i] = new;
                changed = true;
            }
            None => {
                taints.push(new);
                changed = true;
            }
        }
    }
    state["nodes"][&name]["taints"] = Value::Array(taints);
    println!(
        "node/{} {}",
        name,
        if changed { "tainted" } else { "not tainted" }
    );
    Ok(())
}

/// Stores a ConfigMap's data in the fake cluster state (kubeadm's kubeadm-config).
pub fn put_configmap(ns: &str, name: &str, data: Value) -> Res {
    let mut state = cluster_state();
    state["configmaps"][format!("{}/{}", ns, name)] = data;
    save_state("cluster", &state)
}

/// `get configmap <name> -n <ns> -o json|jsonpath={.data.<key>}` (only what this host's
/// fake cluster state holds: applied ConfigMaps, and kubeadm-config where kubeadm init or
/// upload-config ran).
fn get_configmap(call: &Call, name: &str, ns: &str, out: Option<&str>, state: &Value) -> Res {
    let data = &state["configmaps"][format!("{}/{}", ns, name)];
    if data.is_null() {
        return fail(format!(
            "Error from server (NotFound): configmaps \"{}\" not found (FAKE kubectl: only ConfigMaps applied or uploaded on this host are known)",
            name
        ));
    }
    match out {
        Some("json") => println!(
            "{}",
            serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns}, "data": data}))
            .unwrap()
        ),
        Some(o) if o.starts_with("jsonpath={.data.") && o.ends_with('}') => {
            let key = &o["jsonpath={.data.".len()..o.len() - 1];
            print!("{}", data[key].as_str().unwrap_or(""));
        }
        _ => return call.unsupported(),
    }
    Ok(())
}

fn get(call: &mut Call, args: &mut Vec<String>, ns: &str, state: &Value) -> Res {
    let out = take_flag(args, "--output", Some("-o"))?;
    if args.len() == 3 && ["configmap", "configmaps", "cm"].contains(&args[1].as_str()) {
        return get_configmap(call, &args[2], ns, out.as_deref(), state);
    }
    if args.len() != 3
        || !["node", "nodes", "no"].contains(&args[1].as_str())
        || !matches!(out.as_deref(), Some("json" | "name"))
    {
        return call.unsupported();
    }
    let name = &args[2];
    let node = &state["nodes"][name];
    node_exists(state, name)?;
    if out.as_deref() == Some("name") {
        println!("node/{}", name);
        return Ok(());
    }
    let mut labels = Map::new();
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    if let Some(l) = node["labels"].as_object() {
        labels.extend(l.clone());
    }
    let obj = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"kk-fakes": "FAKE node from the FAKE kubectl"}},
        "spec": {"taints": node["taints"].as_array().cloned().unwrap_or_default()},
    });
    println!("{}", serde_json::to_string_pretty(&obj).unwrap());
    Ok(())
}

/// NotFound, as kubectl, for a node `delete node` removed on this host.
fn node_exists(state: &Value, name: &str) -> Res {
    if state["nodes"][name]["deleted"] == true {
        return fail(format!(
            "Error from server (NotFound): nodes \"{}\" not found",
            name
        ));
    }
    Ok(())
}

/// `cordon <node>`: marks it unschedulable.
fn cordon(call: &mut Call, args: &[String], state: &mut Value) -> Res {
    if args.len() != 2 {
        return call.unsupported();
    }
    let name = args[1].clone();
    node_exists(state, &name)?;
    if state["nodes"][&name]["unschedulable"] == true {
        println!("node/{} already cordoned", name);
    } else {
        state["nodes"][&name]["unschedulable"] = json!(true);
        println!("node/{} cordoned", name);
    }
    Ok(())
}

/// `drain <node>` with kubectl's flags for a node that runs DaemonSet pods and pods with
/// emptyDir volumes (`--ignore-daemonsets`, `--delete-emptydir-data`, `--force`; optional
/// `--disable-eviction`, `--timeout=<d>`): cordons it as kubectl does; there are no pods to
/// evict in the fake.
fn drain(call: &mut Call, args: &mut Vec<String>, state: &mut Value) -> Res {
    let mut need = Vec::new();
    for f in ["--ignore-daemonsets", "--delete-emptydir-data", "--force"] {
        if !take_bool(args, f) {
            need.push(f);
        }
    }
    take_bool(args, "--disable-eviction");
    take_flag(args, "--timeout", None)?;
    if args.len() != 2 {
        return call.unsupported();
    }
    if !need.is_empty() {
        return fail(format!(
            "error: unable to drain node \"{}\": cannot delete DaemonSet-managed Pods or Pods with local storage or unmanaged Pods without {} (FAKE kubectl assumes the node runs such pods, as every kk node does)",
            args[1],
            need.join(", ")
        ));
    }
    let name = args[1].clone();
    node_exists(state, &name)?;
    if state["nodes"][&name]["unschedulable"] != true {
        state["nodes"][&name]["unschedulable"] = json!(true);
        println!("node/{} cordoned", name);
    }
    println!("node/{} drained", name);
    Ok(())
}

fn delete(call: &mut Call, args: &mut Vec<String>, ns: &str, state: &mut Value) -> Res {
    let ignore = take_bool(args, "--ignore-not-found");
    if args.len() != 3 {
        return call.unsupported();
    }
    if ["node", "nodes", "no"].contains(&args[1].as_str()) {
        let name = args[2].clone();
        match node_exists(state, &name) {
            Err(_) if ignore => return Ok(()),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        state["nodes"][&name] = json!({"deleted": true});
        println!("node \"{}\" deleted", name);
        return Ok(());
    }
    let kind = args[1].to_lowercase();
    let name = &args[2];
    let objects = state["objects"].as_object_mut().unwrap();
    let key = objects
        .keys()
        .find(|k| {
            let mut it = k.splitn(3, '/');
            let (kk, kn, kname) = (
                it.next().unwrap_or(""),
                it.next().unwrap_or(""),
                it.next().unwrap_or(""),
            );
            (kk == kind || format!("{}s", kk) == kind)
                && kname == name
                && (kn == ns || kn.is_empty())
        })
        .cloned();
    match key {
        Some(k) => {
            objects.remove(&k);
            println!("{} \"{}\" deleted", args[1], name);
            Ok(())
        }
        None if ignore => Ok(()),
        None => Err(Fail {
            code: 1,
            msg: format!(
                "Error from server (NotFound): {} \"{}\" not found",
                args[1], name
            ),
        }),
    }
}
