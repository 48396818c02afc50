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

/// The longest pause, in seconds: the bound every duration keyword has (136 years).
const MAX_SECONDS: i128 = u32::MAX as i128;

/// Parses and checks the arguments: how long to wait, in seconds. As ansible-core's
/// pause action: `minutes` and `seconds` exclude each other, and less than one second
/// waits one.
fn check(raw: VarMap) -> Result<u64> {
    let a: PauseArgs = parse_args("pause", raw, &["seconds", "minutes", "prompt", "echo"])?;
    let _ = a.echo;
    let secs: Option<i128> = match (a.seconds, a.minutes) {
        (Some(_), Some(_)) => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "pause: parameters are mutually exclusive: minutes|seconds",
            )
            .help("give either `seconds:` or `minutes:`"))
        }
        (Some(Int(s)), None) => Some(s as i128),
        (None, Some(Int(m))) => Some(m as i128 * 60),
        (None, None) => None,
    };
    match secs {
        None if a.prompt.is_some() => Err(Error::new(
            ErrorKind::ModuleArgs,
            "pause without seconds/minutes would wait for a keypress; kk runs unattended",
        )
        .help("give `seconds:` or `minutes:`")),
        None => Ok(0),
        Some(s) if s > MAX_SECONDS => Err(Error::new(
            ErrorKind::ModuleArgs,
            format!(
                "pause: {} seconds is too long: at most {} seconds",
                s, MAX_SECONDS
            ),
        )
        .help("give `seconds:` or `minutes:` a sensible duration")),
        Some(s) => Ok(s.max(1) as u64),
    }
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
        tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
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

    #[test]
    fn durations_at_the_edges() {
        let secs = |a: serde_json::Value| check(a.as_object().unwrap().clone());
        assert_eq!(secs(json!({"seconds": -5})).unwrap(), 1);
        assert_eq!(secs(json!({"minutes": 2})).unwrap(), 120);
        assert_eq!(secs(json!({})).unwrap(), 0);
        for big in [
            json!({"minutes": i64::MAX}),
            json!({"seconds": 1e30}),
            json!({"minutes": "9223372036854775807"}),
        ] {
            let e = secs(big).unwrap_err();
            assert!(e.message.contains("too long"), "{}", e.message);
        }
        let e = secs(json!({"seconds": 1, "minutes": 1})).unwrap_err();
        assert!(e.message.contains("mutually exclusive"), "{}", e.message);
    }
}
