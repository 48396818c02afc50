//! `fetch`: copies a file from the host to the controller. One round trip returns the
//! file's sha1 and, for files up to 1 MiB, its content; bigger files that differ from the
//! local copy are read in a second one.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{Flag, Text};
use super::plan::{Plan, PlanApply, Planned};
use super::remote::{self, base_name, md5_hex, qpath, sha1_hex, Checksum, FileKind, StatOptions};
use super::{parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

/// Files up to this size come back with the stat.
const INLINE_LIMIT: u64 = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    flat: Flag,
    #[serde(default = "Flag::on")]
    fail_on_missing: Flag,
    #[serde(default = "Flag::on", alias = "validate_md5")]
    validate_checksum: Flag,
}

const VALID: &[&str] = &[
    "src",
    "dest",
    "flat",
    "fail_on_missing",
    "validate_checksum",
];

/// Parses and checks the arguments without touching a host (also at load time):
/// (src, dest, the arguments).
fn parse(raw: VarMap) -> Result<(String, String, FetchArgs)> {
    let a: FetchArgs = parse_args("fetch", raw, VALID)?;
    match (&a.src, &a.dest) {
        (Some(s), Some(d)) if !s.0.is_empty() && !d.0.is_empty() => {
            Ok((s.0.clone(), d.0.clone(), a))
        }
        _ => Err(Error::new(
            ErrorKind::ModuleArgs,
            "fetch: `src` and `dest` are required",
        )),
    }
}

/// What applying a fetch does: bring the file (already read, or to read) to `target`.
pub struct FetchWork {
    src: String,
    target: PathBuf,
    /// The content, when it came with the stat.
    content: Option<Vec<u8>>,
    remote_sum: String,
    validate_checksum: bool,
}

/// Fetches a host file to the controller. As Ansible's fetch action, it does not run in
/// check mode at all (skipped, "check mode not (yet) supported for this module"); outside
/// it, [`FetchFile`] plans and applies.
pub struct Fetch;

/// The fetch itself, in plan (stat and compare) and apply (read and write locally).
pub struct FetchFile;

#[async_trait]
impl Module for Fetch {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        if ctx.check_mode {
            parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
            return Ok(ModuleResult {
                skipped: true,
                msg: Some("check mode not (yet) supported for this module".into()),
                ..Default::default()
            });
        }
        Planned(FetchFile).run(ctx, raw).await
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        PlanApply::validate(&FetchFile, raw)
    }
}

/// Where a fetched file goes: `<dest>/<host>/<src>` unless `flat`; `flat` with a
/// trailing `/` puts the file in that directory. Relative `dest` is taken from `base`.
fn local_dest(dest: &str, src: &str, host: &str, flat: bool, base: Option<&Path>) -> PathBuf {
    let raw = if flat {
        if dest.ends_with('/') {
            format!("{}{}", dest, base_name(src))
        } else {
            dest.to_string()
        }
    } else {
        format!(
            "{}/{}/{}",
            dest.trim_end_matches('/'),
            host,
            src.trim_start_matches('/')
        )
    };
    let p = PathBuf::from(raw);
    let p = match base {
        Some(b) if p.is_relative() => b.join(p),
        _ => p,
    };
    normalize(&p)
}

/// Removes `.` and `..` components without touching the filesystem (`os.path.normpath`).
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[async_trait]
impl PlanApply for FetchFile {
    type Work = FetchWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<FetchWork>> {
        let (src, dest, a) = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let opts = StatOptions {
            follow: true,
            checksum: Some(Checksum::Sha1),
            content: true,
            max_content: Some(INLINE_LIMIT),
        };
        let st = remote::stat_paths(ctx, &[&src], opts).await?.remove(0);
        let target = local_dest(
            &dest,
            &src,
            &ctx.host,
            a.flat.0,
            ctx.search_dirs.last().map(PathBuf::as_path),
        );
        let target_s = target.display().to_string();
        // Ansible's texts; a missing file or a directory fails the task unless
        // `fail_on_missing: false`.
        if !st.exists {
            let msg = "the remote file does not exist, not transferring, ignored";
            let mut r = ModuleResult::ok().msg(msg).with("file", src.clone());
            r.failed = a.fail_on_missing.0;
            return Ok(Plan::Done(r));
        }
        if st.kind == FileKind::Dir {
            let msg = "remote file is a directory, fetch cannot work on directories";
            if a.fail_on_missing.0 {
                return Ok(Plan::Done(ModuleResult::failed(msg)));
            }
            return Ok(Plan::Done(
                ModuleResult::ok().msg(format!("{}, not transferring, ignored", msg)),
            ));
        }
        let remote_sum = st.checksum.clone().ok_or_else(|| {
            Error::new(ErrorKind::Runtime, format!("fetch: cannot read {} on the host", src))
                .help("is it readable by the connecting user? use `become: true` for files only root can read")
        })?;
        let local_sum = std::fs::read(&target).ok().map(|d| sha1_hex(&d));
        let res = ModuleResult::default()
            .with("dest", target_s)
            .with("remote_checksum", remote_sum.clone())
            .with("checksum", remote_sum.clone())
            .with("file", src.clone());
        if local_sum.as_deref() == Some(remote_sum.as_str()) {
            return Ok(Plan::Done(res));
        }
        let work = FetchWork {
            src,
            target,
            content: st.content,
            remote_sum,
            validate_checksum: a.validate_checksum.0,
        };
        Ok(Plan::change(res, work))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: FetchWork,
        mut res: ModuleResult,
    ) -> Result<ModuleResult> {
        let FetchWork {
            src,
            target,
            content,
            remote_sum,
            validate_checksum,
        } = work;
        let data = match content {
            Some(d) => d,
            None => {
                let out = ctx.exec(format!("cat -- {}", qpath(&src)), None).await?;
                if out.rc != 0 {
                    return Err(remote::remote_error(
                        &format!("fetch: cannot read {}", src),
                        &out,
                    ));
                }
                out.stdout
            }
        };
        let got = sha1_hex(&data);
        if validate_checksum && got != remote_sum {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "fetch: checksum mismatch for {}: the host said {}, received {}",
                    src, remote_sum, got
                ),
            )
            .help(
                "the file changed while it was read; run again, or set `validate_checksum: false`",
            ));
        }
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("fetch: cannot create {}: {}", dir.display(), e),
                )
            })?;
        }
        // Readers never see half a file.
        crate::files::write_atomic(&target, &data, None, false).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("fetch: cannot write {}: {}", target.display(), e),
            )
        })?;
        res.data.insert("checksum".into(), got.into());
        res.data.insert("md5sum".into(), md5_hex(&data).into());
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
    fn destinations() {
        let b = Path::new("/play");
        assert_eq!(
            local_dest("out", "/etc/hosts", "n1", false, Some(b)),
            PathBuf::from("/play/out/n1/etc/hosts")
        );
        assert_eq!(
            local_dest("/o/", "/etc/hosts", "n1", true, Some(b)),
            PathBuf::from("/o/hosts")
        );
        assert_eq!(
            local_dest("/o/h.txt", "/etc/hosts", "n1", true, None),
            PathBuf::from("/o/h.txt")
        );
    }

    #[tokio::test]
    async fn fetches_once() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("remote.txt");
        std::fs::write(&src, "payload").unwrap();
        let mut c = ctx(dir.path(), json!({}));
        let a = json!({"src": src.to_str().unwrap(), "dest": "fetched"});
        c.check_mode = true;
        // As Ansible's fetch action: not run in check mode.
        let r = Fetch.run(&c, args(a.clone())).await.unwrap();
        assert!(r.skipped && !r.changed, "{r:?}");
        assert!(!dir.path().join("fetched").exists());
        c.check_mode = false;
        let r = Fetch.run(&c, args(a.clone())).await.unwrap();
        assert!(r.changed);
        let want = dir
            .path()
            .join("fetched/testhost")
            .join(src.strip_prefix("/").unwrap());
        assert_eq!(std::fs::read_to_string(&want).unwrap(), "payload");
        assert_eq!(r.data["dest"], json!(want.to_str().unwrap()));
        assert_eq!(r.data["checksum"], json!(sha1_hex(b"payload")));
        assert!(!Fetch.run(&c, args(a)).await.unwrap().changed);
        // flat into a directory
        let flat = format!("{}/flat/", dir.path().display());
        assert!(
            Fetch
                .run(
                    &c,
                    args(json!({"src": src.to_str().unwrap(), "dest": flat, "flat": true}))
                )
                .await
                .unwrap()
                .changed
        );
        assert!(dir.path().join("flat/remote.txt").exists());
        // A big file comes in a second read.
        let big = dir.path().join("big.bin");
        let data: Vec<u8> = (0..(INLINE_LIMIT as usize + 4096))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(&big, &data).unwrap();
        let out = format!("{}/bigout", dir.path().display());
        let r = Fetch
            .run(
                &c,
                args(json!({"src": big.to_str().unwrap(), "dest": out, "flat": true})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read(dir.path().join("bigout")).unwrap(), data);
        let e = Fetch
            .run(&c, args(json!({"src": "a", "dest": "b", "flatt": true})))
            .await
            .unwrap_err();
        assert!(e.message.contains("flatt"));
        // missing
        let r = Fetch
            .run(&c, args(json!({"src": "/nonexistent/kk", "dest": "x"})))
            .await
            .unwrap();
        assert!(r.failed);
        assert_eq!(
            r.msg.as_deref(),
            Some("the remote file does not exist, not transferring, ignored")
        );
        let r = Fetch
            .run(&c, args(json!({"src": "/", "dest": "x"})))
            .await
            .unwrap();
        assert!(r.failed && r.msg.unwrap().contains("is a directory"));
        let r = Fetch
            .run(
                &c,
                args(json!({"src": "/nonexistent/kk", "dest": "x", "fail_on_missing": false})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
    }

    #[test]
    fn validate_checks_literal_arguments() {
        let check = |v: serde_json::Value| Fetch.validate(&args(v));
        assert!(check(json!({"src": "/s", "dest": "d", "flat": "yes"})).is_ok());
        assert!(check(json!({"src": "/s"}))
            .unwrap_err()
            .message
            .contains("required"));
        let e = check(json!({"src": "/s", "dest": "d", "flat": "flat"})).unwrap_err();
        assert!(
            e.message.starts_with("fetch:") && e.message.contains("expected a boolean"),
            "{e:?}"
        );
    }
}
