//! Ansible's `key=value` argument strings (`file: path=/x state=touch`), split with
//! its quoting rules, so free-form task lines mean what they mean under Ansible.

use serde_json::{Map, Value};

use crate::vars::input::{decode_escapes, unquote as unquote_ansible};

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

/// The `key=value` words ansible-core's `parse_kv(check_raw=True)` takes out of a command
/// line as module arguments (its fixed list in `parsing/splitter.py`); every other `k=v`
/// word (`name=foo` in a shell script, `cmd=x`, `argv=y`) stays part of the command.
const COMMAND_PARAMS: &[&str] = &[
    "creates",
    "removes",
    "chdir",
    "executable",
    "warn",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

/// Ansible's `split_args` (`parsing/splitter.py`), step for step: splits on single spaces
/// and newlines, then glues back the pieces that fall inside quotes or a Jinja
/// `{{ }}`/`{% %}`/`{# #}` block. The pieces keep the whitespace they were split on (a run
/// of spaces stays on the piece before it, a newline ends the piece before it), so that
/// [`join_args`] rebuilds the text as written; a lone `\` outside quotes is a line
/// continuation and is dropped together with its line's newline.
///
/// The flag is false when a quote or block is still open at the end. Ansible then fails
/// ("failed at splitting arguments, either an unbalanced jinja2 block or quotes"); kk
/// keeps the pieces, where everything from the stray quote on is one piece of command
/// text, so a script with an apostrophe in a comment still runs as the shell reads it.
pub fn split_args_ansible(args: &str) -> (Vec<String>, bool) {
    let mut params: Vec<String> = Vec::new();
    if args.is_empty() {
        return (params, true);
    }
    let items: Vec<&str> = args.split('\n').collect();
    let mut quote_char: Option<char> = None;
    let mut inside_quotes = false;
    let (mut print_depth, mut block_depth, mut comment_depth) = (0i64, 0i64, 0i64);
    for (itemidx, item) in items.iter().enumerate() {
        let mut line_continuation = false;
        for (idx, token) in item.split(' ').enumerate() {
            if token.is_empty() && idx != 0 {
                match params.last_mut() {
                    Some(last) => last.push(' '),
                    None => params.push(" ".to_string()),
                }
                continue;
            }
            if token == "\\" && !inside_quotes {
                line_continuation = true;
                continue;
            }
            let was_inside_quotes = inside_quotes;
            quote_char = quote_state(token, quote_char);
            inside_quotes = quote_char.is_some();
            let in_block = print_depth != 0 || block_depth != 0 || comment_depth != 0;
            let mut appended = false;
            if inside_quotes && !was_inside_quotes && !in_block {
                params.push(token.to_string());
                appended = true;
            } else if in_block || inside_quotes || was_inside_quotes {
                let spacer = if idx > 0 { " " } else { "" };
                match params.last_mut() {
                    Some(last) => {
                        last.push_str(spacer);
                        last.push_str(token);
                    }
                    None => params.push(token.to_string()),
                }
                appended = true;
            }
            for (depth, open, close) in [
                (&mut print_depth, "{{", "}}"),
                (&mut block_depth, "{%", "%}"),
                (&mut comment_depth, "{#", "#}"),
            ] {
                let before = *depth;
                *depth += token.matches(open).count() as i64 - token.matches(close).count() as i64;
                if *depth < 0 {
                    *depth = 0;
                }
                if *depth != before && !appended {
                    params.push(token.to_string());
                    appended = true;
                }
            }
            let in_block = print_depth != 0 || block_depth != 0 || comment_depth != 0;
            if !in_block && !inside_quotes && !appended && !token.is_empty() {
                params.push(token.to_string());
            }
        }
        if items.len() > 1 && itemidx != items.len() - 1 && !line_continuation {
            match params.last_mut() {
                Some(last) => last.push('\n'),
                None => params.push("\n".to_string()),
            }
        }
    }
    let balanced = print_depth == 0 && block_depth == 0 && comment_depth == 0 && !inside_quotes;
    (params, balanced)
}

/// Ansible's `_get_quote_state`: the quote still open after `token`, given the one open
/// before it. A quote character right after a backslash in the same token does not count.
fn quote_state(token: &str, mut quote_char: Option<char>) -> Option<char> {
    let mut prev: Option<char> = None;
    for c in token.chars() {
        if (c == '"' || c == '\'') && prev != Some('\\') {
            match quote_char {
                Some(q) if q == c => quote_char = None,
                Some(_) => {}
                None => quote_char = Some(c),
            }
        }
        prev = Some(c);
    }
    quote_char
}

/// Ansible's `join_args`: the inverse of [`split_args_ansible`] (a space between pieces,
/// none after a piece that ends a line).
pub fn join_args(pieces: &[String]) -> String {
    let mut out = String::new();
    for p in pieces {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(p);
    }
    out
}

/// ansible-core's `parse_kv(args, check_raw)`. Each piece of [`split_args_ansible`] that
/// holds an unescaped `=` past its first character is `key=value` (backslash escapes
/// decoded, value stripped and unquoted); the rest are joined back into `_raw_params`
/// with their original spacing and newlines. With `check_raw` (command, shell, raw,
/// script) only the keys of [`COMMAND_PARAMS`] count as arguments: any other `k=v` word,
/// on any line, stays in the command text unchanged. Unbalanced quotes are not an error
/// here (see [`split_args_ansible`]).
pub fn parse_kv_check_raw(args: &str, check_raw: bool) -> Map<String, Value> {
    let mut options = Map::new();
    let mut raw_params: Vec<String> = Vec::new();
    for orig in split_args_ansible(args).0 {
        let x = decode_escapes(&orig);
        let chars: Vec<char> = x.chars().collect();
        if !chars.contains(&'=') {
            raw_params.push(orig);
            continue;
        }
        // The first `=` past position 0 that is not escaped.
        let Some(pos) = (1..chars.len()).find(|&i| chars[i] == '=' && chars[i - 1] != '\\') else {
            raw_params.push(x.replace("\\=", "="));
            continue;
        };
        let key: String = chars[..pos].iter().collect();
        let value: String = chars[pos + 1..].iter().collect();
        if check_raw && !COMMAND_PARAMS.contains(&key.as_str()) {
            raw_params.push(orig);
        } else {
            options.insert(
                key.trim().to_string(),
                Value::String(unquote_ansible(value.trim()).to_string()),
            );
        }
    }
    if !raw_params.is_empty() {
        options.insert("_raw_params".into(), Value::String(join_args(&raw_params)));
    }
    options
}

/// Parameters of the other free-form modules (`include_tasks`, `include_vars`, `meta`,
/// ...) that may still be given as `key=value`.
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

    /// Expected values are what ansible-core 2.19's `parse_kv(text, check_raw=True)`
    /// returns for the same text (the free-form of command, shell, raw and script).
    #[test]
    fn check_raw_matches_ansible() {
        let cases = [
            (
                "set -e\nname=foo\necho \"$name\"\n",
                json!({"_raw_params": "set -e\nname=foo\necho \"$name\"\n"}),
            ),
            (
                "x=1 y=2 echo $x $y",
                json!({"_raw_params": "x=1 y=2 echo $x $y"}),
            ),
            (
                "ls chdir=/tmp",
                json!({"chdir": "/tmp", "_raw_params": "ls"}),
            ),
            (
                "touch /tmp/a creates=/tmp/a",
                json!({"creates": "/tmp/a", "_raw_params": "touch /tmp/a"}),
            ),
            (
                "echo hi\ncreates=/tmp/foo\n",
                json!({"creates": "/tmp/foo", "_raw_params": "echo hi\n"}),
            ),
            (
                "echo 'chdir=/x' \"creates=/y\" a=\"b c\"",
                json!({"_raw_params": "echo 'chdir=/x' \"creates=/y\" a=\"b c\""}),
            ),
            ("echo a \\\n  b", json!({"_raw_params": "echo a  b"})),
            (
                "  echo   a  \n\n\tb=c  d\n",
                json!({"_raw_params": "  echo   a  \n\n\tb=c  d\n"}),
            ),
            ("echo a\\=b", json!({"_raw_params": "echo a=b"})),
            (
                "echo cmd=x argv=y warn=no",
                json!({"warn": "no", "_raw_params": "echo cmd=x argv=y"}),
            ),
            (
                "chdir='/tmp x' pwd",
                json!({"chdir": "/tmp x", "_raw_params": "pwd"}),
            ),
            (
                "echo {{ a }} b={{ c }} {% if x %}y=1{% endif %}",
                json!({"_raw_params": "echo {{ a }} b={{ c }} {% if x %}y=1{% endif %}"}),
            ),
            (
                "echo 'a\nb' creates=x",
                json!({"creates": "x", "_raw_params": "echo 'a\nb'"}),
            ),
            (
                "echo \\n chdir=/a\\tb",
                json!({"chdir": "/a\tb", "_raw_params": "echo \\n"}),
            ),
            (
                "  chdir=/tmp pwd",
                json!({"chdir": "/tmp", "_raw_params": "  pwd"}),
            ),
            (
                "pwd chdir=/tmp  ",
                json!({"chdir": "/tmp", "_raw_params": "pwd"}),
            ),
            (" =x a= ", json!({"_raw_params": "=x a= "})),
            ("echo x \\", json!({"_raw_params": "echo x"})),
            (
                "stdin=hello cat",
                json!({"stdin": "hello", "_raw_params": "cat"}),
            ),
            ("echo \"a=b\"c=d", json!({"_raw_params": "echo \"a=b\"c=d"})),
            (
                "for i in 1 2; do\n  v=$i\n  echo \"v = $v\"\ndone\nremoves=/nope",
                json!({"removes": "/nope", "_raw_params": "for i in 1 2; do\n  v=$i\n  echo \"v = $v\"\ndone\n"}),
            ),
            ("", json!({})),
            ("   ", json!({"_raw_params": "   "})),
        ];
        for (text, want) in cases {
            assert_eq!(
                Value::Object(parse_kv_check_raw(text, true)),
                want,
                "text: {:?}",
                text
            );
        }
    }

    #[test]
    fn check_raw_unbalanced_keeps_the_text() {
        // Ansible refuses these ("unbalanced jinja2 block or quotes"); kk keeps the text.
        for text in ["echo it's here", "echo {{ x", "echo \"a", "echo '{{ x' }}'"] {
            assert!(!split_args_ansible(text).1, "{}", text);
            assert_eq!(
                Value::Object(parse_kv_check_raw(text, true)),
                json!({ "_raw_params": text })
            );
        }
        // Arguments before the stray quote still count; after it all is command text.
        assert_eq!(
            Value::Object(parse_kv_check_raw(
                "chdir=/tmp echo a \\\n  b\n# the package's sum \\\nname=x creates=/y\n",
                true
            )),
            json!({
                "chdir": "/tmp",
                "_raw_params": "echo a  b\n# the package's sum \\\nname=x creates=/y\n"
            })
        );
    }

    #[test]
    fn split_and_join_keep_the_text() {
        let text = "set -e\n  a=1   b=\"x  y\"\n\n\tif [ \"$a\" ]; then echo '{{ v }}'; fi\n";
        let (pieces, balanced) = split_args_ansible(text);
        assert!(balanced);
        assert_eq!(join_args(&pieces), text);
        // ansible-core's split_args gives exactly these pieces.
        let want = [
            "set",
            "-e\n ",
            "a=1  ",
            "b=\"x  y\"\n\n",
            "\tif",
            "[",
            "\"$a\"",
            "];",
            "then",
            "echo",
            "'{{ v }}';",
            "fi\n",
        ];
        assert_eq!(pieces, want);
    }
}
