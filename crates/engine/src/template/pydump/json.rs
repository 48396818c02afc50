//! Python's `json.dumps`: the options Ansible users pass to `to_json`, and its exact text.

use serde_json::Value as J;

use super::py_float_repr;

/// Options of Python's `json.dumps` that Ansible users pass to `to_json`.
#[derive(Debug, Clone)]
pub struct JsonOptions {
    /// `indent`: `None` for one line, else the string put per level.
    pub indent: Option<String>,
    /// `sort_keys`.
    pub sort_keys: bool,
    /// First element of `separators` (between items).
    pub item_sep: String,
    /// Second element of `separators` (between key and value).
    pub key_sep: String,
    /// `ensure_ascii` (Python's default is true).
    pub ensure_ascii: bool,
}

impl Default for JsonOptions {
    fn default() -> Self {
        JsonOptions {
            indent: None,
            sort_keys: false,
            item_sep: ", ".into(),
            key_sep: ": ".into(),
            ensure_ascii: true,
        }
    }
}

/// Serialises data exactly as `json.dumps(value, **options)` does.
pub fn dump_json(v: &J, o: &JsonOptions) -> String {
    let mut out = String::new();
    json_value(v, o, 0, &mut out);
    out
}

fn json_str(s: &str, ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ascii && (c as u32) > 0x7e) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04x}", unit));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_newline(o: &JsonOptions, level: usize, out: &mut String) {
    if let Some(ind) = &o.indent {
        out.push('\n');
        for _ in 0..level {
            out.push_str(ind);
        }
    }
}

fn json_value(v: &J, o: &JsonOptions, level: usize, out: &mut String) {
    match v {
        J::Null => out.push_str("null"),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Number(n) => {
            if n.is_f64() {
                let f = n.as_f64().unwrap_or(0.0);
                out.push_str(&match py_float_repr(f).as_str() {
                    "nan" => "NaN".to_string(),
                    "inf" => "Infinity".to_string(),
                    "-inf" => "-Infinity".to_string(),
                    s => s.to_string(),
                });
            } else {
                out.push_str(&n.to_string());
            }
        }
        J::String(s) => json_str(s, o.ensure_ascii, out),
        J::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&o.item_sep);
                }
                json_newline(o, level + 1, out);
                json_value(item, o, level + 1, out);
            }
            json_newline(o, level, out);
            out.push(']');
        }
        J::Object(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut entries: Vec<(&String, &J)> = m.iter().collect();
            if o.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(&o.item_sep);
                }
                json_newline(o, level + 1, out);
                json_str(k, o.ensure_ascii, out);
                out.push_str(&o.key_sep);
                json_value(val, o, level + 1, out);
            }
            json_newline(o, level, out);
            out.push('}');
        }
    }
}
