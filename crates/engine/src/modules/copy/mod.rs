//! `copy`: puts a controller file, a directory tree or literal `content` on the host,
//! idempotent by checksum. Planning reads the destination's sha256, mode and owner in
//! one round trip; applying writes, only when something must change (see
//! [`super::remote`]). A small file is looked at and written in one round trip
//! ([`put::at_once`]).
//!
//! Split by what is copied: [`put`] one file (shared with `template`), [`dir`] a
//! controller tree, [`remote_src`] what is already on the host.

use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::args::{parse_with_file_attrs, Flag, Mode, Text};
use super::plan::{Plan, PlanApply};
use super::remote::Attrs;
use super::source::Content;
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

mod dir;
pub(crate) mod put;
mod remote_src;
#[cfg(test)]
mod tests;

pub use put::PutSpec;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CopyArgs {
    #[serde(default)]
    src: Option<Text>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    dest: Option<Text>,
    #[serde(default)]
    backup: Flag,
    #[serde(default = "Flag::on")]
    force: Flag,
    #[serde(default)]
    remote_src: Flag,
    #[serde(default)]
    directory_mode: Option<Mode>,
    #[serde(default)]
    validate: Option<Text>,
    #[serde(default)]
    checksum: Option<Text>,
    #[serde(default)]
    follow: Flag,
    // Accepted for compatibility; they do not change what we do.
    #[serde(default)]
    local_follow: Option<Flag>,
    #[serde(default)]
    decrypt: Option<Flag>,
}

const VALID: &[&str] = &[
    "src",
    "content",
    "dest",
    "backup",
    "force",
    "remote_src",
    "directory_mode",
    "validate",
    "checksum",
    "follow",
    "local_follow",
    "decrypt",
];

/// What is copied, decided from the arguments alone.
enum Source {
    /// Literal text.
    Content(Vec<u8>),
    /// A path on the host (`remote_src`).
    Remote(String),
    /// A controller file or tree (`src`).
    Local(String),
}

/// Checked arguments: what to copy and how to put it.
struct Parsed {
    source: Source,
    /// `dest` and the put options; `data`, `src_name`, `src_label` are filled per source.
    spec: PutSpec,
    checksum: Option<String>,
}

/// Parses and checks the arguments without touching a host (also at load time).
fn parse(raw: VarMap) -> Result<Parsed> {
    let (a, fa): (CopyArgs, _) = parse_with_file_attrs("copy", raw, VALID)?;
    let _ = (a.local_follow, a.decrypt);
    let dest = a
        .dest
        .map(|d| d.0)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "copy: `dest` is required"))?;
    let validate = a.validate.map(|v| v.0);
    if let Some(v) = &validate {
        check_validate(v)?;
    }
    let attrs = Attrs::from(&fa);
    attrs.check("copy")?;
    let source = match (a.src, a.content) {
        (Some(_), Some(_)) => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "copy: `src` and `content` are mutually exclusive",
            )
            .help("give the file to copy as `src`, or the text to write as `content`, not both"))
        }
        (None, None) => {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "copy: one of `src` or `content` is required",
            ))
        }
        (None, Some(content)) => {
            if attrs.mode.as_deref() == Some(PRESERVE) {
                return Err(Error::new(
                    ErrorKind::ModuleArgs,
                    "copy: `mode: preserve` needs a `src` file to take the mode from",
                ));
            }
            let text = match content {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => serde_json::to_string(&other).unwrap_or_default(),
            };
            Source::Content(text.into_bytes())
        }
        (Some(src), None) if a.remote_src.0 => Source::Remote(src.0),
        (Some(src), None) => Source::Local(src.0),
    };
    Ok(Parsed {
        source,
        spec: PutSpec {
            data: Content::default(),
            dest,
            src_name: None,
            src_label: None,
            attrs,
            backup: a.backup.0,
            force: a.force.0,
            validate,
            directory_mode: a.directory_mode.map(|m| m.0),
            follow: a.follow.0,
        },
        checksum: a.checksum.map(|c| c.0),
    })
}

/// The one file to put for `content` or a controller file `src`; `None` for a tree or
/// a host source, which are planned as a whole.
async fn one_file(ctx: &ModuleContext, p: &Parsed) -> Result<Option<PutSpec>> {
    match &p.source {
        Source::Content(data) => {
            let data = Content::from(data.clone());
            verify_checksum(&p.checksum, &data)?;
            Ok(Some(PutSpec {
                data,
                ..p.spec.clone()
            }))
        }
        Source::Remote(_) => Ok(None),
        Source::Local(src) => {
            let path = ctx.find_file("files", src)?;
            if path.is_dir() {
                return Ok(None);
            }
            // Streamed to the host; a vaulted src is copied as its plaintext (Ansible's
            // `decrypt: true` default).
            let data = Content::of_file(&path).await.map_err(|mut e| {
                if e.kind == ErrorKind::Io {
                    e.message = format!("copy: {}", e.message);
                }
                e.at_opt(ctx.span.as_ref())
            })?;
            verify_checksum(&p.checksum, &data)?;
            let mut one = PutSpec {
                data,
                src_name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                src_label: Some(path.display().to_string()),
                ..p.spec.clone()
            };
            preserve_local_mode(&mut one.attrs, &path);
            Ok(Some(one))
        }
    }
}

/// Copies files to the host.
pub struct Copy;

/// What applying a copy does.
pub enum CopyWork {
    /// One file.
    File(put::PutWork),
    /// A controller tree.
    Dir(dir::DirWork),
    /// A copy on the host.
    Remote(remote_src::RemoteWork),
}

/// A plan from a (result, work) pair of one of the copy kinds.
fn to_plan<W>(planned: (ModuleResult, Option<W>), wrap: fn(W) -> CopyWork) -> Plan<CopyWork> {
    match planned {
        (result, Some(work)) => Plan::change(result, wrap(work)),
        (result, None) => Plan::Done(result),
    }
}

#[async_trait]
impl PlanApply for Copy {
    type Work = CopyWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<CopyWork>> {
        let p = parse(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let dest = p.spec.dest.clone();
        if let Source::Local(src) = &p.source {
            if let Some(pending) = ctx.check_mode_pending_source("copy", src, &dest) {
                return Ok(Plan::Done(pending));
            }
        }
        if let Some(one) = one_file(ctx, &p).await? {
            return Ok(to_plan(put::plan(ctx, one).await?, CopyWork::File));
        }
        match &p.source {
            Source::Remote(src) => Ok(to_plan(
                remote_src::plan(ctx, src, &dest, &p.spec).await?,
                CopyWork::Remote,
            )),
            Source::Local(src) => {
                let path = ctx.find_file("files", src)?;
                let spec = PutSpec {
                    src_label: Some(src.clone()),
                    ..p.spec.clone()
                };
                let planned = dir::plan(ctx, &path, src.ends_with('/'), &spec).await?;
                Ok(to_plan(planned, CopyWork::Dir))
            }
            Source::Content(_) => unreachable!("content is one file"),
        }
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: CopyWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        match work {
            CopyWork::File(w) => put::apply(ctx, w, result).await,
            CopyWork::Dir(w) => dir::apply(ctx, w, result).await,
            CopyWork::Remote(w) => remote_src::apply(ctx, w, result).await,
        }
    }

    async fn at_once(&self, ctx: &ModuleContext, raw: &VarMap) -> Result<Option<ModuleResult>> {
        let p = parse(raw.clone()).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        // Decided before reading the file, so a file taking the long way is read once here
        // only when it might go at once.
        if !put::at_once_fits(ctx, &p.spec) || matches!(p.source, Source::Remote(_)) {
            return Ok(None);
        }
        match one_file(ctx, &p).await? {
            Some(one) => put::at_once(ctx, &one).await,
            None => Ok(None),
        }
    }

    fn validate(&self, raw: &VarMap) -> Result<()> {
        parse(raw.clone()).map(|_| ())
    }
}

/// `mode: preserve`: the destination gets the source file's mode.
pub(crate) const PRESERVE: &str = "preserve";

/// Replaces `mode: preserve` by the mode of the controller file `path`.
pub(crate) fn preserve_local_mode(attrs: &mut Attrs, path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if attrs.mode.as_deref() == Some(PRESERVE) {
        attrs.mode = std::fs::metadata(path)
            .ok()
            .map(|m| format!("{:04o}", m.permissions().mode() & 0o7777));
    }
}

/// `validate` must name the file to check with `%s`, as Ansible insists.
pub(crate) fn check_validate(v: &str) -> Result<()> {
    if !v.contains("%s") {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            format!("validate must contain %s: {:?}", v),
        )
        .help("write the command with %s where the file to check goes, e.g. `visudo -cf %s`"));
    }
    Ok(())
}

fn verify_checksum(want: &Option<String>, data: &Content) -> Result<()> {
    if let Some(w) = want {
        let got = data.sha1();
        if !w.eq_ignore_ascii_case(&got) {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!(
                    "copy: the source's sha1 checksum is {}, but `checksum` says {}",
                    got, w
                ),
            ));
        }
    }
    Ok(())
}
