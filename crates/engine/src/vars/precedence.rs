//! Design §3 as code: the variable sources a host sees, and which beats which.
//!
//! Callers say where each map comes from ([`Level`]); [`Precedence::build`] stacks them in
//! the table's order whatever order they were added in, so the task view and `hostvars`
//! cannot drift apart. The order is ansible-core's (`VariableManager.get_vars`), with
//! KubeKey's config `spec` between role defaults and the inventory.

use std::sync::Arc;

use super::{Layers, VarMap};

/// Where a layer of variables comes from, lowest precedence first: the declaration order
/// of the variants is the precedence table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Role `defaults/` (the play's static roles, then the roles around the task).
    RoleDefaults,
    /// KubeKey's config `spec` (`-c config.yaml`).
    Config,
    /// Inventory variables, already layered by the inventory in ansible-core's order:
    /// the inventory's all and group vars < group_vars/all (next to the inventory, then
    /// next to the play's playbook) < group_vars/<group> (same; groups by depth, then
    /// `ansible_group_priority`, then name) < the inventory's host vars <
    /// host_vars/<host> (next to the inventory, then the playbook). See
    /// `inventory::vars_files`.
    Inventory,
    /// Gathered facts (`setup`, `gather_facts`).
    Facts,
    /// The play's `vars`.
    PlayVars,
    /// The play's `vars_files` (per host: their names may use host variables).
    VarsFiles,
    /// Role `vars/` (the play's static roles, then the roles around the task).
    RoleVars,
    /// Block `vars`, then task `vars`, outer to inner: visible only inside them.
    ScopeVars,
    /// `include_vars` results, for the rest of the run.
    IncludeVars,
    /// `set_fact` and `register` results, for the rest of the run.
    SetFact,
    /// Role and include parameters: above `set_fact`, private to the role.
    RoleParams,
    /// Extra vars (`-e`, `--set`): beat everything users write.
    ExtraVars,
    /// The loop variable of an include's item, set by the engine itself.
    LoopItem,
}

impl Level {
    /// True for layers the run produced, already rendered: they must never be templated
    /// again (a fact or a registered result holding `{{` is data, not a template).
    pub fn is_data(self) -> bool {
        matches!(self, Level::Facts | Level::SetFact | Level::LoopItem)
    }
}

/// Collects variable layers by source and stacks them in design §3's order.
#[derive(Clone, Default, Debug)]
pub struct Precedence(Vec<(Level, Arc<VarMap>)>);

impl Precedence {
    /// No layers yet.
    pub fn new() -> Precedence {
        Precedence::default()
    }

    /// Adds a layer from `level`; layers of the same level keep the order they were
    /// added in (later beats earlier).
    pub fn add(&mut self, level: Level, layer: Arc<VarMap>) -> &mut Precedence {
        self.0.push((level, layer));
        self
    }

    /// Adds several layers from the same `level`, lowest first.
    pub fn extend(
        &mut self,
        level: Level,
        layers: impl IntoIterator<Item = Arc<VarMap>>,
    ) -> &mut Precedence {
        for l in layers {
            self.add(level, l);
        }
        self
    }

    /// The layers, lowest precedence first (empty ones dropped).
    pub fn build(mut self) -> Layers {
        // A stable sort: same-level layers keep their order.
        self.0.sort_by_key(|(level, _)| *level);
        let mut layers = Layers::default();
        for (level, layer) in self.0 {
            if level.is_data() {
                layers.push_data(layer);
            } else {
                layers.push(layer);
            }
        }
        layers
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn map(v: Value) -> Arc<VarMap> {
        Arc::new(v.as_object().unwrap().clone())
    }

    /// The winner of `x` when `low` and `high` both set it, added in both orders.
    fn beats(low: Level, high: Level) {
        for high_first in [false, true] {
            let mut p = Precedence::new();
            let (a, b) = (map(json!({"x": "low"})), map(json!({"x": "high"})));
            if high_first {
                p.add(high, b).add(low, a);
            } else {
                p.add(low, a).add(high, b);
            }
            assert_eq!(
                p.build().raw("x"),
                Some(json!("high")),
                "{high:?} must beat {low:?}"
            );
        }
    }

    #[test]
    fn config_beats_role_defaults() {
        beats(Level::RoleDefaults, Level::Config);
    }

    #[test]
    fn inventory_beats_config() {
        beats(Level::Config, Level::Inventory);
    }

    #[test]
    fn facts_beat_inventory() {
        beats(Level::Inventory, Level::Facts);
    }

    #[test]
    fn play_vars_beat_facts() {
        beats(Level::Facts, Level::PlayVars);
    }

    #[test]
    fn vars_files_beat_play_vars() {
        beats(Level::PlayVars, Level::VarsFiles);
    }

    #[test]
    fn role_vars_beat_vars_files() {
        beats(Level::VarsFiles, Level::RoleVars);
    }

    #[test]
    fn block_and_task_vars_beat_role_vars() {
        beats(Level::RoleVars, Level::ScopeVars);
    }

    #[test]
    fn include_vars_beat_task_vars() {
        beats(Level::ScopeVars, Level::IncludeVars);
    }

    #[test]
    fn set_fact_beats_include_vars() {
        beats(Level::IncludeVars, Level::SetFact);
    }

    #[test]
    fn role_params_beat_set_fact() {
        beats(Level::SetFact, Level::RoleParams);
    }

    #[test]
    fn extra_vars_beat_role_params() {
        beats(Level::RoleParams, Level::ExtraVars);
    }

    #[test]
    fn loop_item_beats_extra_vars() {
        beats(Level::ExtraVars, Level::LoopItem);
    }

    #[test]
    fn extra_vars_beat_set_fact_and_inventory() {
        beats(Level::SetFact, Level::ExtraVars);
        beats(Level::Inventory, Level::ExtraVars);
    }

    #[test]
    fn same_level_keeps_insertion_order() {
        // Inner block/task vars beat outer ones; a nested role's defaults beat its parent's.
        let mut p = Precedence::new();
        p.extend(
            Level::ScopeVars,
            [map(json!({"x": "outer"})), map(json!({"x": "inner"}))],
        );
        p.add(Level::RoleDefaults, map(json!({"x": "default"})));
        assert_eq!(p.build().raw("x"), Some(json!("inner")));
    }

    #[test]
    fn mappings_deep_merge_across_levels() {
        let mut p = Precedence::new();
        p.add(Level::Config, map(json!({"k": {"a": 1, "b": 1}})));
        p.add(Level::Inventory, map(json!({"k": {"b": 2}})));
        assert_eq!(p.build().raw("k"), Some(json!({"a": 1, "b": 2})));
    }

    #[test]
    fn only_run_data_is_never_templated() {
        for (level, templated) in [
            (Level::Facts, false),
            (Level::SetFact, false),
            (Level::LoopItem, false),
            (Level::PlayVars, true),
            (Level::IncludeVars, true),
            (Level::ExtraVars, true),
        ] {
            let mut p = Precedence::new();
            p.add(level, map(json!({"x": "{{ y }}"})));
            assert_eq!(
                p.build().lookup("x").map(|(_, t)| t),
                Some(templated),
                "{level:?}"
            );
        }
    }

    #[test]
    fn empty_layers_are_dropped() {
        let mut p = Precedence::new();
        p.add(Level::PlayVars, Arc::new(VarMap::new()));
        assert!(p.build().0.is_empty());
    }
}
