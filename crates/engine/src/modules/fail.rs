//! `fail`: fail the host with a message.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailArgs {
    #[serde(default)]
    msg: Option<Value>,
}

const VALID: &[&str] = &["msg"];

/// Always fails, with `msg` (default "Failed as requested from task").
pub struct Fail;

#[async_trait]
impl Module for Fail {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<FailArgs>("fail", args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, _ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: FailArgs = parse_args("fail", raw, VALID)?;
        let msg = match a.msg {
            None => "Failed as requested from task".to_string(),
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
        };
        Ok(ModuleResult::failed(msg))
    }
}
