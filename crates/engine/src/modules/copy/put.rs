//! One file put on the host, shared by `copy` and `template`: planned from one stat of
//! the destination (content by checksum, attributes, the diff), applied by one atomic
//! write or one attribute change. [`at_once`] folds both into one round trip for the
//! common case of a small file.

use super::super::remote::{
    self, add_stat_keys, file_diff, qpath, Attrs, Checksum, FileKind, RemoteStat, StatOptions,
    WriteOptions,
};
use super::super::source::Content;
use super::super::{FileDiff, ModuleContext, ModuleResult};
use crate::error::{Error, ErrorKind, Result};

/// One file to put on the host, shared by `copy` and `template`.
#[derive(Clone)]
pub struct PutSpec {
    /// What the file should hold: bytes, or a controller file streamed to the host.
    pub data: Content,
    /// `dest` as given (a trailing `/` means "into this directory").
    pub dest: String,
    /// The source's file name, used when `dest` is a directory.
    pub src_name: Option<String>,
    /// The source shown in the result's `src`.
    pub src_label: Option<String>,
    /// Mode, owner, group wanted.
    pub attrs: Attrs,
    /// Keep a timestamped copy of a replaced file.
    pub backup: bool,
    /// Replace a file whose content differs (`force: no` only creates).
    pub force: bool,
    /// A check command with `%s` run on the new file before it is put in place.
    pub validate: Option<String>,
    /// Mode for directories created on the way.
    pub directory_mode: Option<String>,
    /// A symlink at the destination is written through (else it is replaced by a file).
    pub follow: bool,
}

/// `dir/name`, whatever slashes `dir` ends with.
pub(super) fn join(dir: &str, name: &str) -> String {
    format!("{}/{}", dir.trim_end_matches('/'), name)
}

/// Files up to this size go along with the first look at the destination (see
/// [`at_once`]); bigger ones are only sent when they must be written.
const AT_ONCE_MAX: u64 = 256 * 1024;

/// Whether [`at_once`] may handle `spec` without looking at the host: not with diff,
/// `backup`, `validate`, `force: no`, a directory `dest` or a big file.
pub fn at_once_fits(ctx: &ModuleContext, spec: &PutSpec) -> bool {
    !(ctx.diff
        || !spec.force
        || spec.backup
        || spec.validate.is_some()
        || spec.dest.ends_with('/')
        || spec.data.len() > AT_ONCE_MAX)
}

/// The common case in one round trip, when the change will be made (never in check
/// mode: [`super::super::plan::Planned`] decides): one script stats the destination and,
/// only when its content differs, writes the data (sent on stdin either way: for a small
/// file that costs less than a second round trip). `None` when the full path must
/// decide: see [`at_once_fits`], or a destination that turns out to be a directory or a
/// symlink.
pub async fn at_once(ctx: &ModuleContext, spec: &PutSpec) -> Result<Option<ModuleResult>> {
    if !at_once_fits(ctx, spec) {
        return Ok(None);
    }
    let dest = spec.dest.as_str();
    let opts = StatOptions {
        follow: true,
        checksum: Some(Checksum::Sha256),
        content: false,
        max_content: None,
    };
    // `s` is where the stat function leaves the destination's `sha256sum` output.
    let mut script = String::from("s=\n");
    script.push_str(&remote::stat_script_mixed(&[(dest, true)], opts));
    script.push_str(&format!(
        "d={}\nif [ -L \"$d\" ] || [ -d \"$d\" ]; then echo kk_at_once=defer; exit 0; fi\nif [ -f \"$d\" ] && [ \"${{s%% *}}\" = {} ]; then echo kk_at_once=same; exit 0; fi\n",
        qpath(dest),
        spec.data.sha256()
    ));
    script.push_str(&remote::write_script(
        dest,
        &WriteOptions {
            attrs: spec.attrs.clone(),
            backup: false,
            validate: None,
            make_parents: false,
            directory_mode: None,
            remote_src: None,
        },
        Some(spec.data.len()),
    ));
    let out = ctx.exec_input(script, Some(spec.data.input())).await?;
    let said = |what: &str| {
        out.rc == 0
            && String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.strip_prefix("kk_at_once=") == Some(what))
    };
    if said("defer") {
        return Ok(None);
    }
    let (changed, fin) = if said("same") {
        let tst = remote::parse_stats(&[dest], &out.stdout)?.remove(0);
        if spec.attrs.differ(&tst)? {
            (
                true,
                remote::set_attrs(ctx, dest, &spec.attrs, false).await?,
            )
        } else {
            (false, tst)
        }
    } else {
        (true, remote::write_outcome(dest, &out)?.stat)
    };
    let mut res = ModuleResult::changed(changed);
    finish(&mut res, dest, spec, &fin, None);
    Ok(Some(res))
}

/// What applying a put does: write the file (its content differs) or only set its
/// attributes.
pub struct PutWork {
    /// The host path written.
    pub target: String,
    /// What to write there.
    pub spec: PutSpec,
    /// The content differs: write (else only the attributes).
    pub content_changed: bool,
    /// Create missing parent directories (`dest` ended with `/`).
    pub make_parents: bool,
}

/// Plans putting `spec.data` at `spec.dest` (or inside it when it is a directory) from
/// one stat: the result as reported (in check mode as it is) and, when something
/// differs, the work to apply.
pub async fn plan(ctx: &ModuleContext, spec: PutSpec) -> Result<(ModuleResult, Option<PutWork>)> {
    let opts = StatOptions {
        follow: true,
        checksum: Some(Checksum::Sha256),
        content: ctx.diff,
        max_content: None,
    };
    let (target, tst, make_parents) = if spec.dest.ends_with('/') {
        let name = spec.src_name.clone().ok_or_else(|| {
            Error::new(
                ErrorKind::ModuleArgs,
                format!("can not use content with a dir as dest ({})", spec.dest),
            )
            .help("name the file to write in `dest`")
        })?;
        let target = join(&spec.dest, &name);
        let st = remote::stat_paths(ctx, &[&target], opts).await?.remove(0);
        (target, st, true)
    } else {
        let inner = spec.src_name.as_ref().map(|n| join(&spec.dest, n));
        let mut paths = vec![spec.dest.as_str()];
        if let Some(i) = &inner {
            paths.push(i);
        }
        let mut sts = remote::stat_paths(ctx, &paths, opts).await?;
        if sts[0].kind == FileKind::Dir {
            match inner {
                Some(i) => (i, sts.remove(1), false),
                None => {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        format!(
                            "can not use content with a dir as dest ({} is a directory)",
                            spec.dest
                        ),
                    )
                    .help("name the file to write in `dest`"))
                }
            }
        } else {
            (spec.dest.clone(), sts.remove(0), false)
        }
    };
    // A symlink destination: written through with `follow`, else replaced by a file.
    let (target, tst) = match (&tst.link_source, spec.follow) {
        (Some(real), true) => (
            real.clone(),
            RemoteStat {
                link_source: None,
                ..tst
            },
        ),
        _ => (target, tst),
    };
    let (change, diff) = plan_one(ctx, &target, &tst, &spec)?;
    let mut res = ModuleResult::changed(change.is_some());
    res.diffs.extend(diff);
    finish(&mut res, &target, &spec, &tst, None);
    let work = change.map(|content_changed| PutWork {
        target,
        spec,
        content_changed,
        make_parents,
    });
    Ok((res, work))
}

/// Applies a planned put; the result gets the file's final state.
pub async fn apply(
    ctx: &ModuleContext,
    work: PutWork,
    mut res: ModuleResult,
) -> Result<ModuleResult> {
    let (fin, backup) = apply_one(ctx, &work).await?;
    finish(&mut res, &work.target, &work.spec, &fin, backup);
    Ok(res)
}

/// Decides for one host file in state `tst`: `Some(content_changed)` when something
/// must change (`false`: only the attributes), and the diff of the content.
pub(super) fn plan_one(
    ctx: &ModuleContext,
    target: &str,
    tst: &RemoteStat,
    spec: &PutSpec,
) -> Result<(Option<bool>, Option<FileDiff>)> {
    if tst.kind == FileKind::Dir {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!("cannot write {}: it is a directory", target),
        )
        .at_opt(ctx.span.as_ref()));
    }
    if tst.exists && !spec.force {
        return Ok((None, None));
    }
    let sha = spec.data.sha256();
    let content_changed = !tst.exists
        || tst.checksum.as_deref() != Some(sha.as_str())
        || (tst.link_source.is_some() && !spec.follow);
    let attrs_changed = tst.exists && spec.attrs.differ(tst)?;
    let diff = (ctx.diff && content_changed)
        .then(|| file_diff(target, &tst.text(), &spec.data.diff_text()));
    let change = (content_changed || attrs_changed).then_some(content_changed);
    Ok((change, diff))
}

/// Writes one planned file (or sets its attributes): its final state and the backup.
pub(super) async fn apply_one(
    ctx: &ModuleContext,
    work: &PutWork,
) -> Result<(RemoteStat, Option<String>)> {
    let spec = &work.spec;
    if work.content_changed {
        let w = remote::write_file(
            ctx,
            &work.target,
            spec.data.input(),
            &WriteOptions {
                attrs: spec.attrs.clone(),
                backup: spec.backup,
                validate: spec.validate.clone(),
                make_parents: work.make_parents,
                directory_mode: spec.directory_mode.clone(),
                remote_src: None,
            },
        )
        .await?;
        Ok((w.stat, w.backup_file))
    } else {
        let st = remote::set_attrs(ctx, &work.target, &spec.attrs, false).await?;
        Ok((st, None))
    }
}

/// The result keys of a put: where, the checksums, and the file's state (`fin`: as it
/// is, or after the write); a file still to be created is reported as it would be.
fn finish(
    res: &mut ModuleResult,
    target: &str,
    spec: &PutSpec,
    fin: &RemoteStat,
    backup: Option<String>,
) {
    res.data.insert("dest".into(), target.into());
    if let Some(s) = &spec.src_label {
        res.data.insert("src".into(), s.clone().into());
    }
    res.data.insert("checksum".into(), spec.data.sha1().into());
    res.data.insert("md5sum".into(), spec.data.md5().into());
    // In check mode a file to be created does not exist yet: report what it would be.
    if fin.exists {
        add_stat_keys(res, fin);
    } else {
        res.data.insert("state".into(), "file".into());
        res.data.insert("size".into(), spec.data.len().into());
        if let Some(m) = &spec.attrs.mode {
            res.data.insert("mode".into(), m.clone().into());
        }
    }
    if let Some(b) = backup {
        res.data.insert("backup_file".into(), b.into());
    }
}
