//! Modules: one file each, one trait. A module gets its arguments already templated,
//! does its work through the host's [`Connection`], and says honestly what changed.
//!
//! Every name a task may use is in one list, [`REGISTRY`] (`registry.rs`): modules with
//! their aliases and traits, and the task-structure entries (`meta`, `include_tasks`,
//! `import_tasks`, `include_role`, `import_role` …) that `exec` walks itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::connect::{Become, Connection, ExecOutput, ExecRequest, Input};
use crate::error::{Error, ErrorKind, Result, Span};
use crate::template::Templar;

pub mod accounts;
pub mod apt;
pub mod apt_key;
pub mod apt_repository;
pub mod args;
pub mod argspec;
pub mod assemble;
pub mod assert;
pub mod async_status;
pub mod authorized_key;
pub mod blockinfile;
pub mod command;
pub mod copy;
pub mod cron;
pub mod debug;
pub mod dnf;
pub mod dpkg_selections;
pub mod fail;
pub mod fetch;
pub mod file;
pub mod find_files;
pub mod gen_cert;
pub mod get_url;
pub mod git;
pub mod group;
pub mod hostname;
pub mod image;
pub mod include_vars;
pub mod ini_file;
pub mod inventory;
pub mod invocation;
pub mod iptables;
pub mod known_hosts;
pub mod lineinfile;
pub mod modprobe;
pub mod mount;
pub mod net;
mod oci_registry;
pub mod package;
pub mod package_facts;
pub mod pause;
pub mod ping;
pub mod plan;
pub mod python;
pub mod reboot;
mod registry;
pub mod remote;
pub mod replace;
pub mod script;
pub mod selinux;
pub mod service_facts;
pub mod set_fact;
pub mod setup;
pub mod slurp;
pub mod source;
pub mod stat;
pub mod synchronize;
pub mod sysctl;
pub mod systemd_service;
pub mod tempfile;
pub mod template;
pub mod timezone;
pub mod unarchive;
pub mod uri;
pub mod user;
pub mod validate;
pub mod wait_for;
pub mod wait_for_connection;
pub mod x509_info;
pub mod yum_repository;

pub use registry::{
    all_names, canonical_name, find, is_command_line, is_free_form, lookup, runs_once, FACTS_MODULE,
};

/// A map of variables or results.
pub type VarMap = Map<String, Value>;

/// A unified diff of one file, for `--diff`.
#[derive(Debug, Clone, Default)]
pub struct FileDiff {
    /// Label of the old side (usually the path).
    pub before_header: String,
    /// Label of the new side.
    pub after_header: String,
    /// Old content.
    pub before: String,
    /// New content.
    pub after: String,
}

/// What a module did.
#[derive(Debug, Clone, Default)]
pub struct ModuleResult {
    /// Something on the host changed (or would, in check mode).
    pub changed: bool,
    /// The module failed; `msg` says why.
    pub failed: bool,
    /// The module decided not to act (e.g. `creates` exists).
    pub skipped: bool,
    /// A human message.
    pub msg: Option<String>,
    /// The rest of the result, in Ansible's shape (`rc`, `stdout`, `stat`, `ansible_facts` …).
    pub data: VarMap,
    /// File diffs, shown with `--diff`.
    pub diffs: Vec<FileDiff>,
    /// What the executor applies besides registering the result.
    pub effects: Vec<Effect>,
}

/// What a module's run means for the run beyond the host: typed, so the executor applies
/// them without knowing which module produced them. Applied after the task, in host
/// order, and only when the task did not fail.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Variables for the host for the rest of the run (`set_fact`).
    SetFacts(VarMap),
    /// The host's gathered facts (`setup`).
    GatheredFacts(VarMap),
    /// Variables read from files (`include_vars`), below `set_fact` in precedence.
    IncludedVars(VarMap),
    /// A host added to the inventory for the rest of the run (`add_host`).
    AddHost {
        /// Its inventory name.
        name: String,
        /// Groups it joins.
        groups: Vec<String>,
        /// Its variables.
        vars: VarMap,
    },
    /// Variables for another host (`add_hostvars`).
    HostVars {
        /// The host.
        host: String,
        /// Its new variables.
        vars: VarMap,
    },
    /// The host joins a group (`group_by`).
    GroupBy(String),
    /// Values reported at the end of the run (`result`).
    Report(VarMap),
    /// The result is shown to the user as it is (`debug`).
    Display,
}

/// A module's final answer given on the controller, before any connection is opened:
/// the result as registered, and its effects.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The result in Ansible's shape.
    pub result: Value,
    /// What the executor applies.
    pub effects: Vec<Effect>,
}

/// What a module may read on the controller before anything runs on a host.
pub struct Controller<'a> {
    /// The run's inventory as it is now.
    pub inventory: &'a crate::inventory::Inventory,
    /// The `-v` count.
    pub verbosity: u8,
    /// The host the task runs for.
    pub host: &'a str,
}

impl ModuleResult {
    /// A result with nothing changed.
    pub fn ok() -> ModuleResult {
        ModuleResult::default()
    }

    /// A result that says whether something changed.
    pub fn changed(changed: bool) -> ModuleResult {
        ModuleResult {
            changed,
            ..Default::default()
        }
    }

    /// A failed result with a message.
    pub fn failed(msg: impl Into<String>) -> ModuleResult {
        ModuleResult {
            failed: true,
            msg: Some(msg.into()),
            ..Default::default()
        }
    }

    /// Adds a field to the result.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> ModuleResult {
        self.data.insert(key.to_string(), value.into());
        self
    }

    /// Adds an effect.
    pub fn effect(mut self, e: Effect) -> ModuleResult {
        self.effects.push(e);
        self
    }

    /// Puts `vars` in the result as `ansible_facts` (Ansible's registered shape) and
    /// `effect(vars)` among its effects (what the executor does with them).
    pub fn with_facts(self, vars: VarMap, effect: fn(VarMap) -> Effect) -> ModuleResult {
        self.with("ansible_facts", Value::Object(vars.clone()))
            .effect(effect(vars))
    }

    /// Marks a result built with its fields (and message) as failed: Ansible's failed
    /// results keep the keys the module reports on success too.
    pub fn failed_too(mut self) -> ModuleResult {
        self.failed = true;
        self
    }

    /// Sets the message.
    pub fn msg(mut self, msg: impl Into<String>) -> ModuleResult {
        self.msg = Some(msg.into());
        self
    }

    /// Adds `rc`, `stdout`, `stderr` and their `_lines` forms from a command's output.
    pub fn with_output(mut self, out: &ExecOutput) -> ModuleResult {
        let stdout = out.stdout_text();
        let stderr = out.stderr_text();
        self.data.insert("rc".into(), out.rc.into());
        self.data.insert("stdout_lines".into(), lines(&stdout));
        self.data.insert("stderr_lines".into(), lines(&stderr));
        self.data.insert("stdout".into(), stdout.into());
        self.data.insert("stderr".into(), stderr.into());
        self
    }

    /// The registered form: Ansible's result dictionary.
    pub fn to_value(&self) -> Value {
        ModuleResult {
            changed: self.changed,
            failed: self.failed,
            skipped: self.skipped,
            msg: self.msg.clone(),
            data: self.data.clone(),
            ..ModuleResult::default()
        }
        .into_value()
    }

    /// [`ModuleResult::to_value`] that moves the data instead of copying it (a result
    /// may carry a host's facts); the effects and diffs are dropped.
    pub fn into_value(self) -> Value {
        let mut m = self.data;
        m.insert("changed".into(), self.changed.into());
        if self.failed {
            m.insert("failed".into(), true.into());
            m.entry("exception").or_insert(NO_TRACEBACK.into());
        } else {
            m.entry("failed").or_insert(false.into());
        }
        if self.skipped {
            m.insert("skipped".into(), true.into());
        }
        if let Some(msg) = self.msg {
            m.insert("msg".into(), msg.into());
        }
        Value::Object(m)
    }
}

/// The `exception` of a failed result: ansible-core 2.19 puts one on every failed module
/// or action result and, unless traceback display is on, registers it as this text. kk has
/// no Python traceback to show, so its failed results always carry this text.
pub const NO_TRACEBACK: &str = "(traceback unavailable)";

fn lines(s: &str) -> Value {
    py_splitlines(s)
}

/// Python's `str.splitlines()` as a JSON list: Ansible builds `stdout_lines` with it, so
/// `\r`, `\x0b`, `\x0c`, `\x1c`–`\x1e`, `\x85`, U+2028 and U+2029 break lines too.
pub fn py_splitlines(s: &str) -> Value {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push(Value::String(std::mem::take(&mut cur)));
            }
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => out.push(Value::String(std::mem::take(&mut cur))),
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(Value::String(cur));
    }
    Value::Array(out)
}

/// Shows a one-line status of a long-running module (e.g. bytes downloaded so far).
pub type ProgressFn = Arc<dyn Fn(&str) + Send + Sync>;

/// Everything a module may use while it runs on one host.
#[derive(Clone)]
pub struct ModuleContext {
    /// The inventory name of the host the task targets.
    pub host: String,
    /// The connection commands go through (the delegate's, under `delegate_to`).
    pub conn: Arc<dyn Connection>,
    /// `--check`: report, change nothing.
    pub check_mode: bool,
    /// `--diff`: report file differences.
    pub diff: bool,
    /// `no_log`: the task's data is secret; a module run by ansible-core's Python is told
    /// (`_ansible_no_log`), so it keeps it out of its own logs and warnings.
    pub no_log: bool,
    /// Privilege escalation for this task.
    pub become_: Option<Become>,
    /// Task `environment`.
    pub env: Vec<(String, String)>,
    /// Task `timeout`.
    pub timeout: Option<Duration>,
    /// The templating engine, for modules that evaluate expressions or render files.
    pub templar: Arc<Templar>,
    /// The task's variables for this host, as a template context.
    pub vars: minijinja::Value,
    /// Directories searched for relative `src` files, most specific first
    /// (role dir, then playbook dir); `files/`, `templates/`, `vars/` are tried in each.
    pub search_dirs: Vec<PathBuf>,
    /// Where the task is written, for errors.
    pub span: Option<Span>,
    /// Live status for people watching (text output on a terminal); `None` when unused.
    pub progress: Option<ProgressFn>,
    /// Under `delegate_to` (even to the host itself): who runs it, and the task host's
    /// own connection, for a module that reaches the host from the delegate
    /// (`synchronize`). `None` without delegation.
    pub delegation: Option<Delegation>,
}

/// A task delegated to another host (see [`ModuleContext::delegation`]).
#[derive(Clone)]
pub struct Delegation {
    /// The delegate's inventory name (`conn` reaches it).
    pub to: String,
    /// The connection to the task's own host, or why it could not be prepared.
    pub host_conn: std::result::Result<Arc<dyn Connection>, String>,
}

impl ModuleContext {
    /// Runs a script on the host with the task's become, environment and timeout.
    pub async fn exec(
        &self,
        script: impl Into<String>,
        stdin: Option<Vec<u8>>,
    ) -> Result<ExecOutput> {
        self.exec_keeping(script.into(), stdin.map(Input::Bytes), None)
            .await
    }

    /// [`ModuleContext::exec`] with any [`Input`]: a controller file is streamed.
    pub async fn exec_input(
        &self,
        script: impl Into<String>,
        stdin: Option<Input>,
    ) -> Result<ExecOutput> {
        self.exec_keeping(script.into(), stdin, None).await
    }

    /// [`ModuleContext::exec`] for a command run for the user (command, shell, raw,
    /// script): of its stdout and stderr only both ends are kept, so a command printing
    /// without end costs bounded memory ([`crate::connect::bounded`]).
    pub async fn exec_command(
        &self,
        script: impl Into<String>,
        stdin: Option<Vec<u8>>,
    ) -> Result<ExecOutput> {
        let keep = Some(crate::connect::bounded::keep());
        self.exec_keeping(script.into(), stdin.map(Input::Bytes), keep)
            .await
    }

    async fn exec_keeping(
        &self,
        script: String,
        stdin: Option<Input>,
        keep: Option<usize>,
    ) -> Result<ExecOutput> {
        self.conn
            .exec(&ExecRequest {
                script,
                stdin,
                env: self.env.clone(),
                become_: self.become_.clone(),
                timeout: self.timeout,
                keep,
            })
            .await
    }

    /// Finds a controller-side file the way Ansible does: absolute paths as they are,
    /// relative ones under `<dir>/<kind>/` then `<dir>/` for each search dir.
    pub fn find_file(&self, kind: &str, name: &str) -> Result<PathBuf> {
        let p = PathBuf::from(name);
        if p.is_absolute() {
            return Ok(p);
        }
        let mut tried = Vec::new();
        for dir in &self.search_dirs {
            for cand in [dir.join(kind).join(name), dir.join(name)] {
                if cand.exists() {
                    return Ok(cand);
                }
                tried.push(cand.display().to_string());
            }
        }
        Err(
            Error::new(ErrorKind::Io, format!("could not find `{}`", name))
                .note(format!("searched: {}", tried.join(", ")))
                .at_opt(self.span.as_ref()),
        )
    }
}

impl ModuleContext {
    /// In check mode, a controller file named by an absolute path that does not exist yet is
    /// one an earlier task would have made (a download, a certificate): skipped in check
    /// mode, it is not there. Modules that read such a file report the copy as a change
    /// instead of failing, so `--check` on a fresh controller shows the whole run; a real
    /// run still fails if the file is missing. `None` outside check mode, for relative
    /// paths (files of the role, whose absence is an error) and for existing files.
    pub fn check_mode_pending_source(
        &self,
        module: &str,
        src: &str,
        dest: &str,
    ) -> Option<ModuleResult> {
        if !self.check_mode || !Path::new(src).is_absolute() || Path::new(src).exists() {
            return None;
        }
        Some(
            ModuleResult::changed(true)
                .msg(format!(
                    "{module}: would put {src} at {dest}; {src} is not on the controller yet                      (an earlier task makes it, and in check mode it did not run)"
                ))
                .with("dest", dest)
                .with("src", src),
        )
    }
}

/// Whether a module runs under `--check`; one that does not is skipped by the executor
/// with the message Ansible gives (unless the task sets `check_mode: false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckMode {
    /// It runs, reporting what it would do (or skipping itself, as `raw` does).
    Supported,
    /// Ansible's action plugin refuses it before anything runs (`uri`).
    ActionRefuses,
    /// Ansible's remote module refuses it once its arguments are valid (`wait_for`).
    RemoteRefuses,
}

impl CheckMode {
    /// Ansible's skip message for a module refusing check mode, named as the task writes it.
    pub fn refusal(self, name: &str) -> Option<String> {
        match self {
            CheckMode::Supported => None,
            CheckMode::ActionRefuses => Some(format!(
                "This action ({}) does not support check mode.",
                name
            )),
            CheckMode::RemoteRefuses => Some(format!(
                "remote module ({}) does not support check mode",
                name
            )),
        }
    }
}

/// A module: typed arguments in, honest result out. Besides `run`, a module may offer
/// capabilities the executor uses without knowing the module: arguments it templates
/// itself, an answer on the controller, and running loop items in batches.
#[async_trait]
pub trait Module: Send + Sync {
    /// Runs on one host with templated arguments (`_raw_params` holds free-form text).
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult>;

    /// Whether it runs under `--check` (as its Ansible counterpart declares).
    fn check_mode(&self) -> CheckMode {
        CheckMode::Supported
    }

    /// Checks arguments when the playbook loads, so a mistake in a literal argument is a
    /// load error with its place (exit 4) instead of a failure halfway through a run.
    /// Called only when no argument holds a template (see [`args::is_literal`]);
    /// templated arguments are checked when the task runs, by `run`.
    fn validate(&self, _args: &VarMap) -> Result<()> {
        Ok(())
    }

    /// Argument keys the executor leaves untemplated because the module renders them
    /// itself (given the arguments as written).
    fn own_templates(&self, _args: &VarMap) -> &'static [&'static str] {
        &[]
    }

    /// A final answer on the controller from the templated arguments, before a
    /// connection, become or environment is prepared; `None` to run on the host.
    /// `changed_when`, `failed_when` and `until` do not apply to it.
    fn answer(&self, _args: &VarMap, _c: &Controller) -> Option<Result<Answer>> {
        None
    }

    /// Whether loops of this module may run items several to a round trip
    /// ([`Module::run_batch`]); per item, [`Module::batchable`] decides.
    fn batches(&self) -> bool {
        false
    }

    /// Whether a loop item with these templated arguments may join a batch.
    fn batchable(&self, _args: &VarMap) -> bool {
        false
    }

    /// Runs batchable items in one round trip; one result per item, each as
    /// [`Module::run`] would give it. By default, one after the other.
    async fn run_batch(
        &self,
        ctx: &ModuleContext,
        items: Vec<VarMap>,
    ) -> Result<Vec<Result<ModuleResult>>> {
        let mut out = Vec::with_capacity(items.len());
        for args in items {
            out.push(self.run(ctx, args).await);
        }
        Ok(out)
    }
}

/// Parses templated arguments into a module's typed argument struct.
///
/// The struct should use `#[serde(deny_unknown_fields)]`; the error then names the
/// unknown field, and we add the list of valid ones.
pub fn parse_args<T: DeserializeOwned>(module: &str, args: VarMap, valid: &[&str]) -> Result<T> {
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().to_string();
        if msg.starts_with("unknown field") {
            let mut err = Error::new(ErrorKind::ModuleArgs, format!("{}: {}", module, msg))
                .with_code("kk::module::unknown_argument");
            if !valid.is_empty() {
                err = err.help(format!(
                    "valid arguments of `{}` are: {}",
                    module,
                    valid.join(", ")
                ));
            }
            return err;
        }
        // A bad value: name the argument it is in, unless the message does already.
        match path.as_str() {
            "." | "" => Error::new(ErrorKind::ModuleArgs, format!("{}: {}", module, msg)),
            p if msg.contains(&format!("`{p}`")) => {
                Error::new(ErrorKind::ModuleArgs, format!("{}: {}", module, msg))
            }
            _ => Error::new(
                ErrorKind::ModuleArgs,
                format!("{}: `{}`: {}", module, path, msg),
            ),
        }
    })
}
