//! Ansible's INI inventory form: `host k=v …` lines, `[group]`, `[group:vars]` and
//! `[group:children]` sections, `#`/`;` comment lines, host ranges and `host:port`.
//!
//! The rules are those of ansible-core's `ini` inventory plugin, so an existing `hosts`
//! file loads unchanged: host lines are split like a POSIX shell (quotes, `\`, `#` starts a
//! comment), every value (host line or `:vars` section) is read as a Python literal when it
//! is one (`port=22` is a number, `on=True` a boolean) and kept as text otherwise, hosts
//! before any section are ungrouped, and a `[g:vars]` or `[p:children]` naming a group
//! that is never declared is an error at that line.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use crate::error::{Error, Result, SourceFile, Span};
use crate::vars::VarMap;

use super::pyliteral::literal_eval;
use super::ranges::expand_host;
use super::{too_many_hosts, Inventory, ALL, MAX_HOSTS, UNGROUPED};

/// What the lines of the current section hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Hosts,
    Vars,
    Children,
}

/// A group named before it is declared: by `[g:vars]`, or as a child in `[p:children]`.
struct Pending {
    state: State,
    span: Span,
    parents: Vec<(String, Span)>,
}

impl Inventory {
    /// Reads one INI inventory file into the inventory (the caller rebuilds). Errors say
    /// what Ansible says first ("failed to parse … with the ini plugin"), then why.
    pub(super) fn load_ini(&mut self, file: &Arc<SourceFile>) -> Result<()> {
        self.load_ini_lines(file).map_err(|mut e| {
            e.message = format!(
                "failed to parse inventory {} with the ini plugin: {}",
                file.path.display(),
                e.message
            );
            e
        })
    }

    fn load_ini_lines(&mut self, file: &Arc<SourceFile>) -> Result<()> {
        let mut pending: IndexMap<String, Pending> = IndexMap::new();
        let mut group = UNGROUPED.to_string();
        let mut state = State::Hosts;
        for (idx, raw) in file.text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with(['#', ';']) {
                continue;
            }
            let span = Span {
                file: file.clone(),
                line: idx + 1,
                col: raw.chars().take_while(|c| c.is_whitespace()).count() + 1,
            };
            if let Some((name, tag)) = section(line) {
                state = match tag {
                    None | Some("hosts") => State::Hosts,
                    Some("vars") => State::Vars,
                    Some("children") => State::Children,
                    Some(other) => {
                        return Err(Error::syntax(
                            format!("section [{}:{}] has unknown type `{}`", name, other, other),
                            &span,
                        )
                        .help("a section is `[group]`, `[group:vars]` or `[group:children]`"))
                    }
                };
                group = name.to_string();
                if !self.has_group(&group) {
                    if state == State::Vars && !pending.contains_key(&group) {
                        pending.insert(
                            group.clone(),
                            Pending {
                                state,
                                span: span.clone(),
                                parents: Vec::new(),
                            },
                        );
                    }
                    self.groups.entry(group.clone()).or_default();
                }
                if state != State::Vars {
                    if let Some(p) = pending.get(&group) {
                        if p.state == State::Children {
                            self.add_pending_children(&group, &mut pending);
                        } else {
                            pending.shift_remove(&group);
                        }
                    }
                }
                continue;
            }
            if line.starts_with('[') && line.ends_with(']') {
                return Err(Error::syntax(
                    format!("invalid section entry `{}`", line),
                    &span,
                )
                .help("a section is `[group]`, `[group:vars]` or `[group:children]`, without spaces inside the brackets"));
            }
            match state {
                State::Hosts => self.ini_host_line(line, &group, &span)?,
                State::Vars => {
                    let Some((k, v)) = line.split_once('=') else {
                        return Err(Error::syntax(
                            format!("expected `key=value` in [{}:vars], found `{}`", group, line),
                            &span,
                        ));
                    };
                    let (k, v) = (k.trim(), v.trim());
                    let mut vars = VarMap::new();
                    vars.insert(k.to_string(), parse_value(v));
                    self.set_group_vars(&group, vars);
                }
                State::Children => {
                    let Some(child) = group_name(line) else {
                        return Err(Error::syntax(
                            format!(
                                "expected a group name in [{}:children], found `{}`",
                                group, line
                            ),
                            &span,
                        ));
                    };
                    if child == ALL {
                        return Err(Error::syntax(
                            "`all` cannot be a child group: it is the top of every inventory",
                            &span,
                        ));
                    }
                    if self.has_group(child) {
                        self.add_child(&group, child, &span);
                    } else {
                        pending
                            .entry(child.to_string())
                            .or_insert_with(|| Pending {
                                state,
                                span: span.clone(),
                                parents: Vec::new(),
                            })
                            .parents
                            .push((group.clone(), span.clone()));
                    }
                }
            }
        }
        if let Some((name, p)) = pending.first() {
            let e = match p.state {
                State::Vars => Error::syntax(
                    format!(
                        "section [{}:vars] is for a group that is never declared",
                        name
                    ),
                    &p.span,
                ),
                _ => Error::syntax(
                    format!(
                        "section [{}:children] names group `{}`, which is never declared",
                        p.parents.last().map(|(g, _)| g.as_str()).unwrap_or(""),
                        name
                    ),
                    &p.span,
                ),
            };
            return Err(e.help(format!(
                "declare the group with a `[{}]` section (it may be empty)",
                name
            )));
        }
        Ok(())
    }

    fn has_group(&self, name: &str) -> bool {
        name == ALL || name == UNGROUPED || self.groups.contains_key(name)
    }

    fn set_group_vars(&mut self, group: &str, vars: VarMap) {
        let target = if group == ALL {
            &mut self.all_vars
        } else {
            &mut self.groups.entry(group.to_string()).or_default().vars
        };
        for (k, v) in vars {
            target.insert(k, v);
        }
    }

    fn add_child(&mut self, parent: &str, child: &str, span: &Span) {
        self.groups.entry(child.to_string()).or_default();
        if parent != ALL {
            self.groups
                .entry(parent.to_string())
                .or_default()
                .children
                .entry(child.to_string())
                .or_insert_with(|| Some(span.clone()));
        }
    }

    /// A group was declared: it becomes the child of the parents that named it early, and
    /// so on up for parents that were themselves pending children.
    fn add_pending_children(&mut self, group: &str, pending: &mut IndexMap<String, Pending>) {
        let Some(p) = pending.shift_remove(group) else {
            return;
        };
        for (parent, span) in p.parents {
            self.add_child(&parent, group, &span);
            if pending
                .get(&parent)
                .is_some_and(|pp| pp.state == State::Children)
            {
                self.add_pending_children(&parent, pending);
            }
        }
    }

    /// `host[:port] [k=v …]` in a hosts section.
    fn ini_host_line(&mut self, line: &str, group: &str, span: &Span) -> Result<()> {
        let tokens = shlex_split(line).map_err(|m| {
            Error::syntax(format!("cannot split host line `{}`: {}", line, m), span)
                .help("close the quote, or escape it with `\\`")
        })?;
        let Some((pattern, assigns)) = tokens.split_first() else {
            return Ok(());
        };
        let mut vars = VarMap::new();
        for t in assigns {
            let Some((k, v)) = t.split_once('=') else {
                return Err(Error::syntax(
                    format!("expected a `key=value` host variable, found `{}`", t),
                    span,
                )
                .help("quote values with spaces: `key=\"a b\"`"));
            };
            vars.insert(k.to_string(), parse_value(v));
        }
        if pattern.trim().ends_with(':') {
            return Err(Error::syntax(
                format!(
                    "host `{}` ends in `:`, which is reserved for a port",
                    pattern
                ),
                span,
            ));
        }
        if pattern.trim() == "---" {
            return Err(
                Error::syntax("`---` is not a host: this looks like a YAML file", span)
                    .help("name YAML inventories `.yaml` or `.yml`"),
            );
        }
        let (names, port) = expand_host(pattern, span)?;
        if self.hosts.len().saturating_add(names.len()) > MAX_HOSTS {
            return Err(too_many_hosts(span));
        }
        if let Some(port) = port {
            // Ansible sets the port first; a `ansible_port=` on the line wins.
            vars.entry("ansible_port".to_string())
                .or_insert(Value::from(port));
        }
        for h in names {
            self.add_host_def(&h, &vars, Some(span));
            if group == ALL {
                self.all_direct.insert(h.clone());
            }
            if group != ALL && group != UNGROUPED {
                self.groups
                    .entry(group.to_string())
                    .or_default()
                    .hosts
                    .insert(h);
            }
        }
        Ok(())
    }
}

/// An INI value: a Python literal's value, or the text itself.
fn parse_value(v: &str) -> Value {
    literal_eval(v).unwrap_or_else(|| Value::String(v.to_string()))
}

/// `[name]` or `[name:tag]`, with an optional trailing `# comment`.
fn section(line: &str) -> Option<(&str, Option<&str>)> {
    let rest = line.strip_prefix('[')?;
    let close = rest.find(']')?;
    let (inner, after) = (&rest[..close], rest[close + 1..].trim_start());
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    let (name, tag) = match inner.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (inner, None),
    };
    let name_ok = !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == ':');
    let tag_ok =
        tag.is_none_or(|t| !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_'));
    (name_ok && tag_ok).then_some((name, tag))
}

/// A group name line in `[g:children]`: one word, optionally followed by a `# comment`.
fn group_name(line: &str) -> Option<&str> {
    let end = line
        .find(|c: char| c.is_whitespace() || c == '#')
        .unwrap_or(line.len());
    let (name, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let ok = !name.is_empty()
        && !name.contains([':', ']'])
        && (rest.is_empty() || rest.starts_with('#'));
    ok.then_some(name)
}

/// Python's `shlex.split(line, comments=True)`: POSIX words, `'…'` literal, `"…"` with
/// `\"` and `\\` escapes, `\x` outside quotes is `x`, and `#` outside quotes ends the line.
fn shlex_split(line: &str) -> std::result::Result<Vec<String>, &'static str> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' | '\n' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '#' => break,
            '\\' => {
                cur.push(chars.next().ok_or("no escaped character")?);
                in_word = true;
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next().ok_or("no closing quotation")? {
                        '\'' => break,
                        ch => cur.push(ch),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next().ok_or("no closing quotation")? {
                        '"' => break,
                        '\\' => match chars.next().ok_or("no closing quotation")? {
                            e @ ('"' | '\\') => cur.push(e),
                            e => {
                                cur.push('\\');
                                cur.push(e);
                            }
                        },
                        ch => cur.push(ch),
                    }
                }
            }
            ch => {
                cur.push(ch);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Result<Inventory> {
        let mut inv = Inventory::blank();
        inv.load_ini(&SourceFile::new("hosts", text))?;
        inv.rebuild()?;
        Ok(inv)
    }

    #[test]
    fn shlex_like_python() {
        assert_eq!(
            shlex_split(r#"h a=1 b="x y" c='[1, 2]' d=a#b e=f"#).unwrap(),
            vec!["h", "a=1", "b=x y", "c=[1, 2]", "d=a"]
        );
        assert_eq!(shlex_split(r#"x="a\"b\n""#).unwrap(), vec![r#"x=a"b\n"#]);
        assert_eq!(shlex_split(r"x=a\ b").unwrap(), vec!["x=a b"]);
        assert!(shlex_split("x='a").is_err());
    }

    #[test]
    fn sections_and_values() {
        let inv = load(
            "; comment\n# comment\nh0 a=1 b=\"x y\" c='[1, 2]' d=True e=yes f=0755\n\
             [web]\nh1:2222 x=1\nnode[01:03]\n[web:vars]\nv1 = 5\nv2 = \"quoted\"  # c\nv3 = hello # c\n\
             [grp:children]\nweb\n[grp]\n[all:vars]\ng=all\n",
        )
        .unwrap();
        assert_eq!(
            inv.host_names(),
            vec!["h0", "h1", "node01", "node02", "node03"]
        );
        let h0 = inv.host_vars("h0");
        assert_eq!(h0["a"], json!(1));
        assert_eq!(h0["b"], json!("x y"));
        assert_eq!(h0["c"], json!([1, 2]));
        assert_eq!(h0["d"], json!(true));
        assert_eq!(h0["e"], json!("yes"));
        assert_eq!(h0["f"], json!("0755"));
        assert_eq!(h0["g"], json!("all"));
        let h1 = inv.host_vars("h1");
        assert_eq!(h1["ansible_port"], json!(2222));
        assert_eq!(h1["v1"], json!(5));
        assert_eq!(h1["v2"], json!("quoted"));
        assert_eq!(h1["v3"], json!("hello # c"));
        assert_eq!(inv.group_names("node02"), vec!["grp", "web"]);
        assert_eq!(inv.groups()["ungrouped"], vec!["h0"]);
    }

    #[test]
    fn ungrouped_vars_reach_hosts_in_no_other_group() {
        let inv = load("u1\n[web]\nh1\n[ungrouped]\nh1\nu2\n[ungrouped:vars]\nuv=1\n").unwrap();
        assert_eq!(inv.host_names(), vec!["u1", "u2", "h1"]);
        assert_eq!(inv.host_vars("u2")["uv"], json!(1));
        assert!(!inv.host_vars("h1").contains_key("uv"));
    }

    #[test]
    fn children_declared_later() {
        let inv = load("[top:children]\nmid\n[mid:children]\nleaf\n[leaf]\nx\n[mid]\n").unwrap();
        assert_eq!(inv.group_names("x"), vec!["leaf", "mid", "top"]);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line, what) in [
            ("[web]\nh1 novalue\n", 2, "key=value"),
            ("[web:vars]\nx=1\n", 1, "never declared"),
            ("[p:children]\nnope\n", 2, "never declared"),
            ("[web:bogus]\n", 1, "unknown type"),
            ("[web ]\n", 1, "invalid section"),
            ("h1:\n", 1, "reserved for a port"),
            ("---\n", 1, "YAML"),
            ("h1 x='a\n", 1, "closing quotation"),
            ("[web]\nh[3:1]\n", 2, "range"),
        ] {
            let e = load(text).unwrap_err();
            assert!(e.message.contains(what), "{text:?}: {}", e.message);
            assert_eq!(e.span.as_ref().map(|s| s.line), Some(line), "{text:?}");
        }
    }
}
