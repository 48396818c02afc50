//! `reboot` (`ansible.builtin.reboot`): reboots the host and waits until it is back, as
//! Ansible's action does: read the boot time (`boot_time_command`, by default the
//! kernel's boot_id), run the reboot command (`shutdown -r <minutes> "<msg>"`, found in
//! `search_paths`, or `reboot_command`), then poll — dropping the SSH master after every
//! failed try, so the next try opens a fresh one — until the boot time differs, then until
//! `test_command` succeeds, each within `reboot_timeout`. Result: `rebooted`, `elapsed`.
//! Over a local connection it refuses (it would reboot the controller); in check mode it
//! reports a reboot without doing one.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Int, List, Text};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::{shell_quote, ExecRequest};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RebootArgs {
    #[serde(default)]
    pre_reboot_delay: Option<Int>,
    #[serde(default)]
    post_reboot_delay: Option<Int>,
    #[serde(default)]
    reboot_timeout: Option<Int>,
    #[serde(default)]
    connect_timeout: Option<Int>,
    #[serde(default)]
    test_command: Option<Text>,
    #[serde(default)]
    msg: Option<Text>,
    #[serde(default)]
    boot_time_command: Option<Text>,
    #[serde(default)]
    reboot_command: Option<Text>,
    #[serde(default)]
    search_paths: Option<List>,
}

const VALID: &[&str] = &[
    "boot_time_command",
    "connect_timeout",
    "msg",
    "post_reboot_delay",
    "pre_reboot_delay",
    "reboot_command",
    "reboot_timeout",
    "search_paths",
    "test_command",
];

const DEFAULT_SEARCH_PATHS: &[&str] =
    &["/sbin", "/bin", "/usr/sbin", "/usr/bin", "/usr/local/sbin"];

/// How long one try may take when `connect_timeout` is not given (ssh's default timeout).
const DEFAULT_TRY_TIMEOUT: u64 = 10;

struct Checked {
    pre_delay: u64,
    post_delay: u64,
    reboot_timeout: u64,
    connect_timeout: Option<u64>,
    test_command: String,
    msg: String,
    boot_time_command: String,
    reboot_command: Option<String>,
    search_paths: Vec<String>,
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: RebootArgs = parse_args("reboot", raw, VALID)?;
    // Ansible turns negative delays into 0.
    let delay = |v: Option<Int>| v.map(|i| i.0.max(0) as u64).unwrap_or(0);
    let text = |v: Option<Text>, d: &str| {
        v.map(|t| t.0)
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| d.to_string())
    };
    if let Some(t) = a.reboot_timeout {
        if t.0 <= 0 {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!(
                    "reboot: `reboot_timeout` must be more than 0 seconds, found {}",
                    t.0
                ),
            ));
        }
    }
    Ok(Checked {
        pre_delay: delay(a.pre_reboot_delay),
        post_delay: delay(a.post_reboot_delay),
        reboot_timeout: a.reboot_timeout.map(|t| t.0 as u64).unwrap_or(600),
        connect_timeout: a.connect_timeout.map(|t| t.0.max(1) as u64),
        test_command: text(a.test_command, "whoami"),
        msg: text(a.msg, "Reboot initiated by Ansible"),
        boot_time_command: text(a.boot_time_command, "cat /proc/sys/kernel/random/boot_id"),
        reboot_command: a.reboot_command.map(|t| t.0).filter(|t| !t.is_empty()),
        search_paths: a
            .search_paths
            .map(|l| l.0)
            .unwrap_or_else(|| DEFAULT_SEARCH_PATHS.iter().map(|s| s.to_string()).collect()),
    })
}

/// Python's repr of a list of strings, as Ansible's messages print `search_paths`.
fn py_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("'{}'", s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// Ansible names the action as the task wrote it (`reboot` or `ansible.builtin.reboot`);
/// kk's modules see the canonical name only, so its messages always say `reboot`.
/// Whether the task runs over a local connection (Ansible refuses to reboot the controller).
fn is_local(ctx: &ModuleContext) -> bool {
    let var = |name: &str| {
        ctx.vars
            .get_attr(name)
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_none())
            .map(|v| v.to_string())
    };
    match var("ansible_connection").as_deref() {
        Some("local") => true,
        Some(_) => false,
        None => matches!(
            var("inventory_hostname").as_deref(),
            Some("localhost" | "127.0.0.1" | "::1")
        ),
    }
}

/// `ansible.builtin.reboot`.
pub struct Reboot;

impl Reboot {
    /// Runs `script` with the task's become, giving up after `limit`.
    async fn try_run(
        ctx: &ModuleContext,
        script: &str,
        limit: Duration,
    ) -> std::result::Result<crate::connect::ExecOutput, String> {
        let req = ExecRequest {
            become_: ctx.become_.clone(),
            env: ctx.env.clone(),
            ..ExecRequest::script(script)
        };
        match tokio::time::timeout(limit, ctx.conn.exec(&req)).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(e.message),
            Err(_) => Err(format!("no answer within {} seconds", limit.as_secs())),
        }
    }

    /// Ansible's `do_until_success_or_timeout`: tries `attempt` with a growing pause
    /// (1, 2, 4, 8, then 12 seconds, plus up to 1 s) until it succeeds or `timeout` passes;
    /// after a failed try the SSH master is closed, so the next one connects afresh.
    async fn until_success<F, Fut>(
        ctx: &ModuleContext,
        timeout: u64,
        what: &str,
        mut attempt: F,
    ) -> std::result::Result<(), String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<(), String>>,
    {
        let deadline = Instant::now() + Duration::from_secs(timeout);
        let mut fails = 0u32;
        while Instant::now() < deadline {
            let err = match attempt().await {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            tracing::debug!(host = %ctx.host, what, error = %err, "reboot: try failed");
            ctx.conn.close().await;
            // Up to a second more, as Ansible adds, so hosts rebooted together spread out.
            let jitter = Duration::from_millis(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_millis() as u64)
                    .unwrap_or(0),
            );
            let pause = Duration::from_secs(2u64.saturating_pow(fails).min(12)) + jitter;
            fails += 1;
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
        }
        Err(format!("Timed out waiting for {what} (timeout={timeout})"))
    }
}

#[async_trait]
impl Module for Reboot {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        if is_local(ctx) {
            return Ok(ModuleResult::failed(
                "Running reboot with local connection would reboot the control node.",
            )
            .with("elapsed", 0)
            .with("rebooted", false));
        }
        if ctx.check_mode {
            return Ok(ModuleResult::changed(true)
                .with("elapsed", 0)
                .with("rebooted", true));
        }
        let try_limit = Duration::from_secs(c.connect_timeout.unwrap_or(DEFAULT_TRY_TIMEOUT));
        // The boot time before.
        let before = ctx.exec(c.boot_time_command.clone(), None).await?;
        if before.rc != 0 {
            return Ok(ModuleResult::failed(format!(
                "reboot: failed to get host boot time info, rc: {}, stdout: {}, stderr: {}",
                before.rc,
                before.stdout_text(),
                before.stderr_text()
            ))
            .with("reboot", false));
        }
        let previous = before.stdout_text().trim().to_string();
        // The command: reboot_command's first word, else `shutdown`, found in search_paths.
        let (bin, args) = match &c.reboot_command {
            Some(cmd) => match cmd.split_once(' ') {
                Some((b, a)) => (b.to_string(), a.to_string()),
                None => (cmd.clone(), String::new()),
            },
            None => (
                "shutdown".to_string(),
                format!("-r {} \"{}\"", c.pre_delay / 60, c.msg),
            ),
        };
        let bin = if bin.starts_with('/') {
            bin
        } else {
            let paths: Vec<String> = c.search_paths.iter().map(|p| shell_quote(p)).collect();
            let out = ctx
                .exec(
                    format!(
                        "for d in {}; do if [ -e \"$d\"/{b} ] || [ -L \"$d\"/{b} ]; then printf '%s\\n' \"${{d%/}}/\"{b}; exit 0; fi; done; exit 1",
                        paths.join(" "),
                        b = shell_quote(&bin)
                    ),
                    None,
                )
                .await?;
            match out.stdout_text().lines().next() {
                Some(p) if out.rc == 0 => p.to_string(),
                _ => {
                    return Ok(ModuleResult::failed(format!(
                        // An AnsibleError in the action: 2.19 prefixes "Task failed: ".
                        "Task failed: Unable to find command \"{}\" in search paths: {}",
                        bin,
                        py_list(&c.search_paths)
                    )));
                }
            }
        };
        let command = format!("{} {}", bin, args);
        tracing::debug!(host = %ctx.host, command = %command, "reboot: rebooting");
        let ran = ctx.exec(command, None).await;
        let start = Instant::now();
        match ran {
            Ok(out) if out.rc != 0 => {
                return Ok(ModuleResult::failed(format!(
                    "Reboot command failed. Error was: '{}, {}'",
                    out.stdout_text().trim(),
                    out.stderr_text().trim()
                ))
                .with("rebooted", false)
                .with("elapsed", start.elapsed().as_secs()));
            }
            Ok(_) => {}
            // The host went down while the command ran: that is the reboot.
            Err(e) if e.kind == ErrorKind::Connection => {}
            Err(e) => return Err(e),
        }
        if c.post_delay > 0 {
            tokio::time::sleep(Duration::from_secs(c.post_delay)).await;
        }
        let boot_changed =
            Self::until_success(ctx, c.reboot_timeout, "last boot time check", || {
                let cmd = c.boot_time_command.clone();
                let previous = previous.clone();
                async move {
                    let out = Self::try_run(ctx, &cmd, try_limit).await?;
                    if out.rc != 0 {
                        return Err(format!(
                            "reboot: failed to get host boot time info, rc: {}",
                            out.rc
                        ));
                    }
                    let now = out.stdout_text().trim().to_string();
                    if now.is_empty() || now == previous {
                        return Err("boot time has not changed".into());
                    }
                    Ok(())
                }
            })
            .await;
        let tested = match boot_changed {
            Ok(()) => {
                Self::until_success(ctx, c.reboot_timeout, "post-reboot test command", || {
                    let cmd = c.test_command.clone();
                    async move {
                        // After the boot time check the connection's usual limits apply.
                        let out = Self::try_run(
                            ctx,
                            &cmd,
                            Duration::from_secs(DEFAULT_TRY_TIMEOUT.max(try_limit.as_secs())),
                        )
                        .await?;
                        if out.rc != 0 {
                            return Err(format!(
                                "Test command failed: {} {}",
                                out.stderr_text(),
                                out.stdout_text()
                            ));
                        }
                        Ok(())
                    }
                })
                .await
            }
            Err(e) => Err(e),
        };
        let elapsed = start.elapsed().as_secs();
        Ok(match tested {
            Ok(()) => ModuleResult::changed(true),
            Err(msg) => ModuleResult::failed(msg),
        }
        .with("rebooted", true)
        .with("elapsed", elapsed))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments() {
        let c = |v: serde_json::Value| check(v.as_object().unwrap().clone());
        let d = c(json!({})).unwrap();
        assert_eq!(d.reboot_timeout, 600);
        assert_eq!(d.test_command, "whoami");
        assert_eq!(d.search_paths.len(), 5);
        let e = c(json!({"pre_reboot_delay_sec": 5})).err().unwrap();
        assert!(e.message.contains("pre_reboot_delay_sec"));
        assert_eq!(c(json!({"pre_reboot_delay": -3})).unwrap().pre_delay, 0);
        assert_eq!(
            c(json!({"search_paths": "/a,/b"})).unwrap().search_paths,
            vec!["/a", "/b"]
        );
        assert_eq!(py_list(&["/a".into(), "/b".into()]), "['/a', '/b']");
    }
}
