//! What a run tells the world: events, rendered as text for people or JSON lines for
//! machines, and always recorded under `<workdir>/runs/<run-id>/`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

/// How a task ended on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran, nothing changed.
    Ok,
    /// Ran and changed something.
    Changed,
    /// Not run (condition false, check mode, tag …).
    Skipped,
    /// Failed.
    Failed,
    /// The host could not be reached.
    Unreachable,
}

/// Per-host totals shown at the end, counted as Ansible counts them.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Tasks that ran fine (changed ones included).
    pub ok: u32,
    /// Tasks that changed something.
    pub changed: u32,
    /// Failed tasks (not rescued, not ignored).
    pub failed: u32,
    /// Skipped tasks.
    pub skipped: u32,
    /// Unreachable outcomes.
    pub unreachable: u32,
    /// Failures handled by a `rescue`.
    pub rescued: u32,
    /// Failures ignored by `ignore_errors`.
    pub ignored: u32,
}

/// One thing that happened during a run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A play begins.
    PlayStart {
        /// Play name.
        play: String,
        /// Hosts it targets.
        hosts: Vec<String>,
    },
    /// A task begins.
    TaskStart {
        /// Play name.
        play: String,
        /// Task name.
        task: String,
        /// `file:line` of the task.
        path: String,
    },
    /// A task finished on one host.
    HostResult {
        /// Play name.
        play: String,
        /// Task name.
        task: String,
        /// Host.
        host: String,
        /// Where it ran, under `delegate_to`.
        #[serde(skip_serializing_if = "Option::is_none")]
        delegated_to: Option<String>,
        /// How it ended.
        status: Status,
        /// Whether something changed.
        changed: bool,
        /// Failed, but `ignore_errors` let the host go on.
        ignored: bool,
        /// The registered result (censored under `no_log`).
        result: Value,
        /// What text output shows for a successful result (debug's message), if anything;
        /// for a failed one, the result with a message filled in where it had none.
        #[serde(skip)]
        display: Option<Value>,
    },
    /// Something the user should know that is not a failure.
    Warning {
        /// The warning.
        msg: String,
    },
    /// Values playbooks reported with the `result` module, merged over the run.
    Result {
        /// The merged values.
        data: Value,
    },
    /// The run is over.
    Recap {
        /// Totals per host, in inventory order.
        hosts: IndexMap<String, Counts>,
        /// Wall time of the run.
        elapsed_s: f64,
        /// What each host's connection carried (JSON only; hosts that were contacted).
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        transport: IndexMap<String, crate::connect::Transport>,
        /// Modules written in Python that ran on the hosts (kk implements none of them),
        /// with how many host runs each had: what still needs Python on the hosts.
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        python: IndexMap<String, u64>,
    },
}

/// Where events go.
pub trait Reporter: Send + Sync {
    /// Handles one event.
    fn event(&self, event: &Event);

    /// Hosts finished so far of the running task (for a live progress line).
    fn progress(&self, _done: usize, _total: usize) {}

    /// A live status line from a module on a host (e.g. a download's progress).
    fn status(&self, _host: &str, _text: &str) {}
}

/// Output format for the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// One JSON object per line.
    Json,
}

/// Prints events to stdout and records them in the run directory.
pub struct Output {
    format: Format,
    diff: bool,
    verbosity: u8,
    journal: Mutex<Option<File>>,
    log: RunLog,
    /// A progress line is on the terminal and must be erased before the next output.
    progress_shown: Mutex<bool>,
    live: bool,
    /// The run directory, if one was created.
    pub run_dir: Option<PathBuf>,
    /// When the running task started: from `-vvv` on, each host's result line shows the
    /// time the task took there (as ansible's profile_tasks shows per task).
    task_start: Mutex<Option<std::time::Instant>>,
}

impl Output {
    /// Creates the reporter; `workdir` gets `runs/<run-id>/{events.jsonl,kk.log}`.
    pub fn new(
        format: Format,
        diff: bool,
        verbosity: u8,
        workdir: Option<&Path>,
    ) -> std::io::Result<Output> {
        let (mut journal, mut log, mut run_dir) = (None, None, None);
        if let Some(w) = workdir {
            let dir = w.join("runs").join(run_id());
            std::fs::create_dir_all(&dir)?;
            journal = Some(File::create(dir.join("events.jsonl"))?);
            log = Some(File::create(dir.join("kk.log"))?);
            run_dir = Some(dir);
        }
        Ok(Output {
            format,
            diff,
            verbosity,
            journal: Mutex::new(journal),
            log: RunLog(Arc::new(Mutex::new(log))),
            progress_shown: Mutex::new(false),
            live: format == Format::Text && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            run_dir,
            task_start: Mutex::new(None),
        })
    }
}

impl Output {
    /// The run log (`kk.log`), for diagnostics written among the events' text.
    pub fn run_log(&self) -> RunLog {
        self.log.clone()
    }
}

/// The run's log file (`runs/<run-id>/kk.log`), shared by the reporter and the `-vvv`
/// diagnostics so their lines interleave instead of overwriting each other. Writing to
/// it when the run has no directory does nothing.
#[derive(Clone, Debug, Default)]
pub struct RunLog(Arc<Mutex<Option<File>>>);

impl Write for RunLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock().unwrap().as_mut() {
            Some(f) => write_redacted(f, buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.lock().unwrap().as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// Writes `buf` whole, with vaulted values masked (see [`crate::vault::redact`]);
/// reports `buf.len()` written so callers' accounting stays theirs.
fn write_redacted(w: &mut impl Write, buf: &[u8]) -> std::io::Result<usize> {
    if !crate::vault::redact::is_active() {
        return w.write(buf);
    }
    let text = String::from_utf8_lossy(buf);
    w.write_all(crate::vault::redact::redact_text(&text).as_bytes())?;
    Ok(buf.len())
}

/// Standard error with vaulted values masked: where the `-vvv` diagnostics go.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedactedStderr;

impl Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_redacted(&mut std::io::stderr().lock(), buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The run's directory name: its UTC start time and the process id
/// (`20240102-030405-1234`), so runs sort by time and never collide.
fn run_id() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        std::process::id()
    )
}

fn banner(title: &str) -> String {
    let width: usize = 79;
    let stars = width.saturating_sub(title.chars().count() + 1).max(3);
    format!("\n{} {}", title, "*".repeat(stars))
}

/// Renders an event as the text a person reads (empty when there is nothing to show).
pub fn render_text(event: &Event, diff: bool, verbosity: u8) -> String {
    match event {
        Event::PlayStart { play, .. } => banner(&format!("PLAY [{}]", play)),
        Event::TaskStart { task, path, .. } => {
            if verbosity > 0 {
                format!(
                    "{}\ntask path: {}",
                    banner(&format!("TASK [{}]", task)),
                    path
                )
            } else {
                banner(&format!("TASK [{}]", task))
            }
        }
        Event::HostResult {
            host,
            delegated_to,
            status,
            result,
            ignored,
            display,
            ..
        } => {
            let who = match delegated_to {
                Some(d) if d != host => format!("[{} -> {}]", host, d),
                _ => format!("[{}]", host),
            };
            let word = match status {
                Status::Ok => "ok",
                Status::Changed => "changed",
                Status::Skipped => "skipping",
                Status::Failed => "failed",
                Status::Unreachable => "unreachable",
            };
            let mut out = String::new();
            if diff {
                // A list of diffs, or one (ini_file, timezone, yum_repository return a
                // single dict).
                match result.get("diff") {
                    Some(Value::Array(diffs)) => {
                        for d in diffs {
                            out.push_str(&render_diff(d));
                        }
                    }
                    Some(d @ Value::Object(_)) => out.push_str(&render_diff(d)),
                    _ => {}
                }
            }
            let mut line = format!("{}: {}", word, who);
            match status {
                Status::Failed | Status::Unreachable => {
                    line.push_str(" => ");
                    line.push_str(&failure_text(display.as_ref().unwrap_or(result)));
                    if *ignored {
                        line.push_str("\n...ignoring");
                    }
                }
                _ => {
                    if let Some(d) = display {
                        line.push_str(&format!(" => {}", pretty(d)));
                    } else if verbosity > 0 {
                        line.push_str(&format!(" => {}", pretty(result)));
                    }
                }
            }
            out.push_str(&line);
            out
        }
        Event::Warning { msg } => format!("[WARNING]: {}", msg),
        Event::Result { data } => format!("{}\n{}", banner("RESULT"), pretty(data)),
        Event::Recap {
            hosts,
            elapsed_s,
            python,
            ..
        } => {
            let mut out = banner("PLAY RECAP");
            let width = hosts.keys().map(|h| h.len()).max().unwrap_or(0).max(20);
            for (h, c) in hosts {
                out.push_str(&format!(
                    "\n{:<width$} : ok={:<4} changed={:<4} unreachable={:<4} failed={:<4} skipped={:<4} rescued={:<4} ignored={}",
                    h,
                    c.ok,
                    c.changed,
                    c.unreachable,
                    c.failed,
                    c.skipped,
                    c.rescued,
                    c.ignored,
                    width = width
                ));
            }
            if !python.is_empty() {
                let runs: Vec<String> = python.iter().map(|(m, n)| format!("{m} ×{n}")).collect();
                out.push_str(&format!(
                    "\n\nrun through Python on the hosts (modules kk does not implement): {}",
                    runs.join(", ")
                ));
            }
            out.push_str(&format!("\n\nelapsed: {:.2}s", elapsed_s));
            out
        }
    }
}

/// JSON with Ansible's four-space indentation.
fn pretty(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    match Serialize::serialize(v, &mut ser) {
        Ok(()) => String::from_utf8(buf).unwrap_or_default(),
        Err(_) => v.to_string(),
    }
}

/// The failure of a task in full: message, exit code, stdout and stderr, each on its own lines.
fn failure_text(result: &Value) -> String {
    let mut out = String::new();
    if let Some(msg) = result.get("msg") {
        match msg {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
    }
    if let Some(rc) = result.get("rc") {
        out.push_str(&format!("\n  rc: {}", rc));
    }
    for k in ["stdout", "stderr"] {
        if let Some(Value::String(s)) = result.get(k) {
            if !s.is_empty() {
                out.push_str(&format!("\n  {}:\n", k));
                for l in s.lines() {
                    out.push_str(&format!("    {}\n", l));
                }
                out.pop();
            }
        }
    }
    if let Some(Value::Array(items)) = result.get("results") {
        for (i, item) in items.iter().enumerate() {
            if item.get("failed") == Some(&Value::Bool(true)) {
                out.push_str(&format!(
                    "\n  item {}: {}",
                    i,
                    failure_text(item).replace('\n', "\n  ")
                ));
            }
        }
    }
    if out.is_empty() {
        out = pretty(result);
    }
    out
}

fn render_diff(d: &Value) -> String {
    let get = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
    // Structured before/after (timezone's values) are shown as JSON, as Ansible does.
    let text = |k: &str| match d.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v @ (Value::Object(_) | Value::Array(_))) => {
            format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
        }
        _ => String::new(),
    };
    // A module's own text of what it did (`prepared`: synchronize's itemized list, apt's
    // output) is shown after any before/after, as Ansible's callback does; alone, without
    // empty `---`/`+++` headers.
    let prepared = get("prepared");
    let mut out = String::new();
    if d.get("before").is_some() || d.get("after").is_some() || prepared.is_empty() {
        let (before, after) = (text("before"), text("after"));
        let diff = similar::TextDiff::from_lines(&before, &after);
        out.push_str(&format!(
            "--- {}\n+++ {}\n",
            get("before_header"),
            get("after_header")
        ));
        for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
            out.push_str(&hunk.to_string());
        }
        out.push('\n');
    }
    if !prepared.is_empty() {
        out.push_str(prepared);
        if !prepared.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

impl Reporter for Output {
    fn progress(&self, done: usize, total: usize) {
        // Only worth a line when a task spans many hosts, and only on a terminal.
        if !self.live || total < 4 {
            return;
        }
        let mut shown = self.progress_shown.lock().unwrap();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r  {}/{} hosts done", done, total);
        let _ = err.flush();
        *shown = true;
    }

    fn status(&self, host: &str, text: &str) {
        if !self.live {
            return;
        }
        let mut shown = self.progress_shown.lock().unwrap();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K  [{}] {}", host, text);
        let _ = err.flush();
        *shown = true;
    }

    fn event(&self, event: &Event) {
        let masked;
        let event = if crate::vault::redact::is_active() {
            masked = redacted(event);
            &masked
        } else {
            event
        };
        {
            let mut shown = self.progress_shown.lock().unwrap();
            if *shown {
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
                *shown = false;
            }
        }
        let json = serde_json::to_string(event).unwrap_or_default();
        if let Some(f) = self.journal.lock().unwrap().as_mut() {
            let _ = writeln!(f, "{}", json);
        }
        let mut text = render_text(event, self.diff, self.verbosity);
        match event {
            Event::TaskStart { .. } => {
                *self.task_start.lock().unwrap() = Some(std::time::Instant::now());
            }
            Event::HostResult { host, .. } if self.verbosity >= 3 => {
                if let Some(t) = *self.task_start.lock().unwrap() {
                    with_elapsed(&mut text, host, t.elapsed());
                }
            }
            _ => {}
        }
        if let Some(f) = self.log.0.lock().unwrap().as_mut() {
            if !text.is_empty() {
                let _ = writeln!(f, "{}", text);
            }
        }
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        match self.format {
            Format::Json => {
                let _ = writeln!(lock, "{}", json);
            }
            Format::Text => {
                if !text.is_empty() {
                    let _ = writeln!(lock, "{}", text);
                }
            }
        }
    }
}

/// The event with vaulted values masked in what tasks produced (results, diffs, the
/// text shown, warnings, reported data); names of plays, tasks and hosts are the
/// playbook's own and stay.
fn redacted(event: &Event) -> Event {
    use crate::vault::redact::{redact_text, redact_value};
    let mut e = event.clone();
    match &mut e {
        Event::HostResult {
            result, display, ..
        } => {
            redact_value(result);
            if let Some(d) = display {
                redact_value(d);
            }
        }
        Event::Warning { msg } => *msg = redact_text(msg).into_owned(),
        Event::Result { data } => redact_value(data),
        _ => {}
    }
    e
}

/// `ok: [h1] => …` becomes `ok: [h1] (0.42s) => …`.
fn with_elapsed(text: &mut String, host: &str, took: std::time::Duration) {
    let who = format!(": [{}", host);
    if let Some(at) = text.find(&who) {
        if let Some(end) = text[at..].find(']') {
            text.insert_str(at + end + 1, &format!(" ({:.2}s)", took.as_secs_f64()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepared_diff_is_shown_as_it_is() {
        let d = serde_json::json!({"prepared": ">f+++++++++ a.txt\n"});
        assert_eq!(render_diff(&d), ">f+++++++++ a.txt\n");
        let d = serde_json::json!({"before": "a\n", "after": "b\n", "prepared": "note"});
        let out = render_diff(&d);
        assert!(out.starts_with("--- \n+++ \n@@"), "{out}");
        assert!(out.ends_with("\nnote\n"), "{out}");
    }

    #[test]
    fn elapsed_follows_the_host() {
        let mut t = "changed: [h1 -> h2] => {}".to_string();
        with_elapsed(&mut t, "h1", std::time::Duration::from_millis(1234));
        assert_eq!(t, "changed: [h1 -> h2] (1.23s) => {}");
    }

    #[test]
    fn run_ids_are_the_utc_start_time_and_the_pid() {
        let before = time::OffsetDateTime::now_utc().date();
        let id = run_id();
        let (date, rest) = id.split_once('-').unwrap();
        let (clock, pid) = rest.split_once('-').unwrap();
        assert_eq!(date.len(), 8, "{}", id);
        assert!(
            clock.len() == 6 && clock.bytes().all(|b| b.is_ascii_digit()),
            "{}",
            id
        );
        assert_eq!(pid, std::process::id().to_string());
        let today =
            |d: time::Date| format!("{:04}{:02}{:02}", d.year(), u8::from(d.month()), d.day());
        let after = time::OffsetDateTime::now_utc().date();
        assert!(date == today(before) || date == today(after), "{}", id);
    }

    #[test]
    fn failure_shows_everything() {
        let e = Event::HostResult {
            play: "p".into(),
            task: "t".into(),
            host: "h1".into(),
            delegated_to: None,
            status: Status::Failed,
            changed: false,
            ignored: false,
            result: serde_json::json!({"msg": "non-zero return code", "rc": 3, "stdout": "out1\nout2", "stderr": "err"}),
            display: None,
        };
        let t = render_text(&e, false, 0);
        assert!(t.contains("failed: [h1] => non-zero return code"), "{t}");
        assert!(
            t.contains("rc: 3") && t.contains("out2") && t.contains("err"),
            "{t}"
        );
    }
}
