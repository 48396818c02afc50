//! `validate_argument_spec`: the check ansible-core runs first in a role that has
//! `meta/argument_specs.yml` (the loader inserts the task, see
//! `project::load::roles`). It checks the role's parameters, and the variables the spec
//! names, for `required`, `type` (converting as ansible-core does) and `choices`, and
//! fails with ansible-core's messages.

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
        let errors = check(&spec, &given);
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

/// ansible-core's ArgumentSpecValidator, in its order: missing required arguments, then
/// each option's type, then each option's choices.
fn check(spec: &Map<String, Value>, given: &Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut missing: Vec<&str> = spec
        .iter()
        .filter(|(k, o)| {
            o.get("required") == Some(&Value::Bool(true))
                && given.get(*k).is_none_or(Value::is_null)
        })
        .map(|(k, _)| k.as_str())
        .collect();
    missing.sort_unstable();
    if !missing.is_empty() {
        errors.push(format!(
            "missing required arguments: {}",
            missing.join(", ")
        ));
    }
    let mut converted = given.clone();
    for (name, opt) in spec {
        let Some(v) = given.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        let wanted = opt.get("type").and_then(Value::as_str).unwrap_or("str");
        match convert(wanted, v) {
            Ok(c) => {
                converted.insert(name.clone(), c);
            }
            Err(why) => errors.push(format!(
                "argument '{}' is of type {} and we were unable to convert to {}: {}",
                name,
                type_name(v),
                wanted,
                why
            )),
        }
    }
    for (name, opt) in spec {
        let (Some(Value::Array(choices)), Some(v)) = (opt.get("choices"), converted.get(name))
        else {
            continue;
        };
        let in_choices = |x: &Value| choices.contains(x);
        let ok = match v {
            Value::Null => true,
            Value::Array(items) => items.iter().all(in_choices),
            other => in_choices(other),
        };
        if !ok {
            let shown: Vec<String> = choices.iter().map(py_text).collect();
            errors.push(format!(
                "value of {} must be one of: {}, got: {}",
                name,
                shown.join(", "),
                py_text(v)
            ));
        }
    }
    errors
}

/// Python's name of a value's type, as ansible-core's native_type_name prints it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// A value as Python's `str()` shows it (for messages).
fn py_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => crate::ansible::value_text(other),
    }
}

/// Python's `repr()` of a scalar (for the int message).
fn py_repr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        other => py_text(other),
    }
}

/// ansible-core's check_type_<wanted>: the converted value, or why it cannot be one.
fn convert(wanted: &str, v: &Value) -> std::result::Result<Value, String> {
    match wanted {
        "str" => match v {
            Value::String(_) => Ok(v.clone()),
            Value::Array(_) | Value::Object(_) => Ok(Value::String(v.to_string())),
            other => Ok(Value::String(py_text(other))),
        },
        "int" => {
            let as_int = match v {
                Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.clone()),
                Value::Number(n) => n
                    .as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| json!(f as i64)),
                Value::Bool(b) => Some(json!(i64::from(*b))),
                Value::String(s) => s.trim().parse::<i64>().ok().map(|i| json!(i)),
                _ => None,
            };
            as_int.ok_or_else(|| format!("\"{}\" cannot be converted to an int", py_repr(v)))
        }
        "float" => match v {
            Value::Number(n) => Ok(json!(n.as_f64().unwrap_or(0.0))),
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .map(|f| json!(f))
                .map_err(|_| "<class 'str'> cannot be converted to a float".to_string()),
            other => Err(format!(
                "<class '{}'> cannot be converted to a float",
                type_name(other)
            )),
        },
        "bool" => match v {
            Value::Bool(_) => Ok(v.clone()),
            Value::String(_) | Value::Number(_) => crate::ansible::to_bool(v)
                .map(Value::Bool)
                .ok_or_else(|| {
                    format!(
                        "The value {} is not a valid boolean.  Valid booleans include: 'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, True, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0, False",
                        py_repr(v)
                    )
                }),
            other => Err(format!(
                "<class '{}'> cannot be converted to a bool",
                type_name(other)
            )),
        },
        "list" => match v {
            Value::Array(_) => Ok(v.clone()),
            Value::String(s) => Ok(Value::Array(
                s.split(',').map(|p| Value::String(p.to_string())).collect(),
            )),
            Value::Number(_) => Ok(json!([py_text(v)])),
            other => Err(format!(
                "<class '{}'> cannot be converted to a list",
                type_name(other)
            )),
        },
        "dict" => match v {
            Value::Object(_) => Ok(v.clone()),
            Value::String(s) => serde_json::from_str::<Value>(s)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| "dictionary requested, could not parse JSON or key=value".to_string()),
            other => Err(format!(
                "<class '{}'> cannot be converted to a dict",
                type_name(other)
            )),
        },
        // path, raw and the rest kk does not check further.
        _ => Ok(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Map<String, Value> {
        json!({
            "name": {"type": "str", "required": true},
            "port": {"type": "int"},
            "mode": {"type": "str", "choices": ["fast", "slow"]},
            "debug": {"type": "bool"},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn messages_are_ansible_cores() {
        let given = json!({"port": "many", "mode": "medium"});
        let e = check(&spec(), given.as_object().unwrap());
        assert_eq!(
            e,
            vec![
                "missing required arguments: name".to_string(),
                "argument 'port' is of type str and we were unable to convert to int: \"'many'\" cannot be converted to an int".to_string(),
                "value of mode must be one of: fast, slow, got: medium".to_string(),
            ]
        );
        let ok = json!({"name": "a", "port": "81", "debug": "yes", "mode": "fast"});
        assert!(check(&spec(), ok.as_object().unwrap()).is_empty());
    }
}
