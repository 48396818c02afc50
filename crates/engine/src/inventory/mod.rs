//! Inventories: hosts, groups and their variables, in KubeKey's or Ansible's YAML form,
//! and host patterns that select from them. Order is always the file's order.
//!
//! Both forms load into one model: hosts with their own variables, groups with their
//! own hosts, child groups and variables, and global variables. Everything derived
//! from it (group members, `all`, `ungrouped`, each host's merged variables) is
//! computed once after loading and after every runtime change (`add_host`, `group_by`),
//! so lookups during a run are cheap and never fail.
//!
//! This file holds the model and its queries; the parts around it: `kubekey` and
//! `ansible` load the two forms, `node` has the YAML shape checks both share,
//! `ranges` expands Ansible host keys (`web[01:03]`, `name:port`), `derive` computes
//! the derived data, and [`pattern`] selects hosts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::{IndexMap, IndexSet};

use crate::error::{Error, ErrorKind, Result, Span};
use crate::vars::VarMap;
use crate::yaml::{Node, Yaml};

mod ansible;
mod constructed;
mod derive;
mod generator;
mod ini;
mod kubekey;
mod node;
mod plugins;
mod pyliteral;
mod ranges;
mod script;
mod sources;
mod toml_form;
mod vars_files;

pub mod pattern;

pub use pattern::LOCALHOST_NAMES;
pub use plugins::SourceOptions;
pub use sources::is_host_list;

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
    /// Hosts listed directly, in file order, de-duplicated (a set: a group may list
    /// 100,000 hosts, and each addition checks for a duplicate).
    hosts: IndexSet<String>,
    /// Child groups in file order, each with where it was named.
    children: IndexMap<String, Option<Span>>,
    /// Group variables.
    vars: VarMap,
}

/// A loaded inventory.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// Every host in first-seen order.
    hosts: IndexMap<String, HostDef>,
    /// Hosts listed in `all` itself (`all: {hosts}`, `[all]`, KubeKey's `spec.hosts`,
    /// `add_host`): first in `all`'s order, before those only in groups.
    all_direct: IndexSet<String>,
    /// Variables for every host (`spec.vars` / `all.vars`).
    all_vars: VarMap,
    /// Groups a source made children of `all` itself (YAML `all: {children}`, a script's
    /// `all.children`): before every source is read, only their hosts see `all`'s
    /// variables in a constructed file, as in Ansible.
    all_children: IndexSet<String>,
    /// User groups in first-seen order; never `all`.
    groups: IndexMap<String, GroupDef>,
    /// Resolved members of every group, `all` and `ungrouped` first.
    members: IndexMap<String, Vec<String>>,
    /// Sorted group names per host (without `all`/`ungrouped`).
    group_names: HashMap<String, Vec<String>>,
    /// Merged inventory variables per host, including the implicit localhost.
    merged: HashMap<String, Arc<VarMap>>,
    /// Directories of the path sources, whose group_vars/ and host_vars/ apply.
    vars_dirs: Vec<PathBuf>,
    /// The running play's playbook directory, whose group_vars/ and host_vars/ apply.
    play_dir: Option<PathBuf>,
    /// group_vars/ and host_vars/ files read so far.
    vars_files: vars_files::VarsFiles,
    /// A KubeKey `kind: Inventory` was loaded: its layers deep-merge (design §3).
    kubekey_form: bool,
    /// What loading has to tell the user (an inventory script's standard error, which
    /// Ansible shows even when the script succeeds), for the command to print.
    notices: Vec<String>,
}

/// The most hosts an inventory may define: a few lines of host ranges (`h[00000:99999]`)
/// could otherwise ask for millions, each with its variables and groups.
pub const MAX_HOSTS: usize = 100_000;

/// The error when a file defines more than [`MAX_HOSTS`] hosts, at the entry that does.
fn too_many_hosts(span: &Span) -> Error {
    Error::syntax(
        format!("the inventory defines more than {} hosts", MAX_HOSTS),
        span,
    )
    .help("split the inventory, or narrow the host ranges")
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
            all_direct: IndexSet::new(),
            all_vars: VarMap::new(),
            all_children: IndexSet::new(),
            groups: IndexMap::new(),
            members: IndexMap::new(),
            group_names: HashMap::new(),
            merged: HashMap::new(),
            vars_dirs: Vec::new(),
            play_dir: None,
            vars_files: vars_files::VarsFiles::default(),
            kubekey_form: false,
            notices: Vec::new(),
        }
    }

    /// An inventory with no hosts (only the implicit `localhost`).
    pub fn empty() -> Inventory {
        let mut inv = Inventory::blank();
        // Cannot fail: there are no groups, hence no cycles.
        let _ = inv.rebuild();
        inv
    }

    /// Reads an inventory file or directory in any form (see [`Inventory::load_sources`]).
    pub fn load(path: &Path) -> Result<Inventory> {
        Inventory::load_sources(&[path.to_string_lossy()])
    }

    /// Makes the group_vars/ and host_vars/ next to `dir` (the running play's playbook
    /// directory) apply, as Ansible's do for the plays of each playbook. Returns true
    /// when the variables changed (a different directory).
    pub fn set_playbook_dir(&mut self, dir: &Path) -> Result<bool> {
        if self.play_dir.as_deref() == Some(dir) {
            return Ok(false);
        }
        let before = self.play_dir.replace(dir.to_path_buf());
        if let Err(e) = self.rebuild() {
            self.play_dir = before;
            return Err(e);
        }
        Ok(true)
    }

    /// The file a host was first defined in, for `inventory_file` (none for hosts from a
    /// `-i` host list or added at run time).
    pub fn host_source(&self, host: &str) -> Option<&Path> {
        let span = self.hosts.get(host)?.span.as_ref()?;
        let p = span.path();
        (p != Path::new("-i")).then_some(p)
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

    fn add_host_def(&mut self, name: &str, vars: &VarMap, span: Option<&Span>) {
        let deep = self.kubekey_form;
        match self.hosts.get_mut(name) {
            Some(h) => derive::combine_vars(deep, &mut h.vars, vars),
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

    /// Takes what loading has to tell the user (see `notices`), once.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    // ---------------------------------------------------------------- queries

    /// Every host name in inventory order (`all`; never the implicit localhost).
    pub fn host_names(&self) -> Vec<String> {
        self.members.get(ALL).cloned().unwrap_or_default()
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
        let all: IndexSet<String> = self
            .members
            .get(ALL)
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default();
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
        self.all_direct.insert(name.to_string());
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
            self.all_direct.insert(host.to_string());
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
        g.hosts.insert(host.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
