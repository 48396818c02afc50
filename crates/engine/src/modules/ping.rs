//! `ping`: proves kk can log in and run a command on the host (Ansible's ping proves
//! its Python runs; kk needs none, so a shell no-op is the same proof).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Text;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::Result;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PingArgs {
    #[serde(default)]
    data: Option<Text>,
}

fn parse(raw: VarMap) -> Result<String> {
    let a: PingArgs = parse_args("ping", raw, &["data"])?;
    Ok(a.data.map(|d| d.0).unwrap_or_else(|| "pong".into()))
}

/// Answers `ping: <data>` once a command ran on the host.
pub struct Ping;

#[async_trait]
impl Module for Ping {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let data = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let out = ctx.exec(":", None).await?;
        if out.rc != 0 {
            return Ok(ModuleResult::failed(format!(
                "the host ran no command (rc {}): {}",
                out.rc,
                out.stderr_text()
            )));
        }
        // Ansible's documented way to see a module fail (its exception, as Ansible words it).
        if data == "crash" {
            return Ok(ModuleResult::failed("Task failed: Module failed: boom"));
        }
        Ok(ModuleResult::ok().with("ping", data))
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
    }
}
