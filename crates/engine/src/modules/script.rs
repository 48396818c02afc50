//! `script`: runs a controller script on the host in one round trip. The script's bytes go
//! over stdin into a temp file there, which runs with its arguments (through its `#!`
//! interpreter, so a `noexec` /tmp does not matter) and is removed afterwards.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::command::split_words;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptArgs {
    #[serde(default, alias = "cmd")]
    _raw_params: Option<Text>,
    #[serde(default)]
    creates: Option<Text>,
    #[serde(default)]
    removes: Option<Text>,
    #[serde(default)]
    chdir: Option<Text>,
    #[serde(default)]
    executable: Option<Text>,
    #[serde(default)]
    decrypt: Option<Flag>,
}

/// The arguments as the run uses them.
struct Checked {
    /// The script's path as written and the rest of the command line.
    path: String,
    rest: String,
    creates: Option<String>,
    removes: Option<String>,
    chdir: Option<String>,
    executable: Option<String>,
}

/// Parses and checks the arguments without touching a host (also at load time).
fn parse(raw: VarMap) -> Result<Checked> {
    let a: ScriptArgs = parse_args("script", raw, VALID)?;
    let _ = a.decrypt;
    let (path, rest) = a
        ._raw_params
        .as_ref()
        .and_then(|r| split_command(r.as_str()))
        .ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "script: no script given")
                .help("write `script: path/to/script.sh arg1 arg2` or use `cmd:`")
        })?;
    let text = |t: Option<Text>| t.map(|t| t.0);
    Ok(Checked {
        path,
        rest,
        creates: text(a.creates),
        removes: text(a.removes),
        chdir: text(a.chdir),
        executable: text(a.executable),
    })
}

const VALID: &[&str] = &[
    "cmd",
    "creates",
    "removes",
    "chdir",
    "executable",
    "decrypt",
];

/// Splits `path args…` into the path (unquoted) and the rest as shell text, unchanged.
fn split_command(raw: &str) -> Option<(String, String)> {
    let t = raw.trim_start();
    let first = split_words(t).into_iter().next()?;
    let end = match t.chars().next()? {
        q @ ('"' | '\'') => t[1..].find(q).map(|i| i + 2).unwrap_or(t.len()),
        _ => t.find(char::is_whitespace).unwrap_or(t.len()),
    };
    Some((first, t[end..].trim().to_string()))
}

/// The interpreter named by a `#!` line, as shell words.
fn shebang(data: &[u8]) -> Option<String> {
    let first = data.strip_prefix(b"#!")?;
    let end = first
        .iter()
        .position(|b| *b == b'\n')
        .unwrap_or(first.len());
    let line = String::from_utf8_lossy(&first[..end]).trim().to_string();
    if line.is_empty() {
        return None;
    }
    Some(
        line.split_whitespace()
            .map(shell_quote)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Runs a local script on the host.
pub struct Script;

#[async_trait]
impl Module for Script {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let (path, rest) = (&a.path, &a.rest);
        let local = ctx.find_file("files", path)?;
        let data = std::fs::read(&local).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("script: cannot read {}: {}", local.display(), e),
            )
            .at_opt(ctx.span.as_ref())
        })?;
        // creates/removes: Ansible's action tests them before anything else and skips.
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
        let skip = |text: &str| -> Option<ModuleResult> {
            let msg = match text.trim_end() {
                "__KK_SKIP_CREATES__" => format!(
                    "{} exists, matching creates option",
                    a.creates.clone().unwrap_or_default()
                ),
                "__KK_SKIP_REMOVES__" => format!(
                    "{} does not exist, matching removes option",
                    a.removes.clone().unwrap_or_default()
                ),
                _ => return None,
            };
            Some(ModuleResult {
                skipped: true,
                msg: Some(msg),
                ..Default::default()
            })
        };
        if ctx.check_mode {
            if guard.is_empty() {
                return Ok(ModuleResult {
                    skipped: true,
                    msg: Some("Check mode is not supported for this task.".into()),
                    ..Default::default()
                });
            }
            let out = ctx.exec(guard, None).await?;
            if let Some(r) = skip(&String::from_utf8_lossy(&out.stdout)) {
                return Ok(r);
            }
            return Ok(ModuleResult::changed(true));
        }
        let interp = match &a.executable {
            Some(e) => e.clone(),
            None => shebang(&data).unwrap_or_else(|| "/bin/sh".into()),
        };
        let mut s = guard;
        s.push_str("kk_tmp=$(mktemp) || exit 1\ntrap 'rm -f \"$kk_tmp\"' EXIT\ncat > \"$kk_tmp\" || exit 1\nchmod 700 \"$kk_tmp\"\n");
        if let Some(dir) = &a.chdir {
            s.push_str(&format!("cd {} || exit 1\n", shell_quote(dir)));
        }
        s.push_str(&format!("{} \"$kk_tmp\" {} < /dev/null\n", interp, rest));
        let out = ctx.exec_command(s, Some(data)).await?;
        if let Some(r) = skip(&String::from_utf8_lossy(&out.stdout)) {
            return Ok(r);
        }
        // Like `raw`, the output is kept as printed (trailing newline included).
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let mut res = ModuleResult::changed(true)
            .with("rc", out.rc)
            .with("stdout_lines", super::py_splitlines(&stdout))
            .with("stderr_lines", super::py_splitlines(&stderr))
            .with("stdout", stdout)
            .with("stderr", stderr);
        if out.rc != 0 {
            res.failed = true;
            res.msg = Some("non-zero return code".into());
        }
        Ok(res)
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    #[test]
    fn splitting() {
        assert_eq!(
            split_command("run.sh a \"b c\""),
            Some(("run.sh".into(), "a \"b c\"".into()))
        );
        assert_eq!(
            split_command("'my script.sh' x"),
            Some(("my script.sh".into(), "x".into()))
        );
        assert_eq!(
            shebang(b"#!/usr/bin/env bash\necho"),
            Some("/usr/bin/env bash".into())
        );
        assert_eq!(shebang(b"echo"), None);
    }

    #[tokio::test]
    async fn runs_with_args_and_guards() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(
            dir.path().join("files/hello.sh"),
            "#!/bin/sh\necho \"hi $1 $2\"\necho err >&2\nexit ${3:-0}\n",
        )
        .unwrap();
        let mut c = ctx(dir.path(), json!({}));
        let r = Script
            .run(&c, args(json!({"_raw_params": "hello.sh one 'two three'"})))
            .await
            .unwrap();
        assert!(r.changed && !r.failed);
        assert_eq!(r.data["stdout"], json!("hi one two three\n"));
        assert_eq!(r.data["stdout_lines"], json!(["hi one two three"]));
        assert_eq!(r.data["stderr"], json!("err\n"));
        let r = Script
            .run(&c, args(json!({"_raw_params": "hello.sh a b 3"})))
            .await
            .unwrap();
        assert!(r.failed);
        assert_eq!(r.data["rc"], json!(3));
        let marker = dir.path().join("files");
        let r = Script
            .run(
                &c,
                args(json!({"_raw_params": "hello.sh", "creates": marker.to_str().unwrap()})),
            )
            .await
            .unwrap();
        assert!(!r.changed && r.skipped);
        assert!(r.msg.unwrap().ends_with(" exists, matching creates option"));
        c.check_mode = true;
        assert!(
            Script
                .run(&c, args(json!({"cmd": "hello.sh"})))
                .await
                .unwrap()
                .skipped
        );
        c.check_mode = false;
        let e = Script
            .run(&c, args(json!({"cmd": "hello.sh", "chdri": "/"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("chdri"));
        let e = Script
            .run(&c, args(json!({"_raw_params": "missing.sh"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("missing.sh"));
    }

    #[test]
    fn validate_checks_literal_arguments() {
        let check = |v: serde_json::Value| Script.validate(&args(v));
        assert!(check(json!({"_raw_params": "run.sh a b", "creates": "/x"})).is_ok());
        assert!(check(json!({"creates": "/x"}))
            .unwrap_err()
            .message
            .contains("no script"));
        let e = check(json!({"_raw_params": "run.sh", "chdr": "/"})).unwrap_err();
        assert!(e.message.contains("chdr"), "{e:?}");
    }
}
