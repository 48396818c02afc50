//! Variables from the command line and config files: `-c config.yaml` (KubeKey's
//! `kind: Config`), `-e` (Ansible's extra vars) and `--set` (KubeKey's path grammar).
//!
//! Each returns or fills a plain [`VarMap`]; where it sits in the precedence order
//! (design §3: config is layer 2, `-e` and `--set` layer 11) is the caller's business.

use std::path::Path;

use serde_json::{Map, Number, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::vars::VarMap;
use crate::yaml::Yaml;

/// Reads a `kind: Config` file and returns its `spec`, each top-level key a variable.
pub fn load_config(path: &Path) -> Result<VarMap> {
    let root = crate::yaml::load_file(path)?;
    if !matches!(root.value, Yaml::Map(_)) {
        return Err(root
            .expected("a config mapping")
            .help("a config file is `apiVersion: kubekey.kubesphere.io/v1`, `kind: Config` and `spec: {...}`"));
    }
    match root.get("kind") {
        Some(k) if k.as_str() == Some("Config") => {}
        Some(k) => {
            let found = k.as_str().map(|s| format!("`{}`", s)).unwrap_or_else(|| k.type_name().to_string());
            let mut e = Error::syntax(format!("expected `kind: Config`, found kind {}", found), &k.span);
            if k.as_str() == Some("Inventory") {
                e = e.help("this is an inventory: pass it with `-i`, and the config with `-c`");
            }
            return Err(e);
        }
        None => {
            return Err(Error::syntax("missing `kind: Config`", &root.span)
                .help("a config file is `apiVersion: kubekey.kubesphere.io/v1`, `kind: Config` and `spec: {...}`"))
        }
    }
    let Some(spec) = root.get("spec") else {
        return Err(Error::syntax("missing `spec` in the config file", &root.span)
            .help("put the settings under `spec:`, e.g. `spec: {kubernetes: {kube_version: v1.30.0}}`"));
    };
    match spec.to_value() {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(VarMap::new()),
        _ => Err(spec.expected("a mapping for `spec`")),
    }
}

/// Parses one `-e` argument as Ansible does: `@file` (YAML or JSON, relative to
/// `base_dir`), an inline YAML/JSON mapping (`{"a": 1}`), or `k=v k2="v 2"` pairs
/// whose values stay strings.
pub fn parse_extra_var(arg: &str, base_dir: &Path) -> Result<VarMap> {
    let opt = |msg: String| Error::new(ErrorKind::Options, msg);
    if let Some(file) = arg.strip_prefix('@') {
        let file = file.trim();
        if file.is_empty() {
            return Err(
                opt("-e @: a file name must follow `@`".into()).help("write `-e @vars.yaml`")
            );
        }
        let path = base_dir.join(file);
        // A file that cannot be opened is a bad option (exit 5, as Ansible); one that
        // opens but is not good YAML is a load error with its place (exit 4).
        let node = crate::yaml::load_file(&path).map_err(|e| match e.kind {
            ErrorKind::Io => opt(format!("-e @{}: {}", file, e.message)),
            _ => e,
        })?;
        return match node.to_value() {
            Value::Object(m) => Ok(m),
            Value::Null => Ok(VarMap::new()),
            _ => Err(node.expected(&format!("a mapping of variables in `-e @{}`", file))),
        };
    }
    let trimmed = arg.trim();
    if trimmed.is_empty() {
        return Ok(VarMap::new());
    }
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let node = crate::yaml::parse_str("-e", trimmed).map_err(|e| {
            opt(format!(
                "-e `{}`: not valid JSON or YAML: {}",
                arg, e.message
            ))
            .help("quote the whole argument for the shell: -e '{\"key\": \"value\"}'")
        })?;
        return match node.to_value() {
            Value::Object(m) => Ok(m),
            other => Err(opt(format!(
                "-e `{}`: expected a mapping of variables, found {}",
                arg,
                json_type(&other)
            ))
            .help("write -e '{\"key\": [1, 2]}', or `key=value`")),
        };
    }
    parse_kv(trimmed).map_err(|msg| {
        opt(format!("-e `{}`: {}", arg, msg))
            .help("write `-e key=value`, `-e 'key=\"a value\" other=x'`, `-e '{\"key\": 1}'` or `-e @vars.yaml`")
    })
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Ansible's `parse_kv`: splits `k=v` pairs on whitespace outside quotes and Jinja
/// blocks, decodes backslash escapes, and removes one pair of matching outer quotes
/// from each value. A piece without `=` is an error (there is no free-form here).
pub fn parse_kv(args: &str) -> std::result::Result<VarMap, String> {
    let mut out = Map::new();
    for token in crate::ansible::split_words_strict(args)? {
        let decoded = decode_escapes(&token);
        // The first `=` past position 0 that is not escaped.
        let chars: Vec<char> = decoded.chars().collect();
        let pos = (1..chars.len()).find(|&i| chars[i] == '=' && chars[i - 1] != '\\');
        let Some(pos) = pos else {
            return Err(format!("`{}` is not `key=value`", token));
        };
        let key: String = chars[..pos].iter().collect::<String>().trim().to_string();
        let value: String = chars[pos + 1..].iter().collect();
        out.insert(key, Value::String(unquote(value.trim()).to_string()));
    }
    Ok(out)
}

/// Python's `unicode-escape` for the sequences Ansible decodes: `\\ \' \" \a \b \f \n \r \t \v`,
/// `\xHH`, `\uHHHH`, `\UHHHHHHHH`. Anything else is kept as written.
pub(crate) fn decode_escapes(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 >= chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let simple = match chars[i + 1] {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        let width = match chars[i + 1] {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if width > 0 && i + 2 + width <= chars.len() {
            let hex: String = chars[i + 2..i + 2 + width].iter().collect();
            if hex.chars().all(|c| c.is_ascii_hexdigit()) {
                if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                    i += 2 + width;
                    continue;
                }
            }
        }
        out.push('\\');
        i += 1;
    }
    out
}

/// Removes one pair of matching outer quotes.
pub(crate) fn unquote(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2
        && (b[0] == b'"' || b[0] == b'\'')
        && b[b.len() - 1] == b[0]
        && b[b.len() - 2] != b'\\'
    {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// One step of a `--set` path.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

const SET_FORMS: &str = "`--set key=value`, `--set a.b.c=value`, `--set list[0].name=value`, \
several separated by commas (`--set a=1,b=2`; `\\,` for a literal comma); values may be JSON: \
`--set 'a={\"k\":1}'`, `--set 'l=[1,2]'`";

/// Applies one `--set` argument (KubeKey's grammar) to `target`: comma-separated
/// `path=value` items, where `path` is `a.b[0].c` (maps and lists are created as
/// needed, lists padded with nulls) and `value` is typed: `{..}` a JSON object,
/// `[..]` a JSON array, `true/yes/y`, `false/no/n`, a number, else a string.
///
/// Unlike upstream, `\,` keeps a comma in a value, and commas inside a JSON value
/// do not split it.
pub fn apply_set(target: &mut VarMap, arg: &str) -> Result<()> {
    for item in split_set_items(arg) {
        if item.trim().is_empty() {
            continue;
        }
        let Some(eq) = item.find('=').filter(|i| *i > 0) else {
            return Err(Error::new(
                ErrorKind::Options,
                format!("--set `{}`: expected `key=value`", item),
            )
            .help(SET_FORMS));
        };
        let (path, raw) = (item[..eq].trim(), &item[eq + 1..]);
        let segs = parse_path(path).map_err(|msg| {
            Error::new(
                ErrorKind::Options,
                format!("--set `{}`: bad key `{}`: {}", item, path, msg),
            )
            .help(SET_FORMS)
        })?;
        let value = set_value(raw).map_err(|msg| {
            Error::new(ErrorKind::Options, format!("--set `{}`: {}", item, msg)).help(SET_FORMS)
        })?;
        set_path(target, &segs, value).map_err(|msg| {
            Error::new(ErrorKind::Options, format!("--set `{}`: {}", item, msg)).help(SET_FORMS)
        })?;
    }
    Ok(())
}

/// Splits on commas that are neither escaped (`\,`) nor inside a `{..}`/`[..]` value.
fn split_set_items(arg: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut in_value = false;
    let mut in_str = false;
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '=' if !in_value => {
                in_value = true;
                cur.push(c);
            }
            '"' if in_value && depth > 0 => {
                in_str = !in_str;
                cur.push(c);
            }
            '{' | '[' if in_value && !in_str => {
                depth += 1;
                cur.push(c);
            }
            '}' | ']' if in_value && !in_str && depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut cur));
                in_value = false;
                in_str = false;
            }
            _ => cur.push(c),
        }
    }
    items.push(cur);
    items
}

/// `a.b[0].c` → `[Key a, Key b, Index 0, Key c]`. A purely numeric dotted segment is an
/// index too (as upstream), unless it lands on an existing mapping (see `set_path`).
fn parse_path(path: &str) -> std::result::Result<Vec<Seg>, String> {
    if path.is_empty() {
        return Err("it is empty".into());
    }
    let mut segs = Vec::new();
    for part in path.split('.') {
        if part.is_empty() {
            return Err("empty name between dots".into());
        }
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.contains(']') {
            return Err(format!("`]` without `[` in `{}`", part));
        }
        if !name.is_empty() {
            segs.push(Seg::Key(name.to_string()));
        } else if segs.is_empty() {
            return Err("it must start with a name, not an index".into());
        }
        while !rest.is_empty() {
            let close = rest
                .find(']')
                .ok_or_else(|| format!("unclosed `[` in `{}`", part))?;
            let idx = &rest[1..close];
            let n = idx
                .parse::<usize>()
                .map_err(|_| format!("`[{}]` is not a list index (a whole number)", idx))?;
            segs.push(Seg::Index(n));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!("unexpected `{}` after `]` in `{}`", rest, part));
            }
        }
    }
    if let Some(Seg::Key(k)) = segs.first() {
        if k.bytes().all(|b| b.is_ascii_digit()) {
            return Err("it must start with a name, not a number".into());
        }
    }
    // The same depth a YAML file may nest to: values are walked recursively later.
    if segs.len() > crate::yaml::MAX_DEPTH {
        return Err(format!(
            "it nests more than {} deep",
            crate::yaml::MAX_DEPTH
        ));
    }
    Ok(segs)
}

/// Unescapes a `--set` value: `\\ \, \" \' \n \r \t \b \f`, in one pass.
fn unescape_set(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some(',') => out.push(','),
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Types a `--set` value as KubeKey does.
fn set_value(raw: &str) -> std::result::Result<Value, String> {
    let t = raw.trim();
    if t.starts_with('{') || t.starts_with('[') {
        // JSON: only `\,` is ours to undo; other escapes belong to JSON itself.
        let json = t.replace("\\,", ",");
        let kind = if t.starts_with('{') {
            "object"
        } else {
            "array"
        };
        return serde_json::from_str::<Value>(&json).map_err(|e| {
            format!(
                "value `{}` looks like a JSON {} but does not parse: {}",
                t, kind, e
            )
        });
    }
    let s = unescape_set(raw);
    match s.to_ascii_lowercase().as_str() {
        "true" | "yes" | "y" => return Ok(Value::Bool(true)),
        "false" | "no" | "n" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Value::from(i));
    }
    let numeric = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    if numeric {
        if let Ok(f) = s.parse::<f64>() {
            if f.is_finite() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    return Ok(Value::from(f as i64));
                }
                if let Some(n) = Number::from_f64(f) {
                    return Ok(Value::Number(n));
                }
            }
        }
    }
    Ok(Value::String(s))
}

/// Writes `value` at `segs` inside `target`, creating maps and lists on the way.
fn set_path(target: &mut VarMap, segs: &[Seg], value: Value) -> std::result::Result<(), String> {
    let Some((Seg::Key(first), rest)) = segs.split_first() else {
        return Err("the key must start with a name".into());
    };
    if rest.is_empty() {
        target.insert(first.clone(), value);
        return Ok(());
    }
    let slot = target.entry(first.clone()).or_insert(Value::Null);
    set_in(slot, rest, value, first)
}

fn set_in(
    slot: &mut Value,
    segs: &[Seg],
    value: Value,
    at: &str,
) -> std::result::Result<(), String> {
    let Some((seg, rest)) = segs.split_first() else {
        *slot = value;
        return Ok(());
    };
    // A numeric dotted segment on an existing mapping is a key, not an index.
    let seg = match (seg, &*slot) {
        (Seg::Key(k), Value::Array(_)) if k.bytes().all(|b| b.is_ascii_digit()) => Seg::Index(
            k.parse()
                .map_err(|_| format!("index `{}` is too large", k))?,
        ),
        (Seg::Key(k), Value::Null) if k.bytes().all(|b| b.is_ascii_digit()) => Seg::Index(
            k.parse()
                .map_err(|_| format!("index `{}` is too large", k))?,
        ),
        _ => seg.clone(),
    };
    match seg {
        Seg::Key(k) => {
            if !slot.is_object() {
                if slot.is_array() {
                    return Err(format!(
                        "`{}` is a list; use an index like `{}[0]`, not `.{}`",
                        at, at, k
                    ));
                }
                // A scalar (or nothing) is replaced by a mapping.
                *slot = Value::Object(Map::new());
            }
            let map = slot.as_object_mut().expect("just made an object");
            let child = map.entry(k.clone()).or_insert(Value::Null);
            set_in(child, rest, value, &format!("{}.{}", at, k))
        }
        Seg::Index(i) => {
            if i > 10_000 {
                return Err(format!("index `{}` is too large (at most 10000)", i));
            }
            if !slot.is_array() {
                if slot.is_object() {
                    return Err(format!("`{}` is a mapping; use `.name`, not `[{}]`", at, i));
                }
                *slot = Value::Array(Vec::new());
            }
            let list = slot.as_array_mut().expect("just made an array");
            if list.len() <= i {
                list.resize(i + 1, Value::Null);
            }
            set_in(&mut list[i], rest, value, &format!("{}[{}]", at, i))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn set(args: &[&str]) -> Value {
        let mut m = VarMap::new();
        for a in args {
            apply_set(&mut m, a).unwrap_or_else(|e| panic!("{}", e.render()));
        }
        Value::Object(m)
    }

    fn set_err(arg: &str) -> String {
        let mut m = VarMap::new();
        apply_set(&mut m, arg).unwrap_err().render()
    }

    #[test]
    fn set_paths_and_types() {
        assert_eq!(
            set(&["a.b[1].c=v,n=3,f=1.5,t=yes,F=N,s=hello,e="]),
            json!({"a": {"b": [null, {"c": "v"}]}, "n": 3, "f": 1.5, "t": true, "F": false, "s": "hello", "e": ""})
        );
        assert_eq!(
            set(&["x=1.0,y=1e3,z=-4,v=v1.28.0,big=12345678901234567890"]),
            json!({"x": 1, "y": 1000, "z": -4, "v": "v1.28.0", "big": 12345678901234567890.0})
        );
        assert_eq!(set(&["s=nan,i=inf"]), json!({"s": "nan", "i": "inf"}));
        assert_eq!(
            set(&[
                "kubernetes.kube_version=v1.30.0",
                "kubernetes.cluster_name=c1"
            ]),
            json!({"kubernetes": {"kube_version": "v1.30.0", "cluster_name": "c1"}})
        );
        assert_eq!(set(&["l[0][1]=x"]), json!({"l": [[null, "x"]]}));
        assert_eq!(set(&["l.0.name=x"]), json!({"l": [{"name": "x"}]}));
    }

    #[test]
    fn set_paths_are_bounded() {
        let deep = format!("{}=1", vec!["a"; 20_000].join("."));
        assert!(set_err(&deep).contains("nests more than 1000 deep"));
        let ok = format!("{}=1", vec!["a"; 900].join("."));
        set(&[&ok]);
        assert!(set_err("a[999999999999]=1").contains("--set"));
    }

    #[test]
    fn set_json_values_and_escapes() {
        assert_eq!(
            set(&[r#"a={"k":[1,2],"s":"x,y"},b=[1,2]"#]),
            json!({"a": {"k": [1, 2], "s": "x,y"}, "b": [1, 2]})
        );
        assert_eq!(set(&[r"msg=a\,b,c=d"]), json!({"msg": "a,b", "c": "d"}));
        assert_eq!(
            set(&[r#"m=line1\nline2\t\"q\"\\"#]),
            json!({"m": "line1\nline2\t\"q\"\\"})
        );
        assert_eq!(set(&["a=x=y"]), json!({"a": "x=y"}));
    }

    #[test]
    fn set_merges_into_existing() {
        let mut m = json!({"kubernetes": {"kube_version": "v1.28.0", "kubelet": {"max_pods": 110}}, "l": [1, 2, 3]})
            .as_object()
            .unwrap()
            .clone();
        apply_set(&mut m, "kubernetes.kubelet.max_pods=200,l[1]=9").unwrap();
        assert_eq!(
            Value::Object(m.clone()),
            json!({"kubernetes": {"kube_version": "v1.28.0", "kubelet": {"max_pods": 200}}, "l": [1, 9, 3]})
        );
        let e = apply_set(&mut m, "kubernetes[0]=x").unwrap_err();
        assert!(
            e.message.contains("`kubernetes` is a mapping"),
            "{}",
            e.message
        );
        let e = apply_set(&mut m, "l.x=1").unwrap_err();
        assert!(e.message.contains("`l` is a list"), "{}", e.message);
        // Numeric segment on an existing mapping is a key.
        let mut m = json!({"v": {"1": "a"}}).as_object().unwrap().clone();
        apply_set(&mut m, "v.1=b").unwrap();
        assert_eq!(Value::Object(m), json!({"v": {"1": "b"}}));
    }

    #[test]
    fn set_errors() {
        let e = set_err("novalue");
        assert!(e.contains("--set `novalue`: expected `key=value`"), "{e}");
        assert!(e.contains("help: `--set key=value`"), "{e}");
        assert!(set_err("=v").contains("expected `key=value`"));
        assert!(set_err("a=1,b").contains("--set `b`"));
        assert!(set_err("a..b=1").contains("empty name between dots"));
        assert!(set_err("a[x]=1").contains("`[x]` is not a list index"));
        assert!(set_err("a[1=1").contains("unclosed `[`"));
        assert!(set_err("[0]=1").contains("must start with a name"));
        assert!(set_err("a={bad}").contains("looks like a JSON object but does not parse"));
        // An unclosed JSON value does not silently swallow the items after it.
        assert!(set_err("a=[1,b=2").contains("looks like a JSON array"));
        assert!(set_err("a[99999]=1").contains("too large"));
        let mut m = VarMap::new();
        assert_eq!(apply_set(&mut m, "x").unwrap_err().exit_code(), 5);
        // Empty items (trailing comma) are ignored.
        assert_eq!(set(&["a=1,"]), json!({"a": 1}));
    }

    #[test]
    fn kv_pairs() {
        let d = Path::new(".");
        let v = parse_extra_var(r#"a=1 b="two words" c='x y' d=k=v e=line\nnext"#, d).unwrap();
        assert_eq!(
            Value::Object(v),
            json!({"a": "1", "b": "two words", "c": "x y", "d": "k=v", "e": "line\nnext"})
        );
        let v = parse_extra_var(r#"msg="{{ a }} {{ b }}" x={{ y | default('z') }}"#, d).unwrap();
        assert_eq!(
            Value::Object(v),
            json!({"msg": "{{ a }} {{ b }}", "x": "{{ y | default('z') }}"})
        );
        assert!(parse_extra_var("", d).unwrap().is_empty());
        let e = parse_extra_var("a=1 oops", d).unwrap_err();
        assert!(
            e.render()
                .contains("-e `a=1 oops`: `oops` is not `key=value`"),
            "{}",
            e.render()
        );
        assert_eq!(e.exit_code(), 5);
        let e = parse_extra_var(r#"a="unterminated"#, d).unwrap_err();
        assert!(e.message.contains("unbalanced quotes"), "{}", e.message);
    }

    #[test]
    fn inline_and_file_extra_vars() {
        let d = Path::new(".");
        let v = parse_extra_var(r#"{"a": 1, "b": {"c": [true]}}"#, d).unwrap();
        assert_eq!(Value::Object(v), json!({"a": 1, "b": {"c": [true]}}));
        let v = parse_extra_var("{a: yes, v: 1.28}", d).unwrap();
        assert_eq!(Value::Object(v), json!({"a": true, "v": 1.28}));
        let e = parse_extra_var("[1, 2]", d).unwrap_err();
        assert!(
            e.message
                .contains("expected a mapping of variables, found a list"),
            "{}",
            e.message
        );
        let e = parse_extra_var("{a: [1,", d).unwrap_err();
        assert!(
            e.message.contains("not valid JSON or YAML"),
            "{}",
            e.message
        );

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("v.yaml"), "k: v\nn: {m: 1}\n").unwrap();
        std::fs::write(dir.path().join("v.json"), r#"{"j": [1]}"#).unwrap();
        std::fs::write(dir.path().join("list.yaml"), "- 1\n").unwrap();
        assert_eq!(
            Value::Object(parse_extra_var("@v.yaml", dir.path()).unwrap()),
            json!({"k": "v", "n": {"m": 1}})
        );
        assert_eq!(
            Value::Object(parse_extra_var("@v.json", dir.path()).unwrap()),
            json!({"j": [1]})
        );
        let e = parse_extra_var("@list.yaml", dir.path())
            .unwrap_err()
            .render();
        assert!(
            e.contains("expected a mapping of variables in `-e @list.yaml`, found a list"),
            "{e}"
        );
        assert!(e.contains("list.yaml:1:1"), "{e}");
        let e = parse_extra_var("@missing.yaml", dir.path()).unwrap_err();
        assert!(
            e.message.contains("cannot read") && e.message.contains("missing.yaml"),
            "{}",
            e.message
        );
    }

    #[test]
    fn config_files() {
        let fx = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inventory");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.yaml");
        std::fs::write(&p, "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nspec:\n  kubernetes: {kube_version: v1.30.0}\n  zone: cn\n").unwrap();
        assert_eq!(
            Value::Object(load_config(&p).unwrap()),
            json!({"kubernetes": {"kube_version": "v1.30.0"}, "zone": "cn"})
        );
        let e = load_config(&fx.join("kubekey.yaml")).unwrap_err().render();
        assert!(
            e.contains("expected `kind: Config`, found kind `Inventory`")
                && e.contains("pass it with `-i`"),
            "{e}"
        );
        std::fs::write(&p, "kind: Config\nspec: [1]\n").unwrap();
        let e = load_config(&p).unwrap_err().render();
        assert!(
            e.contains("expected a mapping for `spec`, found a list")
                && e.contains("config.yaml:2:7"),
            "{e}"
        );
        std::fs::write(&p, "kind: Config\n").unwrap();
        assert!(load_config(&p)
            .unwrap_err()
            .message
            .contains("missing `spec`"));
        std::fs::write(&p, "spec: {}\n").unwrap();
        assert!(load_config(&p)
            .unwrap_err()
            .message
            .contains("missing `kind: Config`"));
    }
}
