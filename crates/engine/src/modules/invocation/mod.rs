//! `invocation.module_args`: the arguments as an Ansible module received them, which
//! ansible-core's results carry and its callbacks show from `-vvv` on (never registered:
//! the strategy drops `invocation` before `register`).
//!
//! Ansible fills every parameter of the module's argument spec: its default (or null),
//! the given value converted to the parameter's type (`yes` → true, `"5"` → 5 for an
//! int, `5` → `"5"` for a str, `"a,b"` → a list), aliases kept as given next to the
//! canonical name, and `no_log` parameters masked as `VALUE_SPECIFIED_IN_NO_LOG_PARAMETER`
//! (with their values masked as `********` wherever another argument contains them).
//!
//! `specs.json` holds the facts this needs (names, types, defaults, aliases, no_log) for
//! ansible-core 2.19's modules that kk runs; a module without an entry gets no
//! `invocation`, as Ansible's action plugins (`debug`, `set_fact`…) have none.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::VarMap;
use crate::template::pydump::py_str;

/// What Ansible shows for a `no_log` parameter's value.
pub const NO_LOG_MASK: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";

/// What Ansible puts where a `no_log` value appears inside another argument.
const SECRET_MASK: &str = "********";

/// The argument specs, by module name (ansible-core 2.19).
static SPECS: LazyLock<Map<String, Value>> =
    LazyLock::new(|| serde_json::from_str(include_str!("specs.json")).unwrap_or_default());

/// The `invocation` value (`{"module_args": {…}}`) for a module (kk's canonical name) run
/// with `args` (rendered), or `None` when kk does not know the module's argument spec.
pub fn invocation(module: &str, args: &VarMap) -> Option<Value> {
    let (spec_name, uses_shell) = match module {
        // `shell` is the command module with `_uses_shell` set by its action.
        "shell" => ("command", true),
        // On systemd hosts ansible-core's service action runs the systemd module.
        "service" | "systemd" => ("systemd_service", false),
        m => (m, false),
    };
    let spec = SPECS.get(spec_name)?.as_object()?;
    let mut out = Map::new();
    for (k, v) in args {
        if !k.starts_with("_ansible_") {
            out.insert(k.clone(), v.clone());
        }
    }
    let mut secrets: Vec<String> = Vec::new();
    let mut masked: Vec<String> = Vec::new();
    for (name, p) in spec {
        let aliases: Vec<&str> = p
            .get("aliases")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let given = args
            .get(name)
            .or_else(|| aliases.iter().find_map(|a| args.get(*a)));
        let value = match given {
            Some(v) => convert(v, p),
            None => p.get("default").cloned().unwrap_or(Value::Null),
        };
        let no_log = p.get("no_log").and_then(Value::as_bool) == Some(true);
        if no_log && !value.is_null() {
            collect_texts(&value, &mut secrets);
            out.insert(name.clone(), Value::String(NO_LOG_MASK.into()));
            masked.push(name.clone());
            for a in aliases {
                if out.contains_key(a) {
                    out.insert(a.to_string(), Value::String(NO_LOG_MASK.into()));
                    masked.push(a.to_string());
                }
            }
        } else {
            out.insert(name.clone(), value);
        }
    }
    if uses_shell {
        out.insert("_uses_shell".into(), Value::Bool(true));
    }
    secrets.retain(|s| !s.is_empty());
    if !secrets.is_empty() {
        for (k, v) in out.iter_mut() {
            if !masked.contains(k) {
                hide(v, &secrets);
            }
        }
    }
    let mut inv = Map::new();
    inv.insert("module_args".into(), Value::Object(out));
    Some(Value::Object(inv))
}

/// A given value converted as ansible-core's type checkers do; a value they would refuse
/// is shown as given (kk's module reports the error).
fn convert(v: &Value, p: &Value) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("str");
    match ty {
        "str" => Value::String(py_str(v)),
        "bool" => crate::ansible::to_bool(v)
            .filter(|_| !matches!(v, Value::String(s) if s.trim().is_empty()))
            .map(Value::Bool)
            .unwrap_or_else(|| v.clone()),
        "int" => match v {
            Value::String(s) => s
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| v.clone()),
            Value::Number(n) if n.is_f64() => n
                .as_f64()
                .filter(|f| f.fract() == 0.0)
                .map(|f| Value::from(f as i64))
                .unwrap_or_else(|| v.clone()),
            _ => v.clone(),
        },
        "float" => match v {
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .unwrap_or_else(|| v.clone()),
            Value::Number(n) => n
                .as_f64()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .unwrap_or_else(|| v.clone()),
            _ => v.clone(),
        },
        "list" => {
            let items: Vec<Value> = match v {
                Value::Array(a) => a.clone(),
                Value::String(s) => s.split(',').map(|x| Value::String(x.into())).collect(),
                Value::Number(_) => vec![Value::String(py_str(v))],
                other => return other.clone(),
            };
            match p.get("elements").and_then(Value::as_str) {
                Some(el) => {
                    let el_spec = serde_json::json!({ "type": el });
                    Value::Array(items.iter().map(|i| convert(i, &el_spec)).collect())
                }
                None => Value::Array(items),
            }
        }
        _ => v.clone(),
    }
}

fn collect_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Number(_) | Value::Bool(_) => out.push(py_str(v)),
        Value::Array(a) => a.iter().for_each(|i| collect_texts(i, out)),
        Value::Object(m) => m.values().for_each(|i| collect_texts(i, out)),
        Value::Null => {}
    }
}

/// Replaces each secret inside strings with `********`, as ansible-core's `remove_values`.
fn hide(v: &mut Value, secrets: &[String]) {
    match v {
        Value::String(s) => {
            for secret in secrets {
                if s.contains(secret.as_str()) {
                    *s = s.replace(secret.as_str(), SECRET_MASK);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|i| hide(i, secrets)),
        Value::Object(m) => m.values_mut().for_each(|i| hide(i, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> VarMap {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_types_aliases_as_ansible_fills_them() {
        let inv = invocation(
            "file",
            &args(json!({"dest": "/tmp/x", "state": "touch", "mode": "644", "follow": "yes"})),
        )
        .unwrap();
        let a = &inv["module_args"];
        assert_eq!(a["path"], "/tmp/x");
        assert_eq!(a["dest"], "/tmp/x");
        assert_eq!(a["follow"], true);
        assert_eq!(a["mode"], "644");
        assert_eq!(a["recurse"], false);
        assert_eq!(a["access_time_format"], "%Y%m%d%H%M.%S");
        assert_eq!(a["owner"], Value::Null);
        let inv = invocation("shell", &args(json!({"_raw_params": "echo hi"}))).unwrap();
        assert_eq!(inv["module_args"]["_uses_shell"], true);
        assert_eq!(inv["module_args"]["strip_empty_ends"], true);
        assert_eq!(
            invocation("ping", &VarMap::new()).unwrap(),
            json!({"module_args": {"data": "pong"}})
        );
        assert!(invocation("debug", &VarMap::new()).is_none());
        let inv = invocation("wait_for", &args(json!({"timeout": "5"}))).unwrap();
        assert_eq!(inv["module_args"]["timeout"], 5);
    }

    #[test]
    fn no_log_values_are_masked() {
        let inv = invocation(
            "copy",
            &args(json!({"content": "s3cret", "dest": "/tmp/s3cret.txt"})),
        )
        .unwrap();
        let a = &inv["module_args"];
        assert_eq!(a["content"], NO_LOG_MASK);
        assert_eq!(a["dest"], "/tmp/********.txt");
        assert!(!inv.to_string().contains("s3cret"));
    }
}
