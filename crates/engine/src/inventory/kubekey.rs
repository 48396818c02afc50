//! KubeKey's inventory form: `kind: Inventory` with `spec.hosts` (each host's variables,
//! including KubeKey's `connector`), `spec.groups` (`hosts` and child `groups`) and
//! `spec.vars`, read into the shared model with KubeKey's error wording.

use crate::error::{did_you_mean, Error, Result};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

use super::node::{check_keys, name_list, vars_map};
use super::ranges::check_host_name;
use super::{GroupDef, HostDef, Inventory, ALL, MAX_HOSTS};

impl Inventory {
    /// Reads KubeKey's form: `kind: Inventory` with `spec: {hosts, groups, vars}`.
    pub(super) fn load_kubekey(&mut self, root: &Node) -> Result<()> {
        self.kubekey_form = true;
        match root.get("kind") {
            Some(k) if k.as_str() == Some("Inventory") => {}
            Some(k) => {
                let found = k.as_str().map(|s| format!("`{}`", s)).unwrap_or_else(|| k.type_name().to_string());
                let mut e = Error::syntax(format!("expected `kind: Inventory`, found kind {}", found), &k.span);
                if k.as_str() == Some("Config") {
                    e = e.help("this is a config file: pass it with `-c`, and the inventory with `-i`");
                }
                return Err(e);
            }
            None => {
                return Err(Error::syntax("missing `kind: Inventory`", &root.span)
                    .help("a KubeKey inventory starts with `apiVersion: kubekey.kubesphere.io/v1` and `kind: Inventory`"))
            }
        }
        check_keys(
            root,
            &["apiVersion", "kind", "metadata", "spec", "status"],
            "an inventory",
        )?;
        let Some(spec) = root.get("spec") else {
            return Ok(());
        };
        if spec.is_null() {
            return Ok(());
        }
        if !matches!(spec.value, Yaml::Map(_)) {
            return Err(spec.expected("a mapping for `spec`"));
        }
        check_keys(spec, &["hosts", "groups", "vars"], "`spec`")?;
        if let Some(vars) = spec.get("vars") {
            self.all_vars = vars_map(vars, "`spec.vars`")?;
        }
        if let Some(hosts) = spec.get("hosts") {
            if !hosts.is_null() && !matches!(hosts.value, Yaml::Map(_)) {
                return Err(hosts
                    .expected("a mapping of host names to variables for `spec.hosts`")
                    .help("write `hosts: {node1: {connector: {host: 10.0.0.1}}, node2: {}}`"));
            }
            for (name, node) in hosts.entries() {
                if self.hosts.len() >= MAX_HOSTS {
                    return Err(super::too_many_hosts(&node.span));
                }
                check_host_name(name, &node.span)?;
                let vars = vars_map(node, &format!("host `{}`", name))?;
                self.all_direct.insert(name.clone());
                self.hosts.insert(
                    name.clone(),
                    HostDef {
                        vars,
                        span: Some(node.span.clone()),
                    },
                );
            }
        }
        let Some(groups) = spec.get("groups") else {
            return Ok(());
        };
        if groups.is_null() {
            return Ok(());
        }
        if !matches!(groups.value, Yaml::Map(_)) {
            return Err(groups.expected("a mapping of group names for `spec.groups`"));
        }
        // Looked up once per child group named: a set, not a walk of the mapping.
        let group_names: std::collections::HashSet<&str> =
            groups.entries().iter().map(|(k, _)| k.as_str()).collect();
        for (gname, gnode) in groups.entries() {
            if gname == ALL {
                return Err(Error::syntax(
                    "`all` is a reserved group (every host is in it)",
                    &gnode.span,
                )
                .help("put variables for every host under `spec.vars`"));
            }
            let mut def = GroupDef::default();
            if !gnode.is_null() {
                if !matches!(gnode.value, Yaml::Map(_)) {
                    return Err(gnode
                        .expected(&format!("a mapping for group `{}`", gname))
                        .help("write `group: {hosts: [node1], groups: [child], vars: {k: v}}`"));
                }
                check_keys(
                    gnode,
                    &["hosts", "groups", "vars"],
                    &format!("group `{}`", gname),
                )?;
                if let Some(hosts) = gnode.get("hosts") {
                    for (h, span) in name_list(hosts, &format!("`hosts` of group `{}`", gname))? {
                        if !self.hosts.contains_key(&h) {
                            if h == "localhost" {
                                // The controller may be named without being defined (KubeKey's default inventory).
                                self.hosts.insert(
                                    h.clone(),
                                    HostDef {
                                        vars: VarMap::new(),
                                        span: Some(span),
                                    },
                                );
                            } else {
                                let mut e = Error::syntax(
                                    format!("group `{}` lists host `{}`, which is not defined in `spec.hosts`", gname, h),
                                    &span,
                                );
                                e = match did_you_mean(&h, self.hosts.keys().map(String::as_str)) {
                                    Some(s) => e.help(format!("did you mean `{}`?", s)),
                                    None => e.help(format!("add `{}:` under `spec.hosts`", h)),
                                };
                                return Err(e);
                            }
                        }
                        def.hosts.insert(h);
                    }
                }
                if let Some(children) = gnode.get("groups") {
                    for (c, span) in name_list(children, &format!("`groups` of group `{}`", gname))?
                    {
                        if !group_names.contains(c.as_str()) {
                            let mut e = Error::syntax(
                                format!("group `{}` has child group `{}`, which is not defined in `spec.groups`", gname, c),
                                &span,
                            );
                            if let Some(s) =
                                did_you_mean(&c, groups.entries().iter().map(|(k, _)| k.as_str()))
                            {
                                e = e.help(format!("did you mean `{}`?", s));
                            }
                            return Err(e);
                        }
                        def.children.entry(c).or_insert(Some(span));
                    }
                }
                if let Some(vars) = gnode.get("vars") {
                    def.vars = vars_map(vars, &format!("vars of group `{}`", gname))?;
                }
            }
            self.groups.insert(gname.clone(), def);
        }
        Ok(())
    }
}
