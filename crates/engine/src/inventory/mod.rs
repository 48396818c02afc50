//! Inventories: hosts, groups and their variables, in KubeKey's or Ansible's YAML form,
//! and host patterns that select from them. Order is always the file's order.
//!
//! Both forms load into one model: hosts with their own variables, groups with their
//! own hosts, child groups and variables, and global variables. Everything derived
//! from it (group members, `all`, `ungrouped`, each host's merged variables) is
//! computed once after loading and after every runtime change (`add_host`, `group_by`),
//! so lookups during a run are cheap and never fail.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::error::{did_you_mean, Error, ErrorKind, Result, Span};
use crate::vars::{merge_maps, VarMap};
use crate::yaml::{Node, Yaml};

pub mod pattern;

pub use pattern::LOCALHOST_NAMES;

/// A host as the inventory defines it.
#[derive(Debug, Clone, Default)]
struct HostDef {
    /// Host-level variables (merged when the host is listed several times).
    vars: VarMap,
    /// Where the host was first defined (none for hosts added at runtime).
    span: Option<Span>,
}

/// A group as the inventory defines it (before resolving children).
#[derive(Debug, Clone, Default)]
struct GroupDef {
    /// Hosts listed directly, in file order, de-duplicated.
    hosts: Vec<String>,
    /// Child groups in file order, each with where it was named.
    children: Vec<(String, Option<Span>)>,
    /// Group variables.
    vars: VarMap,
}

/// A loaded inventory.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// Every host in first-seen order (this is `all`).
    hosts: IndexMap<String, HostDef>,
    /// Variables for every host (`spec.vars` / `all.vars`).
    all_vars: VarMap,
    /// User groups in first-seen order; never `all`.
    groups: IndexMap<String, GroupDef>,
    /// Resolved members of every group, `all` and `ungrouped` first.
    members: IndexMap<String, Vec<String>>,
    /// Sorted group names per host (without `all`/`ungrouped`).
    group_names: HashMap<String, Vec<String>>,
    /// Merged inventory variables per host, including the implicit localhost.
    merged: HashMap<String, Arc<VarMap>>,
}

/// The top-level group, and the group of hosts in no other group: computed, never defined.
const ALL: &str = "all";
const UNGROUPED: &str = "ungrouped";

impl Default for Inventory {
    fn default() -> Self {
        Inventory::empty()
    }
}

impl Inventory {
    /// Definitions only; derived data is filled by `rebuild`.
    fn blank() -> Inventory {
        Inventory {
            hosts: IndexMap::new(),
            all_vars: VarMap::new(),
            groups: IndexMap::new(),
            members: IndexMap::new(),
            group_names: HashMap::new(),
            merged: HashMap::new(),
        }
    }

    /// An inventory with no hosts (only the implicit `localhost`).
    pub fn empty() -> Inventory {
        let mut inv = Inventory::blank();
        // Cannot fail: there are no groups, hence no cycles.
        let _ = inv.rebuild();
        inv
    }

    /// Reads an inventory file in either form (see [`Inventory::from_node`]).
    pub fn load(path: &Path) -> Result<Inventory> {
        let node = crate::yaml::load_file(path)?;
        Inventory::from_node(&node)
    }

    /// Builds an inventory from parsed YAML, detecting the form by content:
    /// a mapping with `kind:` (or `apiVersion:` and `spec:`) is KubeKey's, anything
    /// else is Ansible's YAML inventory.
    pub fn from_node(node: &Node) -> Result<Inventory> {
        let Yaml::Map(_) = &node.value else {
            return Err(node
                .expected("an inventory mapping")
                .help("write either `kind: Inventory` with `spec: {hosts, groups, vars}` (KubeKey) or `all: {hosts, children, vars}` (Ansible)"));
        };
        let mut inv = Inventory::blank();
        let is_kubekey = node.get("kind").is_some()
            || (node.get("apiVersion").is_some() && node.get("spec").is_some());
        if is_kubekey {
            inv.load_kubekey(node)?;
        } else {
            inv.load_ansible(node)?;
        }
        inv.rebuild()?;
        Ok(inv)
    }

    // ---------------------------------------------------------------- KubeKey form

    fn load_kubekey(&mut self, root: &Node) -> Result<()> {
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
                check_host_name(name, &node.span)?;
                let vars = vars_map(node, &format!("host `{}`", name))?;
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
                        if !def.hosts.contains(&h) {
                            def.hosts.push(h);
                        }
                    }
                }
                if let Some(children) = gnode.get("groups") {
                    for (c, span) in name_list(children, &format!("`groups` of group `{}`", gname))?
                    {
                        if groups.get(&c).is_none() {
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
                        if !def.children.iter().any(|(n, _)| *n == c) {
                            def.children.push((c, Some(span)));
                        }
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

    // ---------------------------------------------------------------- Ansible form

    fn load_ansible(&mut self, root: &Node) -> Result<()> {
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
        if depth > 64 {
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
                    if gname == ALL {
                        merge_maps(&mut self.all_vars, &vars);
                    } else {
                        merge_maps(
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
                        if let Some(port) = port {
                            vars.entry("ansible_port".to_string())
                                .or_insert(Value::from(port));
                        }
                        for h in names {
                            self.add_host_def(&h, &vars, Some(&span));
                            if gname != ALL {
                                let g = self.groups.entry(gname.to_string()).or_default();
                                if !g.hosts.contains(&h) {
                                    g.hosts.push(h);
                                }
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
                        if gname != ALL {
                            let g = self.groups.entry(gname.to_string()).or_default();
                            if !g.children.iter().any(|(n, _)| *n == child) {
                                g.children.push((child.clone(), Some(span.clone())));
                            }
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

    fn add_host_def(&mut self, name: &str, vars: &VarMap, span: Option<&Span>) {
        match self.hosts.get_mut(name) {
            Some(h) => merge_maps(&mut h.vars, vars),
            None => {
                self.hosts.insert(
                    name.to_string(),
                    HostDef {
                        vars: vars.clone(),
                        span: span.cloned(),
                    },
                );
            }
        }
    }

    // ---------------------------------------------------------------- derived data

    /// Recomputes members, group names and merged variables from the definitions.
    fn rebuild(&mut self) -> Result<()> {
        self.check_cycles()?;

        // Members: own hosts, then each child's members, de-duplicated.
        let mut resolved: HashMap<String, Vec<String>> = HashMap::new();
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for g in &names {
            self.resolve_members(g, &mut resolved);
        }

        let all: Vec<String> = self.hosts.keys().cloned().collect();
        let mut grouped: HashSet<&str> = HashSet::new();
        for (g, hosts) in &resolved {
            if g != UNGROUPED {
                grouped.extend(hosts.iter().map(String::as_str));
            }
        }
        let ungrouped: Vec<String> = all
            .iter()
            .filter(|h| !grouped.contains(h.as_str()))
            .cloned()
            .collect();
        let mut members = IndexMap::new();
        members.insert(ALL.to_string(), all.clone());
        members.insert(UNGROUPED.to_string(), ungrouped);
        for g in &names {
            if g != UNGROUPED {
                members.insert(g.clone(), resolved.remove(g).unwrap_or_default());
            }
        }

        // Group names per host, sorted.
        let mut group_names: HashMap<String, Vec<String>> = HashMap::new();
        for (g, hosts) in &members {
            if g == ALL || g == UNGROUPED {
                continue;
            }
            for h in hosts {
                group_names.entry(h.clone()).or_default().push(g.clone());
            }
        }
        for v in group_names.values_mut() {
            v.sort();
        }

        // Variable precedence: all, then groups by depth (parents first), then file order, then the host.
        let depth = self.depths();
        let mut order: Vec<(usize, usize, &String)> = self
            .groups
            .keys()
            .enumerate()
            .map(|(i, g)| (depth.get(g).copied().unwrap_or(1), i, g))
            .collect();
        order.sort();
        let direct_ungrouped: HashSet<&String> = self
            .groups
            .get(UNGROUPED)
            .map(|g| g.hosts.iter().collect())
            .unwrap_or_default();
        let member_sets: HashMap<&String, HashSet<&String>> = order
            .iter()
            .map(|(_, _, g)| {
                let set: HashSet<&String> = if *g == UNGROUPED {
                    direct_ungrouped.clone()
                } else {
                    members
                        .get(*g)
                        .map(|m| m.iter().collect())
                        .unwrap_or_default()
                };
                (*g, set)
            })
            .collect();
        let mut merged = HashMap::new();
        for (h, def) in &self.hosts {
            let mut vars = self.all_vars.clone();
            for (_, _, g) in &order {
                if member_sets[g].contains(h) {
                    merge_maps(&mut vars, &self.groups[*g].vars);
                }
            }
            merge_maps(&mut vars, &def.vars);
            if h == "localhost" && !says_connection(&vars) {
                vars.insert("ansible_connection".to_string(), Value::from("local"));
            }
            merged.insert(h.clone(), Arc::new(vars));
        }
        if !self.hosts.contains_key("localhost") {
            // Ansible's implicit localhost: the `all` variables, and a local connection.
            let mut vars = self.all_vars.clone();
            vars.insert("ansible_connection".to_string(), Value::from("local"));
            merged.insert("localhost".to_string(), Arc::new(vars));
        }

        self.members = members;
        self.group_names = group_names;
        self.merged = merged;
        Ok(())
    }

    fn resolve_members(&self, g: &str, resolved: &mut HashMap<String, Vec<String>>) -> Vec<String> {
        if let Some(m) = resolved.get(g) {
            return m.clone();
        }
        let Some(def) = self.groups.get(g) else {
            return Vec::new();
        };
        let mut out: IndexSet<String> = def.hosts.iter().cloned().collect();
        for (c, _) in &def.children {
            out.extend(self.resolve_members(c, resolved));
        }
        let out: Vec<String> = out.into_iter().collect();
        resolved.insert(g.to_string(), out.clone());
        out
    }

    /// Finds a cycle among child groups and reports it as `a -> b -> a`.
    fn check_cycles(&self) -> Result<()> {
        // 0 = unvisited, 1 = on the current path, 2 = done.
        let mut state: HashMap<&str, u8> = HashMap::new();
        let mut path: Vec<&str> = Vec::new();
        for g in self.groups.keys() {
            self.visit(g, None, &mut state, &mut path)?;
        }
        Ok(())
    }

    fn visit<'a>(
        &'a self,
        g: &'a str,
        via: Option<&'a Span>,
        state: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Result<()> {
        match state.get(g) {
            Some(2) => return Ok(()),
            Some(1) => {
                let start = path.iter().position(|p| *p == g).unwrap_or(0);
                let mut chain: Vec<&str> = path[start..].to_vec();
                chain.push(g);
                let e = Error::new(ErrorKind::Syntax, format!("child groups form a cycle: {}", chain.join(" -> ")))
                    .help("a group cannot contain itself, directly or through its children; remove one of these links");
                return Err(e.at_opt(via));
            }
            _ => {}
        }
        state.insert(g, 1);
        path.push(g);
        if let Some(def) = self.groups.get(g) {
            for (c, span) in &def.children {
                self.visit(c, span.as_ref(), state, path)?;
            }
        }
        path.pop();
        state.insert(g, 2);
        Ok(())
    }

    /// Depth of every group below `all`: 1 for top-level groups, else one more than its deepest parent.
    fn depths(&self) -> HashMap<String, usize> {
        let mut parents: HashMap<&str, Vec<&str>> = HashMap::new();
        for (g, def) in &self.groups {
            for (c, _) in &def.children {
                parents.entry(c.as_str()).or_default().push(g.as_str());
            }
        }
        fn depth_of<'a>(
            g: &'a str,
            parents: &HashMap<&'a str, Vec<&'a str>>,
            memo: &mut HashMap<String, usize>,
        ) -> usize {
            if let Some(d) = memo.get(g) {
                return *d;
            }
            let d = parents
                .get(g)
                .map(|ps| {
                    ps.iter()
                        .map(|p| depth_of(p, parents, memo))
                        .max()
                        .unwrap_or(0)
                })
                .unwrap_or(0)
                + 1;
            memo.insert(g.to_string(), d);
            d
        }
        let mut memo = HashMap::new();
        for g in self.groups.keys() {
            depth_of(g, &parents, &mut memo);
        }
        memo
    }

    // ---------------------------------------------------------------- queries

    /// Every host name in inventory order (`all`; never the implicit localhost).
    pub fn host_names(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }

    /// True for a host of the inventory and for `localhost` (always usable, listed or not).
    pub fn has_host(&self, host: &str) -> bool {
        host == "localhost" || self.hosts.contains_key(host)
    }

    /// Where a host was first defined, for messages about it.
    pub fn host_span(&self, host: &str) -> Option<&Span> {
        self.hosts.get(host).and_then(|h| h.span.as_ref())
    }

    /// The host's variables from the inventory, layers 3–5 of design §3 deep-merged:
    /// global vars, then group vars (parents before children, then file order), then
    /// host vars. Empty for an unknown host.
    ///
    /// `localhost` gets `ansible_connection: local` unless its variables choose a
    /// connection (`ansible_connection` or `connector.type`).
    pub fn host_vars(&self, host: &str) -> VarMap {
        self.merged
            .get(host)
            .map(|v| (**v).clone())
            .unwrap_or_default()
    }

    /// [`Inventory::host_vars`] without copying, ready to be a variable layer.
    pub fn host_vars_arc(&self, host: &str) -> Arc<VarMap> {
        self.merged.get(host).cloned().unwrap_or_default()
    }

    /// Selects hosts by an Ansible host pattern (see [`pattern`]): inventory order,
    /// de-duplicated, an implicit `localhost` last. Matching nothing is not an error
    /// (the caller warns); a malformed pattern is.
    pub fn select(&self, pattern: &str) -> Result<Vec<String>> {
        let all: IndexSet<String> = self.hosts.keys().cloned().collect();
        pattern::parse(pattern)?.evaluate(&all, &self.members)
    }

    /// `groups`: every group with its hosts, `all` and `ungrouped` first, then file order.
    pub fn groups(&self) -> IndexMap<String, Vec<String>> {
        self.members.clone()
    }

    /// `group_names`: the groups a host is in (directly or through a child group),
    /// sorted, without `all` and `ungrouped`.
    pub fn group_names(&self, host: &str) -> Vec<String> {
        self.group_names.get(host).cloned().unwrap_or_default()
    }

    // ---------------------------------------------------------------- runtime changes

    /// The `add_host` module: adds a host (or updates one: variables are deep-merged) and
    /// puts it in `groups`, creating groups that do not exist yet.
    pub fn add_host(&mut self, name: &str, groups: &[String], vars: VarMap) -> Result<()> {
        if name.trim().is_empty() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "add_host: the host name is empty",
            ));
        }
        self.add_host_def(name, &vars, None);
        for g in groups {
            self.put_in_group(name, g)?;
        }
        self.rebuild()
    }

    /// The `group_by` module: puts a known host into a group, creating the group if needed.
    pub fn add_to_group(&mut self, host: &str, group: &str) -> Result<()> {
        if !self.has_host(host) {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!("group_by: unknown host `{}`", host),
            ));
        }
        if host == "localhost" && !self.hosts.contains_key(host) {
            self.add_host_def(host, &VarMap::new(), None);
        }
        self.put_in_group(host, group)?;
        self.rebuild()
    }

    fn put_in_group(&mut self, host: &str, group: &str) -> Result<()> {
        let group = group.trim();
        if group.is_empty() {
            return Err(Error::new(ErrorKind::ModuleArgs, "a group name is empty"));
        }
        if group == ALL {
            return Ok(());
        }
        let g = self.groups.entry(group.to_string()).or_default();
        if !g.hosts.iter().any(|h| h == host) {
            g.hosts.push(host.to_string());
        }
        Ok(())
    }
}

/// True when variables already say how to connect (Ansible's or KubeKey's way).
fn says_connection(vars: &VarMap) -> bool {
    vars.contains_key("ansible_connection")
        || vars
            .get("connector")
            .and_then(|c| c.get("type"))
            .is_some_and(|t| !t.is_null() && t.as_str() != Some(""))
}

/// Errors on keys of a mapping that are not in `valid`, with a suggestion.
fn check_keys(node: &Node, valid: &[&str], what: &str) -> Result<()> {
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

/// Where a mapping key is written. The YAML tree keeps only values' positions, and a
/// null value's position is wherever the parser noticed it (often the next line), so
/// look for `key:` between the mapping's start and the value, nearest first; fall back
/// to the value's position.
fn key_span(map: &Node, key: &str, value: &Node) -> Span {
    let file = &value.span.file;
    let lines: Vec<&str> = file.text.lines().collect();
    let first = map.span.line.max(1);
    let last = value.span.line.max(first);
    let candidates = [
        format!("{}:", key),
        format!("\"{}\":", key),
        format!("'{}':", key),
    ];
    for ln in (first..=last).rev() {
        let Some(line) = lines.get(ln - 1) else {
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

/// A variables mapping (`null` = none), or an error naming what it belongs to.
fn vars_map(node: &Node, what: &str) -> Result<VarMap> {
    match node.to_value() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(VarMap::new()),
        _ => Err(node.expected(&format!("a mapping of variables for {}", what))),
    }
}

fn scalar_name(node: &Node) -> Option<String> {
    match &node.value {
        Yaml::Str(s) => Some(s.clone()),
        Yaml::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// A list of names (KubeKey's `hosts: [a, b]`, `groups: [x]`); one bare name is accepted too.
fn name_list(node: &Node, what: &str) -> Result<Vec<(String, Span)>> {
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

/// Expands an Ansible host key: `name:port` and ranges `web[01:03].example.com`, `db-[a:c]`,
/// `n[0:10:5]`. Returns the names and the port, if any.
fn expand_host(raw: &str, span: &Span) -> Result<(Vec<String>, Option<u16>)> {
    let mut name = raw.trim().to_string();
    let mut port = None;
    // `[ipv6]:port`
    if let Some((addr, p)) = name.strip_prefix('[').and_then(|r| r.split_once("]:")) {
        if addr.parse::<std::net::Ipv6Addr>().is_ok() {
            port = Some(p.parse::<u16>().map_err(|_| {
                Error::syntax(
                    format!("host `{}`: port `{}` is not a valid port number", raw, p),
                    span,
                )
            })?);
            name = addr.to_string();
        }
    }
    // `host:port`, but not IPv6 addresses (more than one colon) nor ranges (`[1:3]`).
    if let Some((h, p)) = name.rsplit_once(':') {
        if !h.contains(':')
            && !p.contains(']')
            && !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
        {
            port = Some(p.parse::<u16>().map_err(|_| {
                Error::syntax(
                    format!("host `{}`: port `{}` is not a valid port number", raw, p),
                    span,
                )
            })?);
            name = h.to_string();
        }
    }
    check_host_name(&name, span)?;
    // A bare IPv6 address (or `[addr]`) is one host, never a range.
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok((vec![bare.to_string()], port));
    }
    let names = expand_ranges(&name).map_err(|msg| {
        Error::syntax(format!("host range `{}`: {}", raw, msg), span)
            .help("ranges are written `web[01:10]`, `web[1:10:2]` (step) or `db-[a:f]`")
    })?;
    Ok((names, port))
}

/// Rejects host names that host patterns could not select.
fn check_host_name(name: &str, span: &Span) -> Result<()> {
    if name.is_empty() || name.contains([',', ' ', '\t', '&', '!', '~', '|']) {
        return Err(Error::syntax(
            format!("`{}` is not a usable host name: it cannot be empty or contain spaces, `,`, `&`, `!`, `~` or `|`", name),
            span,
        ));
    }
    Ok(())
}

/// Ansible's `expand_hostname_range`, recursively for several ranges.
fn expand_ranges(name: &str) -> std::result::Result<Vec<String>, String> {
    let Some(open) = name.find('[') else {
        if name.contains(']') {
            return Err("`]` without `[`".to_string());
        }
        return Ok(vec![name.to_string()]);
    };
    let close = name[open..]
        .find(']')
        .map(|i| open + i)
        .ok_or("unclosed `[`")?;
    let (head, inner, tail) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    let parts: Vec<&str> = inner.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!(
            "`[{}]` is not `[start:end]` or `[start:end:step]`",
            inner
        ));
    }
    let (beg, end) = (parts[0], parts[1]);
    let step: usize = match parts.get(2) {
        Some(s) => s
            .parse()
            .ok()
            .filter(|s| *s > 0)
            .ok_or(format!("step `{}` is not a positive number", s))?,
        None => 1,
    };
    let mut items = Vec::new();
    let is_alpha = |s: &str| s.len() == 1 && s.bytes().all(|b| b.is_ascii_alphabetic());
    if is_alpha(beg) && is_alpha(end) {
        let (b, e) = (beg.as_bytes()[0], end.as_bytes()[0]);
        if b > e {
            return Err(format!("range start `{}` is after its end `{}`", beg, end));
        }
        items.extend((b..=e).step_by(step).map(|c| (c as char).to_string()));
    } else {
        let beg_str = if beg.is_empty() { "0" } else { beg };
        let b: u64 = beg_str
            .parse()
            .map_err(|_| format!("`{}` is not a number or a letter", beg))?;
        let e: u64 = end
            .parse()
            .map_err(|_| format!("`{}` is not a number or a letter", end))?;
        if b > e {
            return Err(format!("range start `{}` is after its end `{}`", beg, end));
        }
        if (e - b) / step as u64 > 100_000 {
            return Err("more than 100000 hosts".to_string());
        }
        let width = if beg_str.len() > 1 && beg_str.starts_with('0') {
            beg_str.len()
        } else {
            0
        };
        if width > 0 && end.len() != width {
            return Err(format!(
                "`{}` and `{}` must have the same number of digits",
                beg, end
            ));
        }
        items.extend(
            (b..=e)
                .step_by(step)
                .map(|i| format!("{:0width$}", i, width = width)),
        );
    }
    let tails = expand_ranges(tail)?;
    let mut out = Vec::new();
    for i in &items {
        for t in &tails {
            out.push(format!("{}{}{}", head, i, t));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/inventory")
            .join(name)
    }

    fn load(name: &str) -> Inventory {
        match Inventory::load(&fixture(name)) {
            Ok(i) => i,
            Err(e) => panic!("{}", e.render()),
        }
    }

    fn load_err(name: &str) -> Error {
        Inventory::load(&fixture(name)).expect_err("expected an error")
    }

    fn parse(text: &str) -> Result<Inventory> {
        Inventory::from_node(&crate::yaml::parse_str("inv.yaml", text)?)
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn kubekey_groups_in_file_order() {
        let inv = load("kubekey.yaml");
        assert_eq!(inv.host_names(), ["node1", "node2", "node3", "localhost"]);
        let g = inv.groups();
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            [
                "all",
                "ungrouped",
                "k8s_cluster",
                "kube_control_plane",
                "kube_worker",
                "etcd",
                "image_registry",
                "nfs"
            ]
        );
        // Own hosts, then children in the order listed (not KubeKey's later-child-first).
        assert_eq!(g["k8s_cluster"], ["node1", "node2"]);
        assert_eq!(g["image_registry"], ["node3", "localhost"]);
        assert!(g["ungrouped"].is_empty());
        assert!(g["nfs"].is_empty());
        assert_eq!(
            inv.group_names("node1"),
            ["etcd", "k8s_cluster", "kube_control_plane", "kube_worker"]
        );
        assert_eq!(inv.group_names("node3"), ["image_registry"]);
        assert!(inv.group_names("nosuch").is_empty());
    }

    #[test]
    fn kubekey_vars_precedence() {
        let inv = load("kubekey.yaml");
        let v = inv.host_vars("node1");
        // spec.vars < k8s_cluster (depth 1) < kube_control_plane < kube_worker (depth 2, file order) < host.
        assert_eq!(v["role"], json!("worker"));
        assert_eq!(
            v["kubernetes"],
            json!({"kube_version": "v1.30.0", "cluster_name": "demo", "kubelet": {"max_pods": 200, "pod_pids_limit": 10000}})
        );
        assert_eq!(v["connector"]["password"], json!("secret"));
        assert_eq!(v["ntp_servers"], json!(["cn.pool.ntp.org"]));
        assert_eq!(inv.host_vars("node3")["role"], json!("none"));
        assert!(!inv.host_vars("node1").contains_key("ansible_connection"));
        // localhost named by a group: a host now, local connection by default.
        let lh = inv.host_vars("localhost");
        assert_eq!(lh["ansible_connection"], json!("local"));
        assert_eq!(lh["role"], json!("none"));
        assert!(inv.host_vars("nosuch").is_empty());
        assert!(Arc::ptr_eq(
            &inv.host_vars_arc("node1"),
            &inv.host_vars_arc("node1")
        ));
    }

    #[test]
    fn ansible_form() {
        let inv = load("ansible.yaml");
        assert_eq!(
            inv.host_names(),
            [
                "bastion",
                "web01.example.com",
                "web02.example.com",
                "web03.example.com",
                "db1",
                "db2",
                "db-a",
                "db-b",
                "extra1"
            ]
        );
        let g = inv.groups();
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            [
                "all",
                "ungrouped",
                "web",
                "db",
                "db_primary",
                "db_replica",
                "prod",
                "staging"
            ]
        );
        assert_eq!(g["db"], ["db1", "db2", "db-a", "db-b"]);
        assert_eq!(g["ungrouped"], ["bastion"]);
        assert_eq!(g["staging"], ["web03.example.com", "extra1"]);
        assert_eq!(inv.group_names("db1"), ["db", "db_primary", "prod"]);

        let db1 = inv.host_vars("db1");
        assert_eq!(db1["tier"], json!("db-primary")); // db < prod (depth 1) < db_primary (depth 2)
        assert_eq!(db1["ansible_port"], json!(2222));
        assert_eq!(db1["ansible_host"], json!("10.0.1.1"));
        assert_eq!(db1["ansible_user"], json!("admin"));
        let web01 = inv.host_vars("web01.example.com");
        assert_eq!(web01["tier"], json!("prod"));
        assert_eq!(web01["pinned"], json!(true));
        assert_eq!(
            web01["dns"],
            json!({"servers": ["1.1.1.1"], "search": ["web.lan"]})
        );
        assert_eq!(inv.host_vars("web02.example.com")["http_port"], json!(8080));
        assert_eq!(inv.host_vars("web03.example.com")["tier"], json!("web"));
        assert_eq!(inv.host_vars("bastion").get("tier"), None);
        let span = |h: &str| inv.host_span(h).map(|s| (s.line, s.col));
        assert_eq!(span("bastion"), Some((6, 5)));
        assert_eq!(span("db2"), Some((28, 13)));
        assert_eq!(span("web02.example.com"), Some((8, 5)));
    }

    #[test]
    fn implicit_localhost() {
        let inv = load("ansible.yaml");
        assert!(!inv.host_names().contains(&"localhost".to_string()));
        assert!(!inv.groups()["all"].contains(&"localhost".to_string()));
        assert_eq!(inv.select("localhost").unwrap(), ["localhost"]);
        assert_eq!(inv.select("all").unwrap().len(), 9);
        let lh = inv.host_vars("localhost");
        assert_eq!(lh["ansible_connection"], json!("local"));
        assert_eq!(lh["ansible_user"], json!("admin"));
        assert!(inv.has_host("localhost"));
        assert!(inv.group_names("localhost").is_empty());

        let e = Inventory::empty();
        assert!(e.host_names().is_empty());
        assert_eq!(e.groups().keys().collect::<Vec<_>>(), ["all", "ungrouped"]);
        assert_eq!(e.select("localhost").unwrap(), ["localhost"]);
        assert_eq!(
            e.host_vars("localhost")["ansible_connection"],
            json!("local")
        );
        assert!(e.select("all").unwrap().is_empty());
    }

    #[test]
    fn listed_localhost_keeps_its_connection() {
        let inv = parse("all:\n  hosts:\n    localhost: {ansible_connection: ssh}\n").unwrap();
        assert_eq!(inv.host_names(), ["localhost"]);
        assert_eq!(
            inv.host_vars("localhost")["ansible_connection"],
            json!("ssh")
        );
        let inv =
            parse("kind: Inventory\nspec:\n  hosts:\n    localhost: {connector: {type: ssh}}\n")
                .unwrap();
        assert!(!inv
            .host_vars("localhost")
            .contains_key("ansible_connection"));
    }

    #[test]
    fn select_on_inventory() {
        let inv = load("ansible.yaml");
        assert_eq!(inv.select("web:&prod").unwrap(), ["web01.example.com"]);
        assert_eq!(inv.select("db[0]").unwrap(), ["db1"]);
        assert_eq!(inv.select("db[1:2]").unwrap(), ["db2", "db-a"]);
        assert_eq!(
            inv.select("staging:db_primary").unwrap(),
            ["web03.example.com", "db1", "extra1"]
        );
        assert_eq!(
            inv.select("*.example.com:!web02*").unwrap(),
            ["web01.example.com", "web03.example.com"]
        );
        assert_eq!(inv.select("db_*").unwrap(), ["db1", "db2", "db-a", "db-b"]);
        assert!(inv.select("nosuch").unwrap().is_empty());
        assert!(inv.select("web[1:x]").is_err());
    }

    #[test]
    fn runtime_changes() {
        let mut inv = load("ansible.yaml");
        let mut vars = VarMap::new();
        vars.insert("ansible_host".into(), json!("10.0.9.9"));
        inv.add_host("new1", &strs(&["web", "fresh"]), vars)
            .unwrap();
        assert_eq!(inv.host_names().last().unwrap(), "new1");
        assert_eq!(inv.groups()["fresh"], ["new1"]);
        assert_eq!(inv.groups()["web"].last().unwrap(), "new1");
        assert_eq!(inv.host_vars("new1")["tier"], json!("web"));
        assert_eq!(inv.host_vars("new1")["ansible_host"], json!("10.0.9.9"));
        assert_eq!(inv.group_names("new1"), ["fresh", "web"]);
        // Updating an existing host merges its variables.
        let mut more = VarMap::new();
        more.insert("extra".into(), json!(1));
        inv.add_host("new1", &[], more).unwrap();
        assert_eq!(inv.host_vars("new1")["ansible_host"], json!("10.0.9.9"));
        assert_eq!(inv.host_vars("new1")["extra"], json!(1));

        inv.add_to_group("bastion", "os_debian").unwrap();
        assert_eq!(inv.groups()["os_debian"], ["bastion"]);
        assert!(inv.groups()["ungrouped"].is_empty());
        assert_eq!(inv.select("os_debian").unwrap(), ["bastion"]);
        let e = inv.add_to_group("ghost", "x").unwrap_err();
        assert!(e.message.contains("unknown host `ghost`"), "{}", e.message);
        assert!(inv.add_host(" ", &[], VarMap::new()).is_err());
    }

    #[test]
    fn unknown_host_in_kubekey_group() {
        let e = load_err("bad_unknown_host.yaml");
        let r = e.render();
        assert!(
            r.contains("group `etcd` lists host `node3`, which is not defined in `spec.hosts`"),
            "{r}"
        );
        assert!(r.contains("bad_unknown_host.yaml:11:11"), "{r}");
        assert!(
            r.contains("did you mean `node1`?") || r.contains("did you mean `node2`?"),
            "{r}"
        );
        assert_eq!(e.exit_code(), 4);
    }

    #[test]
    fn unknown_child_group() {
        let r = load_err("bad_unknown_child.yaml").render();
        assert!(r.contains("child group `kube_wroker`"), "{r}");
        assert!(r.contains("did you mean `kube_worker`?"), "{r}");
        assert!(r.contains("bad_unknown_child.yaml:7:"), "{r}");
    }

    #[test]
    fn cycles_are_named() {
        let r = load_err("bad_cycle.yaml").render();
        assert!(
            r.contains("child groups form a cycle: a -> b -> c -> a"),
            "{r}"
        );
        assert!(r.contains("bad_cycle.yaml:12:"), "{r}");
        let r = load_err("bad_cycle_ansible.yaml").render();
        assert!(r.contains("a -> b -> a"), "{r}");
        assert!(r.contains("bad_cycle_ansible.yaml:7:13"), "{r}");
    }

    #[test]
    fn wrong_shapes() {
        let r = load_err("bad_kind.yaml").render();
        assert!(
            r.contains("expected `kind: Inventory`, found kind `Config`"),
            "{r}"
        );
        assert!(r.contains("pass it with `-c`"), "{r}");
        let r = load_err("bad_group_key.yaml").render();
        assert!(r.contains("unexpected key `host` in group `web`"), "{r}");
        assert!(r.contains("did you mean `hosts`?"), "{r}");
        assert!(r.contains("bad_group_key.yaml:4:7"), "{r}");
        let r = load_err("bad_host_vars.yaml").render();
        assert!(
            r.contains("expected a mapping of variables for host `node1`, found a list"),
            "{r}"
        );
        assert!(r.contains("bad_host_vars.yaml:4:12"), "{r}");

        let r = parse("- a\n- b\n").unwrap_err().render();
        assert!(
            r.contains("expected an inventory mapping, found a list"),
            "{r}"
        );
        let r = parse("kind: Inventory\nspec:\n  hosts: {}\n  grups: {}\n")
            .unwrap_err()
            .render();
        assert!(
            r.contains("unknown key `grups` in `spec`") && r.contains("did you mean `groups`?"),
            "{r}"
        );
        let r = parse("kind: Inventory\nspec:\n  groups:\n    all: {hosts: []}\n")
            .unwrap_err()
            .render();
        assert!(r.contains("`all` is a reserved group"), "{r}");
        let r = parse("all:\n  hosts:\n    'bad name':\n")
            .unwrap_err()
            .render();
        assert!(r.contains("not a usable host name"), "{r}");
        let r = parse("all:\n  hosts:\n    'web[3:1]':\n")
            .unwrap_err()
            .render();
        assert!(r.contains("range start `3` is after its end `1`"), "{r}");
    }

    #[test]
    fn ansible_details() {
        // Lists and bare names are accepted where Ansible wants a mapping; null groups are empty groups.
        let inv = parse("web:\n  hosts: [a, b]\ndb:\n  hosts: c\nempty:\n").unwrap();
        assert_eq!(inv.host_names(), ["a", "b", "c"]);
        assert_eq!(inv.groups()["web"], ["a", "b"]);
        assert!(inv.groups()["empty"].is_empty());
        // An explicit `ungrouped` (as `ansible-inventory --list --yaml` writes it).
        let inv = parse("all:\n  children:\n    ungrouped:\n      hosts: {x: , y: }\n    g:\n      hosts: {y: }\n").unwrap();
        assert_eq!(inv.groups()["ungrouped"], ["x"]);
        assert_eq!(inv.group_names("y"), ["g"]);
        // Ranges with padding, steps and letters.
        assert_eq!(expand_ranges("n[08:10]").unwrap(), ["n08", "n09", "n10"]);
        assert_eq!(expand_ranges("n[0:10:5]x").unwrap(), ["n0x", "n5x", "n10x"]);
        assert_eq!(
            expand_ranges("[a:b][1:2]").unwrap(),
            ["a1", "a2", "b1", "b2"]
        );
        assert!(expand_ranges("n[1]").is_err());
        let inv =
            parse("all:\n  hosts:\n    '[fe80::1]:2222':\n    '::1':\n    'h:22': {}\n").unwrap();
        assert_eq!(inv.host_names(), ["fe80::1", "::1", "h"]);
        assert_eq!(inv.host_vars("fe80::1")["ansible_port"], json!(2222));
        assert_eq!(inv.host_vars("h")["ansible_port"], json!(22));
        assert!(parse("all:\n  hosts:\n    'h:99999':\n").is_err());
    }
}
