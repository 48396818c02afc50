//! Ansible's `key=value` argument strings (`file: path=/x state=touch`), split with
//! its quoting rules, so free-form task lines mean what they mean under Ansible.

use serde_json::{Map, Value};

/// Splits on whitespace outside quotes and outside `{{ }}`/`{% %}`, keeping quotes.
pub fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if quote.is_none() && (c == '{' && matches!(next, Some('{') | Some('%') | Some('#'))) {
            depth += 1;
            cur.push(c);
            cur.push(next.unwrap());
            i += 2;
            continue;
        }
        if quote.is_none() && depth > 0 && matches!(c, '}' | '%' | '#') && next == Some('}') {
            depth -= 1;
            cur.push(c);
            cur.push('}');
            i += 2;
            continue;
        }
        match (quote, c) {
            (None, '\'' | '"') if depth == 0 => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), c) if c == q && !cur.ends_with('\\') => {
                quote = None;
                cur.push(c);
            }
            (None, c) if c.is_whitespace() && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
        i += 1;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn unquote(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// Parameters of free-form modules that may still be given as `key=value`.
const RAW_PARAMS: &[&str] = &[
    "creates",
    "removes",
    "chdir",
    "executable",
    "warn",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
    "argv",
    "cmd",
    "file",
    "name",
    "apply",
];

/// Parses `k=v` pairs. With `free_form`, words that are not `k=v` (or whose key is not
/// one a free-form module accepts) are joined into `_raw_params`.
pub fn parse_kv(s: &str, free_form: bool) -> Map<String, Value> {
    let mut params = Map::new();
    if free_form
        && !split_args(s)
            .iter()
            .any(|w| RAW_PARAMS.iter().any(|k| w.starts_with(&format!("{}=", k))))
    {
        // Nothing to extract: keep the text exactly as written (newlines, spacing).
        params.insert("_raw_params".into(), Value::String(s.to_string()));
        return params;
    }
    let mut raw: Vec<String> = Vec::new();
    for word in split_args(s) {
        match word.find('=') {
            Some(eq) if eq > 0 && !word[..eq].contains(['"', '\'', ' ', '{']) => {
                let key = &word[..eq];
                if free_form && !RAW_PARAMS.contains(&key) {
                    raw.push(word);
                    continue;
                }
                params.insert(key.to_string(), Value::String(unquote(&word[eq + 1..])));
            }
            _ => raw.push(word),
        }
    }
    if !raw.is_empty() {
        let text = if free_form {
            raw.join(" ")
        } else {
            raw.iter().map(|w| unquote(w)).collect::<Vec<_>>().join(" ")
        };
        params.insert("_raw_params".into(), Value::String(text));
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kv_pairs() {
        assert_eq!(
            Value::Object(parse_kv("path=/tmp/x state=touch mode='0644'", false)),
            json!({"path": "/tmp/x", "state": "touch", "mode": "0644"})
        );
        assert_eq!(
            Value::Object(parse_kv("msg=\"hello {{ name }} there\"", false)),
            json!({"msg": "hello {{ name }} there"})
        );
    }

    #[test]
    fn free_form() {
        assert_eq!(
            Value::Object(parse_kv("echo a=b {{ x }} chdir=/tmp", true)),
            json!({"chdir": "/tmp", "_raw_params": "echo a=b {{ x }}"})
        );
        assert_eq!(
            Value::Object(parse_kv("ls -l 'a b'", true)),
            json!({"_raw_params": "ls -l 'a b'"})
        );
    }
}
