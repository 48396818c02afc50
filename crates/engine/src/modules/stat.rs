//! `stat`: facts about a path on the host, in Ansible's `stat` dictionary, from one
//! round trip (the checksum is computed on the host with `sha1sum` & co.).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args::{Flag, Text};
use super::remote::{self, Checksum, RemoteStat, StatOptions};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatArgs {
    #[serde(default, alias = "dest", alias = "name")]
    path: Option<Text>,
    #[serde(default)]
    follow: Flag,
    #[serde(default = "Flag::on")]
    get_checksum: Flag,
    #[serde(default, alias = "checksum", alias = "checksum_algo")]
    checksum_algorithm: Option<Text>,
    // Accepted and ignored: no MIME database or lsattr is assumed on the host.
    #[serde(default, alias = "mime", alias = "mime_type", alias = "mime-type")]
    get_mime: Option<Flag>,
    #[serde(default, alias = "attr", alias = "attributes")]
    get_attributes: Option<Flag>,
    #[serde(default)]
    get_md5: Option<Flag>,
}

const VALID: &[&str] = &[
    "path",
    "follow",
    "get_checksum",
    "checksum_algorithm",
    "get_mime",
    "get_attributes",
];

/// Parses and checks the arguments without touching a host (also at load time):
/// the path and what to read.
fn parse(raw: VarMap) -> Result<(String, StatOptions, bool)> {
    let a: StatArgs = parse_args("stat", raw, VALID)?;
    let _ = (a.get_attributes, a.get_md5);
    // ansible-core's default: get_mime is on.
    let mime = a.get_mime.is_none_or(|f| f.0);
    let path = a
        .path
        .map(|p| p.0)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "stat: `path` is required"))?;
    let algo = a
        .checksum_algorithm
        .map(|c| c.0)
        .unwrap_or_else(|| "sha1".into());
    let checksum = Checksum::parse(&algo).ok_or_else(|| {
        Error::new(
            ErrorKind::ModuleArgs,
            format!("stat: unknown checksum_algorithm {:?}", algo),
        )
        .help("use one of: md5, sha1, sha224, sha256, sha384, sha512")
    })?;
    let opts = StatOptions {
        follow: a.follow.0,
        checksum: a.get_checksum.0.then_some(checksum),
        content: false,
        max_content: None,
    };
    Ok((path, opts, mime))
}

/// Marks the line of `file`'s answer, printed before the stat record (which the stat
/// parser finds after any other output).
const MIME_MARK: &str = "KK_MIME:";

/// The shell lines that print `file --mime-type --mime-encoding` for `path` (as
/// ansible-core's stat asks it), when the host has `file` and the path exists.
fn mime_script(path: &str, follow: bool) -> String {
    let p = crate::ansible::shell_quote(path);
    format!(
        "if command -v file >/dev/null 2>&1 && {{ [ -e {p} ] || [ -L {p} ]; }}; then printf '%s' '{MIME_MARK}'; file {L}--mime-type --mime-encoding -- {p} 2>/dev/null || echo; fi\n",
        L = if follow { "-L " } else { "" },
    )
}

/// `mimetype` and `charset` from `file`'s line (`path: text/plain; charset=us-ascii`),
/// `unknown` for both when there is none, as ansible-core reports them.
fn parse_mime(stdout: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(stdout);
    let line = text.lines().find_map(|l| l.strip_prefix(MIME_MARK));
    let parsed = line.and_then(|l| {
        let (_, tail) = l.rsplit_once(':')?;
        let (mime, charset) = tail.split_once(';')?;
        let (_, charset) = charset.split_once('=')?;
        Some((mime.trim().to_string(), charset.trim().to_string()))
    });
    parsed.unwrap_or_else(|| ("unknown".into(), "unknown".into()))
}

/// Reports on a path; never changes anything.
pub struct Stat;

#[async_trait]
impl Module for Stat {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let (path, opts, mime) = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        if !mime {
            let st = remote::stat_paths(ctx, &[&path], opts).await?.remove(0);
            return Ok(ModuleResult::ok().with("stat", stat_dict(&path, &st)));
        }
        // One round trip: `file`'s answer, then the stat record.
        let follow = opts.follow;
        let script = format!(
            "{}{}",
            mime_script(&path, follow),
            remote::stat::stat_script(&[&path], opts)
        );
        let out = ctx.exec(script, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(&format!("cannot stat {}", path), &out));
        }
        let st = remote::parse_stats(&[&path], &out.stdout)?.remove(0);
        let mut dict = stat_dict(&path, &st);
        if st.exists {
            let (mimetype, charset) = parse_mime(&out.stdout);
            dict["mimetype"] = Value::from(mimetype);
            dict["charset"] = Value::from(charset);
        }
        Ok(ModuleResult::ok().with("stat", dict))
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
    }
}

/// Ansible's `stat` dictionary for a path's state.
pub fn stat_dict(path: &str, st: &RemoteStat) -> Value {
    if !st.exists {
        return json!({"exists": false});
    }
    let m = st.mode;
    let fmt = st.raw_mode & 0o170000;
    let mut d = Map::new();
    let mut put = |k: &str, v: Value| {
        d.insert(k.to_string(), v);
    };
    put("exists", true.into());
    put("path", path.into());
    put("mode", st.mode_str().into());
    put("isdir", (fmt == 0o040000).into());
    put("ischr", (fmt == 0o020000).into());
    put("isblk", (fmt == 0o060000).into());
    put("isreg", (fmt == 0o100000).into());
    put("isfifo", (fmt == 0o010000).into());
    put("islnk", (fmt == 0o120000).into());
    put("issock", (fmt == 0o140000).into());
    put("uid", st.uid.into());
    put("gid", st.gid.into());
    put("size", st.size.into());
    put("inode", st.inode.into());
    put("dev", st.dev.into());
    put("nlink", st.nlink.into());
    put("atime", st.atime.into());
    put("mtime", st.mtime.into());
    put("ctime", st.ctime.into());
    put("wusr", (m & 0o200 != 0).into());
    put("rusr", (m & 0o400 != 0).into());
    put("xusr", (m & 0o100 != 0).into());
    put("wgrp", (m & 0o020 != 0).into());
    put("rgrp", (m & 0o040 != 0).into());
    put("xgrp", (m & 0o010 != 0).into());
    put("woth", (m & 0o002 != 0).into());
    put("roth", (m & 0o004 != 0).into());
    put("xoth", (m & 0o001 != 0).into());
    put("isuid", (m & 0o4000 != 0).into());
    put("isgid", (m & 0o2000 != 0).into());
    put("pw_name", st.owner.clone().into());
    put("gr_name", st.group.clone().into());
    put("readable", st.readable.into());
    put("writeable", st.writeable.into());
    put("executable", st.executable.into());
    if let Some(s) = &st.link_source {
        put("lnk_source", s.clone().into());
    }
    if let Some(t) = &st.link_target {
        put("lnk_target", t.clone().into());
    }
    if let Some(c) = &st.checksum {
        put("checksum", c.clone().into());
    }
    Value::Object(d)
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::super::remote::{sha1_hex, sha256_hex};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn reports_like_ansible() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let f = dir.path().join("f");
        std::fs::write(&f, "data").unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("l")).unwrap();
        let r = Stat
            .run(&c, args(json!({"path": f.to_str().unwrap()})))
            .await
            .unwrap();
        assert!(!r.changed);
        let s = &r.data["stat"];
        assert_eq!(s["exists"], json!(true));
        assert_eq!(s["isreg"], json!(true));
        assert_eq!(s["isdir"], json!(false));
        assert_eq!(s["size"], json!(4));
        assert_eq!(s["checksum"], json!(sha1_hex(b"data")));
        assert_eq!(s["mode"].as_str().unwrap().len(), 4);
        assert!(s["pw_name"].is_string());
        let l = dir.path().join("l");
        let r = Stat
            .run(
                &c,
                args(json!({"path": l.to_str().unwrap(), "checksum_algorithm": "sha256"})),
            )
            .await
            .unwrap();
        let s = &r.data["stat"];
        assert_eq!(s["islnk"], json!(true));
        assert_eq!(s["lnk_target"], json!("f"));
        assert_eq!(s["lnk_source"], json!(f.to_str().unwrap()));
        assert_eq!(s["checksum"], json!(sha256_hex(b"data")));
        let r = Stat
            .run(
                &c,
                args(json!({"path": l.to_str().unwrap(), "follow": true, "get_checksum": false})),
            )
            .await
            .unwrap();
        assert_eq!(r.data["stat"]["isreg"], json!(true));
        assert!(r.data["stat"].get("checksum").is_none());
        let r = Stat
            .run(&c, args(json!({"path": "/nonexistent/kk"})))
            .await
            .unwrap();
        assert_eq!(r.data["stat"], json!({"exists": false}));
        let e = Stat
            .run(&c, args(json!({"path": "/x", "get_chksum": true})))
            .await
            .unwrap_err();
        assert!(e.message.contains("get_chksum"));
    }

    #[test]
    fn validate_checks_literal_arguments() {
        let check = |v: Value| Stat.validate(&args(v));
        assert!(check(json!({"path": "/s", "checksum_algorithm": "sha256"})).is_ok());
        let e = check(json!({"path": "/s", "checksum_algorithm": "crc"})).unwrap_err();
        assert!(e.message.contains("checksum_algorithm"), "{e:?}");
        let e = check(json!({"path": "/s", "get_checksum": "often"})).unwrap_err();
        assert!(e.message.starts_with("stat:"), "{e:?}");
    }

    #[test]
    fn mime_from_file_as_ansible_reads_it() {
        let out = b"KK_MIME:/tmp/a b: text/plain; charset=us-ascii\nrecord...\n";
        assert_eq!(parse_mime(out), ("text/plain".into(), "us-ascii".into()));
        assert_eq!(
            parse_mime(b"no file here\n"),
            ("unknown".into(), "unknown".into())
        );
        assert!(mime_script("/x y", false).contains("'/x y'"));
    }
}
