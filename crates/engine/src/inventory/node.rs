//! Reading inventory YAML: unknown-key checks with suggestions, key spans, variable
//! mappings and name lists, shared by the KubeKey and Ansible loaders so both report bad
//! input the same way.

use serde_json::Value;

use crate::error::{did_you_mean, Error, Result, Span};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

/// Errors on keys of a mapping that are not in `valid`, with a suggestion.
pub(super) fn check_keys(node: &Node, valid: &[&str], what: &str) -> Result<()> {
    for (k, v) in node.entries() {
        if !valid.contains(&k.as_str()) {
            let key_span = key_span(node, k, v);
            let mut e = Error::syntax(format!("unknown key `{}` in {}", k, what), &key_span);
            e = match did_you_mean(k, valid.iter().copied()) {
                Some(s) => e.help(format!(
                    "did you mean `{}`? valid keys: {}",
                    s,
                    valid.join(", ")
                )),
                None => e.help(format!("valid keys: {}", valid.join(", "))),
            };
            return Err(e);
        }
    }
    Ok(())
}

/// How many lines above its value [`key_span`] looks for a key.
const KEY_LOOKBACK: usize = 50;

/// Where a mapping key is written. The YAML tree keeps only values' positions, and a
/// null value's position is wherever the parser noticed it (often the next line), so
/// look for `key:` between the mapping's start and the value, nearest first; fall back
/// to the value's position.
pub(super) fn key_span(map: &Node, key: &str, value: &Node) -> Span {
    let file = &value.span.file;
    // The key is on the value's line or a few before it: look no further back than that,
    // so a mapping of 100,000 keys is not 100,000 walks of the file.
    let last = value.span.line.max(1);
    let first = map.span.line.max(1).max(last.saturating_sub(KEY_LOOKBACK));
    let candidates = [
        format!("{}:", key),
        format!("\"{}\":", key),
        format!("'{}':", key),
    ];
    for ln in (first..=last).rev() {
        let Some(line) = file.line(ln) else {
            continue;
        };
        for cand in &candidates {
            let mut from = 0;
            while let Some(off) = line[from..].find(cand.as_str()) {
                let at = from + off;
                from = at + cand.len();
                let before_ok = line[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| c.is_whitespace() || c == '{' || c == ',');
                let col = line[..at].chars().count() + 1;
                let before_value = ln != value.span.line || col < value.span.col;
                if before_ok && before_value {
                    return Span {
                        file: file.clone(),
                        line: ln,
                        col,
                    };
                }
            }
        }
    }
    value.span.clone()
}

/// A variables mapping (`null` = none), or an error naming what it belongs to. Every
/// inventory variable mapping (host, group, global; both forms) passes here, so the
/// connection settings are checked here once: see [`check_connection_vars`].
pub(super) fn vars_map(node: &Node, what: &str) -> Result<VarMap> {
    check_connection_vars(node, what)?;
    match node.to_value() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(VarMap::new()),
        _ => Err(node.expected(&format!("a mapping of variables for {}", what))),
    }
}

pub(super) fn scalar_name(node: &Node) -> Option<String> {
    match &node.value {
        Yaml::Str(s) => Some(s.clone()),
        Yaml::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// A list of names (KubeKey's `hosts: [a, b]`, `groups: [x]`); one bare name is accepted too.
pub(super) fn name_list(node: &Node, what: &str) -> Result<Vec<(String, Span)>> {
    match &node.value {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Seq(items) => items
            .iter()
            .map(|i| {
                scalar_name(i)
                    .map(|s| (s, i.span.clone()))
                    .ok_or_else(|| i.expected(&format!("a name in {}", what)))
            })
            .collect(),
        _ => match scalar_name(node) {
            Some(s) => Ok(vec![(s, node.span.clone())]),
            None => Err(node.expected(&format!("a list of names for {}", what))),
        },
    }
}

/// Checks the connection settings among a mapping's variables when the inventory loads,
/// where their place is known (a bad port is not "unreachable" at the first task): the
/// ports (`ansible_port`, `ansible_ssh_port`, `connector.port`) are 1 to 65535 and the
/// connection type (`ansible_connection`, `connector.type`) one kk drives. A templated
/// value (`{{ … }}`) is checked when rendered, by the connection.
fn check_connection_vars(node: &Node, what: &str) -> Result<()> {
    let templated = |n: &Node| n.as_str().is_some_and(|s| s.contains("{{"));
    let check = |n: &Node, name: &str, f: &dyn Fn(&Value) -> std::result::Result<(), String>| {
        if n.is_null() || templated(n) {
            return Ok(());
        }
        f(&n.to_value()).map_err(|m| Error::syntax(format!("{}: `{}`: {}", what, name, m), &n.span))
    };
    let port = |v: &Value| crate::connect::parse_port(v).map(|_| ());
    let kind = |v: &Value| match v {
        Value::String(s) if s.is_empty() => Ok(()),
        Value::String(s) => crate::connect::check_connection_type(s),
        other => Err(format!("expected a connection type, found {}", other)),
    };
    for (k, v) in node.entries() {
        match k.as_str() {
            "ansible_port" | "ansible_ssh_port" => check(v, k, &port)?,
            "ansible_connection" => check(v, k, &kind)?,
            "connector" => {
                if let Some(p) = v.get("port") {
                    check(p, "connector.port", &port)?;
                }
                if let Some(t) = v.get("type") {
                    check(t, "connector.type", &kind)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
