//! Types and conversions: Ansible's `bool`, `int` and `float` (which differ from Jinja2's),
//! `replace` with Jinja2's `count`, `mandatory` and `type_debug`.
//!
//! These replace minijinja built-ins, so a template that tests `x | bool` behaves as under
//! Ansible rather than as under plain Jinja2.

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, State, Value};

use super::{fail, py_str, py_type, undefined_error};
use crate::template::limits;

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

pub(super) fn bool_filter(state: &State, value: &Value) -> Result<bool, Error> {
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
pub(super) fn parse_py_float(s: &str) -> Option<f64> {
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
pub(super) fn int_filter(
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
pub(super) fn float_filter(
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
pub(super) fn replace(
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
    if new.len() > old.len() {
        // An empty `old` matches between every character: the result can be huge.
        let hits = if old.is_empty() {
            s.chars().count() + 1
        } else {
            s.matches(&old).count()
        };
        let hits = match count {
            Some(n) if n >= 0 => hits.min(n as usize),
            _ => hits,
        } as u128;
        limits::text(
            "replace",
            s.len() as u128 + hits * (new.len() - old.len()) as u128,
        )?;
    }
    Ok(Value::from(match count {
        Some(n) if n >= 0 => s.replacen(&old, &new, n as usize),
        _ => s.replace(&old, &new),
    }))
}

/// `mandatory`: fails on an undefined value, with the custom message when given.
pub(super) fn mandatory(state: &State, value: &Value, msg: Option<Value>) -> Result<Value, Error> {
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

pub(super) fn type_debug(state: &State, value: &Value) -> Result<String, Error> {
    if value.is_undefined() {
        return Err(undefined_error(state, value, "type_debug"));
    }
    Ok(py_type(value).to_string())
}
