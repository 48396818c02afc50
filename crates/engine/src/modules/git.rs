//! `git` (`ansible.builtin.git`): a checkout of a repository at a version (branch, tag or
//! sha), cloned when missing and fetched and switched when present. ansible-core's module
//! is a long chain of git commands whose every decision depends on the last answer, so
//! kk runs the same chain as one shell script on the host (`git.sh`): one round trip,
//! with check mode as the same script told to only look. Result keys are Ansible's:
//! `before`, `after`, `remote_url_changed`, `submodules_changed` and `msg`. Not shown
//! yet: ansible-core's `--diff` text (`diff.prepared`; the script can make it, kk's diff
//! display takes file contents only) and its warnings (depth ignored for a sha); 2.19
//! keeps both out of the registered result.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{Flag, Int, List, Text};
use super::plan::OneScript;
use super::remote::remote_error;
use super::{parse_args, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GitArgs {
    #[serde(default, alias = "name")]
    repo: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    version: Option<Text>,
    #[serde(default)]
    remote: Option<Text>,
    #[serde(default)]
    refspec: Option<Text>,
    #[serde(default)]
    reference: Option<Text>,
    #[serde(default)]
    force: Flag,
    #[serde(default)]
    depth: Option<Int>,
    #[serde(default = "Flag::on")]
    clone: Flag,
    #[serde(default = "Flag::on")]
    update: Flag,
    #[serde(default)]
    verify_commit: Flag,
    #[serde(default, alias = "gpg_whitelist")]
    gpg_allowlist: Option<List>,
    #[serde(default)]
    accept_hostkey: Flag,
    #[serde(default)]
    accept_newhostkey: Flag,
    #[serde(default)]
    key_file: Option<Text>,
    #[serde(default)]
    ssh_opts: Option<Text>,
    #[serde(default)]
    executable: Option<Text>,
    #[serde(default)]
    bare: Flag,
    #[serde(default = "Flag::on")]
    recursive: Flag,
    #[serde(default)]
    single_branch: Flag,
    #[serde(default)]
    track_submodules: Flag,
    #[serde(default)]
    umask: Option<Value>,
    #[serde(default)]
    archive: Option<Text>,
    #[serde(default)]
    archive_prefix: Option<Text>,
    #[serde(default)]
    separate_git_dir: Option<Text>,
}

const VALID: &[&str] = &[
    "repo",
    "name",
    "dest",
    "version",
    "remote",
    "refspec",
    "reference",
    "force",
    "depth",
    "clone",
    "update",
    "verify_commit",
    "gpg_allowlist",
    "accept_hostkey",
    "accept_newhostkey",
    "key_file",
    "ssh_opts",
    "executable",
    "bare",
    "recursive",
    "single_branch",
    "track_submodules",
    "umask",
    "archive",
    "archive_prefix",
    "separate_git_dir",
];

/// The host script; see its header for the variables it reads.
const SCRIPT: &str = include_str!("git.sh");

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("git: {}", msg.into()))
}

/// What the script needs, or a failure ansible-core reports as the module's (not the
/// arguments') — `umask` not a quoted octal string.
struct Checked {
    vars: Vec<(&'static str, String)>,
    failure: Option<String>,
}

/// ansible-core's `set_git_ssh_env`: the options appended to `ssh` in GIT_SSH_COMMAND.
fn ssh_options(a: &GitArgs) -> String {
    let mut given = a.ssh_opts.as_ref().map(|t| t.0.clone());
    let add_if_missing = |given: &mut Option<String>, opt: &str| match given {
        Some(o) => {
            if !o.contains("-o StrictHostKeyChecking=no")
                && !o.contains("-o StrictHostKeyChecking=accept-new")
            {
                o.push_str(&format!(" -o {opt}"));
            }
        }
        None => *given = Some(format!("-o {opt}")),
    };
    if a.accept_hostkey.0 {
        add_if_missing(&mut given, "StrictHostKeyChecking=no");
    }
    if a.accept_newhostkey.0 {
        add_if_missing(&mut given, "StrictHostKeyChecking=accept-new");
    }
    let mut opts = given.map(|g| format!(" {g}")).unwrap_or_default();
    if a.accept_hostkey.0 && !opts.contains("StrictHostKeyChecking=no") {
        opts.push_str(" -o StrictHostKeyChecking=no");
    }
    if !opts.contains("BatchMode=yes") {
        opts.push_str(" -o BatchMode=yes");
    }
    if let Some(k) = &a.key_file {
        let key_opt = format!("-i {}", k.0);
        if !opts.contains(&key_opt) {
            opts.push_str(&format!("  {key_opt}"));
        }
        if !opts.contains("IdentitiesOnly=yes") {
            opts.push_str(" -o IdentitiesOnly=yes");
        }
    }
    opts
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: GitArgs = parse_args("git", raw, VALID)?;
    let repo = a.repo.as_ref().map(|r| r.0.clone()).ok_or_else(|| {
        arg_err("`repo` is required").help("the repository's URL or path, e.g. https://host/x.git")
    })?;
    if a.accept_hostkey.0 && a.accept_newhostkey.0 {
        return Err(arg_err(
            "parameters are mutually exclusive: accept_hostkey|accept_newhostkey",
        ));
    }
    if a.separate_git_dir.is_some() && a.bare.0 {
        return Err(arg_err(
            "parameters are mutually exclusive: separate_git_dir|bare",
        ));
    }
    if a.archive_prefix.is_some() && a.archive.is_none() {
        return Err(arg_err(
            "missing parameter(s) required by 'archive_prefix': archive",
        ));
    }
    let unsupported = [
        ("archive", a.archive.is_some()),
        ("separate_git_dir", a.separate_git_dir.is_some()),
        ("verify_commit", a.verify_commit.0),
        (
            "gpg_allowlist",
            a.gpg_allowlist.as_ref().is_some_and(|l| !l.0.is_empty()),
        ),
    ];
    if let Some((name, _)) = unsupported.iter().find(|(_, on)| *on) {
        return Err(arg_err(format!("`{name}` is not supported by kk yet"))
            .help(format!("leave `{name}` out, or run this task with Ansible")));
    }
    let mut failure = None;
    let umask = match &a.umask {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => match u32::from_str_radix(s.trim(), 8) {
            Ok(m) => format!("{m:o}"),
            Err(_) => {
                failure = Some("umask must be an octal integer".to_string());
                String::new()
            }
        },
        Some(_) => {
            failure = Some("umask must be defined as a quoted octal integer".to_string());
            String::new()
        }
    };
    let flag = |b: bool| if b { "1".to_string() } else { String::new() };
    let depth = a.depth.map(|d| d.0).filter(|d| *d != 0);
    let vars = vec![
        ("kk_repo", repo),
        (
            "kk_dest",
            a.dest.as_ref().map(|d| d.0.clone()).unwrap_or_default(),
        ),
        (
            "kk_version",
            a.version
                .as_ref()
                .map(|v| v.0.clone())
                .unwrap_or_else(|| "HEAD".into()),
        ),
        (
            "kk_remote",
            a.remote
                .as_ref()
                .map(|v| v.0.clone())
                .unwrap_or_else(|| "origin".into()),
        ),
        (
            "kk_refspec",
            a.refspec.as_ref().map(|v| v.0.clone()).unwrap_or_default(),
        ),
        (
            "kk_reference",
            a.reference
                .as_ref()
                .map(|v| v.0.clone())
                .unwrap_or_default(),
        ),
        ("kk_force", flag(a.force.0)),
        ("kk_depth", depth.map(|d| d.to_string()).unwrap_or_default()),
        ("kk_clone", flag(a.clone.0)),
        ("kk_update", flag(a.update.0)),
        ("kk_bare", flag(a.bare.0)),
        ("kk_recursive", flag(a.recursive.0)),
        ("kk_single_branch", flag(a.single_branch.0)),
        ("kk_track", flag(a.track_submodules.0)),
        ("kk_umask", umask),
        ("kk_ssh", ssh_options(&a)),
        (
            "kk_git",
            a.executable
                .as_ref()
                .map(|v| v.0.clone())
                .unwrap_or_default(),
        ),
    ];
    Ok(Checked { vars, failure })
}

/// The script's sections (`\n==kk:NAME==\n` then the value), in order.
fn sections(stdout: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in stdout.split("\n==kk:").skip(1) {
        if let Some((name, value)) = part.split_once("==\n") {
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

fn to_result(stdout: &str) -> ModuleResult {
    let mut r = ModuleResult::ok();
    let mut failed = None;
    for (name, value) in sections(stdout) {
        match name.as_str() {
            "fail" => failed = Some(value),
            "changed" => r.changed = value == "true",
            "before_none" => r = r.with("before", Value::Null),
            "before" | "after" | "cmd" | "stdout" | "stderr" => r = r.with(&name, value),
            "rc" => r = r.with("rc", value.trim().parse::<i64>().unwrap_or(1)),
            "msg" => r = r.msg(value),
            "submodules_changed" => r = r.with("submodules_changed", true),
            "remote_url_changed" => {
                let v = match value.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "empty" => Value::String(String::new()),
                    _ => Value::Null,
                };
                r = r.with("remote_url_changed", v);
            }
            _ => {}
        }
    }
    if let Some(Value::String(out)) = r.data.get("stdout").cloned() {
        r = r.with("stdout_lines", super::py_splitlines(&out));
    }
    if let Some(Value::String(err)) = r.data.get("stderr").cloned() {
        r = r.with("stderr_lines", super::py_splitlines(&err));
    }
    match failed {
        Some(msg) => {
            r.changed = false;
            r.msg(msg).failed_too()
        }
        None => r,
    }
}

/// `ansible.builtin.git`.
pub struct Git;

#[async_trait]
impl OneScript for Git {
    async fn script(
        &self,
        ctx: &ModuleContext,
        args: VarMap,
        report_only: bool,
    ) -> Result<ModuleResult> {
        let c = check(args).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        if let Some(msg) = c.failure {
            return Ok(ModuleResult::failed(msg));
        }
        let mut s = String::new();
        for (k, v) in &c.vars {
            s.push_str(&format!("{k}={}\n", shell_quote(v)));
        }
        s.push_str(&format!(
            "kk_check={}\n",
            if report_only { "1" } else { "''" }
        ));
        // The diff text is not shown yet: spare the script its `git diff` (and fetch).
        s.push_str("kk_diff=''\n");
        s.push_str(SCRIPT);
        let out = ctx.exec(s, None).await?;
        if out.rc != 0 {
            return Err(
                remote_error("git: the module's script failed", &out).at_opt(ctx.span.as_ref())
            );
        }
        Ok(to_result(&String::from_utf8_lossy(&out.stdout)))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(v: Value) -> Vec<(&'static str, String)> {
        check(v.as_object().unwrap().clone()).unwrap().vars
    }

    fn var(v: &[(&'static str, String)], k: &str) -> String {
        v.iter().find(|(n, _)| *n == k).unwrap().1.clone()
    }

    #[test]
    fn arguments() {
        let v = vars(
            json!({"repo": "/srv/x.git", "dest": "/w", "depth": "1", "accept_hostkey": true, "key_file": "/k"}),
        );
        assert_eq!(var(&v, "kk_version"), "HEAD");
        assert_eq!(var(&v, "kk_depth"), "1");
        assert_eq!(var(&v, "kk_recursive"), "1");
        assert_eq!(
            var(&v, "kk_ssh"),
            " -o StrictHostKeyChecking=no -o BatchMode=yes  -i /k -o IdentitiesOnly=yes"
        );
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        assert!(e(json!({"dest": "/w"})).contains("repo"));
        assert!(e(json!({"repo": "r", "archive": "/a.zip"})).contains("not supported"));
        assert!(
            e(json!({"repo": "r", "accept_hostkey": 1, "accept_newhostkey": 1}))
                .contains("mutually exclusive")
        );
        assert!(e(json!({"repo": "r", "branch": "x"})).contains("branch"));
        let c = check(
            json!({"repo": "r", "umask": 18})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
        assert_eq!(
            c.failure.as_deref(),
            Some("umask must be defined as a quoted octal integer")
        );
    }

    #[test]
    fn script_output() {
        let r = to_result("x\n==kk:remote_url_changed==\nfalse\n==kk:before==\nabc\n==kk:after==\ndef\n==kk:changed==\ntrue");
        assert!(r.changed);
        let v = r.to_value();
        assert_eq!(v["before"], "abc");
        assert_eq!(v["after"], "def");
        assert_eq!(v["remote_url_changed"], false);
        let f = to_result("\n==kk:fail==\nLocal modifications exist\n==kk:before==\nabc");
        assert!(f.failed && !f.changed);
        assert_eq!(f.msg.as_deref(), Some("Local modifications exist"));
    }
}
