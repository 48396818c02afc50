//! `remote_src: true`: copies a file or directory that is already on the host. One round
//! trip stats source and destination (and compares a source tree with `diff -r`); a
//! second one copies, only when something differs.

use super::super::remote::{
    self, add_stat_keys, base_name, file_diff, qpath, stat_script_mixed, Attrs, Checksum, FileKind,
    StatOptions, WriteOptions,
};
use super::super::{ModuleContext, ModuleResult};
use super::put::{join, PutSpec};
use super::PRESERVE;
use crate::error::{Error, ErrorKind, Result};

/// What applying a host-side copy does.
pub enum RemoteWork {
    /// A tree: `cp -R` of `src` into `root`, then the attributes.
    Tree {
        /// The source directory.
        src: String,
        /// The destination directory.
        root: String,
        /// Attributes for the destination directory.
        attrs: Attrs,
    },
    /// One file: written from `src` (content differs) or only its attributes set.
    File {
        /// The source file.
        src: String,
        /// The host path written.
        target: String,
        /// Attributes wanted.
        attrs: Attrs,
        /// The content differs.
        content_changed: bool,
        /// Create missing parent directories (`dest` ended with `/`).
        make_parents: bool,
        /// `backup`, `validate`, `directory_mode` of the copy.
        spec: Box<PutSpec>,
    },
}

/// Plans copying `src` on the host to `dest`.
pub async fn plan(
    ctx: &ModuleContext,
    src: &str,
    dest: &str,
    spec: &PutSpec,
) -> Result<(ModuleResult, Option<RemoteWork>)> {
    let name = base_name(src);
    let inner = join(dest, &name);
    let opts = StatOptions {
        follow: true,
        checksum: Some(Checksum::Sha256),
        content: ctx.diff,
        max_content: None,
    };
    // A source tree is compared with `diff -r` in the same round trip.
    let root = if src.ends_with('/') {
        dest.trim_end_matches('/').to_string()
    } else {
        inner.clone()
    };
    let paths = [src, dest, inner.as_str()];
    let items: Vec<(&str, bool)> = paths.iter().map(|p| (*p, true)).collect();
    let mut script = stat_script_mixed(&items, opts);
    script.push_str(&format!(
        "s={}\nd={}\nif [ -d \"$s\" ]; then\n  if [ -d \"$d\" ] && diff -rq -- \"$s\" \"$d\" >/dev/null 2>&1; then echo kk_tree=same; else echo kk_tree=differs; fi\nfi\n",
        qpath(src.trim_end_matches('/')),
        qpath(&root),
    ));
    let out = ctx.exec(script, None).await?;
    if out.rc != 0 {
        return Err(remote::remote_error(
            &format!("cannot stat {}", paths.join(", ")),
            &out,
        ));
    }
    let sts = remote::parse_stats(&paths, &out.stdout)?;
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
        let same = String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == "kk_tree=same");
        let res = ModuleResult::changed(!same)
            .with("dest", root.clone())
            .with("src", src)
            .with("state", "directory");
        let work = (!same).then(|| RemoteWork::Tree {
            src: src.trim_end_matches('/').to_string(),
            root,
            attrs,
        });
        return Ok((res, work));
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
    let changed = !skip && (content_changed || attrs_changed);
    let mut res = ModuleResult::changed(changed);
    if ctx.diff && content_changed && !skip {
        res.diffs.push(file_diff(&target, &tst.text(), &sst.text()));
    }
    res.data.insert("dest".into(), target.clone().into());
    res.data.insert("src".into(), src.into());
    add_stat_keys(&mut res, &tst);
    let work = changed.then(|| RemoteWork::File {
        src: src.to_string(),
        target,
        attrs,
        content_changed,
        make_parents,
        spec: Box::new(spec.clone()),
    });
    Ok((res, work))
}

/// Copies on the host what the plan found different.
pub async fn apply(
    ctx: &ModuleContext,
    work: RemoteWork,
    mut res: ModuleResult,
) -> Result<ModuleResult> {
    match work {
        RemoteWork::Tree { src, root, attrs } => {
            let s = format!(
                "s={}\nd={}\nmkdir -p -- \"$d\" && cp -R -- \"$s\"/. \"$d\"/ || exit 71\n{}",
                qpath(&src),
                qpath(&root),
                attrs.script("d", true)
            );
            let out = ctx.exec(s, None).await?;
            if out.rc != 0 {
                return Err(remote::remote_error(
                    &format!("cannot copy {} to {}", src, root),
                    &out,
                ));
            }
            Ok(res)
        }
        RemoteWork::File {
            src,
            target,
            attrs,
            content_changed,
            make_parents,
            spec,
        } => {
            let mut backup = None;
            let fin = if content_changed {
                let w = remote::write_file(
                    ctx,
                    &target,
                    Vec::new(),
                    &WriteOptions {
                        attrs,
                        backup: spec.backup,
                        validate: spec.validate.clone(),
                        make_parents,
                        directory_mode: spec.directory_mode.clone(),
                        remote_src: Some(src),
                    },
                )
                .await?;
                backup = w.backup_file;
                w.stat
            } else {
                remote::set_attrs(ctx, &target, &attrs, false).await?
            };
            add_stat_keys(&mut res, &fin);
            if let Some(b) = backup {
                res.data.insert("backup_file".into(), b.into());
            }
            Ok(res)
        }
    }
}
