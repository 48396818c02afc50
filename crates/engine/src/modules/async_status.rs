//! `async_status` and the job status files of `async` tasks.
//!
//! As Ansible's `async_wrapper`, a job has one JSON file on the host,
//! `~/.ansible_async/<jid>` (home of the user the task runs as): `{"started": 1,
//! "finished": 0, "ansible_job_id": …}` while it runs, the module's result once done.
//! kk has no Python on the host: the files are written with shell (temp file + rename)
//! and read with `cat`; the job itself is driven by kk (see `exec::async_job`).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::Text;
use super::remote::remote_error;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

/// Where the job files live, below the home directory of the user the task runs as.
pub const ASYNC_DIR: &str = ".ansible_async";

/// A job id in Ansible's form: `j<number>.<pid>`.
pub fn new_jid() -> String {
    let mut b = [0u8; 8];
    // A failed random source still gives distinct ids through the pid and the clock.
    let _ = getrandom::getrandom(&mut b);
    let n = u64::from_le_bytes(b)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
    format!("j{}.{}", n % 1_000_000_000_000, std::process::id())
}

/// Checks a job id before it names a file: Ansible's are `j<digits>.<digits>`; any
/// name without `/` and not `.`/`..` is taken, as a path component.
fn check_jid(jid: &str) -> Result<()> {
    if jid.is_empty() || jid.contains('/') || jid == "." || jid == ".." || jid.contains('\0') {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("async_status: `jid` {jid:?} is not a job id"),
        )
        .help("pass the `ansible_job_id` of the registered result of an `async` task"));
    }
    Ok(())
}

/// Writes a job's status file atomically and prints its full path.
pub async fn write_status(ctx: &ModuleContext, jid: &str, status: &Value) -> Result<String> {
    let script = format!(
        "d=\"$HOME\"/{dir}\nmkdir -p -- \"$d\" && chmod 700 \"$d\" || exit 1\n\
         t=$(mktemp \"$d/.kk_tmp-$$-XXXXXXXX\") || exit 1\ncat > \"$t\" || {{ rm -f \"$t\"; exit 1; }}\n\
         mv -f -- \"$t\" \"$d\"/{jid} || {{ rm -f \"$t\"; exit 1; }}\nprintf '%s\\n' \"$d\"/{jid}\n",
        dir = ASYNC_DIR,
        jid = shell_quote(jid)
    );
    let out = ctx
        .exec(script, Some(status.to_string().into_bytes()))
        .await?;
    if out.rc != 0 {
        return Err(remote_error(
            &format!("cannot write the status of async job {jid}"),
            &out,
        ));
    }
    Ok(out.stdout_text())
}

/// What the host has for a job.
enum Found {
    /// No file: no such job, or it was cleaned up.
    Missing(String),
    /// The file's path and content.
    File(String, Vec<u8>),
    /// Removed (cleanup), at this path.
    Erased(String),
}

async fn read_or_erase(ctx: &ModuleContext, jid: &str, erase: bool) -> Result<Found> {
    let script = format!(
        "p=\"$HOME\"/{dir}/{jid}\nprintf '%s\\n' \"$p\"\n[ -e \"$p\" ] || exit 3\n{act}",
        dir = ASYNC_DIR,
        jid = shell_quote(jid),
        act = if erase {
            "rm -f -- \"$p\" || exit 1\n"
        } else {
            "cat -- \"$p\" || exit 1\n"
        }
    );
    let out = ctx.exec(script, None).await?;
    let text = &out.stdout;
    let nl = text.iter().position(|b| *b == b'\n').unwrap_or(text.len());
    let path = String::from_utf8_lossy(&text[..nl]).into_owned();
    let rest = text.get(nl + 1..).unwrap_or_default().to_vec();
    match out.rc {
        0 if erase => Ok(Found::Erased(path)),
        0 => Ok(Found::File(path, rest)),
        3 => Ok(Found::Missing(path)),
        _ => Err(remote_error(
            &format!("cannot read the status of async job {jid}"),
            &out,
        )),
    }
}

/// Removes a job's status file (nothing when it is gone already).
pub async fn erase(ctx: &ModuleContext, jid: &str) -> Result<()> {
    read_or_erase(ctx, jid, true).await.map(|_| ())
}

/// The status of a job in `async_status`'s shape (also what polling an `async` task
/// reports): `started`/`finished` as booleans, empty output keys when the job has none.
pub async fn job_status(ctx: &ModuleContext, jid: &str) -> Result<ModuleResult> {
    let mut base = Map::new();
    base.insert("started".into(), true.into());
    base.insert("finished".into(), false.into());
    for k in ["stdout", "stderr"] {
        base.insert(k.into(), "".into());
        base.insert(format!("{k}_lines"), json!([]));
    }
    base.insert("ansible_job_id".into(), jid.into());
    let (path, data) = match read_or_erase(ctx, jid, false).await? {
        Found::Missing(path) => {
            base.insert("results_file".into(), path.into());
            base.insert("finished".into(), true.into());
            return Ok(from_map(base, false).msg("could not find job").failed_too());
        }
        Found::File(path, data) => (path, data),
        Found::Erased(_) => unreachable!("read without erase"),
    };
    base.insert("results_file".into(), path.clone().into());
    let parsed: Option<Map<String, Value>> = serde_json::from_slice::<Value>(&data)
        .ok()
        .and_then(|v| v.as_object().cloned());
    let Some(mut data) = parsed else {
        // Being written (Ansible: "file not written yet? That means it is running").
        return Ok(from_map(base, false));
    };
    if !data.contains_key("started") {
        data.insert("finished".into(), true.into());
        data.insert("ansible_job_id".into(), jid.into());
    } else if !data.contains_key("finished") {
        data.insert("finished".into(), false.into());
    }
    for (k, v) in data {
        base.insert(k, v);
    }
    for k in ["started", "finished"] {
        let b = crate::ansible::to_bool(&base[k]).unwrap_or(false);
        base.insert(k.into(), b.into());
    }
    let failed = base
        .get("failed")
        .and_then(crate::ansible::to_bool)
        .unwrap_or(false);
    Ok(from_map(base, failed))
}

/// A result from a job file's keys (`changed`, `failed`, `msg` become the typed fields).
fn from_map(mut m: Map<String, Value>, failed: bool) -> ModuleResult {
    let changed = m
        .remove("changed")
        .and_then(|v| crate::ansible::to_bool(&v))
        .unwrap_or(false);
    m.remove("failed");
    let msg = m.remove("msg").map(|v| match v {
        Value::String(s) => s,
        other => other.to_string(),
    });
    let skipped = m
        .remove("skipped")
        .and_then(|v| crate::ansible::to_bool(&v))
        .unwrap_or(false);
    ModuleResult {
        changed,
        failed,
        skipped,
        msg,
        data: m,
        ..Default::default()
    }
}

crate::closed_set! {
    /// What `async_status` does.
    enum Mode for "mode" { Status = "status", Cleanup = "cleanup" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusArgs {
    #[serde(default)]
    jid: Option<Text>,
    #[serde(default)]
    mode: Option<Mode>,
}

fn check(raw: VarMap) -> Result<(String, Mode)> {
    let a: StatusArgs = parse_args("async_status", raw, &["jid", "mode"])?;
    let jid = a
        .jid
        .map(|j| j.0)
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "async_status: `jid` is required"))?;
    check_jid(&jid)?;
    Ok((jid, a.mode.unwrap_or(Mode::Status)))
}

/// Reports on (or removes the file of) a job started by an `async` task.
pub struct AsyncStatus;

#[async_trait]
impl Module for AsyncStatus {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let (jid, mode) = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        match mode {
            Mode::Status => job_status(ctx, &jid).await,
            Mode::Cleanup => {
                let mut m = Map::new();
                m.insert("started".into(), false.into());
                m.insert("finished".into(), false.into());
                for k in ["stdout", "stderr"] {
                    m.insert(k.into(), "".into());
                    m.insert(format!("{k}_lines"), json!([]));
                }
                m.insert("ansible_job_id".into(), jid.clone().into());
                match read_or_erase(ctx, &jid, true).await? {
                    Found::Erased(path) => {
                        m.insert("erased".into(), path.into());
                        Ok(from_map(m, false))
                    }
                    Found::Missing(path) => {
                        m.insert("erased".into(), path.into());
                        m.insert("started".into(), true.into());
                        m.insert("finished".into(), true.into());
                        Ok(from_map(m, false).msg("could not find job").failed_too())
                    }
                    Found::File(..) => unreachable!("erase never reads"),
                }
            }
        }
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        check(raw.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;

    #[tokio::test]
    async fn job_files_round_trip() {
        let home = tempfile::tempdir().unwrap();
        let mut c = ctx(home.path(), json!({}));
        c.env = vec![("HOME".into(), home.path().to_str().unwrap().into())];
        let jid = new_jid();
        assert!(jid.starts_with('j') && jid.contains('.'));
        let path = write_status(
            &c,
            &jid,
            &json!({"started": 1, "finished": 0, "ansible_job_id": jid}),
        )
        .await
        .unwrap();
        assert_eq!(
            path,
            format!("{}/.ansible_async/{jid}", home.path().display())
        );
        let r = AsyncStatus
            .run(&c, args(json!({"jid": jid})))
            .await
            .unwrap();
        assert!(!r.failed && r.data["finished"] == false && r.data["started"] == true);
        write_status(&c, &jid, &json!({"rc": 0, "stdout": "hi", "changed": true}))
            .await
            .unwrap();
        let r = AsyncStatus
            .run(&c, args(json!({"jid": jid})))
            .await
            .unwrap();
        assert!(r.changed && r.data["finished"] == true && r.data["stdout"] == "hi");
        let r = AsyncStatus
            .run(&c, args(json!({"jid": jid, "mode": "cleanup"})))
            .await
            .unwrap();
        assert_eq!(r.data["erased"], path.as_str());
        let r = AsyncStatus
            .run(&c, args(json!({"jid": jid})))
            .await
            .unwrap();
        assert!(r.failed && r.msg.as_deref() == Some("could not find job"));
        assert!(AsyncStatus.validate(&args(json!({"jid": "../x"}))).is_err());
        assert!(AsyncStatus
            .validate(&args(json!({"mode": "status"})))
            .is_err());
    }
}
