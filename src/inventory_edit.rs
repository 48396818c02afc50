//! `--override`: adds or removes hosts in the groups of an inventory file by editing its
//! text, so comments, blank lines, key order and list styles stay as the user wrote them.
//!
//! Upstream (cmd/kk/app/options/builtin/{add,delete}.go) inserts `- node` lines after the
//! last item of a block list and drops `- node` lines; it silently does nothing for flow
//! lists (`hosts: [a, b]`), groups without `hosts:`, and missing groups. This editor handles
//! the shapes our inventories use: block lists, flow lists (rewritten on one line), `hosts:`
//! with no value, groups without `hosts:`, missing groups (appended to `spec.groups`), and
//! Ansible's form (`node:` keys under a group's `hosts:`, groups under `children:`). It
//! is planned before the run (an inventory it cannot edit is refused before any host is
//! touched) and the result is checked by loading it back: the edited groups must hold
//! exactly the expected hosts and nothing else may change.

use std::collections::BTreeSet;

use kk_engine::inventory::Inventory;
use kk_engine::yaml::{Node, Yaml};
use kk_engine::{Error, ErrorKind};

/// One change to a group's host list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The group (e.g. `kube_worker`).
    pub group: String,
    /// The host added to or removed from it.
    pub host: String,
    /// True to add, false to remove.
    pub add: bool,
}

impl Change {
    /// Adds `host` to `group`.
    pub fn add(group: &str, host: &str) -> Change {
        Change {
            group: group.into(),
            host: host.into(),
            add: true,
        }
    }

    /// Removes `host` from `group`.
    pub fn remove(group: &str, host: &str) -> Change {
        Change {
            group: group.into(),
            host: host.into(),
            add: false,
        }
    }
}

fn cannot(origin: &str, why: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Options,
        format!("--override cannot edit {}: {}", origin, why.into()),
    )
    .help("edit the inventory's groups by hand and run again without --override")
}

/// The inventory text with the changes applied. Changes that are already true (a host
/// already in the group, or not in it) are skipped; `Ok(None)` means nothing to write.
pub fn apply(origin: &str, text: &str, changes: &[Change]) -> Result<Option<String>, Error> {
    // Edit with `\n` line ends; a CRLF file gets CRLF back.
    if text.contains("\r\n") {
        let edited = apply(origin, &text.replace("\r\n", "\n"), changes)?;
        return Ok(edited.map(|t| t.replace('\n', "\r\n")));
    }
    let inv = load(origin, text)?;
    let groups = inv.groups();
    let member = |g: &str, h: &str| groups.get(g).is_some_and(|m| m.iter().any(|x| x == h));
    let needed: Vec<&Change> = changes
        .iter()
        .filter(|c| member(&c.group, &c.host) != c.add)
        .collect();
    if needed.is_empty() {
        return Ok(None);
    }
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for c in &needed {
        // Re-parse after each edit: positions move.
        let joined = lines.join("\n");
        let root = kk_engine::yaml::parse_str(origin, &joined)?;
        edit_one(origin, &root, &mut lines, c)?;
    }
    let out = lines.join("\n");
    verify(origin, &inv, &out, &needed)?;
    Ok(Some(out))
}

fn load(origin: &str, text: &str) -> Result<Inventory, Error> {
    let node = kk_engine::yaml::parse_str(origin, text)?;
    Inventory::from_node(&node)
}

/// The edited text must load, hold the same hosts, and differ from the original only in the
/// changed groups (and the groups that contain them).
fn verify(origin: &str, before: &Inventory, text: &str, changes: &[&Change]) -> Result<(), Error> {
    let after = load(origin, text)
        .map_err(|e| cannot(origin, format!("the edited text does not load ({})", e)))?;
    if after.host_names() != before.host_names() {
        return Err(cannot(origin, "the edit changed the list of hosts"));
    }
    let (b, a) = (before.groups(), after.groups());
    for (g, members) in &a {
        let mut want: BTreeSet<&String> = b.get(g).map(|m| m.iter().collect()).unwrap_or_default();
        let touched = changes.iter().filter(|c| &c.group == g);
        for c in touched {
            if c.add {
                want.insert(&c.host);
            } else {
                want.remove(&c.host);
            }
        }
        let got: BTreeSet<&String> = members.iter().collect();
        // Parent groups (k8s_cluster) follow their children; only the named groups are exact.
        let direct = changes.iter().any(|c| &c.group == g);
        if direct && got != want {
            return Err(cannot(
                origin,
                format!("group {} would hold {:?}, expected {:?}", g, got, want),
            ));
        }
    }
    Ok(())
}

/// Applies one change to `lines` (the file split on `\n`), using `root` parsed from them.
fn edit_one(origin: &str, root: &Node, lines: &mut Vec<String>, c: &Change) -> Result<(), Error> {
    if root.get("kind").is_none() && root.get("spec").is_none() {
        return edit_ansible(origin, root, lines, c);
    }
    let Some(spec) = root.get("spec").filter(|s| matches!(s.value, Yaml::Map(_))) else {
        return Err(cannot(origin, "it has no `spec:` mapping"));
    };
    let Some(groups) = spec
        .get("groups")
        .filter(|g| matches!(g.value, Yaml::Map(_)))
    else {
        return Err(cannot(
            origin,
            "it has no `spec.groups:` mapping to edit (add `groups:` under `spec:`)",
        ));
    };
    if is_flow(lines, groups) {
        return Err(cannot(origin, "`spec.groups` is a flow mapping `{...}`"));
    }
    let gindent = groups.span.col - 1;
    let Some(group) = groups.get(&c.group) else {
        if !c.add {
            return Ok(());
        }
        // A new group after the last content line of `spec.groups`.
        let end = block_end(lines, groups.span.line - 1, gindent);
        let pad = " ".repeat(gindent);
        let new = vec![
            format!("{}{}:", pad, c.group),
            format!("{}  hosts:", pad),
            format!("{}    - {}", pad, quote(&c.host)),
        ];
        lines.splice(end..end, new);
        return Ok(());
    };
    let key_line = find_key_line(lines, groups.span.line - 1, gindent, &c.group)
        .ok_or_else(|| cannot(origin, format!("cannot find the line of group {}", c.group)))?;
    match &group.value {
        Yaml::Null => {
            if !c.add {
                return Ok(());
            }
            if !after_colon_is_empty(&lines[key_line], &c.group) {
                return Err(cannot(
                    origin,
                    format!("group {} has an unusual value", c.group),
                ));
            }
            let pad = " ".repeat(gindent + 2);
            let new = vec![
                format!("{}hosts:", pad),
                format!("{}  - {}", pad, quote(&c.host)),
            ];
            lines.splice(key_line + 1..key_line + 1, new);
            Ok(())
        }
        Yaml::Map(_) if is_flow(lines, group) => edit_flow_map_group(origin, lines, group, c),
        Yaml::Map(_) => {
            let kindent = group.span.col - 1;
            match group.get("hosts") {
                None => {
                    if !c.add {
                        return Err(not_listed(origin, c));
                    }
                    let pad = " ".repeat(kindent);
                    let new = vec![
                        format!("{}hosts:", pad),
                        format!("{}  - {}", pad, quote(&c.host)),
                    ];
                    lines.splice(key_line + 1..key_line + 1, new);
                    Ok(())
                }
                Some(hosts) => {
                    let hline = find_key_line(lines, group.span.line - 1, kindent, "hosts")
                        .ok_or_else(|| {
                            cannot(origin, format!("cannot find `hosts:` of {}", c.group))
                        })?;
                    edit_hosts(origin, lines, hosts, hline, kindent, c)
                }
            }
        }
        _ => Err(cannot(
            origin,
            format!("group {} is {}, not a mapping", c.group, group.type_name()),
        )),
    }
}

/// Ansible's form: groups are top-level keys or `children:` entries (at any depth), and
/// `hosts:` is a mapping of host names (`node1:` or `node1: {vars}`).
fn edit_ansible(
    origin: &str,
    root: &Node,
    lines: &mut Vec<String>,
    c: &Change,
) -> Result<(), Error> {
    if is_flow(lines, root) {
        return Err(cannot(origin, "the inventory is a flow mapping `{...}`"));
    }
    let Some((parent, group)) = find_ansible_group(root, &c.group) else {
        if !c.add {
            return Ok(());
        }
        // A new group at the end of `all.children`.
        let children = root
            .get("all")
            .and_then(|a| a.get("children"))
            .filter(|ch| matches!(ch.value, Yaml::Map(_)) && !is_flow(lines, ch))
            .ok_or_else(|| {
                cannot(
                    origin,
                    format!(
                        "there is no group {} and no block `all: children:` to add it to",
                        c.group
                    ),
                )
            })?;
        let ci = children.span.col - 1;
        let end = block_end(lines, children.span.line - 1, ci);
        let pad = " ".repeat(ci);
        let new = vec![
            format!("{}{}:", pad, c.group),
            format!("{}  hosts:", pad),
            format!("{}    {}:", pad, quote(&c.host)),
        ];
        lines.splice(end..end, new);
        return Ok(());
    };
    let pindent = parent.span.col - 1;
    let key_line = find_key_line(lines, parent.span.line - 1, pindent, &c.group)
        .ok_or_else(|| cannot(origin, format!("cannot find the line of group {}", c.group)))?;
    let entry = format!("{}:", quote(&c.host));
    match &group.value {
        Yaml::Null if c.add => {
            let pad = " ".repeat(pindent + 2);
            lines.splice(
                key_line + 1..key_line + 1,
                vec![format!("{}hosts:", pad), format!("{}  {}", pad, entry)],
            );
            Ok(())
        }
        Yaml::Null => Err(not_listed(origin, c)),
        Yaml::Map(_) if is_flow(lines, group) => Err(cannot(
            origin,
            format!("group {} is a flow mapping `{{...}}`", c.group),
        )),
        Yaml::Map(_) => {
            let kindent = group.span.col - 1;
            let Some(hosts) = group.get("hosts") else {
                if !c.add {
                    return Err(not_listed(origin, c));
                }
                let pad = " ".repeat(kindent);
                lines.splice(
                    key_line + 1..key_line + 1,
                    vec![format!("{}hosts:", pad), format!("{}  {}", pad, entry)],
                );
                return Ok(());
            };
            let hline = find_key_line(lines, group.span.line - 1, kindent, "hosts")
                .ok_or_else(|| cannot(origin, format!("cannot find `hosts:` of {}", c.group)))?;
            match &hosts.value {
                Yaml::Null if c.add => {
                    lines.insert(hline + 1, format!("{}  {}", " ".repeat(kindent), entry));
                    Ok(())
                }
                Yaml::Map(_) if !is_flow(lines, hosts) => {
                    let hi = hosts.span.col - 1;
                    if c.add {
                        let end = block_end(lines, hosts.span.line - 1, hi);
                        lines.insert(end, format!("{}{}", " ".repeat(hi), entry));
                        return Ok(());
                    }
                    let Some(vars) = hosts.get(&c.host) else {
                        return Err(not_listed(origin, c));
                    };
                    if !(vars.is_null() || vars.entries().is_empty() && is_flow(lines, vars)) {
                        return Err(cannot(
                            origin,
                            format!("{} has its variables under group {}; move them to `all: hosts:` first", c.host, c.group),
                        ));
                    }
                    let l = find_key_line(lines, hosts.span.line - 1, hi, &c.host).ok_or_else(
                        || cannot(origin, format!("cannot find the line of {}", c.host)),
                    )?;
                    lines.remove(l);
                    if hosts.entries().len() == 1 {
                        let h = &mut lines[hline];
                        let (code, comment) = split_comment(h);
                        *h = format!("{} {{}}{}", code.trim_end(), comment);
                    }
                    Ok(())
                }
                _ if !c.add => Err(not_listed(origin, c)),
                _ => Err(cannot(
                    origin,
                    format!("`hosts` of group {} is not a block mapping", c.group),
                )),
            }
        }
        _ => Err(cannot(
            origin,
            format!("group {} is {}, not a mapping", c.group, group.type_name()),
        )),
    }
}

/// An Ansible group by name with the mapping it is a key of (the root or a `children:`).
fn find_ansible_group<'a>(root: &'a Node, name: &str) -> Option<(&'a Node, &'a Node)> {
    fn walk<'a>(map: &'a Node, name: &str, top: bool) -> Option<(&'a Node, &'a Node)> {
        for (k, v) in map.entries() {
            if k == name && !(top && k == "all") {
                return Some((map, v));
            }
        }
        for (_, group) in map.entries() {
            if let Some(children) = group.get("children") {
                if let Some(found) = walk(children, name, false) {
                    return Some(found);
                }
            }
        }
        None
    }
    walk(root, name, true)
}

fn not_listed(origin: &str, c: &Change) -> Error {
    cannot(
        origin,
        format!(
            "{} is in group {} only through a child group; remove it from that group",
            c.host, c.group
        ),
    )
}

/// Edits the `hosts:` value of a block-mapping group; `hline` is the `hosts:` key's line.
fn edit_hosts(
    origin: &str,
    lines: &mut Vec<String>,
    hosts: &Node,
    hline: usize,
    kindent: usize,
    c: &Change,
) -> Result<(), Error> {
    match &hosts.value {
        Yaml::Null => {
            if !c.add {
                return Err(not_listed(origin, c));
            }
            if !after_colon_is_empty(&lines[hline], "hosts") {
                return Err(cannot(
                    origin,
                    format!("`hosts:` of {} has an unusual value", c.group),
                ));
            }
            let item = format!("{}  - {}", " ".repeat(kindent), quote(&c.host));
            lines.insert(hline + 1, item);
            Ok(())
        }
        Yaml::Seq(_) if is_flow(lines, hosts) => edit_flow_seq(origin, lines, hosts, c),
        Yaml::Seq(items) => {
            if c.add {
                let last = items.last().expect("a block list has items");
                let l = last.span.line - 1;
                let lead: String = lines[l].chars().take_while(|ch| *ch == ' ').collect();
                lines.insert(l + 1, format!("{}- {}", lead, quote(&c.host)));
                return Ok(());
            }
            let Some(item) = items
                .iter()
                .find(|i| scalar(i).as_deref() == Some(c.host.as_str()))
            else {
                return Err(not_listed(origin, c));
            };
            let l = item.span.line - 1;
            let body = lines[l].trim_start();
            let ok = body
                .strip_prefix('-')
                .is_some_and(|r| quote_free(r) == c.host);
            if !ok {
                return Err(cannot(
                    origin,
                    format!("line {} holds more than `- {}`", l + 1, c.host),
                ));
            }
            lines.remove(l);
            if items.len() == 1 {
                // The list is now empty: say so, rather than leave a null `hosts:`.
                let h = &mut lines[hline];
                let (code, comment) = split_comment(h);
                *h = format!("{} []{}", code.trim_end(), comment);
            }
            Ok(())
        }
        _ => Err(cannot(
            origin,
            format!("`hosts` of group {} is not a list", c.group),
        )),
    }
}

/// A flow-mapping group (`kube_worker: {hosts: [a], groups: [...]}`).
fn edit_flow_map_group(
    origin: &str,
    lines: &mut [String],
    group: &Node,
    c: &Change,
) -> Result<(), Error> {
    match group.get("hosts") {
        Some(h) if matches!(h.value, Yaml::Seq(_)) && is_flow(lines, h) => {
            edit_flow_seq(origin, lines, h, c)
        }
        Some(_) => Err(cannot(
            origin,
            format!("`hosts` of group {} is not a flow list", c.group),
        )),
        None if !c.add => Err(not_listed(origin, c)),
        None => {
            let l = group.span.line - 1;
            let at = byte_at(&lines[l], group.span.col - 1) + 1;
            let empty = group.entries().is_empty();
            let ins = format!(
                "hosts: [{}]{}",
                quote(&c.host),
                if empty { "" } else { ", " }
            );
            lines[l].insert_str(at, &ins);
            Ok(())
        }
    }
}

/// Rewrites a flow list `[a, b]` with the change, keeping the items' own spelling.
fn edit_flow_seq(origin: &str, lines: &mut [String], seq: &Node, c: &Change) -> Result<(), Error> {
    let l = seq.span.line - 1;
    let start = byte_at(&lines[l], seq.span.col - 1);
    let Some(end) = closing_bracket(&lines[l], start) else {
        return Err(cannot(
            origin,
            format!("the list of group {} spans several lines", c.group),
        ));
    };
    let inner = &lines[l][start + 1..end];
    let mut items: Vec<String> = split_items(inner);
    if c.add {
        items.push(quote(&c.host));
    } else {
        let before = items.len();
        items.retain(|i| unquote(i) != c.host);
        if items.len() == before {
            return Err(not_listed(origin, c));
        }
    }
    let new = format!("[{}]", items.join(", "));
    lines[l].replace_range(start..=end, &new);
    Ok(())
}

/// True when the node starts with `{` or `[` in the text.
fn is_flow(lines: &[String], node: &Node) -> bool {
    let Some(line) = lines.get(node.span.line - 1) else {
        return false;
    };
    matches!(line.chars().nth(node.span.col - 1), Some('{') | Some('['))
}

/// The byte offset of a 0-based char column.
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices()
        .nth(col)
        .map(|(i, _)| i)
        .unwrap_or(line.len())
}

/// The byte offset of the `]` matching the `[` at `start`, on the same line.
fn closing_bracket(line: &str, start: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, ch) in line[start..].char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"') | (None, '\'') => quote = Some(ch),
            (None, '[') | (None, '{') => depth += 1,
            (None, ']') | (None, '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(start + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The items of a flow list's inside, split on top-level commas, trimmed.
fn split_items(inner: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for ch in inner.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c)
            }
            (None, '"') | (None, '\'') => {
                quote = Some(ch);
                cur.push(ch)
            }
            (None, ',') => items.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    items.push(cur);
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

/// The text after `- ` without a comment, unquoted.
fn quote_free(r: &str) -> String {
    unquote(strip_comment(r).trim())
}

/// A host name as YAML: plain when safe, double-quoted otherwise.
fn quote(host: &str) -> String {
    let plain = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        && !matches!(
            host.to_ascii_lowercase().as_str(),
            "yes" | "no" | "on" | "off" | "true" | "false" | "null" | "y" | "n"
        );
    if plain {
        host.to_string()
    } else {
        serde_json::to_string(host).unwrap_or_else(|_| host.to_string())
    }
}

/// A scalar item's text (host names may load as numbers or booleans).
fn scalar(n: &Node) -> Option<String> {
    match &n.value {
        Yaml::Str(s) => Some(s.clone()),
        Yaml::Int(i) => Some(i.to_string()),
        Yaml::Float(f) => Some(f.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Splits a line into code and ` # comment` (the comment keeps its leading space).
fn split_comment(line: &str) -> (&str, &str) {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, ch) in line.char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"') | (None, '\'') => quote = Some(ch),
            (None, '#') if prev == ' ' || prev == '\t' => {
                let code = &line[..i];
                let trimmed = code.trim_end();
                return (trimmed, &line[trimmed.len()..]);
            }
            _ => {}
        }
        prev = ch;
    }
    (line, "")
}

fn strip_comment(s: &str) -> &str {
    split_comment(s).0
}

/// True when `key:` on the line has nothing but maybe a comment after it.
fn after_colon_is_empty(line: &str, key: &str) -> bool {
    let code = strip_comment(line).trim();
    code == format!("{}:", key) || code == format!("\"{}\":", key) || code == format!("'{}':", key)
}

fn indent_of(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ').count()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The index after the last content line of the block mapping whose keys are at `indent`,
/// starting at line `start` (0-based).
fn block_end(lines: &[String], start: usize, indent: usize) -> usize {
    let mut last = start;
    for (i, l) in lines.iter().enumerate().skip(start) {
        if !is_content(l) {
            continue;
        }
        if indent_of(l) < indent {
            break;
        }
        last = i;
    }
    last + 1
}

/// The line (0-based) of `key:` at `indent` in the block mapping starting at `start`.
fn find_key_line(lines: &[String], start: usize, indent: usize, key: &str) -> Option<usize> {
    for (i, l) in lines.iter().enumerate().skip(start) {
        if !is_content(l) {
            continue;
        }
        let ind = indent_of(l);
        if ind < indent {
            return None;
        }
        if ind == indent {
            let rest = &l[ind..];
            for k in [
                key.to_string(),
                format!("\"{}\"", key),
                format!("'{}'", key),
            ] {
                if let Some(after) = rest.strip_prefix(&k) {
                    if after.trim_start().starts_with(':') {
                        return Some(i);
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "inventory_edit_tests.rs"]
mod tests;
