//! Ansible's YAML inventory form: groups (under `all:` or at the top) with `hosts`,
//! `children` and `vars`, nested to any depth, host keys with ranges and ports.
//!
//! Ansible's inventory files work unchanged with kk, so the accepted shapes (lists, single
//! names, null sections) follow Ansible's YAML inventory plugin.

use serde_json::Value;

use crate::error::{did_you_mean, Error, Result, Span};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

use super::derive::combine_vars;
use super::node::{key_span, scalar_name, vars_map};
use super::ranges::expand_host;
use super::{too_many_hosts, Inventory, ALL, MAX_HOSTS};

impl Inventory {
    /// Reads Ansible's YAML form: top-level groups (`all:` or others) with `hosts`,
    /// `children` and `vars`.
    pub(super) fn load_ansible(&mut self, root: &Node) -> Result<()> {
        for (name, node) in root.entries() {
            if matches!(name.as_str(), "hosts" | "children" | "vars") {
                return Err(Error::syntax(
                    format!(
                        "`{}:` at the top of an Ansible inventory must be inside a group",
                        name
                    ),
                    &key_span(root, name, node),
                )
                .help(format!(
                    "indent it under `all:`, i.e. `all: {{{}: ...}}`",
                    name
                )));
            }
            if name == ALL {
                self.ansible_group(ALL, node, 0)?;
            } else {
                self.groups.entry(name.clone()).or_default();
                self.ansible_group(name, node, 0)?;
            }
        }
        Ok(())
    }

    /// Reads one group of Ansible's YAML form (`hosts`, `children`, `vars`), in file key order.
    fn ansible_group(&mut self, gname: &str, node: &Node, depth: usize) -> Result<()> {
        if depth > super::derive::MAX_GROUP_DEPTH {
            return Err(Error::syntax(
                "groups are nested more than 64 deep",
                &node.span,
            ));
        }
        if node.is_null() {
            return Ok(());
        }
        if !matches!(node.value, Yaml::Map(_)) {
            return Err(node
                .expected(&format!("a mapping for group `{}`", gname))
                .help("a group holds `hosts:`, `children:` and `vars:`"));
        }
        for (key, value) in node.entries() {
            match key.as_str() {
                "vars" => {
                    let vars = vars_map(value, &format!("vars of group `{}`", gname))?;
                    // A group given twice: Ansible's set_variable, key by key.
                    let deep = self.kubekey_form;
                    if gname == ALL {
                        combine_vars(deep, &mut self.all_vars, &vars);
                    } else {
                        combine_vars(
                            deep,
                            &mut self.groups.entry(gname.to_string()).or_default().vars,
                            &vars,
                        );
                    }
                }
                "hosts" => {
                    for (raw, vars_node, span) in
                        ansible_entries(value, &format!("`hosts` of group `{}`", gname))?
                    {
                        let mut vars = match vars_node {
                            Some(n) => vars_map(n, &format!("host `{}`", raw))?,
                            None => VarMap::new(),
                        };
                        let (names, port) = expand_host(&raw, &span)?;
                        if self.hosts.len().saturating_add(names.len()) > MAX_HOSTS {
                            return Err(too_many_hosts(&span));
                        }
                        if let Some(port) = port {
                            vars.entry("ansible_port".to_string())
                                .or_insert(Value::from(port));
                        }
                        for h in names {
                            self.add_host_def(&h, &vars, Some(&span));
                            if gname == ALL {
                                self.all_direct.insert(h.clone());
                            } else {
                                let g = self.groups.entry(gname.to_string()).or_default();
                                g.hosts.insert(h);
                            }
                        }
                    }
                }
                "children" => {
                    let children =
                        ansible_entries(value, &format!("`children` of group `{}`", gname))?;
                    for (child, child_node, span) in children {
                        if child == ALL {
                            return Err(Error::syntax(
                                "`all` cannot be a child group: it is the top of every inventory",
                                &span,
                            ));
                        }
                        self.groups.entry(child.clone()).or_default();
                        if gname == ALL {
                            self.all_children.insert(child.clone());
                        } else {
                            let g = self.groups.entry(gname.to_string()).or_default();
                            g.children
                                .entry(child.clone())
                                .or_insert_with(|| Some(span.clone()));
                        }
                        if let Some(n) = child_node {
                            self.ansible_group(&child, n, depth + 1)?;
                        }
                    }
                }
                other => {
                    let mut e = Error::syntax(
                        format!("unexpected key `{}` in group `{}`: a group holds only `hosts`, `children` and `vars`", other, gname),
                        &key_span(node, other, value),
                    );
                    if let Some(s) = did_you_mean(other, ["hosts", "children", "vars"]) {
                        e = e.help(format!("did you mean `{}`?", s));
                    } else {
                        e = e.help(format!(
                            "to make `{}` a child group, put it under `children:`",
                            other
                        ));
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

/// Ansible's `hosts:` / `children:` sections: a mapping of names to (optional) content;
/// a list of names or one name is accepted too.
fn ansible_entries<'a>(
    node: &'a Node,
    what: &str,
) -> Result<Vec<(String, Option<&'a Node>, Span)>> {
    match &node.value {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Map(entries) => Ok(entries
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    if v.is_null() { None } else { Some(v) },
                    key_span(node, k, v),
                )
            })
            .collect()),
        Yaml::Seq(items) => items
            .iter()
            .map(|i| {
                scalar_name(i)
                    .map(|s| (s, None, i.span.clone()))
                    .ok_or_else(|| i.expected(&format!("a name in {}", what)))
            })
            .collect(),
        _ => match scalar_name(node) {
            Some(s) => Ok(vec![(s, None, node.span.clone())]),
            None => Err(node.expected(&format!("a mapping of names for {}", what))),
        },
    }
}
