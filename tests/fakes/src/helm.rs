//! FAKE helm (stands in for helm 3, which needs an API server to install anything):
//! `version --short|--template {{.Version}}`, `upgrade --install` (a chart archive, or a
//! chart name with `--repo <url> [--version v]`, recorded without fetching), `status`,
//! `get values -o json`, `list -A -o json`.
//!
//! Checks: a kubeconfig that exists (as kubectl's fake); the chart is a gzip tar holding
//! `<name>/Chart.yaml` (apiVersion v1/v2, name = its directory, a version); every values
//! file parses as a YAML map; `--set` syntax; the namespace exists unless
//! `--create-namespace`; `--timeout` is a duration.
//! Leaves: the release (chart, its digest, the merged user values, revision) in the fake
//! cluster state (`/var/lib/kk-fakes/cluster.json`); nothing is deployed.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::kubectl::{cluster_state, need_kubeconfig};
use crate::{fail, save_state, take_all, take_bool, take_flag, Call, Fail, Res};

/// Plays `helm` for one call: checks its arguments and files like the real tool, then
/// records or refuses it.
pub fn run(call: &mut Call) -> Res {
    let mut args = call.args.clone();
    // Global flags may come before the command.
    let kubeconfig = take_flag(&mut args, "--kubeconfig", None)?;
    let ns = take_flag(&mut args, "--namespace", Some("-n"))?.unwrap_or_else(|| "default".into());
    let output = take_flag(&mut args, "--output", Some("-o"))?;
    match args.first().map(String::as_str) {
        Some("version") => {
            let short = take_bool(&mut args, "--short");
            let template = take_flag(&mut args, "--template", None)?;
            if args.len() != 1 {
                return call.unsupported();
            }
            match (short, template.as_deref()) {
                // The real `--short` appends the commit: `v3.18.5+g<sha>`.
                (true, None) => println!("{}+g0000000", call.version),
                (false, Some("{{.Version}}")) => println!("{}", call.version),
                _ => return call.unsupported(),
            }
            return Ok(());
        }
        Some("upgrade" | "status" | "get" | "list") => {}
        _ => return call.unsupported(),
    }
    need_kubeconfig(call, kubeconfig)?;
    let mut state = cluster_state();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match (words.as_slice(), output.as_deref()) {
        (["upgrade", ..], None) => {
            upgrade(call, args.clone(), &ns, &mut state)?;
            return save_state("cluster", &state);
        }
        (["status", r], None) => {
            let rel = release(&state, &ns, r)?;
            print_release(rel);
        }
        (["get", "values", r], Some("json")) => {
            let rel = release(&state, &ns, r)?;
            let v = &rel["values"];
            let empty = v.as_object().is_none_or(Map::is_empty);
            println!("{}", if empty { "null".into() } else { v.to_string() });
        }
        (["list", "-A"] | ["list", "--all-namespaces"], Some("json")) => {
            let list: Vec<Value> = state["releases"]
                .as_object()
                .unwrap()
                .values()
                .map(|r| {
                    json!({"name": r["name"], "namespace": r["namespace"],
                        "revision": r["revision"].to_string(), "updated": r["updated"],
                        "status": "deployed", "chart": r["chart"], "app_version": r["app_version"]})
                })
                .collect();
            println!("{}", Value::Array(list));
        }
        _ => return call.unsupported(),
    }
    Ok(())
}

fn release<'a>(state: &'a Value, ns: &str, name: &str) -> Result<&'a Value, Fail> {
    let r = &state["releases"][format!("{}/{}", ns, name)];
    if r.is_null() {
        return fail("Error: release: not found");
    }
    Ok(r)
}

fn print_release(r: &Value) {
    println!(
        "NAME: {}\nLAST DEPLOYED: {} (FAKE helm: unix seconds)\nNAMESPACE: {}\nSTATUS: deployed\nREVISION: {}\nTEST SUITE: None",
        r["name"].as_str().unwrap_or(""),
        r["updated"],
        r["namespace"].as_str().unwrap_or(""),
        r["revision"]
    );
}

fn upgrade(call: &mut Call, mut args: Vec<String>, ns: &str, state: &mut Value) -> Res {
    args.remove(0);
    if !take_bool(&mut args, "--install") && !take_bool(&mut args, "-i") {
        return call.unsupported();
    }
    let create_ns = take_bool(&mut args, "--create-namespace");
    take_bool(&mut args, "--wait");
    if let Some(t) = take_flag(&mut args, "--timeout", None)? {
        if !t
            .trim_end_matches(|c: char| "hms".contains(c))
            .chars()
            .all(|c| c.is_ascii_digit())
            || t.is_empty()
        {
            return fail(format!(
                "Error: invalid argument {:?} for \"--timeout\" flag: not a duration",
                t
            ));
        }
    }
    let files = take_all(&mut args, "--values", Some("-f"))?;
    let sets = take_all(&mut args, "--set", None)?;
    let set_strings = take_all(&mut args, "--set-string", None)?;
    let repo = take_flag(&mut args, "--repo", None)?;
    let chart_version = take_flag(&mut args, "--version", None)?;
    let [name, chart_path] = args.as_slice() else {
        return call.unsupported();
    };
    let (name, chart_path) = (name.clone(), chart_path.clone());
    if name.starts_with('-') || chart_path.starts_with('-') {
        return call.unsupported();
    }
    let chart = match &repo {
        // From a chart repository: nothing to fetch offline; the chart is taken as named.
        Some(url) => {
            if !(url.starts_with("https://")
                || url.starts_with("http://")
                || url.starts_with("oci://"))
            {
                return fail(format!(
                    "Error: invalid --repo {:?}: not an http(s)/oci URL",
                    url
                ));
            }
            if chart_path.contains('/') {
                return fail(format!(
                    "Error: with --repo the chart is a name, not {:?}",
                    chart_path
                ));
            }
            Chart {
                name: chart_path.clone(),
                version: chart_version.clone().unwrap_or_else(|| "latest".into()),
                app_version: Value::Null,
                sha256: format!("FAKE helm: from {} (not fetched)", url),
            }
        }
        None if chart_version.is_some() => {
            return fail("Error: --version applies to a chart from a repository (--repo)");
        }
        None => read_chart(&chart_path)?,
    };
    let mut values = Value::Object(Map::new());
    for f in &files {
        let text = call.read_input(f)?;
        let v: Value = match serde_yaml::from_str::<Value>(&text) {
            Ok(Value::Null) => json!({}),
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return fail(format!("Error: failed to parse {}: not a YAML map", f)),
            Err(e) => return fail(format!("Error: failed to parse {}: {}", f, e)),
        };
        merge(&mut values, v);
    }
    for (s, typed) in sets
        .iter()
        .map(|s| (s, true))
        .chain(set_strings.iter().map(|s| (s, false)))
    {
        for kv in s.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                return fail(format!(
                    "Error: failed parsing --set data: key {:?} has no value",
                    kv
                ));
            };
            if k.is_empty() || k.split('.').any(str::is_empty) {
                return fail(format!("Error: failed parsing --set data: bad key {:?}", k));
            }
            let val = if typed { scalar(v) } else { json!(v) };
            let nested = k.rsplit('.').fold(val, |acc, part| json!({ part: acc }));
            merge(&mut values, nested);
        }
    }
    if state["namespaces"][ns].is_null() {
        if !create_ns {
            return fail(format!(
                "Error: create: failed to create: namespaces \"{}\" not found",
                ns
            ));
        }
        state["namespaces"][ns] = json!({});
    }
    let key = format!("{}/{}", ns, name);
    let old = &state["releases"][&key];
    let revision = old["revision"].as_u64().unwrap_or(0) + 1;
    if old.is_null() {
        println!("Release \"{}\" does not exist. Installing it now.", name);
    } else {
        println!("Release \"{}\" has been upgraded. Happy Helming!", name);
    }
    let updated = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let rel = json!({
        "name": name, "namespace": ns, "revision": revision, "updated": updated,
        "chart": format!("{}-{}", chart.name, chart.version), "app_version": chart.app_version,
        "chart_path": chart_path, "chart_sha256": chart.sha256, "values": values,
    });
    print_release(&rel);
    state["releases"][&key] = rel;
    Ok(())
}

/// `--set` typing as helm does: integers, booleans and null; strings otherwise.
fn scalar(v: &str) -> Value {
    match v {
        "true" => json!(true),
        "false" => json!(false),
        "null" => Value::Null,
        _ => v
            .parse::<i64>()
            .map(|n| json!(n))
            .unwrap_or_else(|_| json!(v)),
    }
}

/// Deep merge, `b` over `a` (maps merged, anything else replaced).
fn merge(a: &mut Value, b: Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

struct Chart {
    name: String,
    version: String,
    app_version: Value,
    sha256: String,
}

/// A chart archive: gzip tar with `<name>/Chart.yaml` (read with the host's tar).
fn read_chart(path: &str) -> Result<Chart, Fail> {
    let host = crate::host_path(path);
    let bytes = std::fs::read(&host).map_err(|e| Fail {
        code: 1,
        msg: format!("Error: path {:?} not found: {}", path, e),
    })?;
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return fail(format!(
            "Error: {}: not a gzip-compressed chart archive",
            path
        ));
    }
    let list = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&host)
        .output()
        .map_err(|e| Fail {
            code: 1,
            msg: format!("tar: {}", e),
        })?;
    if !list.status.success() {
        return fail(format!(
            "Error: {}: not a tar archive: {}",
            path,
            String::from_utf8_lossy(&list.stderr).trim()
        ));
    }
    let names = String::from_utf8_lossy(&list.stdout).into_owned();
    let Some(chart_yaml) = names
        .lines()
        .find(|l| l.matches('/').count() == 1 && l.ends_with("/Chart.yaml"))
    else {
        return fail(format!(
            "Error: {}: Chart.yaml file is missing (want <name>/Chart.yaml)",
            path
        ));
    };
    let dir = chart_yaml.trim_end_matches("/Chart.yaml").to_string();
    let out = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(&host)
        .arg(chart_yaml)
        .output()
        .map_err(|e| Fail {
            code: 1,
            msg: format!("tar: {}", e),
        })?;
    let meta: Value = serde_yaml::from_slice(&out.stdout).map_err(|e| Fail {
        code: 1,
        msg: format!("Error: {}: Chart.yaml: {}", path, e),
    })?;
    let api_ok = matches!(meta["apiVersion"].as_str(), Some("v1" | "v2"));
    let (Some(name), Some(version)) = (meta["name"].as_str(), meta["version"].as_str()) else {
        return fail(format!(
            "Error: {}: Chart.yaml needs name and version (strings)",
            path
        ));
    };
    if !api_ok || name != dir {
        return fail(format!(
            "Error: {}: Chart.yaml: apiVersion must be v1 or v2 and name ({}) the chart's directory ({})",
            path, name, dir
        ));
    }
    Ok(Chart {
        name: name.to_string(),
        version: version.to_string(),
        app_version: meta["appVersion"].clone(),
        sha256: hex::encode(Sha256::digest(&bytes)),
    })
}
