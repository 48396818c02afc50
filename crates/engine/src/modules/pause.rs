//! `pause`: wait a number of seconds or minutes (never prompts: runs are unattended).

use async_trait::async_trait;
use serde::Deserialize;

use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseArgs {
    #[serde(default, deserialize_with = "args::opt_int_like")]
    seconds: Option<i64>,
    #[serde(default, deserialize_with = "args::opt_int_like")]
    minutes: Option<i64>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default, deserialize_with = "args::bool_like")]
    echo: bool,
}

/// Sleeps on the controller.
pub struct Pause;

#[async_trait]
impl Module for Pause {
    async fn run(&self, _ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: PauseArgs = parse_args("pause", raw, &["seconds", "minutes", "prompt", "echo"])?;
        let _ = a.echo;
        let secs = a.seconds.unwrap_or(0) + a.minutes.unwrap_or(0) * 60;
        if secs <= 0 && a.prompt.is_some() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "pause without seconds/minutes would wait for a keypress; kk runs unattended",
            )
            .help("give `seconds:` or `minutes:`"));
        }
        let start = std::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_secs(secs.max(0) as u64)).await;
        Ok(ModuleResult::ok()
            .with("delta", start.elapsed().as_secs())
            .with("user_input", "")
            .with("stdout", format!("Paused for {} seconds", secs)))
    }
}
