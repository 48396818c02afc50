//! Ansible's `constructed` inventory plugin: a YAML file with `plugin: constructed` that
//! adds variables (`compose`) and groups (`groups` by condition, `keyed_groups` by value)
//! to the hosts the earlier sources defined, with Jinja expressions.
//!
//! What the expressions see is what Ansible's plugin sees: each host's own variables and
//! those of the groups it is in (with their parents), `inventory_hostname` and
//! `group_names`; not `all`'s variables unless an earlier source put the host in `all`
//! itself (Ansible adds hosts to `all` only after every source is read), and not
//! group_vars/host_vars files.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result, Span};
use crate::template::{to_json, Templar};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

use super::node::key_span;
use super::{Inventory, ALL};
use crate::template::pydump::py_str;

/// The options of a constructed file, read from its YAML.
struct Config {
    strict: bool,
    leading_separator: bool,
    compose: Vec<(String, Value)>,
    groups: Vec<(String, Value)>,
    keyed: Vec<(VarMap, Span)>,
}

/// Ansible's `to_safe_group_name(force=True)`: a leading digit or non-word character and
/// every other non-word character become `_`.
pub(super) fn safe_group_name(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            let word = c.is_alphanumeric() || c == '_';
            if !word || (i == 0 && c.is_numeric()) {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The variables as a template context that templates a variable when it is read, as
/// Ansible's lazy variables do (`x: "{{ y }}"` is y's value in an expression).
fn lazy_context(templar: &std::sync::Arc<Templar>, vars: &VarMap) -> minijinja::Value {
    use crate::vars::{Layers, Magic, VarView};
    let magic_keys = [
        "inventory_hostname",
        "inventory_hostname_short",
        "group_names",
    ];
    let mut magic = VarMap::new();
    let mut plain = VarMap::new();
    for (k, v) in vars {
        if magic_keys.contains(&k.as_str()) {
            magic.insert(k.clone(), v.clone());
        } else {
            plain.insert(k.clone(), v.clone());
        }
    }
    let magic = Magic {
        values: vec![std::sync::Arc::new(magic)],
        hostvars: None,
    };
    VarView::new(
        Layers::from_maps(vec![std::sync::Arc::new(plain)]),
        magic,
        templar.clone(),
    )
    .context()
}

/// Ansible's `should_default_value`: None or an empty string.
fn is_blank(v: &Value) -> bool {
    v.is_null() || v.as_str() == Some("")
}

fn bool_opt(node: &Node, key: &str, default: bool) -> Result<bool> {
    match node.get(key) {
        None => Ok(default),
        Some(n) => match &n.value {
            Yaml::Null => Ok(default),
            _ => match n.to_value() {
                Value::Bool(b) => Ok(b),
                Value::String(s) => match s.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "on" | "y" | "1" => Ok(true),
                    "no" | "false" | "off" | "n" | "0" => Ok(false),
                    _ => Err(n.expected(&format!("a boolean for `{}`", key))),
                },
                _ => Err(n.expected(&format!("a boolean for `{}`", key))),
            },
        },
    }
}

fn read_config(root: &Node) -> Result<Config> {
    let mut cfg = Config {
        strict: bool_opt(root, "strict", false)?,
        leading_separator: bool_opt(root, "leading_separator", true)?,
        compose: Vec::new(),
        groups: Vec::new(),
        keyed: Vec::new(),
    };
    for key in ["use_extra_vars", "use_vars_plugins"] {
        if bool_opt(root, key, false)? {
            let n = root.get(key).expect("set when true");
            return Err(Error::syntax(
                format!("the constructed plugin's `{}` is not supported by kk", key),
                &key_span(root, key, n),
            )
            .help("remove it: kk's constructed sees the hosts' inventory variables only"));
        }
    }
    for (key, out) in [("compose", &mut cfg.compose), ("groups", &mut cfg.groups)] {
        let Some(n) = root.get(key) else { continue };
        match &n.value {
            Yaml::Null => {}
            Yaml::Map(_) => {
                for (k, v) in n.entries() {
                    out.push((k.clone(), v.to_value()));
                }
            }
            _ => return Err(n.expected(&format!("a mapping for `{}`", key))),
        }
    }
    if let Some(n) = root.get("keyed_groups") {
        match &n.value {
            Yaml::Null => {}
            Yaml::Seq(items) => {
                for i in items {
                    match i.to_value() {
                        Value::Object(m) => cfg.keyed.push((m, i.span.clone())),
                        // Ansible skips empty entries and refuses other ones.
                        Value::Null => {}
                        _ => {
                            return Err(i
                                .expected("a keyed group entry (a mapping with `key`)")
                                .help("write `- key: <expression>` with `prefix`, `separator`, `parent_group`…"))
                        }
                    }
                }
            }
            _ => return Err(n.expected("a list for `keyed_groups`")),
        }
    }
    Ok(cfg)
}

impl Inventory {
    /// Applies a constructed file to the hosts loaded so far (the caller rebuilds).
    pub(super) fn load_constructed(&mut self, path: &Path, root: &Node) -> Result<()> {
        let cfg = read_config(root)?;
        let templar = std::sync::Arc::new(Templar::new());
        let fail = |span: &Span, msg: String| {
            Error::syntax(
                format!(
                    "failed to parse inventory {} with the constructed plugin: {}",
                    path.display(),
                    msg
                ),
                span,
            )
        };
        // The expressions see inventory variables as they are now, without the
        // group_vars/host_vars files.
        let dirs = std::mem::take(&mut self.vars_dirs);
        let rebuilt = self.rebuild();
        self.vars_dirs = dirs;
        rebuilt?;
        let depth = self.depths();
        let visible_all: std::collections::HashSet<String> = self.all_children_hosts();
        let hosts: Vec<String> = self.hosts.keys().cloned().collect();
        for host in hosts {
            let mut vars = self.constructed_vars(&host, &depth, visible_all.contains(&host));
            let span = root.span.clone();
            for (name, expr) in &cfg.compose {
                let value = match expr {
                    Value::String(e) => templar
                        .eval_expr(e, &lazy_context(&templar, &vars))
                        .and_then(|v| to_json(&v, e)),
                    other => Ok(other.clone()),
                };
                match value {
                    Ok(v) => {
                        if let Some(h) = self.hosts.get_mut(&host) {
                            h.vars.insert(name.clone(), v);
                        }
                    }
                    Err(e) if cfg.strict => {
                        return Err(fail(
                            &span,
                            format!("could not set {} for host {}: {}", name, host, e.message),
                        ))
                    }
                    Err(_) => {}
                }
            }
            // Refetched: composed variables are host variables now.
            if let Some(h) = self.hosts.get(&host) {
                for (k, v) in &h.vars {
                    vars.insert(k.clone(), v.clone());
                }
            }
            let ctx = lazy_context(&templar, &vars);
            for (group, cond) in &cfg.groups {
                let group = safe_group_name(group);
                match templar.eval_truth(cond, &ctx) {
                    Ok(true) => self.put_host(&host, &group),
                    Ok(false) => {}
                    Err(e) if cfg.strict => {
                        return Err(fail(
                            &span,
                            format!(
                                "could not add host {} to group {}: {}",
                                host, group, e.message
                            ),
                        ))
                    }
                    Err(_) => {}
                }
            }
            for (keyed, kspan) in &cfg.keyed {
                self.keyed_group(&templar, &ctx, &host, keyed, &cfg, kspan)
                    .map_err(|m| fail(kspan, m))?;
            }
        }
        Ok(())
    }

    /// One `keyed_groups` entry for one host (Ansible's `_add_host_to_keyed_groups`).
    fn keyed_group(
        &mut self,
        templar: &Templar,
        ctx: &minijinja::Value,
        host: &str,
        keyed: &VarMap,
        cfg: &Config,
        _span: &Span,
    ) -> std::result::Result<(), String> {
        let key_expr = keyed.get("key").cloned().unwrap_or(Value::Null);
        let key = match &key_expr {
            Value::String(e) => match templar.eval_expr(e, ctx).and_then(|v| to_json(&v, e)) {
                Ok(v) => v,
                Err(e) if cfg.strict => {
                    return Err(format!(
                        "could not generate group for host {} from {} entry: {}",
                        host,
                        py_str(&key_expr),
                        e.message
                    ))
                }
                Err(_) => return Ok(()),
            },
            Value::Null if cfg.strict => {
                return Err(format!("a keyed group entry has no `key` (host {})", host))
            }
            Value::Null => return Ok(()),
            other => other.clone(),
        };
        let default_value = keyed.get("default_value").filter(|v| !v.is_null());
        let trailing = keyed.get("trailing_separator").filter(|v| !v.is_null());
        if trailing.is_some() && default_value.is_some() {
            return Err("parameters are mutually exclusive for keyed groups: default_value|trailing_separator".into());
        }
        let use_default = is_blank(&key) && default_value.is_some();
        if !(crate::template::truthy(&key) || use_default) {
            let empty_container = matches!(&key, Value::Array(a) if a.is_empty())
                || matches!(&key, Value::Object(m) if m.is_empty());
            if cfg.strict && !empty_container {
                return Err(format!(
                    "no key or key resulted empty for {} in host {}, invalid entry",
                    py_str(&key_expr),
                    host
                ));
            }
            return Ok(());
        }
        let text = |k: &str, default: &str| -> String {
            keyed
                .get(k)
                .filter(|v| !v.is_null())
                .map(py_str)
                .unwrap_or_else(|| default.to_string())
        };
        let prefix = text("prefix", "");
        let mut sep = text("separator", "_");
        let parent = match keyed.get("parent_group") {
            Some(Value::String(raw)) => match templar.render_str(raw, ctx) {
                Ok(v) if !is_blank(&v) && v != Value::String(crate::template::OMIT.into()) => {
                    Some(py_str(&v))
                }
                Ok(_) => None,
                Err(e) if cfg.strict => {
                    return Err(format!(
                        "could not generate parent group {} for group {}: {}",
                        raw,
                        py_str(&key),
                        e.message
                    ))
                }
                Err(_) => return Ok(()),
            },
            _ => None,
        };
        let default_name = default_value.map(py_str);
        let mut names: Vec<String> = Vec::new();
        if use_default {
            names.extend(default_name.clone());
        } else {
            match &key {
                Value::String(s) => names.push(s.clone()),
                Value::Array(items) => {
                    for i in items {
                        match (&default_name, is_blank(i)) {
                            (Some(d), true) => names.push(d.clone()),
                            _ => names.push(py_str(i)),
                        }
                    }
                }
                Value::Object(m) => {
                    for (gname, gval) in m {
                        let mut bare = format!("{}{}{}", gname, sep, py_str(gval));
                        if is_blank(gval) {
                            if let Some(d) = &default_name {
                                bare = format!("{}{}{}", gname, sep, d);
                            } else if trailing == Some(&Value::Bool(false)) {
                                bare = gname.clone();
                            } else {
                                bare = format!("{}{}", gname, sep);
                            }
                        }
                        names.push(bare);
                    }
                }
                other => {
                    return Err(format!(
                        "invalid group name format, expected a string or a list of them or dictionary, got: {} ({})",
                        py_str(other),
                        match other {
                            Value::Bool(_) => "bool",
                            Value::Number(n) if n.is_f64() => "float",
                            _ => "int",
                        }
                    ))
                }
            }
        }
        for bare in names {
            if prefix.is_empty() && !cfg.leading_separator {
                sep = String::new();
            }
            let group = safe_group_name(&format!("{}{}{}", prefix, sep, bare));
            self.put_host(host, &group);
            if let Some(p) = &parent {
                let p = safe_group_name(p);
                if p != ALL {
                    self.groups
                        .entry(p.clone())
                        .or_default()
                        .children
                        .entry(group.clone())
                        .or_insert(None);
                }
            }
        }
        Ok(())
    }

    /// Adds a host to a group, creating the group (Ansible's add_group + add_host).
    fn put_host(&mut self, host: &str, group: &str) {
        if group == ALL {
            self.all_direct.insert(host.to_string());
            return;
        }
        self.groups
            .entry(group.to_string())
            .or_default()
            .hosts
            .insert(host.to_string());
    }

    /// Hosts an earlier source put in `all` itself or under a group it made `all`'s child.
    fn all_children_hosts(&self) -> std::collections::HashSet<String> {
        let mut out: std::collections::HashSet<String> = self.all_direct.iter().cloned().collect();
        for g in &self.all_children {
            if let Some(m) = self.members.get(g) {
                out.extend(m.iter().cloned());
            }
        }
        out
    }

    /// What a constructed expression sees for a host: its groups' variables (by depth,
    /// priority, name), its own, and the magic `inventory_hostname`, `group_names`.
    fn constructed_vars(
        &self,
        host: &str,
        depth: &HashMap<String, usize>,
        sees_all: bool,
    ) -> VarMap {
        let mut vars = if sees_all {
            self.all_vars.clone()
        } else {
            VarMap::new()
        };
        let names = self.group_names(host);
        let mut groups: Vec<(usize, i64, &String)> = self
            .groups
            .iter()
            .filter(|(g, _)| names.contains(g))
            .map(|(g, def)| {
                (
                    depth.get(g).copied().unwrap_or(1),
                    super::derive::priority(&def.vars),
                    g,
                )
            })
            .collect();
        groups.sort();
        for (_, _, g) in groups {
            self.combine(&mut vars, &self.groups[g].vars);
        }
        if let Some(h) = self.hosts.get(host) {
            self.combine(&mut vars, &h.vars);
        }
        vars.insert("inventory_hostname".into(), Value::from(host));
        vars.insert(
            "inventory_hostname_short".into(),
            Value::from(host.split('.').next().unwrap_or(host)),
        );
        vars.insert("group_names".into(), Value::from(self.group_names(host)));
        vars
    }
}
