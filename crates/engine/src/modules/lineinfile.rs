//! `lineinfile`: makes sure one line is (or is not) in a text file. The file is read in
//! the same round trip as its stat, edited on the controller with Ansible's exact rules
//! (ported from `lineinfile.py`), and written back only when it changed.

use async_trait::async_trait;
use regex::bytes::{Captures, Regex};
use serde::Deserialize;

use super::copy::check_validate;
use super::remote::{self, file_diff, Attrs, FileKind, RemoteStat, StatOptions, WriteOptions};
use super::{args, parse_args, Module, ModuleContext, ModuleResult, VarMap};
use crate::error::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LineArgs {
    #[serde(
        default,
        alias = "dest",
        alias = "destfile",
        alias = "name",
        deserialize_with = "args::opt_string_like"
    )]
    path: Option<String>,
    #[serde(default, alias = "value", deserialize_with = "args::opt_string_like")]
    line: Option<String>,
    #[serde(default, alias = "regex", deserialize_with = "args::opt_string_like")]
    regexp: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    search_string: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    state: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    insertafter: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    insertbefore: Option<String>,
    #[serde(default, deserialize_with = "args::bool_like")]
    create: bool,
    #[serde(default, deserialize_with = "args::bool_like")]
    backrefs: bool,
    #[serde(default, deserialize_with = "args::bool_like")]
    backup: bool,
    #[serde(default, deserialize_with = "args::bool_like")]
    firstmatch: bool,
    #[serde(default, deserialize_with = "args::opt_mode")]
    mode: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    owner: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    group: Option<String>,
    #[serde(default, deserialize_with = "args::opt_string_like")]
    validate: Option<String>,
    #[serde(default, deserialize_with = "args::opt_bool_like")]
    unsafe_writes: Option<bool>,
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
    "mode",
    "owner",
    "group",
    "validate",
    "unsafe_writes",
];

/// Compiles a user's Python regular expression with Rust's engine, explaining the
/// difference when it does not compile.
pub(crate) fn compile(what: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        Error::new(ErrorKind::ModuleArgs, format!("{} {:?} is not a valid regular expression: {}", what, pattern, e))
            .help("the syntax is Python's minus look-around (`(?=`, `(?!`, `(?<=`) and backreferences (`\\1` in the pattern)")
    })
}

/// Splits content into lines keeping their `\n` (Python's `readlines`).
pub(crate) fn split_lines(content: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in content.iter().enumerate() {
        if *b == b'\n' {
            lines.push(content[start..=i].to_vec());
            start = i + 1;
        }
    }
    if start < content.len() {
        lines.push(content[start..].to_vec());
    }
    lines
}

/// A line without its line ending (`rstrip('\r\n')`).
fn bare(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// Python's `match.expand(template)`: `\1`, `\g<1>`, `\g<name>`, `\n`, `\t`, `\\`.
fn expand(caps: &Captures, template: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < template.len() {
        let c = template[i];
        if c != b'\\' || i + 1 >= template.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let n = template[i + 1];
        if n.is_ascii_digit() {
            let mut j = i + 1;
            while j < template.len() && j < i + 3 && template[j].is_ascii_digit() {
                j += 1;
            }
            let idx: usize = std::str::from_utf8(&template[i + 1..j])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if let Some(m) = caps.get(idx) {
                out.extend_from_slice(m.as_bytes());
            }
            i = j;
        } else if n == b'g' && template.get(i + 2) == Some(&b'<') {
            match template[i + 3..].iter().position(|b| *b == b'>') {
                Some(end) => {
                    let name = String::from_utf8_lossy(&template[i + 3..i + 3 + end]).into_owned();
                    let m = match name.parse::<usize>() {
                        Ok(idx) => caps.get(idx),
                        Err(_) => caps.name(&name),
                    };
                    if let Some(m) = m {
                        out.extend_from_slice(m.as_bytes());
                    }
                    i += 4 + end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            match n {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'\\' => out.push(b'\\'),
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
            i += 2;
        }
    }
    out
}

/// What to do with the line, parsed and validated.
pub(crate) struct LineEdit {
    /// The line wanted (or, with state=absent, to remove).
    pub line: Option<Vec<u8>>,
    /// Lines matching this are replaced (present) or removed (absent).
    pub regexp: Option<Regex>,
    /// Like `regexp`, a plain substring.
    pub search_string: Option<Vec<u8>>,
    /// `EOF`, `BOF` or a regex: where a new line goes.
    pub insertafter: Option<String>,
    /// `BOF` or a regex: where a new line goes.
    pub insertbefore: Option<String>,
    /// Expand `\1`-style groups of `regexp` in `line`; do nothing without a match.
    pub backrefs: bool,
    /// Use the first match instead of the last.
    pub firstmatch: bool,
}

/// Ansible's `present()`: returns the new lines and the message ("" when unchanged).
pub(crate) fn present(
    mut lines: Vec<Vec<u8>>,
    e: &LineEdit,
) -> Result<(Vec<Vec<u8>>, &'static str)> {
    let line = e.line.clone().unwrap_or_default();
    let ins_pattern = match (&e.insertafter, &e.insertbefore) {
        (Some(a), _) if a != "BOF" && a != "EOF" => Some(a),
        (None, Some(b)) if b != "BOF" => Some(b),
        _ => None,
    };
    let bre_ins = ins_pattern
        .map(|p| compile("insertafter/insertbefore", p))
        .transpose()?;
    let mut index: [isize; 2] = [-1, -1];
    let mut caps_line: Option<usize> = None;
    if let Some(re) = &e.regexp {
        for (n, cur) in lines.iter().enumerate() {
            if re.is_match(bare(cur)) {
                index[0] = n as isize;
                caps_line = Some(n);
                if e.firstmatch {
                    break;
                }
            }
        }
    }
    if let Some(ss) = &e.search_string {
        for (n, cur) in lines.iter().enumerate() {
            if contains(cur, ss) {
                index[0] = n as isize;
                caps_line = Some(n);
                if e.firstmatch {
                    break;
                }
            }
        }
    }
    if caps_line.is_none() {
        for (n, cur) in lines.iter().enumerate() {
            if bare(cur) == line.as_slice() {
                index[0] = n as isize;
            } else if let Some(re) = &bre_ins {
                if re.is_match(bare(cur)) {
                    if e.insertafter.is_some() {
                        index[1] = n as isize + 1;
                        if e.firstmatch {
                            break;
                        }
                    }
                    if e.insertbefore.is_some() {
                        index[1] = n as isize;
                        if e.firstmatch {
                            break;
                        }
                    }
                }
            }
        }
    }
    let with_sep = |l: &[u8]| {
        let mut v = l.to_vec();
        v.push(b'\n');
        v
    };
    let mut msg = "";
    if index[0] != -1 {
        let i = index[0] as usize;
        let mut new_line = match (&e.regexp, caps_line, e.backrefs) {
            (Some(re), Some(n), true) => {
                let cur = bare(&lines[n]).to_vec();
                match re.captures(&cur) {
                    Some(c) => expand(&c, &line),
                    None => line.clone(),
                }
            }
            _ => line.clone(),
        };
        if !new_line.ends_with(b"\n") {
            new_line.push(b'\n');
        }
        if lines[i] != new_line {
            lines[i] = new_line;
            msg = "line replaced";
        }
    } else if e.backrefs {
        // Nothing matched, so the backreferences have nothing to fill them: do nothing.
    } else if e.insertbefore.as_deref() == Some("BOF") || e.insertafter.as_deref() == Some("BOF") {
        lines.insert(0, with_sep(&line));
        msg = "line added";
    } else if e.insertafter.as_deref() == Some("EOF") || index[1] == -1 {
        if let Some(last) = lines.last_mut() {
            if !last.ends_with(b"\n") && !last.ends_with(b"\r") {
                last.push(b'\n');
            }
        }
        lines.push(with_sep(&line));
        msg = "line added";
    } else if e.insertafter.is_some() && index[1] != -1 {
        let i = index[1] as usize;
        if lines.len() == i {
            if bare(&lines[i - 1]) != line.as_slice() {
                if let Some(last) = lines.last_mut() {
                    if !last.ends_with(b"\n") && !last.ends_with(b"\r") {
                        last.push(b'\n');
                    }
                }
                lines.push(with_sep(&line));
                msg = "line added";
            }
        } else if bare(&lines[i]) != line.as_slice() {
            lines.insert(i, with_sep(&line));
            msg = "line added";
        }
    } else {
        lines.insert(index[1].max(0) as usize, with_sep(&line));
        msg = "line added";
    }
    Ok((lines, msg))
}

/// Ansible's `absent()`: removes every matching line; returns the count.
pub(crate) fn absent(lines: Vec<Vec<u8>>, e: &LineEdit) -> (Vec<Vec<u8>>, usize) {
    let before = lines.len();
    let kept: Vec<Vec<u8>> = lines
        .into_iter()
        .filter(|cur| {
            let hit = if let Some(re) = &e.regexp {
                re.is_match(bare(cur))
            } else if let Some(ss) = &e.search_string {
                contains(cur, ss)
            } else {
                e.line.as_deref() == Some(bare(cur))
            };
            !hit
        })
        .collect();
    let n = before - kept.len();
    (kept, n)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
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

/// How to finish a text edit.
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

/// Whether a file Ansible just created (mode 0644 under the usual umask) needs a
/// `chmod` to reach the requested mode.
fn new_file_mode_differs(attrs: &Attrs) -> Result<bool> {
    const CREATED: u32 = 0o644;
    Ok(match &attrs.mode {
        Some(m) => remote::apply_mode(CREATED, m, false)? != CREATED,
        None => false,
    })
}

/// Writes an edited file back only when its content changed (or sets attributes when
/// only they differ), with check mode, diff and Ansible's result keys.
pub(crate) async fn finish_edit(ctx: &ModuleContext, f: EditFinish<'_>) -> Result<ModuleResult> {
    let old = f.st.content.clone().unwrap_or_default();
    // A missing file is only created when the edit produced something to say.
    let content_changed = (!f.st.exists || old != f.new) && (f.st.exists || !f.msg.is_empty());
    let attrs_changed = if f.st.exists {
        f.attrs.differ(f.st)?
    } else {
        // Ansible creates the file as 0666 minus the umask (022 assumed here), then
        // reports the mode change when `mode` asks for another; not in check mode,
        // where it returns before looking at attributes.
        content_changed && !ctx.check_mode && new_file_mode_differs(&f.attrs)?
    };
    let mut msg = f.msg.clone();
    if attrs_changed {
        if !msg.is_empty() {
            msg.push_str(" and ");
        }
        msg.push_str("ownership, perms or SE linux context changed");
    }
    let mut res = ModuleResult::changed(content_changed || attrs_changed).msg(msg);
    if ctx.diff && content_changed {
        res.diffs.push(file_diff(
            f.path,
            &String::from_utf8_lossy(&old),
            &String::from_utf8_lossy(&f.new),
        ));
    }
    if ctx.check_mode || !res.changed {
        return Ok(res);
    }
    if content_changed {
        // Like Ansible, an edit of a symlink writes the file it points to.
        let target =
            f.st.link_source
                .clone()
                .unwrap_or_else(|| f.path.to_string());
        let w = remote::write_file(
            ctx,
            &target,
            f.new,
            &WriteOptions {
                attrs: f.attrs,
                backup: f.backup,
                validate: f.validate,
                make_parents: !f.st.exists,
                directory_mode: None,
                remote_src: None,
            },
        )
        .await?;
        if let Some(b) = w.backup_file {
            res.data.insert("backup".into(), b.clone().into());
            res.data.insert("backup_file".into(), b.into());
        }
    } else {
        remote::set_attrs(ctx, f.path, &f.attrs, false).await?;
    }
    Ok(res)
}

/// Ensures a line is in (or out of) a file.
pub struct LineInFile;

#[async_trait]
impl Module for LineInFile {
    async fn run(&self, ctx: &ModuleContext, raw: VarMap) -> Result<ModuleResult> {
        let a: LineArgs = parse_args("lineinfile", raw, VALID)?;
        let _ = a.unsafe_writes;
        let path = a.path.clone().filter(|p| !p.is_empty()).ok_or_else(|| {
            Error::new(ErrorKind::ModuleArgs, "lineinfile: `path` is required")
                .at_opt(ctx.span.as_ref())
        })?;
        let state = a.state.as_deref().unwrap_or("present");
        if state != "present" && state != "absent" {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                format!("lineinfile: unknown state {:?}", state),
            )
            .help("state must be `present` or `absent`"));
        }
        if a.regexp.is_some() && a.search_string.is_some() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "lineinfile: `regexp` and `search_string` are mutually exclusive",
            ));
        }
        if a.insertafter.is_some() && a.insertbefore.is_some() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "lineinfile: `insertafter` and `insertbefore` are mutually exclusive",
            ));
        }
        if a.backrefs && a.regexp.is_none() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "lineinfile: `regexp` is required with `backrefs`",
            ));
        }
        if let Some(v) = &a.validate {
            check_validate(v)?;
        }
        if state == "present" && a.line.is_none() {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "lineinfile: `line` is required with state=present",
            ));
        }
        if state == "absent" && a.line.is_none() && a.regexp.is_none() && a.search_string.is_none()
        {
            return Err(Error::new(
                ErrorKind::ModuleArgs,
                "lineinfile: one of `line`, `regexp` or `search_string` is required with state=absent",
            ));
        }
        let edit = LineEdit {
            line: a.line.as_ref().map(|l| l.as_bytes().to_vec()),
            regexp: a
                .regexp
                .as_deref()
                .map(|r| compile("regexp", r))
                .transpose()?,
            search_string: a.search_string.as_ref().map(|s| s.as_bytes().to_vec()),
            insertafter: a.insertafter.clone(),
            insertbefore: a.insertbefore.clone(),
            backrefs: a.backrefs,
            firstmatch: a.firstmatch,
        };
        let st = read_for_edit(ctx, &path).await?;
        let attrs = Attrs {
            mode: a.mode.clone(),
            owner: a.owner.clone(),
            group: a.group.clone(),
        };
        let (new, msg) = if state == "present" {
            if !st.exists && !a.create {
                return Err(Error::new(
                    ErrorKind::Runtime,
                    format!("Destination {} does not exist !", path),
                )
                .help("set `create: true` to create the file")
                .at_opt(ctx.span.as_ref()));
            }
            let (lines, msg) = present(
                split_lines(st.content.as_deref().unwrap_or_default()),
                &edit,
            )?;
            (lines.concat(), msg.to_string())
        } else {
            if !st.exists {
                return Ok(ModuleResult::ok().msg("file not present"));
            }
            let (lines, n) = absent(
                split_lines(st.content.as_deref().unwrap_or_default()),
                &edit,
            );
            let msg = if n > 0 {
                format!("{} line(s) removed", n)
            } else {
                String::new()
            };
            let mut r = finish_edit(
                ctx,
                EditFinish {
                    path: &path,
                    st: &st,
                    new: lines.concat(),
                    attrs,
                    backup: a.backup,
                    validate: a.validate,
                    msg,
                },
            )
            .await?;
            r.data.insert("found".into(), n.into());
            return Ok(r);
        };
        let res = finish_edit(
            ctx,
            EditFinish {
                path: &path,
                st: &st,
                new,
                attrs,
                backup: a.backup,
                validate: a.validate,
                msg,
            },
        )
        .await?;
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::super::remote::testutil::{args, ctx, mode_of};
    use super::*;
    use serde_json::json;

    fn edit(line: &str) -> LineEdit {
        LineEdit {
            line: Some(line.as_bytes().to_vec()),
            regexp: None,
            search_string: None,
            insertafter: None,
            insertbefore: None,
            backrefs: false,
            firstmatch: false,
        }
    }

    fn run_present(content: &str, e: &LineEdit) -> (String, &'static str) {
        let (lines, msg) = present(split_lines(content.as_bytes()), e).unwrap();
        (String::from_utf8(lines.concat()).unwrap(), msg)
    }

    #[test]
    fn present_rules() {
        // Appended at EOF, newline added before when missing.
        assert_eq!(
            run_present("a\nb", &edit("c")),
            ("a\nb\nc\n".into(), "line added")
        );
        // Exact line present: nothing.
        assert_eq!(run_present("a\nc\n", &edit("c")), ("a\nc\n".into(), ""));
        // regexp replaces the last match (firstmatch: the first).
        let mut e = edit("port=9");
        e.regexp = Some(compile("r", "^port=").unwrap());
        assert_eq!(
            run_present("port=1\nx\nport=2\n", &e).0,
            "port=1\nx\nport=9\n"
        );
        e.firstmatch = true;
        assert_eq!(
            run_present("port=1\nx\nport=2\n", &e).0,
            "port=9\nx\nport=2\n"
        );
        // Python-style `$` before the newline works.
        let mut e = edit("SELINUX=disabled");
        e.regexp = Some(compile("r", "^SELINUX=.*$").unwrap());
        assert_eq!(
            run_present("SELINUX=enforcing\n", &e).0,
            "SELINUX=disabled\n"
        );
        // insertafter / insertbefore regexes, BOF.
        let mut e = edit("new");
        e.insertafter = Some("^\\[main\\]".into());
        assert_eq!(
            run_present("[main]\na\n[other]\n", &e).0,
            "[main]\nnew\na\n[other]\n"
        );
        let mut e = edit("new");
        e.insertbefore = Some("^\\[other\\]".into());
        assert_eq!(
            run_present("[main]\na\n[other]\n", &e).0,
            "[main]\na\nnew\n[other]\n"
        );
        let mut e = edit("first");
        e.insertbefore = Some("BOF".into());
        assert_eq!(run_present("a\n", &e).0, "first\na\n");
        // insertafter that matches nothing: EOF.
        let mut e = edit("z");
        e.insertafter = Some("^nomatch".into());
        assert_eq!(run_present("a\n", &e).0, "a\nz\n");
        // backrefs: expanded from the match; no match, no change.
        let mut e = edit("\\1=on # \\g<k>");
        e.regexp = Some(compile("r", "^(?P<k>\\w+)=off").unwrap());
        e.backrefs = true;
        assert_eq!(run_present("feat=off\n", &e).0, "feat=on # feat\n");
        assert_eq!(run_present("other\n", &e), ("other\n".into(), ""));
        // search_string
        let mut e = edit("listen 8080;");
        e.search_string = Some(b"listen 80;".to_vec());
        assert_eq!(run_present("  listen 80;\n", &e).0, "listen 8080;\n");
    }

    #[test]
    fn absent_rules() {
        let mut e = edit("b");
        let (l, n) = absent(split_lines(b"a\nb\nb\nc"), &e);
        assert_eq!((l.concat(), n), (b"a\nc".to_vec(), 2));
        e.regexp = Some(compile("r", "^#").unwrap());
        let (l, n) = absent(split_lines(b"#x\ny\n"), &e);
        assert_eq!((l.concat(), n), (b"y\n".to_vec(), 1));
    }

    #[tokio::test]
    async fn edits_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("conf");
        let fs = f.to_str().unwrap();
        std::fs::write(&f, "a=1\nb=2\n").unwrap();
        let mut c = ctx(dir.path(), json!({}));
        c.diff = true;
        c.check_mode = true;
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": fs, "regexp": "^b=", "line": "b=3"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.diffs[0].after, "a=1\nb=3\n");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a=1\nb=2\n");
        c.check_mode = false;
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": fs, "regexp": "^b=", "line": "b=3", "mode": "0600"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(
            r.msg.as_deref(),
            Some("line replaced and ownership, perms or SE linux context changed")
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a=1\nb=3\n");
        assert_eq!(mode_of(&f), 0o600);
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": fs, "regexp": "^b=", "line": "b=3", "mode": "0600"})),
            )
            .await
            .unwrap();
        assert!(!r.changed);
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": fs, "line": "a=1", "state": "absent"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "b=3\n");
        // Missing file: error unless create.
        let n = dir.path().join("sub/new");
        let e = LineInFile
            .run(&c, args(json!({"path": n.to_str().unwrap(), "line": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("does not exist"));
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": n.to_str().unwrap(), "line": "x", "create": "yes"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert_eq!(r.msg.as_deref(), Some("line added"));
        assert_eq!(std::fs::read_to_string(&n).unwrap(), "x\n");
        let n2 = dir.path().join("sub/new2");
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": n2.to_str().unwrap(), "line": "x", "create": true, "mode": "0600"})),
            )
            .await
            .unwrap();
        assert_eq!(
            r.msg.as_deref(),
            Some("line added and ownership, perms or SE linux context changed")
        );
        let e = LineInFile
            .run(
                &c,
                args(json!({"path": fs, "line": "x", "regexp": "(?<=a)b"})),
            )
            .await
            .unwrap_err();
        assert!(e.message.contains("regular expression"));
        // A symlink is edited through: the link stays, its target changes.
        let l = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &l).unwrap();
        let r = LineInFile
            .run(
                &c,
                args(json!({"path": l.to_str().unwrap(), "line": "via=link"})),
            )
            .await
            .unwrap();
        assert!(r.changed);
        assert!(std::fs::symlink_metadata(&l)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::read_to_string(&f).unwrap().ends_with("via=link\n"));
        let e = LineInFile
            .run(&c, args(json!({"path": fs, "lines": "x"})))
            .await
            .unwrap_err();
        assert!(e.message.contains("lines"));
    }
}
