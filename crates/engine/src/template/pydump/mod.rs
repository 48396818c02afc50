//! Python-compatible text output for data: `json.dumps` and PyYAML's `yaml.dump`.
//!
//! Ansible's `to_json`/`to_yaml` filters are these two Python functions, and users
//! render config files with them, so the exact bytes matter: key order, spacing,
//! quoting and float formatting follow CPython and PyYAML rather than serde.

mod json;
#[cfg(test)]
mod tests;
mod yaml;

pub use json::{dump_json, JsonOptions};
pub use yaml::{dump_yaml, YamlOptions};

/// Python's `str()` of plain data: a string as it is, anything else as [`py_repr`]
/// (`True`, `None`, `1.0`, `['a', 1]`), as Ansible formats values in messages and names.
pub fn py_str(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of plain data (`'a'`, `{'k': [1, 2.5]}`).
pub fn py_repr(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => py_float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{}\"", s.replace('\\', "\\\\"))
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        }
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", py_repr(&Value::String(k.clone())), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A float as Python's `repr` writes it (`1.0`, `1e+16`, `1.5e-07`, `inf`, `nan`).
pub fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Shortest round-trip digits, then Python's choice between fixed and exponent form.
    let sci = format!("{:e}", f);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{}", f);
        if s.contains('.') {
            s
        } else {
            format!("{}.0", s)
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", mantissa, sign, exp.abs())
    }
}
