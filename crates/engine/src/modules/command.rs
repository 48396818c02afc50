//! `command`, `shell` and `raw`: run a command line on the host.
//!
//! `command` does no shell processing of its own (arguments are quoted for `/bin/sh`),
//! `shell` hands the text to the shell, `raw` is `shell` without any options.

use async_trait::async_trait;
use serde::Deserialize;

use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::Result;

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
    #[serde(default = "yes", deserialize_with = "args::bool_like")]
    stdin_add_newline: bool,
    #[serde(default = "yes", deserialize_with = "args::bool_like")]
    strip_empty_ends: bool,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    warn: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    expand_argument_vars: Option<bool>,
}

fn yes() -> bool {
    true
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

/// Splits a command line into words the way Python's `shlex.split` does.
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some('"') | Some('\\') | Some('$') | Some('`') => {
                                cur.push(chars.next().unwrap())
                            }
                            _ => cur.push('\\'),
                        },
                        _ => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

async fn run(flavour: Flavour, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
    let name = match flavour {
        Flavour::Command => "command",
        Flavour::Shell => "shell",
        Flavour::Raw => "raw",
    };
    let a: CommandArgs = parse_args(name, raw, VALID)?;
    let _ = (a.warn, a.expand_argument_vars);
    let mut script = String::new();
    if let Some(dir) = &a.chdir {
        script.push_str(&format!("cd {} || exit 1\n", shell_quote(dir)));
    }
    // creates/removes: decided on the host, in the same round trip as the command.
    let mut guard = String::new();
    if let Some(p) = &a.creates {
        guard.push_str(&format!(
            "if [ -e {} ]; then echo __KK_SKIP_CREATES__; exit 0; fi\n",
            shell_quote(p)
        ));
    }
    if let Some(p) = &a.removes {
        guard.push_str(&format!(
            "if [ ! -e {} ]; then echo __KK_SKIP_REMOVES__; exit 0; fi\n",
            shell_quote(p)
        ));
    }
    let body = match (flavour, &a.argv, &a._raw_params) {
        (Flavour::Command, Some(argv), _) => argv
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        (Flavour::Command, None, Some(line)) => split_words(line)
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        (_, _, Some(line)) => match &a.executable {
            Some(exe) if flavour == Flavour::Shell => {
                format!("{} -c {}", shell_quote(exe), shell_quote(line))
            }
            _ => line.clone(),
        },
        (_, Some(argv), None) => argv
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
        (_, None, None) => {
            return Ok(ModuleResult::failed(format!(
                "no command given to `{}`",
                name
            )));
        }
    };
    let stdin = a.stdin.as_ref().map(|s| {
        let mut s = s.clone();
        if a.stdin_add_newline {
            s.push('\n');
        }
        s.into_bytes()
    });
    if ctx.check_mode && a.creates.is_none() && a.removes.is_none() {
        return Ok(ModuleResult {
            skipped: true,
            msg: Some("skipped in check mode: a command cannot say what it would change".into()),
            ..Default::default()
        });
    }
    if ctx.check_mode {
        // Only the guard runs, so we can say whether the command would run.
        let out = ctx
            .exec(format!("{}echo __KK_WOULD_RUN__", guard), None)
            .await?;
        let would = String::from_utf8_lossy(&out.stdout).contains("__KK_WOULD_RUN__");
        return Ok(ModuleResult::changed(would).msg(if would {
            "command would run"
        } else {
            "skipped, since the guard holds"
        }));
    }
    // The command runs in a subshell so `exit` in it does not skip our guard bookkeeping.
    script.push_str(&guard);
    if stdin.is_some() || flavour != Flavour::Command {
        script.push_str(&body);
    } else {
        script.push_str(&format!("exec {}", body));
    }
    script.push('\n');
    let start = std::time::SystemTime::now();
    let out = ctx.exec(script, stdin).await?;
    let end = std::time::SystemTime::now();
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim_end() == "__KK_SKIP_CREATES__" || text.trim_end() == "__KK_SKIP_REMOVES__" {
        let which = if text.contains("CREATES") {
            format!(
                "skipped, since {} exists",
                a.creates.clone().unwrap_or_default()
            )
        } else {
            format!(
                "skipped, since {} does not exist",
                a.removes.clone().unwrap_or_default()
            )
        };
        return Ok(ModuleResult::changed(false)
            .msg(which)
            .with("rc", 0)
            .with("stdout", "")
            .with("stdout_lines", Vec::<String>::new()));
    }
    let mut res = ModuleResult::changed(true).with_output(&out);
    if !a.strip_empty_ends {
        res.data.insert(
            "stdout".into(),
            String::from_utf8_lossy(&out.stdout).into_owned().into(),
        );
    }
    res.data.insert(
        "cmd".into(),
        match (&a.argv, &a._raw_params) {
            (Some(argv), _) => serde_json::json!(argv),
            (None, Some(line)) if flavour == Flavour::Command => {
                serde_json::json!(split_words(line))
            }
            (None, Some(line)) => line.clone().into(),
            _ => serde_json::Value::Null,
        },
    );
    let delta = end.duration_since(start).unwrap_or_default();
    res.data.insert(
        "delta".into(),
        format!("0:00:{:09.6}", delta.as_secs_f64()).into(),
    );
    if out.rc != 0 {
        res.failed = true;
        res.msg = Some("non-zero return code".into());
    }
    Ok(res)
}

/// `command`: runs a program with arguments, no shell features.
pub struct Command;
/// `shell`: runs a line through `/bin/sh`.
pub struct Shell;
/// `raw`: runs a line through `/bin/sh`, nothing more.
pub struct Raw;

#[async_trait]
impl Module for Command {
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        run(Flavour::Command, ctx, args).await
    }
}

#[async_trait]
impl Module for Shell {
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        run(Flavour::Shell, ctx, args).await
    }
}

#[async_trait]
impl Module for Raw {
    async fn run(&self, ctx: &ModuleContext, args: VarMap) -> Result<ModuleResult> {
        run(Flavour::Raw, ctx, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn words() {
        assert_eq!(
            split_words(r#"echo "a b" 'c d' e\ f"#),
            vec!["echo", "a b", "c d", "e f"]
        );
        assert_eq!(split_words("  ls   -l "), vec!["ls", "-l"]);
        assert_eq!(split_words(r#"echo "x\"y""#), vec!["echo", "x\"y"]);
    }
}
