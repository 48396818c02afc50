//! Ansible's `generator` inventory plugin: a YAML file with `plugin: generator`, `layers`
//! (named lists of values) and `hosts` (a templated `name` and templated `parents`, each
//! with optional `vars` and its own `parents`); one host per combination of the layers'
//! values, the last layer varying fastest (Python's `itertools.product`).

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result, Span};
use crate::template::{to_mj, Templar};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

use super::{too_many_hosts, Inventory, ALL, MAX_HOSTS};

/// What a parent is added to: a host (the generated one) or a group (a parent's parent).
enum Child<'a> {
    Host(&'a str),
    Group(&'a str),
}

impl Inventory {
    /// Generates the hosts and groups of a generator file (the caller rebuilds).
    pub(super) fn load_generator(&mut self, path: &Path, root: &Node) -> Result<()> {
        let fail = |span: &Span, msg: String| {
            Error::syntax(
                format!(
                    "failed to parse inventory {} with the generator plugin: {}",
                    path.display(),
                    msg
                ),
                span,
            )
        };
        let layers: Vec<(String, Vec<Value>)> = match root.get("layers") {
            Some(n) if matches!(n.value, Yaml::Map(_)) => {
                let mut out = Vec::new();
                for (k, v) in n.entries() {
                    match v.to_value() {
                        Value::Array(items) => out.push((k.clone(), items)),
                        _ => return Err(v.expected(&format!("a list of values for layer `{}`", k))),
                    }
                }
                out
            }
            Some(n) => return Err(n.expected("a mapping of layers (name: [values])")),
            None => return Err(fail(&root.span, "`layers` is missing".into())),
        };
        let hosts = match root.get("hosts") {
            Some(n) if matches!(n.value, Yaml::Map(_)) => n,
            Some(n) => return Err(n.expected("a mapping with the host `name` and its `parents`")),
            None => return Err(fail(&root.span, "`hosts` is missing".into())),
        };
        let name = hosts.get("name").map(Node::to_value).unwrap_or(Value::Null);
        let parents = hosts
            .get("parents")
            .map(Node::to_value)
            .unwrap_or(Value::Array(Vec::new()));
        let total = layers
            .iter()
            .try_fold(1usize, |acc, (_, v)| acc.checked_mul(v.len()))
            .unwrap_or(usize::MAX);
        if self.hosts.len().saturating_add(total) > MAX_HOSTS {
            return Err(too_many_hosts(&root.span));
        }
        let templar = Templar::new();
        let span = root.span.clone();
        let mut index = vec![0usize; layers.len()];
        if total == 0 {
            return Ok(());
        }
        for _ in 0..total {
            let vars: VarMap = layers
                .iter()
                .zip(&index)
                .map(|((k, vals), i)| (k.clone(), vals[*i].clone()))
                .collect();
            let ctx = to_mj(&Value::Object(vars));
            let host = template_name(&templar, &name, &ctx).map_err(|m| fail(&span, m))?;
            if host.is_empty() {
                return Err(fail(&span, "a generated host has no name".into()));
            }
            self.add_host_def(&host, &VarMap::new(), Some(&span));
            self.add_parents(&templar, Child::Host(&host), &parents, &ctx, 0)
                .map_err(|m| fail(&span, m))?;
            // Next combination: the last layer varies fastest.
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < layers[d].1.len() {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(())
    }

    fn add_parents(
        &mut self,
        templar: &Templar,
        child: Child<'_>,
        parents: &Value,
        ctx: &minijinja::Value,
        depth: usize,
    ) -> std::result::Result<(), String> {
        if depth > super::derive::MAX_GROUP_DEPTH {
            return Err("parents nest more than 64 deep".into());
        }
        let Value::Array(parents) = parents else {
            return Err("`parents` must be a list".into());
        };
        for p in parents {
            let Value::Object(p) = p else {
                return Err("each parent must be a mapping with a `name`".into());
            };
            let group = template_name(templar, p.get("name").unwrap_or(&Value::Null), ctx)?;
            let child_name = match &child {
                Child::Host(h) | Child::Group(h) => *h,
            };
            if group.is_empty() {
                return Err(format!("element {} has a parent with no name", child_name));
            }
            if group == ALL {
                return Err("`all` cannot be a generated parent group".into());
            }
            let mut vars = VarMap::new();
            if let Some(Value::Object(pv)) = p.get("vars") {
                for (k, v) in pv {
                    let v = match v {
                        Value::String(s) => templar.render_str(s, ctx).map_err(|e| e.message)?,
                        other => other.clone(),
                    };
                    vars.insert(k.clone(), v);
                }
            }
            let g = self.groups.entry(group.clone()).or_default();
            for (k, v) in vars {
                g.vars.insert(k, v);
            }
            match child {
                Child::Host(h) => {
                    g.hosts.insert(h.to_string());
                }
                Child::Group(c) => {
                    g.children.entry(c.to_string()).or_insert(None);
                }
            }
            let grand = p
                .get("parents")
                .cloned()
                .unwrap_or(Value::Array(Vec::new()));
            self.add_parents(templar, Child::Group(&group), &grand, ctx, depth + 1)?;
        }
        Ok(())
    }
}

/// A templated name as text (a non-string name is taken as it is).
fn template_name(
    templar: &Templar,
    v: &Value,
    ctx: &minijinja::Value,
) -> std::result::Result<String, String> {
    let out = match v {
        Value::String(s) => templar.render_str(s, ctx).map_err(|e| e.message)?,
        other => other.clone(),
    };
    Ok(match out {
        Value::Null => String::new(),
        Value::String(s) => s,
        other => other.to_string(),
    })
}
