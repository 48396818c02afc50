//! What a host's tasks see: the variable layers of design §3 (for a task in its scope,
//! and for `hostvars`), and the magic variables of the run, play and host.

use std::sync::Arc;

use indexmap::IndexSet;
use serde_json::Value;

use super::{PlayCtx, Runner, Scope};
use crate::template::OMIT;
use crate::vars::precedence::{Level, Precedence};
use crate::vars::{HostVars, Layers, Magic, VarMap, VarView};

impl Runner {
    pub(super) fn play_magic(&self, all_play_hosts: &[String], play_name: &str) -> VarMap {
        let inv = self.inventory.read().unwrap();
        let mut m = VarMap::new();
        let groups: serde_json::Map<String, Value> = inv
            .groups()
            .into_iter()
            .map(|(k, v)| (k, Value::from(v)))
            .collect();
        m.insert("groups".into(), Value::Object(groups));
        m.insert(
            "ansible_play_hosts_all".into(),
            Value::from(all_play_hosts.to_vec()),
        );
        m.insert("ansible_play_name".into(), Value::from(play_name));
        m.insert(
            "playbook_dir".into(),
            Value::from(self.loader.playbook_dir.display().to_string()),
        );
        if let Some(inv) = &self.opts.inventory_path {
            let inv = std::fs::canonicalize(inv).unwrap_or(inv.clone());
            m.insert(
                "inventory_file".into(),
                Value::from(inv.display().to_string()),
            );
            if let Some(d) = inv.parent() {
                m.insert("inventory_dir".into(), Value::from(d.display().to_string()));
            }
        }
        m.insert("ansible_check_mode".into(), Value::from(self.opts.check));
        m.insert("ansible_diff_mode".into(), Value::from(self.opts.diff));
        m.insert(
            "ansible_run_tags".into(),
            Value::from(if self.opts.tags.only.is_empty() {
                vec!["all".to_string()]
            } else {
                self.opts.tags.only.clone()
            }),
        );
        m.insert(
            "ansible_skip_tags".into(),
            Value::from(self.opts.tags.skip.clone()),
        );
        m.insert("ansible_version".into(), serde_json::json!({"full": "2.19.0", "major": 2, "minor": 19, "revision": 0, "string": "2.19.0"}));
        m.insert("omit".into(), Value::from(OMIT));
        m
    }

    /// The layers a host sees outside any role/block/task scope (what `hostvars[h]` shows).
    pub(super) fn base_layers(&self, host: &str, play_vars: &Arc<VarMap>) -> Layers {
        self.host_precedence(host, play_vars).build()
    }

    /// The host-wide sources of design §3: those every view of this host has, whatever
    /// the scope (the task view adds its roles, vars_files, block/task vars and params).
    fn host_precedence(&self, host: &str, play_vars: &Arc<VarMap>) -> Precedence {
        let st = self.state(host);
        let mut p = Precedence::new();
        p.add(Level::Config, self.config.clone())
            .add(Level::Inventory, self.inventory_vars(host))
            .add(Level::Facts, st.facts.clone())
            .add(Level::PlayVars, play_vars.clone())
            .add(Level::IncludeVars, st.included.clone())
            .add(Level::SetFact, st.runtime.clone())
            .add(Level::ExtraVars, self.extra.clone());
        p
    }

    pub(super) fn host_magic(&self, host: &str) -> Arc<VarMap> {
        let mut m = VarMap::new();
        m.insert("inventory_hostname".into(), Value::from(host));
        m.insert(
            "inventory_hostname_short".into(),
            Value::from(host.split('.').next().unwrap_or(host)),
        );
        m.insert(
            "group_names".into(),
            Value::from(self.inventory.read().unwrap().group_names(host)),
        );
        let changes = self
            .hosts
            .lock()
            .unwrap()
            .get(host)
            .map_or(0, |s| s.changes);
        m.insert("kk_host_changes".into(), Value::from(changes));
        Arc::new(m)
    }

    /// `hostvars`: each host's variables outside any play, as ansible-core's HostVars shows
    /// them: inventory, facts, include_vars, set_fact and extra vars, never the play's
    /// `vars` (the argument is kept for the callers; a play's vars are not a host's).
    pub(super) fn hostvars(self: &Arc<Self>, _play_vars: Arc<VarMap>) -> minijinja::Value {
        let me = self.clone();
        let play_vars = Arc::new(VarMap::new());
        let mut names = self.inventory.read().unwrap().host_names();
        if !names.iter().any(|n| n == "localhost")
            && self.hosts.lock().unwrap().contains_key("localhost")
        {
            names.push("localhost".into());
        }
        let known: IndexSet<String> = names.iter().cloned().collect();
        let hv = HostVars::new(
            names,
            Box::new(move |name: &str| {
                if !known.contains(name) && name != "localhost" {
                    return None;
                }
                let magic = Magic {
                    values: vec![me.host_magic(name)],
                    hostvars: None,
                };
                Some(VarView::new(
                    me.base_layers(name, &play_vars),
                    magic,
                    me.templar.clone(),
                ))
            }),
        );
        minijinja::Value::from_object(hv)
    }

    /// The full view of a host's variables inside a scope.
    pub(super) fn view(
        &self,
        pc: &PlayCtx,
        scope: &Scope,
        host: &str,
        top: Option<Arc<VarMap>>,
        hostvars: &minijinja::Value,
    ) -> Arc<VarView> {
        let mut p = self.host_precedence(host, &pc.vars);
        // `ansible_host` is the address kk connects to unless a variable sets it
        // (ansible-core's connection default; `hostvars` do not show it): KubeKey's
        // `connector.host` when the inventory gives one, else the inventory name. The
        // connection reads `ansible_host` first, so the default must never hide the
        // connector's address.
        let address = self
            .inventory_vars(host)
            .get("connector")
            .and_then(|c| c.get("host"))
            .filter(|h| h.as_str().is_some_and(|s| !s.is_empty()))
            .cloned()
            .unwrap_or_else(|| Value::from(host));
        let mut conn = VarMap::new();
        conn.insert("ansible_host".into(), address);
        let public = pc.public_roles.read().unwrap().clone();
        p.add(Level::RoleDefaults, Arc::new(conn))
            .extend(Level::RoleDefaults, pc.role_defaults.iter().cloned())
            .extend(
                Level::RoleDefaults,
                public.iter().map(|r| r.role.defaults.clone()),
            )
            .extend(
                Level::RoleDefaults,
                scope.role_dependencies.iter().map(|r| r.defaults.clone()),
            )
            .extend(
                Level::RoleDefaults,
                scope.roles.iter().map(|r| r.role.defaults.clone()),
            )
            .extend(Level::VarsFiles, pc.host_vars_files.get(host).cloned())
            .extend(Level::RoleVars, pc.role_vars.iter().cloned())
            .extend(Level::RoleVars, public.iter().map(|r| r.role.vars.clone()))
            .extend(
                Level::RoleVars,
                scope.role_dependencies.iter().map(|r| r.vars.clone()),
            )
            .extend(
                Level::RoleVars,
                scope.roles.iter().map(|r| r.role.vars.clone()),
            )
            .extend(Level::ScopeVars, scope.vars.iter().cloned())
            // Role parameters beat set_fact (Ansible's precedence), but stay private to the role.
            .extend(
                Level::RoleParams,
                scope.roles.iter().map(|r| r.params.clone()),
            )
            .extend(Level::LoopItem, top);
        let l = p.build();
        let mut values = vec![self.host_magic(host)];
        if let Some(r) = scope.roles.last() {
            let mut m = VarMap::new();
            m.insert(
                "role_path".into(),
                Value::from(r.role.path.display().to_string()),
            );
            m.insert("role_name".into(), Value::from(r.role.name.clone()));
            m.insert("ansible_role_name".into(), Value::from(r.role.name.clone()));
            let parents: Vec<String> = scope
                .roles
                .iter()
                .rev()
                .skip(1)
                .map(|r| r.role.name.clone())
                .collect();
            // ansible-core defines it only for a role included from inside another role.
            if !parents.is_empty() {
                m.insert("ansible_parent_role_names".into(), Value::from(parents));
            }
            values.push(Arc::new(m));
        }
        values.push(pc.play_hosts.read().unwrap().clone());
        values.push(pc.magic.read().unwrap().clone());
        VarView::new(
            l,
            Magic {
                values,
                hostvars: Some(hostvars.clone()),
            },
            self.templar.clone(),
        )
    }
}
