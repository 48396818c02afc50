//! `ini_file` (`community.general.ini_file`): one option (or a whole section) of an
//! INI-style file added, changed or removed. The file is read with its stat in one round
//! trip, edited on the controller with the collection's rules (ported from `do_ini`,
//! line for line, so the odd cases — the blank first line of a new file, commented
//! options reused, the trailing newline added — come out the same), and written through a
//! temp file and rename only when it changed. As in the collection, check mode compares
//! the content only (mode/owner/group are looked at when not in check mode).

use async_trait::async_trait;
use serde::Deserialize;

use super::args::{parse_with_file_attrs, FileAttrs, Flag, List, Text};
use super::lineinfile::read_for_edit;
use super::plan::{Plan, PlanApply};
use super::remote::{self, Attrs, WriteOptions};
use super::{ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

crate::closed_set! {
    /// Whether the option (or section) should be in the file.
    enum State for "state" { Present = "present", Absent = "absent" }
}

/// One `section_has_values` condition.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HasValueArg {
    #[serde(default)]
    option: Option<Text>,
    #[serde(default)]
    value: Option<Text>,
    #[serde(default)]
    values: Option<List>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IniArgs {
    #[serde(default, alias = "dest")]
    path: Option<Text>,
    #[serde(default)]
    section: Option<Text>,
    #[serde(default)]
    section_has_values: Option<Vec<HasValueArg>>,
    #[serde(default)]
    option: Option<Text>,
    #[serde(default)]
    value: Option<Text>,
    #[serde(default)]
    values: Option<List>,
    #[serde(default)]
    backup: Flag,
    #[serde(default)]
    state: Option<State>,
    #[serde(default = "Flag::on")]
    exclusive: Flag,
    #[serde(default)]
    no_extra_spaces: Flag,
    #[serde(default)]
    ignore_spaces: Flag,
    #[serde(default = "Flag::on")]
    create: Flag,
    #[serde(default)]
    allow_no_value: Flag,
    #[serde(default = "Flag::on")]
    modify_inactive_option: Flag,
    #[serde(default)]
    follow: Flag,
}

const VALID: &[&str] = &[
    "path",
    "section",
    "section_has_values",
    "option",
    "value",
    "values",
    "backup",
    "state",
    "exclusive",
    "no_extra_spaces",
    "ignore_spaces",
    "create",
    "allow_no_value",
    "modify_inactive_option",
    "follow",
];

/// A `section_has_values` condition: the option, and the values one of which it must
/// have (any value when empty).
#[derive(Debug, Clone)]
struct HasValue {
    option: String,
    values: Vec<String>,
}

/// The edit, as `do_ini` takes it.
#[derive(Debug, Clone)]
struct IniEdit {
    section: Option<String>,
    section_has_values: Option<Vec<HasValue>>,
    option: Option<String>,
    values: Vec<String>,
    present: bool,
    exclusive: bool,
    no_extra_spaces: bool,
    ignore_spaces: bool,
    allow_no_value: bool,
    modify_inactive_option: bool,
}

struct Checked {
    path: String,
    edit: IniEdit,
    create: bool,
    backup: bool,
    follow: bool,
    attrs: Attrs,
}

fn arg_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ModuleArgs, format!("ini_file: {}", msg.into()))
}

/// Types and names of the arguments; `Ok(Err(msg))` for what the collection reports as a
/// failed task, so `ignore_errors` applies as there.
fn check(raw: VarMap) -> Result<std::result::Result<Checked, String>> {
    let (a, fattrs): (IniArgs, FileAttrs) = parse_with_file_attrs("ini_file", raw, VALID)?;
    let attrs = Attrs::from(&fattrs);
    attrs.check("ini_file")?;
    let Some(path) = a.path.map(|p| p.0) else {
        return Ok(Err("missing required arguments: path".into()));
    };
    if path.is_empty() {
        return Err(arg_err("`path` is empty").help("name the INI file to edit"));
    }
    if a.value.is_some() && a.values.is_some() {
        return Ok(Err("parameters are mutually exclusive: value|values".into()));
    }
    let present = a.state.unwrap_or(State::Present) == State::Present;
    let allow_no_value = a.allow_no_value.0;
    let no_values = a.values.as_ref().is_none_or(|v| v.0.is_empty());
    if present && !allow_no_value && a.value.is_none() && no_values {
        return Ok(Err(
            "Parameter 'value(s)' must be defined if state=present and allow_no_value=False."
                .into(),
        ));
    }
    let option = a.option.map(|o| o.0);
    let mut values: Vec<String> = Vec::new();
    let given = match (a.value, a.values) {
        (Some(v), _) => vec![v.0],
        (None, Some(l)) => l.0,
        (None, None) => Vec::new(),
    };
    // The collection drops repeated values.
    for v in given {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    if option.is_none() && !values.is_empty() && present {
        // The collection fails with a Python TypeError here.
        return Err(arg_err("`value`/`values` given without `option`")
            .help("name the option the value belongs to with `option`"));
    }
    let section_has_values = match a.section_has_values {
        None => None,
        Some(conds) => {
            let mut out = Vec::new();
            for c in conds {
                let Some(option) = c.option else {
                    return Ok(Err(
                        "missing required arguments: option found in section_has_values".into(),
                    ));
                };
                if c.value.is_some() && c.values.is_some() {
                    return Ok(Err(
                        "parameters are mutually exclusive: value|values found in section_has_values"
                            .into(),
                    ));
                }
                let values = match (c.value, c.values) {
                    (Some(v), _) => vec![v.0],
                    (None, Some(l)) => l.0,
                    (None, None) => Vec::new(),
                };
                out.push(HasValue {
                    option: option.0,
                    values,
                });
            }
            Some(out)
        }
    };
    Ok(Ok(Checked {
        path,
        edit: IniEdit {
            section: a.section.map(|s| s.0),
            section_has_values,
            option,
            values,
            present,
            exclusive: a.exclusive.0,
            no_extra_spaces: a.no_extra_spaces.0,
            ignore_spaces: a.ignore_spaces.0,
            allow_no_value,
            modify_inactive_option: a.modify_inactive_option.0,
        },
        create: a.create.0,
        backup: a.backup.0,
        follow: a.follow.0,
        attrs,
    }))
}

/// A line without its one trailing newline: Python's `$` matches before it, Rust's does
/// not, and `.` never takes it.
fn bare(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

/// The collection's `match_opt` (`active`: `match_active_opt`, commented lines never
/// match); the value (group 8) when the line is the option's.
fn match_opt(option: &str, line: &str, active: bool) -> Option<(bool, String)> {
    let o = regex::escape(option);
    let pat = if active {
        format!(r"^()()( |\t)*({})( |\t)*(=|$)( |\t)*(.*)", o)
    } else {
        format!(r"^( |\t)*([#;]?)( |\t)*({})( |\t)*(=|$)( |\t)*(.*)", o)
    };
    let re = regex::Regex::new(&pat).expect("escaped option makes a valid pattern");
    re.captures(bare(line)).map(|c| {
        (
            !c.get(2).is_none_or(|m| m.as_str().is_empty()),
            c.get(8).map(|m| m.as_str().to_string()).unwrap_or_default(),
        )
    })
}

/// `update_section_line`: puts `newline` at `index` unless it is the same (with
/// `ignore_spaces`, unless only the spaces around `=` differ).
fn update_line(
    e: &IniEdit,
    option: &str,
    lines: &mut [String],
    index: usize,
    changed_lines: &mut [bool],
    newline: String,
    st: &mut (bool, &'static str),
) {
    let mut option_changed = None;
    if e.ignore_spaces {
        if let Some((false, old)) = match_opt(option, &lines[index], false) {
            let new = match_opt(option, &newline, false).map(|m| m.1);
            option_changed = Some(Some(old) != new);
        }
    }
    let option_changed = option_changed.unwrap_or(lines[index] != newline);
    if option_changed {
        lines[index] = newline;
        *st = (true, "option changed");
    }
    changed_lines[index] = true;
}

fn section_has_values(conds: &Option<Vec<HasValue>>, lines: &[String]) -> bool {
    let Some(conds) = conds else { return true };
    conds.iter().all(|c| {
        lines.iter().any(|l| {
            match_opt(&c.option, l, false)
                .is_some_and(|(_, v)| c.values.is_empty() || c.values.contains(&v))
        })
    })
}

const FAKE_SECTION: &str = "ad01e11446efb704fcdbdb21f2c43757423d91c5";

/// The collection's `do_ini` on the file's text (`None`: no file): the new text, whether
/// it changed, and the message.
fn do_ini(original: Option<&str>, e: &IniEdit) -> (String, bool, &'static str) {
    let mut values = e.values.clone();
    let mut ini: Vec<String> = original
        .unwrap_or_default()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect();
    let mut changed = false;
    if ini.is_empty() {
        ini.push("\n".into());
    }
    if !ini.last().expect("not empty").ends_with('\n') {
        ini.last_mut().expect("not empty").push('\n');
        changed = true;
    }
    ini.insert(0, format!("[{}]", FAKE_SECTION));
    ini.push("[".into());
    let section = e
        .section
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| FAKE_SECTION.to_string());
    let fmt = |o: &str, v: &str| {
        if e.no_extra_spaces {
            format!("{}={}\n", o, v)
        } else {
            format!("{} = {}\n", o, v)
        }
    };
    let section_re = regex::Regex::new(&format!(r"^\[\s*{}\s*]", regex::escape(section.trim())))
        .expect("escaped section makes a valid pattern");
    let blank_or_comment = regex::Regex::new(r"^[ \t]*([#;].*)?$").expect("valid");
    let mut within = false;
    let (mut start, mut end) = (0usize, 0usize);
    for (i, line) in ini.iter().enumerate() {
        if within && line.starts_with('[') {
            if section_has_values(&e.section_has_values, &ini[start..i]) {
                end = i;
                break;
            }
            within = false;
            (start, end) = (0, 0);
        }
        if section_re.is_match(line) {
            within = true;
            start = i;
        }
    }
    let after: Vec<String> = ini[end..].to_vec();
    let mut sect: Vec<String> = ini[start..end].to_vec();
    let before: Vec<String> = ini[..start].to_vec();
    let mut changed_lines = vec![false; sect.len()];
    let active = !e.modify_inactive_option;
    let mut st: (bool, &'static str) = (changed, "OK");
    let mut no_value_present = false;
    let option = e.option.as_deref();

    if let (true, Some(o)) = (e.present, option) {
        for i in 0..sect.len() {
            let Some((_, v)) = match_opt(o, &sect[i], active) else {
                continue;
            };
            if !values.is_empty() && values.contains(&v) {
                let newline = if v.is_empty() && e.allow_no_value {
                    no_value_present = true;
                    format!("{}\n", o)
                } else {
                    fmt(o, &v)
                };
                update_line(e, o, &mut sect, i, &mut changed_lines, newline, &mut st);
                let at = values.iter().position(|x| *x == v).expect("contained");
                values.remove(at);
            } else if values.is_empty() && e.allow_no_value {
                update_line(
                    e,
                    o,
                    &mut sect,
                    i,
                    &mut changed_lines,
                    format!("{}\n", o),
                    &mut st,
                );
                no_value_present = true;
                break;
            }
        }
    }
    if let (true, true, false, Some(o)) = (e.present, e.exclusive, e.allow_no_value, option) {
        if !values.is_empty() {
            for i in 0..sect.len() {
                if !changed_lines[i] && match_opt(o, &sect[i], active).is_some() {
                    let v = values.remove(0);
                    update_line(e, o, &mut sect, i, &mut changed_lines, fmt(o, &v), &mut st);
                    if values.is_empty() {
                        break;
                    }
                }
            }
        }
        for i in (1..sect.len()).rev() {
            if !changed_lines[i] && match_opt(o, &sect[i], active).is_some() {
                sect.remove(i);
                changed_lines.remove(i);
                st = (true, "option changed");
            }
        }
    }
    if e.present {
        for i in (1..=sect.len()).rev() {
            if blank_or_comment.is_match(bare(&sect[i - 1])) {
                continue;
            }
            if let Some(o) = option {
                if !values.is_empty() {
                    for v in values.iter().rev() {
                        sect.insert(i, fmt(o, v));
                        st = (true, "option added");
                    }
                } else if e.allow_no_value && !no_value_present {
                    sect.insert(i, format!("{}\n", o));
                    st = (true, "option added");
                }
            }
            break;
        }
    }
    if !e.present {
        match option {
            Some(o) if e.exclusive => {
                let kept: Vec<String> = sect
                    .iter()
                    .filter(|l| match_opt(o, l, true).is_none())
                    .cloned()
                    .collect();
                if kept != sect {
                    st = (true, "option changed");
                    sect = kept;
                }
            }
            Some(o) if !values.is_empty() => {
                let kept: Vec<String> = sect
                    .iter()
                    .filter(|l| !match_opt(o, l, true).is_some_and(|(_, v)| values.contains(&v)))
                    .cloned()
                    .collect();
                if kept != sect {
                    st = (true, "option changed");
                    sect = kept;
                }
            }
            Some(_) => {}
            None => {
                if !sect.is_empty() {
                    sect.clear();
                    st = (true, "section removed");
                }
            }
        }
    }
    let mut out: Vec<String> = before;
    out.extend(sect);
    out.extend(after);
    out.remove(0);
    out.pop();
    if !within && e.present {
        out.push(format!("[{}]\n", section));
        st.1 = "section and option added";
        if let Some(conds) = &e.section_has_values {
            for c in conds {
                if Some(c.option.as_str()) != option {
                    if !c.values.is_empty() {
                        for v in &c.values {
                            out.push(fmt(&c.option, v));
                        }
                    } else if e.allow_no_value {
                        out.push(format!("{}\n", c.option));
                    }
                } else if !e.exclusive {
                    for v in &c.values {
                        if !values.contains(v) {
                            values.push(v.clone());
                        }
                    }
                }
            }
        }
        match option {
            Some(o) if !values.is_empty() => {
                for v in &values {
                    out.push(fmt(o, v));
                }
            }
            Some(o) if e.allow_no_value => out.push(format!("{}\n", o)),
            _ => st.1 = "only section added",
        }
        st.0 = true;
    }
    (out.concat(), st.0, st.1)
}

/// Python's text read of the file: UTF-8 with its BOM dropped, universal newlines.
fn decode(path: &str, bytes: &[u8]) -> std::result::Result<String, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| format!("{} is not UTF-8 text ({}); ini_file reads UTF-8", path, e))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// What apply writes.
pub struct IniWork {
    path: String,
    target: String,
    content: Option<String>,
    creates: bool,
    attrs: Attrs,
    backup: bool,
}

/// `community.general.ini_file`.
pub struct IniFile;

#[async_trait]
impl PlanApply for IniFile {
    type Work = IniWork;

    async fn plan(&self, ctx: &ModuleContext, raw: VarMap) -> Result<Plan<IniWork>> {
        let c = match check(raw).map_err(|e| e.at_opt(ctx.span.as_ref()))? {
            Ok(c) => c,
            Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
        };
        let st = read_for_edit(ctx, &c.path).await?;
        let target = match (&st.link_source, c.follow) {
            (Some(real), true) => real.clone(),
            _ => c.path.clone(),
        };
        let original = match (&st.content, st.exists) {
            (Some(bytes), true) => match decode(&c.path, bytes) {
                Ok(t) => Some(t),
                Err(msg) => return Ok(Plan::Done(ModuleResult::failed(msg))),
            },
            _ => None,
        };
        if original.is_none() && !c.create {
            return Ok(Plan::Done(
                ModuleResult::failed(format!("Destination {} does not exist!", target))
                    .with("rc", 257),
            ));
        }
        let (new, content_changed, msg) = do_ini(original.as_deref(), &c.edit);
        let old = original.clone().unwrap_or_default();
        let header = format!("{} (content)", target);
        let (db, da) = if ctx.diff {
            (old.clone(), new.clone())
        } else {
            (String::new(), String::new())
        };
        let diff = serde_json::json!({
            "before": db, "after": da, "before_header": header, "after_header": header,
        });
        // As the collection: attributes are compared outside check mode only.
        let attrs_changed = !ctx.check_mode && st.exists && c.attrs.differ(&st)?;
        let res = ModuleResult::changed(false)
            .msg(msg)
            .with("diff", diff)
            .with("path", c.path.clone());
        if !content_changed && !attrs_changed {
            return Ok(Plan::Done(res));
        }
        Ok(Plan::change(
            res,
            IniWork {
                path: c.path,
                target,
                content: content_changed.then_some(new),
                creates: original.is_none(),
                attrs: c.attrs,
                backup: c.backup,
            },
        ))
    }

    async fn apply(
        &self,
        ctx: &ModuleContext,
        w: IniWork,
        mut res: ModuleResult,
    ) -> Result<ModuleResult> {
        let Some(content) = w.content else {
            remote::set_attrs(ctx, &w.path, &w.attrs, false).await?;
            return Ok(res);
        };
        let written = remote::write_file(
            ctx,
            &w.target,
            content.into_bytes(),
            &WriteOptions {
                attrs: w.attrs,
                backup: w.backup,
                validate: None,
                make_parents: w.creates,
                directory_mode: None,
                remote_src: None,
            },
        )
        .await?;
        if let Some(b) = written.backup_file {
            res.data.insert("backup_file".into(), b.into());
        }
        Ok(res)
    }

    fn validate(&self, args: &VarMap) -> Result<()> {
        check(args.clone()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn edit(v: Value) -> IniEdit {
        check(v.as_object().unwrap().clone()).unwrap().unwrap().edit
    }

    fn run(orig: Option<&str>, v: Value) -> (String, bool, &'static str) {
        let mut v = v;
        v["path"] = json!("/x.ini");
        do_ini(orig, &edit(v))
    }

    #[test]
    fn adds_as_the_collection_does() {
        assert_eq!(
            run(None, json!({"section": "s", "option": "o", "value": "v"})),
            ("\n[s]\no = v\n".into(), true, "section and option added")
        );
        assert_eq!(
            run(
                Some("[s]\na=1\n\n[t]\n"),
                json!({"section": "s", "option": "o", "value": "v", "no_extra_spaces": true})
            ),
            ("[s]\na=1\no=v\n\n[t]\n".into(), true, "option added")
        );
        assert_eq!(
            run(
                Some("[s]\no = v\n"),
                json!({"section": "s", "option": "o", "value": "v"})
            ),
            ("[s]\no = v\n".into(), false, "OK")
        );
        assert_eq!(
            run(
                Some("[s]\no = v"),
                json!({"section": "s", "option": "o", "value": "v"})
            ),
            ("[s]\no = v\n".into(), true, "OK")
        );
        assert_eq!(
            run(Some("top=1\n[s]\n"), json!({"option": "x", "value": "2"})),
            ("top=1\nx = 2\n[s]\n".into(), true, "option added")
        );
        // A commented option is reused unless modify_inactive_option is off.
        assert_eq!(
            run(
                Some("[s]\n# o = old\n"),
                json!({"section": "s", "option": "o", "value": "n"})
            ),
            ("[s]\no = n\n".into(), true, "option changed")
        );
        assert_eq!(
            run(
                Some("[s]\n# o = old\nz=1\n"),
                json!({"section": "s", "option": "o", "value": "n", "modify_inactive_option": false})
            ),
            ("[s]\n# o = old\nz=1\no = n\n".into(), true, "option added")
        );
    }

    #[test]
    fn exclusive_values_and_absent() {
        let f = "[s]\no = a\no = b\no = c\n";
        assert_eq!(
            run(
                Some(f),
                json!({"section": "s", "option": "o", "values": ["c", "d"]})
            ),
            ("[s]\no = d\no = c\n".into(), true, "option changed")
        );
        assert_eq!(
            run(
                Some(f),
                json!({"section": "s", "option": "o", "values": ["d"], "exclusive": false})
            ),
            (
                "[s]\no = a\no = b\no = c\no = d\n".into(),
                true,
                "option added"
            )
        );
        assert_eq!(
            run(
                Some(f),
                json!({"section": "s", "option": "o", "state": "absent"})
            ),
            ("[s]\n".into(), true, "option changed")
        );
        assert_eq!(
            run(
                Some(f),
                json!({"section": "s", "option": "o", "value": "b", "state": "absent", "exclusive": false})
            ),
            ("[s]\no = a\no = c\n".into(), true, "option changed")
        );
        assert_eq!(
            run(
                Some("[a]\nx=1\n[s]\ny=2\n[b]\n"),
                json!({"section": "s", "state": "absent"})
            ),
            ("[a]\nx=1\n[b]\n".into(), true, "section removed")
        );
        assert_eq!(
            run(
                Some("[s]\nflag\n"),
                json!({"section": "s", "option": "other", "allow_no_value": true})
            ),
            ("[s]\nflag\nother\n".into(), true, "option added")
        );
        assert_eq!(
            run(
                Some("[s]\no =  v\n"),
                json!({"section": "s", "option": "o", "value": "v", "ignore_spaces": true})
            ),
            ("[s]\no =  v\n".into(), false, "OK")
        );
    }

    #[test]
    fn section_has_values_picks_the_section() {
        let f = "[Peer]\nAllowedIps = 1\nKey = a\n[Peer]\nAllowedIps = 2\nKey = b\n";
        assert_eq!(
            run(
                Some(f),
                json!({"section": "Peer", "option": "Key", "value": "z",
                       "section_has_values": [{"option": "AllowedIps", "value": "2"}]})
            ),
            (
                "[Peer]\nAllowedIps = 1\nKey = a\n[Peer]\nAllowedIps = 2\nKey = z\n".into(),
                true,
                "option changed"
            )
        );
        assert_eq!(
            run(
                Some(f),
                json!({"section": "Peer", "option": "Key", "value": "z",
                       "section_has_values": [{"option": "AllowedIps", "value": "3"}]})
            ),
            (
                format!("{}[Peer]\nAllowedIps = 3\nKey = z\n", f),
                true,
                "section and option added"
            )
        );
    }

    #[test]
    fn arguments() {
        let failed = |v: Value| {
            check(v.as_object().unwrap().clone())
                .unwrap()
                .err()
                .unwrap()
        };
        let e = |v: Value| check(v.as_object().unwrap().clone()).err().unwrap().message;
        assert_eq!(
            failed(json!({"path": "/x", "section": "s", "option": "o"})),
            "Parameter 'value(s)' must be defined if state=present and allow_no_value=False."
        );
        assert_eq!(
            failed(json!({"section": "s", "state": "absent"})),
            "missing required arguments: path"
        );
        assert_eq!(
            failed(json!({"path": "/x", "option": "o", "value": "1", "values": ["2"]})),
            "parameters are mutually exclusive: value|values"
        );
        assert!(e(json!({"path": "/x", "section": "s", "nope": 1})).contains("nope"));
        assert!(e(json!({"path": "/x", "value": "1"})).contains("without `option`"));
        assert!(
            e(json!({"path": "/x", "option": "o", "value": 1, "mode": "rwx"})).contains("mode")
        );
        assert_eq!(
            edit(json!({"path": "/x", "option": "o", "values": ["a", "b", "a"]})).values,
            ["a", "b"]
        );
        assert_eq!(decode("/x", b"\xef\xbb\xbfa\r\nb\r").unwrap(), "a\nb\n");
    }
}
