//! JSON and YAML: `to_json`, `to_nice_json`, `from_json`, `to_yaml`, `to_nice_yaml`,
//! `from_yaml`, `from_yaml_all`.
//!
//! Output is Python's `json.dumps`/PyYAML's byte for byte (through [`pydump`]), since
//! rendered configuration files are compared with Ansible's.

use minijinja::value::Kwargs;
use minijinja::{Error, State, Value};
use serde_json::Value as J;

use crate::template::limits;
use crate::template::pydump::{self, JsonOptions, YamlOptions};

use super::{fail, from_plain, py_str, py_type, to_plain};

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
        limits::width(filter, "indent", s.len() as i128)?;
        return Ok(Some(s.to_string()));
    }
    match ind.as_i64() {
        Some(n) if n >= 0 => Ok(Some(" ".repeat(limits::width(filter, "indent", n.into())?))),
        Some(_) => Ok(Some(String::new())),
        None => Err(fail(format!(
            "{}: indent must be a number, got {}",
            filter,
            py_type(ind)
        ))),
    }
}

pub(super) fn to_json(state: &State, value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let o = json_options("to_json", &kwargs, JsonOptions::default())?;
    dump_json("to_json", &to_plain(state, value, "to_json")?, &o)
}

/// `json.dumps` with its indented size bounded: every value starts a line indented by
/// its depth, so values × depth × indent bounds the indentation it writes.
fn dump_json(filter: &str, j: &J, o: &JsonOptions) -> Result<String, Error> {
    if let Some(ind) = &o.indent {
        fn walk(j: &J, depth: u128, nodes: &mut u128, deepest: &mut u128) {
            *nodes += 1;
            *deepest = (*deepest).max(depth);
            match j {
                J::Array(a) => a.iter().for_each(|v| walk(v, depth + 1, nodes, deepest)),
                J::Object(m) => m.values().for_each(|v| walk(v, depth + 1, nodes, deepest)),
                _ => {}
            }
        }
        let (mut nodes, mut deepest) = (0, 0);
        walk(j, 1, &mut nodes, &mut deepest);
        limits::text(filter, nodes * deepest * ind.len() as u128)?;
    }
    Ok(pydump::dump_json(j, o))
}

pub(super) fn to_nice_json(
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
    dump_json("to_nice_json", &to_plain(state, value, "to_nice_json")?, &o)
}

pub(super) fn from_json(value: &Value) -> Result<Value, Error> {
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

pub(super) fn to_yaml(state: &State, value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let o = yaml_options("to_yaml", &kwargs, YamlOptions::default())?;
    Ok(pydump::dump_yaml(&to_plain(state, value, "to_yaml")?, &o))
}

pub(super) fn to_nice_yaml(
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

pub(super) fn from_yaml(value: &Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(parse_yaml_docs("from_yaml", s)?
            .first()
            .map(from_plain)
            .unwrap_or(Value::from(()))),
        None => Ok(value.clone()),
    }
}

pub(super) fn from_yaml_all(value: &Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(s) => Ok(from_plain(&J::Array(parse_yaml_docs("from_yaml_all", s)?))),
        None => Ok(value.clone()),
    }
}
