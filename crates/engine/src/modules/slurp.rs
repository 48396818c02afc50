//! `slurp`: a file's content from the host, base64-encoded (Ansible's result: `content`,
//! `encoding: base64`, `source`). Read with `base64` on the host, no Python; the messages
//! for a missing, unreadable or directory source are Ansible's.

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;

use super::args::Text;
use super::remote::qpath;
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SlurpArgs {
    #[serde(default, alias = "path")]
    src: Option<Text>,
}

fn check(raw: VarMap) -> Result<String> {
    let a: SlurpArgs = parse_args("slurp", raw, &["src"])?;
    a.src
        .map(|t| t.0)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "slurp: `src` is required"))
}

/// Reads a file on the host.
pub struct Slurp;

#[async_trait]
impl Module for Slurp {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let src = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // The file goes through `cat` as bytes; kk encodes it (one pass, no base64 tool needed).
        let script = format!(
            "s={}\nif [ -d \"$s\" ]; then exit 21; fi\nif [ ! -e \"$s\" ]; then exit 22; fi\nif [ ! -r \"$s\" ]; then exit 23; fi\nexec cat -- \"$s\"\n",
            qpath(&src)
        );
        let out = ctx.exec(script, None).await?;
        let msg = match out.rc {
            0 => None,
            21 => Some(format!("Source is a directory and must be a file: {}", src)),
            22 => Some(format!("File not found: {}", src)),
            23 => Some(format!("File is not readable: {}", src)),
            _ => Some(format!("Unable to slurp file: {}", src)),
        };
        if let Some(m) = msg {
            return Ok(ModuleResult::failed(m));
        }
        Ok(ModuleResult::ok()
            .with(
                "content",
                base64::engine::general_purpose::STANDARD.encode(&out.stdout),
            )
            .with("source", src)
            .with("encoding", "base64"))
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn reads_and_fails_like_ansible() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("f");
        std::fs::write(&f, b"\x00hi\n").unwrap();
        let c = ctx(t.path(), json!({}));
        let r = Slurp
            .run(&c, args(json!({"src": f.to_str().unwrap()})))
            .await
            .unwrap()
            .to_value();
        assert_eq!(r["content"], "AGhpCg==");
        assert_eq!(r["encoding"], "base64");
        let dir = t.path().to_str().unwrap();
        let r = Slurp.run(&c, args(json!({"path": dir}))).await.unwrap();
        assert_eq!(
            r.msg.unwrap(),
            format!("Source is a directory and must be a file: {}", dir)
        );
        let r = Slurp
            .run(&c, args(json!({"src": format!("{}/nope", dir)})))
            .await
            .unwrap();
        assert!(r.failed && r.msg.unwrap().starts_with("File not found: "));
        assert!(Slurp
            .validate(&args(json!({"src": "/x", "dest": "/y"})))
            .is_err());
    }
}
