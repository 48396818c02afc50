//! `wait_for`: waits on the host until a TCP port is open (or closed), a path exists
//! (or is gone), or a file matches a regex. The whole wait loop runs on the host in one
//! round trip.
//!
//! Port probes use what the host has, in this order: `nc -z`, bash's `/dev/tcp` (bash is
//! Essential on Debian and present on every RHEL; the script itself stays POSIX sh), then
//! curl's `telnet://` with `%{time_connect}` (non-zero only when the connect succeeded).
//! Regexes use `grep -P` when the host's grep has it (close to Python's `re`), else `grep -E`.
//! Like Ansible's `wait_for`, it does not run in check mode (it is skipped).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Int, Text};
use super::remote::{self, qpath};
use super::{parse_args, CheckMode, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// What is waited for: the port open or the file there (`started`, `present`), or
    /// the opposite (`stopped`, `absent`); `drained` is Ansible's, not supported.
    enum WaitState for "state" {
        Started = "started",
        Present = "present",
        Stopped = "stopped",
        Absent = "absent",
        Drained = "drained",
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitForArgs {
    #[serde(default)]
    host: Option<Text>,
    #[serde(default)]
    port: Option<Int>,
    #[serde(default, alias = "dest")]
    path: Option<Text>,
    #[serde(default)]
    state: Option<WaitState>,
    #[serde(default)]
    search_regex: Option<Text>,
    #[serde(default)]
    timeout: Option<Int>,
    #[serde(default)]
    delay: Option<Int>,
    #[serde(default)]
    sleep: Option<Int>,
    #[serde(default)]
    connect_timeout: Option<Int>,
    #[serde(default)]
    msg: Option<Text>,
    // Accepted for compatibility (connection draining is not implemented).
    #[serde(default)]
    exclude_hosts: Option<Value>,
    #[serde(default)]
    active_connection_states: Option<Value>,
}

fn int(i: Option<Int>, default: i64) -> i64 {
    i.map_or(default, |Int(i)| i)
}

/// Parses and checks the arguments without the host; says whether the condition is
/// wanted true (`started`, `present`) or false.
fn check(raw: VarMap) -> Result<(WaitForArgs, bool)> {
    let a: WaitForArgs = parse_args("wait_for", raw, VALID)?;
    let _ = (&a.exclude_hosts, &a.active_connection_states);
    let present = match a.state.unwrap_or(WaitState::Started) {
        WaitState::Started | WaitState::Present => true,
        WaitState::Stopped | WaitState::Absent => false,
        WaitState::Drained => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "wait_for: state `drained` is not supported",
            )
            .help("wait for `stopped` (port closed) instead"))
        }
    };
    condition(&a, present)?;
    Ok((a, present))
}

const VALID: &[&str] = &[
    "host",
    "port",
    "path",
    "state",
    "search_regex",
    "timeout",
    "delay",
    "sleep",
    "connect_timeout",
    "msg",
    "exclude_hosts",
    "active_connection_states",
];

/// Waits for a condition on the host.
pub struct WaitFor;

/// What is waited for, as the script's condition function `cond`.
fn condition(a: &WaitForArgs, present: bool) -> Result<(String, String)> {
    let host = a
        .host
        .as_ref()
        .map_or("127.0.0.1", |h| h.as_str())
        .to_string();
    if let Some(Int(port)) = a.port {
        if !(1..=65535).contains(&port) {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("wait_for: port {} is out of range 1..65535", port),
            ));
        }
        if a.path.is_some() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "wait_for: `port` and `path` are mutually exclusive",
            ));
        }
        if a.search_regex.is_some() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "wait_for: `search_regex` on a port is not supported; it works with `path`",
            )
            .help("probe the service with `uri` and `until:` instead"));
        }
        let ct = int(a.connect_timeout, 5).max(1);
        let probe = format!("kk_port {} {} {}", shell_quote(&host), port, ct);
        let cond = if present {
            probe
        } else {
            format!("! {}", probe)
        };
        let what = format!("{}:{}", host, port);
        return Ok((format!("cond() {{ {}; }}\n", cond), what));
    }
    if let Some(path) = a.path.as_ref().map(Text::as_str) {
        let q = qpath(path);
        if let Some(re) = a.search_regex.as_ref().map(Text::as_str) {
            let cond = format!(
                "cond() {{ [ -f {q} ] && grep $G -q -- {} {q} 2>/dev/null; }}\n",
                shell_quote(re)
            );
            let cond = if present {
                cond
            } else {
                format!(
                    "cond() {{ ! {{ [ -f {q} ] && grep $G -q -- {} {q} 2>/dev/null; }}; }}\n",
                    shell_quote(re)
                )
            };
            return Ok((cond, format!("search string {} in {}", re, path)));
        }
        let cond = if present {
            format!("cond() {{ [ -e {q} ]; }}\n")
        } else {
            format!("cond() {{ [ ! -e {q} ]; }}\n")
        };
        return Ok((cond, format!("file {}", path)));
    }
    if a.search_regex.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "wait_for: `search_regex` needs `path`",
        ));
    }
    // Nothing to wait for: wait the whole timeout, as Ansible does.
    Ok(("cond() { false; }\n".into(), "timeout".into()))
}

/// The port probe: `kk_port HOST PORT CONNECT_TIMEOUT` succeeds when a TCP connect does.
const PORT_FN: &str = r#"kk_port() {
  if command -v nc >/dev/null 2>&1; then nc -z -w "$3" "$1" "$2" >/dev/null 2>&1; return; fi
  if command -v bash >/dev/null 2>&1; then
    timeout "$3" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" >/dev/null 2>&1; return
  fi
  if command -v curl >/dev/null 2>&1; then
    t=$(curl -s -o /dev/null -w '%{time_connect}' --connect-timeout "$3" -m "$3" "telnet://$1:$2" </dev/null 2>/dev/null)
    case "$t" in ''|0|0.000000|0,000000) return 1 ;; *) return 0 ;; esac
  fi
  echo "no way to probe TCP ports on this host (need nc, bash or curl)" >&2; exit 89
}
if echo x | grep -P -q x 2>/dev/null; then G=-P; else G=-E; fi
"#;

#[async_trait]
impl Module for WaitFor {
    fn check_mode(&self) -> CheckMode {
        CheckMode::RemoteRefuses
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let (a, present) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (cond, what) = condition(&a, present).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let timeout = int(a.timeout, 300).max(0);
        let delay = int(a.delay, 0).max(0);
        let sleep = int(a.sleep, 1).max(1);
        let mut s = String::from(PORT_FN);
        s.push_str(&cond);
        s.push_str(&format!(
            "sleep {delay}\nstart=$(date +%s); end=$((start + {timeout}))\nwhile :; do\n  if cond; then echo \"elapsed=$(( $(date +%s) - start ))\"; exit 0; fi\n  now=$(date +%s)\n  if [ \"$now\" -ge \"$end\" ]; then echo \"elapsed=$(( now - start ))\"; exit 88; fi\n  left=$((end - now)); if [ \"$left\" -lt {sleep} ]; then sleep \"$left\"; else sleep {sleep}; fi\ndone\n"
        ));
        let out = ctx.exec(s, None).await?;
        let text = out.stdout_text();
        let elapsed: i64 = text
            .lines()
            .find_map(|l| l.strip_prefix("elapsed="))
            .and_then(|e| e.trim().parse().ok())
            .unwrap_or(0)
            + delay;
        let mut res = match out.rc {
            0 => ModuleResult::ok(),
            88 => {
                let m = a
                    .msg
                    .clone()
                    .map(|m| m.0)
                    .unwrap_or_else(|| format!("Timeout when waiting for {}", what));
                ModuleResult::failed(m)
            }
            _ => {
                return Err(remote::remote_error(
                    &format!("wait_for: cannot wait for {}", what),
                    &out,
                )
                .at_opt(ctx.span.as_ref()))
            }
        };
        res.data.insert("elapsed".into(), elapsed.into());
        let state = a.state.unwrap_or(WaitState::Started);
        res.data.insert("state".into(), state.as_str().into());
        if let Some(Int(p)) = a.port {
            res.data.insert("port".into(), p.into());
        }
        if let Some(p) = &a.path {
            res.data.insert("path".into(), p.as_str().into());
        }
        if let Some(r) = &a.search_regex {
            res.data.insert("search_regex".into(), r.as_str().into());
        }
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::*;
    use super::*;

    #[tokio::test]
    async fn waits_for_paths_ports_and_regexes() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), serde_json::json!({}));
        let f = dir.path().join("f");
        std::fs::write(&f, "status: ready 42\n").unwrap();
        let fs = f.to_str().unwrap();
        let r = WaitFor
            .run(&c, args(serde_json::json!({"path": fs, "timeout": 2})))
            .await
            .unwrap();
        assert!(!r.failed, "{:?}", r);
        let r = WaitFor
            .run(
                &c,
                args(serde_json::json!({"path": fs, "search_regex": "ready \\d+", "timeout": 2})),
            )
            .await
            .unwrap();
        assert!(!r.failed, "{:?}", r);
        let r = WaitFor
            .run(
                &c,
                args(serde_json::json!({"path": fs, "search_regex": "nope", "timeout": 1})),
            )
            .await
            .unwrap();
        assert!(r.failed);
        assert!(r.msg.unwrap().contains("search string nope"));
        // A listening port is seen open; a closed one is seen closed.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let r = WaitFor
            .run(&c, args(serde_json::json!({"port": port, "timeout": 3})))
            .await
            .unwrap();
        assert!(!r.failed, "{:?}", r);
        drop(l);
        let r = WaitFor
            .run(
                &c,
                args(serde_json::json!({"port": port, "state": "stopped", "timeout": 3})),
            )
            .await
            .unwrap();
        assert!(!r.failed, "{:?}", r);
        let r = WaitFor
            .run(&c, args(serde_json::json!({"port": port, "timeout": 1})))
            .await
            .unwrap();
        assert!(r.failed);
        assert_eq!(
            r.msg.as_deref(),
            Some(format!("Timeout when waiting for 127.0.0.1:{}", port).as_str())
        );
    }

    #[test]
    fn validate_at_load() {
        let check = |a: Value| WaitFor.validate(a.as_object().unwrap());
        assert!(
            check(serde_json::json!({"port": "6443", "timeout": 30, "state": "started"})).is_ok()
        );
        let e = check(serde_json::json!({"port": 6443, "state": "up"})).unwrap_err();
        assert!(
            e.message.contains("wait_for")
                && e.message.contains("`state`")
                && e.message.contains("started, present, stopped, absent"),
            "{}",
            e.message
        );
        let e = check(serde_json::json!({"port": 6443, "timout": 3})).unwrap_err();
        assert!(e.message.contains("wait_for") && e.message.contains("timout"));
        let e = check(serde_json::json!({"port": 6443, "path": "/x"})).unwrap_err();
        assert!(e.message.contains("mutually exclusive"));
        assert!(check(serde_json::json!({"port": 70000})).is_err());
        assert!(check(serde_json::json!({"state": "drained"})).is_err());
    }
}
