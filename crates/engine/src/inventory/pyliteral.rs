//! Python's `ast.literal_eval` for INI inventory values: Ansible turns `port=22`,
//! `on=True`, `ports=[80, 443]` into numbers, booleans and lists that way, and keeps any
//! value that is not a Python literal (`yes`, `0755`, `a b`) as the string it was.
//!
//! The subset is what `literal_eval` accepts: numbers (with a sign, `_`, hex/octal/binary,
//! floats), strings (quotes, prefixes, escapes, adjacent strings concatenated), `True`,
//! `False`, `None`, lists, tuples and sets (as lists) and dicts, and trailing `#` comments.

use serde_json::{Map, Number, Value};

/// The value of `text` as `ast.literal_eval` sees it, or `None` when it is not a literal
/// (the caller then keeps the text as a string).
pub(super) fn literal_eval(text: &str) -> Option<Value> {
    let mut p = Parser {
        s: text.trim_start_matches([' ', '\t']).as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.tuple_or_expr(true)?;
    p.skip_ws();
    (p.i == p.s.len()).then_some(v)
}

/// How deep containers may nest: deeper is not a literal (Python's own limit is higher,
/// but an inventory value nested this deep is a mistake, not data).
const MAX_DEPTH: usize = 100;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Skips blanks and a `#` comment (to the end: values are one line).
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => self.i += 1,
                b'#' => self.i = self.s.len(),
                _ => break,
            }
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// `a, b` at the top or inside parentheses is a tuple (a list here).
    fn tuple_or_expr(&mut self, top: bool) -> Option<Value> {
        let first = self.expr()?;
        self.skip_ws();
        if self.peek() != Some(b',') {
            return Some(first);
        }
        let mut items = vec![first];
        while self.eat(b',') {
            self.skip_ws();
            let end = if top { None } else { Some(b')') };
            if self.peek().is_none() || self.peek() == end {
                break;
            }
            items.push(self.expr()?);
        }
        Some(Value::Array(items))
    }

    fn expr(&mut self) -> Option<Value> {
        self.skip_ws();
        let c = self.peek()?;
        match c {
            b'[' | b'(' | b'{' => {
                if self.depth >= MAX_DEPTH {
                    return None;
                }
                self.depth += 1;
                self.i += 1;
                let v = match c {
                    b'[' => self.seq(b']'),
                    b'(' => self.paren(),
                    _ => self.brace(),
                };
                self.depth -= 1;
                v
            }
            b'-' | b'+' => {
                self.i += 1;
                self.skip_ws();
                let n = self.number()?;
                if c == b'+' {
                    return Some(n);
                }
                match n {
                    Value::Number(n) => {
                        if let Some(i) = n.as_i64() {
                            Some(Value::from(-i))
                        } else {
                            Number::from_f64(-n.as_f64()?).map(Value::Number)
                        }
                    }
                    _ => None,
                }
            }
            b'0'..=b'9' | b'.' => self.number(),
            b'\'' | b'"' => self.strings(),
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.i;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    self.i += 1;
                }
                let word = &self.s[start..self.i];
                // A string prefix (`r'…'`, `b"…"`, `u'…'`).
                if matches!(self.peek(), Some(b'\'' | b'"')) && word.len() <= 2 {
                    let w = word.to_ascii_lowercase();
                    if matches!(&w[..], b"r" | b"u" | b"b" | b"br" | b"rb") {
                        self.i = start;
                        return self.strings();
                    }
                    return None;
                }
                match word {
                    b"True" => Some(Value::Bool(true)),
                    b"False" => Some(Value::Bool(false)),
                    b"None" => Some(Value::Null),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Items up to `end`, with an optional trailing comma.
    fn seq(&mut self, end: u8) -> Option<Value> {
        let mut items = Vec::new();
        loop {
            if self.eat(end) {
                return Some(Value::Array(items));
            }
            items.push(self.expr()?);
            if !self.eat(b',') {
                return self.eat(end).then_some(Value::Array(items));
            }
        }
    }

    /// `()`, `(x)` (just x) or a tuple.
    fn paren(&mut self) -> Option<Value> {
        if self.eat(b')') {
            return Some(Value::Array(Vec::new()));
        }
        let v = self.tuple_or_expr(false)?;
        self.eat(b')').then_some(v)
    }

    /// A dict (`{}`, `{k: v}`) or a set (`{a, b}`, a list here).
    fn brace(&mut self) -> Option<Value> {
        if self.eat(b'}') {
            return Some(Value::Object(Map::new()));
        }
        let first = self.expr()?;
        if !self.eat(b':') {
            let mut items = vec![first];
            loop {
                if !self.eat(b',') {
                    return self.eat(b'}').then_some(Value::Array(items));
                }
                if self.eat(b'}') {
                    return Some(Value::Array(items));
                }
                items.push(self.expr()?);
            }
        }
        let mut map = Map::new();
        let mut key = first;
        loop {
            let value = self.expr()?;
            map.insert(key_text(&key)?, value);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(Value::Object(map));
            }
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            key = self.expr()?;
            if !self.eat(b':') {
                return None;
            }
        }
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
            || (self.i > start
                && matches!(self.peek(), Some(b'+' | b'-'))
                && matches!(self.s[self.i - 1], b'e' | b'E')
                && !self.s[start..].starts_with(b"0x")
                && !self.s[start..].starts_with(b"0X"))
        {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        parse_number(text)
    }

    /// One or more adjacent string literals, concatenated.
    fn strings(&mut self) -> Option<Value> {
        let mut out = String::new();
        loop {
            self.skip_ws();
            let start = self.i;
            let mut raw = false;
            while let Some(c) = self.peek() {
                match c {
                    b'r' | b'R' => raw = true,
                    b'u' | b'U' | b'b' | b'B' => {}
                    _ => break,
                }
                self.i += 1;
            }
            match self.peek() {
                Some(q @ (b'\'' | b'"')) => out.push_str(&self.string(q, raw)?),
                _ => {
                    self.i = start;
                    return Some(Value::String(out));
                }
            }
        }
    }

    /// One quoted string (the opening quote is next), single or triple quoted.
    fn string(&mut self, q: u8, raw: bool) -> Option<String> {
        let triple = self.s[self.i..].starts_with(&[q, q, q]);
        self.i += if triple { 3 } else { 1 };
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek()?;
            if c == q && (!triple || self.s[self.i..].starts_with(&[q, q, q])) {
                self.i += if triple { 3 } else { 1 };
                return String::from_utf8(out).ok();
            }
            if (c == b'\n') && !triple {
                return None;
            }
            self.i += 1;
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let e = self.peek()?;
            self.i += 1;
            if raw {
                out.push(b'\\');
                out.push(e);
                continue;
            }
            let mut put = |ch: char| {
                let mut b = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
            };
            match e {
                b'\n' => {}
                b'\\' | b'\'' | b'"' => put(e as char),
                b'n' => put('\n'),
                b't' => put('\t'),
                b'r' => put('\r'),
                b'a' => put('\x07'),
                b'b' => put('\x08'),
                b'f' => put('\x0c'),
                b'v' => put('\x0b'),
                b'0'..=b'7' => {
                    let mut n = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                n = n * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    put(char::from_u32(n)?);
                }
                b'x' | b'u' | b'U' => {
                    let len = match e {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let hex = std::str::from_utf8(self.s.get(self.i..self.i + len)?).ok()?;
                    let n = u32::from_str_radix(hex, 16).ok()?;
                    self.i += len;
                    put(char::from_u32(n)?);
                }
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
        }
    }
}

/// A dict key as a JSON key: strings as they are, numbers and the constants as Python
/// prints them.
fn key_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(true) => Some("True".into()),
        Value::Bool(false) => Some("False".into()),
        Value::Null => Some("None".into()),
        _ => None,
    }
}

/// A Python number literal: decimal (no leading zeros), `0x`/`0o`/`0b`, floats; `_`
/// between digits.
fn parse_number(text: &str) -> Option<Value> {
    if text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = lower.strip_prefix(prefix) {
            let digits = digits.strip_prefix('_').unwrap_or(digits).replace('_', "");
            return i64::from_str_radix(&digits, radix).ok().map(Value::from);
        }
    }
    let clean = lower.replace('_', "");
    if clean.bytes().all(|b| b.is_ascii_digit()) {
        if clean.len() > 1 && clean.starts_with('0') && clean.bytes().any(|b| b != b'0') {
            return None;
        }
        return clean.parse::<i64>().ok().map(Value::from);
    }
    let valid_float = clean
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'+' | b'-'))
        && clean.bytes().any(|b| b.is_ascii_digit());
    if !valid_float {
        return None;
    }
    let f: f64 = clean.parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::literal_eval;
    use serde_json::json;

    #[test]
    fn scalars() {
        assert_eq!(literal_eval("1"), Some(json!(1)));
        assert_eq!(literal_eval("-5"), Some(json!(-5)));
        assert_eq!(literal_eval("1_000"), Some(json!(1000)));
        assert_eq!(literal_eval("0x1f"), Some(json!(31)));
        assert_eq!(literal_eval("1e3"), Some(json!(1000.0)));
        assert_eq!(literal_eval("1.5"), Some(json!(1.5)));
        assert_eq!(literal_eval(".5"), Some(json!(0.5)));
        assert_eq!(literal_eval("True"), Some(json!(true)));
        assert_eq!(literal_eval("None"), Some(json!(null)));
        assert_eq!(literal_eval("5 # port"), Some(json!(5)));
        assert_eq!(literal_eval("  7"), Some(json!(7)));
    }

    #[test]
    fn not_literals_stay_strings() {
        for s in [
            "yes",
            "0755",
            "hello # x",
            "a b",
            "1.2.3",
            "--5",
            "true",
            "1j",
            "f'x'",
            "[1,",
        ] {
            assert_eq!(literal_eval(s), None, "{s}");
        }
    }

    #[test]
    fn strings_and_containers() {
        assert_eq!(literal_eval("'a' 'b'"), Some(json!("ab")));
        assert_eq!(literal_eval(r#""x\ty""#), Some(json!("x\ty")));
        assert_eq!(literal_eval(r"r'a\n'"), Some(json!("a\\n")));
        assert_eq!(
            literal_eval("[1, 'a', [True]]"),
            Some(json!([1, "a", [true]]))
        );
        assert_eq!(literal_eval("(1,)"), Some(json!([1])));
        assert_eq!(literal_eval("(1)"), Some(json!(1)));
        assert_eq!(literal_eval("1, 2"), Some(json!([1, 2])));
        assert_eq!(
            literal_eval("{'k': 1, 2: [3],}"),
            Some(json!({"k": 1, "2": [3]}))
        );
        assert_eq!(literal_eval("{1, 2}"), Some(json!([1, 2])));
        assert_eq!(literal_eval("{}"), Some(json!({})));
        assert_eq!(literal_eval(&"[".repeat(500)), None);
    }
}
