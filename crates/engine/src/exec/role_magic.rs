//! The play's role magic variables (`ansible_play_role_names`, `role_names`,
//! `ansible_dependent_role_names`, `ansible_role_names`) and the roles `include_role`
//! made public. ansible-core lists a play's roles as its `roles:`, its imports and every
//! role an `include_role` loaded so far (the play's list grows as includes run); the
//! roles reached through `meta/main` dependencies are the dependent ones.

use std::sync::Arc;

use serde_json::Value;

use super::PlayCtx;
use crate::project::{Role, RoleScope, Task, TaskKind};
use crate::vars::VarMap;

/// Role names of a play: those it applies directly and those reached as dependencies.
#[derive(Debug, Default, Clone)]
pub(super) struct RoleNames {
    play: Vec<String>,
    dependent: Vec<String>,
}

impl RoleNames {
    /// The role names of a play's static task lists.
    pub(super) fn of_static(lists: &[&[Task]]) -> RoleNames {
        let mut names = RoleNames::default();
        for list in lists {
            names.walk(list, false);
        }
        names
    }

    /// Adds the roles of `tasks` (an include's, or a play's): a role block directly inside
    /// a role block is a dependency; any other one (also an import inside a role) is
    /// applied by the play.
    fn walk(&mut self, tasks: &[Task], in_role: bool) {
        for t in tasks {
            if let TaskKind::Block {
                block,
                rescue,
                always,
                role,
            } = &t.kind
            {
                if let Some(r) = role {
                    let list = if in_role {
                        &mut self.dependent
                    } else {
                        &mut self.play
                    };
                    list.push(r.role.name.clone());
                }
                self.walk(block, role.is_some());
                self.walk(rescue, false);
                self.walk(always, false);
            }
        }
    }

    /// Writes the magic variables into `m`.
    pub(super) fn insert_into(&self, m: &mut VarMap) {
        let mut all: Vec<String> = self.play.iter().chain(&self.dependent).cloned().collect();
        all.sort();
        all.dedup();
        let mut dependent = self.dependent.clone();
        dependent.sort();
        dependent.dedup();
        m.insert("ansible_role_names".into(), Value::from(all));
        m.insert(
            "ansible_play_role_names".into(),
            Value::from(self.play.clone()),
        );
        m.insert("role_names".into(), Value::from(self.play.clone()));
        m.insert(
            "ansible_dependent_role_names".into(),
            Value::from(dependent),
        );
    }
}

impl PlayCtx {
    /// Records a role `include_role` loaded (`tasks` are what it runs: its dependencies'
    /// role blocks come first), updating the play's role magic variables, and makes its
    /// defaults and vars visible to the play's later tasks when it is `public`, with
    /// those of its `dependencies` beneath them.
    pub(super) fn note_included_role(
        &self,
        scope: &RoleScope,
        tasks: &[Task],
        public: bool,
        dependencies: &[Arc<Role>],
    ) {
        {
            let mut names = self.role_names.write().unwrap();
            names.play.push(scope.role.name.clone());
            names.walk(tasks, true);
            let mut magic = (**self.magic.read().unwrap()).clone();
            names.insert_into(&mut magic);
            *self.magic.write().unwrap() = Arc::new(magic);
        }
        if public {
            let mut roles = self.public_roles.write().unwrap();
            let same = |a: &RoleScope, b: &RoleScope| {
                a.role.path == b.role.path
                    && a.role.defaults == b.role.defaults
                    && a.role.vars == b.role.vars
            };
            let dependencies = dependencies.iter().map(|d| RoleScope {
                role: d.clone(),
                params: Arc::default(),
                public: true,
            });
            for r in dependencies.chain([scope.clone()]) {
                if !roles.iter().any(|known| same(known, &r)) {
                    roles.push(r);
                }
            }
        }
    }
}
