//! `wait_for_connection`: waits until the host answers a command again (after a reboot,
//! a network change). Each try goes through the host's connection, which opens its SSH
//! master again when the old one is gone.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Int;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::ExecRequest;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    #[serde(default)]
    connect_timeout: Option<Int>,
    #[serde(default)]
    delay: Option<Int>,
    #[serde(default)]
    sleep: Option<Int>,
    #[serde(default)]
    timeout: Option<Int>,
}

const VALID: &[&str] = &["connect_timeout", "delay", "sleep", "timeout"];

/// The waits, in seconds (Ansible's defaults: 5, 0, 1, 600).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waits {
    pub connect_timeout: u64,
    pub delay: u64,
    pub sleep: u64,
    pub timeout: u64,
}

fn check(raw: VarMap) -> Result<Waits> {
    let a: WaitArgs = parse_args("wait_for_connection", raw, VALID)?;
    let secs = |name: &str, v: Option<Int>, default: u64| -> Result<u64> {
        match v {
            None => Ok(default),
            Some(Int(n)) if n >= 0 => Ok(n as u64),
            Some(Int(n)) => Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("wait_for_connection: `{name}` must be 0 or more seconds, found {n}"),
            )),
        }
    };
    Ok(Waits {
        connect_timeout: secs("connect_timeout", a.connect_timeout, 5)?,
        delay: secs("delay", a.delay, 0)?,
        sleep: secs("sleep", a.sleep, 1)?,
        timeout: secs("timeout", a.timeout, 600)?,
    })
}

/// Tries a no-op command until one succeeds or `timeout` passes; `Err` carries the
/// last failure, in Ansible's words ("timed out waiting for ping module test: …").
pub(crate) async fn wait_until_up(
    ctx: &ModuleContext,
    w: Waits,
    start: Instant,
) -> Result<(), String> {
    let deadline = start + Duration::from_secs(w.timeout);
    loop {
        let req = ExecRequest {
            become_: ctx.become_.clone(),
            ..ExecRequest::script(":")
        };
        let tried = tokio::time::timeout(
            Duration::from_secs(w.connect_timeout.max(1)),
            ctx.conn.exec(&req),
        )
        .await;
        let err = match tried {
            Ok(Ok(out)) if out.rc == 0 => return Ok(()),
            Ok(Ok(out)) => format!("rc {}: {}", out.rc, out.stderr_text()),
            Ok(Err(e)) => e.message,
            Err(_) => format!("no answer within {} seconds", w.connect_timeout),
        };
        if Instant::now() + Duration::from_secs(w.sleep) >= deadline {
            return Err(format!("timed out waiting for ping module test: {err}"));
        }
        tokio::time::sleep(Duration::from_secs(w.sleep)).await;
    }
}

/// Waits for the host to accept commands; skipped in check mode, as Ansible's.
pub struct WaitForConnection;

#[async_trait]
impl Module for WaitForConnection {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let w = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        if ctx.check_mode {
            return Ok(ModuleResult {
                skipped: true,
                ..Default::default()
            });
        }
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(w.delay)).await;
        let res = match wait_until_up(ctx, w, start).await {
            Ok(()) => ModuleResult::ok(),
            Err(msg) => ModuleResult::failed(msg),
        };
        Ok(res.with("elapsed", start.elapsed().as_secs()))
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        check(raw.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_reachable_host_answers_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let r = WaitForConnection
            .run(&c, args(json!({"timeout": 5})))
            .await
            .unwrap();
        assert!(!r.failed && !r.changed && r.data["elapsed"] == 0);
        let e = WaitForConnection
            .validate(&args(json!({"timeout": -1})))
            .unwrap_err();
        assert!(e.message.contains("timeout"));
        let e = WaitForConnection
            .validate(&args(json!({"port": 22})))
            .unwrap_err();
        assert!(e.message.contains("port"));
    }
}
