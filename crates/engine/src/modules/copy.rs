//! `copy`: puts a controller file, a directory tree or literal `content` on the host,
//! idempotent by checksum. One round trip reads the destination's sha256, mode and
//! owner; a second one writes only when something must change (see [`super::remote`]).

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::remote::{
    self, add_stat_keys, base_name, file_diff, md5_hex, qpath, sha1_hex, sha256_hex, Attrs,
    Checksum, FileKind, RemoteStat, StatOptions, WriteOptions,
};
use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CopyArgs {
    #[serde(default, deserialize_with = "args::opt_string_like")]
    src: Option<String>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    dest: Option<String>,
    #[serde(default, deserialize_with = "args::opt_mode")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    owner: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    group: Option<String>,
    #[serde(default, deserialize_with = "args::bool_like")]
    backup: bool,
    #[serde(default = "args::yes", deserialize_with = "args::bool_like")]
    force: bool,
    #[serde(default, deserialize_with = "args::bool_like")]
    remote_src: bool,
    #[serde(default, deserialize_with = "args::opt_mode")]
    directory_mode: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    validate: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    checksum: Option<String>,
    // Accepted for compatibility; they do not change what we do.
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    follow: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    local_follow: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    decrypt: Option<bool>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    unsafe_writes: Option<bool>,
}

const VALID: &[&str] = &[
    "src",
    "content",
    "dest",
    "mode",
    "owner",
    "group",
    "backup",
    "force",
    "remote_src",
    "directory_mode",
    "validate",
    "checksum",
    "follow",
    "local_follow",
    "decrypt",
    "unsafe_writes",
];

/// Copies files to the host.
pub struct Copy;

#[async_trait]
impl Module for Copy {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: CopyArgs = parse_args("copy", raw, VALID)?;
        let _ = (a.local_follow, a.decrypt, a.unsafe_writes);
        let dest = a.dest.clone().filter(|d| !d.is_empty()).ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "copy: `dest` is required").at_opt(ctx.span.as_ref())
        })?;
        if let Some(v) = &a.validate {
            check_validate(v)?;
        }
        let attrs = Attrs {
            mode: a.mode.clone(),
            owner: a.owner.clone(),
            group: a.group.clone(),
        };
        let spec = |data: Vec<u8>, name: Option<String>, label: Option<String>| PutSpec {
            data,
            dest: dest.clone(),
            src_name: name,
            src_label: label,
            attrs: attrs.clone(),
            backup: a.backup,
            force: a.force,
            validate: a.validate.clone(),
            directory_mode: a.directory_mode.clone(),
            follow: a.follow.unwrap_or(false),
        };
        match (&a.src, &a.content) {
            (Some(_), Some(_)) => Err(Error::new(
                ErrorKind::ModuleArgs,
                "copy: `src` and `content` are mutually exclusive",
            )
            .help("give the file to copy as `src`, or the text to write as `content`, not both")),
            (None, None) => Err(Error::new(
                ErrorKind::ModuleArgs,
                "copy: one of `src` or `content` is required",
            )),
            (None, Some(content)) => {
                let text = match content {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => serde_json::to_string(other).unwrap_or_default(),
                };
                if a.mode.as_deref() == Some(PRESERVE) {
                    return Err(Error::new(
                        ErrorKind::ModuleArgs,
                        "copy: `mode: preserve` needs a `src` file to take the mode from",
                    ));
                }
                let data = text.into_bytes();
                verify_checksum(&a.checksum, &data)?;
                put_file(ctx, spec(data, None, None)).await
            }
            (Some(src), None) if a.remote_src => {
                remote_copy(ctx, src, &dest, &spec(Vec::new(), None, None)).await
            }
            (Some(src), None) => {
                if let Some(pending) = ctx.check_mode_pending_source("copy", src, &dest) {
                    return Ok(pending);
                }
                let path = ctx.find_file("files", src)?;
                if path.is_dir() {
                    let trailing = src.ends_with('/');
                    return copy_dir(
                        ctx,
                        &path,
                        trailing,
                        &spec(Vec::new(), None, Some(src.clone())),
                    )
                    .await;
                }
                let data = std::fs::read(&path).map_err(|e| {
                    Error::new(
                        ErrorKind::Io,
                        format!("copy: cannot read {}: {}", path.display(), e),
                    )
                    .at_opt(ctx.span.as_ref())
                })?;
                verify_checksum(&a.checksum, &data)?;
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                let mut one = spec(data, name, Some(path.display().to_string()));
                preserve_local_mode(&mut one.attrs, &path);
                put_file(ctx, one).await
            }
        }
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

fn verify_checksum(want: &Option<String>, data: &[u8]) -> Result<()> {
    if let Some(w) = want {
        let got = sha1_hex(data);
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

/// One file to put on the host, shared by `copy` and `template`.
pub(crate) struct PutSpec {
    /// The bytes the file should hold.
    pub data: Vec<u8>,
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

fn join(dir: &str, name: &str) -> String {
    format!("{}/{}", dir.trim_end_matches('/'), name)
}

/// Files up to this size go along with the first look at the destination (see
/// [`put_file_at_once`]); bigger ones are only sent when they must be written.
const AT_ONCE_MAX: usize = 256 * 1024;

/// The common case in one round trip: one script stats the destination and, only when
/// its content differs, writes the data (sent on stdin either way: for a small file that
/// costs less than a second round trip). `None` when the full path must decide: check or
/// diff mode, `backup`, `validate`, `force: no`, a directory `dest`, a big file, or a
/// destination that turns out to be a directory or a symlink.
async fn put_file_at_once(ctx: &ModuleContext, spec: &PutSpec) -> Result<Option<ModuleResult>> {
    if ctx.check_mode
        || ctx.diff
        || !spec.force
        || spec.backup
        || spec.validate.is_some()
        || spec.dest.ends_with('/')
        || spec.data.len() > AT_ONCE_MAX
    {
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
        sha256_hex(&spec.data)
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
    ));
    let out = ctx.exec(script, Some(spec.data.clone())).await?;
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

/// Puts `spec.data` at `spec.dest` (or inside it when it is a directory): one round trip
/// when nothing changes, two when it does.
pub(crate) async fn put_file(ctx: &ModuleContext, spec: PutSpec) -> Result<ModuleResult> {
    if let Some(res) = put_file_at_once(ctx, &spec).await? {
        return Ok(res);
    }
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
    let (changed, fin, backup, diff) = sync_one(ctx, &target, &tst, &spec, make_parents).await?;
    let mut res = ModuleResult::changed(changed);
    if let Some(d) = diff {
        res.diffs.push(d);
    }
    finish(&mut res, &target, &spec, &fin, backup);
    Ok(res)
}

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
    res.data
        .insert("checksum".into(), sha1_hex(&spec.data).into());
    res.data.insert("md5sum".into(), md5_hex(&spec.data).into());
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

/// Brings one host file to `spec.data` and `spec.attrs`. Returns (changed, final state,
/// backup file, diff).
async fn sync_one(
    ctx: &ModuleContext,
    target: &str,
    tst: &RemoteStat,
    spec: &PutSpec,
    make_parents: bool,
) -> Result<(bool, RemoteStat, Option<String>, Option<super::FileDiff>)> {
    if tst.kind == FileKind::Dir {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!("cannot write {}: it is a directory", target),
        )
        .at_opt(ctx.span.as_ref()));
    }
    if tst.exists && !spec.force {
        return Ok((false, tst.clone(), None, None));
    }
    let sha = sha256_hex(&spec.data);
    let content_changed = !tst.exists
        || tst.checksum.as_deref() != Some(sha.as_str())
        || (tst.link_source.is_some() && !spec.follow);
    let attrs_changed = tst.exists && spec.attrs.differ(tst)?;
    let diff = (ctx.diff && content_changed)
        .then(|| file_diff(target, &tst.text(), &String::from_utf8_lossy(&spec.data)));
    if ctx.check_mode || !(content_changed || attrs_changed) {
        return Ok((content_changed || attrs_changed, tst.clone(), None, diff));
    }
    if content_changed {
        let w = remote::write_file(
            ctx,
            target,
            spec.data.clone(),
            &WriteOptions {
                attrs: spec.attrs.clone(),
                backup: spec.backup,
                validate: spec.validate.clone(),
                make_parents,
                directory_mode: spec.directory_mode.clone(),
                remote_src: None,
            },
        )
        .await?;
        Ok((true, w.stat, w.backup_file, diff))
    } else {
        let st = remote::set_attrs(ctx, target, &spec.attrs, false).await?;
        Ok((true, st, None, diff))
    }
}

/// A controller directory tree: (path relative to the copied root, is a dir, local path).
fn walk(root: &Path) -> Result<Vec<(String, bool, PathBuf)>> {
    fn rec(root: &Path, dir: &Path, out: &mut Vec<(String, bool, PathBuf)>) -> Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Io,
                    format!("cannot read directory {}: {}", dir.display(), e),
                )
            })?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            let rel = p
                .strip_prefix(root)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            if p.is_dir() {
                out.push((rel, true, p.clone()));
                rec(root, &p, out)?;
            } else {
                out.push((rel, false, p));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    rec(root, root, &mut out)?;
    Ok(out)
}

/// Copies a controller directory: `src/` copies its contents into `dest`, `src` copies
/// the directory itself into `dest`. One round trip stats the whole tree.
async fn copy_dir(
    ctx: &ModuleContext,
    local: &Path,
    trailing: bool,
    spec: &PutSpec,
) -> Result<ModuleResult> {
    let root = if trailing {
        spec.dest.trim_end_matches('/').to_string()
    } else {
        join(
            &spec.dest,
            &local
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
    };
    let root = if root.is_empty() {
        "/".to_string()
    } else {
        root
    };
    let entries = walk(local)?;
    let targets: Vec<String> = entries.iter().map(|(rel, _, _)| join(&root, rel)).collect();
    let mut paths: Vec<&str> = vec![root.as_str()];
    paths.extend(targets.iter().map(String::as_str));
    let opts = StatOptions {
        follow: true,
        checksum: Some(Checksum::Sha256),
        content: ctx.diff,
        max_content: None,
    };
    let sts = remote::stat_paths(ctx, &paths, opts).await?;
    if sts[0].exists && sts[0].kind != FileKind::Dir {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!(
                "cannot copy a directory to {}: it exists and is not a directory",
                root
            ),
        ));
    }
    // Missing directories are made in one script, parents first (the walk is sorted).
    let mut missing: Vec<&str> = Vec::new();
    if !sts[0].exists {
        missing.push(&root);
    }
    for (i, (_, is_dir, _)) in entries.iter().enumerate() {
        let st = &sts[i + 1];
        if *is_dir {
            if !st.exists {
                missing.push(&targets[i]);
            } else if st.kind != FileKind::Dir {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!(
                        "cannot copy a directory to {}: it exists and is not a directory",
                        targets[i]
                    ),
                ));
            }
        }
    }
    let mut changed = !missing.is_empty();
    let mut res = ModuleResult::default();
    if !missing.is_empty() && !ctx.check_mode {
        let dir_attrs = Attrs {
            mode: spec.directory_mode.clone(),
            owner: spec.attrs.owner.clone(),
            group: spec.attrs.group.clone(),
        };
        let mut s = String::new();
        for m in &missing {
            s.push_str(&format!("d={}\nmkdir -p -- \"$d\" || exit 70\n", qpath(m)));
            s.push_str(&dir_attrs.script("d", false));
        }
        let out = ctx.exec(s, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                &format!("cannot create directories under {}", root),
                &out,
            ));
        }
    }
    for (i, (_, is_dir, local_path)) in entries.iter().enumerate() {
        if *is_dir {
            continue;
        }
        let data = std::fs::read(local_path).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("copy: cannot read {}: {}", local_path.display(), e),
            )
        })?;
        let mut attrs = spec.attrs.clone();
        preserve_local_mode(&mut attrs, local_path);
        let one = PutSpec {
            data,
            dest: targets[i].clone(),
            src_name: None,
            src_label: None,
            attrs,
            backup: spec.backup,
            force: spec.force,
            validate: spec.validate.clone(),
            directory_mode: spec.directory_mode.clone(),
            follow: false,
        };
        let (c, _, _, diff) = sync_one(ctx, &targets[i], &sts[i + 1], &one, false).await?;
        changed |= c;
        if let Some(d) = diff {
            res.diffs.push(d);
        }
    }
    res.changed = changed;
    res.data.insert("dest".into(), root.into());
    if let Some(s) = &spec.src_label {
        res.data.insert("src".into(), s.clone().into());
    }
    res.data.insert("state".into(), "directory".into());
    Ok(res)
}

/// `remote_src: true`: copies a file or directory that is already on the host.
async fn remote_copy(
    ctx: &ModuleContext,
    src: &str,
    dest: &str,
    spec: &PutSpec,
) -> Result<ModuleResult> {
    let name = base_name(src);
    let inner = join(dest, &name);
    let opts = StatOptions {
        follow: true,
        checksum: Some(Checksum::Sha256),
        content: ctx.diff,
        max_content: None,
    };
    let sts = remote::stat_paths(ctx, &[src, dest, &inner], opts).await?;
    let (sst, dst, ist) = (&sts[0], &sts[1], &sts[2]);
    if !sst.exists {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!("copy: source {} not found on the host", src),
        )
        .at_opt(ctx.span.as_ref()));
    }
    let mut attrs = spec.attrs.clone();
    if attrs.mode.as_deref() == Some(PRESERVE) {
        attrs.mode = (sst.kind != FileKind::Dir).then(|| sst.mode_str());
    }
    if sst.kind == FileKind::Dir {
        // Whole trees are compared with `diff -r` and copied with `cp -R`.
        let root = if src.ends_with('/') {
            dest.trim_end_matches('/').to_string()
        } else {
            inner.clone()
        };
        let s = format!(
            "s={}\nd={}\nif [ -d \"$d\" ] && diff -rq -- \"$s\" \"$d\" >/dev/null 2>&1; then echo same; exit 0; fi\n{}",
            qpath(src.trim_end_matches('/')),
            qpath(&root),
            if ctx.check_mode {
                "echo would\n".to_string()
            } else {
                format!("mkdir -p -- \"$d\" && cp -R -- \"$s\"/. \"$d\"/ || exit 71\n{}echo copied\n", attrs.script("d", true))
            }
        );
        let out = ctx.exec(s, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                &format!("cannot copy {} to {}", src, root),
                &out,
            ));
        }
        let changed = out.stdout_text().trim() != "same";
        return Ok(ModuleResult::changed(changed)
            .with("dest", root)
            .with("src", src)
            .with("state", "directory"));
    }
    let (target, tst, make_parents) = if dest.ends_with('/') {
        (inner.clone(), ist.clone(), true)
    } else if dst.kind == FileKind::Dir {
        (inner.clone(), ist.clone(), false)
    } else {
        (dest.to_string(), dst.clone(), false)
    };
    if tst.kind == FileKind::Dir {
        return Err(Error::new(
            ErrorKind::Runtime,
            format!("cannot write {}: it is a directory", target),
        ));
    }
    let content_changed = !tst.exists || tst.checksum != sst.checksum;
    let skip = tst.exists && !spec.force;
    let attrs_changed = tst.exists && attrs.differ(&tst)?;
    let mut res = ModuleResult::changed(!skip && (content_changed || attrs_changed));
    if ctx.diff && content_changed && !skip {
        res.diffs.push(file_diff(&target, &tst.text(), &sst.text()));
    }
    let mut fin = tst.clone();
    let mut backup = None;
    if res.changed && !ctx.check_mode {
        if content_changed {
            let w = remote::write_file(
                ctx,
                &target,
                Vec::new(),
                &WriteOptions {
                    attrs: attrs.clone(),
                    backup: spec.backup,
                    validate: spec.validate.clone(),
                    make_parents,
                    directory_mode: spec.directory_mode.clone(),
                    remote_src: Some(src.to_string()),
                },
            )
            .await?;
            fin = w.stat;
            backup = w.backup_file;
        } else {
            fin = remote::set_attrs(ctx, &target, &attrs, false).await?;
        }
    }
    res.data.insert("dest".into(), target.into());
    res.data.insert("src".into(), src.into());
    add_stat_keys(&mut res, &fin);
    if let Some(b) = backup {
        res.data.insert("backup_file".into(), b.into());
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn check_mode_reports_a_controller_file_an_earlier_task_would_make() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.bin");
        let src = dir.path().join("kubekey/etcd.tar.gz");
        let a = || args(json!({"src": src.to_str().unwrap(), "dest": dest.to_str().unwrap()}));
        let mut c = ctx(dir.path(), json!({}));
        c.check_mode = true;
        let r = Copy.run(&c, a()).await.unwrap();
        assert!(r.changed, "{r:?}");
        assert!(r
            .msg
            .as_deref()
            .unwrap_or("")
            .contains("not on the controller yet"));
        assert!(!dest.exists());
        // A real run fails on it; a relative (role) file stays an error in check mode too.
        c.check_mode = false;
        assert!(Copy.run(&c, a()).await.is_err());
        c.check_mode = true;
        let rel = args(json!({"src": "no-such-role-file", "dest": dest.to_str().unwrap()}));
        assert!(Copy.run(&c, rel).await.is_err());
    }

    #[tokio::test]
    async fn content_is_idempotent_with_check_and_diff() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.txt");
        let d = dest.to_str().unwrap();
        let mut c = ctx(dir.path(), json!({}));
        c.check_mode = true;
        c.diff = true;
        let r = Copy
            .run(&c, args(json!({"content": "hi\n", "dest": d, "mode": 420})))
            .await
            .unwrap();
        assert!(r.changed);
        assert!(!dest.exists(), "check mode must not write");
        assert_eq!(r.diffs.len(), 1);
        assert_eq!(r.diffs[0].before, "");
        assert_eq!(r.diffs[0].after, "hi\n");
        c.check_mode = false;
        let r = Copy
            .run(&c, args(json!({"content": "hi\n", "dest": d, "mode": 420})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "hi\n");
        assert_eq!(mode_of(&dest), 0o644);
        assert_eq!(r.data["checksum"], json!(sha1_hex(b"hi\n")));
        assert_eq!(r.data["mode"], json!("0644"));
        assert_eq!(r.data["size"], json!(3));
        let r = Copy
            .run(
                &c,
                args(json!({"content": "hi\n", "dest": d, "mode": "0644"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        assert!(r.diffs.is_empty());
        // Only the mode differs: changed, content untouched.
        let r = Copy
            .run(
                &c,
                args(json!({"content": "hi\n", "dest": d, "mode": "0600"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(mode_of(&dest), 0o600);
        // force: no leaves an existing file alone.
        let r = Copy
            .run(
                &c,
                args(json!({"content": "other", "dest": d, "force": "no"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "hi\n");
        // Diff of a change shows both sides.
        let r = Copy
            .run(
                &c,
                args(json!({"content": "ho\n", "dest": d, "backup": true})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.diffs[0].before, "hi\n");
        assert_eq!(r.diffs[0].after, "ho\n");
        assert!(r.data.contains_key("backup_file"));
    }

    #[tokio::test]
    async fn src_file_into_dir_and_owner() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("files/app.conf"), "x=1\n").unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let c = ctx(dir.path(), json!({}));
        let me = c.exec("id -un", None).await.unwrap().stdout_text();
        let r = Copy
            .run(&c, args(json!({"src": "app.conf", "dest": out.to_str().unwrap(), "owner": me, "mode": "u=rw,go=r"})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(
            std::fs::read_to_string(out.join("app.conf")).unwrap(),
            "x=1\n"
        );
        assert_eq!(mode_of(&out.join("app.conf")), 0o644);
        assert_eq!(r.data["owner"], json!(me));
        let r = Copy
            .run(&c, args(json!({"src": "app.conf", "dest": out.to_str().unwrap(), "owner": me, "mode": "u=rw,go=r"})))
            .await
            .unwrap();
        assert!(!r.changed);
        // Trailing slash: the directory is created.
        let nd = format!("{}/new/", out.display());
        let r = Copy
            .run(&c, args(json!({"src": "app.conf", "dest": nd})))
            .await
            .unwrap();
        assert!(r.changed);
        assert!(out.join("new/app.conf").exists());
    }

    #[tokio::test]
    async fn directory_trailing_slash_rule() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("files/tree/sub")).unwrap();
        std::fs::write(dir.path().join("files/tree/a"), "a").unwrap();
        std::fs::write(dir.path().join("files/tree/sub/b"), "b").unwrap();
        let out = dir.path().join("out");
        let o = out.to_str().unwrap();
        let c = ctx(dir.path(), json!({}));
        let r = Copy
            .run(&c, args(json!({"src": "tree", "dest": o})))
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(
            std::fs::read_to_string(out.join("tree/sub/b")).unwrap(),
            "b"
        );
        let r = Copy
            .run(&c, args(json!({"src": "tree", "dest": o})))
            .await
            .unwrap();
        assert!(!r.changed);
        let r = Copy
            .run(
                &c,
                args(json!({"src": "tree/", "dest": o, "directory_mode": "0750"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_to_string(out.join("a")).unwrap(), "a");
        assert_eq!(mode_of(&out.join("sub")), 0o750);
    }

    #[tokio::test]
    async fn symlink_destination() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "same").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let c = ctx(dir.path(), json!({}));
        let l = link.to_str().unwrap();
        // follow: written through, the link stays.
        let r = Copy
            .run(
                &c,
                args(json!({"content": "new", "dest": l, "follow": true})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.data["dest"], json!(real.to_str().unwrap()));
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // Without follow (Ansible's default) the link becomes a file, even with equal content.
        let r = Copy
            .run(&c, args(json!({"content": "new", "dest": l})))
            .await
            .unwrap();
        assert!(r.changed);
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_file());
        assert!(
            !Copy
                .run(&c, args(json!({"content": "new", "dest": l})))
                .await
                .unwrap()
                .changed
        );
    }

    #[tokio::test]
    async fn remote_src_copies_on_host() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.txt");
        std::fs::write(&s, "remote\n").unwrap();
        let d = dir.path().join("d.txt");
        let c = ctx(dir.path(), json!({}));
        let a =
            json!({"src": s.to_str().unwrap(), "dest": d.to_str().unwrap(), "remote_src": true});
        assert!(Copy.run(&c, args(a.clone())).await.unwrap().changed);
        assert_eq!(std::fs::read_to_string(&d).unwrap(), "remote\n");
        assert!(!Copy.run(&c, args(a)).await.unwrap().changed);
        // mode: preserve takes the source's mode.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o751)).unwrap();
        let p = dir.path().join("p.txt");
        let a = json!({"src": s.to_str().unwrap(), "dest": p.to_str().unwrap(), "remote_src": true, "mode": "preserve"});
        assert!(Copy.run(&c, args(a)).await.unwrap().changed);
        assert_eq!(mode_of(&p), 0o751);
        let a = json!({"src": s.to_str().unwrap(), "dest": dir.path().join("q").to_str().unwrap(), "mode": "preserve"});
        assert!(Copy.run(&c, args(a)).await.unwrap().changed);
        assert_eq!(mode_of(&dir.path().join("q")), 0o751);
    }

    #[tokio::test]
    async fn errors_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), json!({}));
        let e = Copy
            .run(
                &c,
                args(json!({"content": "x", "dest": "/tmp/x", "bogus": 1})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("bogus"), "{e:?}");
        assert!(e.help.unwrap().contains("directory_mode"));
        let e = Copy
            .run(&c, args(json!({"src": "nope.txt", "dest": "/tmp/x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("nope.txt"), "{e:?}");
        let e = Copy
            .run(&c, args(json!({"content": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("dest"), "{e:?}");
        let missing = dir.path().join("no/such/dir/f");
        let e = Copy
            .run(
                &c,
                args(json!({"content": "x", "dest": missing.to_str().unwrap()})),
            )
            .await
            .unwrap_err();
        assert!(
            e.notes.iter().any(|n| n.contains("does not exist")),
            "{e:?}"
        );
    }
}
