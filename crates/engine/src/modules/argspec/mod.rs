//! `validate_argument_spec`: the check ansible-core runs first in a role that has
//! `meta/argument_specs.yml` (the loader inserts the task, see
//! `project::load::argspecs`). It checks the role's parameters, and the variables the
//! spec names, as ansible-core's validator does (see [`check`]), and fails with
//! ansible-core's messages and result fields.

mod check;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::{Answer, Controller, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// The argument of the inserted task that carries the spec's variables, each rendered as
/// `{{ name | default(omit) }}` (so an undefined one is left out).
pub const FROM_VARS: &str = "_kk_from_vars";

/// Validates a role's arguments against its spec; answered on the controller.
pub struct ValidateArgumentSpec;

#[async_trait]
impl Module for ValidateArgumentSpec {
    async fn run(&self, _ctx: &ModuleContext, _args: VarMap) -> Result<ModuleResult> {
        Err(Error::new(
            ErrorKind::Runtime,
            "validate_argument_spec runs on the controller",
        ))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        match args.get("argument_spec") {
            Some(Value::Object(_)) => Ok(()),
            Some(v) if crate::template::is_template(&crate::ansible::value_text(v)) => Ok(()),
            _ => Err(Error::new(
                ErrorKind::ModuleArgs,
                "validate_argument_spec needs `argument_spec` (a mapping of options)",
            )),
        }
    }

    fn answer(&self, args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        let spec = match args.get("argument_spec") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let mut given = match args.get(FROM_VARS) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        if let Some(Value::Object(p)) = args.get("provided_arguments") {
            given.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let errors = check::validate(&spec, &given);
        let context = args
            .get("validate_args_context")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let result = if errors.is_empty() {
            json!({"changed": false, "msg": "The arg spec validation passed", "validate_args_context": context})
        } else {
            json!({
                "changed": false,
                "failed": true,
                "msg": format!("Validation of arguments failed:\n{}", errors.join("\n")),
                "argument_spec_data": spec,
                "argument_errors": errors,
                "validate_args_context": context,
            })
        };
        Some(Ok(Answer {
            result,
            effects: Vec::new(),
        }))
    }
}
