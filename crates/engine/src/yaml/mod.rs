//! YAML parsed once into a tree that remembers where every node came from.
//!
//! Scalars resolve as PyYAML (YAML 1.1) resolves them, because that is what Ansible
//! users' files were written against: `yes`/`no`/`on`/`off` are booleans, `0755` is
//! octal, `1.28` is a float and `1e3` is a string.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::{Error, ErrorKind, Result, SourceFile, Span};

/// A YAML node and its position.
#[derive(Debug, Clone)]
pub struct Node {
    /// The node's content.
    pub value: Yaml,
    /// Where the node starts.
    pub span: Span,
}

/// The content of a node.
#[derive(Debug, Clone)]
pub enum Yaml {
    /// `~`, `null` or nothing.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in file order; keys are stringified.
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The value under `key` when this node is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Entries of a mapping (empty for anything else).
    pub fn entries(&self) -> &[(String, Node)] {
        match &self.value {
            Yaml::Map(entries) => entries,
            _ => &[],
        }
    }

    /// The string content, if this is a string scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// True for `~`/`null`/empty.
    pub fn is_null(&self) -> bool {
        matches!(self.value, Yaml::Null)
    }

    /// A short name of the node's type, for "expected X, found Y" messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Yaml::Null => "null",
            Yaml::Bool(_) => "a boolean",
            Yaml::Int(_) => "an integer",
            Yaml::Float(_) => "a float",
            Yaml::Str(_) => "a string",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a mapping",
        }
    }

    /// An error at this node: "expected X, found Y".
    pub fn expected(&self, what: &str) -> Error {
        Error::syntax(
            format!("expected {}, found {}", what, self.type_name()),
            &self.span,
        )
    }

    /// The node as plain data (positions dropped).
    pub fn to_value(&self) -> Value {
        match &self.value {
            Yaml::Null => Value::Null,
            Yaml::Bool(b) => Value::Bool(*b),
            Yaml::Int(i) => Value::Number((*i).into()),
            Yaml::Float(f) => Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Yaml::Str(s) => Value::String(s.clone()),
            Yaml::Seq(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Yaml::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.clone(), v.to_value());
                }
                Value::Object(m)
            }
        }
    }

    /// A mapping's entries as data, or an error naming what was found instead.
    pub fn to_map(&self, what: &str) -> Result<Map<String, Value>> {
        match self.to_value() {
            Value::Object(m) => Ok(m),
            Value::Null => Ok(Map::new()),
            _ => Err(self.expected(&format!("a mapping for {}", what))),
        }
    }
}

/// How many nodes aliases may copy into one file's tree, in all: a YAML alias is a copy
/// here (the tree and the variables made from it do not share), so a small file of
/// nested anchors and aliases (a "billion laughs") could otherwise ask for gigabytes.
/// Real files stay far below it (a thousand hosts merging a 50-key anchor copy 50,000).
pub const MAX_ALIAS_NODES: usize = 1_000_000;

/// How many bytes of text (strings and keys) aliases may copy into one file's tree.
pub const MAX_ALIAS_TEXT: usize = 32 << 20;

/// How deep sequences and mappings may nest in one file: the tree is walked recursively
/// (converted, cloned, dropped), so depth must stay well within the thread's stack.
pub const MAX_DEPTH: usize = 1_000;

/// Parses every document in a file's text.
pub fn parse_documents(file: Arc<SourceFile>) -> Result<Vec<Node>> {
    let mut builder = Builder {
        file: file.clone(),
        stack: Vec::new(),
        docs: Vec::new(),
        anchors: HashMap::new(),
        copied: Size::default(),
        error: None,
    };
    // Events one by one, not `Parser::load`: that recurses once per nesting level, and
    // the builder's depth limit must stop a deep file before the thread's stack does.
    let mut parser = Parser::new_from_str(&file.text);
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((ev, mark)) => builder.on_event(ev, mark),
            Err(e) => {
                let m = e.marker();
                return Err(Error::new(ErrorKind::Yaml, e.info().to_string()).at(&Span {
                    file: file.clone(),
                    line: m.line(),
                    col: m.col() + 1,
                }));
            }
        }
        if let Some(e) = builder.error.take() {
            return Err(e);
        }
    }
    Ok(builder.docs)
}

/// Parses a file's text expecting one document (an empty file gives a null node).
pub fn parse(file: Arc<SourceFile>) -> Result<Node> {
    let docs = parse_documents(file.clone())?;
    match docs.len() {
        0 => Ok(Node {
            value: Yaml::Null,
            span: Span {
                file,
                line: 1,
                col: 1,
            },
        }),
        1 => Ok(docs.into_iter().next().unwrap()),
        _ => Err(Error::syntax(
            "expected one YAML document, found several (separated by `---`)",
            &docs[1].span,
        )),
    }
}

/// Reads and parses a file from disk.
pub fn load_file(path: &Path) -> Result<Node> {
    let text = crate::error::read_file(path)?;
    parse(SourceFile::new(path, text))
}

/// Parses a string that is not from a file (command line, embedded), naming it `origin`.
pub fn parse_str(origin: &str, text: &str) -> Result<Node> {
    parse(SourceFile::new(origin, text))
}

/// What a subtree costs when an alias copies it: its nodes and its text.
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    text: usize,
}

impl Size {
    fn of(node: &Node) -> Size {
        let mut size = Size { nodes: 0, text: 0 };
        // Iterative: the depth is capped, but a walk need not rely on that.
        let mut todo = vec![node];
        while let Some(n) = todo.pop() {
            size.nodes += 1;
            match &n.value {
                Yaml::Str(s) => size.text += s.len(),
                Yaml::Seq(items) => todo.extend(items),
                Yaml::Map(entries) => {
                    for (k, v) in entries {
                        size.text += k.len();
                        todo.push(v);
                    }
                }
                _ => {}
            }
        }
        size
    }
}

/// A mapping being built: entries in file order with an index by key, so duplicate and
/// merge checks stay linear on a mapping of 100,000 keys.
#[derive(Default)]
struct MapFrame {
    entries: IndexMap<String, Node>,
    /// A key waiting for its value.
    pending: Option<Node>,
    /// Keys that came from a `<<` merge (an explicit key may override them once).
    merged: HashSet<String>,
}

enum Frame {
    Seq(Vec<Node>, Span, usize),
    Map(MapFrame, Span, usize),
}

struct Builder {
    file: Arc<SourceFile>,
    stack: Vec<Frame>,
    docs: Vec<Node>,
    /// Anchored nodes by anchor id, with what an alias to them copies.
    anchors: HashMap<usize, (Node, Size)>,
    /// What aliases copied so far in this file.
    copied: Size,
    error: Option<Error>,
}

impl Builder {
    fn span(&self, mark: Marker) -> Span {
        Span {
            file: self.file.clone(),
            line: mark.line(),
            col: mark.col() + 1,
        }
    }

    fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            let size = Size::of(&node);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        let mut error = None;
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq(items, _, _)) => items.push(node),
            Some(Frame::Map(map, start, _)) => match map.pending.take() {
                None => {
                    // Block mappings report their start after the first key; the key is the true start.
                    if map.entries.is_empty()
                        && (node.span.line, node.span.col) < (start.line, start.col)
                    {
                        *start = node.span.clone();
                    }
                    map.pending = Some(node)
                }
                Some(key) => error = map.insert(key, node).err(),
            },
        }
        if let Some(e) = error {
            self.fail(e);
        }
    }

    /// An alias: a copy of the anchored node, within the file's alias budget.
    fn alias(&mut self, id: usize, mark: Marker) {
        let span = self.span(mark);
        let Some((node, size)) = self.anchors.get(&id) else {
            self.fail(Error::new(ErrorKind::Yaml, "alias to an unknown anchor").at(&span));
            return;
        };
        self.copied.nodes = self.copied.nodes.saturating_add(size.nodes);
        self.copied.text = self.copied.text.saturating_add(size.text);
        if self.copied.nodes > MAX_ALIAS_NODES || self.copied.text > MAX_ALIAS_TEXT {
            self.fail(
                Error::new(
                    ErrorKind::Yaml,
                    format!(
                        "aliases expand too far: with this one they copy {} nodes and {} bytes of text, \
                         over kk's limit of {} nodes and {} MiB per file",
                        self.copied.nodes,
                        self.copied.text,
                        MAX_ALIAS_NODES,
                        MAX_ALIAS_TEXT >> 20
                    ),
                )
                .at(&span)
                .with_code("kk::yaml::alias_expansion")
                .help("an alias is a copy of its anchor: nested aliases multiply; write the data out, or alias smaller parts"),
            );
            return;
        }
        let mut node = node.clone();
        node.span = span;
        self.push_node(node, 0);
    }

    /// Opens a sequence or mapping, unless that nests too deep.
    fn open(&mut self, frame: Frame, mark: Marker) {
        if self.stack.len() >= MAX_DEPTH {
            let span = self.span(mark);
            self.fail(
                Error::new(
                    ErrorKind::Yaml,
                    format!("lists and mappings nest more than {} deep", MAX_DEPTH),
                )
                .at(&span)
                .with_code("kk::yaml::too_deep"),
            );
            return;
        }
        self.stack.push(frame);
    }
}

impl MapFrame {
    /// Adds an entry: a `<<` merge brings in the entries of the aliased mapping(s) that
    /// are not there yet; an explicit key overrides a merged one (in its place, as
    /// PyYAML's dict does) and is an error when written twice.
    fn insert(&mut self, key: Node, value: Node) -> Result<()> {
        let key_str = match &key.value {
            Yaml::Str(s) => s.clone(),
            Yaml::Int(i) => i.to_string(),
            Yaml::Bool(b) => b.to_string(),
            Yaml::Float(f) => f.to_string(),
            Yaml::Null => "null".to_string(),
            _ => {
                return Err(Error::new(
                    ErrorKind::Yaml,
                    "a mapping key must be a scalar, not a list or mapping",
                )
                .at(&key.span))
            }
        };
        if key_str == "<<" {
            let sources = match value.value {
                Yaml::Seq(items) => items,
                _ => vec![value],
            };
            for src in sources {
                let Yaml::Map(entries) = src.value else {
                    continue;
                };
                for (k, v) in entries {
                    if !self.entries.contains_key(&k) {
                        self.merged.insert(k.clone());
                        self.entries.insert(k, v);
                    }
                }
            }
            return Ok(());
        }
        if self.merged.remove(&key_str) {
            self.entries.insert(key_str, value);
            return Ok(());
        }
        if self.entries.contains_key(&key_str) {
            return Err(
                Error::new(ErrorKind::Yaml, format!("duplicate key `{}`", key_str))
                    .at(&key.span)
                    .help("each key may appear once in a mapping; remove or rename one of them"),
            );
        }
        self.entries.insert(key_str, value);
        Ok(())
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match ev {
            Event::SequenceStart(anchor, _) => {
                let span = self.span(mark);
                self.open(Frame::Seq(Vec::new(), span, anchor), mark);
            }
            Event::MappingStart(anchor, _) => {
                let span = self.span(mark);
                self.open(Frame::Map(MapFrame::default(), span, anchor), mark);
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq(items, span, anchor)) = self.stack.pop() {
                    self.push_node(
                        Node {
                            value: Yaml::Seq(items),
                            span,
                        },
                        anchor,
                    );
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map(map, span, anchor)) = self.stack.pop() {
                    self.push_node(
                        Node {
                            value: Yaml::Map(map.entries.into_iter().collect()),
                            span,
                        },
                        anchor,
                    );
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let span = self.span(mark);
                // `!vault`: decrypted as it is loaded, with the run's vault passwords.
                if tag.as_ref().is_some_and(|t| {
                    t.handle == "!" && (t.suffix == "vault" || t.suffix == "vault-encrypted")
                }) {
                    match crate::vault::decrypt_scalar(&text, &span) {
                        Ok(plain) => self.push_node(
                            Node {
                                value: Yaml::Str(plain),
                                span,
                            },
                            anchor,
                        ),
                        Err(e) => self.fail(e),
                    }
                    return;
                }
                // `!unsafe` text with Jinja syntax: marked so that templating keeps it raw.
                if tag
                    .as_ref()
                    .is_some_and(|t| t.handle == "!" && t.suffix == "unsafe")
                    && crate::template::is_template(&text)
                {
                    let text = Node {
                        value: Yaml::Str(text),
                        span: span.clone(),
                    };
                    let key = crate::template::unsafe_text::UNSAFE_KEY.to_string();
                    let value = Yaml::Map(vec![(key, text)]);
                    self.push_node(Node { value, span }, anchor);
                    return;
                }
                let value = resolve_scalar(text, style, tag.as_ref());
                self.push_node(Node { value, span }, anchor);
            }
            Event::Alias(id) => self.alias(id, mark),
            _ => {}
        }
    }
}

/// Resolves a scalar's type the way PyYAML's YAML 1.1 resolver does.
fn resolve_scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> Yaml {
    if let Some(tag) = tag {
        match (tag.handle.as_str(), tag.suffix.as_str()) {
            ("!!", "str") | ("tag:yaml.org,2002:", "str") | ("!", "unsafe") => {
                return Yaml::Str(text)
            }
            ("!!", "int") => {
                return text
                    .trim()
                    .parse()
                    .map(Yaml::Int)
                    .unwrap_or(Yaml::Str(text));
            }
            ("!!", "float") => {
                return text
                    .trim()
                    .parse()
                    .map(Yaml::Float)
                    .unwrap_or(Yaml::Str(text));
            }
            ("!!", "bool") => return resolve_plain(text),
            _ => {}
        }
    }
    if style != TScalarStyle::Plain {
        return Yaml::Str(text);
    }
    resolve_plain(text)
}

fn resolve_plain(text: String) -> Yaml {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => return Yaml::Null,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Yaml::Bool(true)
        }
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Yaml::Bool(false)
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Yaml::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Yaml::Float(f64::NEG_INFINITY),
        _ => {}
    }
    if let Some(i) = resolve_int(&text) {
        return Yaml::Int(i);
    }
    if is_yaml11_float(&text) {
        if let Ok(f) = text.replace('_', "").parse::<f64>() {
            return Yaml::Float(f);
        }
    }
    Yaml::Str(text)
}

fn resolve_int(text: &str) -> Option<i64> {
    let (neg, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if body.is_empty() {
        return None;
    }
    let clean = body.replace('_', "");
    let parsed = if let Some(bin) = clean.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else if let Some(hex) = clean.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if clean.len() > 1 && clean.starts_with('0') {
        if clean.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
            i64::from_str_radix(&clean, 8).ok()
        } else {
            None
        }
    } else if clean.bytes().all(|b| b.is_ascii_digit()) && !body.starts_with('_') {
        clean.parse().ok()
    } else {
        None
    };
    parsed.map(|v| if neg { -v } else { v })
}

fn is_yaml11_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    if matches!(body, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    if let Some(exp) = exp {
        let digits = match exp.strip_prefix(['-', '+']) {
            Some(d) => d,
            None => return false,
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    }
    let Some(dot) = mantissa.find('.') else {
        return false;
    };
    let (int_part, frac) = (&mantissa[..dot], &mantissa[dot + 1..]);
    let int_ok = int_part.is_empty()
        || (int_part.as_bytes()[0].is_ascii_digit()
            && int_part.bytes().all(|b| b.is_ascii_digit() || b == b'_'));
    let frac_ok = frac.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    int_ok && frac_ok && !(int_part.is_empty() && frac.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Value {
        parse_str("t.yaml", text).unwrap().to_value()
    }

    #[test]
    fn yaml11_scalars() {
        assert_eq!(
            v("a: yes\nb: off\nc: 0755\nd: 1.28\ne: 1e3\nf: '0755'\ng: ~\nh: 0x1f\ni: -12"),
            serde_json::json!({"a": true, "b": false, "c": 493, "d": 1.28, "e": "1e3", "f": "0755", "g": null, "h": 31, "i": -12})
        );
        assert_eq!(
            v("a: v1.28.0\nb: 1.2.3\nc: .5\nd: 08"),
            serde_json::json!({"a": "v1.28.0", "b": "1.2.3", "c": 0.5, "d": "08"})
        );
    }

    #[test]
    fn positions_are_one_based() {
        let n = parse_str("t.yaml", "- hosts: all\n  tasks:\n    - debug: {msg: hi}\n").unwrap();
        let Yaml::Seq(plays) = &n.value else { panic!() };
        let tasks = plays[0].get("tasks").unwrap();
        let Yaml::Seq(tasks) = &tasks.value else {
            panic!()
        };
        assert_eq!((tasks[0].span.line, tasks[0].span.col), (3, 7));
        let dbg = tasks[0].get("debug").unwrap();
        assert_eq!((dbg.span.line, dbg.span.col), (3, 14));
    }

    #[test]
    fn anchors_and_merge_keys() {
        assert_eq!(
            v("a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  j: 3\n"),
            serde_json::json!({"a": {"k": 1, "j": 2}, "b": {"k": 1, "j": 3}})
        );
    }

    /// Nested anchors and aliases, `levels` deep, each level ten aliases of the one before.
    pub(crate) fn laughs(levels: usize) -> String {
        let mut s = String::from("a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
        for i in 1..=levels {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        s
    }

    #[test]
    fn alias_expansion_is_bounded() {
        // 10^9 strings from 1 KB: refused at the alias that crosses the budget.
        let e = parse_str("t.yaml", &laughs(9)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Yaml);
        assert!(
            e.message.contains("aliases expand too far"),
            "{}",
            e.message
        );
        let span = e.span.unwrap();
        assert!(span.line >= 5 && span.line <= 10, "{span}");
        // A few levels are fine.
        assert!(parse_str("t.yaml", &laughs(3)).is_ok());
        // Merge keys count too: each level merges the mapping before it ten times over.
        let mut m = String::from("m0: &m0 {k0: 0, j0: 1}\n");
        for i in 1..=30 {
            m.push_str(&format!(
                "m{i}: &m{i} {{k{i}: *m{p}, j{i}: *m{p}, <<: *m{p}}}\n",
                p = i - 1
            ));
        }
        let e = parse_str("t.yaml", &m).unwrap_err();
        assert!(
            e.message.contains("aliases expand too far"),
            "{}",
            e.message
        );
        // A large string aliased many times counts by its bytes.
        let big = "x".repeat(1 << 20);
        let mut s = format!("a: &a \"{big}\"\nl:\n");
        for _ in 0..40 {
            s.push_str("  - *a\n");
        }
        let e = parse_str("t.yaml", &s).unwrap_err();
        assert!(e.message.contains("MiB"), "{}", e.message);
    }

    #[test]
    fn wide_mappings_and_deep_nesting() {
        let mut s = String::new();
        for i in 0..100_000 {
            s.push_str(&format!("k{i}: {i}\n"));
        }
        let started = std::time::Instant::now();
        let n = parse_str("t.yaml", &s).unwrap();
        assert_eq!(n.entries().len(), 100_000);
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        s.push_str("k99999: again\n");
        let e = parse_str("t.yaml", &s).unwrap_err();
        assert!(e.render().contains("t.yaml:100001:1"), "{}", e.message);
        // Block nesting has no limit in the scanner (flow nesting stops at 255).
        let deep = format!("{}x\n", "- ".repeat(5000));
        let e = parse_str("t.yaml", &deep).unwrap_err();
        assert!(e.message.contains("nest more than"), "{}", e.message);
        assert!(parse_str("t.yaml", &format!("{}{}", "[".repeat(200), "]".repeat(200))).is_ok());
    }

    #[test]
    fn merge_override_keeps_place_and_refuses_duplicates() {
        let n = parse_str("t.yaml", "a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  k: 3\n").unwrap();
        let b = n.get("b").unwrap();
        let keys: Vec<&str> = b.entries().iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k", "j"]);
        let e = parse_str("t.yaml", "a: &x {k: 1}\nb:\n  <<: *x\n  k: 3\n  k: 4\n").unwrap_err();
        assert!(e.message.contains("duplicate key `k`"), "{}", e.message);
    }

    #[test]
    fn errors_have_positions() {
        let e = parse_str("t.yaml", "a: 1\na: 2\n").unwrap_err();
        assert!(e.render().contains("t.yaml:2:1"), "{}", e.render());
        let e = parse_str("t.yaml", "a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Yaml);
        assert!(e.span.is_some());
    }

    /// PyYAML checks no indentation inside flow collections (the vendored yaml-rust2's
    /// patch): a closing `}`/`]` or an entry may sit left of the enclosing block.
    #[test]
    fn flow_collections_close_at_any_column() {
        let text = "c:\n  d: {\n    k: v,\nj: [\n  1, \"two\n three\"\n]\n}\n  e: [\n1]\n";
        assert_eq!(
            v(text),
            serde_json::json!({"c": {"d": {"k": "v", "j": [1, "two three"]}, "e": [1]}})
        );
        // Block indentation is still checked.
        assert!(parse_str("t.yaml", "a:\n    b: 1\n  c: 2\n").is_err());
    }

    /// `!vault` values decrypt as they load; a wrong password names the value's place.
    #[test]
    fn vault_tagged_scalars_decrypt_at_load() {
        crate::vault::install(crate::vault::Keyring::new(vec![crate::vault::Secret::new(
            "default",
            "kk-unit-test-password",
        )]));
        let sealed = crate::vault::encrypt(b"s3cret", b"kk-unit-test-password", None).unwrap();
        let indented: String = String::from_utf8(sealed)
            .unwrap()
            .lines()
            .map(|l| format!("    {}\n", l))
            .collect();
        let text = format!("a: 1\nb: !vault |\n{}", indented);
        assert_eq!(v(&text), serde_json::json!({"a": 1, "b": "s3cret"}));
        let sealed = crate::vault::encrypt(b"x", b"another", None).unwrap();
        let text = format!(
            "a: !vault \"{}\"\n",
            String::from_utf8(sealed).unwrap().replace('\n', "\\n")
        );
        let e = parse_str("t.yaml", &text).unwrap_err();
        assert!(e.message.contains("Decryption failed"), "{}", e.message);
        assert!(e.render().contains("t.yaml:1:"), "{}", e.render());
    }
}
