//! Paths and shell: Python's `posixpath` (`basename`, `dirname`, `splitext`,
//! `expanduser`, `path_join`) and `shlex.quote` (`quote`).
//!
//! Kept separate from the connection layer's quoting: these reproduce Python's output,
//! which rendered files are compared with.

use minijinja::{Error, Value};

use super::{fail, is_list, py_str, py_type};

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

pub(super) fn basename(value: &Value) -> String {
    py_basename(&py_str(value)).to_string()
}

pub(super) fn dirname(value: &Value) -> String {
    py_dirname(&py_str(value)).to_string()
}

pub(super) fn splitext(value: &Value) -> Value {
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

pub(super) fn expanduser(value: &Value) -> String {
    expand_user(&py_str(value))
}

pub(super) fn path_join(value: &Value) -> Result<String, Error> {
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

pub(super) fn quote(value: &Value) -> String {
    if value.is_none() || value.is_undefined() {
        return "''".into();
    }
    shell_quote(&py_str(value))
}
