//! `assemble`: one file from a directory of fragments, concatenated in name order
//! (Ansible's rules: a newline after a fragment that lacks one, `delimiter` between
//! fragments, `regexp` and `ignore_hidden` to choose them). The fragments are on the host
//! (`remote_src: true`, the default; read in one round trip) or in the controller's
//! `files/`. The result is written through the same plan/apply as `lineinfile`: temp file
//! and rename, only when it differs, `validate` and `backup` as there.

use async_trait::async_trait;
use base64::Engine as _;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, Text};
use super::copy::check_validate;
use super::lineinfile::{
    apply_edit, attrs_of, compile, plan_edit, read_for_edit, EditFinish, EditWork,
};
use super::plan::{Plan, PlanApply};
use super::remote::{self, add_stat_keys, md5_hex, qpath, remote_error, sha1_hex, StatOptions};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssembleArgs {
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    delimiter: Option<Text>,
    #[serde(default = "Flag::on")]
    remote_src: Flag,
    #[serde(default)]
    regexp: Option<Text>,
    #[serde(default)]
    ignore_hidden: Flag,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    validate: Option<Text>,
    #[serde(default)]
    follow: Flag,
    #[serde(default = "Flag::on")]
    decrypt: Flag,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "delimiter",
    "remote_src",
    "regexp",
    "ignore_hidden",
    "backup",
    "validate",
    "follow",
    "decrypt",
];

struct Checked {
    src: String,
    dest: String,
    delimiter: Option<Vec<u8>>,
    remote_src: bool,
    regexp: Option<regex::bytes::Regex>,
    ignore_hidden: bool,
    backup: bool,
    validate: Option<String>,
    attrs: FileAttrs,
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (AssembleArgs, FileAttrs) = parse_with_file_attrs("assemble", raw, VALID)?;
    let _ = (a.follow, a.decrypt);
    let (Some(src), Some(dest)) = (a.src, a.dest) else {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "assemble: src and dest are required",
        ));
    };
    if let Some(v) = &a.validate {
        check_validate(v.as_str())?;
    }
    Ok(Checked {
        src: src.0,
        dest: dest.0,
        delimiter: a.delimiter.map(|d| unescape(&d.0)),
        remote_src: a.remote_src.0,
        regexp: a
            .regexp
            .map(|r| compile("assemble: regexp", &r.0))
            .transpose()?,
        ignore_hidden: a.ignore_hidden.0,
        backup: a.backup.0,
        validate: a.validate.map(|v| v.0),
        attrs,
    })
}

/// Python's `codecs.escape_decode` for the escapes users write in a delimiter
/// (`\n`, `\t`, `\\`, `\xNN`, octal); anything else is kept as written.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'\n' => {}
            b'x' if i + 2 <= b.len()
                && std::str::from_utf8(&b[i..i + 2])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .is_some() =>
            {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(&b[i..i + 2]).unwrap_or("0"), 16)
                        .unwrap_or(0),
                );
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    out
}

/// Concatenates fragments (name, content), already sorted, with Ansible's rules.
fn assemble(fragments: &[(Vec<u8>, Vec<u8>)], c: &Checked) -> Vec<u8> {
    let mut out = Vec::new();
    let mut first = true;
    let mut add_newline = false;
    for (name, content) in fragments {
        if c.regexp.as_ref().is_some_and(|re| !re.is_match(name)) {
            continue;
        }
        if c.ignore_hidden && name.starts_with(b".") {
            continue;
        }
        if add_newline {
            out.push(b'\n');
        }
        if !first {
            if let Some(d) = c.delimiter.as_ref().filter(|d| !d.is_empty()) {
                out.extend_from_slice(d);
                if !d.ends_with(b"\n") {
                    out.push(b'\n');
                }
            }
        }
        out.extend_from_slice(content);
        first = false;
        add_newline = !content.ends_with(b"\n");
    }
    out
}

/// Reads the regular files of a host directory (links followed, as Python's `isfile`),
/// one line each: base64 name, space, base64 content.
async fn host_fragments(ctx: &ModuleContext, src: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let script = format!(
        "s={}\n[ -e \"$s\" ] || exit 3\n[ -d \"$s\" ] || exit 4\n\
         for f in \"$s\"/* \"$s\"/.[!.]* \"$s\"/..?*; do\n  [ -f \"$f\" ] || continue\n  \
         printf '%s' \"${{f##*/}}\" | base64 -w0; printf ' '\n  base64 -w0 < \"$f\" || exit 5\n  echo\ndone\n",
        qpath(src)
    );
    let out = ctx.exec(script, None).await?;
    match out.rc {
        0 => {}
        3 => {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!("Source ({src}) does not exist"),
            ))
        }
        4 => {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!("Source ({src}) is not a directory"),
            ))
        }
        _ => {
            return Err(remote_error(
                &format!("cannot read the fragments in {src}"),
                &out,
            ))
        }
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut frags = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (n, c) = line.split_once(' ').unwrap_or((line, ""));
        let bad = |_| {
            Error::new(
                ErrorKind::Runtime,
                format!("assemble: unreadable listing of {src}"),
            )
        };
        frags.push((b64.decode(n).map_err(bad)?, b64.decode(c).map_err(bad)?));
    }
    frags.sort();
    Ok(frags)
}

/// Reads the regular files of a controller directory (the role's or playbook's `files/`).
fn local_fragments(ctx: &ModuleContext, src: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    use std::os::unix::ffi::OsStrExt;
    let dir = ctx.find_file("files", src)?;
    if !dir.is_dir() {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!("Source ({}) is not a directory", dir.display()),
        ));
    }
    let io = |e: std::io::Error| {
        Error::new(ErrorKind::Io, format!("cannot read {}: {e}", dir.display()))
    };
    let mut frags = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.path().is_file() {
            let content = std::fs::read(entry.path()).map_err(io)?;
            frags.push((entry.file_name().as_bytes().to_vec(), content));
        }
    }
    frags.sort();
    Ok(frags)
}

/// Assembles a file from fragments.
pub struct Assemble;

#[async_trait]
impl PlanApply for Assemble {
    type Work = EditWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<EditWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let frags = if c.remote_src {
            host_fragments(ctx, &c.src).await
        } else {
            local_fragments(ctx, &c.src)
        };
        // A missing or wrong source fails the task with Ansible's message.
        let frags = match frags {
            Ok(f) => f,
            Err(e) if e.message.starts_with("Source (") => {
                return Ok(Plan::Done(ModuleResult::failed(e.message)))
            }
            Err(e) => return Err(e.at_opt(ctx.span.as_ref())),
        };
        let new = assemble(&frags, &c);
        let st = read_for_edit(ctx, &c.dest).await?;
        let (sha1, md5) = (sha1_hex(&new), md5_hex(&new));
        let plan = plan_edit(
            ctx,
            EditFinish {
                path: &c.dest,
                st: &st,
                new,
                attrs: attrs_of(&c.attrs),
                backup: c.backup,
                validate: c.validate,
                msg: "OK".into(),
            },
        )?;
        // From the controller, Ansible's result is copy's (no message).
        let msg = c.remote_src.then(|| "OK".to_string());
        let finish = |r: ModuleResult| {
            ModuleResult {
                msg: msg.clone(),
                ..r
            }
            .with("src", c.src.clone())
            .with("dest", c.dest.clone())
            .with("checksum", sha1.clone())
            .with("md5sum", md5.clone())
        };
        Ok(match plan {
            Plan::Done(r) => {
                let mut r = finish(r);
                add_stat_keys(&mut r, &st);
                Plan::Done(r)
            }
            Plan::Change { result, work } => Plan::Change {
                result: finish(result),
                work,
            },
        })
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: EditWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        let msg = result.msg.clone();
        let dest = result
            .data
            .get("dest")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_string();
        let mut r = apply_edit(ctx, work, result).await?;
        r.msg = msg;
        // Ansible reports the file's attributes after the write.
        let st = remote::stat_paths(
            ctx,
            &[&dest],
            StatOptions {
                follow: true,
                checksum: None,
                content: false,
                max_content: None,
            },
        )
        .await?
        .remove(0);
        add_stat_keys(&mut r, &st);
        Ok(r)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx};
    use super::*;
    use crate::modules::plan::Planned;
    use crate::modules::Module;
    use serde_json::json;

    #[test]
    fn escapes_and_rules() {
        assert_eq!(unescape(r"--\n\t\x41\101\\"), b"--\n\tAA\\".to_vec());
        let c = check(args(json!({"src": "s", "dest": "d", "delimiter": "##"}))).unwrap();
        let f = |n: &str, c: &str| (n.as_bytes().to_vec(), c.as_bytes().to_vec());
        let frags = vec![f("a", "1"), f("b", "2\n"), f("c", "3")];
        assert_eq!(assemble(&frags, &c), b"1\n##\n2\n##\n3".to_vec());
    }

    #[tokio::test]
    async fn from_host_fragments() {
        let dir = tempfile::tempdir().unwrap();
        let frags = dir.path().join("frags");
        std::fs::create_dir(&frags).unwrap();
        std::fs::write(frags.join("10-b"), "b\n").unwrap();
        std::fs::write(frags.join("01-a"), "a").unwrap();
        std::fs::write(frags.join(".hidden"), "h\n").unwrap();
        let dest = dir.path().join("out");
        let c = ctx(dir.path(), json!({}));
        let a = json!({"src": frags, "dest": dest, "ignore_hidden": true, "mode": "0600"});
        let r = Planned(Assemble).run(&c, args(a.clone())).await.unwrap();
        assert!(r.changed && r.msg.as_deref() == Some("OK"), "{:?}", r);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "a\nb\n");
        let r = Planned(Assemble).run(&c, args(a)).await.unwrap();
        assert!(!r.changed);
        let e = Planned(Assemble)
            .run(
                &c,
                args(json!({"src": dir.path().join("nope"), "dest": dest})),
            )
            .await
            .unwrap();
        assert!(e.failed && e.msg.unwrap().contains("does not exist"));
    }
}
