//! `assert`: fail unless every condition holds.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::Flag;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssertArgs {
    that: Value,
    #[serde(default, alias = "msg")]
    fail_msg: Option<Value>,
    #[serde(default)]
    success_msg: Option<Value>,
    #[serde(default)]
    quiet: Flag,
}

const VALID: &[&str] = &["that", "fail_msg", "msg", "success_msg", "quiet"];

/// Checks conditions; the first false one fails the host with `fail_msg`.
pub struct Assert;

#[async_trait]
impl Module for Assert {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<AssertArgs>("assert", args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: AssertArgs = parse_args("assert", raw, VALID)?;
        let conditions = match a.that {
            Value::Array(items) => items,
            other => vec![other],
        };
        for cond in &conditions {
            if !ctx.templar.eval_condition(cond, &ctx.vars)? {
                let text = match cond {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let msg = match a.fail_msg {
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => "Assertion failed".to_string(),
                };
                return Ok(ModuleResult::failed(msg)
                    .with("assertion", text)
                    .with("evaluated_to", false));
            }
        }
        let msg = match a.success_msg {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => "All assertions passed".to_string(),
        };
        let _ = a.quiet;
        Ok(ModuleResult::ok().msg(msg))
    }
}
