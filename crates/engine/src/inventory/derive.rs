//! What is derived from the definitions: group members (children resolved), `all` and
//! `ungrouped`, each host's group names and merged variables, and the cycle check.
//!
//! Computed once after loading and after every runtime change, so lookups during a run
//! are cheap and never fail.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::{IndexMap, IndexSet};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result, Span};
use crate::vars::{merge_maps, VarMap};

use super::{Inventory, ALL, UNGROUPED};

/// How deep child groups may nest (as groups nested in Ansible's YAML form).
pub(super) const MAX_GROUP_DEPTH: usize = 64;

impl Inventory {
    /// Recomputes members, group names and merged variables from the definitions.
    pub(super) fn rebuild(&mut self) -> Result<()> {
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
        let all = self.all_order(&ungrouped);
        let mut members = IndexMap::new();
        members.insert(ALL.to_string(), all);
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
        // Ansible's sort_groups: depth, then `ansible_group_priority`, then name.
        let mut order: Vec<(usize, i64, &String)> = self
            .groups
            .iter()
            .map(|(g, def)| (depth.get(g).copied().unwrap_or(1), priority(&def.vars), g))
            .collect();
        order.sort();
        // Each host's groups in precedence order, from the memberships (not every host
        // against every group: that is hosts × groups).
        let mut host_groups: HashMap<&String, Vec<&String>> = HashMap::new();
        for (_, _, g) in &order {
            // `ungrouped`'s variables go to the hosts in no other group, listed there or not
            // (Ansible's reconciled `ungrouped`).
            let hosts: Vec<&String> = members
                .get(*g)
                .map(|m| m.iter().collect())
                .unwrap_or_default();
            for h in hosts {
                host_groups.entry(h).or_default().push(*g);
            }
        }
        // group_vars/ and host_vars/ files, when any directory has them.
        let mut files = std::mem::take(&mut self.vars_files);
        let dirs = self.files_dirs();
        let ungrouped_name = UNGROUPED.to_string();
        let mut merged = HashMap::new();
        for (h, def) in &self.hosts {
            let mut vars = self.all_vars.clone();
            let groups = host_groups.get(h).map(Vec::as_slice).unwrap_or_default();
            for g in groups {
                self.combine(&mut vars, &self.groups[*g].vars);
            }
            if dirs.is_empty() {
                self.combine(&mut vars, &def.vars);
            } else {
                let ungrouped = [&ungrouped_name];
                let names = if groups.is_empty() {
                    &ungrouped[..]
                } else {
                    groups
                };
                match self.with_files(&mut files, &dirs, vars, names, h, &def.vars) {
                    Ok(v) => vars = v,
                    Err(e) => {
                        self.vars_files = files;
                        return Err(e);
                    }
                }
            }
            if h == "localhost" && !says_connection(&vars) {
                vars.insert("ansible_connection".to_string(), Value::from("local"));
            }
            // Ansible's host variables naming the file that first defined the host.
            if let Some(src) = self.host_source(h) {
                let file = normalized(src);
                if let Some(dir) = file.parent() {
                    vars.entry("inventory_dir".to_string())
                        .or_insert_with(|| Value::from(dir.display().to_string()));
                }
                vars.entry("inventory_file".to_string())
                    .or_insert_with(|| Value::from(file.display().to_string()));
            }
            merged.insert(h.clone(), Arc::new(vars));
        }
        if !self.hosts.contains_key("localhost") {
            // Ansible's implicit localhost: the `all` variables, and a local connection.
            let mut vars = self.all_vars.clone();
            if !dirs.is_empty() {
                let empty = VarMap::new();
                match self.with_files(&mut files, &dirs, vars, &[], "localhost", &empty) {
                    Ok(v) => vars = v,
                    Err(e) => {
                        self.vars_files = files;
                        return Err(e);
                    }
                }
            }
            vars.insert("ansible_connection".to_string(), Value::from("local"));
            merged.insert("localhost".to_string(), Arc::new(vars));
        }
        self.vars_files = files;

        self.members = members;
        self.group_names = group_names;
        self.merged = merged;
        Ok(())
    }

    /// `all` in Ansible's order: its own hosts, the ungrouped ones, then the groups'
    /// hosts, top-level groups first and each level of children after (in file order;
    /// Ansible's order among grandchildren is its set order, so not fixed).
    fn all_order(&self, ungrouped: &[String]) -> Vec<String> {
        let mut out: IndexSet<String> = self
            .all_direct
            .iter()
            .filter(|h| self.hosts.contains_key(*h))
            .cloned()
            .collect();
        out.extend(ungrouped.iter().cloned());
        let children: HashSet<&String> = self
            .groups
            .values()
            .flat_map(|d| d.children.keys())
            .collect();
        let mut seen: HashSet<&String> = HashSet::new();
        let mut level: Vec<&String> = self
            .groups
            .keys()
            .filter(|g| !children.contains(g) && *g != UNGROUPED)
            .collect();
        while !level.is_empty() {
            let mut next = Vec::new();
            for g in level {
                if !seen.insert(g) {
                    continue;
                }
                let Some(def) = self.groups.get(g) else {
                    continue;
                };
                out.extend(def.hosts.iter().cloned());
                next.extend(def.children.keys().filter(|c| !seen.contains(c)));
            }
            level = next;
        }
        // Every host is reached above; first-seen order guards that, should one not be.
        out.extend(self.hosts.keys().cloned());
        out.into_iter().collect()
    }

    /// Puts `over`'s variables over `base`'s: deep-merged for KubeKey's form (a group may
    /// set one key of a mapping), replaced whole for Ansible's (ansible-core's default
    /// `hash_behaviour = replace`), design §3.
    pub(super) fn combine(&self, base: &mut VarMap, over: &VarMap) {
        combine_vars(self.kubekey_form, base, over);
    }

    /// A group's hosts in Ansible's order (`Group.get_hosts`): its own, then its children's
    /// own, then their children's, a level at a time. Ansible walks a level's groups in
    /// set order (not fixed) from the second level of children on; kk walks them in the
    /// order they were reached, children in file order.
    fn resolve_members(&self, g: &str, resolved: &mut HashMap<String, Vec<String>>) -> Vec<String> {
        if let Some(m) = resolved.get(g) {
            return m.clone();
        }
        let mut out: IndexSet<String> = IndexSet::new();
        let mut seen: HashSet<&str> = HashSet::new();
        let mut level: Vec<&str> = vec![g];
        while !level.is_empty() {
            let mut next: Vec<&str> = Vec::new();
            for name in level {
                if !seen.insert(name) {
                    continue;
                }
                let Some(def) = self.groups.get(name) else {
                    continue;
                };
                out.extend(def.hosts.iter().cloned());
                next.extend(def.children.keys().map(String::as_str));
            }
            level = next;
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
                let e = Error::new(ErrorKind::Syntax, format!("child groups form a cycle: {}", crate::graph::cycle_text(&chain)))
                    .help("a group cannot contain itself, directly or through its children; remove one of these links");
                return Err(e.at_opt(via));
            }
            _ => {}
        }
        state.insert(g, 1);
        path.push(g);
        // Groups are walked recursively (here, for members and for depths): a chain of
        // child groups is bounded like a nesting of them in Ansible's YAML form.
        if path.len() > MAX_GROUP_DEPTH {
            let e = Error::new(
                ErrorKind::Syntax,
                format!(
                    "child groups nest more than {} deep: {} -> …",
                    MAX_GROUP_DEPTH,
                    path[..3].join(" -> ")
                ),
            )
            .help("flatten the groups: a group may list the hosts of its children itself");
            return Err(e.at_opt(via));
        }
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
    pub(super) fn depths(&self) -> HashMap<String, usize> {
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
}

/// An absolute path with `.` and `..` resolved by name, symlinks kept (Ansible's
/// `unfrackpath(follow=False)`).
fn normalized(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = std::path::PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A group's `ansible_group_priority` (1 when unset), which orders groups of the same depth.
pub(super) fn priority(vars: &VarMap) -> i64 {
    match vars.get("ansible_group_priority") {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(1),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(1),
        _ => 1,
    }
}

/// [`Inventory::combine`] for maps inside the inventory: `deep` for KubeKey's form.
pub(super) fn combine_vars(deep: bool, base: &mut VarMap, over: &VarMap) {
    if deep {
        merge_maps(base, over);
    } else {
        for (k, v) in over {
            base.insert(k.clone(), v.clone());
        }
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
