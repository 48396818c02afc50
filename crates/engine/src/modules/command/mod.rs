//! `command`, `shell` and `raw`: run a command line on the host.
//!
//! `command` does no shell processing of its own (arguments are quoted for `/bin/sh`),
//! `shell` hands the text to the shell, `raw` is `shell` without any options.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Flag;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::ansible::shell_quote;
pub use crate::ansible::split_words;
use crate::connect::ExecOutput;
use crate::error::Result;

mod batch;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandArgs {
    #[serde(default, alias = "cmd")]
    _raw_params: Option<String>,
    #[serde(default)]
    argv: Option<Vec<String>>,
    #[serde(default)]
    chdir: Option<String>,
    #[serde(default)]
    creates: Option<String>,
    #[serde(default)]
    removes: Option<String>,
    #[serde(default)]
    executable: Option<String>,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default = "Flag::on")]
    stdin_add_newline: Flag,
    #[serde(default = "Flag::on")]
    strip_empty_ends: Flag,
    #[serde(default)]
    warn: Option<Flag>,
    #[serde(default)]
    expand_argument_vars: Option<Flag>,
}

impl CommandArgs {
    /// Whether `$VAR`s in the arguments are expanded (on unless turned off).
    fn expand(&self) -> bool {
        self.expand_argument_vars.is_none_or(|Flag(e)| e)
    }
}

const VALID: &[&str] = &[
    "cmd",
    "argv",
    "chdir",
    "creates",
    "removes",
    "executable",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

/// Which flavour of command module.
#[derive(Clone, Copy, PartialEq)]
enum Flavour {
    Command,
    Shell,
    Raw,
}

impl Flavour {
    /// The module's name, for messages.
    fn name(self) -> &'static str {
        match self {
            Flavour::Command => "command",
            Flavour::Shell => "shell",
            Flavour::Raw => "raw",
        }
    }
}

/// Shell code that leaves `$?` at 0 when `pattern` matches an existing path on the host,
/// like Python's `glob.glob(pattern)` being non-empty (what Ansible's `creates`/`removes`
/// test). Glob characters stay unquoted so the host's shell expands them.
pub fn path_matches(pattern: &str) -> String {
    let mut word = String::new();
    let mut lit = String::new();
    let flush = |lit: &mut String, word: &mut String| {
        if !lit.is_empty() {
            word.push_str(&shell_quote(lit));
            lit.clear();
        }
    };
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => {
                flush(&mut lit, &mut word);
                word.push(c);
            }
            '[' => {
                // A bracket expression stays unquoted only if it is closed and harmless.
                let rest: String = chars.clone().collect();
                match rest.find(']') {
                    Some(i)
                        if i > 0
                            && rest[..i]
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || "!^-_.".contains(c)) =>
                    {
                        flush(&mut lit, &mut word);
                        word.push('[');
                        word.push_str(&rest[..=i]);
                        for _ in 0..=rest[..i].chars().count() {
                            chars.next();
                        }
                    }
                    _ => lit.push(c),
                }
            }
            c => lit.push(c),
        }
    }
    flush(&mut lit, &mut word);
    if word.is_empty() {
        word.push_str("''");
    }
    format!(
        "( for kk_p in {}; do if [ -e \"$kk_p\" ] || [ -L \"$kk_p\" ]; then exit 0; fi; done; exit 1 )",
        word
    )
}

/// Shell statements that append `word` to `"$@"` after the expansion Ansible's
/// `command` applies to each argument (`expand_argument_vars`, on by default): Python's
/// `os.path.expandvars` (`$NAME`/`${NAME}` of the module's environment; unset ones stay
/// as written) then `os.path.expanduser` (a leading `~` or `~user`). It runs on the host
/// because that is where the environment is.
fn expanded_arg(word: &str) -> String {
    let mut out = String::from("kk_w=\n");
    let mut rest = word;
    if let Some(after) = rest.strip_prefix('~') {
        let end = after.find('/').unwrap_or(after.len());
        let user = &after[..end];
        if user.is_empty() {
            out.push_str("if [ -n \"${HOME+x}\" ]; then kk_w=${HOME%/}; else kk_w='~'; fi\n");
            rest = &after[end..];
        } else if user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            && !user.starts_with('-')
        {
            // The shell's tilde expansion in an assignment leaves unknown users as written.
            out.push_str(&format!("kk_w=~{}\n", user));
            rest = &after[end..];
        }
    }
    let mut lit = String::new();
    let flush = |lit: &mut String, out: &mut String| {
        if !lit.is_empty() {
            out.push_str(&format!("kk_w=\"$kk_w\"{}\n", shell_quote(lit)));
            lit.clear();
        }
    };
    let mut i = 0;
    let b = rest.as_bytes();
    while i < b.len() {
        if b[i] == b'$' {
            // Python's pattern: \$(\w+|\{[^}]*\}) with ASCII \w.
            let (name, len) = if b.get(i + 1) == Some(&b'{') {
                match rest[i + 2..].find('}') {
                    Some(e) => (&rest[i + 2..i + 2 + e], e + 3),
                    None => ("", 0),
                }
            } else {
                let n = rest[i + 1..]
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count();
                (&rest[i + 1..i + 1 + n], n + 1)
            };
            let ident = !name.is_empty()
                && !name.as_bytes()[0].is_ascii_digit()
                && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
            if len > 1 && ident {
                flush(&mut lit, &mut out);
                out.push_str(&format!(
                    "if [ -n \"${{{n}+x}}\" ]; then kk_w=\"$kk_w${n}\"; else kk_w=\"$kk_w\"{lit}; fi\n",
                    n = name,
                    lit = shell_quote(&rest[i..i + len])
                ));
                i += len;
                continue;
            }
        }
        let ch = rest[i..].chars().next().unwrap_or('\0');
        lit.push(ch);
        i += ch.len_utf8().max(1);
    }
    flush(&mut lit, &mut out);
    out.push_str("set -- \"$@\" \"$kk_w\"\n");
    out
}

/// Whether `expanded_arg` would change anything for this word.
fn needs_expansion(word: &str) -> bool {
    word.contains('$') || word.starts_with('~')
}

/// The shell text that runs `words` as one program with its arguments.
fn argv_script(words: &[String], expand: bool) -> String {
    if expand && words.iter().any(|w| needs_expansion(w)) {
        let mut s = String::from("set --\n");
        for w in words {
            if needs_expansion(w) {
                s.push_str(&expanded_arg(w));
            } else {
                s.push_str(&format!("set -- \"$@\" {}\n", shell_quote(w)));
            }
        }
        s.push_str("\"$@\"");
        s
    } else {
        words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Python's `str.rstrip("\r\n")`, which Ansible's `command` applies to its output.
fn rstrip_newlines(s: &str) -> String {
    s.trim_end_matches(['\r', '\n']).to_string()
}

/// Adds `stdout`/`stderr` and their `_lines` forms the way Ansible's action layer does.
fn put_output(res: &mut ModuleResult, stdout: String, stderr: String) {
    res.data.insert("stdout".into(), stdout.clone().into());
    res.data.insert("stderr".into(), stderr.clone().into());
    res.data
        .insert("stdout_lines".into(), super::py_splitlines(&stdout));
    res.data
        .insert("stderr_lines".into(), super::py_splitlines(&stderr));
}

/// The shell text that runs the command, and the result skeleton Ansible always has
/// (`cmd`, and `start`/`end`/`delta` null until the command ran); `Err` is the result
/// when there is nothing to run.
#[allow(clippy::result_large_err)]
fn prepare(
    flavour: Flavour,
    a: &CommandArgs,
    expand: bool,
) -> std::result::Result<(String, ModuleResult), ModuleResult> {
    let words: Option<Vec<String>> = match (&a.argv, &a._raw_params) {
        (Some(argv), _) => Some(argv.clone()),
        (None, Some(line)) if flavour == Flavour::Command => Some(split_words(line)),
        _ => None,
    };
    let body = match (&words, &a._raw_params) {
        (Some(words), _) if !words.is_empty() => argv_script(words, expand),
        (None, Some(line)) if !line.trim().is_empty() => match &a.executable {
            Some(exe) => format!("{} -c {}", shell_quote(exe), shell_quote(line)),
            None => line.clone(),
        },
        _ => {
            let mut r = ModuleResult::failed("no command given");
            r.data.insert("rc".into(), 256.into());
            return Err(r);
        }
    };
    // Ansible's result always has these keys, `null` until the command ran.
    let mut res = ModuleResult::changed(false).msg("");
    res.data.insert(
        "cmd".into(),
        match (&words, &a._raw_params) {
            (Some(w), _) => serde_json::json!(w),
            (None, Some(line)) => line.clone().into(),
            _ => serde_json::Value::Null,
        },
    );
    for k in ["start", "end", "delta"] {
        res.data.insert(k.into(), serde_json::Value::Null);
    }
    Ok((body, res))
}

async fn run(flavour: Flavour, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
    let name = flavour.name();
    let a: CommandArgs = parse_args(name, raw, VALID)?;
    let _ = a.warn;
    let expand = a.expand();
    if flavour == Flavour::Raw {
        return run_raw(ctx, &a).await;
    }
    let (body, mut res) = match prepare(flavour, &a, expand) {
        Ok(x) => x,
        Err(r) => return Ok(r),
    };
    let stdin = a.stdin.as_ref().map(|s| {
        let mut s = s.clone();
        if a.stdin_add_newline.0 {
            s.push('\n');
        }
        s.into_bytes()
    });
    let mut script = String::new();
    if let Some(dir) = &a.chdir {
        script.push_str(&format!("cd {} || exit 1\n", shell_quote(dir)));
    }
    // creates/removes: decided on the host, in the same round trip as the command.
    if let Some(p) = &a.creates {
        script.push_str(&format!(
            "if {}; then echo __KK_SKIP_CREATES__; exit 0; fi\n",
            path_matches(p)
        ));
    }
    if let Some(p) = &a.removes {
        script.push_str(&format!(
            "if ! {}; then echo __KK_SKIP_REMOVES__; exit 0; fi\n",
            path_matches(p)
        ));
    }
    let guarded = a.creates.is_some() || a.removes.is_some();
    let shoulda = if ctx.check_mode { "Would" } else { "Did" };
    let skip = |res: &mut ModuleResult, text: &str| -> bool {
        let (msg, stdout) = if text.trim_end() == "__KK_SKIP_CREATES__" {
            let p = a.creates.clone().unwrap_or_default();
            (
                format!("{} not run command since '{}' exists", shoulda, p),
                format!("skipped, since {} exists", p),
            )
        } else if text.trim_end() == "__KK_SKIP_REMOVES__" {
            let p = a.removes.clone().unwrap_or_default();
            (
                format!("{} not run command since '{}' does not exist", shoulda, p),
                format!("skipped, since {} does not exist", p),
            )
        } else {
            return false;
        };
        res.msg = Some(msg);
        res.data.insert("rc".into(), 0.into());
        put_output(res, stdout, String::new());
        true
    };
    if ctx.check_mode {
        if guarded {
            // Only the guard runs, so we can say whether the command would run.
            script.push_str("echo __KK_WOULD_RUN__\n");
            let out = ctx.exec(script, None).await?;
            if skip(&mut res, &String::from_utf8_lossy(&out.stdout)) {
                return Ok(res);
            }
            res.changed = true;
        } else {
            res.skipped = true;
        }
        res.msg = Some("Command would have run if not in check mode".into());
        res.data.insert("rc".into(), 0.into());
        put_output(&mut res, String::new(), String::new());
        return Ok(res);
    }
    let direct = stdin.is_none() && flavour == Flavour::Command && !body.contains('\n');
    if direct {
        script.push_str(&format!("exec {}", body));
    } else {
        script.push_str(&body);
    }
    script.push('\n');
    let start = chrono_now();
    let t0 = std::time::Instant::now();
    let out = ctx.exec_command(script, stdin).await?;
    let delta = t0.elapsed();
    let end = chrono_now();
    if guarded && skip(&mut res, &String::from_utf8_lossy(&out.stdout)) {
        return Ok(res);
    }
    finish(&mut res, &out, &start, &end, delta, a.strip_empty_ends.0);
    if direct {
        exec_failure(&mut res, &out);
    }
    Ok(res)
}

/// `command` runs its argv with the shell's `exec`; when that could not start the program
/// (missing, not executable, a directory: the shell's one-line complaint naming it, rc
/// 127 or 126, no output), the result becomes the one Ansible's Python gives for the same
/// failed execve: rc the errno (2 or 13), "Error executing command.", no output, not
/// changed, `cmd` as one line.
fn exec_failure(res: &mut ModuleResult, out: &ExecOutput) {
    let Some(words) = res.data.get("cmd").and_then(|c| c.as_array()).cloned() else {
        return;
    };
    let Some(prog) = words.first().and_then(|w| w.as_str()) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.trim_end();
    if !out.stdout.is_empty() || line.contains('\n') {
        return;
    }
    let said = |what: &str| line.ends_with(&format!("{}: {}", prog, what));
    let errno = match out.rc {
        127 if said("not found") || said("No such file or directory") => 2,
        126 if said("Permission denied") || said("Is a directory") => 13,
        _ => return,
    };
    let cmd: Vec<String> = words
        .iter()
        .map(|w| shell_quote(w.as_str().unwrap_or_default()))
        .collect();
    res.changed = false;
    res.msg = Some("Error executing command.".into());
    res.data.insert("cmd".into(), cmd.join(" ").into());
    res.data.insert("rc".into(), errno.into());
    for k in ["start", "end", "delta"] {
        res.data.remove(k);
    }
    put_output(res, String::new(), String::new());
}

/// Fills a result from a finished run: output, rc and timing (shared by the single and
/// the batched path so both give the same shape).
fn finish(
    res: &mut ModuleResult,
    out: &ExecOutput,
    start: &str,
    end: &str,
    delta: std::time::Duration,
    strip_empty_ends: bool,
) {
    res.changed = true;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    if strip_empty_ends {
        put_output(res, rstrip_newlines(&stdout), rstrip_newlines(&stderr));
    } else {
        put_output(res, stdout, stderr);
    }
    res.data.insert("rc".into(), out.rc.into());
    res.data.insert("start".into(), start.into());
    res.data.insert("end".into(), end.into());
    let secs = delta.as_secs();
    res.data.insert(
        "delta".into(),
        format!(
            "{}:{:02}:{:02}.{:06}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            delta.subsec_micros()
        )
        .into(),
    );
    if out.rc != 0 {
        res.failed = true;
        res.msg = Some("non-zero return code".into());
    }
}

/// The time as Python's `str(datetime.now())` prints it (`2024-01-02 03:04:05.678901`),
/// in UTC: kk does not read the host's time zone database for this field.
fn chrono_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    )
}

/// `raw`: the line goes to the shell as is; output is kept as the host printed it.
async fn run_raw(ctx: &ModuleContext, a: &CommandArgs) -> Result<ModuleResult> {
    if ctx.check_mode {
        return Ok(ModuleResult {
            skipped: true,
            ..Default::default()
        });
    }
    let line = match (&a._raw_params, &a.argv) {
        (Some(line), _) => line.clone(),
        (None, Some(argv)) => argv
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        (None, None) => return Ok(ModuleResult::failed("no command given to `raw`")),
    };
    let script = match &a.executable {
        Some(exe) => format!("{} -c {}\n", shell_quote(exe), shell_quote(&line)),
        None => format!("{}\n", line),
    };
    let out = ctx.exec_command(script, None).await?;
    let mut res = ModuleResult::changed(true);
    put_output(
        &mut res,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    res.data.insert("rc".into(), out.rc.into());
    if out.rc != 0 {
        res.failed = true;
        res.msg = Some("non-zero return code".into());
    }
    Ok(res)
}

/// `command`, `shell` and `raw`: one implementation, told apart by their [`Flavour`]
/// (`command` runs argv without a shell, `shell` and `raw` through `/bin/sh`; `raw` does
/// nothing more and is never batched).
pub struct CommandModule(Flavour);

/// `command`: runs argv without a shell.
pub const COMMAND: CommandModule = CommandModule(Flavour::Command);
/// `shell`: runs a line through `/bin/sh`.
pub const SHELL: CommandModule = CommandModule(Flavour::Shell);
/// `raw`: runs a line through `/bin/sh`, nothing more.
pub const RAW: CommandModule = CommandModule(Flavour::Raw);

#[async_trait]
impl Module for CommandModule {
    fn validate(&self, args: &VarMap) -> Result<()> {
        parse_args::<CommandArgs>(self.0.name(), args.clone(), VALID).map(|_| ())
    }

    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        run(self.0, ctx, args).await
    }

    fn batches(&self) -> bool {
        self.0 != Flavour::Raw
    }

    fn batchable(&self, args: &VarMap) -> bool {
        self.batches() && batch::batchable(args)
    }

    async fn run_batch(
        &self,
        ctx: &ModuleContext,
        items: Vec<VarMap>,
    ) -> Result<Vec<Result<ModuleResult>>> {
        batch::run_batch(self.0, ctx, items).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    async fn cmd(c: &ModuleContext, flavour: Flavour, a: serde_json::Value) -> ModuleResult {
        run(flavour, c, args(a)).await.unwrap()
    }

    #[tokio::test]
    async fn command_expands_vars_like_ansible() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path(), json!({}));
        c.env = vec![
            ("KK_A".into(), "x y".into()),
            ("KK_EMPTY".into(), "".into()),
            ("HOME".into(), "/home/kk".into()),
        ];
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"_raw_params": "printf '%s|' $KK_A ${KK_A}z $KK_UNSET_X '$KK_EMPTY' ~/d ~ a~ $1 'it''s' \"q\\\"\""}),
        )
        .await;
        assert_eq!(r.msg.as_deref(), Some(""));
        assert_eq!(
            r.data["stdout"],
            json!("x y|x yz|$KK_UNSET_X||/home/kk/d|/home/kk|a~|$1|its|q\"|")
        );
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"argv": ["echo", "$KK_A"], "expand_argument_vars": false}),
        )
        .await;
        assert_eq!(r.data["stdout"], json!("$KK_A"));
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"argv": ["echo", "$KK_A", "|", "cat"]}),
        )
        .await;
        assert_eq!(r.data["stdout"], json!("x y | cat"));
    }

    #[tokio::test]
    async fn results_have_ansibles_shape() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path(), json!({}));
        let r = cmd(
            &c,
            Flavour::Shell,
            json!({"_raw_params": "printf 'a\\n\\n'; exit 2"}),
        )
        .await;
        assert!(r.failed && r.changed);
        assert_eq!(r.msg.as_deref(), Some("non-zero return code"));
        assert_eq!(r.data["stdout"], json!("a"));
        let r = cmd(&c, Flavour::Raw, json!({"_raw_params": "echo a; echo b"})).await;
        assert_eq!(r.data["stdout"], json!("a\nb\n"));
        assert_eq!(r.data["stdout_lines"], json!(["a", "b"]));
        assert_eq!(r.msg, None);
        let marker = dir.path().join("m*");
        std::fs::write(dir.path().join("m1"), "").unwrap();
        let m = marker.to_str().unwrap();
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"_raw_params": "false", "creates": m}),
        )
        .await;
        assert!(!r.changed && !r.failed);
        assert_eq!(r.data["rc"], json!(0));
        assert_eq!(
            r.data["stdout"],
            json!(format!("skipped, since {} exists", m))
        );
        assert_eq!(
            r.msg.unwrap(),
            format!("Did not run command since '{}' exists", m)
        );
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"_raw_params": "true", "removes": m}),
        )
        .await;
        assert!(r.changed && r.msg.as_deref() == Some(""));
        c.check_mode = true;
        let r = cmd(&c, Flavour::Command, json!({"_raw_params": "touch x"})).await;
        assert!(r.skipped && !r.changed);
        assert_eq!(
            r.msg.as_deref(),
            Some("Command would have run if not in check mode")
        );
        assert_eq!(r.data["rc"], json!(0));
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"_raw_params": "touch x", "removes": m}),
        )
        .await;
        assert!(!r.skipped && r.changed);
        let r = cmd(
            &c,
            Flavour::Command,
            json!({"_raw_params": "touch x", "creates": m}),
        )
        .await;
        assert!(!r.skipped && !r.changed);
        assert!(r.msg.unwrap().starts_with("Would not run command since"));
        assert!(!dir.path().join("x").exists());
        assert!(
            cmd(&c, Flavour::Raw, json!({"_raw_params": "touch x"}))
                .await
                .skipped
        );
    }

    #[test]
    fn validate_at_load() {
        let e = SHELL
            .validate(&args(json!({"_raw_params": "ls", "chdr": "/tmp"})))
            .unwrap_err();
        assert!(e.message.contains("shell") && e.message.contains("chdr"));
        assert!(e.help.unwrap().contains("chdir"));
        let e = COMMAND
            .validate(&args(
                json!({"_raw_params": "ls", "strip_empty_ends": "maybe"}),
            ))
            .unwrap_err();
        assert!(e.message.contains("command") && e.message.contains("boolean"));
        assert!(COMMAND
            .validate(&args(
                json!({"_raw_params": "ls", "stdin_add_newline": "no"})
            ))
            .is_ok());
    }

    #[test]
    fn splitlines_like_python() {
        assert_eq!(
            super::super::py_splitlines("a\r\nb\rc\n\nd\n"),
            json!(["a", "b", "c", "", "d"])
        );
        assert_eq!(super::super::py_splitlines(""), json!([]));
    }

    #[tokio::test]
    async fn a_program_that_cannot_start_reads_as_in_ansible() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let missing = json!({"_raw_params": "kk_no_such_program_x --flag"});
        let r = cmd(&c, Flavour::Command, missing).await;
        assert!(r.failed && !r.changed);
        assert_eq!(r.msg.as_deref(), Some("Error executing command."));
        assert_eq!(r.data["rc"], json!(2));
        assert_eq!(r.data["stderr"], json!(""));
        assert_eq!(r.data["cmd"], json!("kk_no_such_program_x --flag"));
        let d = dir.path().display().to_string();
        let r = cmd(&c, Flavour::Command, json!({"argv": [d]})).await;
        assert_eq!((r.data["rc"].clone(), r.changed), (json!(13), false));
        // A program that says the same itself, or a shell, keeps its own result.
        let r = cmd(
            &c,
            Flavour::Shell,
            json!({"_raw_params": "kk_no_such_program_x"}),
        )
        .await;
        assert_eq!((r.data["rc"].clone(), r.changed), (json!(127), true));
    }
}
