//! `cron` (`ansible.builtin.cron`): a named job (`#Ansible: <name>` comment above it) or an
//! environment variable in a user's crontab (`crontab [-u user]`) or in a cron file
//! (`/etc/cron.d/<file>` or an absolute path, with a user column). The crontab is read in
//! one round trip and edited on the controller with ansible-core's rules (which job line a
//! name owns, how an unnamed identical job is adopted, where a variable goes), then
//! installed with `crontab [-u user] -` or, for a cron file, a temp file and rename.
//! Result keys are Ansible's: `jobs`, `envs` (names after the edit), `cron_file`,
//! `backup_file`; `--diff` shows the crontab before and after (ansible-core 2.19 keeps
//! `diff` out of the registered result too). Ansible's two warnings (a job with line
//! breaks, an odd cron file name) are not shown: ansible-core 2.19 keeps them out of the
//! registered result, and kk has no warning display yet.

use std::sync::LazyLock;

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply};
use super::remote::{qpath, remote_error, write_outcome, write_script, WriteOptions};
use super::{parse_args, FileDiff, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the job or variable should be there.
    enum State for "state" { Present = "present", Absent = "absent" }
}

crate::closed_set! {
    /// `@reboot` and the other nicknames.
    enum Special for "special_time" {
        Reboot = "reboot", Yearly = "yearly", Annually = "annually", Monthly = "monthly",
        Weekly = "weekly", Daily = "daily", Hourly = "hourly"
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CronArgs {
    #[serde(default)]
    name: Option<Text>,
    #[serde(default)]
    user: Option<Text>,
    #[serde(default, alias = "value")]
    job: Option<Text>,
    #[serde(default)]
    cron_file: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    minute: Option<Text>,
    #[serde(default)]
    hour: Option<Text>,
    #[serde(default, alias = "dom")]
    day: Option<Text>,
    #[serde(default)]
    month: Option<Text>,
    #[serde(default, alias = "dow")]
    weekday: Option<Text>,
    #[serde(default)]
    special_time: Option<Special>,
    #[serde(default)]
    disabled: Flag,
    #[serde(default)]
    env: Flag,
    #[serde(default)]
    insertafter: Option<Text>,
    #[serde(default)]
    insertbefore: Option<Text>,
}

const VALID: &[&str] = &[
    "name",
    "user",
    "job",
    "value",
    "cron_file",
    "state",
    "backup",
    "minute",
    "hour",
    "day",
    "dom",
    "month",
    "weekday",
    "dow",
    "special_time",
    "disabled",
    "env",
    "insertafter",
    "insertbefore",
];

/// The arguments, parsed and with Ansible's defaults.
struct Checked {
    name: String,
    user: Option<String>,
    job: Option<String>,
    /// `cron_file` as given (reported back as Ansible does).
    cron_file_arg: Option<String>,
    /// The file it names: relative names are under `/etc/cron.d`.
    cron_file: Option<String>,
    state: State,
    backup: bool,
    times: [String; 5],
    special: Option<Special>,
    disabled: bool,
    env: bool,
    insertafter: Option<String>,
    insertbefore: Option<String>,
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: CronArgs = parse_args("cron", raw, VALID)?;
    let name = a.name.map(|n| n.0).ok_or_else(|| {
        Error::new(ErrorKind::ModuleArgs, "cron: `name` is required")
            .help("name the job (`#Ansible: <name>` marks it in the crontab) or the variable")
    })?;
    if a.insertafter.is_some() && a.insertbefore.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "cron: parameters are mutually exclusive: insertafter|insertbefore",
        ));
    }
    let star = |t: Option<Text>| t.map(|t| t.0).unwrap_or_else(|| "*".into());
    let cron_file_arg = a.cron_file.map(|f| f.0);
    let cron_file = cron_file_arg.as_ref().map(|f| {
        if f.starts_with('/') || f.starts_with('~') {
            f.clone()
        } else {
            format!("/etc/cron.d/{f}")
        }
    });
    Ok(Checked {
        name,
        user: a.user.map(|u| u.0),
        job: a.job.map(|j| j.0),
        cron_file_arg,
        cron_file,
        state: a.state.unwrap_or(State::Present),
        backup: a.backup.0,
        times: [
            star(a.minute),
            star(a.hour),
            star(a.day),
            star(a.month),
            star(a.weekday),
        ],
        special: a.special_time,
        disabled: a.disabled.0,
        env: a.env.0,
        insertafter: a.insertafter.map(|t| t.0),
        insertbefore: a.insertbefore.map(|t| t.0),
    })
}

const MARK: &str = "#Ansible: ";

/// The header lines some crons print first in `crontab -l` (ansible-core drops them).
static HEADER: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"^(?:# DO NOT EDIT THIS FILE - edit the master and reinstall\.|# \(/tmp/.*installed on.*\)|# \(.*version.*\))",
    )
    .expect("valid regex")
});

/// A variable's line (`NAME=…`), as ansible-core counts them for `envs`.
static ENV_LINE: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^\S+=").expect("valid regex"));

/// ansible-core's pattern for a variable's line: `^<name>=`, the name as a Python regular
/// expression (not escaped), anchored at the line's start as `re.match` is.
fn env_regex(name: &str) -> std::result::Result<fancy_regex::Regex, String> {
    crate::ansible::pyre::compile(&format!("\\A(?:^{name}=)"), false, false).map_err(|e| {
        format!("cron: the variable name {name:?} is not a valid regular expression: {e}")
    })
}

/// Python's `str.splitlines()`.
fn splitlines(s: &str) -> Vec<String> {
    match super::py_splitlines(s) {
        serde_json::Value::Array(v) => v
            .into_iter()
            .map(|l| l.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    }
}

/// The crontab being edited, as ansible-core's `CronTab` holds it.
#[derive(Debug, Clone)]
struct CronTab {
    lines: Vec<String>,
    /// The text as read (minus the header crontab -l may print): the diff's `before`.
    existing: String,
    /// Whether this is a cron file (jobs carry a user column).
    user_column: Option<String>,
}

impl CronTab {
    /// A user's crontab as `crontab -l` printed it: up to the first three lines of the
    /// header some crons print ("DO NOT EDIT THIS FILE" …) are dropped.
    fn from_crontab(out: &str) -> CronTab {
        let mut existing = out.to_string();
        let mut lines = Vec::new();
        for (count, l) in splitlines(out).into_iter().enumerate() {
            if count > 2 || !HEADER.is_match(&l) {
                lines.push(l);
            } else if let Some(i) = existing.find(&l) {
                let mut end = i + l.len();
                if existing[end..].starts_with(['\r', '\n']) {
                    end += 1;
                }
                existing.replace_range(i..end, "");
            }
        }
        CronTab {
            lines,
            existing,
            user_column: None,
        }
    }

    fn from_file(text: &str, user: Option<String>) -> CronTab {
        CronTab {
            lines: splitlines(text),
            existing: text.to_string(),
            user_column: user,
        }
    }

    fn is_empty(&self) -> bool {
        self.lines.iter().all(|l| l.trim().is_empty())
    }

    fn comment(name: &str) -> String {
        format!("{MARK}{name}")
    }

    /// ansible-core's `find_job`: the line after `#Ansible: <name>`; failing that, a line
    /// equal to `job` gets the comment inserted above it (the third element says so).
    fn find_job(&mut self, name: &str, job: Option<&str>) -> Vec<String> {
        let mut comment: Option<String> = None;
        for l in &self.lines {
            if let Some(c) = comment.take() {
                if c == name {
                    return vec![c, l.clone()];
                }
            } else if l.starts_with(MARK) {
                comment = Some(l.replace(MARK, ""));
            }
        }
        let Some(job) = job.filter(|j| !j.is_empty()) else {
            return Vec::new();
        };
        for i in 0..self.lines.len() {
            if self.lines[i] != job {
                continue;
            }
            // Python's lines[i - 1]: the last line when i is 0.
            let prev = if i == 0 { self.lines.len() - 1 } else { i - 1 };
            if !self.lines[prev].starts_with(MARK) {
                self.lines.insert(i, Self::comment(name));
                return vec![self.lines[i].clone(), job.to_string(), "new".into()];
            } else if !name.is_empty() && self.lines[prev] == Self::comment("None") {
                self.lines[prev] = Self::comment(name);
                return vec![self.lines[prev].clone(), job.to_string(), "new".into()];
            }
        }
        Vec::new()
    }

    /// ansible-core's `_update_job`: each `#Ansible: <name>` and the line after it are
    /// replaced by the new pair (`Some`) or dropped (`None`).
    fn update_job(&mut self, name: &str, job: Option<&str>) {
        let marker = Self::comment(name);
        let mut out = Vec::new();
        let mut pending: Option<String> = None;
        for l in std::mem::take(&mut self.lines) {
            if let Some(c) = pending.take() {
                if let Some(j) = job {
                    out.push(c);
                    out.push(j.to_string());
                }
            } else if l == marker {
                pending = Some(l);
            } else {
                out.push(l);
            }
        }
        self.lines = out;
    }

    /// The first line that Ansible's `re.match(r'^%s=' % name, line)` finds: the name
    /// is a Python regular expression (ansible-core formats it into the pattern as it is,
    /// so `A.B` also finds `AXB=…`), matched at the start of the line.
    fn find_env(&self, name: &str) -> std::result::Result<Option<(usize, String)>, String> {
        let re = env_regex(name)?;
        Ok(self
            .lines
            .iter()
            .position(|l| re.is_match(l).unwrap_or(false))
            .map(|i| (i, self.lines[i].clone())))
    }

    /// Every line [`CronTab::find_env`]'s pattern matches replaced by `decl` (`Some`) or
    /// dropped (`None`).
    fn update_env(&mut self, name: &str, decl: Option<&str>) -> std::result::Result<(), String> {
        let re = env_regex(name)?;
        let mut out = Vec::new();
        for l in std::mem::take(&mut self.lines) {
            if re.is_match(&l).unwrap_or(false) {
                if let Some(d) = decl {
                    out.push(d.to_string());
                }
            } else {
                out.push(l);
            }
        }
        self.lines = out;
        Ok(())
    }

    fn job_line(&self, c: &Checked, job: &str) -> String {
        let job = job.trim_matches(['\r', '\n']);
        let off = if c.disabled { "#" } else { "" };
        let user = self
            .user_column
            .as_deref()
            .map(|u| format!("{u} "))
            .unwrap_or_default();
        match c.special {
            Some(s) => format!("{off}@{} {user}{job}", s.as_str()),
            None => format!("{off}{} {user}{job}", c.times.join(" ")),
        }
    }

    fn job_names(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.starts_with(MARK))
            .map(|l| l.replace(MARK, ""))
            .collect()
    }

    fn env_names(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| ENV_LINE.is_match(l))
            .map(|l| l.split('=').next().unwrap_or_default().to_string())
            .collect()
    }

    /// The text written: the lines joined, trailing line ends collapsed to one.
    fn render(&self) -> String {
        let joined = self.lines.join("\n");
        if joined.is_empty() {
            joined
        } else {
            format!("{}\n", joined.trim_end_matches(['\r', '\n']))
        }
    }
}

/// What apply does.
pub enum CronWork {
    /// Install the new crontab (or cron file); keep a backup of the old one first.
    Write {
        content: String,
        backup: Option<String>,
        /// The cron file, or none for a user's crontab.
        file: Option<String>,
        /// `crontab -u <user>`, for another user's crontab.
        dash_u: Option<String>,
    },
    /// Remove the cron file its last job left empty.
    RemoveFile(String),
}

/// The host's side of a plan: where the crontab is and what it holds.
struct Read {
    /// The user whose crontab is read with `-u` (unset for the connecting user's own).
    dash_u: Option<String>,
    tab: CronTab,
    file_exists: bool,
}

async fn read(ctx: &ModuleContext, c: &Checked) -> Result<std::result::Result<Read, String>> {
    let mut s = String::from(
        "export LANG=C LC_ALL=C\ncommand -v crontab >/dev/null 2>&1 || { echo kk-no-crontab; echo \"$PATH\"; exit 0; }\nprintf 'me=%s\\n' \"$(id -un)\"\n",
    );
    match &c.cron_file {
        Some(f) => s.push_str(&format!(
            "f={}\nif [ -f \"$f\" ]; then echo ==kk-file==; cat -- \"$f\" || exit 1; else echo ==kk-nofile==; fi\n",
            qpath(f)
        )),
        None => {
            let u = c.user.as_deref().unwrap_or_default();
            s.push_str(&format!(
                "u={}\necho ==kk-tab==\nif [ -n \"$u\" ] && [ \"$u\" != \"$(id -un)\" ]; then crontab -u \"$u\" -l 2>/dev/null; else crontab -l 2>/dev/null; fi\nprintf '\\n==kk-rc=%s\\n' $?\n",
                shell_quote(u)
            ));
        }
    }
    let out = ctx.exec(s, None).await?;
    if out.rc != 0 {
        return Err(remote_error("cron: cannot read the cron file", &out));
    }
    // Raw: a cron file's last line end (or its absence) matters.
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some(path) = text.strip_prefix("kk-no-crontab\n") {
        return Ok(Err(format!(
            "Failed to find required executable \"crontab\" in paths: {}",
            path.trim_end()
        )));
    }
    let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let me = head.strip_prefix("me=").unwrap_or_default().to_string();
    if let Some(body) = rest.strip_prefix("==kk-file==\n") {
        return Ok(Ok(Read {
            dash_u: None,
            tab: CronTab::from_file(body, c.user.clone()),
            file_exists: true,
        }));
    }
    if rest.starts_with("==kk-nofile==") {
        return Ok(Ok(Read {
            dash_u: None,
            tab: CronTab::from_file("", c.user.clone()),
            file_exists: false,
        }));
    }
    let body = rest.strip_prefix("==kk-tab==\n").unwrap_or(rest);
    let (tab, rc) = body
        .rsplit_once("\n==kk-rc=")
        .map(|(t, rc)| (t, rc.trim().parse::<i32>().unwrap_or(-1)))
        .unwrap_or((body, -1));
    if rc != 0 && rc != 1 {
        return Ok(Err("Unable to read crontab".into()));
    }
    Ok(Ok(Read {
        dash_u: c.user.clone().filter(|u| *u != me),
        tab: CronTab::from_crontab(tab),
        file_exists: false,
    }))
}

/// `ansible.builtin.cron`.
pub struct Cron;

/// The decision, made on the controller from what was read.
struct Decision {
    changed: bool,
    tab: CronTab,
}

fn header(c: &Checked, file: &Option<String>) -> String {
    match (file, &c.user) {
        (Some(f), _) => f.clone(),
        (None, Some(u)) => format!("crontab for user \"{u}\""),
        (None, None) => "crontab".into(),
    }
}

/// ansible-core's checks made after the crontab is read, in its order.
fn semantic_error(c: &Checked) -> Option<String> {
    if c.special.is_some() && c.times.iter().any(|t| t != "*") {
        return Some(
            "You cannot combine special_time with any of the time or day/date parameters.".into(),
        );
    }
    if c.state == State::Present {
        if c.cron_file.is_some() && c.user.is_none() {
            return Some("To use cron_file=... parameter you must specify user=... as well".into());
        }
        if c.job.is_none() {
            return Some("You must specify 'job' to install a new cron job or variable".into());
        }
        if (c.insertafter.is_some() || c.insertbefore.is_some()) && !c.env {
            return Some(
                "Insertafter and insertbefore parameters are valid only with env=yes".into(),
            );
        }
    }
    if c.env && c.name.contains(' ') {
        return Some("Invalid name for environment variable".into());
    }
    None
}

fn decide(c: &Checked, mut tab: CronTab) -> std::result::Result<Decision, String> {
    let mut changed = false;
    let present = c.state == State::Present;
    if c.env {
        let decl = format!("{}=\"{}\"", c.name, c.job.as_deref().unwrap_or_default());
        let old = tab.find_env(&c.name)?;
        match (present, old) {
            (true, None) => {
                let other = c.insertafter.as_ref().or(c.insertbefore.as_ref());
                match other {
                    None => tab.lines.insert(0, decl),
                    Some(o) => match tab.find_env(o)? {
                        Some((i, _)) => {
                            let at = if c.insertafter.is_some() { i + 1 } else { i };
                            tab.lines.insert(at, decl);
                        }
                        None => return Err(format!("Variable named '{o}' not found.")),
                    },
                }
                changed = true;
            }
            (true, Some((_, line))) if line != decl => {
                tab.update_env(&c.name, Some(&decl))?;
                changed = true;
            }
            (false, Some(_)) => {
                tab.update_env(&c.name, None)?;
                changed = true;
            }
            _ => {}
        }
    } else if present {
        let raw = c.job.as_deref().unwrap_or_default();
        let job = tab.job_line(c, raw);
        let old = tab.find_job(&c.name, Some(&job));
        if old.is_empty() {
            tab.lines.push(CronTab::comment(&c.name));
            tab.lines.push(job.clone());
            changed = true;
        }
        if old.len() > 1 && old[1] != job || old.len() > 2 {
            tab.update_job(&c.name, Some(&job));
            changed = true;
        }
    } else if !tab.find_job(&c.name, None).is_empty() {
        tab.update_job(&c.name, None);
        changed = true;
    }
    if !changed && !tab.existing.is_empty() && !tab.existing.ends_with(['\r', '\n']) {
        changed = true;
    }
    Ok(Decision { changed, tab })
}

#[async_trait]
impl PlanApply for Cron {
    type Work = CronWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<CronWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        if let Some(f) = &c.cron_file_arg {
            if f == "/etc/crontab" {
                return Ok(Plan::Done(ModuleResult::failed(
                    "Will not manage /etc/crontab via cron_file, see documentation.",
                )));
            }
        }
        let read = match read(ctx, &c).await? {
            Ok(r) => r,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        if let Some(msg) = semantic_error(&c) {
            return Ok(Plan::Done(ModuleResult::failed(msg)));
        }
        let before_text = read.tab.existing.clone();
        let backup = c.backup.then(|| read.tab.render());
        let head = header(&c, &c.cron_file);
        let d = match decide(&c, read.tab) {
            Ok(d) => d,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        // The last job of a cron file gone: the file goes (ansible-core's early exit).
        if c.state == State::Absent
            && !c.env
            && d.changed
            && c.cron_file.is_some()
            && d.tab.is_empty()
        {
            let mut r = ModuleResult::ok()
                .with("cron_file", c.cron_file_arg.clone().unwrap_or_default())
                .with("state", "absent");
            if ctx.diff {
                r.diffs.push(FileDiff {
                    before_header: head,
                    after_header: "/dev/null".into(),
                    before: before_text,
                    after: String::new(),
                });
            }
            let r = r;
            return Ok(if read.file_exists {
                Plan::change(
                    r,
                    CronWork::RemoveFile(c.cron_file.clone().unwrap_or_default()),
                )
            } else {
                Plan::Done(r)
            });
        }
        let mut r = ModuleResult::changed(d.changed)
            .with("jobs", d.tab.job_names())
            .with("envs", d.tab.env_names());
        let after = d.tab.render();
        if d.changed && ctx.diff {
            r.diffs.push(FileDiff {
                before_header: head.clone(),
                after_header: head,
                before: before_text,
                after: after.clone(),
            });
        }
        if let Some(f) = &c.cron_file_arg {
            r = r.with("cron_file", f.clone());
        }
        let r = r;
        if !d.changed {
            return Ok(Plan::Done(r));
        }
        Ok(Plan::change(
            r,
            CronWork::Write {
                content: after,
                backup,
                file: c.cron_file,
                dash_u: read.dash_u,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: CronWork,
        mut result: ModuleResult,
    ) -> Result<ModuleResult> {
        match w {
            CronWork::RemoveFile(f) => {
                let out = ctx.exec(format!("rm -f -- {}\n", qpath(&f)), None).await?;
                if out.rc != 0 {
                    return Err(remote_error(&format!("cron: cannot remove {f}"), &out));
                }
                Ok(result)
            }
            CronWork::Write {
                content,
                backup,
                file,
                dash_u,
            } => {
                if let Some(old) = backup {
                    let out = ctx
                        .exec(
                            "umask 077\nb=$(mktemp \"${TMPDIR:-/tmp}/crontabXXXXXXXX\") || exit 1\ncat > \"$b\" || exit 1\nprintf '%s\\n' \"$b\"\n",
                            Some(old.into_bytes()),
                        )
                        .await?;
                    if out.rc != 0 {
                        return Err(remote_error("cron: cannot write the backup", &out));
                    }
                    result = result.with("backup_file", out.stdout_text().trim_end().to_string());
                }
                match file {
                    Some(f) => {
                        let data = content.into_bytes();
                        let s = format!(
                            "umask 022\n{}",
                            write_script(&f, &WriteOptions::default(), Some(data.len() as u64))
                        );
                        let out = ctx.exec(s, Some(data)).await?;
                        write_outcome(&f, &out)?;
                    }
                    None => {
                        let u = dash_u
                            .map(|u| format!("-u {} ", shell_quote(&u)))
                            .unwrap_or_default();
                        let out = ctx
                            .exec(format!("crontab {u}-\n"), Some(content.into_bytes()))
                            .await?;
                        if out.rc != 0 {
                            return Ok(ModuleResult::failed("Failed to install new crontab")
                                .with_output(&out));
                        }
                    }
                }
                Ok(result)
            }
        }
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
        check(v.as_object().unwrap().clone()).unwrap()
    }

    #[test]
    fn jobs_as_ansible_edits_them() {
        let args = c(json!({"name": "a", "job": "ls", "minute": 5}));
        let tab = CronTab::from_crontab(
            "# DO NOT EDIT THIS FILE - edit the master and reinstall.\nMAILTO=x\n",
        );
        assert_eq!(tab.existing, "MAILTO=x\n");
        let d = decide(&args, tab).unwrap();
        assert!(d.changed);
        assert_eq!(d.tab.render(), "MAILTO=x\n#Ansible: a\n5 * * * * ls\n");
        assert_eq!(d.tab.job_names(), vec!["a"]);
        assert_eq!(d.tab.env_names(), vec!["MAILTO"]);
        // Idempotent, then changed in place.
        let d2 = decide(&args, CronTab::from_crontab(&d.tab.render())).unwrap();
        assert!(!d2.changed);
        let d3 = decide(
            &c(json!({"name": "a", "job": "ls", "special_time": "daily", "disabled": true})),
            CronTab::from_crontab(&d.tab.render()),
        )
        .unwrap();
        assert_eq!(d3.tab.render(), "MAILTO=x\n#Ansible: a\n#@daily ls\n");
        // An unnamed identical job is adopted.
        let d4 = decide(&args, CronTab::from_crontab("5 * * * * ls")).unwrap();
        assert!(d4.changed);
        assert_eq!(d4.tab.render(), "#Ansible: a\n5 * * * * ls\n");
        // Removal.
        let d5 = decide(
            &c(json!({"name": "a", "state": "absent"})),
            CronTab::from_crontab(&d.tab.render()),
        )
        .unwrap();
        assert_eq!(d5.tab.render(), "MAILTO=x\n");
    }

    /// ansible-core finds a variable with `re.match(r'^%s=' % name, line)`: the name is
    /// a regular expression, anchored at the line's start.
    #[test]
    fn env_names_are_patterns_as_in_ansible() {
        let tab = CronTab::from_crontab("AXB=\"1\"\nKEEP=\"2\"\nX_AB=\"3\"\n");
        let d = decide(
            &c(json!({"name": "A.B", "env": true, "job": "9"})),
            tab.clone(),
        )
        .unwrap();
        assert!(d.changed);
        assert_eq!(d.tab.render(), "A.B=\"9\"\nKEEP=\"2\"\nX_AB=\"3\"\n");
        let d = decide(
            &c(json!({"name": "A.B", "env": true, "state": "absent"})),
            tab.clone(),
        )
        .unwrap();
        assert_eq!(d.tab.render(), "KEEP=\"2\"\nX_AB=\"3\"\n");
        // Alternation keeps Python's meaning (`^K|X_AB=`), still only at the line's start.
        let d = decide(
            &c(json!({"name": "KE|X_AB", "env": true, "state": "absent"})),
            tab.clone(),
        )
        .unwrap();
        assert_eq!(d.tab.render(), "AXB=\"1\"\n");
        let e = decide(&c(json!({"name": "A(", "env": true, "job": "1"})), tab)
            .err()
            .unwrap();
        assert!(e.contains("not a valid regular expression"), "{e}");
    }

    #[test]
    fn env_and_cron_file() {
        let tab = CronTab::from_file("A=\"1\"\nB=\"2\"\n", Some("root".into()));
        let d = decide(
            &c(json!({"name": "C", "env": true, "job": "3", "insertafter": "A"})),
            tab.clone(),
        )
        .unwrap();
        assert_eq!(d.tab.render(), "A=\"1\"\nC=\"3\"\nB=\"2\"\n");
        let e = decide(
            &c(json!({"name": "C", "env": true, "job": "3", "insertbefore": "Z"})),
            tab.clone(),
        )
        .err()
        .unwrap();
        assert_eq!(e, "Variable named 'Z' not found.");
        let d = decide(
            &c(json!({"name": "j", "job": "x", "user": "root", "cron_file": "f", "hour": "2"})),
            tab,
        )
        .unwrap();
        assert!(d.tab.render().ends_with("#Ansible: j\n* 2 * * * root x\n"));
        assert_eq!(
            c(json!({"name": "j", "cron_file": "f"}))
                .cron_file
                .as_deref(),
            Some("/etc/cron.d/f")
        );
        assert!(check(
            json!({"name": "j", "insertafter": "a", "insertbefore": "b"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_err());
        assert!(check(
            json!({"name": "j", "jobs": "a"})
                .as_object()
                .unwrap()
                .clone()
        )
        .is_err());
    }
}
