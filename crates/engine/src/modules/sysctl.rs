//! `sysctl` (`ansible.posix.sysctl`): a kernel parameter in a sysctl file (default
//! `/etc/sysctl.conf`, written through a temp file and rename), optionally set now
//! (`sysctl_set`) and reloaded from the file (`reload`). The decisions are the
//! collection's, ported: the file's lines are normalised to `key=value` when it is
//! written, and `changed` is the only result key.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{qpath, remote_error, write_file, WriteOptions};
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the entry should be in the file.
    enum State for "state" { Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SysctlArgs {
    #[serde(default, alias = "key")]
    name: Option<Text>,
    #[serde(default, alias = "val")]
    value: Option<serde_json::Value>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default = "Flag::on")]
    reload: Flag,
    #[serde(default)]
    sysctl_set: Flag,
    #[serde(default)]
    ignoreerrors: Flag,
    #[serde(default)]
    sysctl_file: Option<Text>,
}

const VALID: &[&str] = &[
    "name",
    "value",
    "state",
    "reload",
    "sysctl_set",
    "ignoreerrors",
    "sysctl_file",
];

struct Checked {
    name: String,
    value: String,
    state: State,
    reload: bool,
    sysctl_set: bool,
    ignoreerrors: bool,
    file: String,
}

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("sysctl: {}", msg.into()))
}

/// The collection's `_parse_value` of the value as a string (`type='str'`): booleans and
/// their spellings become `1`/`0`. The string `1.0` stays (only the float is in Ansible's
/// boolean sets, and the value is a string by then).
fn parse_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(b) => if *b { "1" } else { "0" }.into(),
        serde_json::Value::String(s) => match s.to_lowercase().as_str() {
            "y" | "yes" | "on" | "1" | "true" | "t" => "1".into(),
            "n" | "no" | "off" | "0" | "false" | "f" => "0".into(),
            _ => s.trim().to_string(),
        },
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Types and names of the arguments; `Ok(Err(msg))` for what the collection reports as a
/// failed task (a missing or blank name or value), so `ignore_errors` applies as there.
fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let a: SysctlArgs = parse_args("sysctl", raw, VALID)?;
    let Some(name) = a.name.map(|n| n.0) else {
        return Ok(Err("missing required arguments: name".into()));
    };
    let state = a.state.unwrap_or(State::Present);
    let value = match &a.value {
        None | Some(serde_json::Value::Null) if state == State::Present => {
            return Ok(Err(
                "state is present but all of the following are missing: value".into(),
            ))
        }
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(v),
    };
    if name.is_empty() {
        return Ok(Err("name cannot be blank".into()));
    }
    if state == State::Present
        && matches!(value, Some(serde_json::Value::String(s)) if s.is_empty())
    {
        return Ok(Err("value cannot be blank".into()));
    }
    let name = name.trim().to_string();
    if name.is_empty() || name.contains(['=', '\n']) || name.contains(char::is_whitespace) {
        return Err(arg_err(format!("{:?} is not a sysctl key", name)));
    }
    let value = value.map(parse_value).unwrap_or_default();
    if value.contains('\n') {
        return Err(arg_err("`value` cannot span lines"));
    }
    Ok(Ok(Checked {
        name,
        value,
        state,
        reload: a.reload.0,
        sysctl_set: a.sysctl_set.0,
        ignoreerrors: a.ignoreerrors.0,
        file: a
            .sysctl_file
            .map(|f| f.0)
            .unwrap_or_else(|| "/etc/sysctl.conf".into()),
    }))
}

/// The file's values (`key = value` lines, comments `#`/`;` skipped; the last wins).
fn file_value(lines: &[String], name: &str) -> Option<String> {
    let mut found = None;
    for l in lines {
        if l.is_empty() || l.starts_with(['#', ';']) || !l.contains('=') {
            continue;
        }
        let (k, v) = l.split_once('=').expect("has =");
        if k.trim() == name {
            found = Some(v.trim().to_string());
        }
    }
    found
}

/// The collection's `fix_lines`: every `k=v` line normalised, the first of a key kept
/// (set to the new value for `name`, dropped for `absent`), the entry appended when new.
fn fix_lines(lines: &[String], c: &Checked) -> String {
    let mut checked: Vec<String> = Vec::new();
    let mut out = String::new();
    for l in lines {
        if l.is_empty() || l.starts_with(['#', ';']) || !l.contains('=') {
            out.push_str(l);
            out.push('\n');
            continue;
        }
        let (k, v) = l.split_once('=').expect("has =");
        let (k, v) = (k.trim(), v.trim());
        if checked.iter().any(|c| c == k) {
            continue;
        }
        checked.push(k.to_string());
        if k == c.name {
            if c.state == State::Present {
                out.push_str(&format!("{}={}\n", k, c.value));
            }
        } else {
            out.push_str(&format!("{}={}\n", k, v));
        }
    }
    if c.state == State::Present && !checked.contains(&c.name) {
        out.push_str(&format!("{}={}\n", c.name, c.value));
    }
    out
}

fn values_equal(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// What apply does.
pub struct SysctlWork {
    c: Checked,
    set_proc: bool,
    write: Option<(String, String)>,
    reload: bool,
}

/// `ansible.posix.sysctl`.
pub struct Sysctl;

/// Output as the collection puts it in its messages: whole, trailing newline kept.
fn raw_text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The collection's check of sysctl's stderr.
fn stderr_failed(err: &str) -> bool {
    err.lines().any(|l| {
        l.starts_with("sysctl: setting key \"")
            && (l.ends_with("\": Invalid argument") || l.ends_with("\": Read-only file system"))
    })
}

#[async_trait]
impl PlanApply for Sysctl {
    type Work = SysctlWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<SysctlWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let script = format!(
            "export LANG=C LC_ALL=C LC_MESSAGES=C\nf={}\nv=$(sysctl -e -n {} 2>/dev/null) && printf 'proc=%s\\n' \"$v\" | tr '\\n' ' '; echo\nprintf 'real=%s\\n' \"$(readlink -f -- \"$f\" || printf %s \"$f\")\"\nif [ -f \"$f\" ]; then echo ==kk-file==; cat -- \"$f\" || exit 1; fi\n",
            qpath(&c.file),
            shell_quote(&c.name)
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Err(remote_error(&format!("Failed to open {}", c.file), &out));
        }
        let text = out.stdout_text();
        let (head, file) = match text.split_once("==kk-file==\n") {
            Some((h, f)) => (h.to_string(), Some(f.to_string())),
            None => (text.clone(), None),
        };
        let proc_value = head
            .lines()
            .find_map(|l| l.strip_prefix("proc="))
            .map(str::to_string);
        let real = head
            .lines()
            .find_map(|l| l.strip_prefix("real="))
            .filter(|r| !r.is_empty())
            .unwrap_or(&c.file)
            .to_string();
        let lines: Vec<String> = file
            .as_deref()
            .unwrap_or_default()
            .split_inclusive('\n')
            .map(|l| l.trim().to_string())
            .collect();
        let current = file_value(&lines, &c.name);
        let mut changed = false;
        let mut write = false;
        match (&current, c.state) {
            (None, State::Present) => (changed, write) = (true, true),
            (None, State::Absent) => {}
            (Some(v), State::Absent) if !v.is_empty() => (changed, write) = (true, true),
            (Some(v), _) if *v != c.value => (changed, write) = (true, true),
            _ if c.reload => {
                changed = proc_value
                    .as_deref()
                    .is_none_or(|p| !values_equal(p, &c.value));
            }
            _ => {}
        }
        let mut set_proc = false;
        if c.sysctl_set && c.state == State::Present {
            match &proc_value {
                None => changed = true,
                Some(p) if !values_equal(p, &c.value) => (changed, set_proc) = (true, true),
                _ => {}
            }
        }
        if !changed {
            return Ok(Plan::Done(ModuleResult::changed(false)));
        }
        let reload = c.reload;
        let write = write.then(|| (real, fix_lines(&lines, &c)));
        Ok(Plan::change(
            ModuleResult::ok(),
            SysctlWork {
                c,
                set_proc,
                write,
                reload,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: SysctlWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let e = if w.c.ignoreerrors { " -e" } else { "" };
        if w.set_proc {
            // The collection quotes the value for its shell-like split: one argument.
            let out = ctx
                .exec(
                    format!(
                        "export LANG=C LC_ALL=C LC_MESSAGES=C\nsysctl{} -w {}\n",
                        e,
                        shell_quote(&format!("{}={}", w.c.name, w.c.value))
                    ),
                    None,
                )
                .await?;
            if out.rc != 0 || stderr_failed(&out.stderr_text()) {
                return Ok(ModuleResult::failed(format!(
                    "setting {} failed: {}{}",
                    w.c.name,
                    raw_text(&out.stdout),
                    raw_text(&out.stderr)
                )));
            }
        }
        if let Some((path, content)) = w.write {
            write_file(ctx, &path, content.into_bytes(), &WriteOptions::default()).await?;
        }
        if w.reload {
            let out = ctx
                .exec(
                    format!(
                        "export LANG=C LC_ALL=C LC_MESSAGES=C\nsysctl{} -p {}\n",
                        e,
                        qpath(&w.c.file)
                    ),
                    None,
                )
                .await?;
            if out.rc != 0 || stderr_failed(&out.stderr_text()) {
                return Ok(ModuleResult::failed(format!(
                    "Failed to reload sysctl: {}{}",
                    raw_text(&out.stdout),
                    raw_text(&out.stderr)
                )));
            }
        }
        Ok(result)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn c(v: Value) -> Checked {
        check(v.as_object().unwrap().clone()).unwrap().unwrap()
    }

    #[test]
    fn lines_as_the_collection_writes_them() {
        let lines: Vec<String> = ["# comment", "", "a.b = 1", "x=2", "a.b=3", "; semi", "junk"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(file_value(&lines, "a.b").as_deref(), Some("3"));
        assert_eq!(
            fix_lines(&lines, &c(json!({"name": "a.b", "value": "5"}))),
            "# comment\n\na.b=5\nx=2\n; semi\njunk\n"
        );
        assert_eq!(
            fix_lines(&lines, &c(json!({"name": "a.b", "state": "absent"}))),
            "# comment\n\nx=2\n; semi\njunk\n"
        );
        assert_eq!(
            fix_lines(&lines, &c(json!({"name": "n.m", "value": true}))),
            "# comment\n\na.b=1\nx=2\n; semi\njunk\nn.m=1\n"
        );
        assert!(values_equal("4096\t87380  6291456\n", "4096 87380 6291456"));
        assert!(stderr_failed(
            "sysctl: setting key \"net.x\": Read-only file system\n"
        ));
    }

    #[test]
    fn arguments() {
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        let failed = |v: Value| {
            check(v.as_object().unwrap().clone())
                .unwrap()
                .err()
                .unwrap()
        };
        assert_eq!(
            failed(json!({"name": "a"})),
            "state is present but all of the following are missing: value"
        );
        assert_eq!(
            failed(json!({"value": 1})),
            "missing required arguments: name"
        );
        assert_eq!(
            failed(json!({"name": "", "value": 1})),
            "name cannot be blank"
        );
        assert_eq!(
            failed(json!({"name": "a", "value": ""})),
            "value cannot be blank"
        );
        assert!(
            e(json!({"name": "a", "value": 1, "sysctl_reload": true})).contains("sysctl_reload")
        );
        assert!(e(json!({"name": "a b", "value": 1})).contains("not a sysctl key"));
        assert_eq!(c(json!({"name": " a ", "value": "Yes"})).value, "1");
        assert_eq!(c(json!({"name": "a", "value": "1.0"})).value, "1.0");
        assert_eq!(c(json!({"name": "a", "value": 5})).value, "5");
        assert_eq!(c(json!({"name": "a", "state": "absent"})).value, "");
    }
}
