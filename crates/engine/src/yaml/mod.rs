//! YAML parsed once into a tree that remembers where every node came from.
//!
//! Scalars resolve as PyYAML (YAML 1.1) resolves them, because that is what Ansible
//! users' files were written against: `yes`/`no`/`on`/`off` are booleans, `0755` is
//! octal, `1.28` is a float and `1e3` is a string.

use std::path::Path;
use std::sync::Arc;

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

/// Parses every document in a file's text.
pub fn parse_documents(file: Arc<SourceFile>) -> Result<Vec<Node>> {
    let mut builder = Builder {
        file: file.clone(),
        stack: Vec::new(),
        docs: Vec::new(),
        anchors: Vec::new(),
        error: None,
    };
    let mut parser = Parser::new_from_str(&file.text);
    if let Err(e) = parser.load(&mut builder, true) {
        let m = e.marker();
        return Err(Error::new(ErrorKind::Yaml, e.info().to_string()).at(&Span {
            file: file.clone(),
            line: m.line(),
            col: m.col() + 1,
        }));
    }
    if let Some(e) = builder.error {
        return Err(e);
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

enum Frame {
    Seq(Vec<Node>, Span, usize),
    /// Entries, a key waiting for its value, keys that came from a `<<` merge, start, anchor.
    Map(Vec<(String, Node)>, Option<Node>, Vec<String>, Span, usize),
}

struct Builder {
    file: Arc<SourceFile>,
    stack: Vec<Frame>,
    docs: Vec<Node>,
    anchors: Vec<(usize, Node)>,
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

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.push((anchor, node.clone()));
        }
        match self.stack.last_mut() {
            None => self.docs.push(node),
            Some(Frame::Seq(items, _, _)) => items.push(node),
            Some(Frame::Map(entries, pending, merged, start, _)) => match pending.take() {
                None => {
                    // Block mappings report their start after the first key; the key is the true start.
                    if entries.is_empty()
                        && (node.span.line, node.span.col) < (start.line, start.col)
                    {
                        *start = node.span.clone();
                    }
                    *pending = Some(node)
                }
                Some(key) => {
                    let key_str = match &key.value {
                        Yaml::Str(s) => s.clone(),
                        Yaml::Int(i) => i.to_string(),
                        Yaml::Bool(b) => b.to_string(),
                        Yaml::Float(f) => f.to_string(),
                        Yaml::Null => "null".to_string(),
                        _ => {
                            self.error.get_or_insert(
                                Error::new(
                                    ErrorKind::Yaml,
                                    "a mapping key must be a scalar, not a list or mapping",
                                )
                                .at(&key.span),
                            );
                            return;
                        }
                    };
                    if key_str == "<<" {
                        // YAML merge key: bring in the entries of the aliased mapping(s).
                        let sources = match node.value {
                            Yaml::Seq(items) => items,
                            _ => vec![node],
                        };
                        for src in sources {
                            for (k, v) in src.entries() {
                                if !entries.iter().any(|(ek, _)| ek == k) {
                                    entries.push((k.clone(), v.clone()));
                                    merged.push(k.clone());
                                }
                            }
                        }
                        return;
                    }
                    if let Some(i) = merged.iter().position(|k| *k == key_str) {
                        // An explicit key overrides one brought in by a merge.
                        merged.remove(i);
                        entries.retain(|(k, _)| *k != key_str);
                    } else if entries.iter().any(|(k, _)| *k == key_str) {
                        self.error.get_or_insert(
                            Error::new(ErrorKind::Yaml, format!("duplicate key `{}`", key_str))
                                .at(&key.span)
                                .help("each key may appear once in a mapping; remove or rename one of them"),
                        );
                        return;
                    }
                    entries.push((key_str, node));
                }
            },
        }
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
                self.stack.push(Frame::Seq(Vec::new(), span, anchor));
            }
            Event::MappingStart(anchor, _) => {
                let span = self.span(mark);
                self.stack
                    .push(Frame::Map(Vec::new(), None, Vec::new(), span, anchor));
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
                if let Some(Frame::Map(entries, _, _, span, anchor)) = self.stack.pop() {
                    self.push_node(
                        Node {
                            value: Yaml::Map(entries),
                            span,
                        },
                        anchor,
                    );
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let span = self.span(mark);
                let value = resolve_scalar(text, style, tag.as_ref());
                self.push_node(Node { value, span }, anchor);
            }
            Event::Alias(id) => {
                let found = self
                    .anchors
                    .iter()
                    .rev()
                    .find(|(a, _)| *a == id)
                    .map(|(_, n)| n.clone());
                match found {
                    Some(mut node) => {
                        node.span = self.span(mark);
                        self.push_node(node, 0);
                    }
                    None => {
                        let span = self.span(mark);
                        self.error = Some(
                            Error::new(ErrorKind::Yaml, "alias to an unknown anchor").at(&span),
                        );
                    }
                }
            }
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

    #[test]
    fn errors_have_positions() {
        let e = parse_str("t.yaml", "a: 1\na: 2\n").unwrap_err();
        assert!(e.render().contains("t.yaml:2:1"), "{}", e.render());
        let e = parse_str("t.yaml", "a: [1, 2\nb: 3\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Yaml);
        assert!(e.span.is_some());
    }
}
