//! `blockinfile`: a block of lines between marker lines, inserted, replaced or removed.
//! Same shape as `lineinfile`: read with the stat, edit on the controller with
//! Ansible's rules (ported from `blockinfile.py`), write back only when changed.

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, Text};
use super::copy::check_validate;
use super::lineinfile::{
    apply_edit, attrs_of, compile, plan_edit, read_for_edit, split_lines, EditFinish, EditWork,
    State,
};
use super::plan::{Plan, PlanApply};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockArgs {
    #[serde(default, alias = "dest", alias = "destfile", alias = "name")]
    path: Option<Text>,
    #[serde(default, alias = "content")]
    block: Option<Text>,
    #[serde(default)]
    marker: Option<Text>,
    #[serde(default)]
    marker_begin: Option<Text>,
    #[serde(default)]
    marker_end: Option<Text>,
    #[serde(default)]
    insertafter: Option<Text>,
    #[serde(default)]
    insertbefore: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    create: Flag,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    append_newline: Flag,
    #[serde(default)]
    prepend_newline: Flag,
    #[serde(default)]
    validate: Option<Text>,
}

const VALID: &[&str] = &[
    "path",
    "block",
    "marker",
    "marker_begin",
    "marker_end",
    "insertafter",
    "insertbefore",
    "state",
    "create",
    "backup",
    "append_newline",
    "prepend_newline",
    "validate",
];

/// The block edit, parsed.
struct BlockEdit {
    /// The block's text (empty or `None` with state=absent removes it).
    block: Option<String>,
    present: bool,
    marker: String,
    begin: String,
    end: String,
    insertafter: Option<String>,
    insertbefore: Option<String>,
    append_newline: bool,
    prepend_newline: bool,
}

/// Ansible's algorithm: find both markers; replace what is between them, else insert at
/// `insertafter`/`insertbefore` (last matching line) or EOF. Returns the new content
/// and the message.
fn edit_block(original: Option<&[u8]>, e: &BlockEdit) -> Result<(Vec<u8>, &'static str)> {
    let mut lines = split_lines(original.unwrap_or_default());
    let (insertafter, insertbefore) = match (&e.insertafter, &e.insertbefore) {
        (None, None) => (Some("EOF".to_string()), None),
        (a, b) => (a.clone(), b.clone()),
    };
    let insert_pattern = match (&insertafter, &insertbefore) {
        (Some(a), _) if a != "EOF" => Some(a.as_str()),
        (None, Some(b)) if b != "BOF" => Some(b.as_str()),
        _ => None,
    };
    let insertre = insert_pattern
        .map(|p| compile("insertafter/insertbefore", p))
        .transpose()?;
    let marker0 = format!("{}\n", e.marker.replace("{mark}", &e.begin)).into_bytes();
    let marker1 = format!("{}\n", e.marker.replace("{mark}", &e.end)).into_bytes();
    let mut blocklines: Vec<Vec<u8>> = Vec::new();
    if let (true, Some(block)) = (e.present, e.block.as_ref().filter(|b| !b.is_empty())) {
        let mut block = block.clone();
        if !block.ends_with('\n') && !block.ends_with('\r') {
            block.push('\n');
        }
        blocklines.push(marker0.clone());
        blocklines.extend(split_lines(block.as_bytes()));
        blocklines.push(marker1.clone());
    }
    let mut n0: Option<usize> = None;
    let mut n1: Option<usize> = None;
    for (i, l) in lines.iter().enumerate() {
        if *l == marker0 {
            n0 = Some(i);
        }
        if *l == marker1 {
            n1 = Some(i);
        }
    }
    let at = match (n0, n1) {
        (Some(a), Some(b)) if a < b => {
            lines.drain(a..=b);
            a
        }
        (Some(a), Some(b)) => {
            lines.drain(b..=a);
            b
        }
        _ => match &insertre {
            Some(re) => {
                let mut found = None;
                for (i, l) in lines.iter().enumerate() {
                    let bare = l.strip_suffix(b"\n").unwrap_or(l);
                    if re.is_match(bare) {
                        found = Some(i);
                    }
                }
                match found {
                    None => lines.len(),
                    Some(i) if insertafter.is_some() => i + 1,
                    Some(i) => i,
                }
            }
            None if insertbefore.is_some() => 0,
            None => lines.len(),
        },
    };
    if !blocklines.is_empty() {
        if at > 0 && !lines[at - 1].ends_with(b"\n") {
            lines[at - 1].push(b'\n');
        }
        if e.prepend_newline && at > 0 && lines[at - 1] != b"\n" {
            blocklines.insert(0, b"\n".to_vec());
        }
        if e.append_newline && at < lines.len() && lines[at] != b"\n" {
            blocklines.push(b"\n".to_vec());
        }
    }
    let had_block = !blocklines.is_empty();
    lines.splice(at..at, blocklines);
    let result = lines.concat();
    let msg = if original == Some(result.as_slice()) || (original.is_none() && result.is_empty()) {
        ""
    } else if original.is_none() {
        "File created"
    } else if !had_block {
        "Block removed"
    } else {
        "Block inserted"
    };
    Ok((result, msg))
}

/// The arguments, parsed and checked as far as they can be without the host.
struct Checked {
    path: String,
    edit: BlockEdit,
    create: bool,
    backup: bool,
    validate: Option<String>,
    attrs: FileAttrs,
}

fn text(t: Option<Text>) -> Option<String> {
    t.map(|t| t.0)
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (BlockArgs, FileAttrs) = parse_with_file_attrs("blockinfile", raw, VALID)?;
    let path = text(a.path)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::new(ErrorKind::ModuleArgs, "blockinfile: `path` is required"))?;
    let state = a.state.unwrap_or(State::Present);
    if a.insertafter.is_some() && a.insertbefore.is_some() {
        return Err(Error::new(
            ErrorKind::ModuleArgs,
            "blockinfile: `insertafter` and `insertbefore` are mutually exclusive",
        ));
    }
    if let Some(v) = &a.validate {
        check_validate(v.as_str())?;
    }
    let marker = text(a.marker).unwrap_or_else(|| "# {mark} ANSIBLE MANAGED BLOCK".to_string());
    if !marker.contains("{mark}") {
        return Err(Error::new(ErrorKind::ModuleArgs, format!("blockinfile: marker {:?} has no {{mark}}", marker))
            .help("the marker must contain {mark}, replaced by marker_begin/marker_end to tell the two lines apart"));
    }
    let edit = BlockEdit {
        block: text(a.block),
        present: state == State::Present,
        marker,
        begin: text(a.marker_begin).unwrap_or_else(|| "BEGIN".into()),
        end: text(a.marker_end).unwrap_or_else(|| "END".into()),
        insertafter: text(a.insertafter),
        insertbefore: text(a.insertbefore),
        append_newline: a.append_newline.0,
        prepend_newline: a.prepend_newline.0,
    };
    Ok(Checked {
        path,
        edit,
        create: a.create.0,
        backup: a.backup.0,
        validate: text(a.validate),
        attrs,
    })
}

/// Ensures a marked block is in (or out of) a file.
pub struct BlockInFile;

#[async_trait]
impl PlanApply for BlockInFile {
    type Work = EditWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<EditWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let st = read_for_edit(ctx, &c.path).await?;
        if !st.exists {
            if !c.edit.present {
                return Ok(Plan::Done(ModuleResult::ok().msg("file not present")));
            }
            if !c.create {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!("Path {} does not exist !", c.path),
                )
                .help("set `create: true` to create the file")
                .at_opt(ctx.span.as_ref()));
            }
        }
        let original = if st.exists {
            Some(st.content.as_deref().unwrap_or_default())
        } else {
            None
        };
        let (new, msg) = edit_block(original, &c.edit)?;
        plan_edit(
            ctx,
            EditFinish {
                path: &c.path,
                st: &st,
                new,
                attrs: attrs_of(&c.attrs),
                backup: c.backup,
                validate: c.validate,
                msg: msg.to_string(),
            },
        )
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        work: EditWork,
        result: ModuleResult,
    ) -> Result<ModuleResult> {
        apply_edit(ctx, work, result).await
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

    fn e(block: &str) -> BlockEdit {
        BlockEdit {
            block: Some(block.into()),
            present: true,
            marker: "# {mark} KK".into(),
            begin: "BEGIN".into(),
            end: "END".into(),
            insertafter: None,
            insertbefore: None,
            append_newline: false,
            prepend_newline: false,
        }
    }

    fn run(orig: &str, ed: &BlockEdit) -> (String, &'static str) {
        let (r, m) = edit_block(Some(orig.as_bytes()), ed).unwrap();
        (String::from_utf8(r).unwrap(), m)
    }

    #[test]
    fn block_rules() {
        assert_eq!(
            run("a", &e("x\ny")),
            ("a\n# BEGIN KK\nx\ny\n# END KK\n".into(), "Block inserted")
        );
        let once = run("a\n", &e("x")).0;
        assert_eq!(run(&once, &e("x")), (once.clone(), ""));
        assert_eq!(run(&once, &e("z")).0, "a\n# BEGIN KK\nz\n# END KK\n");
        let mut rm = e("");
        rm.present = false;
        assert_eq!(run(&once, &rm), ("a\n".into(), "Block removed"));
        let mut b = e("x");
        b.insertbefore = Some("BOF".into());
        assert_eq!(run("a\n", &b).0, "# BEGIN KK\nx\n# END KK\na\n");
        let mut b = e("x");
        b.insertafter = Some("^a".into());
        b.append_newline = true;
        assert_eq!(run("a\nb\n", &b).0, "a\n# BEGIN KK\nx\n# END KK\n\nb\n");
        let mut b = e("x");
        b.insertbefore = Some("^b".into());
        assert_eq!(run("a\nb\n", &b).0, "a\n# BEGIN KK\nx\n# END KK\nb\n");
        assert_eq!(edit_block(None, &e("x")).unwrap().1, "File created");
    }

    #[tokio::test]
    async fn on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hosts");
        let fs = f.to_str().unwrap();
        std::fs::write(&f, "127.0.0.1 localhost\n").unwrap();
        let mut c = ctx(dir.path(), json!({}));
        c.diff = true;
        c.check_mode = true;
        let a = json!({"path": fs, "block": "10.0.0.1 n1\n10.0.0.2 n2", "marker": "# {mark} KUBEKEY HOSTS"});
        let r = Planned(BlockInFile).run(&c, args(a.clone())).await.unwrap();
        assert!(r.changed);
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "127.0.0.1 localhost\n"
        );
        assert!(r.diffs[0]
            .after
            .contains("# BEGIN KUBEKEY HOSTS\n10.0.0.1 n1\n"));
        c.check_mode = false;
        assert!(
            Planned(BlockInFile)
                .run(&c, args(a.clone()))
                .await
                .unwrap()
                .changed
        );
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "127.0.0.1 localhost\n# BEGIN KUBEKEY HOSTS\n10.0.0.1 n1\n10.0.0.2 n2\n# END KUBEKEY HOSTS\n"
        );
        assert!(!Planned(BlockInFile).run(&c, args(a)).await.unwrap().changed);
        let r = Planned(BlockInFile)
            .run(
                &c,
                args(json!({"path": fs, "state": "absent", "marker": "# {mark} KUBEKEY HOSTS"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "127.0.0.1 localhost\n"
        );
        let e = Planned(BlockInFile)
            .run(
                &c,
                args(json!({"path": fs, "block": "x", "marker": "# no mark"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("{mark}"));
        let e = Planned(BlockInFile)
            .run(&c, args(json!({"path": fs, "blok": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("blok"));
        let e = Planned(BlockInFile)
            .run(&c, args(json!({"path": "/nonexistent/kk", "block": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("does not exist"));
    }

    #[test]
    fn validate_at_load() {
        let check = |a: serde_json::Value| BlockInFile.validate(&args(a));
        assert!(check(json!({"path": "/etc/hosts", "block": "x", "owner": 0})).is_ok());
        let e = check(json!({"path": "/etc/hosts", "state": "on"})).unwrap_err();
        assert!(
            e.message.contains("blockinfile")
                && e.message.contains("`state`")
                && e.message.contains("present, absent"),
            "{}",
            e.message
        );
        let e = check(json!({"path": "/etc/hosts", "blok": "x"})).unwrap_err();
        assert!(e.message.contains("blockinfile") && e.message.contains("blok"));
        let e = check(json!({"block": "x"})).unwrap_err();
        assert!(e.message.contains("blockinfile: `path` is required"));
        let e = check(json!({"path": "/x", "marker": "# no mark"})).unwrap_err();
        assert!(e.message.contains("{mark}"));
    }
}
