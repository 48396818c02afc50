//! `pause`: wait a number of seconds or minutes (never prompts: runs are unattended).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Int, Text};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseArgs {
    #[serde(default)]
    seconds: Option<Int>,
    #[serde(default)]
    minutes: Option<Int>,
    #[serde(default)]
    prompt: Option<Text>,
    #[serde(default)]
    echo: Flag,
}

/// Parses and checks the arguments: how long to wait, in seconds.
fn check(raw: VarMap) -> Result<i64> {
    let a: PauseArgs = parse_args("pause", raw, &["seconds", "minutes", "prompt", "echo"])?;
    let _ = a.echo;
    let secs = a.seconds.map_or(0, |Int(s)| s) + a.minutes.map_or(0, |Int(m)| m) * 60;
    if secs <= 0 && a.prompt.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "pause without seconds/minutes would wait for a keypress; kk runs unattended",
        )
        .help("give `seconds:` or `minutes:`"));
    }
    Ok(secs)
}

/// Sleeps on the controller.
pub struct Pause;

#[async_trait]
impl Module for Pause {
    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, _ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let secs = check(raw)?;
        let start = std::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_secs(secs.max(0) as u64)).await;
        Ok(ModuleResult::ok()
            .with("delta", start.elapsed().as_secs())
            .with("user_input", "")
            .with("stdout", format!("Paused for {} seconds", secs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validate_at_load() {
        let check = |a: serde_json::Value| Pause.validate(a.as_object().unwrap());
        assert!(check(json!({"seconds": "5"})).is_ok());
        let e = check(json!({"seconds": "soon"})).unwrap_err();
        assert!(e.message.contains("pause") && e.message.contains("integer"));
        let e = check(json!({"second": 5})).unwrap_err();
        assert!(e.message.contains("pause") && e.message.contains("second"));
        assert!(e.help.unwrap().contains("seconds, minutes"));
        assert!(check(json!({"prompt": "go?"})).is_err());
    }
}
