//! Ansible's filters on top of minijinja's built-ins.
//!
//! minijinja already behaves as Jinja2 for `default`/`d` (with its boolean second
//! argument, and `default(omit)` through the `omit` global), `sort`/`map`/`selectattr`/
//! `min`/`max`/`sum`/`unique` with `attribute=`, `join`, `format`, `items`, `first`,
//! `last`, `length`, `split` (Python `str.split` semantics), `zip`, `string` and
//! `list`, so those are kept. Replaced here because they differ from Jinja2/Ansible:
//! `bool` (Ansible's yes/no/on/off rules, not truthiness), `int`/`float` (Jinja2 falls
//! back to the default instead of failing) and `replace` (Jinja2's `count` argument).
//!
//! Every filter is also registered under its fully-qualified name
//! (`ansible.builtin.to_json`); minijinja parses dotted filter and test names.

use std::collections::BTreeSet;

use base64::Engine as _;
use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};
use serde_json::Value as J;

use super::pydump::{self, JsonOptions, YamlOptions};

/// Registers every Ansible filter, test and lookup function.
pub fn register(env: &mut Environment<'static>) {
    macro_rules! filter {
        ($name:literal, $f:expr) => {{
            env.add_filter($name, $f);
            env.add_filter(concat!("ansible.builtin.", $name), $f);
        }};
    }
    // Replacements of built-ins whose behaviour differs from Jinja2/Ansible.
    filter!("bool", bool_filter);
    filter!("int", int_filter);
    filter!("float", float_filter);
    filter!("replace", replace);
    // Ansible core.
    filter!("mandatory", mandatory);
    filter!("to_json", to_json);
    filter!("to_nice_json", to_nice_json);
    filter!("from_json", from_json);
    filter!("to_yaml", to_yaml);
    filter!("to_nice_yaml", to_nice_yaml);
    filter!("from_yaml", from_yaml);
    filter!("from_yaml_all", from_yaml_all);
    filter!("combine", combine);
    filter!("dict2items", dict2items);
    filter!("items2dict", items2dict);
    filter!("union", union);
    filter!("intersect", intersect);
    filter!("difference", difference);
    filter!("symmetric_difference", symmetric_difference);
    filter!("flatten", flatten);
    filter!("zip_longest", zip_longest);
    filter!("product", product);
    filter!("regex_search", regex_search);
    filter!("regex_replace", regex_replace);
    filter!("regex_findall", regex_findall);
    filter!("regex_escape", regex_escape);
    filter!("b64encode", b64encode);
    filter!("b64decode", b64decode);
    filter!("hash", hash);
    filter!("checksum", sha1_filter);
    filter!("sha1", sha1_filter);
    filter!("md5", md5_filter);
    filter!("basename", basename);
    filter!("dirname", dirname);
    filter!("splitext", splitext);
    filter!("expanduser", expanduser);
    filter!("path_join", path_join);
    filter!("quote", quote);
    filter!("ternary", ternary);
    filter!("extract", extract);
    filter!("type_debug", type_debug);
    filter!("human_readable", human_readable);
    filter!("human_to_bytes", human_to_bytes);
    filter!("comment", comment);
    filter!("log", log);
    filter!("pow", pow);
    filter!("root", root);
    filter!("subelements", subelements);
    filter!("to_uuid", to_uuid);
    // Jinja2 built-ins, reachable under their documented `ansible.builtin.` names too.
    use minijinja::filters as b;
    macro_rules! alias {
        ($($name:literal => $f:expr),* $(,)?) => {{ $( env.add_filter(concat!("ansible.builtin.", $name), $f); )* }};
    }
    alias!(
        "default" => b::default, "d" => b::default, "map" => b::map, "select" => b::select,
        "reject" => b::reject, "selectattr" => b::selectattr, "rejectattr" => b::rejectattr,
        "join" => b::join, "list" => b::list, "first" => b::first, "last" => b::last,
        "length" => b::length, "count" => b::length, "lower" => b::lower, "upper" => b::upper,
        "sort" => b::sort, "unique" => b::unique, "min" => b::min, "max" => b::max,
        "sum" => b::sum, "dictsort" => b::dictsort, "items" => b::items, "reverse" => b::reverse,
        "trim" => b::trim, "round" => b::round, "abs" => b::abs, "string" => b::string,
        "batch" => b::batch, "slice" => b::slice, "groupby" => b::groupby, "zip" => b::zip,
        "format" => b::format, "indent" => b::indent, "capitalize" => b::capitalize,
        "title" => b::title, "split" => b::split,
    );
    // Python's `dict()`, which also takes a list of pairs: `dict(keys | zip(values))`.
    env.add_function("dict", dict_fn);
    super::jinja_tests::register(env);
    super::ipaddr::register(env);
    super::lookups::register(env);
    super::toml_filters::register(env);
}

// ---------------------------------------------------------------------------
// Shared helpers (also used by the tests, ipaddr and lookup modules).

/// A filter error: `what` is the message, which names the filter and says what was
/// expected and what was found.
pub(crate) fn fail(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

/// Python's type name for a value, as Ansible's messages and `type_debug` show it.
pub(crate) fn py_type(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::Undefined => "AnsibleUndefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

/// Python's `str(value)`: strings as they are, `True`/`None`, floats as `repr`,
/// containers in Python's repr.
pub(crate) fn py_str(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_string();
    }
    if v.kind() == ValueKind::Number && !v.is_integer() {
        if let Ok(f) = f64::try_from(v.clone()) {
            return pydump::py_float_repr(f);
        }
    }
    v.to_string()
}

/// The error strict undefined gives for `value` (naming the variable when minijinja
/// tracks undefined origins), for filters that must reject undefined input.
pub(crate) fn undefined_error(state: &State, value: &Value, filter: &str) -> Error {
    if state.env().debug() {
        if let Err(e) = minijinja::filters::string(state, value) {
            return e;
        }
    }
    Error::new(
        ErrorKind::UndefinedError,
        format!("{}: the input value is undefined", filter),
    )
}

/// Converts a template value to plain data, or says which filter could not.
/// Undefined values, also inside lists and dicts, are errors (as in Ansible).
pub(crate) fn to_plain(state: &State, v: &Value, filter: &str) -> Result<J, Error> {
    if let Some(u) = find_undefined(v, 0) {
        return Err(undefined_error(state, &u, filter));
    }
    serde_json::to_value(v).map_err(|e| {
        fail(format!(
            "{}: cannot convert {} to data: {}",
            filter,
            py_type(v),
            e
        ))
    })
}

/// The first undefined value inside `v` (lists and dicts, a bounded depth).
fn find_undefined(v: &Value, depth: usize) -> Option<Value> {
    if v.is_undefined() {
        return Some(v.clone());
    }
    if depth > 64 {
        return None;
    }
    match v.kind() {
        ValueKind::Seq => v
            .try_iter()
            .ok()?
            .find_map(|i| find_undefined(&i, depth + 1)),
        ValueKind::Map => {
            let keys: Vec<Value> = v.try_iter().ok()?.collect();
            keys.iter()
                .find_map(|k| find_undefined(&v.get_item(k).unwrap_or_default(), depth + 1))
        }
        _ => None,
    }
}

/// Plain data as a template value.
pub(crate) fn from_plain(j: &J) -> Value {
    super::to_mj(j)
}

/// A map value keeping insertion order.
pub(crate) fn map_value(pairs: Vec<(Value, Value)>) -> Value {
    Value::from_object(
        pairs
            .into_iter()
            .collect::<indexmap::IndexMap<Value, Value>>(),
    )
}

/// An optional argument given positionally or by keyword (Python lets either).
pub(crate) fn arg(pos: Option<Value>, kwargs: &Kwargs, name: &str) -> Result<Option<Value>, Error> {
    match pos {
        Some(v) => Ok(Some(v)),
        None => kwargs.get::<Option<Value>>(name),
    }
}

/// The items of a list-like value, or an error naming the filter.
pub(crate) fn items_of(v: &Value, filter: &str, what: &str) -> Result<Vec<Value>, Error> {
    match v.kind() {
        ValueKind::Seq | ValueKind::Iterable => Ok(v.try_iter()?.collect()),
        _ => Err(fail(format!(
            "{}: {} must be a list, got {}",
            filter,
            what,
            py_type(v)
        ))),
    }
}

fn is_list(v: &Value) -> bool {
    matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable)
}

fn truthy(v: &Value) -> bool {
    v.is_true()
}

// ---------------------------------------------------------------------------
// Types and conversions.

/// Ansible's `bool`: `yes`/`on`/`true`/`1` (any case) and `1` are true, their
/// opposites false; anything else is false except values equal to 1.
pub fn to_bool(v: &Value) -> bool {
    let check = match v.kind() {
        ValueKind::String => v.as_str().unwrap_or_default().to_lowercase(),
        ValueKind::Bool => if v.is_true() { "true" } else { "false" }.to_string(),
        ValueKind::Number if v.is_integer() => v.to_string(),
        ValueKind::Number => return f64::try_from(v.clone()).map(|f| f == 1.0).unwrap_or(false),
        _ => return false,
    };
    match check.as_str() {
        "yes" | "on" | "true" | "1" => true,
        "no" | "off" | "false" | "0" => false,
        _ => false,
    }
}

fn bool_filter(state: &State, value: &Value) -> Result<bool, Error> {
    if value.is_undefined() {
        return Err(undefined_error(state, value, "bool"));
    }
    Ok(to_bool(value))
}

/// Python's `int(text, base)`: whitespace around, a sign, `_` between digits, and
/// the `0x`/`0o`/`0b` prefix when the base allows it (base 0 infers it).
fn parse_py_int(s: &str, base: u32) -> Option<i128> {
    let s = s.trim();
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let lower = rest.to_ascii_lowercase();
    let (base, digits) = match (base, lower.get(..2)) {
        (0 | 16, Some("0x")) => (16, &rest[2..]),
        (0 | 8, Some("0o")) => (8, &rest[2..]),
        (0 | 2, Some("0b")) => (2, &rest[2..]),
        (0, _) => {
            if rest.len() > 1 && rest.starts_with('0') && rest.chars().any(|c| c != '0' && c != '_')
            {
                return None;
            }
            (10, rest)
        }
        (b, _) => (b, rest),
    };
    if !(2..=36).contains(&base)
        || digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if clean.starts_with(['+', '-']) {
        return None;
    }
    let n = i128::from_str_radix(&clean, base).ok()?;
    Some(if neg { -n } else { n })
}

/// Python's `float(text)`.
fn parse_py_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return t.parse::<f64>().ok().or_else(|| {
            let neg = lower.starts_with('-');
            Some(match body {
                "nan" => f64::NAN,
                _ if neg => f64::NEG_INFINITY,
                _ => f64::INFINITY,
            })
        });
    }
    if t.is_empty() || t.contains("__") || t.starts_with('_') || t.ends_with('_') {
        return None;
    }
    let clean: String = t.chars().filter(|c| *c != '_').collect();
    if clean
        .chars()
        .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
    {
        return None;
    }
    clean.parse::<f64>().ok()
}

/// Jinja2's `int(value, default=0, base=10)`: unparsable input gives the default.
fn int_filter(
    state: &State,
    value: &Value,
    default: Option<Value>,
    base: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let default = match default {
        Some(d) => d,
        None => kwargs
            .get::<Option<Value>>("default")?
            .unwrap_or(Value::from(0)),
    };
    let base = match base {
        Some(b) => Some(b),
        None => kwargs.get::<Option<Value>>("base")?,
    };
    kwargs.assert_all_used()?;
    let base = match base {
        None => 10,
        Some(b) => match b.as_i64() {
            Some(n) if n == 0 || (2..=36).contains(&n) => n as u32,
            _ => {
                return Err(fail(format!(
                    "int: base must be 0 or between 2 and 36, got {}",
                    py_str(&b)
                )))
            }
        },
    };
    if value.is_undefined() {
        return Err(undefined_error(state, value, "int"));
    }
    Ok(match value.kind() {
        ValueKind::Bool => Value::from(value.is_true() as i64),
        ValueKind::Number if value.is_integer() => value.clone(),
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(f) if f.is_finite() => Value::from(f.trunc() as i128),
            _ => default,
        },
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default();
            match parse_py_int(s, base) {
                Some(n) => Value::from(n),
                None => match parse_py_float(s) {
                    Some(f) if f.is_finite() => Value::from(f.trunc() as i128),
                    _ => default,
                },
            }
        }
        _ => default,
    })
}

/// Jinja2's `float(value, default=0.0)`.
fn float_filter(
    state: &State,
    value: &Value,
    default: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let default = match default {
        Some(d) => d,
        None => kwargs
            .get::<Option<Value>>("default")?
            .unwrap_or(Value::from(0.0)),
    };
    kwargs.assert_all_used()?;
    if value.is_undefined() {
        return Err(undefined_error(state, value, "float"));
    }
    Ok(match value.kind() {
        ValueKind::Bool => Value::from(if value.is_true() { 1.0 } else { 0.0 }),
        ValueKind::Number => f64::try_from(value.clone())
            .map(Value::from)
            .unwrap_or(default),
        ValueKind::String => parse_py_float(value.as_str().unwrap_or_default())
            .map(Value::from)
            .unwrap_or(default),
        _ => default,
    })
}

/// Jinja2's `replace(old, new, count=None)`.
fn replace(
    value: &Value,
    old: &Value,
    new: &Value,
    count: Option<i64>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let count = match count {
        Some(c) => Some(c),
        None => kwargs.get::<Option<i64>>("count")?,
    };
    kwargs.assert_all_used()?;
    let (s, old, new) = (py_str(value), py_str(old), py_str(new));
    Ok(Value::from(match count {
        Some(n) if n >= 0 => s.replacen(&old, &new, n as usize),
        _ => s.replace(&old, &new),
    }))
}

/// `mandatory`: fails on an undefined value, with the custom message when given.
fn mandatory(state: &State, value: &Value, msg: Option<Value>) -> Result<Value, Error> {
    if value.is_undefined() {
        if let Some(m) = msg {
            return Err(fail(py_str(&m)));
        }
        if state.env().debug() {
            return Err(undefined_error(state, value, "mandatory"));
        }
        return Err(Error::new(
            ErrorKind::UndefinedError,
            "Mandatory variable not defined.",
        ));
    }
    Ok(value.clone())
}

fn type_debug(state: &State, value: &Value) -> Result<String, Error> {
    if value.is_undefined() {
        return Err(undefined_error(state, value, "type_debug"));
    }
    Ok(py_type(value).to_string())
}

// ---------------------------------------------------------------------------
// JSON and YAML.

fn json_options(filter: &str, kwargs: &Kwargs, mut o: JsonOptions) -> Result<JsonOptions, Error> {
    if let Some(ind) = kwargs.get::<Option<Value>>("indent")? {
        o.indent = indent_string(filter, &ind)?;
        if o.indent.is_some() && !kwargs.has("separators") {
            o.item_sep = ",".into();
        }
    }
    if let Some(s) = kwargs.get::<Option<bool>>("sort_keys")? {
        o.sort_keys = s;
    }
    if let Some(a) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        o.ensure_ascii = a;
    }
    if let Some(seps) = kwargs.get::<Option<Value>>("separators")? {
        let parts: Vec<String> = seps
            .try_iter()
            .map(|it| it.map(|v| py_str(&v)).collect())
            .unwrap_or_default();
        if parts.len() != 2 {
            return Err(fail(format!(
                "{}: separators must be a pair like (',', ': '), got {}",
                filter,
                py_str(&seps)
            )));
        }
        o.item_sep = parts[0].clone();
        o.key_sep = parts[1].clone();
    }
    // Python-only options that change nothing for plain data.
    for ignored in [
        "skipkeys",
        "allow_nan",
        "check_circular",
        "vault_to_text",
        "preprocess_unsafe",
    ] {
        let _ = kwargs.get::<Option<Value>>(ignored)?;
    }
    kwargs.assert_all_used()?;
    Ok(o)
}

fn indent_string(filter: &str, ind: &Value) -> Result<Option<String>, Error> {
    if ind.is_none() {
        return Ok(None);
    }
    if let Some(s) = ind.as_str() {
        return Ok(Some(s.to_string()));
    }
    match ind.as_i64() {
        Some(n) if n >= 0 => Ok(Some(" ".repeat(n as usize))),
        Some(_) => Ok(Some(String::new())),
        None => Err(fail(format!(
            "{}: indent must be a number, got {}",
            filter,
            py_type(ind)
        ))),
    }
}

fn to_json(state: &State, value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let o = json_options("to_json", &kwargs, JsonOptions::default())?;
    Ok(pydump::dump_json(&to_plain(state, value, "to_json")?, &o))
}

fn to_nice_json(
    state: &State,
    value: &Value,
    indent: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let mut o = JsonOptions {
        indent: Some("    ".into()),
        sort_keys: true,
        item_sep: ",".into(),
        ..Default::default()
    };
    if let Some(ind) = indent {
        o.indent = indent_string("to_nice_json", &ind)?;
    }
    let o = json_options("to_nice_json", &kwargs, o)?;
    Ok(pydump::dump_json(
        &to_plain(state, value, "to_nice_json")?,
        &o,
    ))
}

fn from_json(value: &Value) -> Result<Value, Error> {
    let s = value.as_str().ok_or_else(|| {
        fail(format!(
            "from_json: expected a JSON string, got {}",
            py_type(value)
        ))
    })?;
    let j: J =
        serde_json::from_str(s).map_err(|e| fail(format!("from_json: invalid JSON: {}", e)))?;
    Ok(from_plain(&j))
}

fn yaml_options(filter: &str, kwargs: &Kwargs, mut o: YamlOptions) -> Result<YamlOptions, Error> {
    if let Some(i) = kwargs.get::<Option<Value>>("indent")? {
        o.indent = i.as_usize().ok_or_else(|| {
            fail(format!(
                "{}: indent must be a number, got {}",
                filter,
                py_str(&i)
            ))
        })?;
    }
    if let Some(f) = kwargs.get::<Option<Value>>("default_flow_style")? {
        o.flow_style = if f.is_none() { None } else { Some(f.is_true()) };
    }
    if let Some(s) = kwargs.get::<Option<bool>>("sort_keys")? {
        o.sort_keys = s;
    }
    if let Some(w) = kwargs.get::<Option<Value>>("width")? {
        o.width = w.as_usize().unwrap_or(usize::MAX / 4);
    }
    if let Some(s) = kwargs.get::<Option<bool>>("explicit_start")? {
        o.explicit_start = s;
    }
    let _ = kwargs.get::<Option<Value>>("allow_unicode")?;
    kwargs.assert_all_used()?;
    Ok(o)
}

fn to_yaml(state: &State, value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let o = yaml_options("to_yaml", &kwargs, YamlOptions::default())?;
    Ok(pydump::dump_yaml(&to_plain(state, value, "to_yaml")?, &o))
}

fn to_nice_yaml(
    state: &State,
    value: &Value,
    indent: Option<usize>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let o = YamlOptions {
        indent: indent.unwrap_or(4),
        flow_style: Some(false),
        ..Default::default()
    };
    let o = yaml_options("to_nice_yaml", &kwargs, o)?;
    Ok(pydump::dump_yaml(
        &to_plain(state, value, "to_nice_yaml")?,
        &o,
    ))
}

fn parse_yaml_docs(filter: &str, text: &str) -> Result<Vec<J>, Error> {
    let file = crate::error::SourceFile::new(format!("<{} input>", filter), text.to_string());
    let docs = crate::yaml::parse_documents(file).map_err(|e| {
        let at = e
            .span
            .as_ref()
            .map(|s| format!(" (line {}, column {})", s.line, s.col))
            .unwrap_or_default();
        fail(format!("{}: invalid YAML: {}{}", filter, e.message, at))
    })?;
    Ok(docs.iter().map(|d| d.to_value()).collect())
}

fn from_yaml(value: &Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(parse_yaml_docs("from_yaml", s)?
            .first()
            .map(from_plain)
            .unwrap_or(Value::from(()))),
        None => Ok(value.clone()),
    }
}

fn from_yaml_all(value: &Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(from_plain(&J::Array(parse_yaml_docs("from_yaml_all", s)?))),
        None => Ok(value.clone()),
    }
}

// ---------------------------------------------------------------------------
// Dictionaries and lists.

/// Ansible's `merge_hash(x, y, recursive, list_merge)`: `y` wins.
fn merge_hash(
    x: &serde_json::Map<String, J>,
    y: &serde_json::Map<String, J>,
    recursive: bool,
    list_merge: &str,
) -> serde_json::Map<String, J> {
    if x.is_empty() || x == y {
        return y.clone();
    }
    if y.is_empty() {
        return x.clone();
    }
    let mut out = x.clone();
    if !recursive && list_merge == "replace" {
        for (k, v) in y {
            out.insert(k.clone(), v.clone());
        }
        return out;
    }
    for (k, yv) in y {
        let Some(xv) = out.get(k).cloned() else {
            out.insert(k.clone(), yv.clone());
            continue;
        };
        let merged = match (&xv, yv) {
            (J::Object(xm), J::Object(ym)) => {
                if recursive {
                    J::Object(merge_hash(xm, ym, recursive, list_merge))
                } else {
                    yv.clone()
                }
            }
            (J::Array(xa), J::Array(ya)) => J::Array(match list_merge {
                "append" => xa.iter().chain(ya).cloned().collect(),
                "prepend" => ya.iter().chain(xa).cloned().collect(),
                "append_rp" => xa
                    .iter()
                    .filter(|z| !ya.contains(z))
                    .chain(ya)
                    .cloned()
                    .collect(),
                "prepend_rp" => ya
                    .iter()
                    .chain(xa.iter().filter(|z| !ya.contains(z)))
                    .cloned()
                    .collect(),
                "keep" => xa.clone(),
                _ => ya.clone(),
            }),
            _ => yv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    out
}

fn combine(
    state: &State,
    value: &Value,
    rest: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let rest = rest.0;
    let recursive = kwargs
        .get::<Option<Value>>("recursive")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let list_merge = kwargs
        .get::<Option<String>>("list_merge")?
        .unwrap_or_else(|| "replace".into());
    kwargs.assert_all_used().map_err(|_| {
        fail("combine: 'recursive' and 'list_merge' are the only valid keyword arguments")
    })?;
    if ![
        "replace",
        "keep",
        "append",
        "prepend",
        "append_rp",
        "prepend_rp",
    ]
    .contains(&list_merge.as_str())
    {
        return Err(fail(format!(
            "combine: list_merge must be one of 'replace', 'keep', 'append', 'prepend', 'append_rp' or 'prepend_rp', got '{}'",
            list_merge
        )));
    }
    // `[d1, d2] | combine` is allowed: flatten one level.
    let mut dicts = Vec::new();
    for term in std::iter::once(value.clone()).chain(rest) {
        let items = if is_list(&term) {
            term.try_iter()?.collect()
        } else {
            vec![term]
        };
        for item in items {
            match to_plain(state, &item, "combine")? {
                J::Object(m) => dicts.push(m),
                other => {
                    return Err(fail(format!(
                        "combine: expected dictionaries to merge, got {}",
                        py_type(&from_plain(&other))
                    )))
                }
            }
        }
    }
    let Some(mut result) = dicts.pop() else {
        return Ok(from_plain(&J::Object(Default::default())));
    };
    while let Some(lower) = dicts.pop() {
        result = merge_hash(&lower, &result, recursive, &list_merge);
    }
    Ok(from_plain(&J::Object(result)))
}

/// Python's `dict([mapping or pairs], **kwargs)`.
fn dict_fn(value: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    match value {
        None => {}
        Some(v) if v.is_none() || v.is_undefined() => {
            return Err(fail(format!(
                "dict: expected a mapping or a list of pairs, got {}",
                py_type(&v)
            )));
        }
        Some(v) if v.kind() == ValueKind::Map => {
            for k in v.try_iter()? {
                let item = v.get_item(&k)?;
                pairs.push((k, item));
            }
        }
        Some(v) if is_list(&v) => {
            for item in v.try_iter()? {
                let kv: Vec<Value> = if is_list(&item) {
                    item.try_iter()?.collect()
                } else {
                    Vec::new()
                };
                if kv.len() != 2 {
                    return Err(fail(format!(
                        "dict: each item must be a (key, value) pair, got {}",
                        item
                    )));
                }
                let mut kv = kv.into_iter();
                pairs.push((kv.next().unwrap_or_default(), kv.next().unwrap_or_default()));
            }
        }
        Some(v) => {
            return Err(fail(format!(
                "dict: expected a mapping or a list of pairs, got {}",
                py_type(&v)
            )))
        }
    }
    let names: Vec<String> = kwargs.args().map(str::to_string).collect();
    for name in names {
        let v = kwargs.get::<Value>(&name)?;
        pairs.push((Value::from(name), v));
    }
    kwargs.assert_all_used()?;
    Ok(map_value(pairs))
}

fn key_value_names(
    filter: &str,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: &Kwargs,
) -> Result<(String, String), Error> {
    let k = match key_name {
        Some(k) => k,
        None => kwargs
            .get::<Option<String>>("key_name")?
            .unwrap_or_else(|| "key".into()),
    };
    let v = match value_name {
        Some(v) => v,
        None => kwargs
            .get::<Option<String>>("value_name")?
            .unwrap_or_else(|| "value".into()),
    };
    kwargs
        .assert_all_used()
        .map_err(|e| fail(format!("{}: {}", filter, e)))?;
    Ok((k, v))
}

fn dict2items(
    value: &Value,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (kn, vn) = key_value_names("dict2items", key_name, value_name, &kwargs)?;
    if value.kind() != ValueKind::Map {
        return Err(fail(format!(
            "dict2items requires a dictionary, got {} instead.",
            py_type(value)
        )));
    }
    let mut out = Vec::new();
    for key in value.try_iter()? {
        let item = value.get_item(&key)?;
        out.push(map_value(vec![
            (Value::from(kn.as_str()), key),
            (Value::from(vn.as_str()), item),
        ]));
    }
    Ok(Value::from(out))
}

fn items2dict(
    value: &Value,
    key_name: Option<String>,
    value_name: Option<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let (kn, vn) = key_value_names("items2dict", key_name, value_name, &kwargs)?;
    if !is_list(value) {
        return Err(fail(format!(
            "items2dict requires a list, got {} instead.",
            py_type(value)
        )));
    }
    let mut out: Vec<(Value, Value)> = Vec::new();
    for item in value.try_iter()? {
        if item.kind() != ValueKind::Map {
            return Err(fail(format!(
                "items2dict requires a list of dictionaries, got an item of type {}",
                py_type(&item)
            )));
        }
        let k = item.get_attr(&kn)?;
        let v = item.get_attr(&vn)?;
        if k.is_undefined() || v.is_undefined() {
            return Err(fail(format!(
                "items2dict: each item needs the keys '{}' and '{}', got {}",
                kn, vn, item
            )));
        }
        if let Some(pos) = out.iter().position(|(ek, _)| ek == &k) {
            out[pos].1 = v;
        } else {
            out.push((k, v));
        }
    }
    Ok(map_value(out))
}

/// Jinja2's `unique` as Ansible calls it: strings compared case-insensitively,
/// first occurrence kept.
fn unique_values(items: Vec<Value>) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for item in items {
        let key = match item.as_str() {
            Some(s) => Value::from(s.to_lowercase()),
            None => item.clone(),
        };
        if seen.insert(key) {
            out.push(item);
        }
    }
    out
}

fn set_inputs(filter: &str, a: &Value, b: &Value) -> Result<(Vec<Value>, Vec<Value>), Error> {
    Ok((
        items_of(a, filter, "the input")?,
        items_of(b, filter, "the argument")?,
    ))
}

fn union(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("union", a, b)?;
    Ok(Value::from(unique_values(a.into_iter().chain(b).collect())))
}

fn intersect(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("intersect", a, b)?;
    Ok(Value::from(unique_values(
        a.into_iter().filter(|x| b.contains(x)).collect(),
    )))
}

fn difference(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("difference", a, b)?;
    Ok(Value::from(unique_values(
        a.into_iter().filter(|x| !b.contains(x)).collect(),
    )))
}

fn symmetric_difference(a: &Value, b: &Value) -> Result<Value, Error> {
    let (a, b) = set_inputs("symmetric_difference", a, b)?;
    let isect = unique_values(a.iter().filter(|x| b.contains(x)).cloned().collect());
    let all = unique_values(a.into_iter().chain(b).collect());
    Ok(Value::from(
        all.into_iter()
            .filter(|x| !isect.contains(x))
            .collect::<Vec<_>>(),
    ))
}

fn flatten_into(
    items: Vec<Value>,
    levels: Option<i64>,
    skip_nulls: bool,
    out: &mut Vec<Value>,
) -> Result<(), Error> {
    for item in items {
        if skip_nulls && (item.is_none() || matches!(item.as_str(), Some("None") | Some("null"))) {
            continue;
        }
        if is_list(&item) {
            match levels {
                None => flatten_into(item.try_iter()?.collect(), None, skip_nulls, out)?,
                Some(l) if l >= 1 => {
                    flatten_into(item.try_iter()?.collect(), Some(l - 1), skip_nulls, out)?
                }
                Some(_) => out.push(item),
            }
        } else {
            out.push(item);
        }
    }
    Ok(())
}

fn flatten(value: &Value, levels: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let levels = match levels {
        Some(l) => Some(l),
        None => kwargs.get::<Option<Value>>("levels")?,
    };
    let levels = match levels {
        None => None,
        Some(l) if l.is_none() => None,
        Some(l) => Some(l.as_i64().ok_or_else(|| {
            fail(format!(
                "flatten: levels must be a number, got {}",
                py_str(&l)
            ))
        })?),
    };
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    let mut out = Vec::new();
    flatten_into(
        items_of(value, "flatten", "the input")?,
        levels,
        skip_nulls,
        &mut out,
    )?;
    Ok(Value::from(out))
}

fn zip_longest(value: &Value, rest: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let rest = rest.0;
    let fill = kwargs
        .get::<Option<Value>>("fillvalue")?
        .unwrap_or(Value::from(()));
    kwargs.assert_all_used()?;
    let mut lists = vec![items_of(value, "zip_longest", "the input")?];
    for r in &rest {
        lists.push(items_of(r, "zip_longest", "every argument")?);
    }
    let n = lists.iter().map(Vec::len).max().unwrap_or(0);
    Ok(Value::from(
        (0..n)
            .map(|i| {
                Value::from(
                    lists
                        .iter()
                        .map(|l| l.get(i).cloned().unwrap_or_else(|| fill.clone()))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>(),
    ))
}

fn product(value: &Value, rest: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let rest = rest.0;
    let repeat = kwargs.get::<Option<usize>>("repeat")?.unwrap_or(1);
    kwargs.assert_all_used()?;
    let mut pools = vec![items_of(value, "product", "the input")?];
    for r in &rest {
        pools.push(items_of(r, "product", "every argument")?);
    }
    let pools: Vec<Vec<Value>> = (0..repeat).flat_map(|_| pools.clone()).collect();
    let total: usize = pools.iter().map(Vec::len).product();
    if total > 1_000_000 {
        return Err(fail(format!(
            "product: the result would have {} items; refusing more than 1000000",
            total
        )));
    }
    let mut acc: Vec<Vec<Value>> = vec![Vec::new()];
    for pool in &pools {
        acc = acc
            .into_iter()
            .flat_map(|prefix| {
                pool.iter().map(move |x| {
                    let mut p = prefix.clone();
                    p.push(x.clone());
                    p
                })
            })
            .collect();
    }
    Ok(Value::from(
        acc.into_iter().map(Value::from).collect::<Vec<_>>(),
    ))
}

fn extract(
    state: &State,
    item: &Value,
    container: &Value,
    morekeys: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let morekeys = arg(morekeys, &kwargs, "morekeys")?;
    kwargs.assert_all_used()?;
    if container.is_undefined() {
        return Err(undefined_error(state, container, "extract"));
    }
    let mut keys = vec![item.clone()];
    match morekeys {
        None => {}
        Some(m) if is_list(&m) => keys.extend(m.try_iter()?),
        Some(m) => keys.push(m),
    }
    let mut v = container.clone();
    for k in keys {
        if v.is_undefined() {
            break;
        }
        v = v.get_item(&k).unwrap_or(Value::UNDEFINED);
    }
    Ok(v)
}

fn ternary(
    value: &Value,
    true_val: Option<Value>,
    false_val: Option<Value>,
    none_val: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let true_val = arg(true_val, &kwargs, "true_val")?.unwrap_or(Value::from(true));
    let false_val = arg(false_val, &kwargs, "false_val")?.unwrap_or(Value::from(false));
    let none_val = arg(none_val, &kwargs, "none_val")?;
    kwargs.assert_all_used()?;
    Ok(match none_val {
        Some(n) if value.is_none() && !n.is_none() => n,
        _ if truthy(value) => true_val,
        _ => false_val,
    })
}

/// `subelements`: pairs of (item, sub-item) for a list found under a key path of each item.
fn subelements(
    value: &Value,
    path: &Value,
    skip_missing: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let skip_missing = arg(skip_missing, &kwargs, "skip_missing")?.is_some_and(|v| v.is_true());
    kwargs.assert_all_used()?;
    let elements: Vec<Value> = match value.kind() {
        ValueKind::Map => value
            .try_iter()?
            .map(|k| value.get_item(&k).unwrap_or_default())
            .collect(),
        ValueKind::Seq | ValueKind::Iterable => value.try_iter()?.collect(),
        _ => {
            return Err(fail(format!(
                "subelements: obj must be a list of dicts or a nested dict, got {}",
                py_type(value)
            )))
        }
    };
    let keys: Vec<String> = match path.kind() {
        ValueKind::String => path
            .as_str()
            .unwrap_or_default()
            .split('.')
            .map(str::to_string)
            .collect(),
        ValueKind::Seq => path.try_iter()?.map(|k| py_str(&k)).collect(),
        _ => {
            return Err(fail(format!(
                "subelements: subelements must be a list or a string, got {}",
                py_type(path)
            )))
        }
    };
    let mut out = Vec::new();
    for element in elements {
        let mut values = element.clone();
        let mut missing = false;
        for key in &keys {
            if values.kind() != ValueKind::Map {
                return Err(fail(format!(
                    "subelements: the key {} should point to a dictionary, got '{}'",
                    key, values
                )));
            }
            let next = values.get_attr(key)?;
            if next.is_undefined() {
                if skip_missing {
                    missing = true;
                    break;
                }
                return Err(fail(format!(
                    "subelements: could not find '{}' key in iterated item {}",
                    key, values
                )));
            }
            values = next;
        }
        if missing {
            continue;
        }
        if values.kind() != ValueKind::Seq {
            return Err(fail(format!(
                "subelements: the key '{}' should point to a list, got {}",
                keys.join("."),
                values
            )));
        }
        for v in values.try_iter()? {
            out.push(Value::from(vec![element.clone(), v]));
        }
    }
    Ok(Value::from(out))
}

/// `to_uuid`: a name-based (version 5) UUID in Ansible's namespace by default.
fn to_uuid(value: &Value, namespace: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    use sha1::Digest;
    let ns = arg(namespace, &kwargs, "namespace")?
        .map(|v| py_str(&v))
        .unwrap_or_else(|| "361E6D51-FAEC-444A-9079-341386DA8E2E".into());
    kwargs.assert_all_used()?;
    let hex_ns: String = ns.chars().filter(|c| *c != '-').collect();
    let ns_bytes = hex::decode(&hex_ns)
        .ok()
        .filter(|b| b.len() == 16)
        .ok_or_else(|| {
            fail(format!(
                "to_uuid: invalid value '{}' for 'namespace': not a UUID",
                ns
            ))
        })?;
    let mut h = sha1::Sha1::new();
    h.update(&ns_bytes);
    h.update(py_str(value).as_bytes());
    let mut b: Vec<u8> = h.finalize()[..16].to_vec();
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x = hex::encode(b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &x[..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..]
    ))
}

// ---------------------------------------------------------------------------
// Regular expressions (Python `re` syntax through fancy-regex).

/// Compiles a Python regular expression with Ansible's `ignorecase`/`multiline` flags.
pub(crate) fn py_regex(
    filter: &str,
    pattern: &str,
    ignorecase: bool,
    multiline: bool,
) -> Result<fancy_regex::Regex, Error> {
    let mut p = String::new();
    if ignorecase {
        p.push_str("(?i)");
    }
    if multiline {
        p.push_str("(?m)");
    }
    // Python's `\Z` is the end of the text, spelled `\z` here.
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => p.push_str("\\z"),
                Some(n) => {
                    p.push('\\');
                    p.push(n);
                }
                None => p.push('\\'),
            }
        } else {
            p.push(c);
        }
    }
    fancy_regex::Regex::new(&p).map_err(|e| {
        fail(format!(
            "{}: invalid regular expression '{}': {}",
            filter, pattern, e
        ))
    })
}

fn regex_flags(kwargs: &Kwargs) -> Result<(bool, bool), Error> {
    let i = kwargs
        .get::<Option<Value>>("ignorecase")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let m = kwargs
        .get::<Option<Value>>("multiline")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    Ok((i, m))
}

fn regex_err(filter: &str, e: fancy_regex::Error) -> Error {
    fail(format!("{}: regular expression failed: {}", filter, e))
}

fn regex_search(
    value: &Value,
    pattern: String,
    groups: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let groups = groups.0;
    let (i, m) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = py_regex("regex_search", &pattern, i, m)?;
    enum G {
        Num(usize),
        Name(String),
    }
    let mut wanted = Vec::new();
    for g in &groups {
        let s = py_str(g);
        if let Some(name) = s.strip_prefix("\\g<").and_then(|r| r.strip_suffix('>')) {
            match name.parse::<usize>() {
                Ok(n) => wanted.push(G::Num(n)),
                Err(_) => wanted.push(G::Name(name.to_string())),
            }
        } else if let Some(n) = s.strip_prefix('\\').and_then(|r| r.parse::<usize>().ok()) {
            wanted.push(G::Num(n));
        } else {
            return Err(fail(format!(
                "regex_search: unknown argument '{}'; give groups as '\\\\1' or '\\\\g<name>'",
                s
            )));
        }
    }
    let text = py_str(value);
    let Some(caps) = re
        .captures(&text)
        .map_err(|e| regex_err("regex_search", e))?
    else {
        return Ok(Value::from(()));
    };
    if wanted.is_empty() {
        return Ok(Value::from(
            caps.get(0).map(|m| m.as_str()).unwrap_or_default(),
        ));
    }
    let mut out = Vec::new();
    for w in wanted {
        let m = match &w {
            G::Num(n) => {
                if *n >= caps.len() {
                    return Err(fail(format!(
                        "regex_search: no group {} in '{}'",
                        n, pattern
                    )));
                }
                caps.get(*n)
            }
            G::Name(name) => {
                if !re.capture_names().any(|c| c == Some(name.as_str())) {
                    return Err(fail(format!(
                        "regex_search: no group named '{}' in '{}'",
                        name, pattern
                    )));
                }
                caps.name(name)
            }
        };
        out.push(
            m.map(|m| Value::from(m.as_str()))
                .unwrap_or(Value::from(())),
        );
    }
    Ok(Value::from(out))
}

/// Translates a Python `re.sub` replacement (`\1`, `\g<name>`, `\n`) to the
/// `$`-syntax of the regex crates.
fn py_replacement(repl: &str) -> Result<String, Error> {
    let mut out = String::new();
    let chars: Vec<char> = repl.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' {
            out.push_str("$$");
        } else if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            i += 1;
            match n {
                '0'..='9' => {
                    let mut digits = n.to_string();
                    if i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                        digits.push(chars[i + 1]);
                        i += 1;
                    }
                    out.push_str(&format!("${{{}}}", digits.parse::<usize>().unwrap_or(0)));
                }
                'g' => {
                    let rest: String = chars[i + 1..].iter().collect();
                    let name = rest
                        .strip_prefix('<')
                        .and_then(|r| r.split_once('>'))
                        .map(|(n, _)| n.to_string())
                        .ok_or_else(|| {
                            fail("regex_replace: bad group reference in replacement; use \\g<name>")
                        })?;
                    i += name.chars().count() + 2;
                    out.push_str(&format!("${{{}}}", name));
                }
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'f' => out.push('\u{0c}'),
                'v' => out.push('\u{0b}'),
                'a' => out.push('\u{07}'),
                'b' => out.push('\u{08}'),
                '\\' => out.push('\\'),
                c if c.is_ascii_alphabetic() => {
                    return Err(fail(format!(
                        "regex_replace: bad escape \\{} in the replacement",
                        c
                    )));
                }
                c => {
                    out.push('\\');
                    if c == '$' {
                        out.push_str("$$");
                    } else {
                        out.push(c);
                    }
                }
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    Ok(out)
}

fn regex_replace(
    value: &Value,
    pattern: Option<String>,
    replacement: Option<String>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let pattern = pattern
        .or(kwargs.get::<Option<String>>("pattern")?)
        .unwrap_or_default();
    let replacement = replacement
        .or(kwargs.get::<Option<String>>("replacement")?)
        .unwrap_or_default();
    let (i, m) = regex_flags(&kwargs)?;
    let count = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    let mandatory_count = kwargs.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
    kwargs.assert_all_used()?;
    let re = py_regex("regex_replace", &pattern, i, m)?;
    let text = py_str(value);
    if mandatory_count > 0 {
        let found = re.find_iter(&text).count();
        if found != mandatory_count {
            return Err(fail(format!(
                "regex_replace: expected {} matches of '{}', found {}",
                mandatory_count, pattern, found
            )));
        }
    }
    let repl = py_replacement(&replacement)?;
    re.try_replacen(&text, count, repl.as_str())
        .map(|c| c.into_owned())
        .map_err(|e| regex_err("regex_replace", e))
}

fn regex_findall(value: &Value, pattern: String, kwargs: Kwargs) -> Result<Value, Error> {
    let (i, m) = regex_flags(&kwargs)?;
    kwargs.assert_all_used()?;
    let re = py_regex("regex_findall", &pattern, i, m)?;
    let text = py_str(value);
    let mut out = Vec::new();
    for caps in re.captures_iter(&text) {
        let caps = caps.map_err(|e| regex_err("regex_findall", e))?;
        let grp = |n: usize| Value::from(caps.get(n).map(|m| m.as_str()).unwrap_or_default());
        out.push(match caps.len() {
            1 => grp(0),
            2 => grp(1),
            n => Value::from((1..n).map(grp).collect::<Vec<_>>()),
        });
    }
    Ok(Value::from(out))
}

fn regex_escape(value: &Value, re_type: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let re_type = arg(re_type, &kwargs, "re_type")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s = py_str(value);
    let special: &str = match re_type.as_deref().unwrap_or("python") {
        "python" => "()[]{}?*+-|^$\\.&~# \t\n\r\u{0b}\u{0c}",
        "posix_basic" => "].[^$*\\",
        "posix_extended" => {
            return Err(fail(
                "regex_escape: regex type (posix_extended) not yet implemented",
            ))
        }
        other => {
            return Err(fail(format!(
                "regex_escape: invalid regex type ({}); use 'python' or 'posix_basic'",
                other
            )))
        }
    };
    let mut out = String::new();
    for c in s.chars() {
        if special.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Encodings and hashes.

fn b64encode(value: &Value, encoding: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let encoding = arg(encoding, &kwargs, "encoding")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s = py_str(value);
    let bytes = encode_text("b64encode", &s, encoding.as_deref())?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn encode_text(filter: &str, s: &str, encoding: Option<&str>) -> Result<Vec<u8>, Error> {
    match encoding
        .unwrap_or("utf-8")
        .to_ascii_lowercase()
        .replace('_', "-")
        .as_str()
    {
        "utf-8" | "utf8" => Ok(s.as_bytes().to_vec()),
        "utf-16-le" | "utf-16le" => Ok(s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()),
        "ascii" | "latin-1" | "latin1" | "iso-8859-1" if s.is_ascii() => Ok(s.as_bytes().to_vec()),
        other => Err(fail(format!(
            "{}: unsupported encoding '{}' (use utf-8 or utf-16-le)",
            filter, other
        ))),
    }
}

fn b64decode(value: &Value, encoding: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let encoding = arg(encoding, &kwargs, "encoding")?.map(|v| py_str(&v));
    kwargs.assert_all_used()?;
    let s: String = py_str(value)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    let bytes = engine
        .decode(s.as_bytes())
        .map_err(|e| fail(format!("b64decode: the input is not valid base64: {}", e)))?;
    match encoding
        .as_deref()
        .unwrap_or("utf-8")
        .to_ascii_lowercase()
        .replace('_', "-")
        .as_str()
    {
        "utf-8" | "utf8" => String::from_utf8(bytes)
            .map_err(|_| fail("b64decode: the decoded bytes are not valid UTF-8 text")),
        "utf-16-le" | "utf-16le" => {
            if bytes.len() % 2 != 0 {
                return Err(fail(
                    "b64decode: the decoded bytes are not valid UTF-16-LE text (odd length)",
                ));
            }
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units)
                .map_err(|_| fail("b64decode: the decoded bytes are not valid UTF-16-LE text"))
        }
        other => Err(fail(format!(
            "b64decode: unsupported encoding '{}' (use utf-8 or utf-16-le)",
            other
        ))),
    }
}

fn digest(kind: &str, data: &[u8]) -> Option<String> {
    use sha2::Digest;
    Some(match kind {
        "md5" => hex::encode(md5::Md5::digest(data)),
        "sha1" => hex::encode(sha1::Sha1::digest(data)),
        "sha224" => hex::encode(sha2::Sha224::digest(data)),
        "sha256" => hex::encode(sha2::Sha256::digest(data)),
        "sha384" => hex::encode(sha2::Sha384::digest(data)),
        "sha512" => hex::encode(sha2::Sha512::digest(data)),
        _ => return None,
    })
}

fn hash(value: &Value, hashtype: Option<Value>, kwargs: Kwargs) -> Result<String, Error> {
    let kind = arg(hashtype, &kwargs, "hashtype")?
        .map(|v| py_str(&v))
        .unwrap_or_else(|| "sha1".into())
        .to_ascii_lowercase();
    kwargs.assert_all_used()?;
    digest(&kind, py_str(value).as_bytes()).ok_or_else(|| {
        fail(format!(
            "hash: unsupported hash type '{}'; use md5, sha1, sha224, sha256, sha384 or sha512",
            kind
        ))
    })
}

fn sha1_filter(value: &Value) -> String {
    digest("sha1", py_str(value).as_bytes()).unwrap_or_default()
}

fn md5_filter(value: &Value) -> String {
    digest("md5", py_str(value).as_bytes()).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Paths and shell.

/// Python's `posixpath.basename`.
pub(crate) fn py_basename(p: &str) -> &str {
    match p.rfind('/') {
        Some(i) => &p[i + 1..],
        None => p,
    }
}

/// Python's `posixpath.dirname`.
pub(crate) fn py_dirname(p: &str) -> &str {
    let i = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    let head = &p[..i];
    if !head.is_empty() && head.chars().any(|c| c != '/') {
        head.trim_end_matches('/')
    } else {
        head
    }
}

fn basename(value: &Value) -> String {
    py_basename(&py_str(value)).to_string()
}

fn dirname(value: &Value) -> String {
    py_dirname(&py_str(value)).to_string()
}

fn splitext(value: &Value) -> Value {
    let p = py_str(value);
    let sep = p.rfind('/').map(|i| i as isize).unwrap_or(-1);
    if let Some(dot) = p.rfind('.') {
        if dot as isize > sep {
            let name_start = (sep + 1) as usize;
            if p[name_start..dot].chars().any(|c| c != '.') {
                return Value::from(vec![Value::from(&p[..dot]), Value::from(&p[dot..])]);
            }
        }
    }
    Value::from(vec![Value::from(p.as_str()), Value::from("")])
}

/// `~` and `~/x` become the controller user's home directory.
pub(crate) fn expand_user(p: &str) -> String {
    if p == "~" || p.starts_with("~/") {
        if let Ok(home) = std::env::var("HOME") {
            let home = if home.len() > 1 {
                home.trim_end_matches('/')
            } else {
                home.as_str()
            };
            return format!("{}{}", home, &p[1..]);
        }
    }
    p.to_string()
}

fn expanduser(value: &Value) -> String {
    expand_user(&py_str(value))
}

fn path_join(value: &Value) -> Result<String, Error> {
    let parts: Vec<String> = if let Some(s) = value.as_str() {
        vec![s.to_string()]
    } else if is_list(value) {
        value.try_iter()?.map(|v| py_str(&v)).collect()
    } else {
        return Err(fail(format!(
            "path_join expects string or sequence, got {} instead.",
            py_type(value)
        )));
    };
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') || out.is_empty() {
            out = p;
        } else if out.ends_with('/') {
            out.push_str(&p);
        } else {
            out.push('/');
            out.push_str(&p);
        }
    }
    Ok(out)
}

/// Python's `shlex.quote`.
pub fn shell_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    let safe = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\"'\"'"))
    }
}

fn quote(value: &Value) -> String {
    if value.is_none() || value.is_undefined() {
        return "''".into();
    }
    shell_quote(&py_str(value))
}

// ---------------------------------------------------------------------------
// Numbers and text.

const SIZE_RANGES: [(char, u128); 9] = [
    ('Y', 1 << 80),
    ('Z', 1 << 70),
    ('E', 1 << 60),
    ('P', 1 << 50),
    ('T', 1 << 40),
    ('G', 1 << 30),
    ('M', 1 << 20),
    ('K', 1 << 10),
    ('B', 1),
];

fn number_of(filter: &str, v: &Value) -> Result<f64, Error> {
    if let Ok(f) = f64::try_from(v.clone()) {
        if v.kind() == ValueKind::Number {
            return Ok(f);
        }
    }
    v.as_str().and_then(parse_py_float).ok_or_else(|| {
        fail(format!(
            "{}: expected a number, got {} '{}'",
            filter,
            py_type(v),
            py_str(v)
        ))
    })
}

fn human_readable(
    value: &Value,
    isbits: Option<Value>,
    unit: Option<Value>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let isbits = arg(isbits, &kwargs, "isbits")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    let unit = arg(unit, &kwargs, "unit")?
        .filter(|u| !u.is_none())
        .map(|u| py_str(&u));
    kwargs.assert_all_used()?;
    let size = number_of("human_readable", value)?;
    let base = if isbits { "bits" } else { "Bytes" };
    let mut chosen = SIZE_RANGES[SIZE_RANGES.len() - 1];
    for r in SIZE_RANGES {
        let hit = match &unit {
            None => size >= r.1 as f64,
            Some(u) => u.chars().next().map(|c| c.to_ascii_uppercase()) == Some(r.0),
        };
        chosen = r;
        if hit {
            break;
        }
    }
    let suffix = if chosen.1 != 1 {
        format!("{}{}", chosen.0, &base[..1])
    } else {
        base.to_string()
    };
    Ok(format!("{:.2} {}", size / chosen.1 as f64, suffix))
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn human_to_bytes(
    value: &Value,
    default_unit: Option<Value>,
    isbits: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let default_unit = arg(default_unit, &kwargs, "default_unit")?
        .filter(|u| !u.is_none())
        .map(|u| py_str(&u));
    let isbits = arg(isbits, &kwargs, "isbits")?
        .map(|v| v.is_true())
        .unwrap_or(false);
    kwargs.assert_all_used()?;
    let text = py_str(value);
    let bad = || {
        fail(format!(
            "human_to_bytes() can't interpret following string: {}",
            text
        ))
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() || (!unit.is_empty() && !unit.chars().all(|c| c.is_ascii_alphabetic())) {
        return Err(bad());
    }
    let num: f64 = num.parse().map_err(|_| bad())?;
    let unit = if unit.is_empty() {
        default_unit.unwrap_or_default()
    } else {
        unit.to_string()
    };
    if unit.is_empty() {
        return Ok(Value::from(round_half_even(num) as i128));
    }
    let key = unit
        .chars()
        .next()
        .map(|c| c.to_ascii_uppercase())
        .unwrap_or('B');
    let limit = SIZE_RANGES.iter().find(|r| r.0 == key).map(|r| r.1).ok_or_else(|| {
        fail(format!(
            "human_to_bytes() failed to convert {} (unit = {}). The suffix must be one of Y, Z, E, P, T, G, M, K, B",
            text, unit
        ))
    })?;
    if unit.len() > 1 {
        let (class, class_name) = if isbits { ('b', "bit") } else { ('B', "byte") };
        let names = [
            ('B', "byte", "bit"),
            ('K', "kilobyte", "kilobit"),
            ('M', "megabyte", "megabit"),
            ('G', "gigabyte", "gigabit"),
            ('T', "terabyte", "terabit"),
            ('P', "petabyte", "petabit"),
            ('E', "exabyte", "exabit"),
            ('Z', "zettabyte", "zettabit"),
            ('Y', "yottabyte", "yottabit"),
        ];
        let long = names
            .iter()
            .find(|n| n.0 == key)
            .map(|n| if isbits { n.2 } else { n.1 })
            .unwrap_or(class_name);
        let expected = format!("{}{}", key, class);
        if !(unit.to_lowercase() == long
            || unit == expected
            || (key == 'B' && unit.to_lowercase() == class_name))
        {
            let expect = if key == 'B' {
                format!("expect {} or {}", class, class_name)
            } else {
                format!("expect {}{} or {}", key, class, key)
            };
            return Err(fail(format!(
                "human_to_bytes() failed to convert {}. Value is not a valid string ({})",
                text, expect
            )));
        }
    }
    Ok(Value::from(round_half_even(num * limit as f64) as i128))
}

fn log(x: &Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number_of("log", x)?;
    match base {
        None => Ok(x.ln()),
        Some(b) => {
            let b = number_of("log", &b)?;
            Ok(if b == 10.0 {
                x.log10()
            } else {
                x.ln() / b.ln()
            })
        }
    }
}

fn pow(x: &Value, y: &Value) -> Result<f64, Error> {
    Ok(number_of("pow", x)?.powf(number_of("pow", y)?))
}

fn root(x: &Value, base: Option<Value>) -> Result<f64, Error> {
    let x = number_of("root", x)?;
    let b = match base {
        Some(b) => number_of("root", &b)?,
        None => 2.0,
    };
    if x < 0.0 {
        return Err(fail(format!(
            "root: cannot take a root of the negative number {}",
            x
        )));
    }
    Ok(if b == 2.0 { x.sqrt() } else { x.powf(1.0 / b) })
}

/// Ansible's `comment` filter: wraps text in comment decoration of a style.
fn comment(value: &Value, style: Option<String>, kwargs: Kwargs) -> Result<String, Error> {
    let text = py_str(value);
    let style = style.unwrap_or_else(|| "plain".into());
    let (beginning, decoration, end) = match style.as_str() {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => {
            return Err(fail(format!(
                "comment: unknown style '{}'; use plain, erlang, c, cblock or xml",
                other
            )))
        }
    };
    let get = |k: &str, d: &str| -> Result<String, Error> {
        Ok(kwargs
            .get::<Option<Value>>(k)?
            .map(|v| py_str(&v))
            .unwrap_or_else(|| d.to_string()))
    };
    let prepost = get("decoration", decoration)?;
    let newline = get("newline", "\n")?;
    let beginning = get("beginning", beginning)?;
    let prefix = get("prefix", prepost.trim_end())?;
    let prefix_count: usize = get("prefix_count", "1")?.parse().unwrap_or(1);
    let decoration = get("decoration", decoration)?;
    let postfix = get("postfix", prepost.trim_end())?;
    let postfix_count: usize = get("postfix_count", "1")?.parse().unwrap_or(1);
    let end = get("end", end)?;
    kwargs.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out.push_str(&beginning);
        out.push_str(&newline);
    }
    if !prefix.is_empty() {
        let unit = if prefix != newline {
            format!("{}{}", prefix, newline)
        } else {
            newline.clone()
        };
        out.push_str(&unit.repeat(prefix_count));
    }
    let body = format!(
        "{}{}",
        decoration,
        text.replace(&newline, &format!("{}{}", newline, decoration))
    );
    out.push_str(&body.replace(
        &format!("{}{}", decoration, newline),
        &format!("{}{}", decoration.trim_end(), newline),
    ));
    for _ in 0..postfix_count {
        out.push_str(&newline);
        out.push_str(&postfix);
    }
    if !end.is_empty() {
        out.push_str(&newline);
        out.push_str(&end);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::template::{to_mj, Templar};
    use serde_json::{json, Value as J};

    fn ev(expr: &str, vars: J) -> Result<J, String> {
        let t = Templar::new();
        t.eval_expr(expr, &to_mj(&vars))
            .map_err(|e| e.render())
            .and_then(|v| serde_json::to_value(&v).map_err(|e| e.to_string()))
    }

    fn ok(expr: &str) -> J {
        ev(expr, json!({})).unwrap_or_else(|e| panic!("{}: {}", expr, e))
    }

    fn err(expr: &str) -> String {
        match ev(expr, json!({})) {
            Ok(v) => panic!("{} should fail, gave {}", expr, v),
            Err(e) => e,
        }
    }

    #[test]
    fn default_and_omit() {
        assert_eq!(ok("missing | default('x')"), json!("x"));
        assert_eq!(ok("missing | d('x')"), json!("x"));
        assert_eq!(ok("'' | default('x', true)"), json!("x"));
        assert_eq!(ok("'' | default('x')"), json!(""));
        assert_eq!(ok("missing | default(omit)"), json!(crate::template::OMIT));
        assert_eq!(ok("0 | ansible.builtin.default(5, true)"), json!(5));
    }

    #[test]
    fn mandatory_filter() {
        assert_eq!(ok("1 | mandatory"), json!(1));
        let e = err("nope | mandatory");
        assert!(e.contains("nope") || e.contains("Mandatory"), "{}", e);
        assert!(err("nope | mandatory('set nope please')").contains("set nope please"));
    }

    #[test]
    fn bool_int_float() {
        for (s, b) in [
            ("'yes'", true),
            ("'On'", true),
            ("'1'", true),
            ("'TRUE'", true),
            ("1", true),
            ("true", true),
        ] {
            assert_eq!(ok(&format!("{} | bool", s)), json!(b), "{}", s);
        }
        for s in [
            "'no'", "'off'", "'0'", "'false'", "0", "false", "none", "'y'", "'foo'", "2",
        ] {
            assert_eq!(ok(&format!("{} | bool", s)), json!(false), "{}", s);
        }
        assert_eq!(ok("'42' | int"), json!(42));
        assert_eq!(ok("' 42 ' | int"), json!(42));
        assert_eq!(ok("'3.7' | int"), json!(3));
        assert_eq!(ok("3.7 | int"), json!(3));
        assert_eq!(ok("'abc' | int"), json!(0));
        assert_eq!(ok("'abc' | int(7)"), json!(7));
        assert_eq!(ok("'abc' | int(default=-1)"), json!(-1));
        assert_eq!(ok("'0x1f' | int(base=16)"), json!(31));
        assert_eq!(ok("'1f' | int(base=16)"), json!(31));
        assert_eq!(ok("'0b101' | int(0, 0)"), json!(5));
        assert_eq!(ok("'1_000' | int"), json!(1000));
        assert_eq!(ok("none | int"), json!(0));
        assert_eq!(ok("true | int"), json!(1));
        assert_eq!(ok("'1.5' | float"), json!(1.5));
        assert_eq!(ok("'x' | float"), json!(0.0));
        assert_eq!(ok("'x' | float(2.5)"), json!(2.5));
        assert_eq!(ok("3 | float"), json!(3.0));
        assert!(err("nope | int").contains("nope") || err("nope | int").contains("undefined"));
    }

    #[test]
    fn string_and_type_debug() {
        assert_eq!(ok("1 | string"), json!("1"));
        assert_eq!(ok("none | string"), json!("None"));
        assert_eq!(ok("true | string"), json!("True"));
        for (e, t) in [
            ("'a'", "str"),
            ("1", "int"),
            ("1.5", "float"),
            ("true", "bool"),
            ("[1]", "list"),
            ("{'a': 1}", "dict"),
            ("none", "NoneType"),
        ] {
            assert_eq!(ok(&format!("{} | type_debug", e)), json!(t), "{}", e);
        }
    }

    #[test]
    fn replace_with_count() {
        assert_eq!(ok("'aaa' | replace('a', 'b')"), json!("bbb"));
        assert_eq!(ok("'aaa' | replace('a', 'b', 2)"), json!("bba"));
    }

    #[test]
    fn json_filters() {
        assert_eq!(
            ok("{'b': 1, 'a': [1, 2.0, none, true]} | to_json"),
            json!(r#"{"b": 1, "a": [1, 2.0, null, true]}"#)
        );
        assert_eq!(
            ok("{'b': 1, 'a': 2} | to_json(sort_keys=true)"),
            json!(r#"{"a": 2, "b": 1}"#)
        );
        assert_eq!(
            ok("{'b': 1, 'a': 2} | to_json(indent=2)"),
            json!("{\n  \"b\": 1,\n  \"a\": 2\n}")
        );
        assert_eq!(ok("'é' | to_json"), json!("\"\\u00e9\""));
        assert_eq!(ok("'é' | to_json(ensure_ascii=false)"), json!("\"é\""));
        assert_eq!(
            ok("{'b': [1], 'a': {}} | to_nice_json"),
            json!("{\n    \"a\": {},\n    \"b\": [\n        1\n    ]\n}")
        );
        assert_eq!(
            ok("{'b': 1} | to_nice_json(indent=2)"),
            json!("{\n  \"b\": 1\n}")
        );
        assert_eq!(
            ok("'{\"a\": [1, 2], \"b\": null}' | from_json"),
            json!({"a": [1, 2], "b": null})
        );
        assert!(err("'{bad' | from_json").contains("from_json: invalid JSON"));
        assert_eq!(
            ok("{'x': 1} | ansible.builtin.to_json | from_json"),
            json!({"x": 1})
        );
    }

    #[test]
    fn yaml_filters() {
        assert_eq!(
            ok("{'b': 1, 'a': [1, 2]} | to_yaml"),
            json!("a: [1, 2]\nb: 1\n")
        );
        assert_eq!(
            ok("{'b': 1, 'a': [1, 2]} | to_nice_yaml"),
            json!("a:\n- 1\n- 2\nb: 1\n")
        );
        assert_eq!(
            ok("{'b': {'c': 'yes'}} | to_nice_yaml(indent=2)"),
            json!("b:\n  c: 'yes'\n")
        );
        assert_eq!(
            ok("{'b': 1, 'a': 2} | to_nice_yaml(sort_keys=false)"),
            json!("b: 1\na: 2\n")
        );
        assert_eq!(
            ok("'a: 1\\nb: [x, yes, 0755]' | from_yaml"),
            json!({"a": 1, "b": ["x", true, 493]})
        );
        assert_eq!(
            ok("'a: 1\\n---\\nb: 2\\n' | from_yaml_all"),
            json!([{"a": 1}, {"b": 2}])
        );
        assert_eq!(ok("[1] | from_yaml"), json!([1]));
        assert!(err("'a: [' | from_yaml").contains("from_yaml: invalid YAML"));
    }

    #[test]
    fn combine_filter() {
        assert_eq!(
            ok("{'a': 1, 'b': 2} | combine({'b': 3, 'c': 4})"),
            json!({"a": 1, "b": 3, "c": 4})
        );
        assert_eq!(
            ok("{'a': 1} | combine({'b': 2}, {'a': 3})"),
            json!({"a": 3, "b": 2})
        );
        assert_eq!(ok("[{'a': 1}, {'a': 2}] | combine"), json!({"a": 2}));
        let nested = "{'a': {'x': 1, 'l': [1, 2]}, 'b': 1}";
        assert_eq!(
            ok(&format!("{} | combine({{'a': {{'y': 2}}}})", nested)),
            json!({"a": {"y": 2}, "b": 1})
        );
        assert_eq!(
            ok(&format!(
                "{} | combine({{'a': {{'y': 2}}}}, recursive=True)",
                nested
            )),
            json!({"a": {"x": 1, "l": [1, 2], "y": 2}, "b": 1})
        );
        let lm = |m: &str| {
            ok(&format!(
                "{{'l': [1, 2]}} | combine({{'l': [2, 3]}}, list_merge='{}')",
                m
            ))
        };
        assert_eq!(lm("replace"), json!({"l": [2, 3]}));
        assert_eq!(lm("keep"), json!({"l": [1, 2]}));
        assert_eq!(lm("append"), json!({"l": [1, 2, 2, 3]}));
        assert_eq!(lm("prepend"), json!({"l": [2, 3, 1, 2]}));
        assert_eq!(lm("append_rp"), json!({"l": [1, 2, 3]}));
        assert_eq!(lm("prepend_rp"), json!({"l": [2, 3, 1]}));
        assert!(err("{} | combine({}, list_merge='bad')").contains("list_merge"));
        assert!(err("{} | combine([1])").contains("expected dictionaries"));
        assert!(err("{} | combine({}, foo=1)").contains("only valid keyword"));
    }

    #[test]
    fn dict_items() {
        assert_eq!(
            ok("{'a': 1, 'b': 2} | dict2items"),
            json!([{"key": "a", "value": 1}, {"key": "b", "value": 2}])
        );
        assert_eq!(
            ok("{'a': 1} | dict2items(key_name='k', value_name='v')"),
            json!([{"k": "a", "v": 1}])
        );
        assert_eq!(
            ok("[{'key': 'a', 'value': 1}] | items2dict"),
            json!({"a": 1})
        );
        assert_eq!(
            ok("[{'n': 'a', 'v': 1}] | items2dict(key_name='n', value_name='v')"),
            json!({"a": 1})
        );
        assert!(err("[1] | dict2items").contains("dict2items requires a dictionary, got list"));
        assert!(err("[{'x': 1}] | items2dict").contains("'key' and 'value'"));
    }

    #[test]
    fn set_theory() {
        assert_eq!(ok("[1, 2, 2, 3] | unique"), json!([1, 2, 3]));
        assert_eq!(ok("[{'a': 1}, {'a': 1}] | unique"), json!([{"a": 1}]));
        assert_eq!(ok("[1, 2] | union([2, 3])"), json!([1, 2, 3]));
        assert_eq!(ok("[1, 2, 2] | intersect([2, 3])"), json!([2]));
        assert_eq!(ok("[1, 2, 1] | difference([2, 3])"), json!([1]));
        assert_eq!(ok("[1, 2] | symmetric_difference([2, 3])"), json!([1, 3]));
        assert!(err("1 | union([1])").contains("union: the input must be a list, got int"));
    }

    #[test]
    fn flatten_zip_product() {
        assert_eq!(
            ok("[1, [2, [3, [4]]], none, 'null'] | flatten"),
            json!([1, 2, 3, 4])
        );
        assert_eq!(
            ok("[1, [2, [3, [4]]]] | flatten(levels=1)"),
            json!([1, 2, [3, [4]]])
        );
        assert_eq!(ok("[1, [2, [3]]] | flatten(1)"), json!([1, 2, [3]]));
        assert_eq!(
            ok("[1, none] | flatten(skip_nulls=false)"),
            json!([1, null])
        );
        assert_eq!(
            ok("[1, 2] | zip(['a', 'b']) | list"),
            json!([[1, "a"], [2, "b"]])
        );
        assert_eq!(
            ok("[1, 2, 3] | zip_longest(['a'])"),
            json!([[1, "a"], [2, null], [3, null]])
        );
        assert_eq!(
            ok("[1, 2] | zip_longest(['a'], fillvalue='-')"),
            json!([[1, "a"], [2, "-"]])
        );
        assert_eq!(
            ok("[1, 2] | product(['a', 'b'])"),
            json!([[1, "a"], [1, "b"], [2, "a"], [2, "b"]])
        );
        assert_eq!(ok("[0, 1] | product(repeat=2) | length"), json!(4));
    }

    #[test]
    fn regex_filters() {
        assert_eq!(ok("'foo bar' | regex_search('o+')"), json!("oo"));
        assert_eq!(ok("'foo bar' | regex_search('z')"), json!(null));
        assert_eq!(ok("'server1/database42' | regex_search('server([0-9]+)/database([0-9]+)', '\\\\1', '\\\\2')"), json!(["1", "42"]));
        assert_eq!(
            ok("'a=1' | regex_search('(?P<k>\\\\w)=(?P<v>\\\\d)', '\\\\g<v>')"),
            json!(["1"])
        );
        assert_eq!(
            ok("'FOO' | regex_search('foo', ignorecase=true)"),
            json!("FOO")
        );
        assert_eq!(
            ok("'a\\nfoo' | regex_search('^foo', multiline=true)"),
            json!("foo")
        );
        assert_eq!(ok("'a\\nfoo' | regex_search('^foo')"), json!(null));
        assert_eq!(
            ok("'ansible' | regex_replace('^a.*i(.*)$', 'a\\\\1')"),
            json!("able")
        );
        assert_eq!(
            ok("'foobar' | regex_replace('^f.*o(.*)$', '\\\\1')"),
            json!("bar")
        );
        assert_eq!(ok("'localhost:80' | regex_replace('^(?P<host>.+):(?P<port>\\\\d+)$', '\\\\g<host>, \\\\g<port>')"), json!("localhost, 80"));
        assert_eq!(
            ok("'CAR' | regex_replace('car', 'bus', ignorecase=true)"),
            json!("bus")
        );
        assert_eq!(ok("'aaa' | regex_replace('a', 'b', count=1)"), json!("baa"));
        assert_eq!(ok("'a$b' | regex_replace('\\\\$', '$')"), json!("a$b"));
        assert_eq!(
            ok("'foo(1)' | regex_replace('(?<=foo)\\\\(', '[')"),
            json!("foo[1)")
        );
        assert_eq!(ok("'a1b22' | regex_findall('\\\\d+')"), json!(["1", "22"]));
        assert_eq!(
            ok("'k=v x=y' | regex_findall('(\\\\w)=(\\\\w)')"),
            json!([["k", "v"], ["x", "y"]])
        );
        assert_eq!(ok("'a.b*c' | regex_escape"), json!("a\\.b\\*c"));
        assert_eq!(
            ok("'^f.*o(.*)$' | regex_escape('posix_basic')"),
            json!("\\^f\\.\\*o(\\.\\*)\\$")
        );
        assert!(err("'x' | regex_search('(')").contains("regex_search: invalid regular expression"));
        assert!(err("'x' | regex_search('x', 'bad')").contains("unknown argument"));
    }

    #[test]
    fn encodings_and_hashes() {
        assert_eq!(ok("'hello' | b64encode"), json!("aGVsbG8="));
        assert_eq!(ok("'aGVsbG8=' | b64decode"), json!("hello"));
        assert_eq!(ok("'aGVsbG8' | b64decode"), json!("hello"));
        assert_eq!(
            ok("'hi' | b64encode(encoding='utf-16-le')"),
            json!("aABpAA==")
        );
        assert_eq!(
            ok("'aABpAA==' | b64decode(encoding='utf-16-le')"),
            json!("hi")
        );
        assert!(err("'!!!' | b64decode").contains("b64decode"));
        assert_eq!(
            ok("'test' | hash('sha1')"),
            json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
        );
        assert_eq!(
            ok("'test' | hash"),
            json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
        );
        assert_eq!(
            ok("'test' | sha1"),
            json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
        );
        assert_eq!(
            ok("'test' | checksum"),
            json!("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
        );
        assert_eq!(
            ok("'test' | md5"),
            json!("098f6bcd4621d373cade4e832627b4f6")
        );
        assert_eq!(
            ok("'test' | hash('md5')"),
            json!("098f6bcd4621d373cade4e832627b4f6")
        );
        assert_eq!(
            ok("'test' | hash('sha256')"),
            json!("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        );
        assert_eq!(ok("'test' | hash('sha512') | length"), json!(128));
        assert!(err("'x' | hash('crc')").contains("unsupported hash type 'crc'"));
    }

    #[test]
    fn paths_and_quote() {
        assert_eq!(ok("'/etc/asdf/foo.txt' | basename"), json!("foo.txt"));
        assert_eq!(ok("'/etc/asdf/' | basename"), json!(""));
        assert_eq!(ok("'/etc/asdf/foo.txt' | dirname"), json!("/etc/asdf"));
        assert_eq!(ok("'/etc/asdf/' | dirname"), json!("/etc/asdf"));
        assert_eq!(ok("'foo' | dirname"), json!(""));
        assert_eq!(ok("'/foo' | dirname"), json!("/"));
        assert_eq!(
            ok("'/etc/my.cfg.bak' | splitext"),
            json!(["/etc/my.cfg", ".bak"])
        );
        assert_eq!(ok("'.bashrc' | splitext"), json!([".bashrc", ""]));
        assert_eq!(ok("'a/b' | splitext"), json!(["a/b", ""]));
        assert_eq!(
            ok("['/etc', 'x', 'y.conf'] | path_join"),
            json!("/etc/x/y.conf")
        );
        assert_eq!(ok("['/etc', '/abs'] | path_join"), json!("/abs"));
        assert_eq!(ok("'/no/tilde' | expanduser"), json!("/no/tilde"));
        let home = std::env::var("HOME").unwrap_or_default();
        if !home.is_empty() {
            assert_eq!(
                ok("'~/x' | expanduser"),
                json!(format!("{}/x", home.trim_end_matches('/')))
            );
        }
        assert_eq!(ok("'abc' | quote"), json!("abc"));
        assert_eq!(ok("'a b' | quote"), json!("'a b'"));
        assert_eq!(ok("\"it's\" | quote"), json!("'it'\"'\"'s'"));
        assert_eq!(ok("'' | quote"), json!("''"));
        assert_eq!(ok("none | quote"), json!("''"));
        assert_eq!(
            ok("'a=b,c:d@e%f+g./-h' | quote"),
            json!("a=b,c:d@e%f+g./-h")
        );
    }

    #[test]
    fn ternary_split_extract() {
        assert_eq!(ok("true | ternary('y', 'n')"), json!("y"));
        assert_eq!(ok("'' | ternary('y', 'n')"), json!("n"));
        assert_eq!(ok("none | ternary('y', 'n', 'z')"), json!("z"));
        assert_eq!(ok("none | ternary('y', 'n')"), json!("n"));
        assert_eq!(ok("'a b  c' | split"), json!(["a", "b", "c"]));
        assert_eq!(ok("'a,b,,c' | split(',')"), json!(["a", "b", "", "c"]));
        assert_eq!(ok("'a,b,c' | split(',', 1)"), json!(["a", "b,c"]));
        assert_eq!(
            ok("[0, 2] | map('extract', ['x', 'y', 'z']) | list"),
            json!(["x", "z"])
        );
        assert_eq!(ok("'a' | extract({'a': {'b': 5}}, 'b')"), json!(5));
        assert_eq!(
            ok("'a' | extract({'a': {'b': {'c': 6}}}, ['b', 'c'])"),
            json!(6)
        );
        assert_eq!(
            ok("'q' | extract({'a': 1}) | default('none')"),
            json!("none")
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(ok("1024 | human_readable"), json!("1.00 KB"));
        assert_eq!(ok("10 | human_readable"), json!("10.00 Bytes"));
        assert_eq!(ok("0 | human_readable"), json!("0.00 Bytes"));
        assert_eq!(
            ok("1048576 | human_readable(isbits=true)"),
            json!("1.00 Mb")
        );
        assert_eq!(
            ok("1048576 | human_readable(unit='K')"),
            json!("1024.00 KB")
        );
        assert_eq!(ok("'1K' | human_to_bytes"), json!(1024));
        assert_eq!(ok("'1.5 MB' | human_to_bytes"), json!(1572864));
        assert_eq!(ok("'2' | human_to_bytes"), json!(2));
        assert_eq!(ok("'2' | human_to_bytes(default_unit='K')"), json!(2048));
        assert_eq!(ok("'1 megabyte' | human_to_bytes"), json!(1048576));
        assert_eq!(ok("'10Mb' | human_to_bytes(isbits=true)"), json!(10485760));
        assert!(err("'10 Mb' | human_to_bytes").contains("expect MB or M"));
        assert!(err("'abc' | human_to_bytes").contains("can't interpret"));
        assert!(err("'1 X' | human_to_bytes").contains("suffix must be one of"));
    }

    #[test]
    fn comment_filter() {
        assert_eq!(ok("'hello' | comment"), json!("#\n# hello\n#"));
        assert_eq!(ok("'a\\nb' | comment('c')"), json!("//\n// a\n// b\n//"));
        assert_eq!(
            ok("'x' | comment('cblock')"),
            json!("/*\n *\n * x\n *\n */")
        );
        assert_eq!(ok("'x' | comment(decoration='; ')"), json!(";\n; x\n;"));
        assert_eq!(ok("'x' | comment('xml')"), json!("<!--\n -\n - x\n -\n-->"));
    }

    #[test]
    fn subelements_and_uuid() {
        let users = "[{'name': 'a', 'groups': ['wheel', 'docker']}, {'name': 'b', 'groups': []}, {'name': 'c'}]";
        assert_eq!(
            ok(&format!(
                "{} | subelements('groups', skip_missing=true) | map('last') | list",
                users
            )),
            json!(["wheel", "docker"])
        );
        assert_eq!(
            ok("[{'n': 1, 'x': {'l': [5]}}] | subelements('x.l')"),
            json!([[{"n": 1, "x": {"l": [5]}}, 5]])
        );
        assert!(err(&format!("{} | subelements('groups')", users))
            .contains("could not find 'groups' key"));
        assert!(err("[{'g': 1}] | subelements('g')").contains("should point to a list"));
        assert_eq!(
            ok("'python.org' | to_uuid(namespace='6ba7b810-9dad-11d1-80b4-00c04fd430c8')"),
            json!("886313e1-3b8a-5372-9b90-0c9aee199e5d")
        );
        assert_eq!(ok("'x' | to_uuid | length"), json!(36));
    }

    #[test]
    fn dict_function() {
        assert_eq!(
            ok("dict(['a', 'b'] | zip([1, 2]))"),
            json!({"a": 1, "b": 2})
        );
        assert_eq!(
            ok("dict([['a', 1], ['a', 2], ['b', 3]])"),
            json!({"a": 2, "b": 3})
        );
        assert_eq!(ok("dict(a=1, b='x')"), json!({"a": 1, "b": "x"}));
        assert_eq!(ok("dict({'a': 1}, b=2)"), json!({"a": 1, "b": 2}));
        assert_eq!(ok("dict()"), json!({}));
        assert!(err("dict([1, 2])").contains("dict: each item must be a (key, value) pair"));
    }

    #[test]
    fn math() {
        assert_eq!(ok("100 | log(10)"), json!(2.0));
        assert_eq!(ok("2 | pow(10)"), json!(1024.0));
        assert_eq!(ok("9 | root"), json!(3.0));
        assert_eq!(ok("27 | root(3) | round"), json!(3.0));
    }

    #[test]
    fn jinja_builtins_behave_as_jinja2() {
        let vars = json!({"l": [{"a": 2, "n": "B"}, {"a": 1, "n": "a"}]});
        let e = |x: &str| ev(x, vars.clone()).unwrap();
        assert_eq!(
            e("l | sort(attribute='n') | map(attribute='n') | list"),
            json!(["a", "B"])
        );
        assert_eq!(
            e("l | selectattr('n', 'equalto', 'a') | map(attribute='a') | list"),
            json!([1])
        );
        assert_eq!(
            e("l | selectattr('n', 'match', '[A-Z]') | map(attribute='a') | list"),
            json!([2])
        );
        assert_eq!(e("l | min(attribute='a')"), json!({"a": 1, "n": "a"}));
        assert_eq!(e("l | sum(attribute='a')"), json!(3));
        assert_eq!(e("l | map(attribute='a') | join(',')"), json!("2,1"));
        assert_eq!(e("'%s-%d' | format('x', 3)"), json!("x-3"));
        assert_eq!(e("range(3) | list"), json!([0, 1, 2]));
        assert_eq!(e("{'a': 1} | items | list"), json!([["a", 1]]));
        assert_eq!(e("['a', 'A', 'b'] | unique | list"), json!(["a", "b"]));
        assert_eq!(
            e("l | ansible.builtin.map(attribute='a') | ansible.builtin.max"),
            json!(2)
        );
    }
}
