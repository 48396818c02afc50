//! PyYAML's `yaml.dump` (the emitter's scalar analysis and styles, block and flow
//! collections), byte for byte, for `to_yaml`/`to_nice_yaml`.

use std::sync::OnceLock;

use serde_json::Value as J;

use super::py_float_repr;

/// Options of PyYAML's `yaml.dump` that Ansible's `to_yaml`/`to_nice_yaml` pass or accept.
#[derive(Debug, Clone)]
pub struct YamlOptions {
    /// `indent` (PyYAML's default 2; `to_nice_yaml` uses 4).
    pub indent: usize,
    /// `default_flow_style`: `None` puts collections of scalars in flow style.
    pub flow_style: Option<bool>,
    /// `sort_keys` (PyYAML's default is true).
    pub sort_keys: bool,
    /// `width`: long scalars are folded past this column.
    pub width: usize,
    /// `explicit_start`: begin with `---`.
    pub explicit_start: bool,
}

impl Default for YamlOptions {
    fn default() -> Self {
        YamlOptions {
            indent: 2,
            flow_style: None,
            sort_keys: true,
            width: 80,
            explicit_start: false,
        }
    }
}

/// Serialises data as `yaml.dump(value, allow_unicode=True, **options)` does.
pub fn dump_yaml(v: &J, o: &YamlOptions) -> String {
    let indent = if (2..10).contains(&o.indent) {
        o.indent
    } else {
        2
    };
    let width = if o.width > indent * 2 { o.width } else { 80 };
    let mut e = Emitter {
        out: String::new(),
        best_indent: indent,
        best_width: width,
        flow_style: o.flow_style,
        sort_keys: o.sort_keys,
        indent: None,
        indents: Vec::new(),
        flow_level: 0,
        column: 0,
        whitespace: true,
        indention: true,
        open_ended: false,
        root_context: false,
        simple_key_context: false,
    };
    if o.explicit_start {
        e.write_indicator("---", true, false, false);
    }
    e.node(v, true, false, false, false);
    e.write_indent();
    if e.open_ended {
        e.write_indicator("...", true, false, false);
        e.write_indent();
    }
    e.out
}

struct Emitter {
    out: String,
    best_indent: usize,
    best_width: usize,
    flow_style: Option<bool>,
    sort_keys: bool,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    flow_level: usize,
    column: usize,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
    root_context: bool,
    simple_key_context: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_space_or_break(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(c, '\0' | ' ' | '\t' | '\r') || is_break(c),
    }
}

#[derive(Default)]
struct Analysis {
    empty: bool,
    multiline: bool,
    allow_flow_plain: bool,
    allow_block_plain: bool,
    allow_single_quoted: bool,
}

/// PyYAML's `Emitter.analyze_scalar` (allow_unicode=True).
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_flow_plain: false,
            allow_block_plain: true,
            allow_single_quoted: true,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    let (mut block_ind, mut flow_ind, mut line_breaks, mut special) = (false, false, false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut prev_space, mut prev_break) =
        (false, false, false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let mut preceded_ws = true;
    let mut followed_ws = n == 1 || is_space_or_break(chars.get(1).copied());
    for (i, &ch) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) {
                flow_ind = true;
                block_ind = true;
            }
            if ch == '?' || ch == ':' {
                flow_ind = true;
                if followed_ws {
                    block_ind = true;
                }
            }
            if ch == '-' && followed_ws {
                flow_ind = true;
                block_ind = true;
            }
        } else {
            if ",?[]{}".contains(ch) {
                flow_ind = true;
            }
            if ch == ':' {
                flow_ind = true;
                if followed_ws {
                    block_ind = true;
                }
            }
            if ch == '#' && preceded_ws {
                flow_ind = true;
                block_ind = true;
            }
        }
        if is_break(ch) {
            line_breaks = true;
        }
        if !(ch == '\n' || (' '..='~').contains(&ch)) {
            let printable_unicode = (ch == '\u{85}'
                || ('\u{A0}'..='\u{D7FF}').contains(&ch)
                || ('\u{E000}'..='\u{FFFD}').contains(&ch)
                || ('\u{10000}'..'\u{10FFFF}').contains(&ch))
                && ch != '\u{FEFF}';
            if !printable_unicode {
                special = true;
            }
        }
        if ch == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == n - 1 {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break(ch) {
            if i == 0 {
                leading_break = true;
            }
            if i == n - 1 {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_space = false;
            prev_break = true;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_ws = is_space_or_break(Some(ch));
        followed_ws = i + 2 >= n || is_space_or_break(chars.get(i + 2).copied());
    }
    let mut a = Analysis {
        empty: false,
        multiline: line_breaks,
        allow_flow_plain: true,
        allow_block_plain: true,
        allow_single_quoted: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if break_space {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
    }
    if space_break || special {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
        a.allow_single_quoted = false;
    }
    if line_breaks {
        a.allow_flow_plain = false;
        a.allow_block_plain = false;
    }
    if flow_ind {
        a.allow_flow_plain = false;
    }
    if block_ind {
        a.allow_block_plain = false;
    }
    a
}

/// True when PyYAML would read the plain scalar back as a string (its implicit resolvers).
pub fn plain_is_str(s: &str) -> bool {
    static RES: OnceLock<Vec<regex::Regex>> = OnceLock::new();
    let res = RES.get_or_init(|| {
        [
            r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
            r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
            r"^(?:<<)$",
            r"^(?:~|null|Null|NULL|)$",
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
            r"^(?:=)$",
        ]
        .iter()
        .filter_map(|r| regex::Regex::new(r).ok())
        .collect()
    });
    !res.iter().any(|r| r.is_match(s))
}

#[derive(PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
}

impl Emitter {
    fn write(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        self.indent = match self.indent {
            None => Some(if flow { self.best_indent } else { 0 }),
            Some(i) if !indentless => Some(i + self.best_indent),
            Some(i) => Some(i),
        };
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(None);
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, whitespace: bool, indention: bool) {
        if self.whitespace || !need_ws {
            self.write(ind);
        } else {
            self.write(&format!(" {}", ind));
        }
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
        self.open_ended = false;
    }

    fn write_line_break(&mut self) {
        self.out.push('\n');
        self.whitespace = true;
        self.indention = true;
        self.column = 0;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.write_line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            let pad = " ".repeat(indent - self.column);
            self.write(&pad);
        }
    }

    fn is_flow(&self, v: &J) -> bool {
        let children: Vec<&J> = match v {
            J::Array(a) => a.iter().collect(),
            J::Object(m) => m.values().collect(),
            _ => return false,
        };
        if children.is_empty() || self.flow_level > 0 {
            return true;
        }
        match self.flow_style {
            Some(f) => f,
            None => children.iter().all(|c| !c.is_array() && !c.is_object()),
        }
    }

    fn entries<'a>(&self, m: &'a serde_json::Map<String, J>) -> Vec<(&'a String, &'a J)> {
        let mut e: Vec<(&String, &J)> = m.iter().collect();
        if self.sort_keys {
            e.sort_by(|a, b| a.0.cmp(b.0));
        }
        e
    }

    fn node(&mut self, v: &J, root: bool, _sequence: bool, mapping: bool, simple_key: bool) {
        self.root_context = root;
        self.simple_key_context = simple_key;
        match v {
            J::Array(items) => {
                if self.is_flow(v) {
                    self.write_indicator("[", true, true, false);
                    self.flow_level += 1;
                    self.increase_indent(true, false);
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            self.write_indicator(",", false, false, false);
                        }
                        if self.column > self.best_width {
                            self.write_indent();
                        }
                        self.node(item, false, true, false, false);
                    }
                    self.pop_indent();
                    self.flow_level -= 1;
                    self.write_indicator("]", false, false, false);
                } else {
                    let indentless = mapping && !self.indention;
                    self.increase_indent(false, indentless);
                    for item in items {
                        self.write_indent();
                        self.write_indicator("-", true, false, true);
                        self.node(item, false, true, false, false);
                    }
                    self.pop_indent();
                }
            }
            J::Object(m) => {
                let entries = self.entries(m);
                if self.is_flow(v) {
                    self.write_indicator("{", true, true, false);
                    self.flow_level += 1;
                    self.increase_indent(true, false);
                    for (i, (k, val)) in entries.into_iter().enumerate() {
                        if i > 0 {
                            self.write_indicator(",", false, false, false);
                        }
                        if self.column > self.best_width {
                            self.write_indent();
                        }
                        if simple_key_ok(k) {
                            self.scalar_str(k, false, true);
                            self.write_indicator(":", false, false, false);
                        } else {
                            self.write_indicator("?", true, false, false);
                            self.scalar_str(k, false, false);
                            if self.column > self.best_width {
                                self.write_indent();
                            }
                            self.write_indicator(":", true, false, false);
                        }
                        self.node(val, false, false, true, false);
                    }
                    self.pop_indent();
                    self.flow_level -= 1;
                    self.write_indicator("}", false, false, false);
                } else {
                    self.increase_indent(false, false);
                    for (k, val) in entries {
                        self.write_indent();
                        if simple_key_ok(k) {
                            self.scalar_str(k, false, true);
                            self.write_indicator(":", false, false, false);
                        } else {
                            self.write_indicator("?", true, false, true);
                            self.scalar_str(k, false, false);
                            self.write_indent();
                            self.write_indicator(":", true, false, true);
                        }
                        self.node(val, false, false, true, false);
                    }
                    self.pop_indent();
                }
            }
            J::String(s) => self.scalar_str(s, root, simple_key),
            other => {
                let text = match other {
                    J::Null => "null".to_string(),
                    J::Bool(b) => if *b { "true" } else { "false" }.to_string(),
                    J::Number(n) if n.is_f64() => yaml_float(n.as_f64().unwrap_or(0.0)),
                    J::Number(n) => n.to_string(),
                    _ => String::new(),
                };
                self.increase_indent(true, false);
                self.root_context = root;
                self.write_plain(&text, !simple_key);
                self.pop_indent();
            }
        }
    }

    fn scalar_str(&mut self, s: &str, root: bool, simple_key: bool) {
        self.root_context = root;
        self.simple_key_context = simple_key;
        let a = analyze(s);
        let style = if plain_is_str(s)
            && !(simple_key && (a.empty || a.multiline))
            && ((self.flow_level > 0 && a.allow_flow_plain)
                || (self.flow_level == 0 && a.allow_block_plain))
        {
            Style::Plain
        } else if a.allow_single_quoted && !(simple_key && a.multiline) {
            Style::Single
        } else {
            Style::Double
        };
        self.increase_indent(true, false);
        match style {
            Style::Plain => self.write_plain(s, !simple_key),
            Style::Single => self.write_single(s, !simple_key),
            Style::Double => self.write_double(s, !simple_key),
        }
        self.pop_indent();
    }

    fn write_plain(&mut self, text: &str, split: bool) {
        if self.root_context {
            self.open_ended = true;
        }
        if text.is_empty() {
            return;
        }
        if !self.whitespace {
            self.write(" ");
        }
        self.whitespace = false;
        self.indention = false;
        let chars: Vec<char> = text.chars().collect();
        let (mut spaces, mut start) = (false, 0usize);
        for end in 0..=chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > self.best_width && split {
                        self.write_indent();
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        let piece: String = chars[start..end].iter().collect();
                        self.write(&piece);
                    }
                    start = end;
                }
            } else if ch.is_none() || ch == Some(' ') {
                let piece: String = chars[start..end].iter().collect();
                self.write(&piece);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
            }
        }
    }

    fn write_single(&mut self, text: &str, split: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        let (mut spaces, mut breaks, mut start) = (false, false, 0usize);
        for end in 0..=n {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end
                        && self.column > self.best_width
                        && split
                        && start != 0
                        && end != n
                    {
                        self.write_indent();
                    } else {
                        let piece: String = chars[start..end].iter().collect();
                        self.write(&piece);
                    }
                    start = end;
                }
            } else if breaks {
                if ch.is_none() || !is_break(ch.unwrap_or(' ')) {
                    if chars[start] == '\n' {
                        self.write_line_break();
                    }
                    for _ in start..end {
                        self.write_line_break();
                    }
                    self.write_indent();
                    start = end;
                }
            } else if (ch.is_none()
                || matches!(ch, Some(' ') | Some('\''))
                || is_break(ch.unwrap_or(' ')))
                && start < end
            {
                let piece: String = chars[start..end].iter().collect();
                self.write(&piece);
                start = end;
            }
            if ch == Some('\'') {
                self.write("''");
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(c);
            }
        }
        self.write_indicator("'", false, false, false);
    }

    fn write_double(&mut self, text: &str, split: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        let mut start = 0usize;
        for end in 0..=n {
            let ch = chars.get(end).copied();
            let needs_escape = match ch {
                None => true,
                Some(c) => {
                    "\"\\\u{85}\u{2028}\u{2029}\u{FEFF}".contains(c)
                        || !((' '..='~').contains(&c)
                            || ('\u{A0}'..='\u{D7FF}').contains(&c)
                            || ('\u{E000}'..='\u{FFFD}').contains(&c))
                }
            };
            if needs_escape {
                if start < end {
                    let piece: String = chars[start..end].iter().collect();
                    self.write(&piece);
                    start = end;
                }
                if let Some(c) = ch {
                    let esc = match c {
                        '\0' => "\\0".to_string(),
                        '\u{07}' => "\\a".into(),
                        '\u{08}' => "\\b".into(),
                        '\t' => "\\t".into(),
                        '\n' => "\\n".into(),
                        '\u{0B}' => "\\v".into(),
                        '\u{0C}' => "\\f".into(),
                        '\r' => "\\r".into(),
                        '\u{1B}' => "\\e".into(),
                        '"' => "\\\"".into(),
                        '\\' => "\\\\".into(),
                        '\u{85}' => "\\N".into(),
                        '\u{A0}' => "\\_".into(),
                        '\u{2028}' => "\\L".into(),
                        '\u{2029}' => "\\P".into(),
                        c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
                        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
                        c => format!("\\U{:08X}", c as u32),
                    };
                    self.write(&esc);
                    start = end + 1;
                }
            }
            if 0 < end
                && end + 1 < n
                && (ch == Some(' ') || start >= end)
                && self.column + (end.saturating_sub(start)) > self.best_width
                && split
            {
                let mut piece: String = chars[start.min(end)..end].iter().collect();
                piece.push('\\');
                if start < end {
                    start = end;
                }
                self.write(&piece);
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if chars.get(start) == Some(&' ') {
                    self.write("\\");
                }
            }
        }
        self.write_indicator("\"", false, false, false);
    }
}

fn simple_key_ok(k: &str) -> bool {
    k.chars().count() < 128 && !k.chars().any(is_break)
}

fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    let r = py_float_repr(f);
    if !r.contains('.') && r.contains('e') {
        r.replacen('e', ".0e", 1)
    } else {
        r
    }
}
