//! A text edit's plan and apply, shared by `lineinfile` and `blockinfile`: the file is
//! read with its stat (one round trip), edited on the controller, and the plan says
//! whether the content or the attributes would change; apply writes the new content
//! (or only sets the attributes).

use super::super::args::FileAttrs;
use super::super::plan::Plan;
use super::super::remote::{
    self, file_diff, Attrs, FileKind, RemoteStat, StatOptions, WriteOptions,
};
use super::super::{ModuleContext, ModuleResult};
use crate::error::{Error, ErrorKind, Result};

/// The attributes `remote` applies, from the shared argument group.
pub(crate) fn attrs_of(a: &FileAttrs) -> Attrs {
    Attrs {
        mode: a.mode.as_ref().map(|m| m.as_str().to_string()),
        owner: a.owner.as_ref().map(|o| o.as_str().to_string()),
        group: a.group.as_ref().map(|g| g.as_str().to_string()),
    }
}

/// Reads a file for editing (stat + content, one round trip); directories and unreadable
/// files are errors.
pub(crate) async fn read_for_edit(ctx: &ModuleContext, path: &str) -> Result<RemoteStat> {
    let st = remote::stat_paths(
        ctx,
        &[path],
        StatOptions {
            follow: true,
            checksum: None,
            content: true,
            max_content: None,
        },
    )
    .await?
    .remove(0);
    if st.exists && st.kind == FileKind::Dir {
        return Err(
            Error::new(ErrorKind::Runtime, format!("path {} is a directory", path))
                .at_opt(ctx.span.as_ref()),
        );
    }
    if st.exists && st.content.is_none() {
        return Err(Error::new(ErrorKind::Runtime, format!("cannot read {} on the host", path))
            .help("is it readable by the connecting user? use `become: true` for files only root can read")
            .at_opt(ctx.span.as_ref()));
    }
    Ok(st)
}

/// A text edit to plan.
pub(crate) struct EditFinish<'a> {
    /// The file as the user named it.
    pub path: &'a str,
    /// Its state and content before the edit.
    pub st: &'a RemoteStat,
    /// The edited content.
    pub new: Vec<u8>,
    /// Mode, owner, group wanted.
    pub attrs: Attrs,
    /// Keep a timestamped copy of the old file.
    pub backup: bool,
    /// A check command with `%s` run on the new file before it is put in place.
    pub validate: Option<String>,
    /// Ansible's message for the edit ("line added", "" when nothing changed).
    pub msg: String,
}

/// What applying a planned edit does.
pub struct EditWork {
    /// The file as the user named it.
    path: String,
    /// Where the content goes: the file, or the one its symlink points to.
    target: String,
    /// The new content; `None` when only the attributes change.
    content: Option<Vec<u8>>,
    /// The file does not exist yet: its parents are made, and the attributes it is
    /// created with are reported (as Ansible does outside check mode).
    creates: bool,
    attrs: Attrs,
    backup: bool,
    validate: Option<String>,
}

const ATTRS_CHANGED: &str = "ownership, perms or SE linux context changed";

fn with_attrs_note(msg: &str) -> String {
    if msg.is_empty() {
        ATTRS_CHANGED.to_string()
    } else {
        format!("{} and {}", msg, ATTRS_CHANGED)
    }
}

/// Whether a file Ansible just created (mode 0644 under the usual umask) needs a
/// `chmod` to reach the requested mode.
fn new_file_mode_differs(attrs: &Attrs) -> Result<bool> {
    const CREATED: u32 = 0o644;
    Ok(match &attrs.mode {
        Some(m) => remote::apply_mode(CREATED, m, false)? != CREATED,
        None => false,
    })
}

/// The `diff` lineinfile and blockinfile always return in Ansible: the content (its
/// before and after only under `--diff` or `diff: true`, else empty), then the file
/// attributes' headers.
fn ansible_diff(ctx: &ModuleContext, path: &str, old: &[u8], new: &[u8]) -> serde_json::Value {
    let (before, after) = if ctx.diff {
        (
            String::from_utf8_lossy(old).into_owned(),
            String::from_utf8_lossy(new).into_owned(),
        )
    } else {
        (String::new(), String::new())
    };
    serde_json::json!([
        {
            "before": before,
            "after": after,
            "before_header": format!("{} (content)", path),
            "after_header": format!("{} (content)", path),
        },
        {
            "before_header": format!("{} (file attributes)", path),
            "after_header": format!("{} (file attributes)", path),
        },
    ])
}

/// Decides what an edit changes: the content when it differs (a missing file only
/// when the edit produced something to say), the attributes when they differ; with
/// the diff under `--diff` and Ansible's message.
pub(crate) fn plan_edit(ctx: &ModuleContext, f: EditFinish<'_>) -> Result<Plan<EditWork>> {
    let old = f.st.content.clone().unwrap_or_default();
    let content_changed = (!f.st.exists || old != f.new) && (f.st.exists || !f.msg.is_empty());
    // A file about to be created gets its attributes when apply creates it (and the
    // message says so then); check mode, like Ansible, says nothing of them.
    let attrs_changed = f.st.exists && f.attrs.differ(f.st)?;
    let msg = if attrs_changed {
        with_attrs_note(&f.msg)
    } else {
        f.msg.clone()
    };
    let mut res = ModuleResult::changed(false).msg(msg);
    res.data
        .insert("diff".into(), ansible_diff(ctx, f.path, &old, &f.new));
    if !content_changed && !attrs_changed {
        return Ok(Plan::Done(res));
    }
    if ctx.diff && content_changed {
        res.diffs.push(file_diff(
            f.path,
            &String::from_utf8_lossy(&old),
            &String::from_utf8_lossy(&f.new),
        ));
    }
    // Like Ansible, an edit of a symlink writes the file it points to.
    let target =
        f.st.link_source
            .clone()
            .unwrap_or_else(|| f.path.to_string());
    let work = EditWork {
        path: f.path.to_string(),
        target,
        content: content_changed.then_some(f.new),
        creates: !f.st.exists,
        attrs: f.attrs,
        backup: f.backup,
        validate: f.validate,
    };
    Ok(Plan::change(res, work))
}

/// Writes the planned content (or sets the attributes when only they differ).
pub(crate) async fn apply_edit(
    ctx: &ModuleContext,
    w: EditWork,
    mut res: ModuleResult,
) -> Result<ModuleResult> {
    let Some(content) = w.content else {
        remote::set_attrs(ctx, &w.path, &w.attrs, false).await?;
        return Ok(res);
    };
    // Ansible creates the file as 0666 minus the umask (022 assumed here), then reports
    // the mode change when `mode` asks for another.
    if w.creates && new_file_mode_differs(&w.attrs)? {
        res.msg = Some(with_attrs_note(res.msg.as_deref().unwrap_or_default()));
    }
    let written = remote::write_file(
        ctx,
        &w.target,
        content,
        &WriteOptions {
            attrs: w.attrs,
            backup: w.backup,
            validate: w.validate,
            make_parents: w.creates,
            directory_mode: None,
            remote_src: None,
        },
    )
    .await?;
    if let Some(b) = written.backup_file {
        res.data.insert("backup".into(), b.clone().into());
        res.data.insert("backup_file".into(), b.into());
    }
    Ok(res)
}
