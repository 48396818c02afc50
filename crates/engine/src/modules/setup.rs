//! `setup` (and `gather_facts`): gathers facts in one remote command.

use async_trait::async_trait;

use super::{Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;
use crate::vars::facts;

/// Gathers facts; the result's `ansible_facts` becomes host variables.
pub struct Setup;

#[async_trait]
impl Module for Setup {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let _ = raw;
        let out = ctx.exec(facts::SCRIPT, None).await?;
        if out.rc != 0 {
            return Ok(
                ModuleResult::failed(format!("fact gathering failed with rc {}", out.rc))
                    .with_output(&out),
            );
        }
        let facts = facts::parse(&String::from_utf8_lossy(&out.stdout));
        Ok(ModuleResult::ok().with("ansible_facts", serde_json::Value::Object(facts)))
    }
}
