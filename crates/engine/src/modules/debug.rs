//! `debug`: print a message or a variable's value.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Int, Text};
use super::{parse_args, Answer, Controller, Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};
use crate::template::to_json;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DebugArgs {
    /// `Some(Null)` for an explicit `msg: null` (a template that gave None), which
    /// ansible-core prints as null rather than its "Hello world!".
    #[serde(default, deserialize_with = "present")]
    msg: Option<Value>,
    #[serde(default)]
    var: Option<Text>,
    #[serde(default)]
    verbosity: Option<Int>,
}

const VALID: &[&str] = &["msg", "var", "verbosity"];

/// A field that is present, even as null.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Parses the arguments; `msg` and `var` exclude each other (ansible-core's debug action
/// refuses both: "parameters are mutually exclusive: msg|var").
fn check(raw: VarMap) -> Result<DebugArgs> {
    let a: DebugArgs = parse_args("debug", raw, VALID)?;
    if a.msg.is_some() && a.var.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "debug: parameters are mutually exclusive: msg|var",
        )
        .help("give `msg:` to print a message, or `var:` to print a variable, not both"));
    }
    Ok(a)
}

/// Prints a message (`msg`) or the value of an expression (`var`).
pub struct Debug;

#[async_trait]
impl Module for Debug {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a = check(raw)?;
        let _ = a.verbosity;
        let mut res = ModuleResult::ok().effect(Effect::Display);
        if let Some(Text(var)) = a.var {
            let value = match ctx.templar.eval_expr(&var, &ctx.vars) {
                Ok(v) if !v.is_undefined() => to_json(&v, &var)?,
                Ok(_) => Value::String("VARIABLE IS NOT DEFINED!".into()),
                Err(e) if e.kind == ErrorKind::Undefined => {
                    Value::String("VARIABLE IS NOT DEFINED!".into())
                }
                Err(e) => return Err(e),
            };
            res.data.insert(var, value);
        } else {
            let msg = a
                .msg
                .unwrap_or_else(|| Value::String("Hello world!".into()));
            res.data.insert("msg".into(), msg);
        }
        Ok(res)
    }

    /// Skipped on the controller when `verbosity` is above the run's `-v` count.
    fn answer(&self, args: &VarMap, c: &Controller) -> Option<Result<Answer>> {
        let wanted = args
            .get("verbosity")
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            })
            .unwrap_or(0);
        (wanted > u64::from(c.verbosity)).then(|| {
            Ok(Answer {
                result: serde_json::json!({"changed": false, "skipped": true, "skipped_reason": "Verbosity threshold not met."}),
                effects: Vec::new(),
            })
        })
    }
}
