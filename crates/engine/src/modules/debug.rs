//! `debug`: print a message or a variable's value.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Int, Text};
use super::{parse_args, Answer, Controller, Effect, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;
use crate::template::to_json;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DebugArgs {
    #[serde(default)]
    msg: Option<Value>,
    #[serde(default)]
    var: Option<Text>,
    #[serde(default)]
    verbosity: Option<Int>,
}

const VALID: &[&str] = &["msg", "var", "verbosity"];

/// Prints a message (`msg`) or the value of an expression (`var`).
pub struct Debug;

#[async_trait]
impl Module for Debug {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<DebugArgs>("debug", args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: DebugArgs = parse_args("debug", raw, VALID)?;
        let _ = a.verbosity;
        let mut res = ModuleResult::ok().effect(Effect::Display);
        if let Some(Text(var)) = a.var {
            let value = match ctx.templar.eval_expr(&var, &ctx.vars) {
                Ok(v) if !v.is_undefined() => to_json(&v, &var)?,
                Ok(_) => Value::String("VARIABLE IS NOT DEFINED!".into()),
                Err(e) if e.kind == crate::error::ErrorKind::Undefined => {
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
