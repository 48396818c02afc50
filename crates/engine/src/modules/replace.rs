//! `replace`: replaces every match of a Python regular expression in a file (optionally
//! only between `after` and `before`). The file is read with its stat in one round trip,
//! edited on the controller with Python's `re.subn` semantics ([`crate::ansible::pyre`]), and
//! written back through a temp file and rename only when the text changed (the edit
//! machinery `lineinfile` uses, so backup, validate, mode/owner and `--diff` behave alike).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, Text};
use super::copy::check_validate;
use super::lineinfile::{apply_edit, attrs_of, plan_edit, EditFinish, EditWork};
use super::plan::{Plan, PlanApply};
use super::remote::{self, FileKind, StatOptions};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::ansible::pyre;
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplaceArgs {
    #[serde(default, alias = "dest", alias = "destfile", alias = "name")]
    path: Option<Text>,
    #[serde(default)]
    regexp: Option<Text>,
    #[serde(default)]
    replace: Option<Text>,
    #[serde(default)]
    after: Option<Text>,
    #[serde(default)]
    before: Option<Text>,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    validate: Option<Text>,
    #[serde(default)]
    encoding: Option<Text>,
}

const VALID: &[&str] = &[
    "path", "regexp", "replace", "after", "before", "backup", "validate", "encoding",
];

struct Checked {
    path: String,
    regexp: fancy_regex::Regex,
    replace: String,
    /// The `after`/`before` section pattern, as Ansible builds it.
    section: Option<(String, fancy_regex::Regex)>,
    backup: bool,
    validate: Option<String>,
    attrs: FileAttrs,
}

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("replace: {}", msg.into()))
}

fn check(raw: VarMap) -> Result<Checked> {
    let (a, attrs): (ReplaceArgs, FileAttrs) = parse_with_file_attrs("replace", raw, VALID)?;
    let path = a
        .path
        .map(|p| p.0)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| arg_err("`path` is required"))?;
    let regexp = a.regexp.ok_or_else(|| arg_err("`regexp` is required"))?.0;
    if let Some(e) = a.encoding.as_ref().map(Text::as_str) {
        let norm = e.to_ascii_lowercase().replace(['-', '_'], "");
        if norm != "utf8" {
            return Err(arg_err(format!("encoding {:?} is not supported", e))
                .help("kk reads and writes files as UTF-8 (Ansible's default); drop `encoding`"));
        }
    }
    if let Some(v) = &a.validate {
        check_validate(v.as_str())?;
    }
    let regexp = pyre::compile(&regexp, true, false).map_err(|e| {
        arg_err(format!(
            "`regexp` {:?} is not a valid regular expression: {}",
            regexp, e
        ))
    })?;
    // Ansible: after → `A(?P<subsection>.*)`, before → `(?P<subsection>.*)B`, both →
    // `A(?P<subsection>.*?)B`, searched with DOTALL.
    let after = a.after.map(|t| t.0).filter(|s| !s.is_empty());
    let before = a.before.map(|t| t.0).filter(|s| !s.is_empty());
    let pattern = match (&after, &before) {
        (Some(a), Some(b)) => Some(format!("{}(?P<subsection>.*?){}", a, b)),
        (Some(a), None) => Some(format!("{}(?P<subsection>.*)", a)),
        (None, Some(b)) => Some(format!("(?P<subsection>.*){}", b)),
        (None, None) => None,
    };
    let section = pattern
        .map(|p| {
            pyre::compile(&p, false, true)
                .map(|re| (p.clone(), re))
                .map_err(|e| {
                    arg_err(format!(
                        "`after`/`before` do not make a valid regular expression ({:?}): {}",
                        p, e
                    ))
                })
        })
        .transpose()?;
    Ok(Checked {
        path,
        regexp,
        replace: a.replace.map(|t| t.0).unwrap_or_default(),
        section,
        backup: a.backup.0,
        validate: a.validate.map(|t| t.0),
        attrs,
    })
}

/// What replacing does to a text: `Ok(None)` when the section pattern does not match
/// (Ansible then stops with that message), else the new text and how many replacements.
fn edit(c: &Checked, contents: &str) -> std::result::Result<Option<(String, usize)>, String> {
    let (start, end) = match &c.section {
        Some((_, re)) => match re.captures(contents).map_err(|e| e.to_string())? {
            Some(caps) => match caps.name("subsection") {
                Some(m) => (m.start(), m.end()),
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        None => (0, contents.len()),
    };
    let (new, n) = pyre::subn(&c.regexp, &c.replace, &contents[start..end])?;
    Ok(Some((
        format!("{}{}{}", &contents[..start], new, &contents[end..]),
        n,
    )))
}

/// Replaces regexp matches in a file.
pub struct Replace;

#[async_trait]
impl PlanApply for Replace {
    type Work = EditWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<EditWork>> {
        let c = check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))?;
        let st = remote::stat_paths(
            ctx,
            &[c.path.as_str()],
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
            return Ok(Plan::Done(
                ModuleResult::failed(format!("Path {} is a directory !", c.path)).with("rc", 256),
            ));
        }
        if !st.exists {
            return Ok(Plan::Done(
                ModuleResult::failed(format!("Path {} does not exist !", c.path)).with("rc", 257),
            ));
        }
        let Some(bytes) = st.content.as_deref() else {
            return Err(Error::new(ErrorKind::Runtime, format!("cannot read {} on the host", c.path))
                .help("is it readable by the connecting user? use `become: true` for files only root can read")
                .at_opt(ctx.span.as_ref()));
        };
        let Ok(contents) = std::str::from_utf8(bytes) else {
            return Ok(Plan::Done(ModuleResult::failed(format!(
                "{} is not UTF-8 text; replace edits text files",
                c.path
            ))));
        };
        let (new, n) = match edit(&c, contents) {
            Ok(Some(r)) => r,
            Ok(None) => {
                let p = c.section.as_ref().map(|(p, _)| p.as_str()).unwrap_or("");
                return Ok(Plan::Done(
                    ModuleResult::ok()
                        .msg(format!(
                            "Pattern for before/after params did not match the given file: {}",
                            p
                        ))
                        .with("rc", 0),
                ));
            }
            Err(e) => {
                return Ok(Plan::Done(ModuleResult::failed(format!(
                    "Unable to process replace due to error: {}",
                    e
                ))))
            }
        };
        let changed = n > 0 && new != contents;
        let msg = if changed {
            format!("{} replacements made", n)
        } else {
            String::new()
        };
        let plan = plan_edit(
            ctx,
            EditFinish {
                path: &c.path,
                st: &st,
                new: if changed {
                    new.into_bytes()
                } else {
                    bytes.to_vec()
                },
                attrs: attrs_of(&c.attrs),
                backup: c.backup,
                validate: c.validate,
                msg,
            },
        )?;
        Ok(match plan {
            Plan::Done(r) => Plan::Done(r.with("rc", 0)),
            Plan::Change { result, work } => Plan::Change {
                result: result.with("rc", 0),
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
        apply_edit(ctx, work, result).await
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn checked(v: Value) -> Checked {
        check(v.as_object().unwrap().clone()).unwrap()
    }

    #[test]
    fn sections_as_ansible_builds_them() {
        let text = "a=1\n# start\na=2\n# end\na=3\n";
        let c = checked(json!({"path": "/x", "regexp": "^a=", "replace": "b=",
            "after": "# start", "before": "# end"}));
        assert_eq!(
            edit(&c, text).unwrap(),
            Some(("a=1\n# start\nb=2\n# end\na=3\n".into(), 1))
        );
        let c =
            checked(json!({"path": "/x", "regexp": "^a=", "replace": "b=", "after": "# start"}));
        assert_eq!(
            edit(&c, text).unwrap(),
            Some(("a=1\n# start\nb=2\n# end\nb=3\n".into(), 2))
        );
        let c = checked(json!({"path": "/x", "regexp": "^a=", "replace": "b=", "before": "# end"}));
        assert_eq!(
            edit(&c, text).unwrap(),
            Some(("b=1\n# start\nb=2\n# end\na=3\n".into(), 2))
        );
        let c = checked(json!({"path": "/x", "regexp": "a", "after": "nope"}));
        assert_eq!(edit(&c, text).unwrap(), None);
    }

    #[test]
    fn bad_arguments() {
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        assert!(e(json!({"path": "/x"})).contains("`regexp` is required"));
        assert!(e(json!({"regexp": "a"})).contains("`path` is required"));
        assert!(e(json!({"path": "/x", "regexp": "("})).contains("not a valid regular expression"));
        assert!(e(json!({"path": "/x", "regexp": "a", "encoding": "latin-1"})).contains("latin-1"));
        assert!(e(json!({"path": "/x", "regexp": "a", "count": 1})).contains("count"));
    }
}
