//! A controller directory tree copied to the host: one round trip stats the whole tree;
//! applying makes the missing directories in one script, then writes each file that
//! differs.

use std::path::{Path, PathBuf};

use super::super::remote::{self, qpath, Attrs, Checksum, FileKind, StatOptions};
use super::super::source::Content;
use super::super::{ModuleContext, ModuleResult};
use super::preserve_local_mode;
use super::put::{apply_one, join, plan_one, PutSpec, PutWork};
use crate::error::{Error, ErrorKind, Result};

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

/// What applying a directory copy does.
pub struct DirWork {
    /// The copied root, for errors.
    root: String,
    /// The script making the missing directories (parents first), empty when none.
    mkdirs: String,
    /// The files to write or whose attributes to set.
    files: Vec<PutWork>,
}

/// Plans copying a controller directory: `src/` copies its contents into `dest`, `src`
/// copies the directory itself into `dest`. One round trip stats the whole tree.
pub async fn plan(
    ctx: &ModuleContext,
    local: &Path,
    trailing: bool,
    spec: &PutSpec,
) -> Result<(ModuleResult, Option<DirWork>)> {
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
    let not_a_dir = |p: &str| {
        Error::new(
            ErrorKind::Runtime,
            format!(
                "cannot copy a directory to {}: it exists and is not a directory",
                p
            ),
        )
    };
    if sts[0].exists && sts[0].kind != FileKind::Dir {
        return Err(not_a_dir(&root));
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
                return Err(not_a_dir(&targets[i]));
            }
        }
    }
    let mut mkdirs = String::new();
    if !missing.is_empty() {
        let dir_attrs = Attrs {
            mode: spec.directory_mode.clone(),
            owner: spec.attrs.owner.clone(),
            group: spec.attrs.group.clone(),
        };
        for m in &missing {
            mkdirs.push_str(&format!("d={}\nmkdir -p -- \"$d\" || exit 70\n", qpath(m)));
            mkdirs.push_str(&dir_attrs.script("d", false));
        }
    }
    let mut res = ModuleResult::default();
    let mut files = Vec::new();
    for (i, (_, is_dir, local_path)) in entries.iter().enumerate() {
        if *is_dir {
            continue;
        }
        let data = Content::of_file(local_path).await?;
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
        let (change, diff) = plan_one(ctx, &targets[i], &sts[i + 1], &one)?;
        res.diffs.extend(diff);
        if let Some(content_changed) = change {
            files.push(PutWork {
                target: targets[i].clone(),
                spec: one,
                content_changed,
                make_parents: false,
            });
        }
    }
    res.changed = !mkdirs.is_empty() || !files.is_empty();
    res.data.insert("dest".into(), root.clone().into());
    if let Some(s) = &spec.src_label {
        res.data.insert("src".into(), s.clone().into());
    }
    res.data.insert("state".into(), "directory".into());
    let work = res.changed.then_some(DirWork {
        root,
        mkdirs,
        files,
    });
    Ok((res, work))
}

/// Makes the missing directories, then writes the files that differ.
pub async fn apply(ctx: &ModuleContext, work: DirWork, res: ModuleResult) -> Result<ModuleResult> {
    if !work.mkdirs.is_empty() {
        let out = ctx.exec(work.mkdirs, None).await?;
        if out.rc != 0 {
            return Err(remote::remote_error(
                &format!("cannot create directories under {}", work.root),
                &out,
            ));
        }
    }
    for one in &work.files {
        apply_one(ctx, one).await?;
    }
    Ok(res)
}
