//! Ansible's `key=value` argument strings (`file: path=/x state=touch`), split with
//! its quoting rules, so free-form task lines mean what they mean under Ansible.

use serde_json::{Map, Value};

use crate::ansible::{join_args, split_args};
use crate::vars::input::{decode_escapes, unquote as unquote_ansible};

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

/// ansible-core's `parse_kv(args, check_raw)`. Each piece of [`split_args`] that
/// holds an unescaped `=` past its first character is `key=value` (backslash escapes
/// decoded, value stripped and unquoted); the rest are joined back into `_raw_params`
/// with their original spacing and newlines. With `check_raw` (command, shell, raw,
/// script) only the keys of [`COMMAND_PARAMS`] count as arguments: any other `k=v` word,
/// on any line, stays in the command text unchanged. Unbalanced quotes are not an error
/// here (see [`split_args`]).
pub fn parse_kv_check_raw(args: &str, check_raw: bool) -> Map<String, Value> {
    let mut options = Map::new();
    let mut raw_params: Vec<String> = Vec::new();
    for orig in split_args(args).0 {
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

/// The words of [`split_args`] without the whitespace each piece keeps.
fn words(s: &str) -> Vec<String> {
    split_args(s)
        .0
        .into_iter()
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Parses `k=v` pairs. With `free_form`, words that are not `k=v` (or whose key is not
/// one a free-form module accepts) are joined into `_raw_params`.
pub fn parse_kv(s: &str, free_form: bool) -> Map<String, Value> {
    let mut params = Map::new();
    let words = words(s);
    if free_form
        && !words
            .iter()
            .any(|w| RAW_PARAMS.iter().any(|k| w.starts_with(&format!("{}=", k))))
    {
        // Nothing to extract: keep the text exactly as written (newlines, spacing).
        params.insert("_raw_params".into(), Value::String(s.to_string()));
        return params;
    }
    let mut raw: Vec<String> = Vec::new();
    for word in words {
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
            assert!(!split_args(text).1, "{}", text);
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
        let (pieces, balanced) = split_args(text);
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
