//! `tempfile`: a new temporary file or directory on the host (`mktemp`), named
//! `<prefix>XXXXXXXX<suffix>` in `path` or the host's temp dir, as Ansible's does.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::Text;
use super::remote::{add_stat_keys, parse_stats, qpath, stat_var_script};
use super::{parse_args, CheckMode, Module, ModuleContext, ModuleResult, VarMap};
use crate::connect::shell_quote;
use crate::error::Result;

crate::closed_set! {
    /// What to create.
    enum Kind for "state" { File = "file", Directory = "directory" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TempArgs {
    #[serde(default)]
    state: Option<Kind>,
    #[serde(default)]
    path: Option<Text>,
    #[serde(default)]
    prefix: Option<Text>,
    #[serde(default)]
    suffix: Option<Text>,
}

const VALID: &[&str] = &["state", "path", "prefix", "suffix"];

struct Checked {
    kind: Kind,
    dir: Option<String>,
    prefix: String,
    suffix: String,
}

fn check(raw: VarMap) -> Result<Checked> {
    let a: TempArgs = parse_args("tempfile", raw, VALID)?;
    let prefix = a.prefix.map(|p| p.0).unwrap_or_else(|| "ansible.".into());
    let suffix = a.suffix.map(|s| s.0).unwrap_or_default();
    Ok(Checked {
        kind: a.state.unwrap_or(Kind::File),
        dir: a.path.map(|p| p.0).filter(|p| !p.is_empty()),
        prefix,
        suffix,
    })
}

/// The mktemp script: prints the new path. Python's `mkstemp` uses `$TMPDIR`, then `/tmp`.
fn script(c: &Checked) -> String {
    let dir = match &c.dir {
        Some(d) => qpath(d),
        None => "\"${TMPDIR:-/tmp}\"".to_string(),
    };
    let flag = if c.kind == Kind::Directory { "-d " } else { "" };
    format!(
        "p=$(mktemp {flag}-p {dir} {}) || exit 1\necho \"path=$p\"\n{}",
        shell_quote(&format!("{}XXXXXXXX{}", c.prefix, c.suffix)),
        stat_var_script("p", false)
    )
}

/// Creates a temporary file or directory: always a change. Ansible's module does not
/// support check mode, so in check mode it is skipped with Ansible's message.
pub struct TempFile;

#[async_trait]
impl Module for TempFile {
    fn check_mode(&self) -> CheckMode {
        CheckMode::RemoteRefuses
    }

    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // A failure when the task runs, as in Ansible (not a load error).
        for (what, v) in [("prefix", &c.prefix), ("suffix", &c.suffix)] {
            if v.contains('/') {
                return Ok(ModuleResult::failed(format!(
                    "{what} must be a valid file name component, got '{}'",
                    v.replace('\\', "\\\\").replace('\'', "\\'")
                )));
            }
        }
        let out = ctx.exec(script(&c), None).await?;
        if out.rc != 0 {
            return Ok(ModuleResult::failed(out.stderr_text()));
        }
        let text = out.stdout_text();
        let path = text
            .lines()
            .find_map(|l| l.strip_prefix("path="))
            .unwrap_or_default()
            .to_string();
        let st = parse_stats(&[&path], &out.stdout)?
            .pop()
            .unwrap_or_default();
        let mut res = ModuleResult::changed(true).with("path", path);
        add_stat_keys(&mut res, &st);
        Ok(res)
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        check(raw.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn makes_files_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let d = dir.path().to_str().unwrap();
        let r = TempFile
            .run(
                &c,
                args(json!({"path": d, "prefix": "x.", "suffix": ".txt"})),
            )
            .await
            .unwrap();
        let p = r.data["path"].as_str().unwrap().to_string();
        assert!(r.changed && p.starts_with(&format!("{d}/x.")) && p.ends_with(".txt"));
        assert!(std::path::Path::new(&p).is_file());
        assert_eq!(r.data["state"], "file");
        let r = TempFile
            .run(&c, args(json!({"path": d, "state": "directory"})))
            .await
            .unwrap();
        assert!(std::path::Path::new(r.data["path"].as_str().unwrap()).is_dir());
        assert_eq!(r.data["state"], "directory");
        let r = TempFile
            .run(&c, args(json!({"prefix": "a/b"})))
            .await
            .unwrap();
        assert!(r.failed && r.msg.unwrap().contains("prefix must be"));
        let e = TempFile
            .validate(&args(json!({"state": "link"})))
            .unwrap_err();
        assert!(e.message.contains("file, directory"), "{}", e.message);
    }
}
