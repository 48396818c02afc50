//! `kk adhoc PATTERN -m MODULE -a ARGS`: Ansible's `ansible` command. One task on the
//! hosts the pattern selects, built as a one-task play in memory and run by the engine,
//! reported in Ansible's ad-hoc words (`h1 | CHANGED | rc=0 >>`, `h1 | SUCCESS => {…}`,
//! `-o` on one line) with the same exit codes as `kk run`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Args;
use kk_engine::exec::run_play_text;
use kk_engine::report::{Event, Reporter, Status};
use kk_engine::Error;
use serde_json::Value;

use crate::options::{build_run_options, workdir_of, Common, ConnFlags, OutputFormat, Preset};

/// `kk adhoc`'s options: `ansible`'s.
#[derive(Args)]
pub(crate) struct Adhoc {
    /// Host pattern: `all`, `web`, `web:&prod`, `all:!db`, `h1,h2`, `web[0:2]`, `~regex`.
    pub(crate) pattern: String,
    /// The module to run.
    #[arg(short = 'm', long = "module-name", default_value = "command")]
    pub(crate) module: String,
    /// The module's arguments: `k=v …`, free form for command/shell, or a JSON mapping.
    #[arg(short = 'a', long = "args", allow_hyphen_values = true)]
    pub(crate) args: Option<String>,
    /// Run in the background for at most this many seconds (Ansible's `-B`: the task's
    /// `async`).
    #[arg(short = 'B', long = "background", value_name = "SECONDS")]
    pub(crate) background: Option<u64>,
    /// With `-B`, check the job every this many seconds (default 15); 0 starts it and
    /// does not wait (Ansible's `-P`: the task's `poll`).
    #[arg(short = 'P', long = "poll", value_name = "SECONDS")]
    pub(crate) poll: Option<u64>,
    /// One line per host (Ansible's `-o`).
    #[arg(short = 'o', long = "one-line")]
    pub(crate) one_line: bool,
    /// List the hosts the pattern selects, run nothing.
    #[arg(long)]
    pub(crate) list_hosts: bool,
    /// Inventory: a file, a directory, or hosts separated by commas (repeatable).
    #[arg(short, long)]
    pub(crate) inventory: Vec<String>,
    /// Extra variables: `k=v`, a YAML/JSON mapping, or `@file.yaml` (repeatable).
    #[arg(short = 'e', long = "extra-vars")]
    pub(crate) extra_vars: Vec<String>,
    /// Further limit the hosts to this pattern.
    #[arg(short, long)]
    pub(crate) limit: Option<String>,
    /// Report what would change, change nothing.
    #[arg(short = 'C', long)]
    pub(crate) check: bool,
    /// Show the differences in files that change.
    #[arg(short = 'D', long)]
    pub(crate) diff: bool,
    /// How many hosts run at once (1 to 10000).
    #[arg(short, long)]
    pub(crate) forks: Option<usize>,
    /// Working directory for run records (default: ./kubekey).
    #[arg(long)]
    pub(crate) workdir: Option<PathBuf>,
    /// More output (-v, -vv …).
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    #[command(flatten)]
    pub(crate) conn: ConnFlags,
    #[command(flatten)]
    pub(crate) vault: crate::vault_cmd::VaultArgs,
}

/// The modules whose result is shown as their output rather than as JSON (Ansible's
/// `MODULE_NO_JSON`).
fn no_json(module: &str) -> bool {
    let m = module
        .strip_prefix("ansible.builtin.")
        .or_else(|| module.strip_prefix("ansible.legacy."))
        .unwrap_or(module);
    matches!(m, "command" | "shell" | "raw")
}

fn is_debug(module: &str) -> bool {
    matches!(
        module,
        "debug" | "ansible.builtin.debug" | "ansible.legacy.debug"
    )
}

/// Runs the ad-hoc command; the exit code is the run's (2 failed, 3 unreachable).
pub(crate) async fn run(a: &Adhoc) -> Result<i32, Error> {
    let cfg = crate::ansible_cfg::load()?;
    if let Some(f) = a.forks {
        if !(1..=10_000).contains(&f) {
            return Err(crate::options::options_error(
                "--forks takes a whole number from 1 to 10000",
            ));
        }
    }
    kk_engine::inventory::pattern::parse(&a.pattern).map_err(|e| {
        crate::options::options_error(format!("host pattern `{}`: {}", a.pattern, e.message))
    })?;
    let mut conn = a.conn.clone();
    if a.list_hosts {
        conn.ask_pass = false;
        conn.ask_become_pass = false;
    }
    let common = Common {
        inventory: a.inventory.clone(),
        config: None,
        extra_vars: a.extra_vars.clone(),
        set: Vec::new(),
        tags: Vec::new(),
        skip_tags: Vec::new(),
        limit: a.limit.clone(),
        check: a.check,
        diff: a.diff,
        forks: a.forks,
        workdir: a.workdir.clone(),
        output: OutputFormat::Text,
        ssh_strict: false,
        verbose: a.verbose,
        vault: a.vault.clone(),
        conn,
    };
    let workdir = workdir_of(&common);
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut opts = build_run_options(
        cwd.join("<adhoc>"),
        &common,
        &Preset::default(),
        &workdir,
        &cfg,
    )?;
    opts.limit = Some(match &a.limit {
        Some(l) => format!("{}:&{}", a.pattern, l),
        None => a.pattern.clone(),
    });
    let hosts = opts
        .inventory
        .select(opts.limit.as_deref().unwrap_or("all"))
        .map_err(|e| crate::options::options_error(e.message))?;
    if a.list_hosts {
        println!("  hosts ({}):", hosts.len());
        for h in &hosts {
            println!("    {}", h);
        }
        return Ok(0);
    }
    if hosts.is_empty() {
        eprintln!(
            "[WARNING]: Could not match supplied host pattern, ignoring: {}",
            a.pattern
        );
        eprintln!("[WARNING]: No hosts matched, nothing to do");
        return Ok(0);
    }
    let mut task = serde_json::Map::new();
    let args = a.args.clone().unwrap_or_default();
    let args = match serde_json::from_str::<Value>(args.trim()) {
        Ok(v @ Value::Object(_)) => v,
        _ if args.trim().is_empty() => Value::Null,
        _ => Value::String(args),
    };
    task.insert(a.module.clone(), args);
    // `-B`: the task's async, polled every `-P` seconds (Ansible's default 15); `-P`
    // alone does nothing, as in Ansible.
    if let Some(b) = a.background.filter(|b| *b > 0) {
        task.insert("async".into(), b.into());
        task.insert("poll".into(), a.poll.unwrap_or(15).into());
    }
    let play = serde_json::json!([{
        "name": "Ansible Ad-Hoc",
        "hosts": a.pattern,
        "gather_facts": false,
        "tasks": [Value::Object(task)],
    }]);
    let reporter = Arc::new(AdhocOutput {
        module: a.module.clone(),
        one_line: a.one_line,
        verbosity: a.verbose,
        out: Mutex::new(()),
    });
    let outcome = run_play_text(opts, &play.to_string(), reporter).await?;
    Ok(outcome.exit_code)
}

/// Ansible's `minimal` (and with `-o`, `oneline`) callback.
struct AdhocOutput {
    module: String,
    one_line: bool,
    verbosity: u8,
    out: Mutex<()>,
}

impl Reporter for AdhocOutput {
    fn event(&self, event: &Event) {
        let text = match event {
            Event::HostResult {
                host,
                status,
                result,
                ..
            } => self.result_text(host, *status, result),
            Event::Warning { msg } => {
                let _guard = self.out.lock().unwrap();
                eprintln!("[WARNING]: {}", msg);
                return;
            }
            _ => return,
        };
        let _guard = self.out.lock().unwrap();
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{}", text);
        let _ = stdout.flush();
    }
}

impl AdhocOutput {
    fn result_text(&self, host: &str, status: Status, result: &Value) -> String {
        let mut r = result.clone();
        let (caption, json_caption) = match status {
            Status::Skipped => return format!("{} | SKIPPED", host),
            Status::Unreachable => ("UNREACHABLE", "UNREACHABLE!"),
            Status::Failed => ("FAILED", "FAILED!"),
            Status::Changed => ("CHANGED", "CHANGED"),
            Status::Ok => ("SUCCESS", "SUCCESS"),
        };
        if is_debug(&self.module) && status != Status::Failed {
            clean_debug(&mut r);
        }
        // An async job's success is shown as JSON (Ansible's minimal callback: not for
        // a result with `ansible_job_id`); its failure in the command's words.
        let command = no_json(&self.module)
            && status != Status::Unreachable
            && r.get("module_stderr").is_none()
            && (status == Status::Failed || r.get("ansible_job_id").is_none());
        let dumped = |indent: bool| dump(&r, indent, self.verbosity);
        if self.one_line {
            if status == Status::Failed {
                let mut out = String::new();
                if command {
                    out.push_str(&oneline_command(host, caption, &r));
                    out.push('\n');
                }
                out.push_str(&format!("{} | FAILED! => {}", host, dumped(false)));
                return out;
            }
            if command {
                return oneline_command(host, caption, &r);
            }
            return format!("{} | {} => {}", host, json_caption, dumped(false));
        }
        if command {
            let text = |k: &str| match r.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(v) => v.to_string(),
            };
            let mut buf = format!("{} | {} | rc={} >>\n", host, caption, rc(&r));
            buf.push_str(&text("stdout"));
            buf.push_str(&text("stderr"));
            if status == Status::Failed {
                buf.push_str(&text("msg"));
            }
            return buf;
        }
        format!("{} | {} => {}", host, json_caption, dumped(true))
    }
}

fn rc(r: &Value) -> String {
    r.get("rc")
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-1".into())
}

/// The `oneline` callback's line for command/shell/raw.
fn oneline_command(host: &str, caption: &str, r: &Value) -> String {
    let flat = |k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
    };
    let stderr = flat("stderr");
    if stderr.is_empty() {
        format!(
            "{} | {} | rc={} | (stdout) {}",
            host,
            caption,
            rc(r),
            flat("stdout")
        )
    } else {
        format!(
            "{} | {} | rc={} | (stdout) {} (stderr) {}",
            host,
            caption,
            rc(r),
            flat("stdout"),
            stderr
        )
    }
}

/// Ansible's `_clean_results` for debug: a message alone, or the variable alone.
fn clean_debug(r: &mut Value) {
    let Value::Object(m) = r else {
        return;
    };
    if m.contains_key("msg") {
        m.retain(|k, _| {
            matches!(k.as_str(), "msg" | "exception" | "warnings") || k.starts_with('_')
        });
    } else {
        for k in ["changed", "failed", "skipped", "invocation", "skip_reason"] {
            m.remove(k);
        }
    }
}

/// Ansible's `_dump_results`: internal keys, invocation, diff (below -vvv), exception
/// and warnings dropped; keys sorted; four-space indent, or one line (`-o`).
fn dump(r: &Value, indent: bool, verbosity: u8) -> String {
    let mut v = r.clone();
    if let Value::Object(m) = &mut v {
        m.retain(|k, _| !k.starts_with("_ansible_"));
        // The caption says it: Ansible's callback shows no `failed` key.
        for k in ["exception", "warnings", "deprecations", "failed"] {
            m.remove(k);
        }
        if verbosity < 3 {
            m.remove("invocation");
            m.remove("diff");
        }
    }
    let text = py_json(&sorted(v), if indent { 4 } else { 0 }, 0);
    if indent {
        text
    } else {
        text.replace('\n', "")
    }
}

/// Python's `json.dumps(v, indent=n)`: a newline and `n * depth` spaces before each item.
fn py_json(v: &Value, indent: usize, depth: usize) -> String {
    let pad = |d: usize| format!("\n{}", " ".repeat(indent * d));
    match v {
        Value::Object(m) if !m.is_empty() => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}{}: {}",
                        pad(depth + 1),
                        Value::String(k.clone()),
                        py_json(v, indent, depth + 1)
                    )
                })
                .collect();
            format!("{{{}{}}}", items.join(","), pad(depth))
        }
        Value::Array(a) if !a.is_empty() => {
            let items: Vec<String> = a
                .iter()
                .map(|v| format!("{}{}", pad(depth + 1), py_json(v, indent, depth + 1)))
                .collect();
            format!("[{}{}]", items.join(","), pad(depth))
        }
        other => other.to_string(),
    }
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut items: Vec<(String, Value)> = m.into_iter().collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(items.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}
