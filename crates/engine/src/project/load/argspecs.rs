//! Roles with an argument spec (`meta/argument_specs.yml`, or `argument_specs` in
//! `meta/main.yml`): as ansible-core does, the role's task list starts with a
//! `validate_argument_spec` task for the entry point (`main` or `tasks_from`), named
//! "Validating arguments against arg spec '<entry>' - <short_description>" and tagged
//! `always`, unless the role is used with `rolespec_validate: false`.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{resolve_first, Loader};
use crate::error::{Result, Span};
use crate::modules::argspec::FROM_VARS;
use crate::project::{Inherited, RoleScope, Task, TaskKind, TaskOwn};
use crate::vars::VarMap;
use crate::yaml;

impl Loader {
    /// The validation task of `scope`'s role for entry point `entry`, if its spec has one;
    /// it reports at `play_span`, where ansible-core places it.
    pub(super) fn validation_task(
        &self,
        scope: &RoleScope,
        entry: &str,
        play_span: &Span,
    ) -> Result<Option<Task>> {
        let meta = scope.role.path.join("meta");
        let specs = match resolve_first(&[
            meta.join("argument_specs.yml"),
            meta.join("argument_specs.yaml"),
        ]) {
            Some(f) => yaml::load_file(&f)?
                .get("argument_specs")
                .map(|n| n.to_value()),
            None => match resolve_first(&[meta.join("main.yml"), meta.join("main.yaml")]) {
                Some(f) => yaml::load_file(&f)?
                    .get("argument_specs")
                    .map(|n| n.to_value()),
                None => None,
            },
        };
        let Some(spec) = specs
            .as_ref()
            .and_then(|s| s.get(entry))
            .filter(|s| s.is_object())
        else {
            return Ok(None);
        };
        let mut name = format!("Validating arguments against arg spec '{}'", entry);
        if let Some(d) = spec.get("short_description") {
            name.push_str(" - ");
            name.push_str(&crate::ansible::value_text(d));
        }
        let options = spec.get("options").cloned().unwrap_or_else(|| json!({}));
        // The spec's variables, each left out when undefined.
        let from_vars: serde_json::Map<String, Value> = options
            .as_object()
            .map(|o| {
                o.keys()
                    .filter(|k| crate::ansible::is_identifier(k))
                    .map(|k| {
                        (
                            k.clone(),
                            Value::String(format!("{{{{ {} | default(omit) }}}}", k)),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let path = scope
            .role
            .path
            .canonicalize()
            .unwrap_or(scope.role.path.clone());
        let mut args = VarMap::new();
        args.insert("argument_spec".into(), options);
        args.insert(
            "provided_arguments".into(),
            Value::Object((*scope.params).clone()),
        );
        args.insert(
            "validate_args_context".into(),
            json!({"type": "role", "name": scope.role.name, "argument_spec_name": entry, "path": path.display().to_string()}),
        );
        args.insert(FROM_VARS.into(), Value::Object(from_vars));
        Ok(Some(Task {
            name: Some(name),
            kind: TaskKind::Module {
                module: "validate_argument_spec".into(),
                args,
            },
            attrs: Inherited {
                tags: vec!["always".into()],
                vars: Arc::new(VarMap::new()),
                ..Default::default()
            },
            own: TaskOwn::default(),
            span: play_span.clone(),
            dir: scope.role.path.clone(),
        }))
    }
}
