//! `lineinfile`: makes sure one line is (or is not) in a text file. The file is read in
//! the same round trip as its stat, edited on the controller with Ansible's exact rules
//! (ported from `lineinfile.py`, in `rules.rs`), and written back only when it changed
//! (`edit.rs`, shared with `blockinfile`).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, Text};
use super::copy::check_validate;
use super::plan::{Plan, PlanApply};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

mod edit;
mod rules;
#[cfg(test)]
mod tests;

pub use edit::EditWork;
pub(crate) use edit::{apply_edit, attrs_of, plan_edit, read_for_edit, EditFinish};
use rules::{absent, present, LineEdit};
pub(crate) use rules::{compile, split_lines};

crate::closed_set! {
    /// Whether the line should be in the file.
    pub(crate) enum State for "state" { Present = "present", Absent = "absent" }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LineArgs {
    #[serde(default, alias = "dest", alias = "destfile", alias = "name")]
    path: Option<Text>,
    #[serde(default, alias = "value")]
    line: Option<Text>,
    #[serde(default, alias = "regex")]
    regexp: Option<Text>,
    #[serde(default)]
    search_string: Option<Text>,
    #[serde(default)]
    state: Option<State>,
    #[serde(default)]
    insertafter: Option<Text>,
    #[serde(default)]
    insertbefore: Option<Text>,
    #[serde(default)]
    create: Flag,
    #[serde(default)]
    backrefs: Flag,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    firstmatch: Flag,
    #[serde(default)]
    validate: Option<Text>,
}

const VALID: &[&str] = &[
    "path",
    "line",
    "regexp",
    "search_string",
    "state",
    "insertafter",
    "insertbefore",
    "create",
    "backrefs",
    "backup",
    "firstmatch",
    "validate",
];

fn text(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(|t| t.as_str().to_string())
}

/// The arguments, parsed and checked as far as they can be without the host.
struct Checked {
    path: String,
    state: State,
    edit: LineEdit,
    create: bool,
    backup: bool,
    validate: Option<String>,
    attrs: FileAttrs,
}

fn module_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("lineinfile: {}", msg.into()))
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (LineArgs, FileAttrs) = parse_with_file_attrs("lineinfile", raw, VALID)?;
    let path = text(&a.path)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| module_err("`path` is required"))?;
    let state = a.state.unwrap_or(State::Present);
    if a.regexp.is_some() && a.search_string.is_some() {
        return Err(module_err(
            "`regexp` and `search_string` are mutually exclusive",
        ));
    }
    if a.insertafter.is_some() && a.insertbefore.is_some() {
        return Err(module_err(
            "`insertafter` and `insertbefore` are mutually exclusive",
        ));
    }
    if a.backrefs.0 && a.regexp.is_none() {
        return Err(module_err("`regexp` is required with `backrefs`"));
    }
    if let Some(v) = &a.validate {
        check_validate(v.as_str())?;
    }
    if state == State::Present && a.line.is_none() {
        return Err(module_err("`line` is required with state=present"));
    }
    if state == State::Absent && a.line.is_none() && a.regexp.is_none() && a.search_string.is_none()
    {
        return Err(module_err(
            "one of `line`, `regexp` or `search_string` is required with state=absent",
        ));
    }
    let edit = LineEdit {
        line: a.line.as_ref().map(|l| l.as_str().as_bytes().to_vec()),
        regexp: a
            .regexp
            .as_ref()
            .map(|r| compile("regexp", r.as_str()))
            .transpose()?,
        search_string: a
            .search_string
            .as_ref()
            .map(|s| s.as_str().as_bytes().to_vec()),
        insertafter: text(&a.insertafter),
        insertbefore: text(&a.insertbefore),
        backrefs: a.backrefs.0,
        firstmatch: a.firstmatch.0,
    };
    Ok(Checked {
        path,
        state,
        edit,
        create: a.create.0,
        backup: a.backup.0,
        validate: text(&a.validate),
        attrs,
    })
}

/// Ensures a line is in (or out of) a file.
pub struct LineInFile;

#[async_trait]
impl PlanApply for LineInFile {
    type Work = EditWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<EditWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let st = read_for_edit(ctx, &c.path).await?;
        let content = split_lines(st.content.as_deref().unwrap_or_default());
        let (new, msg, found) = match c.state {
            State::Present => {
                if !st.exists && !c.create {
                    return Err(Error::new(
                        ErrorKind::Runtime,
                        format!("Destination {} does not exist !", c.path),
                    )
                    .help("set `create: true` to create the file")
                    .at_opt(ctx.span.as_ref()));
                }
                let (lines, msg) = present(content, &c.edit)?;
                (lines.concat(), msg.to_string(), None)
            }
            State::Absent => {
                if !st.exists {
                    return Ok(Plan::Done(ModuleResult::ok().msg("file not present")));
                }
                let (lines, n) = absent(content, &c.edit);
                let msg = if n > 0 {
                    format!("{} line(s) removed", n)
                } else {
                    String::new()
                };
                (lines.concat(), msg, Some(n))
            }
        };
        let plan = plan_edit(
            ctx,
            EditFinish {
                path: &c.path,
                st: &st,
                new,
                attrs: attrs_of(&c.attrs),
                backup: c.backup,
                validate: c.validate,
                msg,
            },
        )?;
        // state=absent reports how many lines matched.
        Ok(match (plan, found) {
            (Plan::Done(r), Some(n)) => Plan::Done(r.with("found", n)),
            (Plan::Change { result, work }, Some(n)) => Plan::Change {
                result: result.with("found", n),
                work,
            },
            (plan, None) => plan,
        })
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
